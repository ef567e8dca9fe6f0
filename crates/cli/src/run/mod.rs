//! `wayline run`: running a workflow (a file, or a saved one) for real, or as a dry run; an
//! Arazzo document's workflows in [`arazzo`].

pub(crate) mod arazzo;

use std::path::PathBuf;
use std::sync::Arc;

use wayline_core::Workflow;
use wayline_executor::RunOptions;
use wayline_knowledge::Recorder;
use wayline_store::{Lifecycle, Location, Stores};

use crate::args::{Common, LearnArgs, ModelArgs, NotifyArgs, StoreArg, arazzo_text};
use crate::assemble::{
    Environment, announce, engine_builder, execute, load_tools_to_call, notifications,
    open_knowledge, open_store, refuse_unknown_inputs, run_inputs, runtime, with_decider,
};
use crate::report::{
    Outcome, ReportFormat, fail, print_errors, print_json, print_plan, report_run, unreadable,
};

/// `wayline run` arguments. `--tools` is needed for a wayline workflow only (an Arazzo
/// document's operations come from its sources), so it is checked when one is run.
#[derive(Debug, clap::Args)]
#[command(mut_arg("tools", |arg| arg.required(false)))]
pub(crate) struct RunArgs {
    /// The workflow file (YAML or JSON).
    #[arg(required_unless_present = "workflow_id")]
    pub(crate) workflow: Option<PathBuf>,
    /// Run a saved workflow instead of a file: its active version, or `--workflow-version`.
    #[arg(long, value_name = "ID", conflicts_with = "workflow")]
    pub(crate) workflow_id: Option<String>,
    /// With `--workflow-id`: the version to run (not `--version`, which is wayline's own).
    #[arg(long = "workflow-version", value_name = "N", requires = "workflow_id")]
    pub(crate) version: Option<u32>,
    #[command(flatten)]
    pub(crate) common: Common,
    /// A YAML or JSON file of run inputs (`--input` wins over it).
    #[arg(long = "inputs", value_name = "FILE")]
    pub(crate) inputs_file: Option<PathBuf>,
    /// Most steps running at once.
    #[arg(long, default_value_t = wayline_executor::DEFAULT_MAX_PARALLEL)]
    pub(crate) max_parallel: usize,
    /// Cancel the run after this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub(crate) deadline_ms: Option<u64>,
    /// Output format: text prints a summary, json the run record.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub(crate) format: ReportFormat,
    /// Record the run (durably, step by step) in this store: a `postgres://` URL, a `.db`
    /// file (SQLite) or a directory (JSON files). A workflow file is saved there too, as a new
    /// version if it changed. With `--workflow-id` the default store (`WAYLINE_STORE`, else
    /// `$WAYLINE_HOME/wayline.db`) is used when this is not given.
    #[arg(long, value_name = "STORE")]
    pub(crate) store: Option<Location>,
    /// Check every response against its tool's response schema for the status, when the tool
    /// has one (tools imported from OpenAPI do); a step's `expect.schema` overrides it.
    #[arg(long)]
    pub(crate) check_schema: bool,
    /// The run's id (default: a random UUID).
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: Option<String>,
    #[command(flatten)]
    pub(crate) notify: NotifyArgs,
    #[command(flatten)]
    pub(crate) learn: LearnArgs,
    /// The language model that answers the workflow's decision steps, if it has any.
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// An Arazzo document's workflow to run (default: its only one).
    #[arg(long = "workflow", value_name = "ID", requires = "workflow")]
    pub(crate) arazzo_workflow: Option<String>,
    /// An Arazzo document's source description read from a local file, `NAME=FILE` (remote
    /// descriptions are not fetched).
    #[arg(long = "source", value_name = "NAME=FILE", requires = "workflow")]
    pub(crate) sources: Vec<String>,
    /// Let an Arazzo document's source descriptions and `$ref`s be read from this directory
    /// too (by default only at or below the document's own directory). Repeatable.
    #[arg(long = "allow-read", value_name = "DIR", requires = "workflow")]
    pub(crate) allow_read: Vec<PathBuf>,
    /// Where an Arazzo document's source is served, `NAME=URL` (default: the first server of
    /// its description).
    #[arg(long = "server", value_name = "NAME=URL", requires = "workflow")]
    pub(crate) servers: Vec<String>,
    /// Go on with this interrupted run of an Arazzo document's workflow, from `--store` (give
    /// the same inputs; a wayline workflow's run resumes with `wayline runs resume`).
    #[arg(
        long,
        value_name = "RUN_ID",
        requires = "store",
        conflicts_with = "run_id"
    )]
    pub(crate) resume: Option<String>,
}

pub(crate) fn run_command(args: RunArgs) -> Outcome {
    match run_workflow(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn run_workflow(args: RunArgs) -> Result<Outcome, Outcome> {
    if let Some(path) = &args.workflow
        && let Some(text) = arazzo_text(path)
    {
        return crate::run::arazzo::run_document(&args, path, &text);
    }
    if args.arazzo_workflow.is_some()
        || !args.sources.is_empty()
        || !args.servers.is_empty()
        || !args.allow_read.is_empty()
    {
        return Err(unreadable(
            "`--workflow`, `--source`, `--server` and `--allow-read` are for Arazzo documents; this is a wayline workflow",
        ));
    }
    if args.resume.is_some() {
        return Err(unreadable(
            "`--resume` is for Arazzo documents; a wayline workflow's run resumes with `wayline runs resume RUN_ID`",
        ));
    }
    if args.common.tools.tools.is_empty() {
        return Err(unreadable(
            "a wayline workflow calls the tools of `--tools DIR`; give it (an Arazzo document needs none)",
        ));
    }
    let env = Environment::load(&args.common.tools.env_files)?;
    let registry = load_tools_to_call(&args.common.tools.tools, &env)?;
    let inputs = run_inputs(args.inputs_file.as_deref(), &args.common.inputs)?;
    let runtime = runtime()?;
    let (workflow, stored) = source(&args, &runtime)?;
    let registry = Arc::new(registry);
    let recorder = match (&args.learn.sut, args.learn.learn && !args.common.dry_run) {
        (Some(sut), true) => {
            let store = open_knowledge(&args.learn.store, args.store.as_ref())?;
            let recorder = Recorder::new(store, wayline_knowledge::sut_key(sut), registry.clone());
            recorder.register(&workflow);
            Some(recorder)
        }
        _ => None,
    };
    let mut builder = engine_builder(registry, &args.common.tools, &env)?
        .max_parallel(args.max_parallel)
        .check_response_schemas(args.check_schema);
    if let Some(recorder) = &recorder {
        builder = builder.observer(Arc::new(recorder.clone()));
    }
    builder = with_decider(builder, [&workflow], &args.model, args.common.dry_run)?;
    if let Some((stores, _)) = &stored {
        builder = builder.run_store(stores.runs.clone());
    }
    let engine = if args.common.dry_run {
        builder.build()
    } else {
        builder
            .observer(Arc::new(crate::logging::progress()))
            .build()
    };
    let prepared = engine.prepare(&workflow).map_err(fail)?;
    refuse_unknown_inputs(&prepared, &inputs)?;
    if args.common.dry_run {
        let planned = runtime
            .block_on(engine.dry_run(&workflow, inputs))
            .map_err(fail)?;
        match args.format {
            ReportFormat::Json => print_json(&planned),
            ReportFormat::Text => print_plan(&planned),
        }
        return Ok(Outcome::Ok);
    }
    let mut options = RunOptions::new().inputs(inputs);
    if let Some(id) = args.run_id {
        options = options.run_id(id);
    }
    if let Some((_, version)) = stored {
        options = options.workflow_version(version);
    }
    if let Some(ms) = args.deadline_ms {
        options = options.deadline(std::time::Duration::from_millis(ms));
    }
    let notifications = notifications(&args.notify, args.format == ReportFormat::Json)?;
    let run = execute(&runtime, &engine, &workflow, options);
    // Learned from even when the run record could not be stored: the run did happen. What it
    // taught that cannot be saved fails the command, after the run is reported.
    let mut unlearned = false;
    if let (Some(recorder), Some(sut)) = (&recorder, &args.learn.sut) {
        match runtime.block_on(recorder.flush()) {
            Ok(runs) if runs > 0 => {
                eprintln!("learned: the run is recorded in the knowledge of `{sut}`")
            }
            Ok(_) => {}
            Err(error) => {
                eprintln!("error: what the run taught was not recorded: {error}");
                unlearned = true;
            }
        }
    }
    let run = run?;
    let outcome = report_run(&run, args.format);
    runtime.block_on(announce(&notifications, &run));
    Ok(if unlearned && outcome == Outcome::Ok {
        Outcome::Failed
    } else {
        outcome
    })
}

/// The workflow to run, and the store recording the run with the version it names: a saved
/// workflow (`--workflow-id`), or a file, saved first when `--store` is given (not for a dry
/// run, which records nothing).
fn source(
    args: &RunArgs,
    runtime: &tokio::runtime::Runtime,
) -> Result<(Workflow, Option<(Stores, u32)>), Outcome> {
    if let Some(id) = &args.workflow_id {
        let stores = open_store(&StoreArg {
            store: args.store.clone(),
        })?;
        let lifecycle = Lifecycle::new(stores.workflows.clone());
        let record = match args.version {
            Some(version) => runtime.block_on(lifecycle.get(id, Some(version))),
            None => runtime.block_on(lifecycle.active(id)),
        }
        .map_err(fail)?;
        let version = record.version;
        return Ok((record.workflow, Some((stores, version))));
    }
    let Some(path) = &args.workflow else {
        return Err(unreadable(
            "name a workflow file, or a saved workflow with --workflow-id",
        ));
    };
    let workflow = wayline_registry::load_workflow_file(path).map_err(|error| {
        print_errors(&[error]);
        Outcome::Unreadable
    })?;
    let Some(store) = args.store.as_ref().filter(|_| !args.common.dry_run) else {
        return Ok((workflow, None));
    };
    let stores = wayline_store::open(store).map_err(fail)?;
    let saved = runtime
        .block_on(Lifecycle::new(stores.workflows.clone()).save(&workflow))
        .map_err(fail)?;
    let version = saved.record.version;
    Ok((workflow, Some((stores, version))))
}

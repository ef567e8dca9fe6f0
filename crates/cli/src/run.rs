//! `wayline run` and `wayline tools try`: running a workflow, or one tool, for real.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::document::Format;
use wayline_core::{
    HttpRequest, HttpResponse, Run, RunStatus, SecretProvider, ToolCatalog, Transport,
    TransportError, Workflow,
};
use wayline_executor::{
    CancelToken, Engine, EngineBuilder, Error, PlannedStep, Progress, Redactor, ReqwestTransport,
    RunOptions, summary,
};
use wayline_knowledge::Recorder;
use wayline_registry::{ToolConfigs, ToolRegistry};
use wayline_store::{Lifecycle, Stores};

use crate::plan::with_decider;
use crate::runs::StoreArg;
use crate::{Outcome, ReportFormat, load_tools, print_errors, print_json};

/// What `wayline run` and `wayline tools try` share.
#[derive(Debug, clap::Args)]
pub(crate) struct Common {
    /// Tool files or directories (repeatable).
    #[arg(long = "tools", required = true, value_name = "DIR")]
    pub(crate) tools: Vec<PathBuf>,
    /// The tool-configs file: base URL overrides and credentials per tool.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// A run input, `NAME=TEXT` (a string) or `NAME:=JSON` (typed: numbers, lists...).
    #[arg(long = "input", value_name = "K=V")]
    pub(crate) inputs: Vec<String>,
    /// Print the requests that would be sent, and send none.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `wayline run` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The workflow file (YAML or JSON).
    #[arg(required_unless_present = "workflow_id")]
    pub(crate) workflow: Option<PathBuf>,
    /// Run a saved workflow instead of a file: its active version, or `--version`.
    #[arg(long, value_name = "ID", conflicts_with = "workflow")]
    pub(crate) workflow_id: Option<String>,
    /// With `--workflow-id`: the version to run.
    #[arg(long, value_name = "N", requires = "workflow_id")]
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
    /// Record the run (durably, step by step) in this store: a `.db` file (SQLite) or a
    /// directory (JSON files). A workflow file is saved there too, as a new version if it
    /// changed. With `--workflow-id` the default store is used when this is not given.
    #[arg(long, value_name = "PATH")]
    pub(crate) store: Option<PathBuf>,
    /// The run's id (default: a random UUID).
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: Option<String>,
    #[command(flatten)]
    pub(crate) notify: crate::schedule::NotifyArgs,
    #[command(flatten)]
    pub(crate) learn: crate::knowledge::LearnArgs,
    /// The language model that answers the workflow's decision steps, if it has any.
    #[command(flatten)]
    pub(crate) model: crate::plan::ModelArgs,
}

/// `wayline tools try` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct TryArgs {
    /// The tool to call.
    pub(crate) tool_id: String,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// Parses `NAME=TEXT` and `NAME:=JSON` inputs.
pub(crate) fn parse_inputs(
    raw: &[String],
    into: &mut IndexMap<String, Value>,
) -> Result<(), String> {
    for item in raw {
        if let Some((name, json)) = item.split_once(":=") {
            let value = serde_json::from_str(json).map_err(|error| {
                format!(
                    "--input {item}: `{json}` is not JSON ({error}); use {name}=TEXT for a string"
                )
            })?;
            into.insert(name.to_owned(), value);
        } else if let Some((name, text)) = item.split_once('=') {
            into.insert(name.to_owned(), Value::String(text.to_owned()));
        } else {
            return Err(format!("--input {item}: write NAME=TEXT or NAME:=JSON"));
        }
    }
    Ok(())
}

pub(crate) fn load_configs(
    path: Option<&Path>,
    registry: &ToolRegistry,
) -> Result<ToolConfigs, Outcome> {
    let Some(path) = path else {
        return Ok(ToolConfigs::new());
    };
    let configs = ToolConfigs::load(path).map_err(|error| {
        let outcome = crate::outcome_of(std::slice::from_ref(&error));
        print_errors(&[error]);
        outcome
    })?;
    let known = registry.tool_ids();
    for problem in configs.unknown_tools(&known, &path.display().to_string()) {
        eprintln!("warning: {problem}");
    }
    Ok(configs)
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Outcome> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("error: cannot start the async runtime: {error}");
            Outcome::Unreadable
        })
}

pub(crate) fn transport() -> Result<ReqwestTransport, Outcome> {
    ReqwestTransport::new().map_err(|error| {
        eprintln!("error: cannot start the HTTP client: {error}");
        Outcome::Unreadable
    })
}

pub(crate) fn run_command(args: RunArgs) -> Outcome {
    match run_workflow(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn run_workflow(args: RunArgs) -> Result<Outcome, Outcome> {
    let registry = load_tools(&args.common.tools)?;
    let mut inputs = IndexMap::new();
    if let Some(path) = &args.inputs_file {
        inputs = read_inputs_file(path)?;
    }
    parse_inputs(&args.common.inputs, &mut inputs).map_err(unreadable)?;
    let runtime = runtime()?;
    let (workflow, stored) = source(&args, &runtime)?;
    let registry = Arc::new(registry);
    let recorder = match (&args.learn.sut, args.learn.learn && !args.common.dry_run) {
        (Some(sut), true) => {
            let store = args.learn.store.open(args.store.as_deref())?;
            let recorder = Recorder::new(store, sut.clone(), registry.clone());
            recorder.register(&workflow);
            Some(recorder)
        }
        _ => None,
    };
    let mut builder =
        engine_builder(registry, args.common.config.as_deref())?.max_parallel(args.max_parallel);
    if let Some(recorder) = &recorder {
        builder = builder.observer(Arc::new(recorder.clone()));
    }
    builder = with_decider(builder, [&workflow], &args.model, args.common.dry_run)?;
    if let Some((stores, _)) = &stored {
        builder = builder.run_store(stores.runs.clone());
    }
    if args.common.dry_run {
        let planned = runtime
            .block_on(builder.build().dry_run(&workflow, inputs))
            .map_err(unreadable)?;
        match args.format {
            ReportFormat::Json => print_json(&planned),
            ReportFormat::Text => print_plan(&planned),
        }
        return Ok(Outcome::Ok);
    }
    let engine = builder.observer(Arc::new(Progress::stderr())).build();
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
    let notifications = args
        .notify
        .notifications(args.format == ReportFormat::Json)?;
    let run = execute(&runtime, &engine, &workflow, options);
    if let (Some(recorder), Some(sut)) = (&recorder, &args.learn.sut) {
        // Learned from even when the run record could not be stored: the run did happen.
        match runtime.block_on(recorder.flush()) {
            Ok(runs) if runs > 0 => {
                eprintln!("learned: the run is recorded in the knowledge of `{sut}`")
            }
            Ok(_) => {}
            Err(error) => eprintln!("warning: what the run taught was not recorded: {error}"),
        }
    }
    let run = run?;
    let outcome = report_run(&run, args.format);
    runtime.block_on(crate::schedule::announce(&notifications, &run));
    Ok(outcome)
}

/// The workflow to run, and the store recording the run with the version it names: a saved
/// workflow (`--workflow-id`), or a file, saved first when `--store` is given (not for a dry
/// run, which records nothing).
fn source(
    args: &RunArgs,
    runtime: &tokio::runtime::Runtime,
) -> Result<(Workflow, Option<(Stores, u32)>), Outcome> {
    if let Some(id) = &args.workflow_id {
        let stores = StoreArg {
            store: args.store.clone(),
        }
        .open()?;
        let lifecycle = Lifecycle::new(stores.workflows.clone());
        let record = match args.version {
            Some(version) => runtime.block_on(lifecycle.get(id, Some(version))),
            None => runtime.block_on(lifecycle.active(id)),
        }
        .map_err(unreadable)?;
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
    let stores = wayline_store::open(store).map_err(unreadable)?;
    let saved = runtime
        .block_on(Lifecycle::new(stores.workflows.clone()).save(&workflow))
        .map_err(unreadable)?;
    let version = saved.record.version;
    Ok((workflow, Some((stores, version))))
}

/// An engine over these tools with the HTTP transport and the tool configs of `config`.
pub(crate) fn engine_builder(
    registry: Arc<ToolRegistry>,
    config: Option<&Path>,
) -> Result<EngineBuilder, Outcome> {
    let configs = load_configs(config, &registry)?;
    let code = crate::sandbox::code_runner(&registry, &configs)?;
    let mut builder = Engine::builder(registry)
        .secrets(Arc::new(configs))
        .transport(Arc::new(transport()?));
    if let Some(runner) = code {
        builder = builder.code_runner(runner);
    }
    Ok(builder)
}

/// Runs `workflow`; Ctrl-C cancels the run (which still ends with a complete record).
pub(crate) fn execute(
    runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    workflow: &Workflow,
    options: RunOptions,
) -> Result<Run, Outcome> {
    cancellable(runtime, |cancel| {
        engine.run(workflow, options.cancel(cancel))
    })
    .map_err(engine_error)
}

/// Runs the future `start` makes with a token that Ctrl-C cancels.
pub(crate) fn cancellable<F: Future>(
    runtime: &tokio::runtime::Runtime,
    start: impl FnOnce(CancelToken) -> F,
) -> F::Output {
    let cancel = CancelToken::new();
    let watched = cancel.clone();
    runtime.block_on(async {
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                watched.cancel();
            }
        });
        let output = start(cancel).await;
        watcher.abort();
        output
    })
}

/// Prints an engine error. A run that ended but whose final record the store refused is not
/// lost: its record is printed on stderr as JSON.
pub(crate) fn engine_error(error: Error) -> Outcome {
    eprintln!("error: {error}");
    if let Error::Store { run: Some(run), .. } = &error {
        eprintln!("the run ended but its final record is not in the store; here it is:");
        match serde_json::to_string_pretty(run) {
            Ok(json) => eprintln!("{json}"),
            Err(error) => eprintln!("(it cannot be shown: {error})"),
        }
        return Outcome::Failed;
    }
    Outcome::Unreadable
}

/// Prints a run (its summary, or its record as JSON) and the exit code it deserves.
pub(crate) fn report_run(run: &Run, format: ReportFormat) -> Outcome {
    match format {
        ReportFormat::Json => print_json(run),
        ReportFormat::Text => print!("{}", summary(run)),
    }
    if run.status == RunStatus::Success {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}

/// Prints an error and returns the "bad input" outcome.
pub(crate) fn unreadable(error: impl std::fmt::Display) -> Outcome {
    eprintln!("error: {error}");
    Outcome::Unreadable
}

fn read_inputs_file(path: &Path) -> Result<IndexMap<String, Value>, Outcome> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        eprintln!("error: cannot read {}: {error}", path.display());
        Outcome::Unreadable
    })?;
    let format = Format::from_path(path).unwrap_or(Format::Yaml);
    wayline_core::document::parse(&text, format, &path.display().to_string()).map_err(|error| {
        eprintln!("error: {error}");
        Outcome::Unreadable
    })
}

fn print_plan(planned: &[PlannedStep]) {
    for step in planned {
        let what = if step.tool_id.is_empty() {
            "transform".to_owned()
        } else {
            format!("tool {}", step.tool_id)
        };
        println!("{} ({what})", step.step_id);
        if let Some(when) = &step.when {
            println!("  when {when}");
        }
        if let Some(request) = &step.request {
            println!("  {} {}", request.method, request.url);
            for (name, value) in &request.headers {
                println!("  {name}: {value}");
            }
            if let Some(body) = &request.body {
                println!("  body: {body}");
            }
        }
        if let Some(command) = &step.command {
            println!("  $ {}", command.join(" "));
        }
        for note in &step.notes {
            println!("  note: {note}");
        }
    }
}

/// A transport that remembers the last response, so `tools try` can show it whole.
#[derive(Debug)]
struct Remember {
    inner: ReqwestTransport,
    last: Mutex<Option<HttpResponse>>,
}

#[async_trait::async_trait]
impl Transport for Remember {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let response = self.inner.send(request).await?;
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(response.clone());
        Ok(response)
    }
}

pub(crate) fn try_command(args: TryArgs) -> Outcome {
    match try_tool(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn try_tool(args: TryArgs) -> Result<Outcome, Outcome> {
    let registry = load_tools(&args.common.tools)?;
    if registry.tool(&args.tool_id).is_none() {
        let hint = wayline_core::document::nearest(&args.tool_id, registry.tool_ids())
            .map(|id| format!(" (did you mean `{id}`?)"))
            .unwrap_or_default();
        eprintln!("error: no tool `{}` in the tools given{hint}", args.tool_id);
        return Err(Outcome::Unreadable);
    }
    let mut inputs = IndexMap::new();
    parse_inputs(&args.common.inputs, &mut inputs).map_err(|error| {
        eprintln!("error: {error}");
        Outcome::Unreadable
    })?;
    let configs = load_configs(args.common.config.as_deref(), &registry)?;
    // The raw response is printed whole: mask the tool's secrets in it, as the record does.
    let redactor = Redactor::for_configs(configs.get(&args.tool_id));
    let secrets: Arc<dyn SecretProvider> = Arc::new(configs);
    let workflow = Engine::tool_call_workflow(&args.tool_id, inputs.keys().map(String::as_str));
    let transport = Arc::new(Remember {
        inner: transport()?,
        last: Mutex::new(None),
    });
    let engine = Engine::builder(Arc::new(registry))
        .secrets(secrets)
        .transport(transport.clone())
        .build();
    let runtime = runtime()?;
    let planned = runtime
        .block_on(engine.dry_run(&workflow, inputs.clone()))
        .map_err(|error| {
            eprintln!("error: {error}");
            Outcome::Unreadable
        })?;
    println!("request:");
    print_plan(&planned);
    if args.common.dry_run {
        return Ok(Outcome::Ok);
    }
    let result = runtime
        .block_on(engine.call_tool(&args.tool_id, inputs))
        .map_err(|error| {
            eprintln!("error: {error}");
            Outcome::Unreadable
        })?;
    if let Some(response) = transport
        .last
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        println!("\nresponse: HTTP {}", response.status);
        for (name, value) in &response.headers {
            println!("  {name}: {}", redactor.text(value));
        }
        let text = response.text();
        let body = match serde_json::from_str::<Value>(&text) {
            Ok(json) => serde_json::to_string_pretty(&json).unwrap_or_else(|_| text.to_string()),
            Err(_) => text.to_string(),
        };
        println!("{}", redactor.text(&body));
    }
    match &result.error {
        Some(error) => {
            println!("\nerror: {error}");
            Ok(Outcome::Failed)
        }
        None => {
            println!("\noutput:");
            print_json(&result.output_data);
            for warning in &result.warnings {
                println!("warning: {warning}");
            }
            Ok(Outcome::Ok)
        }
    }
}

//! `wayline workflow save|show|approve|activate|list`: the design phase's lifecycle.

use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use wayline_core::{MemoryCatalog, RunStatus, StoredWorkflow, WorkflowStatus};
use wayline_executor::RunOptions;
use wayline_graph::{ViewFormat, render, validate};
use wayline_store::Lifecycle;

use crate::args::{ModelArgs, StoreArg, ToolsArgs, parse_inputs};
use crate::assemble::{
    Environment, engine_builder, execute, load_tools_to_call, open_existing_store, open_store,
    runtime, with_decider,
};
use crate::report::{
    Outcome, ReportFormat, fail, out, outln, print_errors, print_json, unreadable,
};

/// `wayline workflow ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum WorkflowCommand {
    /// Save a workflow file: a new draft version when its graph changed. Prints the id.
    Save {
        /// The workflow file (YAML or JSON).
        file: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        /// Output format (json: the id, version, state, and whether a version was made).
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The simplified view of a saved workflow: its state, approval and graph.
    Show {
        /// The workflow id.
        id: String,
        /// A version (default: the latest).
        #[arg(long = "workflow-version", value_name = "N")]
        version: Option<u32>,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Approve a draft version (default: the latest) in someone's name.
    Approve {
        /// The workflow id.
        id: String,
        /// Who approves.
        #[arg(long, value_name = "NAME")]
        by: String,
        /// A version (default: the latest).
        #[arg(long = "workflow-version", value_name = "N")]
        version: Option<u32>,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Run the approved version once as its validation run; if it succeeds, make it active.
    Activate(Box<ActivateArgs>),
    /// Saved workflows: the latest version of each, and which version is active.
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

/// `wayline workflow activate` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ActivateArgs {
    /// The workflow id.
    id: String,
    /// A version (default: the latest).
    #[arg(long = "workflow-version", value_name = "N")]
    version: Option<u32>,
    #[command(flatten)]
    tools: ToolsArgs,
    /// The language model that answers decision steps, if the workflow has any.
    #[command(flatten)]
    model: ModelArgs,
    /// An input of the validation run, `NAME=TEXT` or `NAME:=JSON`.
    #[arg(long = "input", value_name = "K=V")]
    inputs: Vec<String>,
    #[command(flatten)]
    store: StoreArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

pub(crate) fn workflow_command(command: WorkflowCommand) -> Outcome {
    let outcome = match command {
        WorkflowCommand::Save {
            file,
            store,
            format,
        } => save(&file, &store, format),
        WorkflowCommand::Show {
            id,
            version,
            store,
            format,
        } => show(&id, version, &store, format),
        WorkflowCommand::Approve {
            id,
            by,
            version,
            store,
            format,
        } => approve(&id, version, &by, &store, format),
        WorkflowCommand::Activate(args) => activate(*args),
        WorkflowCommand::List { store, format } => list(&store, format),
    };
    match outcome {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn lifecycle(store: &StoreArg) -> Result<Lifecycle, Outcome> {
    Ok(Lifecycle::new(open_store(store)?.workflows))
}

fn describe(record: &StoredWorkflow) -> String {
    format!(
        "{} version {} ({})",
        record.id(),
        record.version,
        record.state().as_str()
    )
}

/// What `workflow save`, `approve` and `activate` print with `--format json`: the version
/// acted on and what became of it.
#[derive(Serialize)]
struct Acted<'a> {
    id: &'a str,
    version: u32,
    state: &'static str,
    /// `save`: whether a new version was made (false: the graph was unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<bool>,
    /// `approve`: who approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    approved_by: Option<&'a str>,
    /// `activate`: the validation run (none when the version already was active).
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_run_id: Option<&'a str>,
    /// `activate`: whether the version is active now.
    #[serde(skip_serializing_if = "Option::is_none")]
    active: Option<bool>,
}

impl<'a> Acted<'a> {
    fn of(record: &'a StoredWorkflow) -> Acted<'a> {
        Acted {
            id: record.id(),
            version: record.version,
            state: record.state().as_str(),
            created: None,
            approved_by: record
                .approval
                .as_ref()
                .map(|approval| approval.by.as_str()),
            validation_run_id: None,
            active: None,
        }
    }
}

fn save(
    file: &std::path::Path,
    store: &StoreArg,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let workflow = wayline_registry::load_workflow_file(file).map_err(|error| {
        print_errors(&[error]);
        Outcome::Unreadable
    })?;
    let lifecycle = lifecycle(store)?;
    let saved = runtime()?
        .block_on(lifecycle.save(&workflow))
        .map_err(fail)?;
    let how = if saved.created { "saved" } else { "unchanged" };
    eprintln!("{how}: {}", describe(&saved.record));
    match format {
        ReportFormat::Json => print_json(&Acted {
            created: Some(saved.created),
            ..Acted::of(&saved.record)
        }),
        ReportFormat::Text => outln!("{}", saved.record.id()),
    }
    Ok(Outcome::Ok)
}

/// `workflow show --format json`: the stored version and the edges of its graph.
#[derive(Serialize)]
struct ShowDocument<'a> {
    #[serde(flatten)]
    record: &'a StoredWorkflow,
    state: &'static str,
    edges: Vec<EdgeDocument>,
}

/// An edge by step id; `inferred` when it comes from a mapping or condition.
#[derive(Serialize)]
struct EdgeDocument {
    from: String,
    to: String,
    inferred: bool,
}

fn show(
    id: &str,
    version: Option<u32>,
    store: &StoreArg,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let lifecycle = lifecycle(store)?;
    let record = runtime()?
        .block_on(lifecycle.get(id, version))
        .map_err(fail)?;
    // The view needs no tools: edges come from the mappings and conditions themselves.
    let report = validate(&record.workflow, &MemoryCatalog::new());
    match format {
        ReportFormat::Json => {
            let steps = &record.workflow.steps;
            let edges = report
                .graph()
                .edges()
                .iter()
                .map(|edge| EdgeDocument {
                    from: steps[edge.from].id.clone(),
                    to: steps[edge.to].id.clone(),
                    inferred: edge.inferred,
                })
                .collect();
            print_json(&ShowDocument {
                record: &record,
                state: record.state().as_str(),
                edges,
            });
        }
        ReportFormat::Text => {
            outln!("{}", describe(&record));
            if !record.workflow.name.is_empty() {
                outln!("name: {}", record.workflow.name);
            }
            if let Some(approval) = &record.approval {
                outln!(
                    "approved by {} at {}",
                    approval.by,
                    approval.at.format("%Y-%m-%d %H:%M:%S UTC")
                );
            }
            if let Some(run) = &record.validation_run_id {
                outln!("validation run: {run}");
            }
            outln!("graph {}", record.graph_hash);
            outln!();
            out!("{}", render(&record.workflow, &report, ViewFormat::Text));
        }
    }
    Ok(Outcome::Ok)
}

fn approve(
    id: &str,
    version: Option<u32>,
    by: &str,
    store: &StoreArg,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let lifecycle = lifecycle(store)?;
    let record = runtime()?
        .block_on(lifecycle.approve(id, version, by))
        .map_err(fail)?;
    match format {
        ReportFormat::Json => print_json(&Acted::of(&record)),
        ReportFormat::Text => outln!("approved: {}", describe(&record)),
    }
    Ok(Outcome::Ok)
}

fn activate(args: ActivateArgs) -> Result<Outcome, Outcome> {
    let stores = open_store(&args.store)?;
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let runtime = runtime()?;
    let record = runtime
        .block_on(lifecycle.get(&args.id, args.version))
        .map_err(fail)?;
    match record.state() {
        WorkflowStatus::Approved | WorkflowStatus::Validated => {}
        WorkflowStatus::Active => {
            // Activating again finishes an activation a crash cut short; no new validation run.
            runtime
                .block_on(lifecycle.activate(record.id(), record.version))
                .map_err(fail)?;
            match args.format {
                ReportFormat::Json => print_json(&Acted {
                    active: Some(true),
                    ..Acted::of(&record)
                }),
                ReportFormat::Text => outln!(
                    "active: {} version {} (it already was)",
                    record.id(),
                    record.version
                ),
            }
            return Ok(Outcome::Ok);
        }
        WorkflowStatus::Archived => {
            return Err(unreadable(format!(
                "{} is archived and stays for history; to use this graph again, save it (a new version), approve and activate that",
                describe(&record)
            )));
        }
        _ => {
            return Err(unreadable(format!(
                "{} cannot be activated: approve it first (`wayline workflow approve {} --by NAME`)",
                describe(&record),
                record.id()
            )));
        }
    }
    let mut inputs = IndexMap::new();
    parse_inputs(&args.inputs, &mut inputs).map_err(unreadable)?;
    let env = Environment::load(&args.tools.env_files)?;
    let registry = load_tools_to_call(&args.tools.tools, &env)?;
    let builder = engine_builder(Arc::new(registry), &args.tools, &env)?;
    let engine = with_decider(builder, [&record.workflow], &args.model, false)?
        .run_store(stores.runs.clone())
        .observer(Arc::new(crate::logging::progress()))
        .build();
    let options = RunOptions::new()
        .inputs(inputs)
        .workflow_version(record.version);
    let run = execute(&runtime, &engine, &record.workflow, options)?;
    if run.status != RunStatus::Success {
        if args.format == ReportFormat::Json {
            print_json(&Acted {
                validation_run_id: Some(&run.id),
                active: Some(false),
                ..Acted::of(&record)
            });
        }
        eprintln!(
            "the validation run {} of {} did not succeed; the workflow stays {} (`wayline runs show {}`)",
            run.id,
            describe(&record),
            record.state().as_str(),
            run.id
        );
        return Ok(Outcome::Failed);
    }
    runtime
        .block_on(async {
            lifecycle.record_validation(&run).await?;
            lifecycle.activate(&args.id, record.version).await
        })
        .map_err(fail)?;
    match args.format {
        ReportFormat::Json => print_json(&Acted {
            state: WorkflowStatus::Active.as_str(),
            validation_run_id: Some(&run.id),
            active: Some(true),
            ..Acted::of(&record)
        }),
        ReportFormat::Text => outln!(
            "active: {} version {} (validation run {})",
            record.id(),
            record.version,
            run.id
        ),
    }
    Ok(Outcome::Ok)
}

/// One line of `workflow list`.
#[derive(Serialize)]
struct Listed {
    id: String,
    name: String,
    latest_version: u32,
    latest_state: &'static str,
    active_version: Option<u32>,
}

fn list(store: &StoreArg, format: ReportFormat) -> Result<Outcome, Outcome> {
    let Some((stores, path)) = open_existing_store(store)? else {
        // Nothing saved yet: say so, and make no store to say it.
        match format {
            ReportFormat::Json => print_json(&Vec::<serde_json::Value>::new()),
            ReportFormat::Text => outln!("no workflows: there is no store there yet"),
        }
        return Ok(Outcome::Ok);
    };
    let listed = runtime()?
        .block_on(async {
            let mut listed = Vec::new();
            for latest in stores.workflows.list_workflows().await? {
                let active = stores
                    .workflows
                    .workflow_versions(latest.id())
                    .await?
                    .into_iter()
                    .rev()
                    .find(|record| record.state() == WorkflowStatus::Active)
                    .map(|record| record.version);
                listed.push(Listed {
                    id: latest.id().to_owned(),
                    name: latest.workflow.name.clone(),
                    latest_version: latest.version,
                    latest_state: latest.state().as_str(),
                    active_version: active,
                });
            }
            Ok::<_, wayline_core::StoreError>(listed)
        })
        .map_err(fail)?;
    match format {
        ReportFormat::Json => print_json(&listed),
        ReportFormat::Text if listed.is_empty() => {
            outln!("no workflows in {path}");
        }
        ReportFormat::Text => {
            for item in &listed {
                let active = item
                    .active_version
                    .map_or_else(|| "none active".to_owned(), |v| format!("v{v} active"));
                outln!(
                    "{}  v{} {}  ({active})  {}",
                    item.id,
                    item.latest_version,
                    item.latest_state,
                    item.name
                );
            }
        }
    }
    Ok(Outcome::Ok)
}

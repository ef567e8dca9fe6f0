//! `wayline schedule run`: saved workflows run on intervals and cron schedules, in this process;
//! `wayline schedule sync|list`: the same schedules shared by the workers of a PostgreSQL
//! store.

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Arc;

use wayline_core::RunStatus;
use wayline_executor::RunOptions;
use wayline_store::Lifecycle;
use wayline_store::schedule::{Firing, Schedule, load_triggers, read_triggers, run_triggers};

use crate::args::{ModelArgs, NotifyArgs, StoreArg, ToolsArgs};
use crate::assemble::open_queue;
use crate::assemble::{
    Environment, announce, engine_builder, load_tools_to_call, notifications, open_store, runtime,
    with_decider_for_later,
};
use crate::report::{Outcome, ReportFormat, fail, outln, print_json};

/// `wayline schedule ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ScheduleCommand {
    /// Run saved workflows on their schedules, in the foreground, until Ctrl-C (or
    /// `--max-runs`).
    Run(Box<ScheduleArgs>),
    /// Make a schedules file the shared schedules of a PostgreSQL store: the workers fire each
    /// due time once, whichever sees it first. Schedules not in the file are removed.
    Sync {
        /// The schedules file (as for `schedule run`; each trigger may add `id`, `missed: skip
        /// | catch_up` and `until`).
        file: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The shared schedules of a PostgreSQL store: when each fires next, and how often it has.
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

/// `wayline schedule run` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ScheduleArgs {
    /// The schedules file: a YAML list of `{workflow_id, every: 15m | cron: "0 6 * * *",
    /// inputs: {...}}`.
    file: PathBuf,
    #[command(flatten)]
    tools: ToolsArgs,
    /// The language model that answers decision steps, if the workflow has any.
    #[command(flatten)]
    model: ModelArgs,
    /// Stop after this many runs have finished.
    #[arg(long, value_name = "N")]
    max_runs: Option<usize>,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    notify: NotifyArgs,
    /// Output format: a line per finished run (json: its run record on one line, JSON Lines).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

pub(crate) fn schedule_command(command: ScheduleCommand) -> Outcome {
    let outcome = match command {
        ScheduleCommand::Run(args) => schedule_run(&args),
        ScheduleCommand::Sync {
            file,
            store,
            format,
        } => sync(&file, &store, format),
        ScheduleCommand::List { store, format } => list(&store, format),
    };
    match outcome {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn sync(
    file: &std::path::Path,
    store: &StoreArg,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let triggers = read_triggers(file).map_err(fail)?;
    let (stores, queue) = open_queue(store)?;
    let runtime = runtime()?;
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    // A trigger whose workflow has no active version would only record that at each fire.
    for trigger in &triggers {
        if let Err(error) = runtime.block_on(lifecycle.active(&trigger.workflow_id)) {
            eprintln!("warning: trigger `{}`: {error}", trigger.id);
        }
    }
    let synced = runtime
        .block_on(queue.sync_schedules(&triggers))
        .map_err(fail)?;
    if format == ReportFormat::Json {
        print_json(&serde_json::json!({
            "added": synced.added,
            "changed": synced.changed,
            "removed": synced.removed,
            "unchanged": synced.kept,
        }));
        return Ok(Outcome::Ok);
    }
    for (what, ids) in [
        ("added", &synced.added),
        ("changed (starts again now)", &synced.changed),
        ("removed", &synced.removed),
        ("unchanged", &synced.kept),
    ] {
        if !ids.is_empty() {
            outln!("{what}: {}", ids.join(", "));
        }
    }
    Ok(Outcome::Ok)
}

fn list(store: &StoreArg, format: ReportFormat) -> Result<Outcome, Outcome> {
    let (_, queue) = open_queue(store)?;
    let schedules = runtime()?.block_on(queue.schedules()).map_err(fail)?;
    if format == ReportFormat::Json {
        let listed: Vec<_> = schedules
            .iter()
            .map(|shared| {
                serde_json::json!({
                    "id": shared.trigger.id,
                    "workflow_id": shared.trigger.workflow_id,
                    "schedule": describe(&shared.trigger.schedule),
                    "inputs": shared.trigger.inputs,
                    "missed": shared.trigger.missed.as_str(),
                    "until": shared.trigger.until,
                    "in_flight": shared.trigger.in_flight.as_str(),
                    "start": shared.start,
                    "next_due": shared.next_due,
                    "fired": shared.fired,
                    "skipped": shared.skipped,
                })
            })
            .collect();
        print_json(&listed);
        return Ok(Outcome::Ok);
    }
    if schedules.is_empty() {
        outln!("no shared schedules; `wayline schedule sync FILE` stores some");
    }
    for shared in &schedules {
        let next = shared.next_due.map_or_else(
            || "no more fires".to_owned(),
            |at| format!("next {}", at.format("%Y-%m-%d %H:%M:%S%.3f")),
        );
        outln!(
            "{}  {}  {}  {next}  ({} fired, {} skipped)",
            shared.trigger.id,
            shared.trigger.workflow_id,
            describe(&shared.trigger.schedule),
            shared.fired,
            shared.skipped
        );
    }
    Ok(Outcome::Ok)
}

/// A schedule as written: `every 15m`, `cron 0 6 * * *`.
fn describe(schedule: &Schedule) -> String {
    match schedule {
        Schedule::Every(interval) => format!("every {}s", interval.as_secs()),
        Schedule::Cron { expression, .. } => format!("cron {expression}"),
        _ => "?".to_owned(),
    }
}

fn schedule_run(args: &ScheduleArgs) -> Result<Outcome, Outcome> {
    let triggers = load_triggers(&args.file).map_err(fail)?;
    let stores = open_store(&args.store)?;
    let env = Environment::load(&args.tools.env_files)?;
    let registry = load_tools_to_call(&args.tools.tools, &env)?;
    let notifications = notifications(&args.notify, false)?;
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let runtime = runtime()?;
    // Every trigger must name a workflow with an active version before anything starts.
    let mut active = Vec::new();
    for trigger in &triggers {
        let record = runtime
            .block_on(lifecycle.active(&trigger.workflow_id))
            .map_err(fail)?;
        active.push(record.workflow);
    }
    let builder = engine_builder(Arc::new(registry), &args.tools, &env)?;
    let engine = with_decider_for_later(builder, &active, &args.model)?
        .run_store(stores.runs.clone())
        .build();
    let failures = Cell::new(0usize);
    let format = args.format;
    let (engine, lifecycle, notifications, failures_ref) =
        (&engine, &lifecycle, &notifications, &failures);
    runtime.block_on(run_triggers(
        &triggers,
        move |_, trigger| async move {
            // The active version at the moment it fires: activating a new one takes effect
            // from the next fire on.
            let record = match lifecycle.active(&trigger.workflow_id).await {
                Ok(record) => record,
                Err(error) => {
                    eprintln!("error: {error}");
                    failures_ref.set(failures_ref.get() + 1);
                    return;
                }
            };
            let options = RunOptions::new()
                .inputs(trigger.inputs.clone())
                .workflow_version(record.version);
            match engine.run(&record.workflow, options).await {
                Ok(run) => {
                    match format {
                        ReportFormat::Json => {
                            outln!("{}", serde_json::to_string(&run).unwrap_or_default());
                        }
                        ReportFormat::Text => outln!(
                            "{} {} v{} {}",
                            run.id,
                            run.workflow_id,
                            record.version,
                            run.status.as_str()
                        ),
                    }
                    if run.status != RunStatus::Success {
                        failures_ref.set(failures_ref.get() + 1);
                    }
                    announce(notifications, &run).await;
                }
                Err(error) => {
                    eprintln!("error: {}: {error}", trigger.workflow_id);
                    failures_ref.set(failures_ref.get() + 1);
                }
            }
        },
        |_, trigger, firing| {
            if firing == Firing::SkippedBusy {
                eprintln!(
                    "skipped: {} is still running from its previous fire",
                    trigger.workflow_id
                );
            }
        },
        args.max_runs,
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    ));
    Ok(if failures.get() == 0 {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}

//! `wayline runs list|show|resume`: run history, and finishing interrupted runs;
//! `wayline runs submit|cancel|queue|requeue`: the run queue of a shared PostgreSQL store.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use wayline_core::RunStatus;
use wayline_core::store::RunQuery;
use wayline_executor::{Error, ResumeOptions, UnknownSteps, summary};
use wayline_store::Lifecycle;
use wayline_store::queue::{Cancellation, InFlight, QueueState, Submission};

use crate::args::{ModelArgs, StoreArg, ToolsArgs};
use crate::assemble::open_queue;
use crate::assemble::{
    Environment, cancellable, engine_builder, load_tools_to_call, open_existing_store, open_store,
    run_inputs, runtime, with_decider,
};
use crate::report::{
    Outcome, ReportFormat, engine_error, fail, out, outln, print_json, report_run, unreadable,
};

/// `wayline runs ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RunsCommand {
    /// Run history, newest first.
    List {
        /// Only runs of this workflow.
        #[arg(long = "workflow", value_name = "ID")]
        workflow: Option<String>,
        /// Only runs with this status.
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// At most this many runs.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Start after this cursor (printed at the end of the previous page).
        #[arg(long, value_name = "CURSOR")]
        after: Option<String>,
        /// Only runs started at or after this time (RFC 3339, e.g. 2026-11-22T08:00:00Z).
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        since: Option<DateTime<Utc>>,
        /// Only runs started before this time (RFC 3339).
        #[arg(long, value_name = "TIME", value_parser = parse_time)]
        until: Option<DateTime<Utc>>,
        /// Only runs a queue worker held (or last held), by its name.
        #[arg(long, value_name = "NAME")]
        worker: Option<String>,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// One run: its summary, or with `--format json` its whole record.
    Show {
        /// The run id.
        run_id: String,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Finish an interrupted run: keep what finished, run the rest with the same inputs.
    Resume(ResumeArgs),
    /// Queue a run of a saved workflow for the workers of a shared store (PostgreSQL); prints
    /// its run id.
    Submit(SubmitArgs),
    /// Cancel a submitted run from any machine: a queued one at once, a running one when its
    /// worker next renews its lease.
    Cancel {
        /// The run id.
        run_id: String,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The run queue: submitted runs, oldest first, with their state and worker.
    Queue {
        /// Only runs in this state.
        #[arg(long, value_enum)]
        state: Option<QueueStateArg>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Queue a blocked run again (its worker was lost while a step that is not safe to repeat
    /// ran), once you have checked whether that step took effect.
    Requeue {
        /// The run id.
        run_id: String,
        /// Send the steps of unknown outcome again.
        #[arg(
            long,
            conflicts_with = "skip_unknown",
            required_unless_present = "skip_unknown"
        )]
        retry_unknown: bool,
        /// Skip them (and what depends on them).
        #[arg(long)]
        skip_unknown: bool,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

/// Queue states, for filters.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum QueueStateArg {
    Queued,
    Running,
    Blocked,
    Done,
    Cancelled,
}

impl From<QueueStateArg> for QueueState {
    fn from(state: QueueStateArg) -> Self {
        match state {
            QueueStateArg::Queued => QueueState::Queued,
            QueueStateArg::Running => QueueState::Running,
            QueueStateArg::Blocked => QueueState::Blocked,
            QueueStateArg::Done => QueueState::Done,
            QueueStateArg::Cancelled => QueueState::Cancelled,
        }
    }
}

/// What a worker taking over a run does with a step in flight that is not safe to repeat.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum InFlightArg {
    /// Stop and wait for a person (`wayline runs requeue`).
    Ask,
    /// Skip it and what depends on it.
    Skip,
    /// Send it again.
    Retry,
}

/// `wayline runs submit` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct SubmitArgs {
    /// The saved workflow.
    workflow_id: String,
    /// Its version (default: the active one).
    #[arg(long)]
    version: Option<u32>,
    /// A run input, NAME=TEXT or NAME:=JSON (repeatable). Inputs wait in the queue until a
    /// worker starts the run: give secrets to the workers (`--env-file`), not here.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    inputs: Vec<String>,
    /// A YAML or JSON file of run inputs (`--input` wins over it).
    #[arg(long = "inputs", value_name = "FILE")]
    inputs_file: Option<std::path::PathBuf>,
    /// The run's id (default: a new one).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// When a worker is lost while a step that is not safe to repeat runs, what the worker
    /// taking over does with that step.
    #[arg(long, value_enum, default_value_t = InFlightArg::Ask)]
    in_flight: InFlightArg,
    #[command(flatten)]
    store: StoreArg,
    /// Output format: text prints the run id, json the queue entry.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

/// Run statuses, for filters.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum StatusArg {
    Success,
    Failed,
    Running,
    Cancelled,
}

impl From<StatusArg> for RunStatus {
    fn from(status: StatusArg) -> Self {
        match status {
            StatusArg::Success => RunStatus::Success,
            StatusArg::Failed => RunStatus::Failed,
            StatusArg::Running => RunStatus::Running,
            StatusArg::Cancelled => RunStatus::Cancelled,
        }
    }
}

/// `wayline runs resume` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The run id.
    run_id: String,
    #[command(flatten)]
    tools: ToolsArgs,
    /// The language model that answers decision steps, if the workflow has any.
    #[command(flatten)]
    model: ModelArgs,
    /// Run again the steps that were in flight and are not safe to repeat.
    #[arg(long, conflicts_with = "skip_unknown")]
    retry_unknown: bool,
    /// Skip the steps that were in flight and are not safe to repeat.
    #[arg(long)]
    skip_unknown: bool,
    #[command(flatten)]
    store: StoreArg,
    /// Output format: text prints a summary, json the run record.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    format: ReportFormat,
}

pub(crate) fn runs_command(command: RunsCommand) -> Outcome {
    let outcome = match command {
        RunsCommand::List {
            workflow,
            status,
            limit,
            after,
            since,
            until,
            worker,
            store,
            format,
        } => {
            let mut query = RunQuery::new()
                .limit(limit.max(1))
                .started_between(since, until);
            if let Some(worker) = worker {
                query = query.worker(worker);
            }
            if let Some(workflow) = workflow {
                query = query.workflow(workflow);
            }
            if let Some(status) = status {
                query = query.status(status.into());
            }
            if let Some(after) = after {
                query = query.after(after);
            }
            list(&store, &query, format)
        }
        RunsCommand::Show {
            run_id,
            store,
            format,
        } => show(&store, &run_id, format),
        RunsCommand::Resume(args) => resume(args),
        RunsCommand::Submit(args) => submit(&args),
        RunsCommand::Cancel {
            run_id,
            store,
            format,
        } => cancel(&store, &run_id, format),
        RunsCommand::Queue {
            state,
            limit,
            store,
            format,
        } => queue(&store, state.map(Into::into), limit, format),
        RunsCommand::Requeue {
            run_id,
            retry_unknown,
            store,
            format,
            ..
        } => requeue(
            &store,
            &run_id,
            if retry_unknown {
                InFlight::Retry
            } else {
                InFlight::Skip
            },
            format,
        ),
    };
    match outcome {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn list(store: &StoreArg, query: &RunQuery, format: ReportFormat) -> Result<Outcome, Outcome> {
    let Some((stores, path)) = open_existing_store(store)? else {
        // Nothing recorded yet: say so, and make no store to say it.
        match format {
            ReportFormat::Json => print_json(&serde_json::json!({"runs": [], "next_cursor": null})),
            ReportFormat::Text => {
                outln!("no runs: there is no store at {} yet", store_shown(store))
            }
        }
        return Ok(Outcome::Ok);
    };
    let page = runtime()?
        .block_on(stores.runs.list_runs(query))
        .map_err(fail)?;
    if page.runs.is_empty() && format == ReportFormat::Text {
        outln!(
            "no runs in {}{}",
            path,
            if query_filters(query) { " match" } else { "" }
        );
        return Ok(Outcome::Ok);
    }
    match format {
        ReportFormat::Json => print_json(&page),
        ReportFormat::Text => {
            for run in &page.runs {
                let version = run
                    .workflow_version
                    .map_or_else(String::new, |version| format!(" v{version}"));
                let started = run.started_at.map_or_else(
                    || "-".to_owned(),
                    |at| at.format("%Y-%m-%d %H:%M:%S").to_string(),
                );
                let worker = run
                    .worker
                    .as_ref()
                    .map_or_else(String::new, |worker| format!("  [{worker}]"));
                outln!(
                    "{}  {started}  {:<9}  {}{version}  ({} steps, {} failed){worker}",
                    run.id,
                    run.status.as_str(),
                    run.workflow_id,
                    run.steps,
                    run.failed_steps
                );
            }
            if let Some(cursor) = &page.next_cursor {
                outln!("more: --after '{cursor}'");
            }
        }
    }
    Ok(Outcome::Ok)
}

/// How the store is named in a message: the path given, or the default one.
fn store_shown(store: &StoreArg) -> String {
    store
        .store
        .clone()
        .or_else(wayline_store::Location::configured)
        .map_or_else(
            || "the default place".to_owned(),
            |location| location.to_string(),
        )
}

/// Whether a query filters (so that finding nothing says so).
fn query_filters(query: &RunQuery) -> bool {
    query.workflow_id.is_some()
        || query.status.is_some()
        || query.started_after.is_some()
        || query.started_before.is_some()
}

fn show(store: &StoreArg, run_id: &str, format: ReportFormat) -> Result<Outcome, Outcome> {
    let Some((stores, _)) = open_existing_store(store)? else {
        return Err(unreadable(format!(
            "no run `{run_id}`: there is no store at {} (pass --store PATH)",
            store_shown(store)
        )));
    };
    let run = runtime()?
        .block_on(stores.runs.run(run_id))
        .map_err(fail)?
        .ok_or_else(|| {
            unreadable(format!(
                "no run `{run_id}` in the store; `wayline runs list` shows the runs"
            ))
        })?;
    match format {
        ReportFormat::Json => print_json(&run),
        ReportFormat::Text => out!("{}", summary(&run)),
    }
    Ok(Outcome::Ok)
}

fn resume(args: ResumeArgs) -> Result<Outcome, Outcome> {
    let stores = open_store(&args.store)?;
    let runtime = runtime()?;
    // A run of the queue is the workers' to finish: resuming it here as well would make two
    // writers of one run.
    if let Some(queue) = &stores.queue
        && let Some(entry) = runtime.block_on(queue.entry(&args.run_id)).map_err(fail)?
        && entry.state != QueueState::Done
    {
        let what = match entry.state {
            QueueState::Blocked => {
                "it is blocked: `wayline runs requeue` hands it back to the workers with --retry-unknown or --skip-unknown"
            }
            QueueState::Cancelled => "it was cancelled",
            _ => "the workers will finish it; `wayline runs cancel` stops it",
        };
        return Err(unreadable(format!(
            "run `{}` is in the run queue ({}); {what}",
            args.run_id,
            entry.state.as_str()
        )));
    }
    let env = Environment::load(&args.tools.env_files)?;
    let registry = load_tools_to_call(&args.tools.tools, &env)?;
    let stored = runtime
        .block_on(stores.runs.run(&args.run_id))
        .map_err(fail)?
        .ok_or_else(|| unreadable(format!("no run `{}` in the store", args.run_id)))?;
    let Some(version) = stored.workflow_version else {
        return Err(unreadable(format!(
            "run `{}` did not record which workflow version it ran, so it cannot be resumed",
            args.run_id
        )));
    };
    let saved = runtime
        .block_on(Lifecycle::new(stores.workflows.clone()).get(&stored.workflow_id, Some(version)))
        .map_err(fail)?;
    let builder = engine_builder(Arc::new(registry), &args.tools, &env)?;
    let engine = with_decider(builder, [&saved.workflow], &args.model, false)?
        .run_store(stores.runs.clone())
        .observer(Arc::new(crate::logging::progress()))
        .build();
    let prepared = engine.prepare(&saved.workflow).map_err(fail)?;
    let unknown = if args.retry_unknown {
        UnknownSteps::Retry
    } else if args.skip_unknown {
        UnknownSteps::Skip
    } else {
        UnknownSteps::Stop
    };
    let resumed = cancellable(&runtime, |cancel| {
        engine.resume(
            &prepared,
            &args.run_id,
            ResumeOptions::new().unknown(unknown).cancel(cancel),
        )
    });
    match resumed {
        Ok(run) => Ok(report_run(&run, args.format)),
        Err(error @ Error::UnknownOutcome { .. }) => {
            eprintln!("error: {error}");
            eprintln!(
                "check whether they took effect, then resume with --retry-unknown (send them again) or --skip-unknown (skip them and what depends on them)"
            );
            Err(Outcome::Failed)
        }
        Err(error) => Err(engine_error(error)),
    }
}

fn submit(args: &SubmitArgs) -> Result<Outcome, Outcome> {
    let (stores, queue) = open_queue(&args.store)?;
    let inputs = run_inputs(args.inputs_file.as_deref(), &args.inputs)?;
    let runtime = runtime()?;
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let record = runtime
        .block_on(async {
            match args.version {
                Some(version) => lifecycle.get(&args.workflow_id, Some(version)).await,
                None => lifecycle.active(&args.workflow_id).await,
            }
        })
        .map_err(fail)?;
    let mut submission = Submission::new(&args.workflow_id, record.version)
        .inputs(inputs)
        .in_flight(match args.in_flight {
            InFlightArg::Ask => InFlight::Ask,
            InFlightArg::Skip => InFlight::Skip,
            InFlightArg::Retry => InFlight::Retry,
        });
    if let Some(id) = &args.run_id {
        submission = submission.run_id(id);
    }
    let entry = runtime.block_on(queue.submit(&submission)).map_err(fail)?;
    match args.format {
        ReportFormat::Json => print_json(&entry),
        ReportFormat::Text => outln!("{}", entry.run_id),
    }
    Ok(Outcome::Ok)
}

fn cancel(store: &StoreArg, run_id: &str, format: ReportFormat) -> Result<Outcome, Outcome> {
    let (_, queue) = open_queue(store)?;
    let cancelled = runtime()?.block_on(queue.cancel(run_id)).map_err(fail)?;
    if format == ReportFormat::Json {
        let outcome = match cancelled {
            Cancellation::Cancelled => "cancelled",
            Cancellation::Requested => "requested",
            _ => "ended",
        };
        print_json(&serde_json::json!({"run_id": run_id, "cancellation": outcome}));
        return Ok(Outcome::Ok);
    }
    match cancelled {
        Cancellation::Cancelled => outln!("cancelled {run_id} before it ran"),
        Cancellation::Requested => {
            outln!("cancelling {run_id}: its worker stops it when it next renews its lease");
        }
        Cancellation::Ended => outln!("{run_id} had already ended; nothing to cancel"),
        _ => outln!("{run_id}: {cancelled:?}"),
    }
    Ok(Outcome::Ok)
}

fn queue(
    store: &StoreArg,
    state: Option<QueueState>,
    limit: usize,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let (_, queue) = open_queue(store)?;
    let entries = runtime()?
        .block_on(queue.entries(state, limit.max(1)))
        .map_err(fail)?;
    if format == ReportFormat::Json {
        print_json(&entries);
        return Ok(Outcome::Ok);
    }
    if entries.is_empty() {
        outln!(
            "no runs in the queue{}",
            if state.is_some() { " match" } else { "" }
        );
    }
    for entry in &entries {
        let worker = entry.worker.as_ref().map_or_else(String::new, |worker| {
            format!("  [{worker}, attempt {}]", entry.attempts)
        });
        outln!(
            "{}  {}  {:<9}  {} v{}{worker}",
            entry.run_id,
            entry.submitted_at.format("%Y-%m-%d %H:%M:%S"),
            entry.state.as_str(),
            entry.workflow_id,
            entry.workflow_version
        );
        if let Some(note) = &entry.note {
            outln!("    {note}");
        }
    }
    Ok(Outcome::Ok)
}

fn requeue(
    store: &StoreArg,
    run_id: &str,
    in_flight: InFlight,
    format: ReportFormat,
) -> Result<Outcome, Outcome> {
    let (_, queue) = open_queue(store)?;
    let runtime = runtime()?;
    if runtime
        .block_on(queue.requeue(run_id, in_flight))
        .map_err(fail)?
    {
        if format == ReportFormat::Json {
            print_json(
                &serde_json::json!({"run_id": run_id, "requeued": true, "in_flight": in_flight}),
            );
            return Ok(Outcome::Ok);
        }
        outln!(
            "{run_id} is queued again; the worker that takes it will {} the steps of unknown outcome",
            if in_flight == InFlight::Retry {
                "send again"
            } else {
                "skip"
            }
        );
        return Ok(Outcome::Ok);
    }
    let state = runtime
        .block_on(queue.entry(run_id))
        .map_err(fail)?
        .map_or("not in the queue", |entry| entry.state.as_str());
    Err(unreadable(format!(
        "{run_id} is {state}, not blocked; only a blocked run is queued again"
    )))
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|error| format!("{error}; write RFC 3339, e.g. 2026-11-22T08:00:00Z"))
}

//! `wayline worker` (one worker of a pool sharing a PostgreSQL store's run queue) and
//! `wayline workers list|metrics` (what the pool is doing).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use wayline_store::queue::{QueueStats, WorkerInfo};
use wayline_worker::{Worker, WorkerOptions, default_name};

use wayline_knowledge::Recorder;

use crate::args::{LearnArgs, ModelArgs, StoreArg, ToolsArgs, parse_duration};
use crate::assemble::{
    Environment, engine_builder, load_tools_to_call, open_knowledge, open_queue, runtime,
    store_location, with_decider_for_later,
};
use crate::report::{Outcome, ReportFormat, fail, outln, print_json};

/// `wayline worker` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    tools: ToolsArgs,
    /// The language model that answers decision steps, if workflows have any.
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    store: StoreArg,
    /// This worker's name, unique among live workers (default: HOST-PID).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// How many runs it works on at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,
    /// Its lease on a run: a worker not heard from for this long loses its runs to the others
    /// (e.g. 30s, 2m).
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_duration)]
    lease: Duration,
    /// On shutdown (Ctrl-C, SIGTERM): how long its runs may go on to finish before they are
    /// handed back to the queue.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_duration)]
    grace: Duration,
    /// How often an idle worker looks for queued runs (and due shared schedules).
    #[arg(long, value_name = "TIME", default_value = "500ms", value_parser = parse_duration)]
    poll: Duration,
    /// Fire no shared schedules (`wayline schedule sync`): leave them to other workers.
    #[arg(long)]
    no_schedules: bool,
    /// `--learn --sut NAME`: record what the runs teach into the knowledge of `NAME`, kept
    /// by default in the store's own database (several workers may learn into one).
    #[command(flatten)]
    learn: LearnArgs,
}

/// How often a learning worker writes what its finished runs taught.
const LEARN_EVERY: Duration = Duration::from_secs(5);

/// `wayline workers ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum WorkersCommand {
    /// The workers the store has heard from (alive or not, the runs they hold), and the
    /// queue's depth and lag.
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// The same as metrics, in the Prometheus text format (for a textfile collector or a
    /// scrape through a script).
    Metrics {
        #[command(flatten)]
        store: StoreArg,
    },
}

pub(crate) fn worker_command(args: WorkerArgs) -> Outcome {
    match work(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn work(args: WorkerArgs) -> Result<Outcome, Outcome> {
    let (stores, queue) = open_queue(&args.store)?;
    let env = Environment::load(&args.tools.env_files)?;
    let registry = Arc::new(load_tools_to_call(&args.tools.tools, &env)?);
    let mut builder = engine_builder(registry.clone(), &args.tools, &env)?;
    let runtime = runtime()?;
    let recorder = match (&args.learn.sut, args.learn.learn) {
        (Some(sut), true) => {
            let location = store_location(&args.store)?;
            let knowledge = open_knowledge(&args.learn.store, Some(&location))?;
            let recorder = Recorder::new(knowledge, wayline_knowledge::sut_key(sut), registry);
            // Saved workflows lend their steps to the patterns learned; runs of one saved
            // after the worker started are learned from the calls they made.
            for stored in runtime
                .block_on(stores.workflows.list_workflows())
                .map_err(fail)?
            {
                recorder.register(&stored.workflow);
            }
            builder = builder.observer(Arc::new(recorder.clone()));
            Some(recorder)
        }
        _ => None,
    };
    let builder = with_decider_for_later(builder, [], &args.model)?;
    let name = args.name.unwrap_or_else(default_name);
    let options = WorkerOptions::new(&name)
        .concurrency(args.concurrency)
        .lease(args.lease)
        .grace(args.grace)
        .poll(args.poll)
        .schedules(!args.no_schedules);
    let worker = Worker::new(queue, stores.workflows.clone(), builder, options);
    eprintln!(
        "worker {name}: taking runs from {} ({} at once, lease {:?}); Ctrl-C or SIGTERM stops it",
        store_location(&args.store)?,
        args.concurrency,
        args.lease
    );
    let report = runtime
        .block_on(async {
            tokio::select! {
                report = worker.run(crate::assemble::shutdown("stopping: finishing the runs in hand (again to stop at once)")) => report,
                never = learn_now_and_then(recorder.as_ref()) => match never {},
            }
        })
        .map_err(fail)?;
    let unlearned = match (&recorder, &args.learn.sut) {
        (Some(recorder), Some(sut)) => match runtime.block_on(recorder.flush()) {
            Ok(_) => {
                eprintln!("learned: what the runs taught is recorded in the knowledge of `{sut}`");
                false
            }
            Err(error) => {
                eprintln!("error: what the last runs taught was not recorded: {error}");
                true
            }
        },
        _ => false,
    };
    let metrics = report.metrics;
    eprintln!(
        "worker {name} stopped: {} runs claimed ({} taken over), {} finished, {} blocked, {} handed back, {} lost to other workers",
        metrics.claimed,
        metrics.taken_over,
        metrics.finished,
        metrics.blocked,
        metrics.requeued,
        metrics.lost
    );
    Ok(if unlearned {
        Outcome::Failed
    } else {
        Outcome::Ok
    })
}

/// Writes what finished runs taught every [`LEARN_EVERY`], for as long as the worker works
/// (never, without a recorder). A write that fails keeps its runs for the next one.
async fn learn_now_and_then(recorder: Option<&Recorder>) -> std::convert::Infallible {
    let Some(recorder) = recorder else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(LEARN_EVERY).await;
        if let Err(error) = recorder.flush().await {
            eprintln!("warning: could not record what the runs taught (trying again): {error}");
        }
    }
}

pub(crate) fn workers_command(command: WorkersCommand) -> Outcome {
    let outcome = match command {
        WorkersCommand::List { store, format } => list(&store, format),
        WorkersCommand::Metrics { store } => metrics(&store),
    };
    match outcome {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

/// The workers the store knows and the queue's depth.
fn pool(store: &StoreArg) -> Result<(Vec<WorkerInfo>, QueueStats), Outcome> {
    let (_, queue) = open_queue(store)?;
    runtime()?
        .block_on(async {
            Ok::<_, wayline_store::StoreError>((queue.workers().await?, queue.stats().await?))
        })
        .map_err(fail)
}

fn list(store: &StoreArg, format: ReportFormat) -> Result<Outcome, Outcome> {
    let (workers, stats) = pool(store)?;
    if format == ReportFormat::Json {
        print_json(&serde_json::json!({"queue": stats, "workers": workers}));
        return Ok(Outcome::Ok);
    }
    let lag = if stats.queued > 0 {
        format!(" (the oldest waiting {:.1}s)", stats.lag_seconds)
    } else {
        String::new()
    };
    outln!(
        "queue: {} queued{lag}, {} running, {} blocked",
        stats.queued,
        stats.running,
        stats.blocked
    );
    if workers.is_empty() {
        outln!("no workers have started on this store yet: `wayline worker --store …` starts one");
        return Ok(Outcome::Ok);
    }
    let now = Utc::now();
    for worker in &workers {
        let seen = (now - worker.last_seen).num_milliseconds().max(0) as f64 / 1000.0;
        outln!(
            "{}  {}  on {} (pid {})  {} of {} runs held, {} finished, seen {seen:.1}s ago",
            worker.name,
            if worker.alive { "alive  " } else { "stopped" },
            worker.host,
            worker.pid,
            worker.runs.len(),
            worker.concurrency,
            worker.finished,
        );
        for run in &worker.runs {
            outln!("    {run}");
        }
    }
    Ok(Outcome::Ok)
}

fn metrics(store: &StoreArg) -> Result<Outcome, Outcome> {
    let (workers, stats) = pool(store)?;
    let mut text = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: Vec<(String, String)>| {
        text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, value) in samples {
            text.push_str(&format!("{name}{labels} {value}\n"));
        }
    };
    metric(
        "wayline_queue_runs",
        "gauge",
        "Runs in the queue, by state.",
        [
            ("queued", stats.queued),
            ("running", stats.running),
            ("blocked", stats.blocked),
        ]
        .iter()
        .map(|(state, count)| (format!("{{state=\"{state}\"}}"), count.to_string()))
        .collect(),
    );
    metric(
        "wayline_queue_lag_seconds",
        "gauge",
        "How long the oldest queued run has waited.",
        vec![(String::new(), format!("{}", stats.lag_seconds))],
    );
    let per_worker = |value: &dyn Fn(&WorkerInfo) -> String| {
        workers
            .iter()
            .map(|worker| (format!("{{worker=\"{}\"}}", worker.name), value(worker)))
            .collect::<Vec<_>>()
    };
    metric(
        "wayline_worker_alive",
        "gauge",
        "1 while the worker renews within its lease time and is not stopping.",
        per_worker(&|worker| u8::from(worker.alive).to_string()),
    );
    metric(
        "wayline_worker_runs_held",
        "gauge",
        "Runs the worker holds now.",
        per_worker(&|worker| worker.runs.len().to_string()),
    );
    metric(
        "wayline_worker_runs_finished_total",
        "counter",
        "Runs the worker has finished (released as done).",
        per_worker(&|worker| worker.finished.to_string()),
    );
    metric(
        "wayline_worker_last_seen_seconds",
        "gauge",
        "Unix time of the worker's last heartbeat.",
        per_worker(&|worker| worker.last_seen.timestamp().to_string()),
    );
    crate::report::out!("{text}");
    Ok(Outcome::Ok)
}

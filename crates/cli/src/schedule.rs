//! `wayline schedule run` and the notification flags shared with `wayline run`.

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::Arc;

use wayline_core::{Run, RunStatus};
use wayline_executor::RunOptions;
use wayline_store::schedule::{Firing, load_triggers, run_triggers};
use wayline_store::{ConsoleNotifier, Lifecycle, Notifications, WebhookNotifier};

use crate::Outcome;
use crate::load_tools;
use crate::plan::with_decider_for_later;
use crate::run::{engine_builder, runtime, transport, unreadable};
use crate::runs::StoreArg;

/// Who is told about finished runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct NotifyArgs {
    /// POST a JSON notice to this URL when a run fails (retried; repeatable).
    #[arg(long = "notify-webhook", value_name = "URL")]
    webhooks: Vec<String>,
    /// Print a one-line notice on stdout when a run fails (on stderr with `--format json`).
    #[arg(long)]
    notify_stdout: bool,
    /// Also notify when a run succeeds.
    #[arg(long)]
    notify_on_success: bool,
}

impl NotifyArgs {
    /// The notifications these flags ask for; `--notify-stdout` notices go to stderr when
    /// stdout carries JSON.
    pub(crate) fn notifications(&self, json_on_stdout: bool) -> Result<Notifications, Outcome> {
        let mut notifications = Notifications::new().on_success(self.notify_on_success);
        if !self.webhooks.is_empty() {
            let transport: Arc<dyn wayline_core::Transport> = Arc::new(transport()?);
            for url in &self.webhooks {
                if url::Url::parse(url).is_err() {
                    return Err(unreadable(format!(
                        "--notify-webhook {}: not a URL (write e.g. https://hooks.example/wayline)",
                        wayline_store::origin(url)
                    )));
                }
                notifications =
                    notifications.to(Arc::new(WebhookNotifier::new(url, Arc::clone(&transport))));
            }
        }
        if self.notify_stdout {
            notifications = notifications.to(Arc::new(if json_on_stdout {
                ConsoleNotifier::stderr()
            } else {
                ConsoleNotifier::stdout()
            }));
        }
        Ok(notifications)
    }
}

/// Sends the notices `run` deserves; a notice that cannot be delivered is a warning.
pub(crate) async fn announce(notifications: &Notifications, run: &Run) {
    for failure in notifications.run_finished(run).await {
        eprintln!("warning: notification not delivered: {failure}");
    }
}

/// `wayline schedule ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ScheduleCommand {
    /// Run saved workflows on their schedules, in the foreground, until Ctrl-C (or
    /// `--max-runs`).
    Run(ScheduleArgs),
}

/// `wayline schedule run` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ScheduleArgs {
    /// The schedules file: a YAML list of `{workflow_id, every: 15m | cron: "0 6 * * *",
    /// inputs: {...}}`.
    file: PathBuf,
    /// Tool files or directories (repeatable).
    #[arg(long = "tools", required = true, value_name = "DIR")]
    tools: Vec<PathBuf>,
    /// The tool-configs file: base URL overrides and credentials per tool.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The language model that answers decision steps, if the workflow has any.
    #[command(flatten)]
    model: crate::plan::ModelArgs,
    /// Stop after this many runs have finished.
    #[arg(long, value_name = "N")]
    max_runs: Option<usize>,
    #[command(flatten)]
    store: StoreArg,
    #[command(flatten)]
    notify: NotifyArgs,
}

pub(crate) fn schedule_command(command: ScheduleCommand) -> Outcome {
    let ScheduleCommand::Run(args) = command;
    match schedule_run(&args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn schedule_run(args: &ScheduleArgs) -> Result<Outcome, Outcome> {
    let triggers = load_triggers(&args.file).map_err(unreadable)?;
    let stores = args.store.open()?;
    let registry = load_tools(&args.tools)?;
    let notifications = args.notify.notifications(false)?;
    let lifecycle = Lifecycle::new(stores.workflows.clone());
    let runtime = runtime()?;
    // Every trigger must name a workflow with an active version before anything starts.
    let mut active = Vec::new();
    for trigger in &triggers {
        let record = runtime
            .block_on(lifecycle.active(&trigger.workflow_id))
            .map_err(unreadable)?;
        active.push(record.workflow);
    }
    let builder = engine_builder(Arc::new(registry), args.config.as_deref())?;
    let engine = with_decider_for_later(builder, &active, &args.model)?
        .run_store(stores.runs.clone())
        .build();
    let failures = Cell::new(0usize);
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
                    println!(
                        "{} {} v{} {}",
                        run.id,
                        run.workflow_id,
                        record.version,
                        run.status.as_str()
                    );
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

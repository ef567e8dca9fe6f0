//! One claimed run: the saved workflow version prepared, the run started — or, when a lost
//! worker had started it, resumed with the durable-resume rules — and what the queue should
//! hear of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wayline_core::{RunStatus, RunStore, WorkflowStore};
use wayline_executor::{
    CancelToken, Engine, Error as EngineError, PreparedWorkflow, ResumeOptions, RunOptions,
    UnknownSteps,
};
use wayline_store::StoreErrorKind;
use wayline_store::queue::{InFlight, QueueEntry, Release};

use crate::metrics::Counters;

/// How a run's work ended, for the queue.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Released with this.
    Release(Release),
    /// Another worker holds the run now: nothing to release.
    Lost,
}

/// Prepared workflow versions, by id and version (a saved version never changes).
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    cache: Mutex<HashMap<(String, u32), Arc<PreparedWorkflow>>>,
}

impl Prepared {
    async fn get(
        &self,
        engine: &Engine,
        workflows: &dyn WorkflowStore,
        id: &str,
        version: u32,
    ) -> Result<Arc<PreparedWorkflow>, String> {
        let key = (id.to_owned(), version);
        if let Some(prepared) = self.lock().get(&key) {
            return Ok(Arc::clone(prepared));
        }
        let stored = workflows
            .workflow(id, Some(version))
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(|| format!("workflow `{id}` version {version} is not in the store"))?;
        let prepared = Arc::new(
            engine
                .prepare(&stored.workflow)
                .map_err(|error| error.to_string())?,
        );
        self.lock().insert(key, Arc::clone(&prepared));
        Ok(prepared)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u32), Arc<PreparedWorkflow>>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What one run needs from its worker.
pub(crate) struct Context<'w> {
    pub(crate) engine: &'w Engine,
    pub(crate) workflows: &'w dyn WorkflowStore,
    pub(crate) runs: &'w dyn RunStore,
    pub(crate) prepared: &'w Prepared,
    pub(crate) counters: &'w Counters,
}

/// Works on `entry`'s run until it ends, needs a person, or cannot go on here.
pub(crate) async fn work(context: Context<'_>, entry: QueueEntry, cancel: CancelToken) -> Outcome {
    let run_id = entry.run_id.as_str();
    let prepared = match context
        .prepared
        .get(
            context.engine,
            context.workflows,
            &entry.workflow_id,
            entry.workflow_version,
        )
        .await
    {
        Ok(prepared) => prepared,
        Err(reason) => {
            return Outcome::Release(Release::Blocked(format!(
                "it cannot start on this worker: {reason}"
            )));
        }
    };
    if entry.cancel_requested {
        cancel.cancel();
    }
    let stored = match context.runs.run(run_id).await {
        Ok(stored) => stored,
        Err(error) => return requeue(context.counters, &error.to_string()),
    };
    let ran = match stored {
        None => {
            let options = RunOptions::new()
                .run_id(run_id)
                .inputs(entry.inputs.clone())
                .workflow_version(entry.workflow_version)
                .cancel(cancel);
            context.engine.run_prepared(&prepared, options).await
        }
        Some(record) if record.status == RunStatus::Running => {
            Counters::add(&context.counters.taken_over);
            tracing::info!(run_id, "taking over a run another worker started");
            let unknown = match entry.in_flight {
                InFlight::Retry => UnknownSteps::Retry,
                InFlight::Skip => UnknownSteps::Skip,
                _ => UnknownSteps::Stop,
            };
            let options = ResumeOptions::new().unknown(unknown).cancel(cancel);
            context.engine.resume(&prepared, run_id, options).await
        }
        // It ended, but its worker was lost before telling the queue.
        Some(record) => Ok(record),
    };
    match ran {
        Ok(_) => Outcome::Release(Release::Done),
        Err(EngineError::UnknownOutcome { steps, .. }) => {
            Outcome::Release(Release::Blocked(format!(
                "its worker was lost while {} ran, and repeating {} is not known to be safe; check whether {} took effect, then `wayline runs requeue {run_id} --retry-unknown` (send again) or `--skip-unknown`, or `wayline runs cancel {run_id}`",
                quoted(&steps),
                if steps.len() == 1 { "it" } else { "them" },
                if steps.len() == 1 { "it" } else { "they" },
            )))
        }
        Err(EngineError::Store { error, .. }) if error.kind() == StoreErrorKind::Conflict => {
            Outcome::Lost
        }
        Err(EngineError::Store { error, .. }) => requeue(context.counters, &error.to_string()),
        Err(other) => Outcome::Release(Release::Blocked(other.to_string())),
    }
}

/// The run goes back to the queue: the store failed, and another attempt (here or elsewhere)
/// continues it from what was saved.
fn requeue(counters: &Counters, why: &str) -> Outcome {
    Counters::add(&counters.store_errors);
    tracing::warn!(
        reason = why,
        "the store failed; the run goes back to the queue"
    );
    Outcome::Release(Release::Requeue)
}

fn quoted(steps: &[String]) -> String {
    steps
        .iter()
        .map(|step| format!("`{step}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

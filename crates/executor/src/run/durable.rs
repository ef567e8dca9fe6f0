//! Finishing an interrupted run: [`Engine::resume`] and what it does with steps that were in
//! flight when the run stopped.
//!
//! A run made with a run store (see [`EngineBuilder::run_store`](crate::EngineBuilder::run_store))
//! has every step marked `running` before its call and its result saved before its dependents
//! start. If the process dies, the stored run stays `running`: its successful steps are kept
//! (outputs included), failed steps stay failed, skipped and pending steps are decided again
//! (except a step an earlier resume skipped by [`UnknownSteps::Skip`], which stays skipped),
//! and steps that were `running` have an unknown outcome. Those are run again when that is safe
//! (a transform, an idempotent tool, a tool that sends an idempotency key, which is the same on
//! resume because the run id is, or a method other than POST/PATCH on a tool not marked
//! `idempotent: false` or `destructive: true`); otherwise
//! [`UnknownSteps`] decides.

use tracing::Instrument;
use wayline_core::{Run, RunStatus, StepResult, StepStatus};

use crate::Engine;
use crate::Error;
use crate::cancel::CancelToken;
use crate::run::engine::on_a_runtime;
use crate::run::prepare::PreparedWorkflow;
use crate::run::scheduler::Scheduler;

/// What to do with steps whose outcome is unknown and which are not safe to repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum UnknownSteps {
    /// Resume nothing: mark them `unknown_outcome` in the store and return
    /// [`Error::UnknownOutcome`] so a person decides.
    #[default]
    Stop,
    /// Run them again.
    Retry,
    /// Mark them skipped (their dependents are skipped too) and finish the rest.
    Skip,
}

/// How to resume a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ResumeOptions {
    /// Steps with an unknown outcome that are not safe to repeat.
    pub unknown: UnknownSteps,
    /// Time allowed for the rest of the run.
    pub deadline: Option<std::time::Duration>,
    /// A token that cancels the run.
    pub cancel: Option<CancelToken>,
    /// Values masked in the resumed run, besides the engine's (see [`RunOptions::mask`](crate::RunOptions::mask)).
    pub masked: Vec<String>,
    /// Observers of the resumed run alone (see [`RunOptions::observer`](crate::RunOptions::observer)).
    pub observers: Vec<std::sync::Arc<dyn wayline_core::RunObserver>>,
}

impl ResumeOptions {
    /// Stop at unknown outcomes; no deadline.
    pub fn new() -> Self {
        ResumeOptions::default()
    }

    /// Sets what happens to unknown outcomes.
    #[must_use]
    pub fn unknown(mut self, unknown: UnknownSteps) -> Self {
        self.unknown = unknown;
        self
    }

    /// Sets the deadline of the rest of the run.
    #[must_use]
    pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the cancellation token.
    #[must_use]
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Masks `values` in the resumed run's record and events.
    #[must_use]
    pub fn mask(mut self, values: impl IntoIterator<Item = String>) -> Self {
        self.masked.extend(values);
        self
    }

    /// Adds an observer of the resumed run alone.
    #[must_use]
    pub fn observer(mut self, observer: std::sync::Arc<dyn wayline_core::RunObserver>) -> Self {
        self.observers.push(observer);
        self
    }
}

impl Engine {
    /// Finishes run `run_id`, an interrupted run of `prepared` in the engine's run store, with
    /// the inputs it was started with. See the [module documentation](crate::run::durable).
    pub async fn resume(
        &self,
        prepared: &PreparedWorkflow,
        run_id: &str,
        options: ResumeOptions,
    ) -> Result<Run, Error> {
        on_a_runtime()?;
        let (store, mut record) = self.stored_run(prepared, run_id).await?;
        let refuse = |reason: String| Error::Resume {
            run_id: run_id.to_owned(),
            reason,
        };
        let store_error = |error| Error::Store {
            run_id: run_id.to_owned(),
            error,
            run: None,
        };
        if let Some(unknown) = record
            .step_results
            .iter()
            .find(|result| !prepared.index.contains_key(result.step_id.as_str()))
        {
            return Err(refuse(format!(
                "its step `{}` is not in the workflow any more; resume it with the version it ran",
                unknown.step_id
            )));
        }
        let mut unsafe_unknown = Vec::new();
        for result in &mut record.step_results {
            let position = prepared.index[result.step_id.as_str()];
            match result.status {
                StepStatus::Success | StepStatus::Failed => {}
                // Skipped by an earlier resume's decision (`UnknownSteps::Skip`): an unknown
                // outcome with an end time (or, in records of earlier versions, a skip with a
                // start time). The decision is final: deciding again would run an unsafe call
                // the person chose not to repeat.
                StepStatus::UnknownOutcome if result.finished_at.is_some() => {}
                StepStatus::Skipped if result.started_at.is_some() => {}
                // Stopped in flight (a cancellation, a deadline) is as uncertain as running
                // when the process died.
                StepStatus::Running | StepStatus::UnknownOutcome | StepStatus::Cancelled
                    if !prepared.steps[position].safe_to_repeat()
                        && options.unknown != UnknownSteps::Retry =>
                {
                    if options.unknown == UnknownSteps::Skip {
                        // It stays `unknown_outcome` — whether it took effect is not known, so
                        // the run cannot end as a success — and its end time marks the skip as
                        // a decision (see above).
                        let now = chrono::Utc::now();
                        result.started_at.get_or_insert(now);
                        result.finished_at = Some(now);
                        result.status = StepStatus::UnknownOutcome;
                        result.error = Some(
                            "its outcome is unknown (it was running when the run stopped); skipped on resume"
                                .into(),
                        );
                    } else {
                        result.status = StepStatus::UnknownOutcome;
                        result.error = Some(
                            "it was running when the run stopped; whether it took effect is unknown"
                                .into(),
                        );
                        unsafe_unknown.push(result.step_id.clone());
                    }
                }
                // Pending, skipped (decided again), and in-flight steps that are safe to repeat.
                _ => *result = StepResult::pending(result.step_id.clone()),
            }
        }
        if !unsafe_unknown.is_empty() {
            store.finish_run(&record).await.map_err(store_error)?;
            return Err(Error::UnknownOutcome {
                run_id: run_id.to_owned(),
                steps: unsafe_unknown,
            });
        }
        let span = tracing::info_span!("run", run_id = %run_id, workflow_id = %prepared.workflow.id, resumed = true);
        async {
            let inputs = record.user_inputs.clone();
            let shared = self
                .shared(
                    prepared,
                    run_id.to_owned(),
                    inputs,
                    options.masked,
                    options.observers,
                )
                .await;
            Scheduler::resumed(prepared, &shared, record)
                .run(options.cancel, options.deadline)
                .await
        }
        .instrument(span)
        .await
    }
}

impl Engine {
    /// The stored run `run_id`, checked to be a run of `prepared` that has not ended, and the
    /// store it is in.
    async fn stored_run(
        &self,
        prepared: &PreparedWorkflow,
        run_id: &str,
    ) -> Result<(&dyn wayline_core::RunStore, Run), Error> {
        let refuse = |reason: String| Error::Resume {
            run_id: run_id.to_owned(),
            reason,
        };
        let Some(store) = self.inner.run_store.as_deref() else {
            return Err(refuse(
                "this engine has no run store; build it with `EngineBuilder::run_store`".into(),
            ));
        };
        let record = store
            .run(run_id)
            .await
            .map_err(|error| Error::Store {
                run_id: run_id.to_owned(),
                error,
                run: None,
            })?
            .ok_or_else(|| refuse("it is not in the run store".into()))?;
        let workflow = &prepared.workflow;
        if record.workflow_id != workflow.id {
            return Err(refuse(format!(
                "it ran workflow `{}`, not `{}`",
                record.workflow_id, workflow.id
            )));
        }
        if record.status != RunStatus::Running {
            return Err(refuse(format!(
                "it has already ended ({}); start a new run instead",
                record.status.as_str()
            )));
        }
        Ok((store, record))
    }

    /// Continues `run_id`, a stored flow run of `prepared` that was interrupted, as `flow`
    /// directs ([`crate::run::flow`]). Executions that finished are not repeated: they are replayed
    /// in the order they finished (the flow restores its state from each through
    /// [`Flow::restore`](crate::run::flow::Flow::restore), and the jumps they took are taken
    /// again), and the run goes on from there. An execution in flight when the run stopped
    /// runs again when that is safe (as [`Engine::resume`] decides); otherwise
    /// `options.unknown` decides: stop (the default), run it again, or hand it to the flow as
    /// a failure of unknown outcome. The run's inputs are its record's (masked values stay
    /// masked: a flow that needs them has them already).
    pub async fn resume_flow(
        &self,
        prepared: &PreparedWorkflow,
        flow: &mut dyn crate::run::flow::Flow,
        run_id: &str,
        options: ResumeOptions,
    ) -> Result<Run, Error> {
        on_a_runtime()?;
        let (store, mut record) = self.stored_run(prepared, run_id).await?;
        if let Some(unknown) = record.step_results.iter().find(|result| {
            let (step, _) = crate::run::flow::parse_execution_id(&result.step_id);
            !prepared.index.contains_key(step)
        }) {
            return Err(Error::Resume {
                run_id: run_id.to_owned(),
                reason: format!(
                    "its step `{}` is not in the workflow any more; resume it with the version it ran",
                    unknown.step_id
                ),
            });
        }
        let mut unsafe_unknown = Vec::new();
        for result in &mut record.step_results {
            let (step, _) = crate::run::flow::parse_execution_id(&result.step_id);
            let position = prepared.index[step];
            let in_flight = matches!(result.status, StepStatus::Running | StepStatus::Cancelled)
                || (result.status == StepStatus::UnknownOutcome && result.finished_at.is_none());
            if !in_flight {
                continue;
            }
            if prepared.steps[position].safe_to_repeat() || options.unknown == UnknownSteps::Retry {
                *result = StepResult::pending(result.step_id.clone());
                continue;
            }
            result.status = StepStatus::UnknownOutcome;
            if options.unknown == UnknownSteps::Skip {
                result.finished_at = Some(chrono::Utc::now());
                result.error = Some(
                    "its outcome is unknown (it was running when the run stopped); judged as a failure on resume"
                        .into(),
                );
            } else {
                result.error = Some(
                    "it was running when the run stopped; whether it took effect is unknown".into(),
                );
                unsafe_unknown.push(result.step_id.clone());
            }
        }
        if !unsafe_unknown.is_empty() {
            store
                .finish_run(&record)
                .await
                .map_err(|error| Error::Store {
                    run_id: run_id.to_owned(),
                    error,
                    run: None,
                })?;
            return Err(Error::UnknownOutcome {
                run_id: run_id.to_owned(),
                steps: unsafe_unknown,
            });
        }
        let span = tracing::info_span!("flow", run_id = %run_id, workflow_id = %prepared.workflow.id, resumed = true);
        async {
            let inputs = record.user_inputs.clone();
            let shared = self
                .shared(
                    prepared,
                    run_id.to_owned(),
                    inputs,
                    options.masked,
                    options.observers,
                )
                .await;
            crate::run::flow::FlowRun::resumed(prepared, &shared, flow, record)
                .run(options.cancel, options.deadline)
                .await
        }
        .instrument(span)
        .await
    }
}

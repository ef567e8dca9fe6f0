//! The scheduler: one run of a prepared workflow.
//!
//! Scheduling is by readiness: a step starts as soon as its last dependency finished, while
//! fewer than `max_parallel` steps run (and fewer than the per-host limit on its host). When
//! several steps are ready, the one with the longest chain of steps after it goes first, then
//! the one declared first. Outputs, statuses and the record's order never depend on timing: a
//! step reads only the outputs of steps it depends on, all finished before it starts.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::Value;
use tracing::Instrument;
use wayline_core::{Run, RunEvent, RunStatus, Severity, StepResult, StepStatus, StoreError};

use crate::Error;
use crate::cancel::{CancelToken, RunStop};
use crate::run::context::{RunShared, StoreFailure};
use crate::run::prepare::PreparedWorkflow;
use crate::run::ready::ReadyQueue;
use crate::run::step::{self, StepDone, StepJob};
use crate::values::eval::{self, Scope};
use crate::values::resolve::{self, Outputs, Unresolved};

type StepFuture<'r> = Pin<Box<dyn Future<Output = (usize, StepDone)> + Send + 'r>>;

/// One run's mutable state.
pub(crate) struct Scheduler<'r> {
    prepared: &'r PreparedWorkflow,
    shared: &'r RunShared<'r>,
    pub(crate) record: Run,
    /// True when continuing a stored run rather than starting one.
    resumed: bool,
    /// Position → index in `record.step_results`.
    slot: Vec<usize>,
    outputs: Vec<Option<Arc<Value>>>,
    /// Unfinished predecessors per step.
    waiting: Vec<usize>,
    ready: ReadyQueue<'r>,
    /// The run's cancel token and deadline, set when it starts.
    run_stop: RunStop,
}

struct ByPosition<'a>(&'a Scheduler<'a>);

impl Outputs for ByPosition<'_> {
    fn output(&self, id: &str) -> Option<&Value> {
        let position = *self.0.prepared.index.get(id)?;
        self.0.outputs[position].as_deref()
    }
}

impl<'r> Scheduler<'r> {
    pub(crate) fn new(prepared: &'r PreparedWorkflow, shared: &'r RunShared<'r>) -> Self {
        let count = prepared.steps.len();
        let mut record = Run::new(shared.run_id.clone(), prepared.workflow.id.clone());
        record.user_inputs = shared.inputs.clone();
        record.started_at = Some(Utc::now());
        let mut slot = vec![0; count];
        for (index, &position) in prepared.order.iter().enumerate() {
            slot[position] = index;
            record.step_results.push(StepResult::pending(
                prepared.workflow.steps[position].id.clone(),
            ));
        }
        Scheduler::with_record(prepared, shared, record, slot)
    }

    /// Continues `record`, a stored run of `prepared` whose step results are each final
    /// (success, failed, skipped) or `pending` (to run now). Successful outputs feed the steps
    /// still to run.
    pub(crate) fn resumed(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        mut record: Run,
    ) -> Self {
        let mut slot = Vec::with_capacity(prepared.steps.len());
        for step in &prepared.workflow.steps {
            let index = match record
                .step_results
                .iter()
                .position(|result| result.step_id == step.id)
            {
                Some(index) => index,
                None => {
                    record
                        .step_results
                        .push(StepResult::pending(step.id.clone()));
                    record.step_results.len() - 1
                }
            };
            slot.push(index);
        }
        let mut scheduler = Scheduler::with_record(prepared, shared, record, slot);
        scheduler.resumed = true;
        for position in 0..prepared.steps.len() {
            let result = &scheduler.record.step_results[scheduler.slot[position]];
            if result.status == StepStatus::Success {
                scheduler.outputs[position] = Some(Arc::new(result.output_data.clone()));
            }
            if result.status != StepStatus::Pending {
                for &next in &prepared.successors[position] {
                    scheduler.waiting[next] -= 1;
                }
            }
        }
        scheduler
    }

    fn with_record(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        record: Run,
        slot: Vec<usize>,
    ) -> Self {
        let count = prepared.steps.len();
        Scheduler {
            prepared,
            shared,
            record,
            resumed: false,
            slot,
            outputs: vec![None; count],
            waiting: prepared.predecessors.iter().map(Vec::len).collect(),
            ready: ReadyQueue::new(prepared, shared),
            run_stop: RunStop::default(),
        }
    }

    /// Runs to the end. An `Err` means the run store failed: at the start (nothing ran), at
    /// the end (the error carries the run record that could not be saved), or, when the engine
    /// stops on store failures, during the run (the error carries the run so far).
    pub(crate) async fn run(
        mut self,
        cancel: Option<CancelToken>,
        deadline: Option<Duration>,
    ) -> Result<Run, Error> {
        let engine = self.shared.engine;
        open_record(self.shared, &self.record, self.resumed).await?;
        // Collected first: settling a step below releases its dependents itself.
        let startable: Vec<usize> = (0..self.prepared.steps.len())
            .filter(|&position| {
                self.waiting[position] == 0
                    && self.record.step_results[self.slot[position]].status == StepStatus::Pending
            })
            .collect();
        for position in startable {
            match self.failed_dependency(position) {
                Some(reason) => self.settle(position, StepStatus::Skipped, reason),
                None => self.push_ready(position),
            }
        }
        self.run_stop = RunStop::new(cancel, deadline);
        let run_stop = self.run_stop.clone();
        let stopped = run_stop.stopped();
        tokio::pin!(stopped);
        let mut in_flight: FuturesUnordered<StepFuture<'r>> = FuturesUnordered::new();
        // The store's failure that interrupts the run ([`StoreFailure::Interrupt`]).
        let mut unsaved = None;
        let stopped = loop {
            // A stopped run starts nothing more, even when a step finished at the moment it
            // was stopped (the `select!` below may take either first). A run with nothing
            // left to start goes on to settle as it is: all done is done, not stopped.
            if !self.ready.is_empty()
                && let Some(reason) = self.run_stop.reason()
            {
                break Some(reason);
            }
            while unsaved.is_none() && in_flight.len() < engine.max_parallel {
                let Some(position) = self.ready.pop() else {
                    break;
                };
                match self.start(position) {
                    Some(future) => in_flight.push(future),
                    None => self.ready.release(position),
                }
            }
            if in_flight.is_empty() {
                // Every step has settled; if one was cut short by the stop (an expression
                // that stopped part-way failed its step), the run still ends stopped.
                break self.run_stop.tripped_reason();
            }
            tokio::select! {
                Some((position, mut done)) = in_flight.next() => match done.unsaved.take() {
                    Some(error) if engine.store_failure == StoreFailure::Interrupt => {
                        // Unrecorded: left as the store has it, for a resume to judge.
                        self.ready.release(position);
                        self.record.step_results[self.slot[position]] = done.result;
                        unsaved.get_or_insert(error);
                    }
                    _ => self.finish(position, done),
                },
                reason = &mut stopped => break Some(reason),
            }
        };
        drop(in_flight);
        if let Some(error) = unsaved {
            return Err(interrupted(self.shared, self.record, error));
        }
        if let Some(reason) = &stopped {
            self.stop(reason);
        }
        let status = if stopped.is_some() && self.run_stop.cancelled() {
            RunStatus::Cancelled
        } else if stopped.is_some() {
            RunStatus::TimedOut
        } else if self.prepared.order.iter().any(|&position| {
            // A step whose outcome is unknown (skipped on resume) did not complete either.
            self.prepared.workflow.steps[position].severity == Severity::Critical
                && matches!(
                    self.record.step_results[self.slot[position]].status,
                    StepStatus::Failed | StepStatus::UnknownOutcome
                )
        }) {
            RunStatus::Failed
        } else {
            RunStatus::Success
        };
        close_record(self.shared, self.record, status).await
    }

    fn push_ready(&mut self, position: usize) {
        self.ready.push(position);
    }

    /// Starts a step: evaluates `when`, resolves inputs, and returns the future that runs it
    /// (`None` when it finished at once: skipped, or failed before any call).
    fn start(&mut self, position: usize) -> Option<StepFuture<'r>> {
        let prepared: &'r PreparedWorkflow = self.prepared;
        let shared: &'r RunShared<'r> = self.shared;
        let step = &prepared.steps[position];
        let definition = &prepared.workflow.steps[position];
        let started_at = Utc::now();
        {
            let result = &mut self.record.step_results[self.slot[position]];
            result.status = StepStatus::Running;
            result.started_at = Some(started_at);
        }
        shared.emit(&RunEvent::StepStarted {
            run_id: &shared.run_id,
            step_id: &definition.id,
        });
        let mut steps = HashMap::new();
        for (id, from) in &step.reads {
            if let Some(output) = &self.outputs[*from] {
                steps.insert(id.clone(), Arc::clone(output));
            }
        }
        // A decision's context is what the steps it depends on gave.
        if definition.kind == wayline_core::StepKind::Decision {
            for &from in &prepared.predecessors[position] {
                if let Some(output) = &self.outputs[from] {
                    steps
                        .entry(prepared.workflow.steps[from].id.clone())
                        .or_insert_with(|| Arc::clone(output));
                }
            }
        }
        if let Some(when) = &step.when {
            let scope = Scope {
                inputs: &shared.inputs,
                steps: &steps,
                response: None,
                budget: shared.engine.expression_budget,
                stop: Some(&self.run_stop),
            };
            match eval::condition(when, scope) {
                Ok(true) => {}
                Ok(false) => {
                    self.settle(
                        position,
                        StepStatus::Skipped,
                        format!("`when` condition `{}` is false", when.source()),
                    );
                    return None;
                }
                Err(error) => {
                    self.settle(position, StepStatus::Failed, format!("`when`: {error}"));
                    return None;
                }
            }
        }
        let is_step = |id: &str| prepared.is_step(id);
        let inputs = match resolve::resolve(
            definition,
            &is_step,
            &shared.inputs,
            &ByPosition(self),
            Unresolved::Fail,
        ) {
            Ok(inputs) => inputs,
            Err(error) => {
                self.settle(position, StepStatus::Failed, error);
                return None;
            }
        };
        let job = StepJob {
            run: shared,
            step: definition,
            prepared: step,
            inputs,
            steps,
            started_at,
            run_stop: self.run_stop.clone(),
            record_id: definition.id.clone(),
            judged_by_flow: false,
            output_read: !self.prepared.successors[position].is_empty(),
        };
        let span =
            tracing::info_span!("step", step_id = %definition.id, tool_id = %definition.tool_id);
        let store = shared.engine.run_store.as_deref();
        let running = store.map(|_| self.record.step_results[self.slot[position]].clone());
        let repeatable = step.safe_to_repeat();
        Some(Box::pin(
            async move {
                let done = match (store, running) {
                    (Some(store), Some(running)) => {
                        step::execute_durably(job, store, running, repeatable).await
                    }
                    _ => step::execute(job).await,
                };
                (position, done)
            }
            .instrument(span),
        ))
    }

    fn finish(&mut self, position: usize, done: StepDone) {
        self.ready.release(position);
        self.outputs[position] = done.output;
        let index = self.slot[position];
        self.record.step_results[index] = done.result;
        self.after(position);
    }

    /// Records a step that ends without running (skipped, or failed before its call).
    fn settle(&mut self, position: usize, status: StepStatus, reason: String) {
        let result = &mut self.record.step_results[self.slot[position]];
        result.status = status;
        result.error = Some(self.shared.redactor.text(&reason).into_owned());
        result.finished_at = Some(Utc::now());
        self.after(position);
    }

    /// Emits the step's result and releases or skips its dependents.
    fn after(&mut self, position: usize) {
        let shared = self.shared;
        let result = &self.record.step_results[self.slot[position]];
        shared.emit(&RunEvent::StepFinished {
            run_id: &shared.run_id,
            result,
        });
        tracing::info!(step = %result.step_id, status = ?result.status, "step finished");
        let mut blocked = Vec::new();
        for &next in &self.prepared.successors[position] {
            self.waiting[next] -= 1;
            if self.waiting[next] == 0 {
                blocked.push(next);
            }
        }
        for next in blocked {
            match self.failed_dependency(next) {
                Some(reason) => self.settle(next, StepStatus::Skipped, reason),
                None => self.push_ready(next),
            }
        }
    }

    /// Why a step whose dependencies all finished cannot run, if one did not succeed.
    fn failed_dependency(&self, position: usize) -> Option<String> {
        self.prepared.predecessors[position]
            .iter()
            .find_map(|&from| {
                let result = &self.record.step_results[self.slot[from]];
                let verb = match result.status {
                    StepStatus::Success => return None,
                    StepStatus::Skipped => "was skipped",
                    StepStatus::UnknownOutcome => "has an unknown outcome",
                    StepStatus::Cancelled => "was cancelled",
                    _ => "failed",
                };
                Some(format!("dependency `{}` {verb}", result.step_id))
            })
    }

    /// Ends a stopped run: running steps fail, steps not started are skipped.
    fn stop(&mut self, reason: &str) {
        stop_record(&mut self.record, self.shared, reason);
    }
}

/// Opens a run's record: stored (a new run; a resumed one, updated) and announced. An `Err`
/// means the store failed and nothing ran.
pub(crate) async fn open_record(
    shared: &RunShared<'_>,
    record: &Run,
    resumed: bool,
) -> Result<(), Error> {
    let engine = shared.engine;
    if let Some(store) = &engine.run_store {
        let stored = if resumed {
            store.finish_run(record).await
        } else {
            store.create_run(record).await
        };
        stored.map_err(|error| Error::Store {
            run_id: record.id.clone(),
            error,
            run: None,
        })?;
    }
    shared.emit(&RunEvent::RunStarted { run: record });
    Ok(())
}

/// Closes a run's record with its final `status`: announced and stored. An `Err` carries the
/// record the store could not save.
pub(crate) async fn close_record(
    shared: &RunShared<'_>,
    mut record: Run,
    status: RunStatus,
) -> Result<Run, Error> {
    let engine = shared.engine;
    record.status = status;
    record.finished_at = Some(Utc::now());
    // Masked once more with all the run learned: a value that became a credential after a
    // step recorded it (a token a login returned, then sent) is masked there too. (A run that
    // closes is not resumed, so its inputs may be masked as well.)
    for result in &mut record.step_results {
        shared.redactor.step_result(result);
    }
    for value in record.user_inputs.values_mut() {
        shared.redactor.value(value);
    }
    shared.emit(&RunEvent::RunFinished { run: &record });
    tracing::info!(status = ?record.status, "run finished");
    if let Some(store) = &engine.run_store
        && let Err(error) = store.finish_run(&record).await
    {
        return Err(Error::Store {
            run_id: record.id.clone(),
            error,
            run: Some(Box::new(record)),
        });
    }
    Ok(record)
}

/// The error of a run the store's `error` interrupted ([`StoreFailure::Interrupt`]): nothing
/// more is written, so the stored run stays `running` for a resume; `record` is the run so far.
pub(crate) fn interrupted(shared: &RunShared<'_>, record: Run, error: StoreError) -> Error {
    tracing::warn!(%error, "the run store failed: the run stops here, to be resumed");
    Error::Store {
        run_id: shared.run_id.clone(),
        error,
        run: Some(Box::new(record)),
    }
}

/// Ends a stopped run's record: running steps are cancelled, steps not started are skipped.
pub(crate) fn stop_record(record: &mut Run, shared: &RunShared<'_>, reason: &str) {
    let now = Utc::now();
    for result in &mut record.step_results {
        let (status, error) = match result.status {
            StepStatus::Running => (
                StepStatus::Cancelled,
                format!("stopped while running: {reason}"),
            ),
            StepStatus::Pending => (StepStatus::Skipped, format!("not started: {reason}")),
            _ => continue,
        };
        result.status = status;
        result.error = Some(error);
        result.finished_at = Some(now);
        shared.emit(&RunEvent::StepFinished {
            run_id: &shared.run_id,
            result,
        });
    }
}

//! Control flow: a run in which what follows a step is decided when it finishes — on to the
//! steps after it, the end of the run, a jump to another step (`goto`), or the same step again
//! after a wait (`retry`) — so a step can run more than once.
//!
//! The engine runs the steps (requests, transient retries, policies, observers, the record, the
//! run store); a [`Flow`] supplies each execution's inputs and judges each finished one. A step
//! starts once every step it waits for (its predecessors in the prepared workflow) has finished
//! or been passed over, at most `max_parallel` at a time, as in a graph run. Arazzo documents run
//! this way (`wayline-arazzo`); a flow that always answers [`Next::Continue`] runs a workflow as
//! the graph scheduler would, without its skipping of dependents.
//!
//! Each execution has its own entry in the record: the first under the step's id, the next ones
//! as `ID#2`, `ID#3`, … A [`Next::Goto`] makes the target and every step after it in the
//! record's order runnable again (steps between a forward jump's source and target are passed
//! over, as skipped); it is meant to come from a step that the target and the steps after it
//! wait for, as Arazzo's control points are (a step still running when the jump is made is not
//! stopped, and its own verdict still applies).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use serde_json::Value;
use tracing::Instrument;
use wayline_core::{HttpResponse, Jump, Run, RunEvent, RunStatus, StepResult, StepStatus};

use crate::Error;
use crate::cancel::{CancelToken, RunStop};
use crate::run::context::{RunShared, StoreFailure};
use crate::run::prepare::PreparedWorkflow;
use crate::run::ready::ReadyQueue;
use crate::run::scheduler::{close_record, interrupted, open_record, stop_record};
use crate::run::step::{self, StepDone, StepJob};

/// Where control goes after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Next {
    /// On to the steps that wait for this one.
    Continue,
    /// The run ends: steps not started are not run (those running finish and are recorded).
    /// The run fails if the verdict ending it did.
    End,
    /// Control moves to the step with this id, which runs (again), and the steps after it.
    Goto(String),
    /// The step runs again after this wait.
    Retry(Duration),
}

/// How one finished execution settled, as the flow judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// Whether the step succeeded.
    pub succeeded: bool,
    /// The output the record keeps (secrets are masked before it is kept).
    pub output: Value,
    /// Why it failed, when it did (the engine's own reason is kept when this is `None`).
    pub error: Option<String>,
    /// Where control goes.
    pub next: Next,
}

impl Settled {
    /// A success with `output`, going on.
    pub fn success(output: Value) -> Settled {
        Settled {
            succeeded: true,
            output,
            error: None,
            next: Next::Continue,
        }
    }

    /// A failure for `reason`, ending the run.
    pub fn failure(reason: impl Into<String>) -> Settled {
        Settled {
            succeeded: false,
            output: Value::Null,
            error: Some(reason.into()),
            next: Next::End,
        }
    }

    /// The same verdict, going to `next`.
    pub fn then(mut self, next: Next) -> Settled {
        self.next = next;
        self
    }
}

/// What an execution of a step does.
#[non_exhaustive]
pub enum Call {
    /// Calls the step's tool with these inputs (requests, retries, policies: the engine's).
    Tool(IndexMap<String, Value>),
    /// Runs this future instead (a nested workflow, say): its value, or why it failed, is the
    /// execution's outcome, judged by [`Flow::settle`] like a call's.
    Own(OwnCall),
}

/// The work of a [`Call::Own`].
pub type OwnCall = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Tool(inputs) => f.debug_tuple("Tool").field(inputs).finish(),
            Call::Own(_) => f.write_str("Own(..)"),
        }
    }
}

/// The execution about to start, as the engine asks [`Flow::call`] about it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Starting<'a> {
    /// The step's id.
    pub step_id: &'a str,
    /// Which execution of the step this is (1 for the first).
    pub execution: u32,
    /// The run's id.
    pub run_id: &'a str,
}

/// One finished execution, as the engine hands it to [`Flow::settle`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Finished<'a> {
    /// The step's id.
    pub step_id: &'a str,
    /// Which execution of the step this was (1 for the first).
    pub execution: u32,
    /// The engine's record of it: request, attempts, error, and a status by the engine's
    /// rules — except that any response status is a success unless the step's
    /// `expect.status` says which it expects (the flow judges statuses, and transient ones are
    /// not retried by the engine); for a [`Call::Own`], its value as the output.
    pub result: &'a StepResult,
    /// The response the step settled on; `None` when no response came (a transport failure,
    /// a policy block, inputs the flow could not give).
    pub reply: Option<&'a HttpResponse>,
}

/// What decides a flow run: the inputs of each execution, and what follows it.
///
/// The engine calls the flow from one task, between steps: what a step does is asked when it
/// starts, after every step it waits for has been settled.
pub trait Flow: Send {
    /// What the next execution of a step does; an `Err` fails it before any call (and
    /// [`Flow::settle`] still judges it, with no reply).
    fn call(&mut self, starting: Starting<'_>) -> Result<Call, String>;

    /// Judges a finished execution.
    fn settle(&mut self, finished: Finished<'_>) -> Settled;

    /// Takes in an execution that finished before the run was interrupted, as its record has
    /// it (the verdict applied, `jump` saying where control went), when the run is resumed
    /// ([`Engine::resume_flow`](crate::Engine::resume_flow)): in the order they finished, before
    /// anything runs. A flow that keeps state (the outputs later steps read) rebuilds it here.
    fn restore(&mut self, finished: Finished<'_>) {
        let _ = finished;
    }
}

type StepFuture<'r> = Pin<Box<dyn Future<Output = (usize, StepDone)> + Send + 'r>>;
type Timer = Pin<Box<dyn Future<Output = usize> + Send>>;

/// Where a step is in the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for its predecessors.
    Waiting,
    /// Waiting to be retried.
    Delayed,
    /// In the ready queue.
    Ready,
    Running,
    /// Finished (succeeded or failed).
    Done,
    /// Passed over (a forward goto, or the run ended before it).
    Passed,
}

/// One flow run's state.
pub(crate) struct FlowRun<'r, 'f> {
    prepared: &'r PreparedWorkflow,
    shared: &'r RunShared<'r>,
    flow: &'f mut dyn Flow,
    pub(crate) record: Run,
    phase: Vec<Phase>,
    /// Position → index in `record.step_results` of its latest execution.
    slot: Vec<usize>,
    executions: Vec<u32>,
    /// Position → its index in the record's order.
    rank: Vec<usize>,
    ready: ReadyQueue<'r>,
    /// Set when a verdict ends the run: whether it failed, and why.
    ended: Option<Option<String>>,
    run_stop: RunStop,
    /// True while a resumed run replays what its record says happened: nothing is queued or
    /// announced then.
    replaying: bool,
    /// True when continuing a stored run rather than starting one.
    resumed: bool,
    /// Executions of unknown outcome a resumed run hands to the flow before anything runs.
    unjudged: Vec<usize>,
    /// Executions started in this process (held to the engine's `max_executions`).
    started: u32,
    /// The run store's failure that interrupts the run ([`StoreFailure::Interrupt`]).
    unsaved: Option<wayline_core::StoreError>,
}

impl<'r, 'f> FlowRun<'r, 'f> {
    pub(crate) fn new(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        flow: &'f mut dyn Flow,
    ) -> Self {
        let count = prepared.steps.len();
        let mut record = Run::new(shared.run_id.clone(), prepared.workflow.id.clone());
        record.user_inputs = shared.inputs.clone();
        // Credentials given as inputs stay out of the record (a flow run is not resumed from it).
        for value in record.user_inputs.values_mut() {
            shared.redactor.value(value);
        }
        record.started_at = Some(Utc::now());
        let mut slot = vec![0; count];
        let mut rank = vec![0; count];
        for (index, &position) in prepared.order.iter().enumerate() {
            slot[position] = index;
            rank[position] = index;
            record.step_results.push(StepResult::pending(
                prepared.workflow.steps[position].id.clone(),
            ));
        }
        FlowRun {
            prepared,
            shared,
            flow,
            record,
            phase: vec![Phase::Waiting; count],
            slot,
            executions: vec![0; count],
            rank,
            ready: ReadyQueue::new(prepared, shared),
            ended: None,
            run_stop: RunStop::default(),
            replaying: false,
            resumed: false,
            unjudged: Vec::new(),
            started: 0,
            unsaved: None,
        }
    }

    /// Continues `record`, a stored flow run of `prepared` interrupted before it ended, each
    /// entry an execution (`ID`, `ID#2`…). The caller has reset the executions that may run
    /// again to `pending` and marked those that may not (`unknown_outcome`, finished), and
    /// checked that every entry names a step of `prepared`. The finished executions are
    /// replayed in the order they finished — the flow restores its state from each, and the
    /// jumps they took are taken again — so the run goes on where it stopped; those of unknown
    /// outcome are then judged by the flow like a failure.
    pub(crate) fn resumed(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        flow: &'f mut dyn Flow,
        mut record: Run,
    ) -> Self {
        let count = prepared.steps.len();
        let mut slot: Vec<Option<(usize, u32)>> = vec![None; count];
        let mut executions = vec![0u32; count];
        for (index, result) in record.step_results.iter().enumerate() {
            let (step, execution) = parse_execution_id(&result.step_id);
            let Some(&position) = prepared.index.get(step) else {
                continue;
            };
            if slot[position].is_none_or(|(_, latest)| execution >= latest) {
                slot[position] = Some((index, execution));
            }
            // An entry never started: made with the record, or passed over before it ran.
            let never_started = result.status == StepStatus::Pending
                || (result.status == StepStatus::Skipped && result.started_at.is_none());
            let started = !never_started;
            if started {
                executions[position] = executions[position].max(execution);
            }
        }
        let slot: Vec<usize> = (0..count)
            .map(|position| match slot[position] {
                Some((index, _)) => index,
                None => {
                    record.step_results.push(StepResult::pending(
                        prepared.workflow.steps[position].id.clone(),
                    ));
                    record.step_results.len() - 1
                }
            })
            .collect();
        let mut rank = vec![0; count];
        for (index, &position) in prepared.order.iter().enumerate() {
            rank[position] = index;
        }
        let mut finished: Vec<usize> = (0..record.step_results.len())
            .filter(|&index| {
                let result = &record.step_results[index];
                matches!(result.status, StepStatus::Success | StepStatus::Failed)
                    && result.finished_at.is_some()
            })
            .collect();
        finished.sort_by_key(|&index| (record.step_results[index].finished_at, index));
        let unjudged: Vec<usize> = (0..count)
            .filter(|&position| {
                record.step_results[slot[position]].status == StepStatus::UnknownOutcome
            })
            .collect();
        let mut run = FlowRun {
            prepared,
            shared,
            flow,
            record,
            phase: vec![Phase::Waiting; count],
            slot,
            executions,
            rank,
            ready: ReadyQueue::new(prepared, shared),
            ended: None,
            run_stop: RunStop::default(),
            replaying: true,
            resumed: true,
            unjudged: Vec::new(),
            started: 0,
            unsaved: None,
        };
        for index in finished {
            run.replay(index);
        }
        run.replaying = false;
        for position in 0..count {
            if matches!(run.phase[position], Phase::Ready | Phase::Delayed) {
                // A retry's wait passed while the run was down.
                run.phase[position] = Phase::Waiting;
            }
        }
        for position in unjudged {
            run.phase[position] = Phase::Running;
            run.unjudged.push(position);
        }
        run
    }

    /// Takes one finished execution in again: the flow restores from it, and its jump is taken.
    fn replay(&mut self, index: usize) {
        let result = self.record.step_results[index].clone();
        let (step, execution) = parse_execution_id(&result.step_id);
        let position = self.prepared.index[step];
        self.phase[position] = Phase::Done;
        self.flow.restore(Finished {
            step_id: step,
            execution,
            result: &result,
            reply: None,
        });
        match &result.jump {
            None => {
                for &next in &self.prepared.successors[position] {
                    self.release(next);
                }
            }
            Some(Jump::End) => self.end(
                (result.status == StepStatus::Failed)
                    .then(|| format!("step `{}` failed", result.step_id)),
            ),
            Some(Jump::Step { step: target }) => {
                if let Some(&to) = self.prepared.index.get(target) {
                    self.goto(position, to);
                }
            }
            Some(Jump::Retry { .. }) => self.phase[position] = Phase::Delayed,
            Some(_) => {}
        }
    }

    /// Runs to the end. An `Err` means the run store failed: at the start (nothing ran), or at
    /// the end (the error carries the run record that could not be saved).
    pub(crate) async fn run(
        mut self,
        cancel: Option<CancelToken>,
        deadline: Option<Duration>,
    ) -> Result<Run, Error> {
        let engine = self.shared.engine;
        open_record(self.shared, &self.record, self.resumed).await?;
        let mut timers: FuturesUnordered<Timer> = FuturesUnordered::new();
        for position in std::mem::take(&mut self.unjudged) {
            let mut result = self.record.step_results[self.slot[position]].clone();
            result.status = StepStatus::Failed;
            let done = StepDone {
                result,
                output: None,
                reply: None,
                unsaved: None,
            };
            if let Some(wait) = self.finish(position, done).await {
                timers.push(retry_timer(position, wait));
            }
        }
        self.release_all();
        self.run_stop = RunStop::new(cancel, deadline);
        let run_stop = self.run_stop.clone();
        let stopped = run_stop.stopped();
        tokio::pin!(stopped);
        let mut in_flight: FuturesUnordered<StepFuture<'r>> = FuturesUnordered::new();
        let stopped = loop {
            // A stopped run starts nothing more, even when a step finished at the moment it
            // was stopped (the `select!` below may take either first). A run with nothing
            // left to start goes on to settle as it is: all done is done, not stopped.
            if !self.ready.is_empty()
                && let Some(reason) = self.run_stop.reason()
            {
                break Some(reason);
            }
            while self.ended.is_none()
                && self.unsaved.is_none()
                && in_flight.len() < engine.max_parallel
            {
                let Some(position) = self.ready.pop() else {
                    break;
                };
                if self.started >= engine.max_executions {
                    self.ready.release(position);
                    self.refuse_execution(position, engine.max_executions);
                    break;
                }
                match self.start(position) {
                    Ok(future) => in_flight.push(future),
                    Err(done) => {
                        self.ready.release(position);
                        if let Some(wait) = self.finish(position, *done).await {
                            timers.push(retry_timer(position, wait));
                        }
                    }
                }
            }
            if self.ended.is_some() || self.unsaved.is_some() {
                // A retry still waiting will not run: the run has ended or stopped.
                timers.clear();
            }
            if in_flight.is_empty() && timers.is_empty() {
                break self.run_stop.tripped_reason();
            }
            tokio::select! {
                Some((position, mut done)) = in_flight.next() => {
                    self.ready.release(position);
                    match done.unsaved.take() {
                        Some(error) if engine.store_failure == StoreFailure::Interrupt => {
                            // Unrecorded: left as the store has it, for a resume to judge.
                            self.record.step_results[self.slot[position]] = done.result;
                            self.unsaved.get_or_insert(error);
                        }
                        _ => {
                            if let Some(wait) = self.finish(position, done).await {
                                timers.push(retry_timer(position, wait));
                            }
                        }
                    }
                }
                Some(position) = timers.next() => {
                    // A jump made while it waited may have changed its place.
                    if self.phase[position] == Phase::Delayed {
                        self.make_ready(position);
                    }
                }
                reason = &mut stopped => break Some(reason),
            }
        };
        drop(in_flight);
        if let Some(error) = self.unsaved {
            return Err(interrupted(self.shared, self.record, error));
        }
        if let Some(reason) = &stopped {
            stop_record(&mut self.record, self.shared, reason);
        }
        self.pass_over_the_rest();
        let status = match (&stopped, &self.ended) {
            (Some(_), _) if self.run_stop.cancelled() => RunStatus::Cancelled,
            (Some(_), _) => RunStatus::TimedOut,
            (None, Some(Some(_))) => RunStatus::Failed,
            _ => RunStatus::Success,
        };
        close_record(self.shared, self.record, status).await
    }

    /// Starts the next execution of a step: asks the flow for its inputs and returns the
    /// future that runs it, or the execution already over (the flow gave no inputs).
    fn start(&mut self, position: usize) -> Result<StepFuture<'r>, Box<StepDone>> {
        let prepared: &'r PreparedWorkflow = self.prepared;
        let shared: &'r RunShared<'r> = self.shared;
        let definition = &prepared.workflow.steps[position];
        self.started += 1;
        self.executions[position] += 1;
        let execution = self.executions[position];
        let record_id = execution_id(&definition.id, execution);
        // The first execution's entry is made with the record; a later one's when it starts,
        // unless a resumed run already has it (the execution that was in flight).
        if self.record.step_results[self.slot[position]].step_id != record_id {
            self.record
                .step_results
                .push(StepResult::pending(record_id.clone()));
            self.slot[position] = self.record.step_results.len() - 1;
        }
        self.phase[position] = Phase::Running;
        let started_at = Utc::now();
        {
            let result = &mut self.record.step_results[self.slot[position]];
            result.status = StepStatus::Running;
            result.started_at = Some(started_at);
        }
        shared.emit(&RunEvent::StepStarted {
            run_id: &shared.run_id,
            step_id: &record_id,
        });
        let starting = Starting {
            step_id: &definition.id,
            execution,
            run_id: &shared.run_id,
        };
        let inputs = match self.flow.call(starting) {
            Ok(Call::Tool(inputs)) => inputs,
            Ok(Call::Own(work)) => {
                let mut result = self.record.step_results[self.slot[position]].clone();
                let store = shared.engine.run_store.as_deref();
                let run_id = shared.run_id.clone();
                return Ok(Box::pin(async move {
                    // Work of its own may act anywhere: marked running first, so a crash leaves
                    // it of unknown outcome rather than not started.
                    if let Some(store) = store
                        && let Err(error) = store.save_step(&run_id, &result).await
                    {
                        result.status = StepStatus::Failed;
                        result.error = Some(format!(
                            "not started: the run store could not record it: {error}"
                        ));
                        result.finished_at = Some(Utc::now());
                        return (
                            position,
                            StepDone {
                                result,
                                output: None,
                                reply: None,
                                unsaved: Some(error),
                            },
                        );
                    }
                    match work.await {
                        Ok(output) => {
                            result.status = StepStatus::Success;
                            result.output_data = output;
                        }
                        Err(reason) => {
                            result.status = StepStatus::Failed;
                            result.error = Some(reason);
                        }
                    }
                    result.finished_at = Some(Utc::now());
                    (
                        position,
                        StepDone {
                            result,
                            output: None,
                            reply: None,
                            unsaved: None,
                        },
                    )
                }));
            }
            Err(reason) => {
                let mut result = self.record.step_results[self.slot[position]].clone();
                result.status = StepStatus::Failed;
                result.error = Some(reason);
                result.finished_at = Some(Utc::now());
                return Err(Box::new(StepDone {
                    result,
                    output: None,
                    reply: None,
                    unsaved: None,
                }));
            }
        };
        let job = StepJob {
            run: shared,
            step: definition,
            prepared: &prepared.steps[position],
            inputs,
            steps: std::collections::HashMap::new(),
            started_at,
            run_stop: self.run_stop.clone(),
            record_id,
            judged_by_flow: true,
            // A flow reads its steps' responses and records the outputs it decides on.
            output_read: false,
        };
        let span =
            tracing::info_span!("step", step_id = %definition.id, tool_id = %definition.tool_id);
        let store = shared.engine.run_store.as_deref();
        let running = store.map(|_| self.record.step_results[self.slot[position]].clone());
        let repeatable = prepared.steps[position].safe_to_repeat();
        Ok(Box::pin(
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

    /// Records a finished execution as its flow judges it, saves it, and moves control on.
    /// Returns the wait before the step runs again, when the verdict is a retry.
    async fn finish(&mut self, position: usize, done: StepDone) -> Option<Duration> {
        let shared = self.shared;
        let step_id = &self.prepared.workflow.steps[position].id;
        let verdict = self.flow.settle(Finished {
            step_id,
            execution: self.executions[position],
            result: &done.result,
            reply: done.reply.as_deref(),
        });
        // A verdict given after the run's deadline passed or it was cancelled (an evaluation
        // the flow gave up on) leaves the run stopped, not merely failed.
        let _ = self.run_stop.trip();
        let mut result = done.result;
        result.status = if verdict.succeeded {
            StepStatus::Success
        } else {
            StepStatus::Failed
        };
        if verdict.succeeded {
            result.error = None;
        } else if let Some(reason) = &verdict.error {
            result.error = Some(shared.redactor.text(reason).into_owned());
        } else if result.error.is_none() {
            result.error = Some("the flow judged it failed".to_owned());
        }
        result.output_data = verdict.output;
        shared.redactor.value(&mut result.output_data);
        result.jump = match &verdict.next {
            Next::Continue => None,
            Next::End => Some(Jump::End),
            Next::Goto(step) => Some(Jump::Step { step: step.clone() }),
            Next::Retry(wait) => Some(Jump::Retry {
                after_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            }),
        };
        if result.finished_at.is_none() {
            result.finished_at = Some(Utc::now());
        }
        if let Some(store) = &shared.engine.run_store
            && let Err(error) = store.save_step(&shared.run_id, &result).await
        {
            if shared.engine.store_failure == StoreFailure::Interrupt {
                // Unrecorded, the run stops here; a resume replays what the store has.
                self.record.step_results[self.slot[position]] = result;
                self.phase[position] = Phase::Done;
                self.unsaved.get_or_insert(error);
                return None;
            }
            // Unrecorded, it must not be built on: the run ends failed, saying why.
            result.status = StepStatus::Failed;
            result.error = Some(format!(
                "it ran, but the run store could not save its result: {error}"
            ));
            self.end(Some(format!(
                "step `{}`: the run store failed",
                result.step_id
            )));
        }
        let failed = result.status == StepStatus::Failed;
        let failure = failed.then(|| {
            format!(
                "step `{}` failed: {}",
                result.step_id,
                result.error.as_deref().unwrap_or("")
            )
        });
        self.record.step_results[self.slot[position]] = result;
        self.phase[position] = Phase::Done;
        shared.emit(&RunEvent::StepFinished {
            run_id: &shared.run_id,
            result: &self.record.step_results[self.slot[position]],
        });
        if self.ended.is_some() {
            return None;
        }
        match verdict.next {
            Next::Continue => {
                for &next in &self.prepared.successors[position] {
                    self.release(next);
                }
                None
            }
            Next::End => {
                self.end(failure);
                None
            }
            Next::Retry(wait) => {
                self.phase[position] = Phase::Delayed;
                Some(wait)
            }
            Next::Goto(target) => {
                match self.prepared.index.get(&target) {
                    Some(&to) => self.goto(position, to),
                    None => self.end(Some(format!(
                        "step `{step_id}` goes to `{target}`, which is not a step of this workflow"
                    ))),
                }
                None
            }
        }
    }

    /// Ends the run because it made `limit` executions: the execution that would have come
    /// next is recorded as not run, saying why.
    fn refuse_execution(&mut self, position: usize, limit: u32) {
        let reason = format!(
            "the run made {limit} step executions, the most this engine allows: does a `goto` or a retry loop forever?"
        );
        let id = execution_id(
            &self.prepared.workflow.steps[position].id,
            self.executions[position] + 1,
        );
        let mut refused = StepResult::pending(id);
        refused.status = StepStatus::Skipped;
        refused.error = Some(format!("not run: {reason}"));
        refused.finished_at = Some(Utc::now());
        self.shared.emit(&RunEvent::StepFinished {
            run_id: &self.shared.run_id,
            result: &refused,
        });
        self.record.step_results.push(refused);
        self.phase[position] = Phase::Passed;
        self.end(Some(reason));
    }

    /// Ends the run: nothing more starts. `failure` says why it failed, if it did.
    fn end(&mut self, failure: Option<String>) {
        if self.ended.is_none() {
            self.ended = Some(failure);
            self.ready.drain();
        }
    }

    /// Control jumps from `from` to `to`: `to` and every step after it run again; on a jump
    /// forward, the steps between that have not run are passed over.
    fn goto(&mut self, from: usize, to: usize) {
        let (from_rank, to_rank) = (self.rank[from], self.rank[to]);
        // What was queued waits again, and is queued afresh below if it may run.
        for position in self.ready.drain() {
            self.phase[position] = Phase::Waiting;
        }
        for position in 0..self.phase.len() {
            let rank = self.rank[position];
            if rank >= to_rank {
                if matches!(
                    self.phase[position],
                    Phase::Done | Phase::Passed | Phase::Delayed
                ) {
                    if self.executions[position] == 0 {
                        // Never run: its entry (passed over) is the one it runs in.
                        let result = &mut self.record.step_results[self.slot[position]];
                        *result = StepResult::pending(result.step_id.clone());
                    }
                    self.phase[position] = Phase::Waiting;
                }
            } else if rank > from_rank && matches!(self.phase[position], Phase::Waiting) {
                self.pass_over(
                    position,
                    format!(
                        "passed over: step `{}` went to `{}`",
                        self.prepared.workflow.steps[from].id, self.prepared.workflow.steps[to].id
                    ),
                );
            }
        }
        self.release_all();
    }

    /// Queues every waiting step whose predecessors are all over.
    fn release_all(&mut self) {
        for &position in &self.prepared.order {
            self.release(position);
        }
    }

    /// Queues `position` if it waits and its predecessors are all over.
    fn release(&mut self, position: usize) {
        if self.phase[position] != Phase::Waiting {
            return;
        }
        let over = self.prepared.predecessors[position]
            .iter()
            .all(|&before| matches!(self.phase[before], Phase::Done | Phase::Passed));
        if over {
            self.make_ready(position);
        }
    }

    fn make_ready(&mut self, position: usize) {
        if self.ended.is_none() {
            self.phase[position] = Phase::Ready;
            if !self.replaying {
                self.ready.push(position);
            }
        }
    }

    /// Records a step that will not run.
    fn pass_over(&mut self, position: usize, reason: String) {
        self.phase[position] = Phase::Passed;
        let result = &mut self.record.step_results[self.slot[position]];
        if result.status != StepStatus::Pending {
            return; // an earlier execution's entry stays as it was
        }
        result.status = StepStatus::Skipped;
        result.error = Some(reason);
        result.finished_at = Some(Utc::now());
        if !self.replaying {
            self.shared.emit(&RunEvent::StepFinished {
                run_id: &self.shared.run_id,
                result,
            });
        }
    }

    /// At the end: steps that never ran are passed over, saying why.
    fn pass_over_the_rest(&mut self) {
        let why = match &self.ended {
            Some(_) => "not run: the run ended before it",
            None => "not run: control did not reach it",
        };
        for position in 0..self.phase.len() {
            if matches!(
                self.phase[position],
                Phase::Waiting | Phase::Ready | Phase::Delayed
            ) {
                self.pass_over(position, why.to_owned());
            }
        }
    }
}

/// The record id of a step's `execution`: its id, then `ID#2`, `ID#3`…
fn execution_id(step_id: &str, execution: u32) -> String {
    if execution == 1 {
        step_id.to_owned()
    } else {
        format!("{step_id}#{execution}")
    }
}

/// The step id and execution of a record id (`fetch#3` → `fetch`, 3).
pub(crate) fn parse_execution_id(record_id: &str) -> (&str, u32) {
    match record_id.rsplit_once('#') {
        Some((step, number)) => match number.parse::<u32>() {
            Ok(execution) if execution > 1 => (step, execution),
            _ => (record_id, 1),
        },
        None => (record_id, 1),
    }
}

fn retry_timer(position: usize, wait: Duration) -> Timer {
    Box::pin(async move {
        tokio::time::sleep(wait).await;
        position
    })
}

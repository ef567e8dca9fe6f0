//! Run events and the [`RunObserver`] plug-in trait (progress displays, knowledge recorders,
//! run-store writers, tracing).
//!
//! # Contract
//! - [`RunObserver::on_event`] is called on the engine's task, in the order events happen for
//!   one run: `RunStarted`, then per step `StepStarted`, one `Attempt` per attempt (with
//!   `RetryScheduled` between attempts that are retries, and `Polled` after each attempt of a
//!   polling step whose response was good), `StepFinished`; finally `RunFinished`. Events of different steps interleave when steps run in parallel.
//! - Steps skipped without starting (a dependency did not succeed, or the run stopped first) get
//!   only `StepFinished`; a step skipped by its own `when` gets `StepStarted` first.
//! - It must return quickly and must not block: hand slow work (disk, network) to a task or a
//!   channel.
//! - Events carry the same redacted data as the run record: no secret values.
//!
//! An event borrows the run's data; [`OwnedRunEvent`] is the same event owned and
//! serialisable, for a host that keeps events, sends them to another task or over the wire. It
//! reports what happened, not the data: a finished step's status and error, not its output
//! (the run record has that), so keeping a run's events costs no more than its ids and errors
//! whatever the responses weigh.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::run::{Run, RunStatus, StepResult, StepStatus};

/// Something that happened during a run.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum RunEvent<'a> {
    /// The run was created; every step result is `pending`.
    RunStarted {
        /// The run record.
        run: &'a Run,
    },
    /// A step began (its inputs are being resolved).
    StepStarted {
        /// The run.
        run_id: &'a str,
        /// The step.
        step_id: &'a str,
    },
    /// One attempt of a step finished (a call, a poll, or a command execution).
    Attempt {
        /// The run.
        run_id: &'a str,
        /// The step.
        step_id: &'a str,
        /// The operation called (the tool id), for statistics per operation.
        tool_id: &'a str,
        /// 1-based attempt number.
        attempt: u32,
        /// Response status, when a response came.
        status: Option<u16>,
        /// Why the attempt failed, when it did: no response, or a failing status
        /// (`HTTP 400: body`, or `HTTP 503` for a transient status without a body).
        error: Option<&'a str>,
        /// How long the attempt took.
        duration: Duration,
    },
    /// A polling step (`poll.until`) got a good response and evaluated its condition.
    Polled {
        /// The run.
        run_id: &'a str,
        /// The step.
        step_id: &'a str,
        /// The operation polled (the tool id).
        tool_id: &'a str,
        /// 1-based poll number.
        poll: u32,
        /// The state the response reports: its top-level `state`, `status` or `phase` string,
        /// when it has one (how knowledge learns `CREATING_to_ACTIVE` timings).
        state: Option<&'a str>,
        /// True when the condition holds (this was the last poll).
        done: bool,
    },
    /// A failed attempt will be retried after `delay`.
    RetryScheduled {
        /// The run.
        run_id: &'a str,
        /// The step.
        step_id: &'a str,
        /// The attempt that failed.
        attempt: u32,
        /// Wait before the next attempt.
        delay: Duration,
        /// Why (e.g. `HTTP 503`, `Retry-After`).
        reason: &'a str,
    },
    /// A step reached its final status (success, failed or skipped).
    StepFinished {
        /// The run.
        run_id: &'a str,
        /// Its result, as recorded.
        result: &'a StepResult,
    },
    /// The run reached its final status.
    RunFinished {
        /// The run record.
        run: &'a Run,
    },
}

/// Receives [`RunEvent`]s. See the [module documentation](self) for the contract.
///
/// ```
/// use std::sync::Mutex;
/// use wayline_core::observer::{RunEvent, RunObserver};
///
/// #[derive(Debug, Default)]
/// struct Count(Mutex<usize>);
/// impl RunObserver for Count {
///     fn on_event(&self, event: &RunEvent<'_>) {
///         if matches!(event, RunEvent::StepFinished { .. }) {
///             *self.0.lock().unwrap() += 1;
///         }
///     }
/// }
/// ```
pub trait RunObserver: Send + Sync + fmt::Debug {
    /// Called for each event.
    fn on_event(&self, event: &RunEvent<'_>);
}

/// A [`RunEvent`] that owns what it says: what a host keeps, sends to another task, or
/// serialises (JSON with an `event` tag in snake case; durations in whole milliseconds). It
/// leaves out the run's data — records, outputs — which the run record has.
///
/// ```
/// use wayline_core::observer::{OwnedRunEvent, RunEvent};
///
/// let event = RunEvent::StepStarted { run_id: "r1", step_id: "login" };
/// let owned = OwnedRunEvent::from(&event);
/// assert_eq!(
///     serde_json::to_string(&owned).unwrap(),
///     r#"{"event":"step_started","run_id":"r1","step_id":"login"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OwnedRunEvent {
    /// See [`RunEvent::RunStarted`].
    RunStarted {
        /// The run.
        run_id: String,
        /// The workflow it runs.
        workflow_id: String,
        /// Its steps, in the record's order.
        steps: Vec<String>,
    },
    /// See [`RunEvent::StepStarted`].
    StepStarted {
        /// The run.
        run_id: String,
        /// The step.
        step_id: String,
    },
    /// See [`RunEvent::Attempt`].
    Attempt {
        /// The run.
        run_id: String,
        /// The step.
        step_id: String,
        /// The operation called.
        tool_id: String,
        /// 1-based attempt number.
        attempt: u32,
        /// Response status, when a response came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// Why the attempt failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How long the attempt took, in milliseconds.
        duration_ms: u64,
    },
    /// See [`RunEvent::Polled`].
    Polled {
        /// The run.
        run_id: String,
        /// The step.
        step_id: String,
        /// The operation polled.
        tool_id: String,
        /// 1-based poll number.
        poll: u32,
        /// The state the response reports, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        /// True when the condition holds.
        done: bool,
    },
    /// See [`RunEvent::RetryScheduled`].
    RetryScheduled {
        /// The run.
        run_id: String,
        /// The step.
        step_id: String,
        /// The attempt that failed.
        attempt: u32,
        /// Wait before the next attempt, in milliseconds.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// See [`RunEvent::StepFinished`]: the result as recorded, less its output.
    StepFinished {
        /// The run.
        run_id: String,
        /// The step (for a flow run, the execution: `step#2`).
        step_id: String,
        /// Its final status.
        status: StepStatus,
        /// Why it failed or was skipped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Attempts made.
        attempts: u32,
        /// The last response's status, when one came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response_status: Option<u16>,
        /// How long it took, in milliseconds, when it ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// See [`RunEvent::RunFinished`].
    RunFinished {
        /// The run.
        run_id: String,
        /// Its final status.
        status: RunStatus,
    },
    /// Events a follower did not get: the oldest of a run's events were let go because it
    /// kept more than its log holds (see `RunHandle` in `wayline-executor`).
    Missed {
        /// How many.
        count: u64,
    },
}

impl OwnedRunEvent {
    /// The run the event is about (`None` for [`OwnedRunEvent::Missed`]).
    pub fn run_id(&self) -> Option<&str> {
        match self {
            OwnedRunEvent::RunStarted { run_id, .. }
            | OwnedRunEvent::RunFinished { run_id, .. }
            | OwnedRunEvent::StepStarted { run_id, .. }
            | OwnedRunEvent::Attempt { run_id, .. }
            | OwnedRunEvent::Polled { run_id, .. }
            | OwnedRunEvent::RetryScheduled { run_id, .. }
            | OwnedRunEvent::StepFinished { run_id, .. } => Some(run_id),
            OwnedRunEvent::Missed { .. } => None,
        }
    }
}

impl From<&RunEvent<'_>> for OwnedRunEvent {
    fn from(event: &RunEvent<'_>) -> Self {
        let millis = |duration: &Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        match *event {
            RunEvent::RunStarted { run } => OwnedRunEvent::RunStarted {
                run_id: run.id.clone(),
                workflow_id: run.workflow_id.clone(),
                steps: run
                    .step_results
                    .iter()
                    .map(|result| result.step_id.clone())
                    .collect(),
            },
            RunEvent::StepStarted { run_id, step_id } => OwnedRunEvent::StepStarted {
                run_id: run_id.to_owned(),
                step_id: step_id.to_owned(),
            },
            RunEvent::Attempt {
                run_id,
                step_id,
                tool_id,
                attempt,
                status,
                error,
                duration,
            } => OwnedRunEvent::Attempt {
                run_id: run_id.to_owned(),
                step_id: step_id.to_owned(),
                tool_id: tool_id.to_owned(),
                attempt,
                status,
                error: error.map(str::to_owned),
                duration_ms: millis(&duration),
            },
            RunEvent::Polled {
                run_id,
                step_id,
                tool_id,
                poll,
                state,
                done,
            } => OwnedRunEvent::Polled {
                run_id: run_id.to_owned(),
                step_id: step_id.to_owned(),
                tool_id: tool_id.to_owned(),
                poll,
                state: state.map(str::to_owned),
                done,
            },
            RunEvent::RetryScheduled {
                run_id,
                step_id,
                attempt,
                delay,
                reason,
            } => OwnedRunEvent::RetryScheduled {
                run_id: run_id.to_owned(),
                step_id: step_id.to_owned(),
                attempt,
                delay_ms: millis(&delay),
                reason: reason.to_owned(),
            },
            RunEvent::StepFinished { run_id, result } => OwnedRunEvent::StepFinished {
                run_id: run_id.to_owned(),
                step_id: result.step_id.clone(),
                status: result.status,
                error: result.error.clone(),
                attempts: result.attempts,
                response_status: result.response_status,
                duration_ms: result.duration_ms,
            },
            RunEvent::RunFinished { run } => OwnedRunEvent::RunFinished {
                run_id: run.id.clone(),
                status: run.status,
            },
        }
    }
}

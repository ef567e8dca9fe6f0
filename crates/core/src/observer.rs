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

use std::fmt;
use std::time::Duration;

use crate::run::{Run, StepResult};

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

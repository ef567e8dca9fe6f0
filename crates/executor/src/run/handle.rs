//! A run started on the Tokio runtime and followed from elsewhere: [`Engine::start`] spawns it
//! and answers a [`RunHandle`] — its id, a way to cancel it, its events from the first, and its
//! final record.
//!
//! The handle's events come from a log the run writes to as an observer of its own, made before
//! the run starts: a follower who subscribes late still reads every event from `RunStarted`
//! on, and any number of followers read the same log. The log keeps at most
//! [`MAX_LOGGED_EVENTS`]; past that the oldest go, and a follower that had not read them gets
//! [`OwnedRunEvent::Missed`] saying how many. Every event it keeps is also in the run record
//! (the record holds each step's result; the events add attempts and polls), so a log costs a
//! small multiple of the record.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::Stream;
use tokio::sync::watch;
use wayline_core::{OwnedRunEvent, Run, RunEvent, RunObserver, Workflow};

use crate::Error;
use crate::cancel::CancelToken;
use crate::run::engine::{Engine, RunOptions, check_inputs, new_run_id};
use crate::run::prepare::PreparedWorkflow;

/// Events a run's log keeps for its followers ([`RunHandle::events`]); past that the oldest
/// go, and a follower that had not read them gets `OwnedRunEvent::Missed`.
pub const MAX_LOGGED_EVENTS: usize = 10_000;

/// A run in flight on the Tokio runtime ([`Engine::start`]).
///
/// Dropping the handle leaves the run going (as dropping a `JoinHandle` does); cancel it first
/// to stop it.
#[derive(Debug)]
pub struct RunHandle {
    run_id: String,
    cancel: CancelToken,
    log: Arc<EventLog>,
    task: tokio::task::JoinHandle<Result<Run, Error>>,
}

impl RunHandle {
    /// The run's id (the one its record and events carry).
    pub fn id(&self) -> &str {
        &self.run_id
    }

    /// Cancels the run: in-flight calls are abandoned, steps not started are skipped, and the
    /// record ends `cancelled`, complete ([`RunHandle::finish`] still answers it).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancel token, for whoever else may stop it.
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// The run's events from its first (`RunStarted`), then as they happen; the stream ends
    /// after `RunFinished`, or when the run's task ends without one (an `Err` from
    /// [`RunHandle::finish`] says why). Call it as often as there are followers.
    pub fn events(&self) -> RunEvents {
        RunEvents {
            log: Arc::clone(&self.log),
            next: 0,
            changes: self.log.changes.subscribe(),
        }
    }

    /// True once the run's task ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the run to end and answers its record, as [`Engine::run_prepared`] would.
    pub async fn finish(self) -> Result<Run, Error> {
        match self.task.await {
            Ok(ended) => ended,
            Err(error) => Err(Error::Task {
                run_id: self.run_id,
                reason: if error.is_panic() {
                    "its task panicked".to_owned()
                } else {
                    "its task was stopped (the runtime shut down)".to_owned()
                },
            }),
        }
    }
}

/// One follower of a run's events, from the first (see [`RunHandle::events`]).
#[derive(Debug)]
pub struct RunEvents {
    log: Arc<EventLog>,
    /// The sequence number of the next event this follower reads.
    next: u64,
    changes: watch::Receiver<u64>,
}

impl RunEvents {
    /// The next event, waiting for it; `None` once the run's events have all been read.
    pub async fn next(&mut self) -> Option<Arc<OwnedRunEvent>> {
        loop {
            // Marked seen before the log is read, so an event written in between wakes us.
            self.changes.borrow_and_update();
            {
                let state = self.log.lock();
                if self.next < state.first {
                    let count = state.first - self.next;
                    self.next = state.first;
                    return Some(Arc::new(OwnedRunEvent::Missed { count }));
                }
                let offset = usize::try_from(self.next - state.first).unwrap_or(usize::MAX);
                if let Some(event) = state.events.get(offset) {
                    self.next += 1;
                    return Some(Arc::clone(event));
                }
                if state.closed {
                    return None;
                }
            }
            // The sender lives in the log this follower holds, so it cannot go first.
            if self.changes.changed().await.is_err() {
                return None;
            }
        }
    }

    /// The events as a [`Stream`] (for a server-sent events response, say).
    pub fn into_stream(self) -> impl Stream<Item = Arc<OwnedRunEvent>> + Send + 'static {
        futures_util::stream::unfold(self, |mut events| async move {
            let event = events.next().await?;
            Some((event, events))
        })
    }
}

/// The events of one run, kept for its followers: an observer of that run alone.
#[derive(Debug)]
struct EventLog {
    state: Mutex<LogState>,
    /// Bumped on every change, so followers wake.
    changes: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct LogState {
    events: VecDeque<Arc<OwnedRunEvent>>,
    /// The sequence number of `events[0]` (how many were let go before it).
    first: u64,
    /// No event will come any more.
    closed: bool,
}

impl EventLog {
    fn new() -> EventLog {
        EventLog {
            state: Mutex::new(LogState::default()),
            changes: watch::Sender::new(0),
        }
    }

    /// The state; a follower that panicked while reading leaves it whole (pushes and pops
    /// are single operations).
    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, event: OwnedRunEvent) {
        {
            let mut state = self.lock();
            state.events.push_back(Arc::new(event));
            if state.events.len() > MAX_LOGGED_EVENTS {
                state.events.pop_front();
                state.first += 1;
            }
        }
        self.changes.send_modify(|count| *count += 1);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.changes.send_modify(|count| *count += 1);
    }
}

impl RunObserver for EventLog {
    fn on_event(&self, event: &RunEvent<'_>) {
        self.push(OwnedRunEvent::from(event));
    }
}

/// Closes the log when the run's task ends, however it ends (a panic included).
struct CloseOnDrop(Arc<EventLog>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Engine {
    /// Prepares `workflow` and starts a run of it as a task of the current Tokio runtime,
    /// answering its [`RunHandle`]. An `Err` means nothing started: the workflow or the inputs
    /// are invalid ([`Engine::run`]'s errors), or no Tokio runtime is current
    /// ([`Error::NoRuntime`]).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use wayline_core::{HttpResponse, MemoryCatalog, OwnedRunEvent, RunStatus, Step, ToolDefinition, Workflow};
    /// use wayline_executor::testing::ScriptedTransport;
    /// use wayline_executor::{Engine, RunOptions};
    ///
    /// let catalog = MemoryCatalog::from_tools([ToolDefinition::new("ping", "http://api.test/ping")]);
    /// let transport = ScriptedTransport::new().then_respond(HttpResponse::new(200, "{}"));
    /// let engine = Engine::builder(Arc::new(catalog)).transport(Arc::new(transport)).build();
    /// let mut workflow = Workflow::new("w", "Ping");
    /// workflow.steps.push(Step::new("ping", "ping"));
    ///
    /// let handle = engine.start(&workflow, RunOptions::new()).unwrap();
    /// let mut events = handle.events();
    /// let first = events.next().await.unwrap();
    /// assert!(matches!(*first, OwnedRunEvent::RunStarted { .. }));
    /// let run = handle.finish().await.unwrap();
    /// assert_eq!(run.status, RunStatus::Success);
    /// # });
    /// ```
    pub fn start(&self, workflow: &Workflow, options: RunOptions) -> Result<RunHandle, Error> {
        let prepared = Arc::new(self.prepare(workflow)?);
        self.start_prepared(prepared, options)
    }

    /// [`Engine::start`] for a workflow prepared once.
    pub fn start_prepared(
        &self,
        prepared: Arc<PreparedWorkflow>,
        mut options: RunOptions,
    ) -> Result<RunHandle, Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        options.inputs = check_inputs(&prepared, std::mem::take(&mut options.inputs))?;
        let run_id = options.run_id.get_or_insert_with(new_run_id).clone();
        let cancel = options.cancel.get_or_insert_with(CancelToken::new).clone();
        let log = Arc::new(EventLog::new());
        options
            .observers
            .push(Arc::clone(&log) as Arc<dyn RunObserver>);
        let closer = CloseOnDrop(Arc::clone(&log));
        let engine = self.clone();
        let task = runtime.spawn(async move {
            let _closer = closer;
            engine.run_prepared(&prepared, options).await
        });
        Ok(RunHandle {
            run_id,
            cancel,
            log,
            task,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step_started(step: &str) -> OwnedRunEvent {
        OwnedRunEvent::StepStarted {
            run_id: "r".to_owned(),
            step_id: step.to_owned(),
        }
    }

    fn follower(log: &Arc<EventLog>) -> RunEvents {
        RunEvents {
            log: Arc::clone(log),
            next: 0,
            changes: log.changes.subscribe(),
        }
    }

    #[tokio::test]
    async fn a_late_follower_reads_from_the_first_event() {
        let log = Arc::new(EventLog::new());
        log.push(step_started("a"));
        log.push(step_started("b"));
        log.close();
        let mut events = follower(&log);
        assert_eq!(*events.next().await.unwrap(), step_started("a"));
        assert_eq!(*events.next().await.unwrap(), step_started("b"));
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn a_follower_wakes_for_an_event_written_while_it_waits() {
        let log = Arc::new(EventLog::new());
        let mut events = follower(&log);
        let writer = Arc::clone(&log);
        let waiting = tokio::spawn(async move { events.next().await });
        tokio::task::yield_now().await;
        writer.push(step_started("a"));
        assert_eq!(*waiting.await.unwrap().unwrap(), step_started("a"));
    }

    #[tokio::test]
    async fn a_full_log_lets_the_oldest_go_and_says_how_many() {
        let log = Arc::new(EventLog::new());
        for index in 0..MAX_LOGGED_EVENTS + 3 {
            log.push(step_started(&index.to_string()));
        }
        log.close();
        let mut events = follower(&log);
        assert_eq!(
            *events.next().await.unwrap(),
            OwnedRunEvent::Missed { count: 3 }
        );
        assert_eq!(*events.next().await.unwrap(), step_started("3"));
    }
}

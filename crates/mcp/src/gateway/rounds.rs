//! Forwarded calls while they run, and the rounds of a client on 2026-07-28: a server may not
//! send such a client requests, so when an upstream asks something (sampling, elicitation,
//! roots) in the middle of a call, the call is parked under a fresh `requestState` and the
//! client answered `input_required`; its retry, carrying the answer and the state, takes the
//! call up again where it waited. A parked call nobody takes up within the call timeout is
//! cancelled; at most [`MAX_PARKED`] wait at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, ErrorData, InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleClient, RoleServer};
use tokio::sync::{mpsc, oneshot};

use crate::relay::{InFlight, Pending};

/// A forwarded call: its task (which answers the final result), the upstream's requests it
/// waits on, and its place in the relay.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) task: Task,
    /// The upstream's requests to the client (a client on 2026-07-28 only).
    pub(super) inputs: Option<mpsc::Receiver<Pending>>,
    pub(super) in_flight: InFlight,
}

/// A call's task, aborted when dropped unfinished: the upstream is told to stop.
#[derive(Debug)]
pub(super) struct Task {
    handle: tokio::task::JoinHandle<CallToolResponse>,
    upstream: Peer<RoleClient>,
    id: rmcp::model::RequestId,
}

impl Task {
    /// `handle`, which sent request `id` to `upstream`.
    pub(super) fn new(
        handle: tokio::task::JoinHandle<CallToolResponse>,
        upstream: Peer<RoleClient>,
        id: rmcp::model::RequestId,
    ) -> Self {
        Task {
            handle,
            upstream,
            id,
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if self.handle.is_finished() {
            return;
        }
        self.handle.abort();
        let (upstream, id) = (self.upstream.clone(), self.id.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let cancelled = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the client's call ended".into()),
                );
                let _ = upstream.notify_cancelled(cancelled).await;
            });
        }
    }
}

/// A `requestState`: 128 bits from the operating system's random source (the state alone
/// lets a retry take up a parked call), or `None` when there is none to be had.
fn unguessable() -> Option<String> {
    let mut bytes = [0u8; 16];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut bytes)
        .ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// How many calls may wait for their clients' answers at once (each holds an upstream's
/// request open).
const MAX_PARKED: usize = 256;

/// A call waiting for a client's answer to its upstream's request.
#[derive(Debug)]
struct Parked {
    running: Running,
    /// Where the answer goes.
    waiting: oneshot::Sender<Result<serde_json::Value, ErrorData>>,
    /// The request's key in `inputRequests`.
    key: String,
    /// The tool called (a retry must name it again).
    tool: String,
    /// The guard session it was decided in (a retry must come from it).
    session: std::path::PathBuf,
    until: Instant,
}

/// The calls parked until their client answers.
#[derive(Debug, Default)]
pub(super) struct Rounds {
    parked: Mutex<HashMap<String, Parked>>,
}

impl Rounds {
    fn parked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for `running` to finish, or, for a client on 2026-07-28, for its upstream to ask
    /// something: then the call is parked and the client asked. A client that cancels its
    /// request cancels the call.
    pub(super) async fn wait(
        self: &Arc<Self>,
        mut running: Running,
        tool: &str,
        session: &std::path::Path,
        expiry: Duration,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        loop {
            let asked = async {
                match running.inputs.as_mut() {
                    Some(inputs) => inputs.recv().await,
                    None => std::future::pending().await,
                }
            };
            let pending = tokio::select! {
                finished = &mut running.task.handle => {
                    return finished.map_err(|error| {
                        ErrorData::internal_error(format!("the call stopped: {error}"), None)
                    });
                }
                Some(pending) = asked => pending,
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("the client cancelled the call", None));
                }
            };
            let now = Instant::now();
            let mut parked = self.parked();
            parked.retain(|_, waiting| waiting.until > now);
            let state = match unguessable() {
                Some(state) if parked.len() < MAX_PARKED => state,
                // The upstream hears why; the call goes on without the answer.
                Some(_) => {
                    let _ = pending.answer.send(Err(ErrorData::internal_error(
                        format!(
                            "the gateway holds {MAX_PARKED} calls waiting for their clients already"
                        ),
                        None,
                    )));
                    continue;
                }
                None => {
                    let _ = pending.answer.send(Err(ErrorData::internal_error(
                        "the gateway could not draw a random request state",
                        None,
                    )));
                    continue;
                }
            };
            let key = "upstream-1".to_owned();
            let mut requests = InputRequests::new();
            requests.insert(key.clone(), pending.request);
            parked.insert(
                state.clone(),
                Parked {
                    running,
                    waiting: pending.answer,
                    key,
                    tool: tool.to_owned(),
                    session: session.to_owned(),
                    until: now + expiry,
                },
            );
            drop(parked);
            // Let go of the call once its time is up, whether or not anyone else parks or
            // resumes meanwhile (its upstream is told to stop).
            let rounds = Arc::downgrade(self);
            let expired = state.clone();
            tokio::spawn(async move {
                tokio::time::sleep(expiry).await;
                if let Some(rounds) = rounds.upgrade() {
                    let now = Instant::now();
                    rounds
                        .parked()
                        .retain(|state, waiting| *state != expired || waiting.until > now);
                }
            });
            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
        }
    }

    /// Takes up the call parked under `state` with the client's `answers`: the call it
    /// continues must be of `tool`, in `session`.
    pub(super) fn resume(
        &self,
        state: &str,
        tool: &str,
        session: &std::path::Path,
        answers: Option<&InputResponses>,
    ) -> Result<Running, ErrorData> {
        let now = Instant::now();
        let mut parked = self.parked();
        parked.retain(|_, waiting| waiting.until > now);
        let refused = || {
            ErrorData::invalid_params(
                "no call of this tool waits under this requestState (it ended, expired or is another's); call the tool again",
                None,
            )
        };
        let waiting = match parked.remove(state) {
            Some(waiting) if waiting.tool == tool && waiting.session == session => waiting,
            Some(other) => {
                parked.insert(state.to_owned(), other);
                return Err(refused());
            }
            None => return Err(refused()),
        };
        drop(parked);
        let answer = answers
            .and_then(|answers| answers.get(&waiting.key))
            .cloned()
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("the retry carries no answer to `{}`", waiting.key),
                    None,
                )
            });
        let _ = waiting.waiting.send(answer);
        Ok(waiting.running)
    }
}

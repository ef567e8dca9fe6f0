//! What passes between the gateway's clients and its upstreams besides the calls themselves:
//! the progress of a forwarded call (its token mapped back to the client's own), an upstream's
//! log messages and list changes, and the requests an upstream makes of its client while it
//! works on a call (sampling, elicitation, roots).
//!
//! An upstream's request goes to the client whose call to that upstream started last and is
//! still running (stdio carries nothing that ties a server's request to the call it serves).
//! A client on a revision with server-to-client requests is asked directly; one on
//! 2026-07-28, where a server may not send requests, is answered `input_required` and its
//! retry carries the answer (`gateway::rounds`).

#![expect(
    deprecated,
    reason = "sampling, roots and logging are deprecated by SEP-2577 (2026-07-28), and clients and servers of every earlier revision still use them"
)]

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorData, Extensions, InputRequest, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    Request, RequestId, RequestNoParam, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, RequestContext};
use rmcp::{Peer, RoleServer};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};

/// The client a forwarded call came from: whom its upstream's requests go to.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// Its connection (a request's own, on 2026-07-28).
    pub(crate) peer: Peer<RoleServer>,
    /// Its request: over HTTP, a request to the client rides that request's stream.
    pub(crate) request: RequestId,
    /// What it declared it can do.
    pub(crate) capabilities: ClientCapabilities,
    /// Set for a client that may not be sent requests (2026-07-28): the upstream's requests
    /// wait here for the client's retry.
    pub(crate) rounds: Option<mpsc::Sender<Pending>>,
    /// The least level of log messages the request asked for (2026-07-28, where a request
    /// opts in to messages in its `_meta`; older clients use `logging/setLevel`).
    log_level: Option<LoggingLevel>,
    /// The guard session it works in: calls of one session are one client's.
    session: PathBuf,
}

impl Caller {
    /// The client of the request `context` is about, working in `session`; `rounds` set for
    /// one on 2026-07-28.
    pub(crate) fn of(
        context: &RequestContext<RoleServer>,
        session: &Path,
        rounds: Option<mpsc::Sender<Pending>>,
    ) -> Caller {
        let log_level = rounds.as_ref().and(context.meta.log_level());
        Caller {
            peer: context.peer.clone(),
            request: context.id.clone(),
            capabilities: context.client_capabilities().unwrap_or_default(),
            rounds,
            log_level,
            session: session.to_owned(),
        }
    }

    /// The mark that sends a request to the client on its call's own stream (SEP-2260).
    fn originating(&self) -> Extensions {
        let mut extensions = Extensions::default();
        extensions.insert(OriginatingRequestId(self.request.clone()));
        extensions
    }
}

/// An upstream's request waiting for a client on 2026-07-28 to answer it in a retry.
#[derive(Debug)]
pub(crate) struct Pending {
    /// What the upstream asks.
    pub(crate) request: InputRequest,
    /// Where the client's answer (a result as JSON) goes.
    pub(crate) answer: oneshot::Sender<Result<serde_json::Value, ErrorData>>,
}

/// How many turns [`Relay::settle`] gives the progress under way, at most.
const SETTLE_TURNS: usize = 256;

/// Routes between the gateway's clients and one gateway's upstreams.
#[derive(Debug, Default)]
pub(crate) struct Relay {
    inner: Mutex<Inner>,
    next: AtomicU64,
    /// Progress notifications being passed on now.
    relaying: AtomicUsize,
    /// The upstreams whose tools changed since the gateway last looked, and its wake-up.
    tools_changed: OnceLock<(Changed, mpsc::Sender<()>)>,
}

/// The names of the upstreams whose tools changed, not yet looked at.
type Changed = Arc<Mutex<BTreeSet<String>>>;

/// Which upstreams' tools changed, as the gateway follows them: many notices of one upstream
/// before it looks are one re-listing.
#[derive(Debug)]
pub(crate) struct ToolChanges {
    servers: Changed,
    wake: mpsc::Receiver<()>,
}

impl ToolChanges {
    /// Waits for a change and answers the upstreams that changed; `None` once the relay is
    /// gone.
    pub(crate) async fn next(&mut self) -> Option<BTreeSet<String>> {
        loop {
            let changed =
                std::mem::take(&mut *self.servers.lock().unwrap_or_else(PoisonError::into_inner));
            if !changed.is_empty() {
                return Some(changed);
            }
            self.wake.recv().await?;
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// An upstream's (name, progress token) → the client and the token it gave. Each upstream
    /// numbers its tokens from zero: the name tells them apart.
    progress: HashMap<(String, ProgressToken), (Peer<RoleServer>, ProgressToken)>,
    /// The calls in flight, oldest first: (id, upstream, caller).
    calls: Vec<(u64, String, Caller)>,
    /// Clients connected on a revision with connections (told of changes and log messages).
    clients: Vec<Peer<RoleServer>>,
}

/// A call's place in the relay; it leaves when this is dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    relay: Arc<Relay>,
    id: u64,
    /// The upstream and the progress token the call went under.
    progress: (String, ProgressToken),
}

impl InFlight {
    /// A retry on 2026-07-28 took the call up: its request (and so its peer), its progress
    /// token and its log level are the retry's now.
    pub(crate) fn retried_by(&self, context: &RequestContext<RoleServer>) {
        let mut inner = self.relay.lock();
        if let Some((_, _, caller)) = inner.calls.iter_mut().find(|(id, _, _)| *id == self.id) {
            caller.peer = context.peer.clone();
            caller.request = context.id.clone();
            caller.log_level = context.meta.log_level();
        }
        route_progress(
            &mut inner,
            &self.progress,
            &context.peer,
            context.meta.get_progress_token(),
        );
    }
}

/// Sends an upstream's progress under `progress` to `peer` under the client's `token`, or
/// nowhere when the client gave none.
fn route_progress(
    inner: &mut Inner,
    progress: &(String, ProgressToken),
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
) {
    match token {
        Some(token) => {
            inner
                .progress
                .insert(progress.clone(), (peer.clone(), token));
        }
        None => {
            inner.progress.remove(progress);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut inner = self.relay.lock();
        inner.calls.retain(|(id, _, _)| *id != self.id);
        inner.progress.remove(&self.progress);
    }
}

impl Relay {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `caller`'s forwarded to `upstream` under `upstream_token`; its progress goes
    /// to the caller under `client_token`, when the client asked for progress.
    pub(crate) fn begin(
        self: &Arc<Self>,
        upstream: &str,
        caller: Caller,
        upstream_token: ProgressToken,
        client_token: Option<ProgressToken>,
    ) -> InFlight {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let progress = (upstream.to_owned(), upstream_token);
        let mut inner = self.lock();
        route_progress(&mut inner, &progress, &caller.peer, client_token);
        inner.calls.push((id, upstream.to_owned(), caller));
        drop(inner);
        InFlight {
            relay: Arc::clone(self),
            id,
            progress,
        }
    }

    /// A client connected (a revision with connections): it hears of list changes and log
    /// messages until it goes.
    pub(crate) fn connected(&self, peer: Peer<RoleServer>) {
        let mut inner = self.lock();
        inner.clients.retain(|known| !known.is_transport_closed());
        inner.clients.push(peer);
    }

    /// Passes upstream `server`'s progress to the client whose call it is about.
    pub(crate) async fn progress(&self, server: &str, mut progress: ProgressNotificationParam) {
        self.relaying.fetch_add(1, Ordering::AcqRel);
        let key = (server.to_owned(), progress.progress_token.clone());
        let route = self.lock().progress.get(&key).cloned();
        if let Some((peer, token)) = route {
            progress.progress_token = token;
            let _ = peer.notify_progress(progress).await;
        }
        self.relaying.fetch_sub(1, Ordering::AcqRel);
    }

    /// Lets the progress an upstream sent before its answer reach the client first. rmcp hands
    /// an upstream's notifications to tasks of their own but its answers straight to the
    /// caller, so the last notification of a call can trail its answer; a client drops progress
    /// that comes after the result. Gives those tasks a few turns, then waits (a bounded
    /// number of turns) for the ones under way to be sent.
    pub(crate) async fn settle(&self) {
        for turn in 0..SETTLE_TURNS {
            if turn >= 4 && self.relaying.load(Ordering::Acquire) == 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
    }

    /// The clients connected now.
    fn clients(&self) -> Vec<Peer<RoleServer>> {
        let mut inner = self.lock();
        inner.clients.retain(|known| !known.is_transport_closed());
        inner.clients.clone()
    }

    /// Passes an upstream's log message to every connected client, and to the requests on
    /// 2026-07-28 in flight that asked for messages of its level.
    pub(crate) async fn log(&self, message: LoggingMessageNotificationParam) {
        let asking: Vec<Peer<RoleServer>> = self
            .lock()
            .calls
            .iter()
            .filter(|(_, _, caller)| {
                caller
                    .log_level
                    .is_some_and(|least| message.level as u8 >= least as u8)
            })
            .map(|(_, _, caller)| caller.peer.clone())
            .collect();
        for peer in self.clients().into_iter().chain(asking) {
            let _ = peer.notify_logging_message(message.clone()).await;
        }
    }

    /// Where the gateway learns which upstreams' tools changed (once: a second call finds
    /// nothing).
    pub(crate) fn follow_tools(&self) -> ToolChanges {
        let servers = Arc::default();
        let (wake, woken) = mpsc::channel(1);
        let _ = self.tools_changed.set((Arc::clone(&servers), wake));
        ToolChanges {
            servers,
            wake: woken,
        }
    }

    /// Upstream `server` said its tools changed.
    pub(crate) fn tools_changed(&self, server: &str) {
        if let Some((servers, wake)) = self.tools_changed.get() {
            servers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(server.to_owned());
            // A wake-up already waiting covers this one too.
            let _ = wake.try_send(());
        }
    }

    /// Tells every connected client a list changed.
    pub(crate) async fn list_changed(&self, what: ListKind) {
        for peer in self.clients() {
            let _ = match what {
                ListKind::Tools => peer.notify_tool_list_changed().await,
                ListKind::Resources => peer.notify_resource_list_changed().await,
                ListKind::Prompts => peer.notify_prompt_list_changed().await,
            };
        }
    }

    /// The client whose call to `upstream` started last and is still running, when the calls
    /// to it in flight are all one client's (one session's): with two clients' calls running,
    /// nothing tells whose call the request serves, and one must not read the other's.
    fn caller_of(&self, upstream: &str) -> Result<Caller, ErrorData> {
        let inner = self.lock();
        let mut calls = inner.calls.iter().rev().filter(|(_, to, _)| to == upstream);
        let Some((_, _, caller)) = calls.next() else {
            return Err(ErrorData::invalid_request(
                "the gateway has no call of a client's in flight to this server, so there is nobody to ask",
                None,
            ));
        };
        if calls.any(|(_, _, other)| other.session != caller.session) {
            return Err(ErrorData::invalid_request(
                "calls of several clients to this server are in flight, and nothing tells whose call this request serves",
                None,
            ));
        }
        Ok(caller.clone())
    }

    /// Asks the client behind `upstream`'s current call to sample.
    pub(crate) async fn create_message(
        &self,
        upstream: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let question = |extensions| {
            let mut request = Request::new(params);
            request.extensions = extensions;
            (
                InputRequest::CreateMessage(request.clone()),
                ServerRequest::CreateMessageRequest(request),
            )
        };
        let asked = self.ask(upstream, "sampling", |can| can.sampling.is_some(), question);
        asked.await.and_then(|answer| match answer {
            Answer::Direct(ClientResult::CreateMessageResult(result)) => Ok(*result),
            other => other.decoded(),
        })
    }

    /// Asks the client behind `upstream`'s current call for input from its user.
    pub(crate) async fn elicit(
        &self,
        upstream: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let question = |extensions| {
            let mut request = Request::new(params);
            request.extensions = extensions;
            (
                InputRequest::Elicitation(request.clone()),
                ServerRequest::ElicitRequest(request),
            )
        };
        let asked = self.ask(
            upstream,
            "elicitation",
            |can| can.elicitation.is_some(),
            question,
        );
        asked.await.and_then(|answer| match answer {
            Answer::Direct(ClientResult::ElicitResult(result)) => Ok(result),
            other => other.decoded(),
        })
    }

    /// Asks the client behind `upstream`'s current call for its roots.
    pub(crate) async fn list_roots(&self, upstream: &str) -> Result<ListRootsResult, ErrorData> {
        let question = |extensions| {
            let request = RequestNoParam {
                extensions,
                ..RequestNoParam::default()
            };
            (
                InputRequest::ListRoots(request.clone()),
                ServerRequest::ListRootsRequest(request),
            )
        };
        let asked = self.ask(upstream, "roots", |can| can.roots.is_some(), question);
        asked.await.and_then(|answer| match answer {
            Answer::Direct(ClientResult::ListRootsResult(result)) => Ok(result),
            other => other.decoded(),
        })
    }

    /// Puts `question` to the client behind `upstream`'s current call, if it declared the
    /// `capability`: directly, or in a round of its call (2026-07-28).
    async fn ask(
        &self,
        upstream: &str,
        capability: &str,
        declared: impl FnOnce(&ClientCapabilities) -> bool,
        question: impl FnOnce(Extensions) -> (InputRequest, ServerRequest),
    ) -> Result<Answer, ErrorData> {
        let caller = self.caller_of(upstream)?;
        if !declared(&caller.capabilities) {
            return Err(ErrorData::invalid_request(
                format!(
                    "the gateway's client did not declare the {capability} capability, so it cannot be asked"
                ),
                None,
            ));
        }
        let (in_a_round, direct) = question(caller.originating());
        match &caller.rounds {
            Some(rounds) => ask_in_a_round(rounds, in_a_round)
                .await
                .map(Answer::InARound),
            None => match caller.peer.send_request(direct).await {
                Ok(result) => Ok(Answer::Direct(result)),
                Err(rmcp::service::ServiceError::McpError(error)) => Err(error),
                Err(error) => Err(ErrorData::internal_error(
                    format!("the client did not answer: {error}"),
                    None,
                )),
            },
        }
    }
}

/// A client's answer to an upstream's request.
enum Answer {
    /// To the request itself.
    Direct(ClientResult),
    /// In a retry of its call: the result as JSON.
    InARound(serde_json::Value),
}

impl Answer {
    /// The answer given in a round, as the result the upstream expects; an answer of another
    /// kind is an error.
    fn decoded<T: DeserializeOwned>(self) -> Result<T, ErrorData> {
        match self {
            Answer::InARound(value) => serde_json::from_value(value).map_err(|error| {
                ErrorData::invalid_params(
                    format!("the client's answer does not fit: {error}"),
                    None,
                )
            }),
            Answer::Direct(_) => Err(ErrorData::internal_error(
                "the client answered with another kind of result",
                None,
            )),
        }
    }
}

/// Which list changed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

/// Hands `request` to the call's rounds and waits for the client's answer in its retry.
async fn ask_in_a_round(
    rounds: &mpsc::Sender<Pending>,
    request: InputRequest,
) -> Result<serde_json::Value, ErrorData> {
    let (answer, answered) = oneshot::channel();
    rounds
        .send(Pending { request, answer })
        .await
        .map_err(|_| gone())?;
    answered.await.map_err(|_| gone())?
}

fn gone() -> ErrorData {
    ErrorData::internal_error(
        "the client's call ended before it answered the request",
        None,
    )
}

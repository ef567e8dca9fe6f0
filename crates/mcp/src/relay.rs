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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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
}

impl Caller {
    /// The client of the request `context` is about; `rounds` set for one on 2026-07-28.
    pub(crate) fn of(
        context: &RequestContext<RoleServer>,
        rounds: Option<mpsc::Sender<Pending>>,
    ) -> Caller {
        let log_level = rounds.as_ref().and(context.meta.log_level());
        Caller {
            peer: context.peer.clone(),
            request: context.id.clone(),
            capabilities: context.client_capabilities().unwrap_or_default(),
            rounds,
            log_level,
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

/// Routes between the gateway's clients and one gateway's upstreams.
#[derive(Debug, Default)]
pub(crate) struct Relay {
    inner: Mutex<Inner>,
    next: AtomicU64,
    /// Where the name of an upstream whose tools changed goes (the gateway lists them again).
    tools_changed: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<String>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// An upstream's progress token → the client and the token it gave.
    progress: HashMap<ProgressToken, (Peer<RoleServer>, ProgressToken)>,
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
    upstream_token: Option<ProgressToken>,
}

impl InFlight {
    /// Sends the upstream's progress for this call to `peer` under the client's `token` (a
    /// retry on 2026-07-28 arrives on a request, and so a peer, of its own).
    pub(crate) fn report_progress_to(&self, peer: Peer<RoleServer>, token: Option<ProgressToken>) {
        let Some(upstream_token) = &self.upstream_token else {
            return;
        };
        let mut inner = self.relay.lock();
        match token {
            Some(token) => {
                inner.progress.insert(upstream_token.clone(), (peer, token));
            }
            None => {
                inner.progress.remove(upstream_token);
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut inner = self.relay.lock();
        inner.calls.retain(|(id, _, _)| *id != self.id);
        if let Some(token) = &self.upstream_token {
            inner.progress.remove(token);
        }
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
        let peer = caller.peer.clone();
        self.lock().calls.push((id, upstream.to_owned(), caller));
        let call = InFlight {
            relay: Arc::clone(self),
            id,
            upstream_token: Some(upstream_token),
        };
        call.report_progress_to(peer, client_token);
        call
    }

    /// A client connected (a revision with connections): it hears of list changes and log
    /// messages until it goes.
    pub(crate) fn connected(&self, peer: Peer<RoleServer>) {
        let mut inner = self.lock();
        inner.clients.retain(|known| !known.is_transport_closed());
        inner.clients.push(peer);
    }

    /// Passes an upstream's progress to the client whose call it is about.
    pub(crate) async fn progress(&self, mut progress: ProgressNotificationParam) {
        let route = self.lock().progress.get(&progress.progress_token).cloned();
        if let Some((peer, token)) = route {
            progress.progress_token = token;
            let _ = peer.notify_progress(progress).await;
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

    /// Sends the name of an upstream whose tools changed to `changed`.
    pub(crate) fn follow_tools(&self, changed: tokio::sync::mpsc::UnboundedSender<String>) {
        let _ = self.tools_changed.set(changed);
    }

    /// Upstream `server` said its tools changed.
    pub(crate) fn tools_changed(&self, server: &str) {
        if let Some(changed) = self.tools_changed.get() {
            let _ = changed.send(server.to_owned());
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

    /// The client whose call to `upstream` started last and is still running.
    fn caller_of(&self, upstream: &str) -> Result<Caller, ErrorData> {
        self.lock()
            .calls
            .iter()
            .rev()
            .find(|(_, to, _)| to == upstream)
            .map(|(_, _, caller)| caller.clone())
            .ok_or_else(|| {
                ErrorData::invalid_request(
                    "the gateway has no call of a client's in flight to this server, so there is nobody to ask",
                    None,
                )
            })
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

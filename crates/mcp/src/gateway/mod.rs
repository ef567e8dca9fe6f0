//! The gateway: an MCP server in front of other MCP servers (upstreams) whose every tool call
//! goes through the guard. Allowed calls are forwarded and their results recorded as evidence
//! by the policy's evidence rules; blocked calls answer a tool error carrying the guard's
//! guidance, which the agent reads and can act on; in guidance mode the call is forwarded and
//! the warning appended; in audit mode it is only recorded. Upstreams' resources, resource
//! templates, prompts and completions are passed through, and (`crate::relay`) their progress,
//! log messages, list changes and requests to the client. The gateway adds `workflow_state`,
//! `workflow_advance` and `break_glass_request` (`workflow.rs`).
//!
//! Clients of every revision are served: those with the initialize handshake, and those on
//! 2026-07-28, whose every request stands alone (a result gets the `resultType` that revision
//! requires; an upstream's request to such a client goes through `input_required` rounds,
//! `rounds.rs`).
//!
//! The guard decides on each upstream's own tool name (the policy's patterns are written for
//! those), with the tool's annotations as hints for a name no pattern classifies, and on the
//! domain a call's arguments name (the policy's `domain_inputs`). Sessions are files
//! (`sessions.rs`); which one a request works in is [`GatewayHandler`]'s rule.

mod rounds;
mod sessions;
mod tools;
mod workflow;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::Utc;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, CompleteRequestParams,
    CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse, Reference,
    Resource, ResultType, ServerCapabilities, ServerConfig, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use wayline_core::mcp::McpServer;
use wayline_guard::{Guard, GuardVerdict, ToolCall};
use wayline_listen::Principal;

use self::rounds::{Rounds, Running, Task};
use self::sessions::{Keyed, SessionFiles, SharedSession};
use self::tools::{Exposed, Tools};
use crate::Error;
use crate::http::HttpOptions;
use crate::relay::{Caller, ListKind, Relay};
use crate::upstream::Upstream;

/// How long a forwarded call may take, by default.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Which guard session a connection works in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionChoice {
    /// A session of its own, per client connection (`conn-…`).
    PerConnection,
    /// One named session, shared by every client (and found again after a restart).
    Named(String),
}

/// What a gateway is made of.
#[derive(Debug)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// The upstream servers, by name.
    pub upstreams: BTreeMap<String, McpServer>,
    /// Expose tools and prompts as `SERVER__NAME` rather than `NAME`.
    pub prefix: bool,
    /// The guard (policy, mode, audit log).
    pub guard: Guard,
    /// Where sessions are kept.
    pub sessions_dir: std::path::PathBuf,
    /// Which session a connection works in.
    pub session: SessionChoice,
    /// How long a forwarded call may take.
    pub call_timeout: Duration,
    /// How long an upstream may take to start.
    pub connect_timeout: Duration,
}

impl GatewayConfig {
    /// A gateway over `upstreams`, deciding with `guard`, keeping sessions in `sessions_dir`.
    pub fn new(
        upstreams: BTreeMap<String, McpServer>,
        guard: Guard,
        sessions_dir: impl Into<std::path::PathBuf>,
    ) -> Self {
        GatewayConfig {
            upstreams,
            prefix: false,
            guard,
            sessions_dir: sessions_dir.into(),
            session: SessionChoice::PerConnection,
            call_timeout: CALL_TIMEOUT,
            connect_timeout: crate::CONNECT_TIMEOUT,
        }
    }
}

/// The gateway, connected to its upstreams. Cheap to clone; serve it with
/// [`serve_stdio`](Gateway::serve_stdio) or [`serve_http`](Gateway::serve_http), or hand
/// [`handler`](Gateway::handler)s to a transport of your own.
#[derive(Debug, Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    upstreams: BTreeMap<String, Upstream>,
    tools: Tools,
    guard: Guard,
    files: SessionFiles,
    /// The session every connection shares, when one is named.
    named: Option<Arc<SharedSession>>,
    call_timeout: Duration,
    connections: AtomicU64,
    /// The sessions open, to write what waits in memory when serving ends (a connection's
    /// goes when its handlers do).
    opened: std::sync::Mutex<Vec<Weak<SharedSession>>>,
    /// The sessions of requests without a connection.
    keyed: Keyed,
    /// Progress, notifications and requests between upstreams and clients.
    relay: Arc<Relay>,
    /// Calls waiting for a client on 2026-07-28 to answer their upstream's request.
    rounds: Arc<Rounds>,
}

impl Gateway {
    /// Connects to every upstream and lists their tools. Two upstreams offering one name
    /// without `prefix`, or a name the gateway's own tools use, is an error.
    pub async fn connect(config: GatewayConfig) -> Result<Gateway, Error> {
        let mut upstreams = BTreeMap::new();
        let relay = Arc::new(Relay::default());
        let tools = Tools::own(workflow::tools(&config.guard), config.prefix);
        for (name, server) in &config.upstreams {
            let upstream = Upstream::connect_relayed(
                name,
                server,
                config.connect_timeout,
                Some(Arc::clone(&relay)),
            )
            .await?;
            tools.replace(name, upstream.tools().await?)?;
            upstreams.insert(name.clone(), upstream);
        }
        let files = SessionFiles::new(&config.sessions_dir)?;
        let named = match &config.session {
            SessionChoice::Named(name) => Some(Arc::new(files.open(name, &config.guard)?)),
            SessionChoice::PerConnection => None,
        };
        let shared = Arc::new(Shared {
            upstreams,
            tools,
            guard: config.guard,
            files,
            named,
            call_timeout: config.call_timeout,
            connections: AtomicU64::new(0),
            opened: std::sync::Mutex::new(Vec::new()),
            keyed: Keyed::default(),
            relay,
            rounds: Arc::default(),
        });
        follow_tool_lists(&shared);
        Ok(Gateway { shared })
    }

    /// The tools clients see now, by exposed name.
    pub fn tool_names(&self) -> Vec<String> {
        self.shared.tools.now().keys().cloned().collect()
    }

    /// A handler for one client connection (or, on 2026-07-28 over HTTP, one request). Which
    /// guard session a request works in is decided per request (see [`SESSION_HEADER`]).
    pub fn handler(&self) -> Result<GatewayHandler, Error> {
        Ok(GatewayHandler {
            shared: Arc::clone(&self.shared),
            own: Arc::default(),
        })
    }

    /// Writes the evidence sessions hold in memory (serving does this when it ends).
    pub fn flush(&self) -> Result<(), Error> {
        let opened: Vec<Arc<SharedSession>> = self
            .shared
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for session in opened.into_iter().chain(self.shared.keyed.all()) {
            session.flush(&self.shared.guard)?;
        }
        Ok(())
    }

    /// Serves one client on standard input and output, until it disconnects.
    pub async fn serve_stdio(&self) -> Result<(), Error> {
        let handler = self.handler()?;
        let serving = handler
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| Error::Serve {
                address: "stdio".into(),
                source: std::io::Error::other(error.to_string()),
            })?;
        serving.waiting().await.map_err(|error| Error::Serve {
            address: "stdio".into(),
            source: std::io::Error::other(error.to_string()),
        })?;
        self.flush()
    }

    /// Serves streamable HTTP at `/mcp` on `options.listener`, each request carrying
    /// `Authorization: Bearer TOKEN`; runs until `shutdown` completes.
    pub async fn serve_http(
        &self,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let gateway = self.clone();
        crate::http::serve(move || gateway.handler(), options, shutdown).await?;
        self.flush()?;
        // Sessions of clients without a connection go with the service.
        self.shared.keyed.clear();
        Ok(())
    }
}

/// Lists an upstream's tools again when it says they changed, and tells the clients: a task
/// that lives as long as the gateway. A new list that clashes with another's names is not
/// taken (the old one stays, and the log says why).
fn follow_tool_lists(shared: &Arc<Shared>) {
    let mut changes = shared.relay.follow_tools();
    let gateway = Arc::downgrade(shared);
    tokio::spawn(async move {
        while let Some(changed) = changes.next().await {
            let Some(shared) = gateway.upgrade() else {
                return;
            };
            let mut listed_again = false;
            for server in changed {
                let Some(upstream) = shared.upstreams.get(&server) else {
                    continue;
                };
                let listed = match upstream.tools().await {
                    Ok(tools) => shared.tools.replace(&server, tools),
                    Err(error) => Err(error),
                };
                match listed {
                    Ok(()) => listed_again = true,
                    Err(error) => {
                        tracing::warn!(%error, server, "the MCP server's new tool list is not taken");
                    }
                }
            }
            if listed_again {
                shared.relay.list_changed(ListKind::Tools).await;
            }
        }
    });
}

/// The header a request over HTTP may name its guard session with (`Wayline-Session: NAME`;
/// letters, digits, `-`, `_` and `.`): the session is kept, like `--session`'s.
pub const SESSION_HEADER: &str = "wayline-session";

/// The gateway as one client connection sees it (an rmcp [`ServerHandler`]).
///
/// Which guard session a request works in: the gateway's named one (`--session`); else the
/// one its HTTP request names in [`SESSION_HEADER`]; else its connection's own (stdio, or
/// HTTP on a revision with sessions), opened at the first request that needs it and removed
/// with the connection; else (2026-07-28 over HTTP, where no request belongs to a
/// connection) its client's, keyed by whom its OAuth token was issued to (subject and client)
/// or else by the name and version the client gives, removed once idle for 30 minutes.
#[derive(Debug, Clone)]
pub struct GatewayHandler {
    shared: Arc<Shared>,
    /// This connection's own session, once a request opened it.
    own: Arc<std::sync::Mutex<Option<Arc<SharedSession>>>>,
}

/// True for a request of a revision without the initialize handshake (2026-07-28): each
/// request carries its protocol metadata and may not be answered with requests.
fn without_handshake(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// The session a client without a connection works in: by whom its token was issued to,
/// when an authorization server said (OAuth), else by the name and version it gives.
fn client_session_name(principal: Option<&Principal>, client: Option<&Implementation>) -> String {
    if let Some(principal) = principal {
        // A machine client's token (client credentials) may name no subject, or the client.
        let mut whose: Vec<&str> = principal.subject.iter().map(String::as_str).collect();
        if let Some(client) = principal
            .client_id
            .as_deref()
            .filter(|c| !whose.contains(c))
        {
            whose.push(client);
        }
        return session_name("token", &whose.join("-"));
    }
    let Some(client) = client else {
        return "client-anonymous".to_owned();
    };
    session_name("client", &format!("{}-{}", client.name, client.version))
}

/// `prefix-` and `given`, cleaned to a file name's letters, with a hash of `given`.
fn session_name(prefix: &str, given: &str) -> String {
    let mut name: String = given
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    // Two names that read the same once cleaned stay two sessions.
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&given, &mut hasher);
    name.push_str(&format!(
        "-{:08x}",
        std::hash::Hasher::finish(&hasher) as u32
    ));
    format!("{prefix}-{name}")
}

/// A forwarded call, started or answered at once.
enum Started {
    /// Answered without the upstream (blocked, or it could not be sent).
    Answered(CallToolResponse),
    /// On its way.
    Running(Running),
}

impl GatewayHandler {
    /// The guard session `context`'s request works in (see [`GatewayHandler`]).
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<SharedSession>, Error> {
        let shared = &self.shared;
        if let Some(named) = &shared.named {
            return Ok(Arc::clone(named));
        }
        let parts = context.extensions.get::<axum::http::request::Parts>();
        if let Some(name) = parts.and_then(|parts| parts.headers.get(SESSION_HEADER)) {
            let name = String::from_utf8_lossy(name.as_bytes());
            return shared.keyed.get(&shared.files, &shared.guard, &name, false);
        }
        if let Some(parts) = parts.filter(|_| without_handshake(context)) {
            let name = client_session_name(
                parts.extensions.get::<Principal>(),
                context.client_info().as_ref(),
            );
            return shared.keyed.get(&shared.files, &shared.guard, &name, true);
        }
        let mut own = self
            .own
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(session) = own.as_ref() {
            return Ok(Arc::clone(session));
        }
        let n = shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let name = format!("conn-{}-{n}", Utc::now().format("%Y%m%dT%H%M%S%.3f"));
        let session = Arc::new(shared.files.open_for_connection(&name, &shared.guard)?);
        let mut opened = shared
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        opened.retain(|session| session.strong_count() > 0);
        opened.push(Arc::downgrade(&session));
        *own = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Decides and, when allowed, forwards a call of `exposed`; a retry carrying a
    /// `requestState` takes up the call it continues (decided already).
    async fn call(
        &self,
        exposed: &Exposed,
        mut params: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session(context).map_err(internal)?;
        let tool = exposed.tool.name.as_ref();
        let running = match params.request_state.take() {
            Some(state) => {
                let running = self.shared.rounds.resume(
                    &state,
                    tool,
                    session.path(),
                    params.input_responses.as_ref(),
                )?;
                running.in_flight.retried_by(context);
                running
            }
            None => match self.start(exposed, params, &session, context).await {
                Started::Answered(response) => return Ok(response),
                Started::Running(running) => running,
            },
        };
        self.shared
            .rounds
            .wait(
                running,
                tool,
                session.path(),
                self.shared.call_timeout,
                context,
            )
            .await
    }

    /// Decides a call and sends what is allowed to its upstream.
    async fn start(
        &self,
        exposed: &Exposed,
        params: CallToolRequestParams,
        session: &Arc<SharedSession>,
        context: &RequestContext<RoleServer>,
    ) -> Started {
        let guard = &self.shared.guard;
        let mut call = ToolCall::new(&exposed.name).hints(exposed.hints);
        // The domain the call is about, read from its arguments as the engine reads a step's
        // inputs, so jumping between domains is seen through the gateway too.
        let domain = params
            .arguments
            .as_ref()
            .and_then(|arguments| guard.policy().domain_of(|name| arguments.get(name)));
        if let Some(domain) = domain {
            call = call.domain(domain);
        }
        let decision = match session.with(guard, |session| guard.decide(session, call, Utc::now()))
        {
            Ok(decision) => decision,
            Err(error) => return Started::Answered(tool_error(error.to_string())),
        };
        let warning = match &decision {
            GuardVerdict::Block { .. } => {
                return Started::Answered(tool_error(guidance(&decision)));
            }
            GuardVerdict::Warn { message, .. } => Some(message.clone()),
            _ => None,
        };
        let Some(upstream) = self.shared.upstreams.get(&exposed.server) else {
            return Started::Answered(tool_error("the tool's server is gone".into()));
        };
        // Only the name and the arguments go on: the client's `_meta` (its revision, its
        // progress token) is its own with the gateway.
        let mut forwarded = CallToolRequestParams::new(exposed.name.clone());
        forwarded.arguments = params.arguments;
        let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(forwarded));
        let sent = upstream
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await;
        let handle = match sent {
            Ok(handle) => handle,
            Err(error) => {
                return Started::Answered(tool_error(upstream.masked(&format!(
                    "the MCP server `{}` could not answer: {error}",
                    exposed.server
                ))));
            }
        };
        let (rounds, inputs) = if without_handshake(context) {
            let (sender, receiver) = tokio::sync::mpsc::channel(1);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        let caller = Caller::of(context, session.path(), rounds);
        let in_flight = self.shared.relay.begin(
            &exposed.server,
            caller,
            handle.progress_token.clone(),
            context.meta.get_progress_token(),
        );
        let id = handle.id.clone();
        let answered = Answered {
            masks: upstream.masks(),
            server: exposed.server.clone(),
            tool: exposed.name.clone(),
            session: Arc::clone(session),
            guard: guard.clone(),
            warning,
            timeout: self.shared.call_timeout,
        };
        let relay = Arc::clone(&self.shared.relay);
        let task = tokio::spawn(async move {
            let answer = tokio::time::timeout(answered.timeout, handle.await_response()).await;
            relay.settle().await;
            answered.response(answer)
        });
        Started::Running(Running {
            task: Task::new(task, upstream.peer().clone(), id),
            inputs,
            in_flight,
        })
    }

    /// Runs one of the gateway's own tools.
    fn own(
        &self,
        session: &SharedSession,
        name: &str,
        params: &CallToolRequestParams,
        requester: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let guard = &self.shared.guard;
        let empty = rmcp::model::JsonObject::new();
        let arguments = params.arguments.as_ref().unwrap_or(&empty);
        let file = session.path().display().to_string();
        session
            .with(guard, |session| match name {
                workflow::STATE => workflow::state(guard, session, &file),
                workflow::ADVANCE => workflow::advance(guard, session, arguments),
                _ => workflow::break_glass(guard, session, arguments, requester, &file),
            })
            .map_err(internal)
    }

    /// The upstreams that may have an exposed prompt name, with its name there: the one its
    /// prefix names, or (without prefixes) every upstream, in order.
    fn prompt_owners(&self, exposed: &str) -> Vec<(&Upstream, String)> {
        if self.shared.tools.prefixed() {
            return exposed
                .split_once("__")
                .and_then(|(server, name)| {
                    Some((self.shared.upstreams.get(server)?, name.to_owned()))
                })
                .into_iter()
                .collect();
        }
        self.shared
            .upstreams
            .values()
            .map(|upstream| (upstream, exposed.to_owned()))
            .collect()
    }
}

/// What a forwarded call's answer becomes: the upstream's result, its evidence recorded and
/// the guard's warning added; a failure or a timeout a tool error saying so.
struct Answered {
    /// The upstream's credentials, masked in what it says.
    masks: Arc<Vec<String>>,
    server: String,
    tool: String,
    session: Arc<SharedSession>,
    guard: Guard,
    warning: Option<String>,
    timeout: Duration,
}

impl Answered {
    fn response(
        self,
        answer: Result<
            Result<ServerResult, rmcp::service::ServiceError>,
            tokio::time::error::Elapsed,
        >,
    ) -> CallToolResponse {
        let mut result = match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => result,
            Ok(Ok(ServerResult::CreateTaskResult(task))) => return CallToolResponse::Task(task),
            Ok(Ok(_)) => {
                return tool_error(format!(
                    "the MCP server `{}` answered the call with another kind of result",
                    self.server
                ));
            }
            Ok(Err(error)) => {
                return tool_error(crate::upstream::mask(
                    &self.masks,
                    &format!("the MCP server `{}` could not answer: {error}", self.server),
                ));
            }
            Err(_) => {
                return tool_error(format!(
                    "the MCP server `{}` gave no answer within {} s",
                    self.server,
                    self.timeout.as_secs()
                ));
            }
        };
        // Only a success the policy draws evidence from is summarised (a result may be large:
        // images, files).
        let evidence =
            result.is_error != Some(true) && self.guard.policy().evidence_of(&self.tool).is_some();
        if evidence {
            self.session
                .record(&self.guard, &self.tool, true, &summary(&result));
        }
        if let Some(warning) = self.warning {
            result
                .content
                .push(ContentBlock::text(format!("Guard: {warning}")));
        }
        // Required on 2026-07-28 (rmcp leaves it out for older revisions); an upstream on an
        // older revision did not send it.
        result.result_type.get_or_insert(ResultType::COMPLETE);
        CallToolResponse::Complete(result)
    }
}

/// A call's answer that is an error the agent reads.
fn tool_error(text: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(text)]))
}

/// What a blocked agent reads: the reason, the calming words when panic was seen, and what to
/// do instead.
fn guidance(decision: &GuardVerdict) -> String {
    let GuardVerdict::Block {
        reason,
        calming_message,
        recommended_actions,
        ..
    } = decision
    else {
        return String::new();
    };
    let mut text = format!("Blocked by the guard: {reason}.");
    if let Some(calming) = calming_message {
        text.push_str("\n\n");
        text.push_str(calming);
    }
    if !recommended_actions.is_empty() {
        text.push_str("\n\nWhat to do instead:");
        for action in recommended_actions {
            text.push_str("\n- ");
            text.push_str(action);
        }
    }
    text.push_str(
        "\n\nCall `workflow_state` to see the phase and what it needs; `break_glass_request` asks a person for an emergency override.",
    );
    text
}

/// A short summary of a result, for the evidence it becomes.
fn summary(result: &CallToolResult) -> String {
    let text = crate::upstream::outcome(result).text_content();
    let text = if text.is_empty() {
        result
            .structured_content
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    } else {
        text
    };
    text.chars().take(200).collect()
}

fn internal(error: Error) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_completions()
            .build();
        // Upstreams' log messages are passed on (the capability's builder is deprecated with
        // logging itself, SEP-2577; older revisions' clients still use it).
        capabilities.logging = Some(rmcp::model::JsonObject::new());
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("wayline-gateway", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Tool calls pass a guard that follows the investigation's phases. Call workflow_state to see the phase, its evidence and the tools allowed now."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.shared
                .tools
                .now()
                .values()
                .map(|exposed| exposed.tool.clone())
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(exposed) = self.shared.tools.get(request.name.as_ref()) else {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}` here", request.name),
                None,
            ));
        };
        if exposed.server.is_empty() {
            let requester = context
                .client_info()
                .map(|info| format!("agent:{}", info.name))
                .unwrap_or_else(|| "agent".to_owned());
            let session = self.session(&context).map_err(internal)?;
            return self
                .own(&session, &exposed.name, &request, &requester)
                .map(CallToolResponse::Complete);
        }
        self.call(&exposed, request, &context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut all: Vec<Resource> = Vec::new();
        for upstream in self.shared.upstreams.values() {
            if let Ok(resources) = upstream.peer().list_all_resources().await {
                all.extend(resources);
            }
        }
        Ok(ListResourcesResult::with_all_items(all))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let mut last = None;
        for upstream in self.shared.upstreams.values() {
            match upstream.peer().read_resource_once(request.clone()).await {
                Ok(ReadResourceResponse::Complete(mut result)) => {
                    result.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(ReadResourceResponse::Complete(result));
                }
                Ok(response) => return Ok(response),
                Err(error) => last = Some(error),
            }
        }
        Err(ErrorData::resource_not_found(
            format!(
                "no upstream has `{}`{}",
                request.uri,
                last.map(|error| format!(" ({error})")).unwrap_or_default()
            ),
            None,
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut all: Vec<Prompt> = Vec::new();
        for (server, upstream) in &self.shared.upstreams {
            if let Ok(prompts) = upstream.peer().list_all_prompts().await {
                all.extend(prompts.into_iter().map(|mut prompt| {
                    prompt.name = self.shared.tools.exposed_name(server, &prompt.name);
                    prompt
                }));
            }
        }
        Ok(ListPromptsResult::with_all_items(all))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let mut last = None;
        for (upstream, name) in self.prompt_owners(&request.name) {
            let mut forwarded = request.clone();
            forwarded.name = name;
            match upstream.peer().get_prompt_once(forwarded).await {
                Ok(GetPromptResponse::Complete(mut result)) => {
                    result.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(GetPromptResponse::Complete(result));
                }
                Ok(response) => return Ok(response),
                Err(error) => last = Some(error),
            }
        }
        Err(ErrorData::invalid_params(
            format!(
                "no prompt `{}` here{}",
                request.name,
                last.map(|error| format!(" ({error})")).unwrap_or_default()
            ),
            None,
        ))
    }
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.shared.relay.connected(context.peer);
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut all = Vec::new();
        for upstream in self.shared.upstreams.values() {
            if let Ok(templates) = upstream.peer().list_all_resource_templates().await {
                all.extend(templates);
            }
        }
        Ok(ListResourceTemplatesResult::with_all_items(all))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let owners: Vec<(&Upstream, CompleteRequestParams)> = match &request.r#ref {
            Reference::Prompt(prompt) => self
                .prompt_owners(&prompt.name)
                .into_iter()
                .map(|(upstream, name)| {
                    let mut forwarded = request.clone();
                    forwarded.r#ref = Reference::for_prompt(name);
                    (upstream, forwarded)
                })
                .collect(),
            _ => self
                .shared
                .upstreams
                .values()
                .map(|upstream| (upstream, request.clone()))
                .collect(),
        };
        let mut last = None;
        for (upstream, mut forwarded) in owners {
            forwarded.meta = None;
            match upstream.peer().complete(forwarded).await {
                Ok(mut result) => {
                    result.result_type.get_or_insert(ResultType::COMPLETE);
                    return Ok(result);
                }
                Err(error) => last = Some(error),
            }
        }
        Err(ErrorData::invalid_params(
            format!(
                "no upstream completes this argument{}",
                last.map(|error| format!(" ({error})")).unwrap_or_default()
            ),
            None,
        ))
    }

    #[expect(
        deprecated,
        reason = "logging is deprecated by SEP-2577; clients of the earlier revisions still set levels"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        for upstream in self.shared.upstreams.values() {
            let mut forwarded = request.clone();
            forwarded.meta = None;
            let request = ClientRequest::SetLevelRequest(rmcp::model::Request::new(forwarded));
            // An upstream without logging refuses; the others still log at the level.
            let _ = upstream.peer().send_request(request).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_without_a_connection_are_known_by_their_token_before_their_word() {
        let named = |subject: Option<&str>, client: Option<&str>| {
            let principal = Principal::new(
                subject.map(str::to_owned),
                client.map(str::to_owned),
                Vec::new(),
            );
            client_session_name(Some(&principal), None)
        };
        assert!(named(Some("ana"), Some("agent")).starts_with("token-ana-agent-"));
        // A client-credentials token names no subject, or the client as its subject.
        assert!(named(None, Some("agent")).starts_with("token-agent-"));
        assert_eq!(
            named(Some("agent"), Some("agent")),
            named(None, Some("agent"))
        );
        // Names that read the same once cleaned stay two sessions.
        assert_ne!(named(Some("a/b"), None), named(Some("a_b"), None));
        assert_eq!(client_session_name(None, None), "client-anonymous");
    }
}

//! The gateway: an MCP server in front of other MCP servers (upstreams) whose every tool call
//! goes through the guard. Allowed calls are forwarded and their results recorded as evidence
//! by the policy's evidence rules; blocked calls answer a tool error carrying the guard's
//! guidance, which the agent reads and can act on; in guidance mode the call is forwarded and
//! the warning appended; in audit mode it is only recorded. Upstreams' resources and prompts
//! are passed through. The gateway adds `workflow_state`, `workflow_advance` and
//! `break_glass_request` (`workflow.rs`).
//!
//! The guard decides on each upstream's own tool name (the policy's patterns are written for
//! those), with the tool's annotations as hints for a name no pattern classifies, and on the
//! domain a call's arguments name (the policy's `domain_inputs`). Sessions are files
//! (`sessions.rs`): one per client connection, removed when the connection ends, or one named
//! session several clients share, kept.

mod http;
mod sessions;
mod workflow;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::Utc;
use rmcp::model::CallToolResponse;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse, Resource,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use wayline_core::mcp::McpServer;
use wayline_guard::{Decision, Guard, Hints, ToolCall};

pub use self::http::HttpOptions;
use self::sessions::{SessionFiles, SharedSession};
use crate::Error;
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

/// A tool as the gateway exposes it.
#[derive(Debug)]
struct Exposed {
    /// The server it belongs to.
    server: String,
    /// Its name there (what the guard decides on).
    name: String,
    /// As listed to clients.
    tool: Tool,
    /// What its annotations say.
    hints: Hints,
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
    tools: BTreeMap<String, Exposed>,
    prefix: bool,
    guard: Guard,
    files: SessionFiles,
    /// The session every connection shares, when one is named.
    named: Option<Arc<SharedSession>>,
    call_timeout: Duration,
    connections: AtomicU64,
    /// The sessions open, to write what waits in memory when serving ends (a connection's
    /// goes when its handlers do).
    opened: std::sync::Mutex<Vec<Weak<SharedSession>>>,
}

impl Gateway {
    /// Connects to every upstream and lists their tools. Two upstreams offering one name
    /// without `prefix`, or a name the gateway's own tools use, is an error.
    pub async fn connect(config: GatewayConfig) -> Result<Gateway, Error> {
        let mut upstreams = BTreeMap::new();
        let mut tools: BTreeMap<String, Exposed> = BTreeMap::new();
        for own in workflow::tools(&config.guard) {
            tools.insert(
                own.name.to_string(),
                Exposed {
                    server: String::new(),
                    name: own.name.to_string(),
                    tool: own,
                    hints: Hints::default(),
                },
            );
        }
        for (name, server) in &config.upstreams {
            let upstream = Upstream::connect(name, server, config.connect_timeout).await?;
            for tool in upstream.tools().await? {
                let own_name = tool.name.to_string();
                let exposed = exposed_name(config.prefix, name, &own_name);
                if let Some(first) = tools.get(&exposed) {
                    return Err(Error::ToolClash {
                        tool: exposed,
                        first: if first.server.is_empty() {
                            "the gateway".to_owned()
                        } else {
                            first.server.clone()
                        },
                        second: name.clone(),
                    });
                }
                let hints = tool
                    .annotations
                    .as_ref()
                    .map(|hints| Hints::new(hints.read_only_hint, hints.destructive_hint))
                    .unwrap_or_default();
                let mut listed = tool.clone();
                listed.name = exposed.clone().into();
                tools.insert(
                    exposed,
                    Exposed {
                        server: name.clone(),
                        name: own_name,
                        tool: listed,
                        hints,
                    },
                );
            }
            upstreams.insert(name.clone(), upstream);
        }
        let files = SessionFiles::new(&config.sessions_dir)?;
        let named = match &config.session {
            SessionChoice::Named(name) => Some(Arc::new(files.open(name, &config.guard)?)),
            SessionChoice::PerConnection => None,
        };
        Ok(Gateway {
            shared: Arc::new(Shared {
                upstreams,
                tools,
                prefix: config.prefix,
                guard: config.guard,
                files,
                named,
                call_timeout: config.call_timeout,
                connections: AtomicU64::new(0),
                opened: std::sync::Mutex::new(Vec::new()),
            }),
        })
    }

    /// The tools clients see, by exposed name.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.shared.tools.keys().map(String::as_str)
    }

    /// A handler for one client connection, in its session (a new one, or the named one).
    pub fn handler(&self) -> Result<GatewayHandler, Error> {
        let session = match &self.shared.named {
            Some(named) => Arc::clone(named),
            None => {
                let n = self.shared.connections.fetch_add(1, Ordering::Relaxed) + 1;
                let name = format!("conn-{}-{n}", Utc::now().format("%Y%m%dT%H%M%S%.3f"));
                Arc::new(
                    self.shared
                        .files
                        .open_for_connection(&name, &self.shared.guard)?,
                )
            }
        };
        let mut opened = self
            .shared
            .opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        opened.retain(|session| session.strong_count() > 0);
        opened.push(Arc::downgrade(&session));
        drop(opened);
        Ok(GatewayHandler {
            shared: Arc::clone(&self.shared),
            session,
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
        for session in opened {
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
        http::serve(self.clone(), options, shutdown).await?;
        self.flush()
    }
}

fn exposed_name(prefix: bool, server: &str, name: &str) -> String {
    if prefix {
        format!("{server}__{name}")
    } else {
        name.to_owned()
    }
}

/// The gateway as one client connection sees it (an rmcp [`ServerHandler`]).
#[derive(Debug, Clone)]
pub struct GatewayHandler {
    shared: Arc<Shared>,
    session: Arc<SharedSession>,
}

impl GatewayHandler {
    /// The session file this connection works in.
    pub fn session_file(&self) -> &std::path::Path {
        self.session.path()
    }

    /// Decides and, when allowed, forwards a call of `exposed`.
    async fn call(
        &self,
        exposed: &Exposed,
        params: CallToolRequestParams,
    ) -> Result<CallToolResponse, ErrorData> {
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
        let decision = self
            .session
            .with(guard, |session| guard.decide(session, call, Utc::now()))
            .map_err(internal)?;
        let warning = match &decision {
            Decision::Block { .. } => {
                return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(guidance(&decision)),
                ])));
            }
            Decision::Warn { message, .. } => Some(message.clone()),
            _ => None,
        };
        let Some(upstream) = self.shared.upstreams.get(&exposed.server) else {
            return Err(ErrorData::internal_error("the tool's server is gone", None));
        };
        let mut forwarded = params;
        forwarded.name = exposed.name.clone().into();
        let response = tokio::time::timeout(
            self.shared.call_timeout,
            upstream.peer().call_tool_once(forwarded),
        )
        .await;
        let mut response = match response {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(format!(
                        "the MCP server `{}` could not answer: {error}",
                        exposed.server
                    )),
                ])));
            }
            Err(_) => {
                return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(format!(
                        "the MCP server `{}` gave no answer within {} s",
                        exposed.server,
                        self.shared.call_timeout.as_secs()
                    )),
                ])));
            }
        };
        if let CallToolResponse::Complete(result) = &mut response {
            // Only a success the policy draws evidence from is summarised (a result may be
            // large: images, files).
            let evidence = result.is_error != Some(true)
                && guard.policy().evidence_of(&exposed.name).is_some();
            if evidence {
                self.session
                    .record(guard, &exposed.name, true, &summary(result));
            }
            if let Some(warning) = warning {
                result
                    .content
                    .push(ContentBlock::text(format!("Guard: {warning}")));
            }
        }
        Ok(response)
    }

    /// Runs one of the gateway's own tools.
    fn own(
        &self,
        name: &str,
        params: &CallToolRequestParams,
        requester: &str,
    ) -> Result<CallToolResult, ErrorData> {
        let guard = &self.shared.guard;
        let empty = rmcp::model::JsonObject::new();
        let arguments = params.arguments.as_ref().unwrap_or(&empty);
        let file = self.session.path().display().to_string();
        self.session
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
        if self.shared.prefix {
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

/// What a blocked agent reads: the reason, the calming words when panic was seen, and what to
/// do instead.
fn guidance(decision: &Decision) -> String {
    let Decision::Block {
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
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
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
                .peer
                .peer_info()
                .map(|info| format!("agent:{}", info.client_info.name))
                .unwrap_or_else(|| "agent".to_owned());
            let name = exposed.name.clone();
            return self
                .own(&name, &request, &requester)
                .map(CallToolResponse::Complete);
        }
        self.call(exposed, request).await
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
                    prompt.name = exposed_name(self.shared.prefix, server, &prompt.name);
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
}

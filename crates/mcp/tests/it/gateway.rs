//! The gateway in process, in front of a fake MCP server that registers MCP-ocs's real tool
//! names (`../shared/fixtures/guard/mcp-ocs-tools.txt`) over streamable HTTP, and that calls
//! every one of its tools read-only: a server's annotations are hints, and the policy's
//! patterns win. The same calls are then made in blocking mode (writes stopped with the guard's
//! words) and guidance mode (forwarded, the warning appended). A client speaks to the gateway
//! through an in-memory pipe.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use wayline_core::McpServer;
use wayline_guard::audit::{AuditLog, MemorySink};
use wayline_guard::{Guard, Mode, Policy};
use wayline_mcp::{Gateway, GatewayConfig};

/// A server with the given tool names, each claiming to be read-only, each answering `ok NAME`
/// and writing down every call it receives.
#[derive(Debug, Clone)]
struct FakeOcs {
    names: Arc<std::sync::Mutex<Vec<String>>>,
    received: Arc<std::sync::Mutex<Vec<String>>>,
}

impl FakeOcs {
    fn new(names: &[&str]) -> Self {
        FakeOcs {
            names: Arc::new(std::sync::Mutex::new(
                names.iter().map(|name| (*name).to_owned()).collect(),
            )),
            received: Arc::default(),
        }
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }
}

impl ServerHandler for FakeOcs {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .names
            .lock()
            .unwrap()
            .iter()
            .map(|name| {
                let schema = json!({"type": "object", "properties": {}});
                let mut tool = Tool::new(
                    name.clone(),
                    "an MCP-ocs tool",
                    Arc::new(schema.as_object().unwrap().clone()),
                );
                let mut hints = ToolAnnotations::default();
                hints.read_only_hint = Some(true);
                tool.annotations = Some(hints);
                tool
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.received.lock().unwrap().push(request.name.to_string());
        // `oc_grow` adds a tool, and says the list changed.
        if request.name == "oc_grow" {
            self.names.lock().unwrap().push("oc_get_events".to_owned());
            context.peer.notify_tool_list_changed().await.unwrap();
        }
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(format!("ok {}", request.name)),
        ])))
    }
}

/// Serves `handler` over streamable HTTP on loopback; answers its URL.
async fn serve_http(handler: FakeOcs) -> String {
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/mcp")
}

/// A client of a gateway made of `config`, through an in-memory pipe.
async fn client_of(config: GatewayConfig) -> RunningService<RoleClient, ClientConfig> {
    let gateway = Gateway::connect(config).await.unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let handler = gateway.handler().unwrap();
    tokio::spawn(async move {
        let running = handler.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("test-agent", "1"),
    )
    .serve(client_end)
    .await
    .unwrap()
}

/// The class MCP-ocs's default policy gives each of its names, written out by hand.
fn expected_class(name: &str) -> &'static str {
    match name {
        "knowledge_seed" | "memory_store_operational" | "oc_write_apply" | "oc_write_scale" => {
            "write"
        }
        "oc_write_restart" => "destructive",
        _ => "read",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_ocs_names_are_classified_as_the_default_policy_says_whatever_the_server_hints() {
    let Some(list) = wayline_testkit::fixture("guard/mcp-ocs-tools.txt") else {
        return;
    };
    let names: Vec<String> = std::fs::read_to_string(list)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert_eq!(names.len(), 24);
    let names_given: Vec<&str> = names.iter().map(String::as_str).collect();
    let url = serve_http(FakeOcs::new(&names_given)).await;

    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::default());
    // Audit mode: every call goes through and every decision is logged with its class.
    let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Audit)
        .audit(Arc::new(AuditLog::new(Box::new(Arc::clone(&sink)))));
    let mut config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir.path(),
    );
    config.prefix = true;
    let client = client_of(config).await;
    let listed = client.peer().list_all_tools().await.unwrap();
    assert_eq!(
        listed.len(),
        names.len() + 3,
        "the upstream's and the gateway's own"
    );
    for name in &names {
        let result = client
            .peer()
            .call_tool(CallToolRequestParams::new(format!("ocs__{name}")))
            .await
            .unwrap();
        assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    }
    let decided: BTreeMap<String, String> = sink
        .entries()
        .into_iter()
        .filter(|entry| entry.kind == "decision")
        .map(|entry| {
            (
                entry.detail["tool"].as_str().unwrap().to_owned(),
                entry.detail["class"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        decided.len(),
        names.len(),
        "decided on the servers' own names"
    );
    for name in &names {
        assert_eq!(decided[name], expected_class(name), "{name}");
    }
    // The same names, blocking, in a fresh session: gathering lets reads through and stops
    // the writes with the guard's words.
    let blocking = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
    let mut config = GatewayConfig::new(
        BTreeMap::from([(
            "ocs".to_owned(),
            McpServer::url(serve_http(FakeOcs::new(&names_given)).await),
        )]),
        blocking,
        dir.path(),
    );
    config.prefix = true;
    let client = client_of(config).await;
    let read = client
        .peer()
        .call_tool(CallToolRequestParams::new("ocs__oc_read_logs"))
        .await
        .unwrap();
    assert_ne!(read.is_error, Some(true));
    let write = client
        .peer()
        .call_tool(CallToolRequestParams::new("ocs__oc_write_restart"))
        .await
        .unwrap();
    assert_eq!(write.is_error, Some(true));
    let text = serde_json::to_string(&write.content).unwrap();
    assert!(text.contains("Blocked by the guard"), "{text}");

    // Guidance mode: the same write goes through, with the guard's warning appended.
    let guidance = Guard::new(Arc::new(Policy::default_policy()), Mode::Guidance);
    let url = serve_http(FakeOcs::new(&names_given)).await;
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guidance,
        dir.path(),
    );
    let client = client_of(config).await;
    let warned = client
        .peer()
        .call_tool(CallToolRequestParams::new("oc_write_restart"))
        .await
        .unwrap();
    assert_ne!(warned.is_error, Some(true), "{warned:?}");
    let text = serde_json::to_string(&warned.content).unwrap();
    assert!(text.contains("ok oc_write_restart"), "{text}");
    assert!(text.contains("Guard: guidance mode, would block"), "{text}");
}

/// Issue 31, item 12: the gateway gives the guard each call's domain (its `namespace`,
/// `resource` or `domain` argument), so jumping between areas is seen through it, as it is
/// for the engine's steps and `guard check --domain`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jumping_between_domains_is_seen_through_the_gateway() {
    let url = serve_http(FakeOcs::new(&["oc_get_pods"])).await;
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::default());
    let policy = Policy::from_yaml(
        "name: t\ninitial_state: looking\nstates:\n  looking:\n    description: Looking\n    allowed_classes: [read]\n\
         panic:\n  rapid_fire_count: 100\n  min_evidence_for_write: 0\n  early_states: []\n  forced_state: looking\n\
         \x20 domain_switches: 3\n  domain_window: 5\n",
        "t.yaml",
    )
    .unwrap();
    let guard = Guard::new(Arc::new(policy), Mode::Guidance)
        .audit(Arc::new(AuditLog::new(Box::new(Arc::clone(&sink)))));
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir.path(),
    );
    let client = client_of(config).await;
    let mut texts = Vec::new();
    for namespace in ["payments", "billing", "search"] {
        let mut call = CallToolRequestParams::new("oc_get_pods");
        call.arguments = Some(
            json!({"namespace": namespace})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let result = client.peer().call_tool(call).await.unwrap();
        texts.push(format!("{:?}", result.content));
    }
    assert!(!texts[1].contains("Guard:"), "{}", texts[1]);
    assert!(
        texts[2].contains("Guard:"),
        "the third area warns: {}",
        texts[2]
    );
    let logged = serde_json::to_string(
        &sink
            .entries()
            .iter()
            .map(|entry| &entry.detail)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(logged.contains("jumping_between_domains"), "{logged}");
}

/// Issue 31, item 15: each connection's session file goes with the connection (6,000
/// `initialize`s once left 6,013 files and the entries in memory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connections_session_goes_with_it() {
    let url = serve_http(FakeOcs::new(&["oc_get_pods"])).await;
    let dir = tempfile::tempdir().unwrap();
    let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir.path(),
    );
    let gateway = Gateway::connect(config).await.unwrap();
    let sessions = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("conn-"))
            .count()
    };
    for _ in 0..25 {
        let (server_end, client_end) = tokio::io::duplex(64 * 1024);
        let handler = gateway.handler().unwrap();
        let served = tokio::spawn(async move {
            let running = handler.serve(server_end).await.unwrap();
            let _ = running.waiting().await;
        });
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("test-agent", "1"),
        )
        .serve(client_end)
        .await
        .unwrap();
        client
            .peer()
            .call_tool(CallToolRequestParams::new("oc_get_pods"))
            .await
            .unwrap();
        assert_eq!(sessions(), 1, "the open connection's session is a file");
        client.cancel().await.unwrap();
        served.await.unwrap();
        // (Evidence waiting to be written holds the session a moment longer.)
        let waited = std::time::Instant::now();
        while sessions() > 0 && waited.elapsed() < std::time::Duration::from_secs(5) {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(sessions(), 0, "gone with its connection");
    }
    gateway.flush().unwrap();
}

/// Issue 32: the agent of the seed's decision record, behind the gateway — it writes first,
/// fires writes in a burst, tries to skip a phase, jumps between namespaces and asks for
/// break-glass. No blocked call reaches the server; every decision and every request to move
/// is in the audit log; the agent is told how long to wait and that it switched domains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panicking_agent_of_the_decision_record_is_held_at_the_gateway() {
    let server = FakeOcs::new(&["oc_read_get_pods", "oc_check_health", "oc_write_restart"]);
    let url = serve_http(server.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::default());
    let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking)
        .audit(Arc::new(AuditLog::new(Box::new(Arc::clone(&sink)))));
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir.path(),
    );
    let client = client_of(config).await;
    let call = |name: &str, namespace: &str| {
        let call = CallToolRequestParams::new(name.to_owned()).with_arguments(
            json!({"namespace": namespace})
                .as_object()
                .cloned()
                .unwrap(),
        );
        let peer = client.peer().clone();
        async move {
            let result = peer.call_tool(call).await.unwrap();
            (
                result.is_error == Some(true),
                serde_json::to_string(&result.content).unwrap(),
            )
        }
    };
    let mut made = 0;
    // It writes first, then fires two more writes at once, in two more namespaces.
    let mut blocked = Vec::new();
    for namespace in ["payments", "billing", "search"] {
        blocked.push(call("oc_write_restart", namespace).await);
        made += 1;
    }
    assert!(blocked.iter().all(|(error, _)| *error), "{blocked:?}");
    assert!(
        blocked[0].1.contains("Blocked by the guard"),
        "{}",
        blocked[0].1
    );
    let rapid = &blocked[2].1;
    assert!(rapid.contains("rapid_fire_commands"), "{rapid}");
    assert!(
        rapid.contains("before the next one"),
        "told how long to wait: {rapid}"
    );
    let own = |name: &str, arguments: serde_json::Value| {
        let call = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap());
        let peer = client.peer().clone();
        async move { peer.call_tool(call).await.unwrap() }
    };
    // It tries to skip to resolving.
    let skipped = own("workflow_advance", json!({"to": "resolving"})).await;
    assert_eq!(skipped.is_error, Some(true), "{skipped:?}");
    // Asking for the phase it is in answers the state, no error.
    let stay = own("workflow_advance", json!({"to": "gathering"})).await;
    assert_ne!(stay.is_error, Some(true), "{stay:?}");
    let stayed = stay.structured_content.unwrap();
    assert_eq!(stayed["state"], "gathering");
    assert_eq!(stayed["moved"], false);
    // It reads (evidence), then checks one namespace after another (no evidence).
    assert!(!call("oc_read_get_pods", "payments").await.0);
    made += 1;
    let mut checks = Vec::new();
    for namespace in ["payments", "billing", "search"] {
        checks.push(call("oc_check_health", namespace).await);
        made += 1;
    }
    assert!(checks.iter().all(|(error, _)| !error), "{checks:?}");
    assert!(!checks[1].1.contains("Guard:"), "{}", checks[1].1);
    assert!(
        checks[2].1.contains("Guard:"),
        "the third namespace without new evidence is warned: {}",
        checks[2].1
    );
    // It asks for break-glass; nobody approves, so the write stays blocked.
    let asked = own(
        "break_glass_request",
        json!({"reason": "prod is down", "tools": ["oc_write_restart"], "minutes": 5}),
    )
    .await;
    assert_ne!(asked.is_error, Some(true), "{asked:?}");
    assert!(call("oc_write_restart", "payments").await.0);
    made += 1;

    let entries = sink.entries();
    let decisions: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|entry| entry.kind == "decision")
        .map(|entry| &entry.detail)
        .collect();
    assert_eq!(decisions.len(), made, "every call is decided and audited");
    let allowed: Vec<&str> = decisions
        .iter()
        .filter(|detail| detail["decision"]["decision"] != "block")
        .map(|detail| detail["tool"].as_str().unwrap())
        .collect();
    // The server received exactly the calls the guard let through, and no blocked one.
    assert_eq!(server.received(), allowed);
    assert!(
        !server
            .received()
            .iter()
            .any(|name| name == "oc_write_restart")
    );
    let logged = serde_json::to_string(&decisions).unwrap();
    assert!(
        logged.matches("jumping_between_domains").count() >= 2,
        "the writes' jumps and the checks' are in the log: {logged}"
    );
    let kinds: Vec<&str> = entries.iter().map(|entry| entry.kind.as_str()).collect();
    assert!(kinds.contains(&"advance_refused"), "{kinds:?}");
    assert!(kinds.contains(&"advance_unchanged"), "{kinds:?}");
    assert!(kinds.contains(&"break_glass_requested"), "{kinds:?}");
}

/// A client that counts the tool-list changes it hears of.
#[derive(Debug, Clone, Default)]
struct Listener {
    changes: Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Issue 32, item 5: an upstream that says its tools changed is listed again, and the
/// gateway's clients are told; the new tool is decided and forwarded like the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_changed_tool_list_is_followed() {
    let server = FakeOcs::new(&["oc_grow"]);
    let url = serve_http(server.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Audit);
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir.path(),
    );
    let gateway = Gateway::connect(config).await.unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let handler = gateway.handler().unwrap();
    tokio::spawn(async move {
        let running = handler.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    let listener = Listener::default();
    let client = listener.clone().serve(client_end).await.unwrap();
    let names = || async {
        let tools = client.peer().list_all_tools().await.unwrap();
        tools
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!names().await.contains(&"oc_get_events".to_owned()));
    client
        .peer()
        .call_tool(CallToolRequestParams::new("oc_grow"))
        .await
        .unwrap();
    // The notification travels upstream → gateway → client; wait for it, boundedly.
    let asked = std::time::Instant::now();
    while listener.changes.load(std::sync::atomic::Ordering::Relaxed) == 0
        && asked.elapsed() < std::time::Duration::from_secs(10)
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        listener.changes.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert!(names().await.contains(&"oc_get_events".to_owned()));
    assert!(gateway.tool_names().contains(&"oc_get_events".to_owned()));
    let called = client
        .peer()
        .call_tool(CallToolRequestParams::new("oc_get_events"))
        .await
        .unwrap();
    assert_ne!(called.is_error, Some(true), "{called:?}");
    assert_eq!(server.received(), ["oc_grow", "oc_get_events"]);
}

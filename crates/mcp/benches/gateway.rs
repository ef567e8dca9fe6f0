//! What the gateway adds to a tool call (numbers and command in `docs/benchmarks.md`). A fake
//! upstream serves one read tool (`oc_read_logs`, which the default policy allows while
//! gathering and counts as evidence) over streamable HTTP on loopback; an rmcp client calls it:
//! - `direct`: straight to the upstream;
//! - `gateway/memory_audit`: through the gateway (an in-memory pipe to it), the guard
//!   deciding, the session written to disk after each decision and each result, the audit log
//!   in memory;
//! - `gateway/file_audit`: the same with the audit log a file (appended and synced per entry).
//!
//! Each measurement starts from a fresh session; the session grows by one decision per call.

use std::collections::BTreeMap;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ContentBlock,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
use wayline_core::McpServer;
use wayline_guard::audit::{AuditLog, MemorySink};
use wayline_guard::{Guard, Mode, Policy};
use wayline_mcp::{Gateway, GatewayConfig};

#[derive(Debug, Clone)]
struct Upstream;

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::json!({"type": "object"});
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "oc_read_logs",
            "logs",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text("2 pods crash-looping"),
        ])))
    }
}

async fn upstream_url() -> String {
    let service = StreamableHttpService::new(
        || Ok(Upstream),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/mcp")
}

async fn direct_client(url: &str) -> RunningService<RoleClient, ClientConfig> {
    // What `Upstream::connect` does before its first HTTP client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.to_owned());
    ClientConfig::default().serve(transport).await.unwrap()
}

async fn gateway_client(
    url: &str,
    audit: AuditLog,
    dir: &std::path::Path,
) -> RunningService<RoleClient, ClientConfig> {
    let guard =
        Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking).audit(Arc::new(audit));
    let config = GatewayConfig::new(
        BTreeMap::from([("ocs".to_owned(), McpServer::url(url))]),
        guard,
        dir,
    );
    let gateway = Gateway::connect(config).await.unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let handler = gateway.handler().unwrap();
    tokio::spawn(async move {
        let running = handler.serve(server_end).await.unwrap();
        let _ = running.waiting().await;
    });
    ClientConfig::default().serve(client_end).await.unwrap()
}

async fn call(client: &RunningService<RoleClient, ClientConfig>) {
    let result = client
        .peer()
        .call_tool(CallToolRequestParams::new("oc_read_logs"))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

fn gateway(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = runtime.block_on(upstream_url());
    let mut group = c.benchmark_group("gateway");
    group.sample_size(30);

    let direct = runtime.block_on(direct_client(&url));
    group.bench_function("direct", |b| b.to_async(&runtime).iter(|| call(&direct)));

    group.bench_function("gateway/memory_audit", |b| {
        b.iter_custom(|iterations| {
            let dir = tempfile::tempdir().unwrap();
            let audit = AuditLog::new(Box::new(Arc::new(MemorySink::default())));
            let client = runtime.block_on(gateway_client(&url, audit, dir.path()));
            let started = std::time::Instant::now();
            runtime.block_on(async {
                for _ in 0..iterations {
                    call(&client).await;
                }
            });
            started.elapsed()
        });
    });

    group.bench_function("gateway/file_audit", |b| {
        b.iter_custom(|iterations| {
            let dir = tempfile::tempdir().unwrap();
            let audit = AuditLog::file(dir.path().join("audit.jsonl")).unwrap();
            let client = runtime.block_on(gateway_client(&url, audit, dir.path()));
            let started = std::time::Instant::now();
            runtime.block_on(async {
                for _ in 0..iterations {
                    call(&client).await;
                }
            });
            started.elapsed()
        });
    });
    group.finish();
}

criterion_group!(benches, gateway);
criterion_main!(benches);

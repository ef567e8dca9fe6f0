//! An MCP server (the gateway, `mcp serve`) over streamable HTTP, at `/mcp`, on a loopback
//! address, behind `wayline-listen`'s gate: every request carries the bearer token (compared
//! in constant time), is sent to a host the server answers to, and comes from no web page
//! unless its origin is allowed (the MCP specification's rule for local servers); anything
//! else is refused before its body is read.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use wayline_listen::{Gate, plain_refusal};

use crate::Error;

/// Where and how an MCP server listens over HTTP.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bound listener (loopback: a gateway is not a public service).
    pub listener: TcpListener,
    /// The token clients send as `Authorization: Bearer TOKEN`.
    pub token: String,
    /// Host names it answers to besides localhost and IP addresses (a deployment's name).
    pub allowed_hosts: Vec<String>,
    /// Web origins whose pages may call it (none by default).
    pub allowed_origins: Vec<String>,
}

impl HttpOptions {
    /// Listen on `listener`, expecting `token`.
    pub fn new(listener: TcpListener, token: impl Into<String>) -> Self {
        HttpOptions {
            listener,
            token: token.into(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }

    /// Answers requests sent to `host` too.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Lets pages at `origin` call it.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }
}

/// Serves what `handler` makes (a handler per connection, or per request on 2026-07-28)
/// until `shutdown` completes.
pub(crate) async fn serve<S>(
    handler: impl Fn() -> Result<S, Error> + Send + Sync + 'static,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error>
where
    S: rmcp::ServerHandler,
{
    let address = options
        .listener
        .local_addr()
        .map(|address| address.to_string())
        .unwrap_or_else(|_| "the listener".into());
    let factory = move || handler().map_err(|error| std::io::Error::other(error.to_string()));
    // The gate below has checked the host; rmcp's own check would refuse the names it allowed.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    let gate = Gate::bearer(&options.token)
        .allow_hosts(&options.allowed_hosts)
        .allow_origins(&options.allowed_origins);
    let app = gate.layer(
        axum::Router::new().nest_service("/mcp", service),
        plain_refusal,
    );
    axum::serve(options.listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Serve { address, source })
}

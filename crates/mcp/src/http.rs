//! An MCP server (the gateway, `mcp serve`) over streamable HTTP, at `/mcp`, on a loopback
//! address, behind `wayline-listen`'s gate: every request carries a bearer token (the static
//! one, compared in constant time, or one the OAuth authorization server vouches for: see
//! `oauth`), is sent to a host the server answers to, and comes from no web page unless its
//! origin is allowed (the MCP specification's rule for local servers); anything else is
//! refused before its body is read.

use std::fmt;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use wayline_listen::{Gate, plain_refusal};

use crate::Error;
use crate::oauth::{OAuthOptions, Protected};

/// Where and how an MCP server listens over HTTP.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bound listener (loopback: a gateway is not a public service).
    pub listener: TcpListener,
    /// Which bearer tokens let a request in.
    pub access: Access,
    /// Host names it answers to besides localhost and IP addresses (a deployment's name).
    pub allowed_hosts: Vec<String>,
    /// Web origins whose pages may call it (none by default).
    pub allowed_origins: Vec<String>,
}

/// Which bearer tokens let a request in.
#[derive(Clone)]
#[non_exhaustive]
pub enum Access {
    /// This one token (`Authorization: Bearer TOKEN`): for use on this machine.
    Token(String),
    /// Tokens an OAuth authorization server issued for this server.
    OAuth(OAuthOptions),
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::Token(_) => f.write_str("Token(<redacted>)"),
            Access::OAuth(options) => f.debug_tuple("OAuth").field(options).finish(),
        }
    }
}

impl HttpOptions {
    /// Listen on `listener`, expecting `token`.
    pub fn new(listener: TcpListener, token: impl Into<String>) -> Self {
        HttpOptions::with_access(listener, Access::Token(token.into()))
    }

    /// Listen on `listener`, letting in requests whose tokens `access` accepts.
    pub fn with_access(listener: TcpListener, access: Access) -> Self {
        HttpOptions {
            listener,
            access,
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
    let mut routes = axum::Router::new().nest_service("/mcp", service);
    let gate = match options.access {
        Access::Token(token) => Gate::bearer(token),
        Access::OAuth(oauth) => {
            let protected = Protected::prepare(oauth).await?;
            let mut gate =
                Gate::verified(protected.verifier).resource_metadata(protected.metadata_url);
            let metadata = axum::Json(protected.metadata);
            for path in protected.metadata_paths {
                let metadata = metadata.clone();
                routes = routes.route(
                    &path,
                    axum::routing::get(move || std::future::ready(metadata)),
                );
                gate = gate.open_path(path);
            }
            gate
        }
    };
    let gate = gate
        .allow_hosts(&options.allowed_hosts)
        .allow_origins(&options.allowed_origins);
    let app = gate.layer(routes, plain_refusal);
    axum::serve(options.listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Serve { address, source })
}

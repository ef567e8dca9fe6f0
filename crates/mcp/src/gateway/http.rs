//! The gateway over streamable HTTP, at `/mcp`, on a loopback address, every request carrying
//! the bearer token (compared in constant time); anything else is answered 401.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::Gateway;
use crate::Error;

/// Where and how the HTTP gateway listens.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bound listener (loopback: a gateway is not a public service).
    pub listener: TcpListener,
    /// The token clients send as `Authorization: Bearer TOKEN`.
    pub token: String,
}

impl HttpOptions {
    /// Listen on `listener`, expecting `token`.
    pub fn new(listener: TcpListener, token: impl Into<String>) -> Self {
        HttpOptions {
            listener,
            token: token.into(),
        }
    }
}

pub(super) async fn serve(
    gateway: Gateway,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let address = options
        .listener
        .local_addr()
        .map(|address| address.to_string())
        .unwrap_or_else(|_| "the listener".into());
    let factory = move || {
        gateway
            .handler()
            .map_err(|error| std::io::Error::other(error.to_string()))
    };
    let service = StreamableHttpService::new(
        factory,
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let token: Arc<[u8]> = Arc::from(format!("Bearer {}", options.token).into_bytes());
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(token, bearer));
    axum::serve(options.listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Serve { address, source })
}

/// Lets a request through only with the expected `Authorization` header.
async fn bearer(State(expected): State<Arc<[u8]>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if constant_time_eq(given, &expected) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
            "a bearer token is required (Authorization: Bearer TOKEN)",
        )
            .into_response()
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

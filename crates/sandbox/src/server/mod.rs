//! A Bay-compatible HTTP server over any [`SandboxProvider`] (usually the
//! [`LocalProvider`](crate::LocalProvider)), so the [`BayClient`](crate::BayClient) — and any
//! Bay client — can be used and tested over real HTTP on loopback. `wayline sandbox serve`
//! runs it.
//!
//! What it speaks is Bay 0.3.1's HTTP API: the routes under `/v1`, `GET /health`, Bearer auth,
//! `X-Request-Id` echoed, Bay's error envelope, FastAPI's `422 {"detail": [...]}` for a body or
//! query that does not parse, `201` on create and `204` on delete. Every caller is the owner
//! `default` (`X-Owner` is ignored).
//!
//! Before a handler runs — and so before a body is read — `wayline-listen`'s gate checks the
//! `Host` (localhost, an IP address, or a name allowed: a DNS-rebinding page names its own),
//! refuses a web page's request (`Origin`) unless its origin is allowed, and requires the token
//! unless the server was opened to anyone on loopback on purpose ([`ServeOptions::anonymous`]).
//! A JSON body must say it is JSON (`Content-Type: application/json`), so a page's
//! `text/plain` "simple request" is not read as one; bodies are limited per route (a file's
//! upload or write to [`ServeOptions::max_body_bytes`], anything else to
//! [`ServeOptions::max_json_bytes`]). A handler answers a `Reply`: what it made, or a
//! `Failure`; one layer around them all puts the request's id on every answer and writes a
//! failure out in Bay's envelope, which names it.
//!
//! One module a group of routes: `sandboxes.rs` (health, profiles, sandboxes, executions),
//! `files.rs`, `history.rs`, `admin.rs` (cargos and GC), `skills.rs`; `reply.rs` is how every
//! one of them answers and reads its input. This file holds the options, the router and
//! [`BayServer`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use wayline_listen::Gate;

use crate::provider::SandboxProvider;

mod admin;
mod files;
mod history;
mod reply;
mod sandboxes;
mod skills;

use admin::{create_cargo, delete_cargo, gc_status, get_cargo, list_cargos, run_gc};
use files::{delete_file, download, list_files, read_file, upload, write_file};
use history::{annotate, execution, history, history_last};
use reply::{not_found_route, refusal, request_ids};
use sandboxes::{
    create, delete_one, extend_ttl, get_one, health, keepalive, list, profiles, python_exec,
    shell_exec, stop,
};

/// The version `/health` reports: Bay's, whose API this server speaks.
pub const BAY_VERSION: &str = "0.3.1";

/// How the server is set up.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The Bearer token required on `/v1` routes (but `/v1/profiles`).
    pub token: Option<String>,
    /// Lets anyone who can connect in without a token: only on a loopback address, and only
    /// when asked for ([`ServeOptions::anonymous`]). Without a token and without this, the
    /// server does not start, and its routes refuse every `/v1` request.
    pub anonymous: bool,
    /// The largest file a request may carry (an upload, a file written, a skill payload), in
    /// bytes: 128 MiB.
    pub max_body_bytes: usize,
    /// The largest body of any other request (code to run, a sandbox to create), in bytes:
    /// 4 MiB.
    pub max_json_bytes: usize,
    /// Host names it answers to besides localhost and IP addresses (a deployment's name).
    pub allowed_hosts: Vec<String>,
    /// Web origins whose pages may call it (none by default).
    pub allowed_origins: Vec<String>,
    /// Said by `/health` as `isolation` (Bay has no such field; clients ignore it).
    pub isolation: Option<String>,
    /// Said by `/health` as `memory`: what a profile's memory limit holds to on this host.
    pub memory: Option<String>,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("anonymous", &self.anonymous)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_json_bytes", &self.max_json_bytes)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("isolation", &self.isolation)
            .field("memory", &self.memory)
            .finish()
    }
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            token: None,
            anonymous: false,
            max_body_bytes: 128 * 1024 * 1024,
            max_json_bytes: 4 * 1024 * 1024,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            isolation: None,
            memory: None,
        }
    }
}

impl ServeOptions {
    /// Requires `token`.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Lets anyone who can connect in without a token (a server on loopback only: anyone on
    /// this machine).
    pub fn anonymous(mut self) -> Self {
        self.anonymous = true;
        self
    }

    /// Answers requests sent to `host` too (besides localhost and IP addresses).
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Lets pages at `origin` (`https://console.example.com`) call it.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Reports `isolation` on `/health`.
    pub fn isolation(mut self, isolation: impl Into<String>) -> Self {
        self.isolation = Some(isolation.into());
        self
    }

    /// Reports `memory` (what a profile's memory limit holds to) on `/health`.
    pub fn memory(mut self, memory: impl Into<String>) -> Self {
        self.memory = Some(memory.into());
        self
    }

    /// The gate in front of the routes these options ask for.
    fn gate(&self) -> Gate {
        match (&self.token, self.anonymous) {
            (Some(token), _) => Gate::bearer(token),
            (None, true) => Gate::anonymous(),
            // Neither: nothing gets in (no token anyone could know).
            (None, false) => Gate::bearer(format!("{:032x}", fastrand::u128(..))),
        }
        .open_path("/health")
        .open_path("/v1/profiles")
        .allow_hosts(&self.allowed_hosts)
        .allow_origins(&self.allowed_origins)
    }
}

struct Api {
    provider: Arc<dyn SandboxProvider>,
    options: ServeOptions,
}

type Shared = Arc<Api>;

/// The routes, over `provider`, behind the gate `options` ask for: requests refused there are
/// answered in Bay's envelope before any handler runs or any body is read.
pub fn router(provider: Arc<dyn SandboxProvider>, options: ServeOptions) -> Router {
    let (max_body, max_json) = (options.max_body_bytes, options.max_json_bytes);
    let gate = options.gate();
    let api: Shared = Arc::new(Api { provider, options });
    // Files (uploads, writes, skill payloads) may be large; anything else is small.
    let files = Router::new()
        .route(
            "/v1/sandboxes/{id}/filesystem/files",
            get(read_file).put(write_file).delete(delete_file),
        )
        .route("/v1/sandboxes/{id}/filesystem/upload", post(upload))
        .merge(skills::routes())
        .layer(DefaultBodyLimit::max(max_body));
    let control = Router::new()
        .route("/health", get(health))
        .route("/v1/profiles", get(profiles))
        .route("/v1/sandboxes", post(create).get(list))
        .route("/v1/cargos", post(create_cargo).get(list_cargos))
        .route("/v1/admin/gc/run", post(run_gc))
        .route("/v1/admin/gc/status", get(gc_status))
        .route("/v1/cargos/{id}", get(get_cargo).delete(delete_cargo))
        .route("/v1/sandboxes/{id}", get(get_one).delete(delete_one))
        .route("/v1/sandboxes/{id}/extend_ttl", post(extend_ttl))
        .route("/v1/sandboxes/{id}/keepalive", post(keepalive))
        .route("/v1/sandboxes/{id}/stop", post(stop))
        .route("/v1/sandboxes/{id}/python/exec", post(python_exec))
        .route("/v1/sandboxes/{id}/shell/exec", post(shell_exec))
        .route("/v1/sandboxes/{id}/filesystem/directories", get(list_files))
        .route("/v1/sandboxes/{id}/filesystem/download", get(download))
        .route("/v1/sandboxes/{id}/history", get(history))
        .route("/v1/sandboxes/{id}/history/last", get(history_last))
        .route(
            "/v1/sandboxes/{id}/history/{execution}",
            get(execution).patch(annotate),
        )
        .fallback(not_found_route)
        .layer(DefaultBodyLimit::max(max_json));
    let routes = files
        .merge(control)
        .layer(axum::middleware::from_fn(request_ids));
    gate.layer(routes, refusal).with_state(api)
}

/// A server running in this process (on a background task) until shut down or dropped.
#[derive(Debug)]
pub struct BayServer {
    address: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl BayServer {
    /// Serves `provider` on `listener` (bind `127.0.0.1:0` for a free loopback port).
    /// Without a token, the options must say [`ServeOptions::anonymous`] and the listener be on
    /// loopback; otherwise it is an error (`InvalidInput`) and nothing is served.
    pub fn start(
        listener: TcpListener,
        provider: Arc<dyn SandboxProvider>,
        options: ServeOptions,
    ) -> std::io::Result<BayServer> {
        let address = listener.local_addr()?;
        if options.token.is_none() {
            let refuse = |why: &str| {
                Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    why.to_owned(),
                ))
            };
            if !options.anonymous {
                return refuse(
                    "the server needs a token (ServeOptions::token), or to be opened to anyone on loopback on purpose (ServeOptions::anonymous)",
                );
            }
            if !address.ip().is_loopback() {
                return refuse("a server without a token listens on a loopback address only");
            }
        }
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = router(provider, options);
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(BayServer {
            address,
            shutdown: Some(shutdown),
            task: Some(task),
        })
    }

    /// Binds `127.0.0.1:0` and serves `provider` there.
    pub async fn loopback(
        provider: Arc<dyn SandboxProvider>,
        options: ServeOptions,
    ) -> std::io::Result<BayServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        BayServer::start(listener, provider, options)
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops accepting, lets requests in progress finish, and waits for the server to end.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|error| {
                Err(std::io::Error::other(format!(
                    "the server task failed: {error}"
                )))
            }),
            None => Ok(()),
        }
    }

    /// Runs until the server ends (it ends on its own only on an error).
    pub async fn wait(mut self) -> std::io::Result<()> {
        match self.task.take() {
            Some(task) => task.await.unwrap_or_else(|error| {
                Err(std::io::Error::other(format!(
                    "the server task failed: {error}"
                )))
            }),
            None => Ok(()),
        }
    }
}

impl Drop for BayServer {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

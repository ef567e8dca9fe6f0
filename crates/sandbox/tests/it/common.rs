//! Building the two targets every scenario runs against.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use tempfile::TempDir;
use wayline_core::transport::{Header, HttpRequest, HttpResponse, Transport};
use wayline_executor::ReqwestTransport;
use wayline_sandbox::clock::ManualClock;
use wayline_sandbox::local::IsolationMode;
use wayline_sandbox::profile::Profiles;
use wayline_sandbox::server::{BayServer, ServeOptions};
use wayline_sandbox::{BayClient, BayConfig, LocalConfig, LocalProvider, SandboxProvider};

/// The API token the loopback server requires.
pub(crate) const TOKEN: &str = "sk-test-0123456789";

/// Profiles for the tests: Bay's e2e set, small.
pub(crate) const PROFILES: &str = "
profiles:
  - id: python-default
    capabilities: [filesystem, shell, python]
    env: {BAY_TEST_ENV_VAR: test-value-12345}
  - id: python-only-test
    capabilities: [python]
  - id: short-idle-test
    capabilities: [filesystem, shell, python]
    idle_timeout: 2
  - id: small-files-test
    capabilities: [filesystem]
    max_file_mb: 1
  - id: oom-test
    capabilities: [filesystem, shell, python]
    resources: {memory: 128m, cpus: 0.5}
";

/// Where a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// The local provider, called directly.
    Local,
    /// `BayClient` → HTTP → the loopback server → the local provider.
    Http,
    /// The local provider, called directly, its code inside bubblewrap.
    Bubblewrap,
}

/// True when bubblewrap runs here (the local provider's probe passes); says so when it does
/// not. `.ci/run` installs it.
pub(crate) fn bubblewrap_available() -> bool {
    let works =
        wayline_sandbox::local::isolation::Isolation::choose(IsolationMode::Bubblewrap).is_ok();
    if !works {
        eprintln!("skipped: bubblewrap (`bwrap`) does not run here; .ci/run installs it");
    }
    works
}

/// A provider under test and what keeps it alive.
pub(crate) struct Target {
    pub(crate) provider: Arc<dyn SandboxProvider>,
    pub(crate) clock: ManualClock,
    pub(crate) server: Option<BayServer>,
    pub(crate) dir: TempDir,
}

pub(crate) fn start_time() -> DateTime<Utc> {
    "2026-11-23T10:00:00Z".parse().unwrap()
}

/// True when `python3` runs here (the local sandbox needs it); says so when it does not.
pub(crate) fn python_available() -> bool {
    wayline_testkit::python3_available("a test of the local sandbox")
}

pub(crate) fn local_provider(dir: &std::path::Path, clock: &ManualClock) -> LocalProvider {
    isolated_provider(dir, clock, IsolationMode::None)
}

fn isolated_provider(
    dir: &std::path::Path,
    clock: &ManualClock,
    isolation: IsolationMode,
) -> LocalProvider {
    LocalProvider::open(
        LocalConfig::new(dir)
            .profiles(Profiles::from_yaml(PROFILES, "test profiles").unwrap())
            .isolation(isolation)
            .clock(Arc::new(clock.clone())),
    )
    .unwrap()
}

pub(crate) async fn target(via: Via) -> Target {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    let isolation = if via == Via::Bubblewrap {
        IsolationMode::Bubblewrap
    } else {
        IsolationMode::None
    };
    let local = isolated_provider(dir.path(), &clock, isolation);
    match via {
        Via::Local | Via::Bubblewrap => Target {
            provider: Arc::new(local.clone()),
            clock,
            server: None,
            dir,
        },
        Via::Http => {
            let server = BayServer::loopback(
                Arc::new(local.clone()),
                ServeOptions::default().token(TOKEN),
            )
            .await
            .unwrap();
            let client = client_for(&server.url());
            Target {
                provider: Arc::new(client),
                clock,
                server: Some(server),
                dir,
            }
        }
    }
}

pub(crate) fn client_for(url: &str) -> BayClient {
    let transport = ReqwestTransport::new().unwrap();
    BayClient::new(
        BayConfig::new(url).token(TOKEN).retries(
            3,
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(5),
        ),
        Arc::new(transport),
    )
}

/// Raw HTTP to the loopback server (not through `BayClient`).
pub(crate) struct Raw {
    pub(crate) base: String,
    pub(crate) transport: ReqwestTransport,
}

impl Raw {
    /// Sends a request with `X-Request-Id: req-test-1`, and `token` when given.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> HttpResponse {
        let mut request = HttpRequest::new(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request.headers.push(Header::sensitive(
                "Authorization",
                format!("Bearer {token}"),
            ));
        }
        if let Some(body) = body {
            request
                .headers
                .push(Header::new("Content-Type", "application/json"));
            request.body = Some(body.to_string().into_bytes());
        }
        request
            .headers
            .push(Header::new("X-Request-Id", "req-test-1"));
        self.transport.send(request).await.unwrap()
    }
}

/// A response body as JSON (`null` when it is not).
pub(crate) fn json_of(response: &HttpResponse) -> Value {
    serde_json::from_slice(&response.body).unwrap_or(Value::Null)
}

impl Target {
    /// Raw HTTP to this target's server (an `Http` target's).
    pub(crate) fn raw(&self) -> Raw {
        Raw {
            base: self
                .server
                .as_ref()
                .expect("a raw client needs a target over HTTP")
                .url(),
            transport: ReqwestTransport::new().unwrap(),
        }
    }
}

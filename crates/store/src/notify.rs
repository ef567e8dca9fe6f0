//! Notifiers for finished runs: [`WebhookNotifier`] (POST JSON, retried), [`ConsoleNotifier`],
//! and [`Notifications`], which decides which runs are worth a notice and tells every notifier.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use wayline_core::{
    HttpRequest, Notifier, NotifyError, NotifyErrorKind, Run, RunNotice, RunStatus, Transport,
};

/// Posts each notice as JSON to a URL. Connection failures, timeouts, 429 and 5xx answers are
/// retried (3 attempts by default, waiting 0.5 s then 1 s); any other non-2xx answer is final.
///
/// Webhook URLs often carry their credential in the path (`/services/T0/B0/secret`), so errors
/// and `Debug` show only the scheme and host.
#[derive(Clone)]
pub struct WebhookNotifier {
    url: String,
    origin: String,
    transport: Arc<dyn Transport>,
    attempts: u32,
    first_wait: Duration,
}

impl WebhookNotifier {
    /// Posts to `url` through `transport` (the engine's HTTP transport, or a mock in tests).
    pub fn new(url: impl Into<String>, transport: Arc<dyn Transport>) -> Self {
        let url = url.into();
        WebhookNotifier {
            origin: origin(&url),
            url,
            transport,
            attempts: 3,
            first_wait: Duration::from_millis(500),
        }
    }

    /// `text` with the URL replaced by its origin (HTTP clients put the URL in their errors).
    fn scrub(&self, text: &str) -> String {
        let text = text.replace(self.url.trim(), &self.origin);
        // A client may print the URL normalised (the scheme and host lower-cased): the path,
        // where the credential usually is, is removed on its own too.
        let rest = self
            .url
            .trim()
            .split_once("://")
            .map_or("", |(_, rest)| rest);
        let path_at = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let mut text = match &rest[path_at..] {
            "" | "/" => text,
            path => text.replace(path, "/…"),
        };
        // And so is the user info, if the URL has any.
        if let Some((user_info, _)) = rest[..path_at].rsplit_once('@') {
            text = text.replace(&format!("{user_info}@"), "");
        }
        text
    }

    /// Tries at most `attempts` times (at least once), waiting `first_wait`, then twice that...
    #[must_use]
    pub fn retries(mut self, attempts: u32, first_wait: Duration) -> Self {
        self.attempts = attempts.max(1);
        self.first_wait = first_wait;
        self
    }
}

impl std::fmt::Debug for WebhookNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookNotifier")
            .field("origin", &self.origin)
            .field("attempts", &self.attempts)
            .field("first_wait", &self.first_wait)
            .finish_non_exhaustive()
    }
}

/// The scheme and host of `url` (user info, path, query and fragment dropped): what may be
/// shown of a URL that can hold a credential.
pub fn origin(url: &str) -> String {
    let (scheme, rest) = url.trim().split_once("://").unwrap_or(("", url.trim()));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if scheme.is_empty() {
        format!("{host}/…")
    } else {
        format!("{scheme}://{host}/…")
    }
}

#[async_trait::async_trait]
impl Notifier for WebhookNotifier {
    async fn notify(&self, notice: &RunNotice) -> Result<(), NotifyError> {
        let body = serde_json::to_vec(notice).map_err(|error| {
            NotifyError::new(
                NotifyErrorKind::Local,
                format!("cannot encode the notice: {error}"),
            )
        })?;
        let mut request = HttpRequest::new("POST", self.url.clone());
        request.headers.push(wayline_core::Header {
            name: "content-type".into(),
            value: "application/json".into(),
            sensitive: false,
        });
        request.body = Some(body);
        request.timeout = Some(Duration::from_secs(10));
        let mut wait = self.first_wait;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let why = match self.transport.send(request.clone()).await {
                Ok(response) if (200..300).contains(&response.status) => return Ok(()),
                Ok(response) if response.status == 429 || response.status >= 500 => {
                    format!("HTTP {}", response.status)
                }
                Ok(response) => {
                    return Err(NotifyError::new(
                        NotifyErrorKind::Refused,
                        format!("webhook {} answered HTTP {}", self.origin, response.status),
                    ));
                }
                Err(error) if error.kind().is_transient() => self.scrub(&error.to_string()),
                Err(error) => {
                    return Err(NotifyError::new(
                        NotifyErrorKind::Unavailable,
                        format!(
                            "webhook {}: {}",
                            self.origin,
                            self.scrub(&error.to_string())
                        ),
                    ));
                }
            };
            if attempt >= self.attempts {
                return Err(NotifyError::new(
                    NotifyErrorKind::Unavailable,
                    format!(
                        "webhook {} failed after {attempt} attempts: {why}",
                        self.origin
                    ),
                ));
            }
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }
}

/// Prints each notice's headline as one line on standard output, or on standard error when
/// standard output carries something a program reads (a JSON report).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsoleNotifier {
    stderr: bool,
}

impl ConsoleNotifier {
    /// Notices on standard output.
    pub fn stdout() -> Self {
        ConsoleNotifier { stderr: false }
    }

    /// Notices on standard error.
    pub fn stderr() -> Self {
        ConsoleNotifier { stderr: true }
    }
}

#[async_trait::async_trait]
impl Notifier for ConsoleNotifier {
    async fn notify(&self, notice: &RunNotice) -> Result<(), NotifyError> {
        let line = format!("notice: {}", notice.headline());
        let written = if self.stderr {
            writeln!(std::io::stderr().lock(), "{line}")
        } else {
            writeln!(std::io::stdout().lock(), "{line}")
        };
        written.map_err(|error| {
            NotifyError::new(
                NotifyErrorKind::Local,
                format!("cannot write the notice: {error}"),
            )
        })
    }
}

/// Which runs are announced, and to whom: failed (and cancelled) runs always, successful ones
/// when asked.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    notifiers: Vec<Arc<dyn Notifier>>,
    on_success: bool,
}

impl Notifications {
    /// Nobody to tell yet.
    pub fn new() -> Self {
        Notifications::default()
    }

    /// Adds a notifier.
    #[must_use]
    pub fn to(mut self, notifier: Arc<dyn Notifier>) -> Self {
        self.notifiers.push(notifier);
        self
    }

    /// Announces successful runs too.
    #[must_use]
    pub fn on_success(mut self, on_success: bool) -> Self {
        self.on_success = on_success;
        self
    }

    /// True when there is nobody to tell.
    pub fn is_empty(&self) -> bool {
        self.notifiers.is_empty()
    }

    /// Tells every notifier about `run` if it deserves a notice; returns what could not be
    /// delivered (the run itself is never affected).
    pub async fn run_finished(&self, run: &Run) -> Vec<NotifyError> {
        if run.status == RunStatus::Running
            || (run.status == RunStatus::Success && !self.on_success)
        {
            return Vec::new();
        }
        let notice = RunNotice::of(run);
        let mut failures = Vec::new();
        for notifier in &self.notifiers {
            if let Err(error) = notifier.notify(&notice).await {
                failures.push(error);
            }
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use wayline_core::{HttpResponse, TransportError, TransportErrorKind};

    use super::*;

    /// Answers with the scripted statuses in turn and keeps the bodies it was sent.
    #[derive(Debug)]
    struct Script {
        statuses: Mutex<Vec<Result<u16, TransportErrorKind>>>,
        bodies: Mutex<Vec<serde_json::Value>>,
    }

    #[async_trait::async_trait]
    impl Transport for Script {
        async fn send(
            &self,
            request: HttpRequest,
        ) -> Result<wayline_core::HttpResponse, TransportError> {
            let body = serde_json::from_slice(request.body.as_deref().unwrap_or_default()).unwrap();
            self.bodies.lock().unwrap().push(body);
            match self.statuses.lock().unwrap().remove(0) {
                Ok(status) => Ok(HttpResponse::new(status, "")),
                // As HTTP clients do, the error names the URL, here with the host upper-cased.
                Err(kind) => Err(TransportError::new(
                    kind,
                    format!(
                        "error sending request for url ({})",
                        request.url.replace("hooks.test", "HOOKS.TEST")
                    ),
                )),
            }
        }
    }

    fn script(statuses: Vec<Result<u16, TransportErrorKind>>) -> Arc<Script> {
        Arc::new(Script {
            statuses: Mutex::new(statuses),
            bodies: Mutex::new(Vec::new()),
        })
    }

    fn failed_run() -> Run {
        let mut run = Run::new("r1", "w");
        run.status = RunStatus::Failed;
        run
    }

    #[tokio::test(start_paused = true)]
    async fn a_webhook_is_retried_on_transient_failures_then_delivered() {
        let transport = script(vec![Err(TransportErrorKind::Connect), Ok(503), Ok(204)]);
        let notifications = Notifications::new().to(Arc::new(WebhookNotifier::new(
            "http://hooks.test/wayline",
            transport.clone(),
        )));
        assert!(notifications.run_finished(&failed_run()).await.is_empty());
        let bodies = transport.bodies.lock().unwrap();
        assert_eq!(bodies.len(), 3);
        assert_eq!(bodies[2]["kind"], "run_failed");
        assert_eq!(bodies[2]["run"]["id"], "r1");
    }

    #[tokio::test(start_paused = true)]
    async fn a_webhook_gives_up_with_the_reason() {
        let transport = script(vec![Ok(500), Ok(500), Ok(500)]);
        let hook = WebhookNotifier::new("http://hooks.test/x", transport.clone());
        let failures = Notifications::new()
            .to(Arc::new(hook))
            .run_finished(&failed_run())
            .await;
        assert_eq!(
            failures,
            [NotifyError::new(
                NotifyErrorKind::Unavailable,
                "webhook http://hooks.test/… failed after 3 attempts: HTTP 500"
            )]
        );
        let refused = script(vec![Ok(404)]);
        let hook = WebhookNotifier::new("http://hooks.test/y", refused.clone());
        let failures = Notifications::new()
            .to(Arc::new(hook))
            .run_finished(&failed_run())
            .await;
        assert_eq!(
            failures[0],
            NotifyError::new(
                NotifyErrorKind::Refused,
                "webhook http://hooks.test/… answered HTTP 404"
            )
        );
        assert_eq!(
            refused.bodies.lock().unwrap().len(),
            1,
            "a 404 is not retried"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_credential_in_a_webhook_url_is_never_shown() {
        let url = "https://bot:pw@hooks.test/services/T0/B0/s3cret?token=t0k";
        assert_eq!(origin(url), "https://hooks.test/…");
        assert_eq!(origin("hooks.test/s3cret"), "hooks.test/…");
        let transport = script(vec![Err(TransportErrorKind::InvalidRequest)]);
        let hook = WebhookNotifier::new(url, transport);
        let debug = format!("{hook:?}");
        let failures = Notifications::new()
            .to(Arc::new(hook))
            .run_finished(&failed_run())
            .await;
        let shown = format!("{debug} {}", failures[0]);
        for secret in ["s3cret", "t0k", "pw"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("hooks.test/…"), "{shown}");
    }

    #[tokio::test]
    async fn successful_runs_are_announced_only_when_asked() {
        let transport = script(vec![Ok(200)]);
        let hook: Arc<dyn Notifier> =
            Arc::new(WebhookNotifier::new("http://h.test", transport.clone()));
        let mut run = failed_run();
        run.status = RunStatus::Success;
        Notifications::new()
            .to(hook.clone())
            .run_finished(&run)
            .await;
        assert!(transport.bodies.lock().unwrap().is_empty());
        Notifications::new()
            .to(hook)
            .on_success(true)
            .run_finished(&run)
            .await;
        assert_eq!(transport.bodies.lock().unwrap()[0]["kind"], "run_succeeded");
    }
}

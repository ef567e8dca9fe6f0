//! [`BayClient`]: a [`SandboxProvider`] that talks to a Bay deployment (or to
//! `wayline sandbox serve`) over HTTP, through the core [`Transport`], wire-compatible with
//! Bay 0.3.1.
//!
//! It behaves as Bay's own Python SDK does where the wire leaves room:
//!
//! - configuration from `BAY_ENDPOINT`, `BAY_TOKEN`, `BAY_TIMEOUT` (seconds) and
//!   `BAY_MAX_RETRIES` ([`BayConfig::from_env`]);
//! - retries on transport failures, 429 and 5xx, for GET, PUT, DELETE, uploads, and POSTs that
//!   carry an `Idempotency-Key` — never for exec, stop or keepalive — waiting
//!   `min(0.2 s × 2^attempt, 1.5 s)` between attempts;
//! - an exec's HTTP timeout is its own timeout plus 10 s;
//! - errors: Bay's envelope, FastAPI's `422 {"detail": [...]}` and bodies that are not JSON
//!   (`details.raw_response_snippet`, at most 500 characters) all become a [`SandboxError`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wayline_core::transport::{Header, HttpRequest, HttpResponse, Transport, TransportErrorKind};

use crate::error::{ErrorCode, SandboxError};
use crate::model::{FileEntry, PythonResult, SandboxInfo, ShellResult};
use crate::provider::{
    Annotation, Cargo, CargoPage, CargoQuery, CreateCargo, CreateSandbox, GcRun, GcStatus,
    HistoryEntry, HistoryPage, HistoryQuery, ListQuery, ProfileInfo, PythonExec, SandboxPage,
    SandboxProvider, SandboxResult, ShellExec, Uploaded,
};
use crate::skills::{
    CandidateQuery, Deleted, Evaluation, NewCandidate, NewPayload, PayloadRef, Promotion,
    ReleaseHealth, ReleaseQuery, SkillCandidate, SkillEvaluation, SkillLifecycle, SkillPage,
    SkillPayload, SkillRelease,
};

/// Where a Bay is and how to talk to it.
#[derive(Clone)]
#[non_exhaustive]
pub struct BayConfig {
    /// The base URL (`http://127.0.0.1:8114`), without `/v1`.
    pub endpoint: String,
    /// The API key, sent as `Authorization: Bearer`; `None` for an anonymous server.
    pub token: Option<String>,
    /// The HTTP timeout of calls other than exec (30 s).
    pub timeout: Duration,
    /// Retries after the first attempt (3).
    pub max_retries: u32,
    /// The first wait between attempts (200 ms), doubling up to [`retry_cap`](Self::retry_cap).
    pub retry_base: Duration,
    /// The longest wait between attempts (1.5 s).
    pub retry_cap: Duration,
}

impl fmt::Debug for BayConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BayConfig")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl BayConfig {
    /// A Bay at `endpoint` with the SDK's defaults and no token.
    pub fn new(endpoint: impl Into<String>) -> Self {
        BayConfig {
            endpoint: endpoint.into().trim_end_matches('/').to_owned(),
            token: None,
            timeout: Duration::from_secs(30),
            max_retries: 3,
            retry_base: Duration::from_millis(200),
            retry_cap: Duration::from_millis(1_500),
        }
    }

    /// Sends `token` as the Bearer API key.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// At most `retries` retries, waiting from `base` doubling up to `cap`.
    pub fn retries(mut self, retries: u32, base: Duration, cap: Duration) -> Self {
        self.max_retries = retries;
        self.retry_base = base;
        self.retry_cap = cap;
        self
    }

    /// From the environment, as the SDK reads it: `BAY_ENDPOINT` (required), `BAY_TOKEN`,
    /// `BAY_TIMEOUT` (seconds), `BAY_MAX_RETRIES`.
    pub fn from_env() -> SandboxResult<BayConfig> {
        BayConfig::from_vars(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), reading variables through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> SandboxResult<BayConfig> {
        let invalid = |message: String| SandboxError::new(ErrorCode::ValidationError, message);
        let endpoint = var("BAY_ENDPOINT")
            .filter(|value| !value.trim().is_empty())
            .ok_or_else(|| {
                invalid(
                    "BAY_ENDPOINT is not set; set it to the Bay's base URL (http://host:8114)"
                        .into(),
                )
            })?;
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(invalid(format!(
                "BAY_ENDPOINT `{endpoint}` is not an http(s) URL"
            )));
        }
        let mut config = BayConfig::new(endpoint);
        config.token = var("BAY_TOKEN").filter(|value| !value.is_empty());
        if let Some(text) = var("BAY_TIMEOUT") {
            let seconds: f64 = text
                .trim()
                .parse()
                .ok()
                .filter(|seconds: &f64| seconds.is_finite() && *seconds > 0.0)
                .ok_or_else(|| {
                    invalid(format!(
                        "BAY_TIMEOUT `{text}` is not a positive number of seconds"
                    ))
                })?;
            config.timeout = Duration::from_secs_f64(seconds.min(86_400.0));
        }
        if let Some(text) = var("BAY_MAX_RETRIES") {
            config.max_retries = text.trim().parse().map_err(|_| {
                invalid(format!(
                    "BAY_MAX_RETRIES `{text}` is not a whole number of retries"
                ))
            })?;
        }
        Ok(config)
    }
}

/// A Bay deployment as a [`SandboxProvider`].
#[derive(Debug, Clone)]
pub struct BayClient {
    config: BayConfig,
    transport: Arc<dyn Transport>,
}

/// A request body.
enum Body {
    Json(Value),
    Multipart { boundary: String, bytes: Vec<u8> },
}

/// Whether a call may be sent again after a failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resend {
    Yes,
    No,
}

/// `value` percent-encoded for a path segment or a query value.
fn encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// At most `limit` characters of `text`, and whether some were cut.
fn snippet(text: &str, limit: usize) -> (String, bool) {
    let mut chars = text.chars();
    let kept: String = chars.by_ref().take(limit).collect();
    (kept, chars.next().is_some())
}

/// The error a failing response stands for.
pub(crate) fn error_from_response(response: &HttpResponse) -> SandboxError {
    let status = response.status;
    let parsed: Option<Value> = serde_json::from_slice(&response.body).ok();
    if let Some(error) = parsed
        .as_ref()
        .and_then(|body| body.get("error"))
        .filter(|error| error.is_object())
    {
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .and_then(ErrorCode::parse)
            .unwrap_or_else(|| ErrorCode::from_status(status));
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let mut found = SandboxError::new(code, message);
        if let Some(details) = error.get("details").filter(|details| details.is_object()) {
            found.details = details.clone();
        }
        return found;
    }
    match parsed.as_ref().and_then(|body| body.get("detail")) {
        // FastAPI's validation answer.
        Some(Value::Array(problems)) => {
            let said: Vec<String> = problems
                .iter()
                .map(|problem| {
                    let at = problem
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|parts| {
                            parts
                                .iter()
                                .map(|part| match part {
                                    Value::String(text) => text.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    let message = problem
                        .get("msg")
                        .and_then(Value::as_str)
                        .unwrap_or("invalid");
                    format!("{at}: {message}")
                })
                .collect();
            SandboxError::new(ErrorCode::ValidationError, said.join("; "))
                .detail("errors", Value::Array(problems.clone()))
        }
        Some(Value::String(message)) => SandboxError::new(ErrorCode::from_status(status), message),
        _ => {
            let text = response.text();
            let (kept, truncated) = snippet(&text, 500);
            let (short, _) = snippet(text.trim(), 200);
            SandboxError::new(
                ErrorCode::from_status(status),
                format!(
                    "HTTP {status}: {}",
                    if short.is_empty() {
                        "(empty body)"
                    } else {
                        &short
                    }
                ),
            )
            .detail("status", status)
            .detail("raw_response_snippet", kept)
            .detail("raw_response_truncated", truncated)
        }
    }
}

impl BayClient {
    /// A client for the Bay `config` describes, sending through `transport`.
    pub fn new(config: BayConfig, transport: Arc<dyn Transport>) -> Self {
        BayClient { config, transport }
    }

    /// Its configuration.
    pub fn config(&self) -> &BayConfig {
        &self.config
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.endpoint)
    }

    fn sandbox_path(id: &str, rest: &str) -> String {
        format!("/v1/sandboxes/{}{rest}", encode(id))
    }

    fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.min(16));
        self.config
            .retry_base
            .saturating_mul(factor)
            .min(self.config.retry_cap)
    }

    /// Sends a request, retrying as the SDK does; answers the response when its status is
    /// below 400, the error it stands for otherwise.
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Body>,
        headers: Vec<Header>,
        timeout: Duration,
        resend: Resend,
    ) -> SandboxResult<HttpResponse> {
        let mut request = HttpRequest::new(method, self.url(path));
        request.timeout = Some(timeout);
        request.headers = headers;
        if let Some(token) = &self.config.token {
            request.headers.push(Header::sensitive(
                "Authorization",
                format!("Bearer {token}"),
            ));
        }
        match body {
            Some(Body::Json(value)) => {
                request
                    .headers
                    .push(Header::new("Content-Type", "application/json"));
                request.body = Some(value.to_string().into_bytes());
            }
            Some(Body::Multipart { boundary, bytes }) => {
                request.headers.push(Header::new(
                    "Content-Type",
                    format!("multipart/form-data; boundary={boundary}"),
                ));
                request.body = Some(bytes);
            }
            None => {}
        }
        let attempts = if resend == Resend::Yes {
            self.config.max_retries.saturating_add(1)
        } else {
            1
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= attempts;
            match self.transport.send(request.clone()).await {
                Ok(response) if response.status < 400 => return Ok(response),
                Ok(response) if !last && (response.status == 429 || response.status >= 500) => {
                    tracing::debug!(status = response.status, attempt, "Bay call retried");
                }
                Ok(response) => return Err(error_from_response(&response)),
                Err(error) if !last => {
                    tracing::debug!(%error, attempt, "Bay call retried");
                }
                Err(error) => {
                    let code = if error.kind() == TransportErrorKind::Timeout {
                        ErrorCode::Timeout
                    } else {
                        ErrorCode::InternalError
                    };
                    return Err(SandboxError::new(
                        code,
                        format!(
                            "cannot reach Bay at {}: {}",
                            self.config.endpoint,
                            error.message()
                        ),
                    )
                    .detail("attempts", attempt));
                }
            }
            tokio::time::sleep(self.delay(attempt - 1)).await;
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
        timeout: Option<Duration>,
    ) -> SandboxResult<T> {
        let resend = match (method, key) {
            ("GET" | "PUT" | "DELETE", _) | (_, Some(_)) => Resend::Yes,
            _ => Resend::No,
        };
        let headers = key
            .map(|key| vec![Header::new("Idempotency-Key", key)])
            .unwrap_or_default();
        let response = self
            .send(
                method,
                path,
                body.map(Body::Json),
                headers,
                timeout.unwrap_or(self.config.timeout),
                resend,
            )
            .await?;
        parse(&response)
    }

    fn exec_timeout(seconds: u64) -> Duration {
        Duration::from_secs(seconds.saturating_add(10))
    }
}

fn parse<T: DeserializeOwned>(response: &HttpResponse) -> SandboxResult<T> {
    serde_json::from_slice(&response.body).map_err(|error| {
        let text = response.text();
        let (kept, _) = snippet(&text, 200);
        SandboxError::new(
            ErrorCode::InternalError,
            format!("Bay answered something this client cannot read ({error}): {kept}"),
        )
    })
}

/// A `{"status": ...}` answer, read and dropped.
#[derive(serde::Deserialize)]
struct Acknowledged {}

#[derive(serde::Deserialize)]
struct Content {
    content: String,
}

#[derive(serde::Deserialize)]
struct Entries {
    entries: Vec<FileEntry>,
}

#[derive(serde::Deserialize)]
struct Items<T> {
    items: Vec<T>,
}

fn multipart(path: &str, bytes: &[u8]) -> Body {
    let boundary = format!(
        "wayline-{:016x}{:016x}",
        fastrand::u64(..),
        fastrand::u64(..)
    );
    let name: String = path
        .rsplit('/')
        .next()
        .unwrap_or("file")
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '"' | '\\'))
        .collect();
    let mut body = Vec::with_capacity(bytes.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"path\"\r\n\r\n{path}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Body::Multipart {
        boundary,
        bytes: body,
    }
}

#[async_trait::async_trait]
impl SandboxProvider for BayClient {
    async fn create(&self, request: &CreateSandbox) -> SandboxResult<SandboxInfo> {
        // As the SDK: fields left unset are not sent.
        let mut body = json!({"profile": request.profile});
        if let Some(cargo) = &request.cargo_id {
            body["cargo_id"] = cargo.clone().into();
        }
        if let Some(ttl) = request.ttl {
            body["ttl"] = ttl.into();
        }
        self.json(
            "POST",
            "/v1/sandboxes",
            Some(body),
            request.idempotency_key.as_deref(),
            None,
        )
        .await
    }

    async fn get(&self, id: &str) -> SandboxResult<SandboxInfo> {
        self.json("GET", &Self::sandbox_path(id, ""), None, None, None)
            .await
    }

    async fn list(&self, query: &ListQuery) -> SandboxResult<SandboxPage> {
        let mut pairs = Vec::new();
        if let Some(limit) = query.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(cursor) = &query.cursor {
            pairs.push(format!("cursor={}", encode(cursor)));
        }
        if let Some(status) = query.status {
            pairs.push(format!("status={}", status.as_str()));
        }
        let path = if pairs.is_empty() {
            "/v1/sandboxes".to_owned()
        } else {
            format!("/v1/sandboxes?{}", pairs.join("&"))
        };
        self.json("GET", &path, None, None, None).await
    }

    async fn stop(&self, id: &str) -> SandboxResult<()> {
        let _: Acknowledged = self
            .json("POST", &Self::sandbox_path(id, "/stop"), None, None, None)
            .await?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> SandboxResult<()> {
        self.send(
            "DELETE",
            &Self::sandbox_path(id, ""),
            None,
            Vec::new(),
            self.config.timeout,
            Resend::Yes,
        )
        .await?;
        Ok(())
    }

    async fn extend_ttl(
        &self,
        id: &str,
        extend_by: i64,
        idempotency_key: Option<&str>,
    ) -> SandboxResult<SandboxInfo> {
        self.json(
            "POST",
            &Self::sandbox_path(id, "/extend_ttl"),
            Some(json!({ "extend_by": extend_by })),
            idempotency_key,
            None,
        )
        .await
    }

    async fn keepalive(&self, id: &str) -> SandboxResult<()> {
        let _: Acknowledged = self
            .json(
                "POST",
                &Self::sandbox_path(id, "/keepalive"),
                None,
                None,
                None,
            )
            .await?;
        Ok(())
    }

    async fn python_exec(&self, id: &str, request: &PythonExec) -> SandboxResult<PythonResult> {
        let body = serde_json::to_value(request).unwrap_or(Value::Null);
        self.json(
            "POST",
            &Self::sandbox_path(id, "/python/exec"),
            Some(body),
            None,
            Some(Self::exec_timeout(request.timeout)),
        )
        .await
    }

    async fn shell_exec(&self, id: &str, request: &ShellExec) -> SandboxResult<ShellResult> {
        let body = serde_json::to_value(request).unwrap_or(Value::Null);
        self.json(
            "POST",
            &Self::sandbox_path(id, "/shell/exec"),
            Some(body),
            None,
            Some(Self::exec_timeout(request.timeout)),
        )
        .await
    }

    async fn read_file(&self, id: &str, path: &str) -> SandboxResult<String> {
        let path = Self::sandbox_path(id, &format!("/filesystem/files?path={}", encode(path)));
        let content: Content = self.json("GET", &path, None, None, None).await?;
        Ok(content.content)
    }

    async fn write_file(&self, id: &str, path: &str, content: &str) -> SandboxResult<()> {
        let _: Acknowledged = self
            .json(
                "PUT",
                &Self::sandbox_path(id, "/filesystem/files"),
                Some(json!({"path": path, "content": content})),
                None,
                None,
            )
            .await?;
        Ok(())
    }

    async fn delete_file(&self, id: &str, path: &str) -> SandboxResult<()> {
        let path = Self::sandbox_path(id, &format!("/filesystem/files?path={}", encode(path)));
        let _: Acknowledged = self.json("DELETE", &path, None, None, None).await?;
        Ok(())
    }

    async fn list_files(&self, id: &str, path: &str) -> SandboxResult<Vec<FileEntry>> {
        let path = Self::sandbox_path(
            id,
            &format!("/filesystem/directories?path={}", encode(path)),
        );
        let entries: Entries = self.json("GET", &path, None, None, None).await?;
        Ok(entries.entries)
    }

    async fn upload(&self, id: &str, path: &str, bytes: Vec<u8>) -> SandboxResult<Uploaded> {
        let response = self
            .send(
                "POST",
                &Self::sandbox_path(id, "/filesystem/upload"),
                Some(multipart(path, &bytes)),
                Vec::new(),
                self.config.timeout,
                Resend::Yes,
            )
            .await?;
        parse(&response)
    }

    async fn download(&self, id: &str, path: &str) -> SandboxResult<Vec<u8>> {
        let response = self
            .send(
                "GET",
                &Self::sandbox_path(id, &format!("/filesystem/download?path={}", encode(path))),
                None,
                Vec::new(),
                self.config.timeout,
                Resend::Yes,
            )
            .await?;
        Ok(response.body)
    }

    async fn history(&self, id: &str, query: &HistoryQuery) -> SandboxResult<HistoryPage> {
        let mut pairs = vec![format!("offset={}", query.offset)];
        if let Some(kind) = &query.exec_type {
            pairs.push(format!("exec_type={}", encode(kind)));
        }
        if query.success_only {
            pairs.push("success_only=true".to_owned());
        }
        if let Some(limit) = query.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(tags) = &query.tags {
            pairs.push(format!("tags={}", encode(tags)));
        }
        for (name, wanted) in [
            ("has_notes", query.has_notes),
            ("has_description", query.has_description),
        ] {
            if wanted {
                pairs.push(format!("{name}=true"));
            }
        }
        let path = Self::sandbox_path(id, &format!("/history?{}", pairs.join("&")));
        self.json("GET", &path, None, None, None).await
    }

    async fn execution(&self, id: &str, execution_id: &str) -> SandboxResult<HistoryEntry> {
        let path = Self::sandbox_path(id, &format!("/history/{}", encode(execution_id)));
        self.json("GET", &path, None, None, None).await
    }

    async fn create_cargo(&self, request: &CreateCargo) -> SandboxResult<Cargo> {
        // As the SDK: a size left unset is not sent.
        let mut body = json!({});
        if let Some(size) = request.size_limit_mb {
            body["size_limit_mb"] = size.into();
        }
        self.json(
            "POST",
            "/v1/cargos",
            Some(body),
            request.idempotency_key.as_deref(),
            None,
        )
        .await
    }

    async fn list_cargos(&self, query: &CargoQuery) -> SandboxResult<CargoPage> {
        let mut pairs = Vec::new();
        if let Some(managed) = query.managed {
            pairs.push(format!("managed={managed}"));
        }
        if let Some(limit) = query.limit {
            pairs.push(format!("limit={limit}"));
        }
        if let Some(cursor) = &query.cursor {
            pairs.push(format!("cursor={}", encode(cursor)));
        }
        self.json("GET", &with_query("/v1/cargos", &pairs), None, None, None)
            .await
    }

    async fn get_cargo(&self, id: &str) -> SandboxResult<Cargo> {
        self.json(
            "GET",
            &format!("/v1/cargos/{}", encode(id)),
            None,
            None,
            None,
        )
        .await
    }

    async fn delete_cargo(&self, id: &str) -> SandboxResult<()> {
        self.send(
            "DELETE",
            &format!("/v1/cargos/{}", encode(id)),
            None,
            Vec::new(),
            self.config.timeout,
            Resend::Yes,
        )
        .await?;
        Ok(())
    }

    async fn run_gc(&self, tasks: Option<&[String]>) -> SandboxResult<GcRun> {
        let body = match tasks {
            Some(tasks) => json!({ "tasks": tasks }),
            None => json!({}),
        };
        self.json("POST", "/v1/admin/gc/run", Some(body), None, None)
            .await
    }

    async fn gc_status(&self) -> SandboxResult<GcStatus> {
        self.json("GET", "/v1/admin/gc/status", None, None, None)
            .await
    }

    async fn annotate(
        &self,
        id: &str,
        execution_id: &str,
        annotation: &Annotation,
    ) -> SandboxResult<HistoryEntry> {
        let path = Self::sandbox_path(id, &format!("/history/{}", encode(execution_id)));
        let body = serde_json::to_value(annotation).unwrap_or_default();
        self.json("PATCH", &path, Some(body), None, None).await
    }

    async fn profiles(&self) -> SandboxResult<Vec<ProfileInfo>> {
        let items: Items<ProfileInfo> = self
            .json("GET", "/v1/profiles?detail=true", None, None, None)
            .await?;
        Ok(items.items)
    }
}

/// `path` with the query `pairs` (none: no `?`).
fn with_query(path: &str, pairs: &[String]) -> String {
    if pairs.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

/// A skill list's query: its filters, then `limit` and `offset`.
fn skill_list_query(mut pairs: Vec<String>, limit: Option<u32>, offset: u32) -> Vec<String> {
    if let Some(limit) = limit {
        pairs.push(format!("limit={limit}"));
    }
    pairs.push(format!("offset={offset}"));
    pairs
}

/// A delete's body: the reason, when there is one.
fn delete_reason(reason: Option<&str>) -> Option<Value> {
    reason.map(|reason| json!({ "reason": reason }))
}

#[async_trait::async_trait]
impl SkillLifecycle for BayClient {
    async fn create_payload(&self, payload: &NewPayload) -> SandboxResult<PayloadRef> {
        let body = serde_json::to_value(payload).unwrap_or_default();
        self.json("POST", "/v1/skills/payloads", Some(body), None, None)
            .await
    }

    async fn payload(&self, payload_ref: &str) -> SandboxResult<SkillPayload> {
        let path = format!("/v1/skills/payloads/{}", encode(payload_ref));
        self.json("GET", &path, None, None, None).await
    }

    async fn create_candidate(&self, candidate: &NewCandidate) -> SandboxResult<SkillCandidate> {
        let body = serde_json::to_value(candidate).unwrap_or_default();
        self.json("POST", "/v1/skills/candidates", Some(body), None, None)
            .await
    }

    async fn candidates(&self, query: &CandidateQuery) -> SandboxResult<SkillPage<SkillCandidate>> {
        let mut filters = Vec::new();
        if let Some(status) = query.status {
            filters.push(format!("status={}", status.as_str()));
        }
        if let Some(key) = &query.skill_key {
            filters.push(format!("skill_key={}", encode(key)));
        }
        let pairs = skill_list_query(filters, query.limit, query.offset);
        self.json(
            "GET",
            &with_query("/v1/skills/candidates", &pairs),
            None,
            None,
            None,
        )
        .await
    }

    async fn candidate(&self, id: &str) -> SandboxResult<SkillCandidate> {
        let path = format!("/v1/skills/candidates/{}", encode(id));
        self.json("GET", &path, None, None, None).await
    }

    async fn evaluate(
        &self,
        candidate_id: &str,
        evaluation: &Evaluation,
    ) -> SandboxResult<SkillEvaluation> {
        let path = format!("/v1/skills/candidates/{}/evaluate", encode(candidate_id));
        let body = serde_json::to_value(evaluation).unwrap_or_default();
        self.json("POST", &path, Some(body), None, None).await
    }

    async fn promote(
        &self,
        candidate_id: &str,
        promotion: &Promotion,
    ) -> SandboxResult<SkillRelease> {
        let path = format!("/v1/skills/candidates/{}/promote", encode(candidate_id));
        let body = serde_json::to_value(promotion).unwrap_or_default();
        self.json("POST", &path, Some(body), None, None).await
    }

    async fn delete_candidate(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        let path = format!("/v1/skills/candidates/{}", encode(id));
        self.json("DELETE", &path, delete_reason(reason), None, None)
            .await
    }

    async fn releases(&self, query: &ReleaseQuery) -> SandboxResult<SkillPage<SkillRelease>> {
        let mut filters = Vec::new();
        if let Some(key) = &query.skill_key {
            filters.push(format!("skill_key={}", encode(key)));
        }
        if query.active_only {
            filters.push("active_only=true".to_owned());
        }
        if let Some(stage) = query.stage {
            filters.push(format!("stage={}", stage.as_str()));
        }
        let pairs = skill_list_query(filters, query.limit, query.offset);
        self.json(
            "GET",
            &with_query("/v1/skills/releases", &pairs),
            None,
            None,
            None,
        )
        .await
    }

    async fn release_health(&self, id: &str) -> SandboxResult<ReleaseHealth> {
        let path = format!("/v1/skills/releases/{}/health", encode(id));
        self.json("GET", &path, None, None, None).await
    }

    async fn rollback(&self, release_id: &str) -> SandboxResult<SkillRelease> {
        let path = format!("/v1/skills/releases/{}/rollback", encode(release_id));
        self.json("POST", &path, None, None, None).await
    }

    async fn delete_release(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        let path = format!("/v1/skills/releases/{}", encode(id));
        self.json("DELETE", &path, delete_reason(reason), None, None)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_comes_from_bays_variables() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let config = BayConfig::from_vars(vars(&[
            ("BAY_ENDPOINT", "http://bay:8114/"),
            ("BAY_TOKEN", "sk-bay-secret"),
            ("BAY_TIMEOUT", "12.5"),
            ("BAY_MAX_RETRIES", "5"),
        ]))
        .unwrap();
        assert_eq!(config.endpoint, "http://bay:8114");
        assert_eq!(config.timeout, Duration::from_millis(12_500));
        assert_eq!(config.max_retries, 5);
        assert!(!format!("{config:?}").contains("sk-bay-secret"));
        let missing = BayConfig::from_vars(vars(&[])).unwrap_err();
        assert!(missing.message.contains("BAY_ENDPOINT"), "{missing}");
        let bad = BayConfig::from_vars(vars(&[
            ("BAY_ENDPOINT", "http://bay"),
            ("BAY_MAX_RETRIES", "many"),
        ]))
        .unwrap_err();
        assert!(bad.message.contains("BAY_MAX_RETRIES"), "{bad}");
    }

    #[test]
    fn paths_and_queries_are_percent_encoded() {
        assert_eq!(encode("src/a b&c.py"), "src%2Fa%20b%26c.py");
        assert_eq!(encode("ünï"), "%C3%BC%6E%C3%AF".replace("%6E", "n"));
    }

    #[test]
    fn waits_double_up_to_the_cap() {
        let client = BayClient::new(
            BayConfig::new("http://bay"),
            Arc::new(NoTransport) as Arc<dyn Transport>,
        );
        let waits: Vec<u128> = (0..5).map(|n| client.delay(n).as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1_500, 1_500]);
    }

    #[derive(Debug)]
    struct NoTransport;

    #[async_trait::async_trait]
    impl Transport for NoTransport {
        async fn send(
            &self,
            _: HttpRequest,
        ) -> Result<HttpResponse, wayline_core::transport::TransportError> {
            Err(wayline_core::transport::TransportError::new(
                TransportErrorKind::Connect,
                "no network in this test",
            ))
        }
    }
}

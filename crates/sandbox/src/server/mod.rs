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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use wayline_listen::{Gate, Refusal};

use crate::error::{ErrorCode, SandboxError};
use crate::model::Status;
use crate::provider::{
    Annotation, CargoQuery, CreateCargo, CreateSandbox, GC_TASKS, HistoryQuery, ListQuery,
    MAX_CARGO_SIZE_MB, MAX_EXEC_TIMEOUT_SECS, PythonExec, SandboxProvider, ShellExec,
};

mod skills;

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

/// Why a request failed: a Bay error, or FastAPI's validation answer.
#[derive(Clone)]
enum Failure {
    Bay(SandboxError),
    Unprocessable(Vec<Value>),
}

impl From<SandboxError> for Failure {
    fn from(error: SandboxError) -> Self {
        Failure::Bay(error)
    }
}

/// A handler's failure travels in its response's extensions until [`request_ids`] writes it
/// out in Bay's envelope, which names the request's id.
impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut response = StatusCode::INTERNAL_SERVER_ERROR.into_response();
        response.extensions_mut().insert(self);
        response
    }
}

impl Failure {
    /// The answer Bay gives for this failure of the request `request_id`.
    fn answer(self, request_id: &str) -> Response {
        match self {
            Failure::Bay(error) => {
                let status = StatusCode::from_u16(error.status())
                    .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                (status, axum::Json(error.envelope(Some(request_id)))).into_response()
            }
            Failure::Unprocessable(detail) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                axum::Json(json!({ "detail": detail })),
            )
                .into_response(),
        }
    }
}

type Reply = Result<Response, Failure>;

fn ok(status: StatusCode, value: impl serde::Serialize) -> Reply {
    Ok((status, axum::Json(value)).into_response())
}

fn missing(location: &str, name: &str) -> Failure {
    Failure::Unprocessable(vec![json!({
        "type": "missing", "loc": [location, name], "msg": "Field required", "input": null
    })])
}

/// A JSON body as FastAPI would parse it (422 with the field otherwise). It must say it is
/// JSON: a web page can send `text/plain` without asking, never `application/json`.
fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> Result<T, Failure> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).to_ascii_lowercase());
    let is_json = content_type.as_deref().is_some_and(|content_type| {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        essence == "application/json" || essence.ends_with("+json")
    });
    if !is_json {
        return Err(Failure::Unprocessable(vec![json!({
            "type": "content_type", "loc": ["body"],
            "msg": "a JSON body needs `Content-Type: application/json`",
            "input": content_type,
        })]));
    }
    serde_json::from_slice(bytes).map_err(|error| {
        let message = error.to_string();
        let field = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        match field {
            Some(field) => missing("body", field),
            None => Failure::Unprocessable(vec![json!({
                "type": if error.is_syntax() || error.is_eof() { "json_invalid" } else { "value_error" },
                "loc": ["body"],
                "msg": message,
                "input": null,
            })]),
        }
    })
}

/// FastAPI's answer to an exec `timeout` out of 1..=300.
fn check_timeout(timeout: u64) -> Result<(), Failure> {
    let (kind, message, context) = if timeout < 1 {
        (
            "greater_than_equal",
            "Input should be greater than or equal to 1",
            json!({"ge": 1}),
        )
    } else if timeout > MAX_EXEC_TIMEOUT_SECS {
        (
            "less_than_equal",
            "Input should be less than or equal to 300",
            json!({"le": MAX_EXEC_TIMEOUT_SECS}),
        )
    } else {
        return Ok(());
    };
    Err(Failure::Unprocessable(vec![json!({
        "type": kind, "loc": ["body", "timeout"], "msg": message, "input": timeout, "ctx": context
    })]))
}

fn int_query<T: std::str::FromStr>(
    query: &HashMap<String, String>,
    name: &str,
) -> Result<Option<T>, Failure> {
    query
        .get(name)
        .map(|text| {
            text.parse().map_err(|_| {
                Failure::Unprocessable(vec![json!({
                    "type": "int_parsing", "loc": ["query", name],
                    "msg": "Input should be a valid integer, unable to parse string as an integer",
                    "input": text,
                })])
            })
        })
        .transpose()
}

fn path_query(query: &HashMap<String, String>) -> Result<&str, Failure> {
    query
        .get("path")
        .map(String::as_str)
        .ok_or_else(|| missing("query", "path"))
}

/// The request's id: the `X-Request-Id` it sent (when short), or a new one.
fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .filter(|value| !value.is_empty() && value.len() <= 128)
        .map_or_else(
            || format!("req-{:016x}", fastrand::u64(..)),
            ToOwned::to_owned,
        )
}

/// `response` with the request's id in `X-Request-Id`.
fn with_request_id(mut response: Response, request_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Around every handler (the gate checked auth before): Bay's request id on the answer, and a
/// failure the handler answered ([`Reply`]'s `Err`) written out in Bay's envelope, naming it.
async fn request_ids(request: Request, next: Next) -> Response {
    let request_id = request_id(request.headers());
    let mut response = next.run(request).await;
    if let Some(failure) = response.extensions_mut().remove::<Failure>() {
        response = failure.answer(&request_id);
    }
    with_request_id(response, &request_id)
}

/// What the gate's refusal reads as: Bay's envelope, its 401 messages for auth.
fn refusal(refusal: &Refusal, headers: &HeaderMap) -> Response {
    let request_id = request_id(headers);
    let error = match refusal {
        Refusal::Unauthenticated => {
            SandboxError::new(ErrorCode::Unauthorized, "Authentication required")
        }
        Refusal::WrongToken => SandboxError::new(ErrorCode::Unauthorized, "Invalid API key"),
        other => SandboxError::new(ErrorCode::Forbidden, other.to_string()),
    };
    with_request_id(Failure::Bay(error).answer(&request_id), &request_id)
}

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

async fn not_found_route() -> Reply {
    Err(SandboxError::new(ErrorCode::NotFound, "No such route").into())
}

async fn health(State(api): State<Shared>) -> Response {
    let mut body = json!({"status": "ok", "version": BAY_VERSION});
    if let Some(isolation) = &api.options.isolation {
        body["isolation"] = isolation.clone().into();
    }
    if let Some(memory) = &api.options.memory {
        body["memory"] = memory.clone().into();
    }
    axum::Json(body).into_response()
}

async fn profiles(State(api): State<Shared>) -> Reply {
    ok(
        StatusCode::OK,
        json!({"items": api.provider.profiles().await?}),
    )
}

fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

async fn create(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let mut request: CreateSandbox = if bytes.is_empty() {
        CreateSandbox::default()
    } else {
        body(&headers, &bytes)?
    };
    request.idempotency_key = idempotency_key(&headers);
    ok(StatusCode::CREATED, api.provider.create(&request).await?)
}

/// A list's `limit`, 1 to 200 (FastAPI's 422 otherwise).
fn page_limit(query: &HashMap<String, String>) -> Result<Option<u32>, Failure> {
    let limit: Option<u32> = int_query(query, "limit")?;
    if let Some(limit) = limit.filter(|limit| !(1..=200).contains(limit)) {
        return Err(out_of_range("query", "limit", i64::from(limit), 1, 200));
    }
    Ok(limit)
}

/// FastAPI's 422 for a number out of `low..=high`.
fn out_of_range(location: &str, name: &str, value: i64, low: i64, high: i64) -> Failure {
    let (kind, message, context) = if value < low {
        (
            "greater_than_equal",
            format!("Input should be greater than or equal to {low}"),
            json!({ "ge": low }),
        )
    } else {
        (
            "less_than_equal",
            format!("Input should be less than or equal to {high}"),
            json!({ "le": high }),
        )
    };
    let input = if location == "query" {
        json!(value.to_string())
    } else {
        json!(value)
    };
    Failure::Unprocessable(vec![json!({
        "type": kind, "loc": [location, name], "msg": message, "input": input, "ctx": context,
    })])
}

async fn create_cargo(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let mut request: CreateCargo = if bytes.is_empty() {
        CreateCargo::default()
    } else {
        body(&headers, &bytes)?
    };
    if let Some(size) = request
        .size_limit_mb
        .filter(|size| !(1..=MAX_CARGO_SIZE_MB).contains(size))
    {
        return Err(out_of_range(
            "body",
            "size_limit_mb",
            i64::try_from(size).unwrap_or(i64::MAX),
            1,
            MAX_CARGO_SIZE_MB as i64,
        ));
    }
    request.idempotency_key = idempotency_key(&headers);
    ok(
        StatusCode::CREATED,
        api.provider.create_cargo(&request).await?,
    )
}

async fn list_cargos(
    State(api): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let list = CargoQuery {
        limit: page_limit(&query)?,
        managed: bool_query(&query, "managed")?,
        cursor: query.get("cursor").filter(|c| !c.is_empty()).cloned(),
    };
    ok(StatusCode::OK, api.provider.list_cargos(&list).await?)
}

async fn get_cargo(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.get_cargo(&id).await?)
}

async fn delete_cargo(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.delete_cargo(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Bay's `GCRunRequest`: the tasks to run, all when left out or `null`.
#[derive(serde::Deserialize, Default)]
struct GcRequest {
    #[serde(default)]
    tasks: Option<Vec<String>>,
}

async fn run_gc(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let request: GcRequest = if bytes.is_empty() || bytes.as_ref() == b"null" {
        GcRequest::default()
    } else {
        body(&headers, &bytes)?
    };
    if let Some(tasks) = &request.tasks
        && let Some((at, unknown)) = tasks
            .iter()
            .enumerate()
            .find(|(_, task)| !GC_TASKS.contains(&task.as_str()))
    {
        return Err(Failure::Unprocessable(vec![json!({
            "type": "value_error", "loc": ["body", "tasks", at],
            "msg": format!("Value error, unknown task: {unknown}; known: {}", GC_TASKS.join(", ")),
            "input": unknown,
        })]));
    }
    ok(
        StatusCode::OK,
        api.provider.run_gc(request.tasks.as_deref()).await?,
    )
}

async fn gc_status(State(api): State<Shared>) -> Reply {
    ok(StatusCode::OK, api.provider.gc_status().await?)
}

async fn list(State(api): State<Shared>, Query(query): Query<HashMap<String, String>>) -> Reply {
    let mut list = ListQuery::new();
    list.limit = page_limit(&query)?;
    list.cursor = query.get("cursor").filter(|c| !c.is_empty()).cloned();
    // Bay ignores an unknown status.
    list.status = query
        .get("status")
        .and_then(|status| serde_json::from_value::<Status>(json!(status)).ok());
    ok(StatusCode::OK, api.provider.list(&list).await?)
}

async fn get_one(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.get(&id).await?)
}

async fn delete_one(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.delete(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(serde::Deserialize)]
struct ExtendBody {
    extend_by: i64,
}

async fn extend_ttl(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: ExtendBody = body(&headers, &bytes)?;
    let key = idempotency_key(&headers);
    ok(
        StatusCode::OK,
        api.provider
            .extend_ttl(&id, request.extend_by, key.as_deref())
            .await?,
    )
}

async fn keepalive(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.keepalive(&id).await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

async fn stop(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.stop(&id).await?;
    ok(StatusCode::OK, json!({"status": "stopped"}))
}

async fn python_exec(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: PythonExec = body(&headers, &bytes)?;
    check_timeout(request.timeout)?;
    ok(
        StatusCode::OK,
        api.provider.python_exec(&id, &request).await?,
    )
}

async fn shell_exec(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: ShellExec = body(&headers, &bytes)?;
    check_timeout(request.timeout)?;
    ok(
        StatusCode::OK,
        api.provider.shell_exec(&id, &request).await?,
    )
}

async fn read_file(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let content = api.provider.read_file(&id, path_query(&query)?).await?;
    ok(StatusCode::OK, json!({ "content": content }))
}

#[derive(serde::Deserialize)]
struct WriteBody {
    path: String,
    content: String,
}

async fn write_file(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: WriteBody = body(&headers, &bytes)?;
    api.provider
        .write_file(&id, &request.path, &request.content)
        .await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

async fn delete_file(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    api.provider.delete_file(&id, path_query(&query)?).await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

async fn list_files(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let path = query.get("path").map_or(".", String::as_str);
    let entries = api.provider.list_files(&id, path).await?;
    ok(StatusCode::OK, json!({ "entries": entries }))
}

async fn upload(
    State(api): State<Shared>,
    Path(id): Path<String>, // Taken as a result, so that a body that is not multipart is answered after the auth
    // check, as every other request is (a 401 before a 422).
    form: Result<Multipart, MultipartRejection>,
) -> Reply {
    let mut form = form.map_err(|rejection| {
        Failure::Unprocessable(vec![json!({
            "type": "value_error", "loc": ["body"], "msg": rejection.body_text(), "input": null
        })])
    })?;
    let mut file = None;
    let mut path = None;
    let unreadable = |error: axum::extract::multipart::MultipartError| {
        Failure::Unprocessable(vec![json!({
            "type": "value_error", "loc": ["body"], "msg": error.body_text(), "input": null
        })])
    };
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        match field.name() {
            Some("file") => file = Some(field.bytes().await.map_err(unreadable)?),
            Some("path") => path = Some(field.text().await.map_err(unreadable)?),
            _ => {}
        }
    }
    let file = file.ok_or_else(|| missing("body", "file"))?;
    let path = path.ok_or_else(|| missing("body", "path"))?;
    ok(
        StatusCode::OK,
        api.provider.upload(&id, &path, file.to_vec()).await?,
    )
}

async fn download(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let path = path_query(&query)?;
    let bytes = api.provider.download(&id, path).await?;
    let name = path.rsplit('/').next().unwrap_or(path);
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_DISPOSITION, attachment(name)),
        ],
        bytes,
    )
        .into_response())
}

/// A `Content-Disposition` for a download named `name`, in ASCII as a header must be: each
/// character a quoted `filename` cannot hold (not printable ASCII, `"`, `\\`) as `_`, and when
/// any was, the name itself in `filename*` (RFC 6266, UTF-8 percent-encoded), as Bay sends it.
fn attachment(name: &str) -> String {
    let plain: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_graphic() && ch != '"' && ch != '\\' || ch == ' ' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    if plain == name {
        return format!("attachment; filename=\"{plain}\"");
    }
    let encoded: String = name
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}")
}

/// The kinds of execution Bay records (`exec_type` must be one of them).
const EXEC_TYPES: [&str; 4] = ["python", "shell", "browser", "browser_batch"];

fn history_query(query: &HashMap<String, String>) -> Result<HistoryQuery, Failure> {
    // An empty value is no value (clients send `exec_type=` for "any").
    let exec_type = query
        .get("exec_type")
        .cloned()
        .filter(|kind| !kind.is_empty());
    if let Some(kind) = exec_type
        .as_deref()
        .filter(|kind| !EXEC_TYPES.contains(kind))
    {
        let pattern = format!("^({})$", EXEC_TYPES.join("|"));
        return Err(Failure::Unprocessable(vec![json!({
            "type": "string_pattern_mismatch", "loc": ["query", "exec_type"],
            "msg": format!("String should match pattern '{pattern}'"),
            "input": kind, "ctx": {"pattern": pattern},
        })]));
    }
    let mut history = HistoryQuery {
        exec_type,
        success_only: bool_query(query, "success_only")?.unwrap_or(false),
        limit: int_query(query, "limit")?,
        ..HistoryQuery::default()
    };
    history.offset = int_query(query, "offset")?.unwrap_or(0);
    history.tags = query.get("tags").cloned().filter(|tags| !tags.is_empty());
    history.has_notes = bool_query(query, "has_notes")?.unwrap_or(false);
    history.has_description = bool_query(query, "has_description")?.unwrap_or(false);
    Ok(history)
}

/// A boolean query parameter as FastAPI reads one (`true`/`false`, `1`/`0`, `yes`/`no`,
/// `on`/`off`; 422 otherwise).
fn bool_query(query: &HashMap<String, String>, name: &str) -> Result<Option<bool>, Failure> {
    query
        .get(name)
        .filter(|text| !text.is_empty())
        .map(|text| match text.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => Ok(true),
            "false" | "0" | "no" | "off" | "f" | "n" => Ok(false),
            _ => Err(Failure::Unprocessable(vec![json!({
                "type": "bool_parsing", "loc": ["query", name],
                "msg": "Input should be a valid boolean, unable to interpret input",
                "input": text,
            })])),
        })
        .transpose()
}

async fn history(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let query = history_query(&query)?;
    ok(StatusCode::OK, api.provider.history(&id, &query).await?)
}

async fn history_last(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let mut query = history_query(&query)?;
    query.limit = Some(1);
    query.offset = 0;
    let page = api.provider.history(&id, &query).await?;
    let last = page
        .entries
        .into_iter()
        .next()
        .ok_or_else(|| SandboxError::new(ErrorCode::NotFound, "No execution history found"))?;
    ok(StatusCode::OK, last)
}

async fn execution(
    State(api): State<Shared>,
    Path((id, execution)): Path<(String, String)>,
) -> Reply {
    ok(
        StatusCode::OK,
        api.provider.execution(&id, &execution).await?,
    )
}

async fn annotate(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path((id, execution)): Path<(String, String)>,
    bytes: Bytes,
) -> Reply {
    let annotation: Annotation = body(&headers, &bytes)?;
    ok(
        StatusCode::OK,
        api.provider.annotate(&id, &execution, &annotation).await?,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downloads_are_named_in_ascii_with_the_real_name_beside() {
        assert_eq!(
            attachment("report.txt"),
            "attachment; filename=\"report.txt\""
        );
        assert_eq!(
            attachment("报告 emoji 🧪.txt"),
            "attachment; filename=\"__ emoji _.txt\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A%20emoji%20%F0%9F%A7%AA.txt"
        );
        let odd = attachment("a\"b\r\nc.txt");
        assert!(
            odd.starts_with("attachment; filename=\"a_b__c.txt\"; filename*="),
            "{odd}"
        );
        assert!(axum::http::HeaderValue::from_str(&odd).is_ok());
    }
}

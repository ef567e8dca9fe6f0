//! How the server answers, as Bay's FastAPI app does: a handler's `Reply`, a `Failure` in
//! Bay's envelope or FastAPI's 422, the request id on every answer, and the readers of a
//! JSON body and of query parameters that fail the way Bay's do.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use wayline_listen::Refusal;

use crate::error::{ErrorCode, SandboxError};
use crate::provider::MAX_EXEC_TIMEOUT_SECS;

/// Why a request failed: a Bay error, or FastAPI's validation answer.
#[derive(Clone)]
pub(super) enum Failure {
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

pub(super) type Reply = Result<Response, Failure>;

pub(super) fn ok(status: StatusCode, value: impl serde::Serialize) -> Reply {
    Ok((status, axum::Json(value)).into_response())
}

pub(super) fn missing(location: &str, name: &str) -> Failure {
    Failure::Unprocessable(vec![json!({
        "type": "missing", "loc": [location, name], "msg": "Field required", "input": null
    })])
}

/// A JSON body as FastAPI would parse it (422 with the field otherwise). It must say it is
/// JSON: a web page can send `text/plain` without asking, never `application/json`.
pub(super) fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> Result<T, Failure> {
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
pub(super) fn check_timeout(timeout: u64) -> Result<(), Failure> {
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

pub(super) fn int_query<T: std::str::FromStr>(
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

pub(super) fn path_query(query: &HashMap<String, String>) -> Result<&str, Failure> {
    query
        .get("path")
        .map(String::as_str)
        .ok_or_else(|| missing("query", "path"))
}

/// The request's id: the `X-Request-Id` it sent (when short), or a new one.
pub(super) fn request_id(headers: &HeaderMap) -> String {
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
pub(super) fn with_request_id(mut response: Response, request_id: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Around every handler (the gate checked auth before): Bay's request id on the answer, and a
/// failure the handler answered ([`Reply`]'s `Err`) written out in Bay's envelope, naming it.
pub(super) async fn request_ids(request: Request, next: Next) -> Response {
    let request_id = request_id(request.headers());
    let mut response = next.run(request).await;
    if let Some(failure) = response.extensions_mut().remove::<Failure>() {
        response = failure.answer(&request_id);
    }
    with_request_id(response, &request_id)
}

/// What the gate's refusal reads as: Bay's envelope, its 401 messages for auth.
pub(super) fn refusal(refusal: &Refusal, headers: &HeaderMap) -> Response {
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

pub(super) async fn not_found_route() -> Reply {
    Err(SandboxError::new(ErrorCode::NotFound, "No such route").into())
}

pub(super) fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// A list's `limit`, 1 to 200 (FastAPI's 422 otherwise).
pub(super) fn page_limit(query: &HashMap<String, String>) -> Result<Option<u32>, Failure> {
    let limit: Option<u32> = int_query(query, "limit")?;
    if let Some(limit) = limit.filter(|limit| !(1..=200).contains(limit)) {
        return Err(out_of_range("query", "limit", i64::from(limit), 1, 200));
    }
    Ok(limit)
}

/// FastAPI's 422 for a number out of `low..=high`.
pub(super) fn out_of_range(location: &str, name: &str, value: i64, low: i64, high: i64) -> Failure {
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

/// A boolean query parameter as FastAPI reads one (`true`/`false`, `1`/`0`, `yes`/`no`,
/// `on`/`off`; 422 otherwise).
pub(super) fn bool_query(
    query: &HashMap<String, String>,
    name: &str,
) -> Result<Option<bool>, Failure> {
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

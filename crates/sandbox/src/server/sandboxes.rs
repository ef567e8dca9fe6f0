//! The sandbox routes: health and profiles, create to delete, TTL, keepalive and stop, and
//! Python and shell executions.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::model::Status;
use crate::provider::{CreateSandbox, ListQuery, PythonExec, ShellExec};

use super::reply::{Reply, body, check_timeout, idempotency_key, ok, page_limit};
use super::{BAY_VERSION, Shared};

pub(super) async fn health(State(api): State<Shared>) -> Response {
    let mut body = json!({"status": "ok", "version": BAY_VERSION});
    if let Some(isolation) = &api.options.isolation {
        body["isolation"] = isolation.clone().into();
    }
    if let Some(memory) = &api.options.memory {
        body["memory"] = memory.clone().into();
    }
    axum::Json(body).into_response()
}

pub(super) async fn profiles(State(api): State<Shared>) -> Reply {
    ok(
        StatusCode::OK,
        json!({"items": api.provider.profiles().await?}),
    )
}

pub(super) async fn create(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let mut request: CreateSandbox = if bytes.is_empty() {
        CreateSandbox::default()
    } else {
        body(&headers, &bytes)?
    };
    request.idempotency_key = idempotency_key(&headers);
    ok(StatusCode::CREATED, api.provider.create(&request).await?)
}

pub(super) async fn list(
    State(api): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let mut list = ListQuery::new();
    list.limit = page_limit(&query)?;
    list.cursor = query.get("cursor").filter(|c| !c.is_empty()).cloned();
    // Bay ignores an unknown status.
    list.status = query
        .get("status")
        .and_then(|status| serde_json::from_value::<Status>(json!(status)).ok());
    ok(StatusCode::OK, api.provider.list(&list).await?)
}

pub(super) async fn get_one(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.get(&id).await?)
}

pub(super) async fn delete_one(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.delete(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(serde::Deserialize)]
pub(super) struct ExtendBody {
    extend_by: i64,
}

pub(super) async fn extend_ttl(
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

pub(super) async fn keepalive(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.keepalive(&id).await?;
    ok(StatusCode::OK, json!({"status": "ok"}))
}

pub(super) async fn stop(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.stop(&id).await?;
    ok(StatusCode::OK, json!({"status": "stopped"}))
}

pub(super) async fn python_exec(
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

pub(super) async fn shell_exec(
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

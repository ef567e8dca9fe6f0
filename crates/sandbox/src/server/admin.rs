//! The cargo routes and Bay's admin GC routes.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::json;

use crate::provider::{CargoQuery, CreateCargo, GC_TASKS, MAX_CARGO_SIZE_MB};

use super::Shared;
use super::reply::{
    Failure, Reply, body, bool_query, idempotency_key, ok, out_of_range, page_limit,
};

pub(super) async fn create_cargo(
    State(api): State<Shared>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Reply {
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

pub(super) async fn list_cargos(
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

pub(super) async fn get_cargo(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.get_cargo(&id).await?)
}

pub(super) async fn delete_cargo(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    api.provider.delete_cargo(&id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Bay's `GCRunRequest`: the tasks to run, all when left out or `null`.
#[derive(serde::Deserialize, Default)]
pub(super) struct GcRequest {
    #[serde(default)]
    tasks: Option<Vec<String>>,
}

pub(super) async fn run_gc(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
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

pub(super) async fn gc_status(State(api): State<Shared>) -> Reply {
    ok(StatusCode::OK, api.provider.gc_status().await?)
}

//! The history routes: a sandbox's executions, filtered and paged, and their annotations.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::json;

use crate::error::{ErrorCode, SandboxError};
use crate::provider::{Annotation, HistoryQuery};

use super::Shared;
use super::reply::{Failure, Reply, body, bool_query, int_query, ok};

/// The kinds of execution Bay records (`exec_type` must be one of them).
pub(super) const EXEC_TYPES: [&str; 4] = ["python", "shell", "browser", "browser_batch"];

pub(super) fn history_query(query: &HashMap<String, String>) -> Result<HistoryQuery, Failure> {
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

pub(super) async fn history(
    State(api): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let query = history_query(&query)?;
    ok(StatusCode::OK, api.provider.history(&id, &query).await?)
}

pub(super) async fn history_last(
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

pub(super) async fn execution(
    State(api): State<Shared>,
    Path((id, execution)): Path<(String, String)>,
) -> Reply {
    ok(
        StatusCode::OK,
        api.provider.execution(&id, &execution).await?,
    )
}

pub(super) async fn annotate(
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

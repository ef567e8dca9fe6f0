//! The skill lifecycle's routes (`/v1/skills/…`), over the provider's [`SkillLifecycle`].
//!
//! As Bay answers: a body or query that does not parse is FastAPI's 422 (`limit` outside
//! 1..=500, a negative `offset`, a missing `passed`); a `status` or `stage` that is no
//! candidate status or release stage is Bay's 400 `validation_error`, as is a payload reference
//! that is no `blob:…`.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::json;

use super::Shared;
use super::reply::{Failure, Reply, body, bool_query, int_query, ok, out_of_range};
use crate::skills::{
    CandidateQuery, CandidateStatus, Evaluation, MAX_PAGE, NewCandidate, NewPayload, Promotion,
    ReleaseQuery, ReleaseStage,
};

/// The routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/v1/skills/payloads", post(create_payload))
        .route("/v1/skills/payloads/{*payload_ref}", get(payload))
        .route(
            "/v1/skills/candidates",
            post(create_candidate).get(candidates),
        )
        .route(
            "/v1/skills/candidates/{id}",
            get(candidate).delete(delete_candidate),
        )
        .route("/v1/skills/candidates/{id}/evaluate", post(evaluate))
        .route("/v1/skills/candidates/{id}/promote", post(promote))
        .route("/v1/skills/releases", get(releases))
        .route(
            "/v1/skills/releases/{id}",
            axum::routing::delete(delete_release),
        )
        .route("/v1/skills/releases/{id}/health", get(health))
        .route("/v1/skills/releases/{id}/rollback", post(rollback))
}

/// FastAPI's 422 for a body field that is there but wrong.
fn wrong_field(name: &str, kind: &str, message: &str, input: serde_json::Value) -> Failure {
    Failure::Unprocessable(vec![json!({
        "type": kind, "loc": ["body", name], "msg": message, "input": input,
    })])
}

async fn create_payload(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let payload: NewPayload = body(&headers, &bytes)?;
    if !(payload.payload.is_object() || payload.payload.is_array()) {
        return Err(wrong_field(
            "payload",
            "model_type",
            "Input should be a valid dictionary or list",
            payload.payload,
        ));
    }
    if payload.kind.is_empty() {
        return Err(wrong_field(
            "kind",
            "string_too_short",
            "String should have at least 1 character",
            json!(""),
        ));
    }
    ok(
        StatusCode::CREATED,
        api.provider.create_payload(&payload).await?,
    )
}

async fn payload(State(api): State<Shared>, Path(payload_ref): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.payload(&payload_ref).await?)
}

async fn create_candidate(State(api): State<Shared>, headers: HeaderMap, bytes: Bytes) -> Reply {
    let candidate: NewCandidate = body(&headers, &bytes)?;
    ok(
        StatusCode::CREATED,
        api.provider.create_candidate(&candidate).await?,
    )
}

/// A query value, an empty one being none (as Bay's `if status:`).
fn text_query<'a>(query: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    query
        .get(name)
        .map(String::as_str)
        .filter(|text| !text.is_empty())
}

/// `limit` (1..=500) and `offset` (≥ 0), FastAPI's 422 otherwise.
fn paging(query: &HashMap<String, String>) -> Result<(Option<u32>, u32), Failure> {
    let number = |name: &str| -> Result<Option<i64>, Failure> { int_query::<i64>(query, name) };
    let limit = number("limit")?;
    if let Some(limit) = limit.filter(|limit| !(1..=i64::from(MAX_PAGE)).contains(limit)) {
        return Err(out_of_range(
            "query",
            "limit",
            limit,
            1,
            i64::from(MAX_PAGE),
        ));
    }
    let offset = number("offset")?.unwrap_or(0);
    if offset < 0 {
        return Err(out_of_range("query", "offset", offset, 0, i64::MAX));
    }
    Ok((
        limit.and_then(|limit| u32::try_from(limit).ok()),
        u32::try_from(offset).unwrap_or(u32::MAX),
    ))
}

async fn candidates(
    State(api): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let (limit, offset) = paging(&query)?;
    let list = CandidateQuery {
        status: text_query(&query, "status")
            .map(CandidateStatus::parse)
            .transpose()?,
        skill_key: text_query(&query, "skill_key").map(str::to_owned),
        limit,
        offset,
    };
    ok(StatusCode::OK, api.provider.candidates(&list).await?)
}

async fn candidate(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.candidate(&id).await?)
}

/// Bay's `SkillDeleteRequest`, which may be left out.
#[derive(serde::Deserialize, Default)]
struct DeleteBody {
    #[serde(default)]
    reason: Option<String>,
}

fn delete_body(headers: &HeaderMap, bytes: &Bytes) -> Result<DeleteBody, Failure> {
    if bytes.is_empty() || bytes.as_ref() == b"null" {
        Ok(DeleteBody::default())
    } else {
        body(headers, bytes)
    }
}

async fn delete_candidate(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request = delete_body(&headers, &bytes)?;
    ok(
        StatusCode::OK,
        api.provider
            .delete_candidate(&id, request.reason.as_deref())
            .await?,
    )
}

async fn evaluate(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let evaluation: Evaluation = body(&headers, &bytes)?;
    ok(
        StatusCode::OK,
        api.provider.evaluate(&id, &evaluation).await?,
    )
}

/// Bay's `SkillPromotionRequest` as it comes: the stage is any string until checked (an
/// unknown one is Bay's 400, not FastAPI's 422).
#[derive(serde::Deserialize)]
struct PromotionBody {
    #[serde(default)]
    stage: Option<String>,
    #[serde(default)]
    upgrade_of_release_id: Option<String>,
    #[serde(default)]
    upgrade_reason: Option<String>,
    #[serde(default)]
    change_summary: Option<String>,
}

async fn promote(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request: PromotionBody = body(&headers, &bytes)?;
    let promotion = Promotion {
        stage: request
            .stage
            .as_deref()
            .map(ReleaseStage::parse)
            .transpose()?
            .unwrap_or_default(),
        upgrade_of_release_id: request.upgrade_of_release_id,
        upgrade_reason: request.upgrade_reason,
        change_summary: request.change_summary,
    };
    ok(StatusCode::OK, api.provider.promote(&id, &promotion).await?)
}

async fn releases(
    State(api): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Reply {
    let (limit, offset) = paging(&query)?;
    let list = ReleaseQuery {
        skill_key: text_query(&query, "skill_key").map(str::to_owned),
        active_only: bool_query(&query, "active_only")?.unwrap_or(false),
        stage: text_query(&query, "stage")
            .map(ReleaseStage::parse)
            .transpose()?,
        limit,
        offset,
    };
    ok(StatusCode::OK, api.provider.releases(&list).await?)
}

async fn delete_release(
    State(api): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Reply {
    let request = delete_body(&headers, &bytes)?;
    ok(
        StatusCode::OK,
        api.provider
            .delete_release(&id, request.reason.as_deref())
            .await?,
    )
}

async fn health(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.release_health(&id).await?)
}

async fn rollback(State(api): State<Shared>, Path(id): Path<String>) -> Reply {
    ok(StatusCode::OK, api.provider.rollback(&id).await?)
}

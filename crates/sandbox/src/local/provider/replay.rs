//! Idempotency: the stored reply to a repeated request, and keeping a reply for repeats.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::Lookup;
use crate::provider::SandboxResult;

use super::State;
/// The stored reply to a request repeated with its idempotency `key` (and the same
/// `fingerprint`), if there is one; a key reused for another request is an error. Expired
/// keys are purged first.
pub(super) fn replay<T: serde::de::DeserializeOwned>(
    state: &mut State,
    key: Option<&str>,
    fingerprint: &str,
    now: DateTime<Utc>,
) -> SandboxResult<Option<T>> {
    let Some(key) = key else { return Ok(None) };
    state.persisted.idempotency.purge(now);
    match state
        .persisted
        .idempotency
        .lookup("default", key, fingerprint, now)?
    {
        Lookup::Replay { body, .. } => serde_json::from_value(body).map(Some).map_err(|error| {
            SandboxError::new(ErrorCode::InternalError, format!("stored reply: {error}"))
        }),
        _ => Ok(None),
    }
}

/// Keeps the reply `info`, answered with `status`, for repeats of the request with `key`.
pub(super) fn remember(
    state: &mut State,
    key: Option<&str>,
    fingerprint: &str,
    status: u16,
    info: &impl serde::Serialize,
    now: DateTime<Utc>,
) {
    if let Some(key) = key {
        let body = serde_json::to_value(info).unwrap_or(Value::Null);
        state
            .persisted
            .idempotency
            .store("default", key, fingerprint, status, body, now);
    }
}

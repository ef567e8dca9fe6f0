//! Sandboxes: create, read, list, stop, delete, their TTL and idle deadline, and the
//! profiles they are made from.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::fingerprint;
use crate::local::isolation::{self};
use crate::local::state::{CargoRecord, Record};
use crate::model::{SandboxInfo, Status};
use crate::profile::Profile;
use crate::provider::{
    CreateSandbox, DEFAULT_CARGO_SIZE_MB, ListQuery, ProfileInfo, SandboxPage, SandboxResult,
};
use crate::ttl;

use super::replay::{remember, replay};
use super::session::{detach, stop_runtime};
use super::{LocalProvider, not_found, random_hex};

impl LocalProvider {
    pub(super) fn info(&self, record: &Record, session: bool, now: DateTime<Utc>) -> SandboxInfo {
        let status = if record.expires_at.is_some_and(|at| now > at) {
            Status::Expired
        } else if session {
            Status::Ready
        } else {
            Status::Idle
        };
        let containers = session.then(|| {
            vec![serde_json::json!({
                "name": "local",
                "runtime_type": "local",
                "status": "running",
                "version": env!("CARGO_PKG_VERSION"),
                "capabilities": record.capabilities,
                "healthy": true,
            })]
        });
        SandboxInfo {
            id: record.id.clone(),
            status,
            profile: record.profile.clone(),
            cargo_id: Some(record.cargo_id.clone()),
            capabilities: record.capabilities.clone(),
            created_at: record.created_at,
            expires_at: record.expires_at,
            idle_expires_at: record.idle_expires_at,
            containers,
        }
    }
}

/// [`crate::SandboxProvider::create`]: a new sandbox, with its own cargo unless it mounts one.
pub(super) async fn create(
    provider: &LocalProvider,
    request: &CreateSandbox,
) -> SandboxResult<SandboxInfo> {
    provider.collect_idle().await;
    let now = provider.now();
    let print = fingerprint("/v1/sandboxes", &request.canonical_body());
    let mut state = provider.state();
    if let Some(replayed) = replay(&mut state, request.idempotency_key.as_deref(), &print, now)? {
        return Ok(replayed);
    }
    let profile = provider.inner.config.profiles.get(&request.profile)?;
    // An external cargo is mounted as it is; a sandbox without one gets its own.
    if let Some(cargo) = &request.cargo_id {
        let known = state.persisted.cargos.get(cargo).ok_or_else(|| {
            SandboxError::new(ErrorCode::NotFound, format!("Cargo not found: {cargo}"))
                .detail("cargo_id", cargo.as_str())
        })?;
        if let Some(owner) = &known.managed_by {
            return Err(SandboxError::new(
                ErrorCode::ValidationError,
                format!("Cargo {cargo} is managed by sandbox {owner}; mount an external cargo"),
            )
            .detail("cargo_id", cargo.as_str()));
        }
    }
    let hex = random_hex();
    let cargo_id = request
        .cargo_id
        .clone()
        .unwrap_or_else(|| format!("ws-{hex}"));
    let record = Record {
        id: format!("sandbox-{hex}"),
        profile: profile.id.clone(),
        cargo_id,
        capabilities: profile.capabilities.clone(),
        created_at: now,
        expires_at: ttl::expiry_at_create(now, request.ttl),
        idle_expires_at: None,
    };
    if request.ttl.is_some_and(|ttl| ttl > 0) && record.expires_at.is_none() {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!(
                "ttl {} is too large; give seconds within a few thousand years, or 0 for no expiry",
                request.ttl.unwrap_or_default()
            ),
        ));
    }
    let workspace = provider.workspace(&record.cargo_id);
    std::fs::create_dir_all(&workspace).map_err(|error| {
        SandboxError::new(
            ErrorCode::InternalError,
            format!(
                "cannot create the workspace {}: {error}",
                workspace.display()
            ),
        )
    })?;
    provider.hand_over(&workspace)?;
    let info = provider.info(&record, false, now);
    match state.persisted.cargos.get_mut(&record.cargo_id) {
        Some(external) => external.last_accessed_at = now,
        None => {
            state.persisted.cargos.insert(
                record.cargo_id.clone(),
                CargoRecord {
                    managed_by: Some(record.id.clone()),
                    size_limit_mb: DEFAULT_CARGO_SIZE_MB,
                    created_at: now,
                    last_accessed_at: now,
                },
            );
        }
    }
    state.persisted.sandboxes.insert(record.id.clone(), record);
    remember(
        &mut state,
        request.idempotency_key.as_deref(),
        &print,
        201,
        &info,
        now,
    );
    provider.save(&state)?;
    Ok(info)
}

/// [`crate::SandboxProvider::get`].
pub(super) async fn get(provider: &LocalProvider, id: &str) -> SandboxResult<SandboxInfo> {
    provider.collect_idle().await;
    let now = provider.now();
    let state = provider.state();
    let record = state
        .persisted
        .sandboxes
        .get(id)
        .ok_or_else(|| not_found(id))?;
    Ok(provider.info(record, state.sessions.contains_key(id), now))
}

/// [`crate::SandboxProvider::list`]: by id, from the cursor on.
pub(super) async fn list(
    provider: &LocalProvider,
    query: &ListQuery,
) -> SandboxResult<SandboxPage> {
    provider.collect_idle().await;
    let now = provider.now();
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!("limit must be 1 to 200, not {limit}"),
        ));
    }
    let limit = usize::try_from(limit).unwrap_or(200);
    let state = provider.state();
    let mut items: Vec<SandboxInfo> = state
        .persisted
        .sandboxes
        .values()
        .filter(|record| {
            query
                .cursor
                .as_deref()
                .is_none_or(|after| *record.id > *after)
        })
        .map(|record| provider.info(record, state.sessions.contains_key(&record.id), now))
        .filter(|info| query.status.is_none_or(|status| info.status == status))
        .take(limit + 1)
        .collect();
    let next_cursor = if items.len() > limit {
        items.truncate(limit);
        items.last().map(|info| info.id.clone())
    } else {
        None
    };
    Ok(SandboxPage { items, next_cursor })
}

/// [`crate::SandboxProvider::stop`]: ends the session, keeps the files.
pub(super) async fn stop(provider: &LocalProvider, id: &str) -> SandboxResult<()> {
    if !provider.state().persisted.sandboxes.contains_key(id) {
        return Err(not_found(id));
    }
    provider.end_session(id).await
}

/// [`crate::SandboxProvider::delete`]: the record, its session and its own cargo.
pub(super) async fn delete(provider: &LocalProvider, id: &str) -> SandboxResult<()> {
    // The record goes first, so no call can start a session for it while it is deleted.
    let (cargo, runtime) = {
        let mut state = provider.state();
        if state.persisted.deleted.iter().any(|gone| gone == id) {
            return Ok(());
        }
        let record = state
            .persisted
            .sandboxes
            .remove(id)
            .ok_or_else(|| not_found(id))?;
        let runtime = detach(&mut state, id);
        state.persisted.deleted.push(id.to_owned());
        // Its own cargo goes with it; an external one stays for the next sandbox.
        let managed = state
            .persisted
            .cargos
            .get(&record.cargo_id)
            .is_none_or(|cargo| cargo.managed_by.as_deref() == Some(id));
        if managed {
            state.persisted.cargos.remove(&record.cargo_id);
        }
        provider.save(&state)?;
        (managed.then_some(record.cargo_id), runtime)
    };
    if let Some(runtime) = runtime {
        stop_runtime(runtime).await;
    }
    if let Some(cargo) = cargo {
        let workspace = provider.workspace(&cargo);
        if let Err(error) = tokio::fs::remove_dir_all(&workspace).await {
            tracing::warn!(workspace = %workspace.display(), %error, "a deleted sandbox's workspace was not removed");
        }
    }
    Ok(())
}

/// [`crate::SandboxProvider::extend_ttl`].
pub(super) async fn extend_ttl(
    provider: &LocalProvider,
    id: &str,
    extend_by: i64,
    idempotency_key: Option<&str>,
) -> SandboxResult<SandboxInfo> {
    let now = provider.now();
    let path = format!("/v1/sandboxes/{id}/extend_ttl");
    let print = fingerprint(&path, &serde_json::json!({ "extend_by": extend_by }));
    let mut state = provider.state();
    if let Some(replayed) = replay(&mut state, idempotency_key, &print, now)? {
        return Ok(replayed);
    }
    ttl::check_extend_by(extend_by)?;
    let record = state
        .persisted
        .sandboxes
        .get_mut(id)
        .ok_or_else(|| not_found(id))?;
    record.expires_at = Some(ttl::extend(id, record.expires_at, now, extend_by)?);
    let record = record.clone();
    // Bay computes this answer without the session (it shows `idle` while running).
    let info = provider.info(&record, false, now);
    remember(&mut state, idempotency_key, &print, 200, &info, now);
    provider.save(&state)?;
    Ok(info)
}

/// [`crate::SandboxProvider::keepalive`]: moves the idle deadline.
pub(super) async fn keepalive(provider: &LocalProvider, id: &str) -> SandboxResult<()> {
    let now = provider.now();
    let mut state = provider.state();
    let record = state
        .persisted
        .sandboxes
        .get_mut(id)
        .ok_or_else(|| not_found(id))?;
    // Only the idle deadline moves, and it is not kept across restarts: nothing to save.
    record.idle_expires_at = provider.idle_deadline(&record.profile, now);
    Ok(())
}

/// [`crate::SandboxProvider::profiles`]: the configured profiles as Bay shows them.
pub(super) async fn profiles(provider: &LocalProvider) -> SandboxResult<Vec<ProfileInfo>> {
    Ok(provider
        .inner
        .config
        .profiles
        .all()
        .iter()
        .map(|profile| ProfileInfo {
            id: profile.id.clone(),
            capabilities: profile.capabilities.clone(),
            idle_timeout: profile.idle_timeout,
            description: (!profile.description.is_empty()).then(|| profile.description.clone()),
            extra: serde_json::Map::from_iter(
                [("image".to_owned(), Value::from("local"))]
                    .into_iter()
                    .chain(
                        profile
                            .max_file_mb
                            .map(|mb| ("max_file_mb".to_owned(), Value::from(mb))),
                    )
                    // Always there, both fields (Bay's schema requires them): what is
                    // not limited is the machine's.
                    .chain(std::iter::once((
                        "resources".to_owned(),
                        shown_resources(profile),
                    ))),
            ),
        })
        .collect())
}

/// A profile's resources as `/v1/profiles` shows them: its limits, and the machine's CPUs and
/// memory where it sets none.
fn shown_resources(profile: &Profile) -> Value {
    let limits = profile.resources.clone().unwrap_or_default();
    let (host_cpus, host_memory) = isolation::host_resources();
    let mut shown = serde_json::Map::new();
    shown.insert(
        "cpus".to_owned(),
        Value::from(limits.cpus.unwrap_or(host_cpus)),
    );
    if let Some(memory) = limits.memory.or(host_memory) {
        shown.insert("memory".to_owned(), Value::from(memory));
    }
    Value::Object(shown)
}

//! Cargos: the workspace directories sandboxes mount, managed (one per sandbox) or external.

use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::fingerprint;
use crate::local::state::CargoRecord;
use crate::provider::{
    Cargo, CargoPage, CargoQuery, CreateCargo, DEFAULT_CARGO_SIZE_MB, MAX_CARGO_SIZE_MB,
    SandboxResult,
};

use super::replay::{remember, replay};
use super::{LocalProvider, random_hex};
/// How the local provider keeps cargos (Bay keeps them as `docker_volume`s).
pub(crate) const CARGO_BACKEND: &str = "local_directory";

fn cargo_of(id: &str, record: &CargoRecord) -> Cargo {
    Cargo {
        id: id.to_owned(),
        managed: record.managed_by.is_some(),
        managed_by_sandbox_id: record.managed_by.clone(),
        backend: CARGO_BACKEND.to_owned(),
        size_limit_mb: record.size_limit_mb,
        created_at: record.created_at,
        last_accessed_at: record.last_accessed_at,
    }
}

fn cargo_not_found(id: &str) -> SandboxError {
    SandboxError::new(ErrorCode::NotFound, format!("Cargo not found: {id}")).detail("cargo_id", id)
}

/// [`crate::SandboxProvider::create_cargo`]: an external cargo.
pub(super) async fn create(
    provider: &LocalProvider,
    request: &CreateCargo,
) -> SandboxResult<Cargo> {
    let size = request.size_limit_mb.unwrap_or(DEFAULT_CARGO_SIZE_MB);
    if !(1..=MAX_CARGO_SIZE_MB).contains(&size) {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!("size_limit_mb must be between 1 and {MAX_CARGO_SIZE_MB}, not {size}"),
        ));
    }
    let now = provider.now();
    let print = fingerprint(
        "/v1/cargos",
        &serde_json::json!({ "size_limit_mb": request.size_limit_mb }),
    );
    let mut state = provider.state();
    if let Some(replayed) = replay(&mut state, request.idempotency_key.as_deref(), &print, now)? {
        return Ok(replayed);
    }
    let id = format!("ws-{}", random_hex());
    let workspace = provider.workspace(&id);
    std::fs::create_dir_all(&workspace).map_err(|error| {
        SandboxError::new(
            ErrorCode::InternalError,
            format!("cannot create the cargo {}: {error}", workspace.display()),
        )
    })?;
    provider.hand_over(&workspace)?;
    let record = CargoRecord {
        managed_by: None,
        size_limit_mb: size,
        created_at: now,
        last_accessed_at: now,
    };
    let cargo = cargo_of(&id, &record);
    state.persisted.cargos.insert(id, record);
    remember(
        &mut state,
        request.idempotency_key.as_deref(),
        &print,
        201,
        &cargo,
        now,
    );
    provider.save(&state)?;
    Ok(cargo)
}

/// [`crate::SandboxProvider::list_cargos`].
pub(super) async fn list(provider: &LocalProvider, query: &CargoQuery) -> SandboxResult<CargoPage> {
    let limit = query.limit.unwrap_or(50).clamp(1, 200) as usize;
    let managed = query.managed.unwrap_or(false);
    let state = provider.state();
    let cargos: Vec<Cargo> = state
        .persisted
        .cargos
        .iter()
        .filter(|(_, record)| record.managed_by.is_some() == managed)
        .map(|(id, record)| cargo_of(id, record))
        .collect();
    // By id, as sandboxes are listed (the map keeps them so).
    let start = match &query.cursor {
        Some(cursor) => cargos
            .iter()
            .position(|cargo| cargo.id == *cursor)
            .map_or(cargos.len(), |at| at + 1),
        None => 0,
    };
    let items: Vec<Cargo> = cargos.iter().skip(start).take(limit).cloned().collect();
    let next_cursor = (start + items.len() < cargos.len())
        .then(|| items.last().map(|cargo| cargo.id.clone()))
        .flatten();
    Ok(CargoPage { items, next_cursor })
}

/// [`crate::SandboxProvider::get_cargo`].
pub(super) async fn get(provider: &LocalProvider, id: &str) -> SandboxResult<Cargo> {
    let state = provider.state();
    state
        .persisted
        .cargos
        .get(id)
        .map(|record| cargo_of(id, record))
        .ok_or_else(|| cargo_not_found(id))
}

/// [`crate::SandboxProvider::delete_cargo`]: refused while a sandbox mounts it.
pub(super) async fn delete(provider: &LocalProvider, id: &str) -> SandboxResult<()> {
    {
        let mut state = provider.state();
        if !state.persisted.cargos.contains_key(id) {
            return Err(cargo_not_found(id));
        }
        let users: Vec<String> = state
            .persisted
            .sandboxes
            .values()
            .filter(|record| record.cargo_id == id)
            .map(|record| record.id.clone())
            .collect();
        if !users.is_empty() {
            return Err(SandboxError::new(
                ErrorCode::Conflict,
                format!("Cargo {id} is in use by {}", users.join(", ")),
            )
            .detail("cargo_id", id)
            .detail("active_sandbox_ids", users));
        }
        state.persisted.cargos.remove(id);
        provider.save(&state)?;
    }
    let workspace = provider.workspace(id);
    if let Err(error) = tokio::fs::remove_dir_all(&workspace).await
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(cargo = %workspace.display(), %error, "a deleted cargo's files were not removed");
    }
    Ok(())
}

//! Garbage collection, as Bay's: idle sessions, expired sandboxes, orphan cargos.

use crate::error::{ErrorCode, SandboxError};
use crate::provider::{GC_TASKS, GcRun, GcStatus, GcTaskResult, SandboxProvider, SandboxResult};

use super::LocalProvider;
use super::session::{SharedRuntime, detach, stop_runtime};
pub(super) fn gc_result(task: &str) -> GcTaskResult {
    GcTaskResult {
        task_name: task.to_owned(),
        cleaned_count: 0,
        skipped_count: 0,
        errors: Vec::new(),
    }
}

impl LocalProvider {
    /// Stops the sessions whose idle deadline passed (Bay's idle GC): their files stay.
    /// Called before every call that uses a session (and before create, get and list); a
    /// server may also call it on a timer. It never waits for an execution in progress: the
    /// sessions are taken away at once and ended in the background.
    pub async fn collect_idle(&self) {
        if self.inner.config.auto_gc {
            self.stop_idle_sessions().await;
        }
    }
}

impl LocalProvider {
    /// Stops the sessions whose idle deadline passed; how many.
    pub(super) async fn stop_idle_sessions(&self) -> u64 {
        let now = self.now();
        let detached: Vec<(String, Option<SharedRuntime>)> = {
            let mut state = self.state();
            let idle: Vec<String> = state
                .sessions
                .keys()
                .filter(|id| {
                    state
                        .persisted
                        .sandboxes
                        .get(*id)
                        .and_then(|record| record.idle_expires_at)
                        .is_some_and(|deadline| now > deadline)
                })
                .cloned()
                .collect();
            let detached: Vec<_> = idle
                .into_iter()
                .map(|id| {
                    let runtime = detach(&mut state, &id);
                    (id, runtime)
                })
                .collect();
            detached
        };
        let stopped = detached.len() as u64;
        for (id, runtime) in detached {
            tracing::debug!(sandbox = %id, "idle timeout: stopping the session");
            if let Some(runtime) = runtime {
                tokio::spawn(stop_runtime(runtime));
            }
        }
        stopped
    }

    /// Deletes the sandboxes whose TTL passed (Bay's expired-sandbox GC); what it did.
    pub(super) async fn delete_expired(&self) -> GcTaskResult {
        let now = self.now();
        let (expired, alive): (Vec<String>, u64) = {
            let state = self.state();
            let expired: Vec<String> = state
                .persisted
                .sandboxes
                .values()
                .filter(|record| record.expires_at.is_some_and(|at| now > at))
                .map(|record| record.id.clone())
                .collect();
            let alive = state.persisted.sandboxes.len() as u64 - expired.len() as u64;
            (expired, alive)
        };
        let mut result = gc_result("expired_sandbox");
        result.skipped_count = alive;
        for id in expired {
            match self.delete(&id).await {
                Ok(()) => result.cleaned_count += 1,
                Err(error) => result.errors.push(format!("{id}: {}", error.message)),
            }
        }
        result
    }

    /// Removes managed cargos whose sandbox is gone, and cargo directories no record knows
    /// (left by a crash); never an external cargo (Bay's orphan-cargo GC).
    pub(super) async fn remove_orphan_cargos(&self) -> GcTaskResult {
        let mut result = gc_result("orphan_cargo");
        let orphans: Vec<String> = {
            let mut state = self.state();
            let persisted = &mut state.persisted;
            let mut orphans: Vec<String> = persisted
                .cargos
                .iter()
                .filter(|(_, cargo)| {
                    cargo
                        .managed_by
                        .as_ref()
                        .is_some_and(|owner| !persisted.sandboxes.contains_key(owner))
                })
                .map(|(id, _)| id.clone())
                .collect();
            result.skipped_count = (persisted.cargos.len() - orphans.len()) as u64;
            for id in &orphans {
                persisted.cargos.remove(id);
            }
            let in_use: std::collections::HashSet<&str> = persisted
                .sandboxes
                .values()
                .map(|record| record.cargo_id.as_str())
                .collect();
            let listed = std::fs::read_dir(self.inner.config.data_dir.join("cargos"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok());
            for name in listed {
                if !persisted.cargos.contains_key(&name)
                    && !in_use.contains(name.as_str())
                    && !orphans.contains(&name)
                {
                    orphans.push(name);
                }
            }
            if let Err(error) = self.save(&state) {
                result.errors.push(error.message);
            }
            orphans
        };
        for id in orphans {
            let workspace = self.workspace(&id);
            match tokio::fs::remove_dir_all(&workspace).await {
                Ok(()) => result.cleaned_count += 1,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    result.cleaned_count += 1;
                }
                Err(error) => result.errors.push(format!("{id}: {error}")),
            }
        }
        result
    }
}

/// [`crate::SandboxProvider::run_gc`]: the tasks asked for, in order.
pub(super) async fn run(
    provider: &LocalProvider,
    tasks: Option<&[String]>,
) -> SandboxResult<GcRun> {
    let started = std::time::Instant::now();
    let wanted: Vec<String> = match tasks {
        Some(tasks) => tasks.to_vec(),
        None => GC_TASKS.iter().map(|task| (*task).to_owned()).collect(),
    };
    if let Some(unknown) = wanted
        .iter()
        .find(|task| !GC_TASKS.contains(&task.as_str()))
    {
        return Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!(
                "Unknown GC task: {unknown} (known: {})",
                GC_TASKS.join(", ")
            ),
        ));
    }
    let mut results = Vec::new();
    for task in &wanted {
        let result = match task.as_str() {
            "idle_session" => {
                let mut result = gc_result("idle_session");
                result.cleaned_count = provider.stop_idle_sessions().await;
                result
            }
            "expired_sandbox" => provider.delete_expired().await,
            "orphan_cargo" => provider.remove_orphan_cargos().await,
            // No containers here: nothing to collect.
            other => gc_result(other),
        };
        results.push(result);
    }
    Ok(GcRun {
        total_cleaned: results.iter().map(|result| result.cleaned_count).sum(),
        total_errors: results
            .iter()
            .map(|result| result.errors.len() as u64)
            .sum(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        results,
    })
}

/// [`crate::SandboxProvider::gc_status`].
pub(super) async fn status(provider: &LocalProvider) -> SandboxResult<GcStatus> {
    let enabled = provider.inner.config.auto_gc;
    Ok(GcStatus {
        enabled,
        is_running: false,
        instance_id: "wayline-local".to_owned(),
        interval_seconds: 0,
        tasks: GC_TASKS
            .iter()
            .map(|task| {
                // Automatically, only idle sessions are collected (on every call).
                let on = enabled && *task == "idle_session";
                ((*task).to_owned(), [("enabled".to_owned(), on)].into())
            })
            .collect(),
    })
}

//! A sandbox's session: its runtime (processes and scratch directory), the checks that
//! start one for a capability call, and ending it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::error::{ErrorCode, SandboxError};
use crate::local::python::PythonSession;
use crate::path::{self as paths, PathField};
use crate::profile::Profile;
use crate::provider::SandboxResult;

use super::{LocalProvider, State, not_found, quote, random_hex};
/// A session's processes: its Python process, once started, and the process groups of the
/// shell commands it ran (a command's background jobs outlive the command, as they would in
/// Bay's container, until the session ends).
#[derive(Debug)]
pub(super) struct Runtime {
    pub(super) python: tokio::sync::Mutex<Option<PythonSession>>,
    pub(super) shell_groups: std::sync::Mutex<Vec<u32>>,
    /// The session's scratch directory (`/tmp` under bubblewrap, user installs in either
    /// mode), made at its first command and removed when the session ends.
    pub(super) scratch: PathBuf,
}

impl Runtime {
    pub(super) fn new(scratch: PathBuf) -> Self {
        Runtime {
            python: tokio::sync::Mutex::default(),
            shell_groups: std::sync::Mutex::default(),
            scratch,
        }
    }

    /// The scratch directory, made if it is not there yet.
    pub(super) fn scratch(&self) -> SandboxResult<PathBuf> {
        std::fs::create_dir_all(&self.scratch).map_err(|error| {
            SandboxError::new(
                ErrorCode::ShipError,
                format!(
                    "cannot make the session's scratch directory {}: {error}",
                    self.scratch.display()
                ),
            )
        })?;
        Ok(self.scratch.clone())
    }
}

pub(super) type SharedRuntime = Arc<Runtime>;

/// A sandbox's running session: its id and its runtime.
#[derive(Debug)]
pub(super) struct SandboxSession {
    pub(super) id: String,
    pub(super) runtime: SharedRuntime,
}

/// What a capability call works with once its checks passed.
pub(super) struct Ready {
    pub(super) workspace: PathBuf,
    pub(super) session_id: String,
    pub(super) env: Vec<(String, String)>,
    /// The largest file the sandbox's file calls may move (provider and profile).
    pub(super) max_file_bytes: u64,
    /// The data limit of each process the session starts (the profile's memory).
    pub(super) memory_bytes: Option<u64>,
    /// The session's runtime, taken with the session (so a stop in between cannot leave a
    /// process outside any session).
    pub(super) runtime: SharedRuntime,
}

/// Bay's env file: the profile's variables in `/workspace/.bay_env.sh`, one `export` each
/// (names a shell cannot hold are left out). A file that cannot be written is no failure of the
/// call: the variables are in every process's environment anyway.
fn write_env_file(workspace: &Path, env: &[(String, String)]) {
    let mut text =
        String::from("# The sandbox profile's environment (written by wayline, as Bay does).\n");
    for (name, value) in env {
        let shell_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if shell_name {
            text.push_str(&format!("export {name}={}\n", quote(value)));
        }
    }
    if let Err(error) = std::fs::write(workspace.join(".bay_env.sh"), text) {
        tracing::warn!(%error, "the profile's env file was not written");
    }
}

/// Takes a sandbox's session away (its runtime is returned, to be ended by the caller).
pub(super) fn detach(state: &mut State, id: &str) -> Option<SharedRuntime> {
    if let Some(record) = state.persisted.sandboxes.get_mut(id) {
        record.idle_expires_at = None;
    }
    state.sessions.remove(id).map(|session| session.runtime)
}

/// Ends a runtime's processes: every shell command's process group (its background jobs
/// included), then the Python process (after the execution in progress, if any).
pub(super) async fn stop_runtime(runtime: SharedRuntime) {
    let groups = std::mem::take(
        &mut *runtime
            .shell_groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for group in groups {
        crate::local::isolation::kill_group(Some(group)).await;
    }
    if let Some(python) = runtime.python.lock().await.take() {
        python.stop().await;
    }
    // What the session kept outside its workspace (its /tmp, user installs) ends with it.
    let _ = tokio::fs::remove_dir_all(&runtime.scratch).await;
}

impl LocalProvider {
    /// When a session of a sandbox of `profile` goes idle if nothing happens from `now` on:
    /// the profile's idle timeout (1,800 s for a profile no longer configured).
    pub(super) fn idle_deadline(&self, profile: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let idle = self
            .inner
            .config
            .profiles
            .get(profile)
            .map_or(1_800, |profile| profile.idle_timeout);
        chrono::Duration::try_seconds(i64::try_from(idle).unwrap_or(i64::MAX))
            .and_then(|length| now.checked_add_signed(length))
    }

    /// Ends a sandbox's session (waiting for an execution in progress), keeping its files.
    pub(super) async fn end_session(&self, id: &str) -> SandboxResult<()> {
        let runtime = {
            let mut state = self.state();
            detach(&mut state, id)
        };
        if let Some(runtime) = runtime {
            stop_runtime(runtime).await;
        }
        Ok(())
    }

    /// Bay's checks for a capability call, in its order: the sandbox exists, its profile has
    /// `capability`; then `check` (the paths); then the session is started if needed (not on
    /// an expired sandbox) and the idle deadline moved.
    pub(super) async fn begin(
        &self,
        id: &str,
        capability: &str,
        check: impl FnOnce() -> SandboxResult<()>,
    ) -> SandboxResult<Ready> {
        self.collect_idle().await;
        let now = self.now();
        let mut state = self.state();
        let record = state
            .persisted
            .sandboxes
            .get(id)
            .ok_or_else(|| not_found(id))?;
        if !record.capabilities.iter().any(|held| held == capability) {
            return Err(SandboxError::new(
                ErrorCode::CapabilityNotSupported,
                format!(
                    "Profile `{}` does not support `{capability}`",
                    record.profile
                ),
            )
            .detail("capability", capability)
            .detail("available", record.capabilities.clone()));
        }
        check()?;
        if let Some(expires_at) = record.expires_at.filter(|at| now > *at) {
            return Err(SandboxError::new(
                ErrorCode::SandboxExpired,
                "Sandbox has expired; create a new one",
            )
            .detail("sandbox_id", id)
            .detail("expires_at", crate::time::format(expires_at)));
        }
        let profile = self.inner.config.profiles.get(&record.profile).ok();
        let env: Vec<(String, String)> = profile
            .map(|profile| {
                profile
                    .env
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let provider_limit = self.inner.config.max_file_bytes;
        let max_file_bytes =
            profile.map_or(provider_limit, |profile| profile.file_limit(provider_limit));
        let memory_bytes = profile.and_then(Profile::memory_limit);
        let workspace = self.workspace(&record.cargo_id);
        let deadline = self.idle_deadline(&record.profile, now);
        if let Some(record) = state.persisted.sandboxes.get_mut(id) {
            record.idle_expires_at = deadline;
        }
        if !state.sessions.contains_key(id) {
            // As Bay's Ship: the profile's environment, also as a file code can source.
            write_env_file(&workspace, &env);
            let _ = self
                .inner
                .isolation
                .hand_over(&workspace.join(".bay_env.sh"));
        }
        let session = state.sessions.entry(id.to_owned()).or_insert_with(|| {
            let id = format!("sess-{}", random_hex());
            let scratch = self.inner.config.data_dir.join("scratch").join(&id);
            SandboxSession {
                id,
                runtime: Arc::new(Runtime::new(scratch)),
            }
        });
        Ok(Ready {
            workspace,
            session_id: session.id.clone(),
            env,
            max_file_bytes,
            memory_bytes,
            runtime: Arc::clone(&session.runtime),
        })
    }

    /// The Python interpreter to start: `sys.executable` of the configured one, or the
    /// configured one itself when it cannot say (it then fails to start, with its error).
    pub(super) async fn interpreter(&self) -> &str {
        self.inner
            .interpreter
            .get_or_init(|| async {
                // Asked as the user the code runs as: root's interpreter may be where that
                // user cannot reach (pyenv under /root).
                let python = &self.inner.config.python;
                let asked = self
                    .inner
                    .isolation
                    .host_command(python, &["-c", "import sys; print(sys.executable)"])
                    .stdin(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .output()
                    .await;
                match asked {
                    Ok(output) if output.status.success() => {
                        let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
                        if path.is_empty() {
                            python.clone()
                        } else {
                            path
                        }
                    }
                    _ => python.clone(),
                }
            })
            .await
    }

    /// Gives `path` to the user code runs as (see [`Isolation::hand_over`]).
    pub(super) fn hand_over(&self, path: &Path) -> SandboxResult<()> {
        self.hand_over_within(path, path)
    }

    /// Gives `path` and the directories between it and `workspace` to the user code runs as.
    pub(super) fn hand_over_within(&self, workspace: &Path, path: &Path) -> SandboxResult<()> {
        self.inner
            .isolation
            .hand_over_within(workspace, path)
            .map_err(|error| {
                SandboxError::new(
                    ErrorCode::InternalError,
                    format!(
                        "cannot give {} to the sandbox's user: {error}",
                        path.display()
                    ),
                )
            })
    }

    pub(super) fn resolve(
        &self,
        ready: &Ready,
        normalized: &str,
        field: PathField,
    ) -> SandboxResult<PathBuf> {
        paths::resolve(&ready.workspace, normalized, field)
    }

    /// The workspace path `normalized` as Bay shows it in listings (`/workspace/src`),
    /// whatever the isolation.
    pub(super) fn shown(normalized: &str) -> PathBuf {
        let root = PathBuf::from(crate::local::isolation::SANDBOX_ROOT);
        if normalized == "." {
            root
        } else {
            root.join(normalized)
        }
    }

    /// The checks of a filesystem call, and its normalized path.
    pub(super) async fn file_call(&self, id: &str, path: &str) -> SandboxResult<(Ready, String)> {
        let mut normalized = String::new();
        let ready = self
            .begin(id, "filesystem", || {
                normalized = paths::normalize(path, PathField::Path)?;
                Ok(())
            })
            .await?;
        Ok((ready, normalized))
    }
}

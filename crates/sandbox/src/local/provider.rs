//! [`LocalProvider`]: Bay's sandbox API over directories and processes of this machine.
//!
//! Layout of the data directory:
//!
//! ```text
//! DATA_DIR/.lock                  held while a provider uses the directory
//! DATA_DIR/state.json             sandboxes and idempotency keys
//! DATA_DIR/cargos/ws-<hex>/       one workspace per sandbox (the code's cwd and $HOME)
//! DATA_DIR/history/<id>.jsonl     executions (kept after the sandbox is deleted)
//! DATA_DIR/skills.json            skill candidates, evaluations and releases
//! DATA_DIR/skills/blob-<hex>.json skill payloads
//! ```
//!
//! A sandbox's runtime (its "session") starts on the first exec or file call and ends on
//! `stop`, on the idle timeout, or when the provider is dropped; files stay until `delete`.
//! Python runs in one persistent process per session; shell commands each run `bash -lc`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::clock::{self, Clock, SystemClock};
use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::{IdempotencyStore, Lookup, fingerprint};
use crate::local::files;
use crate::local::isolation::{self, Isolation, IsolationMode, Limits};
use crate::local::python::PythonSession;
use crate::local::shell;
use crate::local::skills::Skills;
use crate::local::state::{self, CargoRecord, Persisted, Record};
use crate::model::{FileEntry, PythonResult, SandboxInfo, ShellResult, Status};
use crate::path::{self as paths, PathField};
use crate::profile::{Profile, Profiles};
use crate::provider::{
    Annotation, Cargo, CargoPage, CargoQuery, CreateCargo, CreateSandbox, DEFAULT_CARGO_SIZE_MB,
    GC_TASKS, GcRun, GcStatus, GcTaskResult, HistoryEntry, HistoryPage, HistoryQuery, ListQuery,
    MAX_CARGO_SIZE_MB, MAX_EXEC_TIMEOUT_SECS, ProfileInfo, PythonExec, SandboxPage,
    SandboxProvider, SandboxResult, ShellExec, Uploaded,
};
use crate::skills::{
    CandidateQuery, Deleted, Evaluation, NewCandidate, NewPayload, PayloadRef, Promotion,
    ReleaseHealth, ReleaseQuery, SkillCandidate, SkillEvaluation, SkillLifecycle, SkillPage,
    SkillPayload, SkillRelease,
};
use crate::ttl;

/// How a local provider is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LocalConfig {
    /// Where workspaces, state and history live.
    pub data_dir: PathBuf,
    /// The profiles offered (Bay's two defaults unless set).
    pub profiles: Profiles,
    /// The Python interpreter (`python3`).
    pub python: String,
    /// Which isolation to use.
    pub isolation: IsolationMode,
    /// The largest file written, uploaded, read or downloaded, in bytes (100 MiB).
    pub max_file_bytes: u64,
    /// How long idempotency keys live (Bay's default: an hour).
    pub idempotency_ttl: Duration,
    /// The clock (tests move one by hand).
    pub clock: Arc<dyn Clock>,
    /// Whether garbage is collected on every call (see [`LocalConfig::auto_gc`]).
    pub auto_gc: bool,
}

impl LocalConfig {
    /// Defaults, with the data in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        LocalConfig {
            data_dir: data_dir.into(),
            profiles: Profiles::bay_defaults(),
            python: "python3".to_owned(),
            isolation: IsolationMode::Auto,
            max_file_bytes: 100 * 1024 * 1024,
            idempotency_ttl: Duration::from_secs(3_600),
            clock: Arc::new(SystemClock),
            auto_gc: true,
        }
    }

    /// Offers `profiles`.
    pub fn profiles(mut self, profiles: Profiles) -> Self {
        self.profiles = profiles;
        self
    }

    /// Collects garbage on every call (`true`, the default): idle sessions are stopped as
    /// soon as a call sees their deadline passed. `false` leaves everything as it is until
    /// [`SandboxProvider::run_gc`] runs, as Bay does with its GC disabled.
    pub fn auto_gc(mut self, auto: bool) -> Self {
        self.auto_gc = auto;
        self
    }

    /// Uses `isolation`.
    pub fn isolation(mut self, isolation: IsolationMode) -> Self {
        self.isolation = isolation;
        self
    }

    /// Reads the time from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Files may have at most `bytes`.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// Uses this Python interpreter.
    pub fn python(mut self, program: impl Into<String>) -> Self {
        self.python = program.into();
        self
    }
}

/// A session's processes: its Python process, once started, and the process groups of the
/// shell commands it ran (a command's background jobs outlive the command, as they would in
/// Bay's container, until the session ends).
#[derive(Debug)]
struct Runtime {
    python: tokio::sync::Mutex<Option<PythonSession>>,
    shell_groups: std::sync::Mutex<Vec<u32>>,
    /// The session's scratch directory (`/tmp` under bubblewrap, user installs in either
    /// mode), made at its first command and removed when the session ends.
    scratch: PathBuf,
}

impl Runtime {
    fn new(scratch: PathBuf) -> Self {
        Runtime {
            python: tokio::sync::Mutex::default(),
            shell_groups: std::sync::Mutex::default(),
            scratch,
        }
    }

    /// The scratch directory, made if it is not there yet.
    fn scratch(&self) -> SandboxResult<PathBuf> {
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

type SharedRuntime = Arc<Runtime>;

/// A sandbox's running session: its id and its runtime.
#[derive(Debug)]
struct SandboxSession {
    id: String,
    runtime: SharedRuntime,
}

#[derive(Debug)]
struct State {
    persisted: Persisted,
    /// Sandboxes with a running session.
    sessions: HashMap<String, SandboxSession>,
}

#[derive(Debug)]
struct Inner {
    config: LocalConfig,
    isolation: Isolation,
    state: Mutex<State>,
    /// The interpreter's own path, asked of `python` once: a launcher in between (pyenv's
    /// shims are shell scripts) would otherwise add its start-up to every cold start.
    interpreter: tokio::sync::OnceCell<String>,
    /// The skill lifecycle's books.
    skills: Skills,
    /// Held (locked) for the provider's life: one provider per data directory.
    _lock: File,
}

/// The embedded sandbox provider. Cheap to clone (clones share the sandboxes).
///
/// **Not a security boundary**: code runs as the user running wayline (inside `bubblewrap`
/// when it is installed, which still shares the network and the kernel). Run only code you
/// would run yourself; for untrusted code use Bay through [`BayClient`](crate::BayClient).
#[derive(Debug, Clone)]
pub struct LocalProvider {
    inner: Arc<Inner>,
}

/// What a capability call works with once its checks passed.
struct Ready {
    workspace: PathBuf,
    session_id: String,
    env: Vec<(String, String)>,
    /// The largest file the sandbox's file calls may move (provider and profile).
    max_file_bytes: u64,
    /// The data limit of each process the session starts (the profile's memory).
    memory_bytes: Option<u64>,
    /// The session's runtime, taken with the session (so a stop in between cannot leave a
    /// process outside any session).
    runtime: SharedRuntime,
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

fn gc_result(task: &str) -> GcTaskResult {
    GcTaskResult {
        task_name: task.to_owned(),
        cleaned_count: 0,
        skipped_count: 0,
        errors: Vec::new(),
    }
}

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

fn not_found(id: &str) -> SandboxError {
    SandboxError::new(ErrorCode::NotFound, format!("Sandbox not found: {id}"))
        .detail("sandbox_id", id)
}

/// Takes a sandbox's session away (its runtime is returned, to be ended by the caller).
fn detach(state: &mut State, id: &str) -> Option<SharedRuntime> {
    if let Some(record) = state.persisted.sandboxes.get_mut(id) {
        record.idle_expires_at = None;
    }
    state.sessions.remove(id).map(|session| session.runtime)
}

/// The stored reply to a request repeated with its idempotency `key` (and the same
/// `fingerprint`), if there is one; a key reused for another request is an error. Expired
/// keys are purged first.
fn replay<T: serde::de::DeserializeOwned>(
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
fn remember(
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

/// Ends a runtime's processes: every shell command's process group (its background jobs
/// included), then the Python process (after the execution in progress, if any).
async fn stop_runtime(runtime: SharedRuntime) {
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

fn random_hex() -> String {
    format!("{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn check_timeout(seconds: u64) -> SandboxResult<Duration> {
    if (1..=MAX_EXEC_TIMEOUT_SECS).contains(&seconds) {
        Ok(Duration::from_secs(seconds))
    } else {
        Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!("timeout must be 1 to {MAX_EXEC_TIMEOUT_SECS} seconds, not {seconds}"),
        )
        .detail("field", "timeout"))
    }
}

/// How long [`take_lock`] waits for a lock that is held.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// Takes the data directory's lock, waiting up to [`LOCK_WAIT`] when it is held. The wait is
/// not for another provider (which holds it for its whole life) but for a process forked
/// elsewhere in this one: between its fork and its exec it shares every open file, the lock of
/// a provider just dropped included, so a restart in a process that starts commands on other
/// threads could otherwise find its own released lock still held for a moment.
/// `Ok(false)` when it is still held after the wait.
fn take_lock(lock: &File) -> std::io::Result<bool> {
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::Error(error)) => return Err(error),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() >= deadline => {
                return Ok(false);
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// `text` quoted for bash.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl LocalProvider {
    /// Opens (or starts) the data directory: the sandboxes a previous provider left there are
    /// known again, without sessions. Fails when another provider uses the directory, or
    /// when the isolation asked for is not available.
    pub fn open(config: LocalConfig) -> SandboxResult<LocalProvider> {
        let internal = |message: String| SandboxError::new(ErrorCode::InternalError, message);
        let dir = &config.data_dir;
        for sub in ["cargos", "history"] {
            std::fs::create_dir_all(dir.join(sub))
                .map_err(|error| internal(format!("cannot create {}: {error}", dir.display())))?;
        }
        let lock = File::create(dir.join(".lock"))
            .map_err(|error| internal(format!("cannot create {}/.lock: {error}", dir.display())))?;
        let locked = take_lock(&lock)
            .map_err(|error| internal(format!("cannot lock {}/.lock: {error}", dir.display())))?;
        if !locked {
            return Err(internal(format!(
                "{} is in use by another wayline sandbox provider; stop it or use another --data-dir",
                dir.display()
            )));
        }
        let isolation =
            Isolation::choose(config.isolation).map_err(|error| internal(error.to_string()))?;
        let mut persisted = state::load(dir)?
            .unwrap_or_else(|| Persisted::new(IdempotencyStore::new(config.idempotency_ttl)));
        // No session survives a restart; neither does an idle deadline.
        for record in persisted.sandboxes.values_mut() {
            record.idle_expires_at = None;
        }
        // A state kept before cargos were: each sandbox's workspace is its managed cargo.
        let unkept: Vec<(String, CargoRecord)> = persisted
            .sandboxes
            .values()
            .filter(|record| !persisted.cargos.contains_key(&record.cargo_id))
            .map(|record| {
                (
                    record.cargo_id.clone(),
                    CargoRecord {
                        managed_by: Some(record.id.clone()),
                        size_limit_mb: DEFAULT_CARGO_SIZE_MB,
                        created_at: record.created_at,
                        last_accessed_at: record.created_at,
                    },
                )
            })
            .collect();
        persisted.cargos.extend(unkept);
        let skills = Skills::open(dir, Arc::clone(&config.clock))?;
        tracing::info!(isolation = isolation.describe(), data_dir = %dir.display(), "local sandbox provider");
        Ok(LocalProvider {
            inner: Arc::new(Inner {
                config,
                isolation,
                state: Mutex::new(State {
                    persisted,
                    sessions: HashMap::new(),
                }),
                interpreter: tokio::sync::OnceCell::new(),
                skills,
                _lock: lock,
            }),
        })
    }

    /// The isolation in use.
    pub fn isolation(&self) -> &Isolation {
        &self.inner.isolation
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.config.data_dir
    }

    /// Now, to the microsecond ([`clock::bay_now`]).
    fn now(&self) -> DateTime<Utc> {
        clock::bay_now(self.inner.config.clock.as_ref())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// When a session of a sandbox of `profile` goes idle if nothing happens from `now` on:
    /// the profile's idle timeout (1,800 s for a profile no longer configured).
    fn idle_deadline(&self, profile: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let idle = self
            .inner
            .config
            .profiles
            .get(profile)
            .map_or(1_800, |profile| profile.idle_timeout);
        chrono::Duration::try_seconds(i64::try_from(idle).unwrap_or(i64::MAX))
            .and_then(|length| now.checked_add_signed(length))
    }

    /// Writes `state.json`: only for changes that outlast a restart (sandboxes, deletions,
    /// idempotency replies); session ids and idle deadlines are not kept across one.
    fn save(&self, state: &State) -> SandboxResult<()> {
        state::save(&self.inner.config.data_dir, &state.persisted)
    }

    fn workspace(&self, cargo_id: &str) -> PathBuf {
        self.inner.config.data_dir.join("cargos").join(cargo_id)
    }

    fn info(&self, record: &Record, session: bool, now: DateTime<Utc>) -> SandboxInfo {
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

    /// Stops the sessions whose idle deadline passed (Bay's idle GC): their files stay.
    /// Called before every call that uses a session (and before create, get and list); a
    /// server may also call it on a timer. It never waits for an execution in progress: the
    /// sessions are taken away at once and ended in the background.
    pub async fn collect_idle(&self) {
        if self.inner.config.auto_gc {
            self.stop_idle_sessions().await;
        }
    }

    /// Stops the sessions whose idle deadline passed; how many.
    async fn stop_idle_sessions(&self) -> u64 {
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
    async fn delete_expired(&self) -> GcTaskResult {
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
    async fn remove_orphan_cargos(&self) -> GcTaskResult {
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

    /// Ends a sandbox's session (waiting for an execution in progress), keeping its files.
    async fn end_session(&self, id: &str) -> SandboxResult<()> {
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
    async fn begin(
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
    async fn interpreter(&self) -> &str {
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
    fn hand_over(&self, path: &Path) -> SandboxResult<()> {
        self.hand_over_within(path, path)
    }

    /// Gives `path` and the directories between it and `workspace` to the user code runs as.
    fn hand_over_within(&self, workspace: &Path, path: &Path) -> SandboxResult<()> {
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

    fn record_history(&self, id: &str, entry: &HistoryEntry) {
        if let Err(error) = state::append_history(&self.inner.config.data_dir, id, entry) {
            tracing::warn!(sandbox = %id, %error, "an execution was not recorded in the history");
        }
    }

    fn resolve(&self, ready: &Ready, normalized: &str, field: PathField) -> SandboxResult<PathBuf> {
        paths::resolve(&ready.workspace, normalized, field)
    }

    /// The workspace path `normalized` as Bay shows it in listings (`/workspace/src`),
    /// whatever the isolation.
    fn shown(normalized: &str) -> PathBuf {
        let root = PathBuf::from(crate::local::isolation::SANDBOX_ROOT);
        if normalized == "." {
            root
        } else {
            root.join(normalized)
        }
    }
}

#[async_trait::async_trait]
impl SandboxProvider for LocalProvider {
    async fn create(&self, request: &CreateSandbox) -> SandboxResult<SandboxInfo> {
        self.collect_idle().await;
        let now = self.now();
        let print = fingerprint("/v1/sandboxes", &request.canonical_body());
        let mut state = self.state();
        if let Some(replayed) = replay(&mut state, request.idempotency_key.as_deref(), &print, now)?
        {
            return Ok(replayed);
        }
        let profile = self.inner.config.profiles.get(&request.profile)?;
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
        let workspace = self.workspace(&record.cargo_id);
        std::fs::create_dir_all(&workspace).map_err(|error| {
            SandboxError::new(
                ErrorCode::InternalError,
                format!(
                    "cannot create the workspace {}: {error}",
                    workspace.display()
                ),
            )
        })?;
        self.hand_over(&workspace)?;
        let info = self.info(&record, false, now);
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
        self.save(&state)?;
        Ok(info)
    }

    async fn get(&self, id: &str) -> SandboxResult<SandboxInfo> {
        self.collect_idle().await;
        let now = self.now();
        let state = self.state();
        let record = state
            .persisted
            .sandboxes
            .get(id)
            .ok_or_else(|| not_found(id))?;
        Ok(self.info(record, state.sessions.contains_key(id), now))
    }

    async fn list(&self, query: &ListQuery) -> SandboxResult<SandboxPage> {
        self.collect_idle().await;
        let now = self.now();
        let limit = query.limit.unwrap_or(50);
        if !(1..=200).contains(&limit) {
            return Err(SandboxError::new(
                ErrorCode::ValidationError,
                format!("limit must be 1 to 200, not {limit}"),
            ));
        }
        let limit = usize::try_from(limit).unwrap_or(200);
        let state = self.state();
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
            .map(|record| self.info(record, state.sessions.contains_key(&record.id), now))
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

    async fn stop(&self, id: &str) -> SandboxResult<()> {
        if !self.state().persisted.sandboxes.contains_key(id) {
            return Err(not_found(id));
        }
        self.end_session(id).await
    }

    async fn delete(&self, id: &str) -> SandboxResult<()> {
        // The record goes first, so no call can start a session for it while it is deleted.
        let (cargo, runtime) = {
            let mut state = self.state();
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
            self.save(&state)?;
            (managed.then_some(record.cargo_id), runtime)
        };
        if let Some(runtime) = runtime {
            stop_runtime(runtime).await;
        }
        if let Some(cargo) = cargo {
            let workspace = self.workspace(&cargo);
            if let Err(error) = tokio::fs::remove_dir_all(&workspace).await {
                tracing::warn!(workspace = %workspace.display(), %error, "a deleted sandbox's workspace was not removed");
            }
        }
        Ok(())
    }

    async fn extend_ttl(
        &self,
        id: &str,
        extend_by: i64,
        idempotency_key: Option<&str>,
    ) -> SandboxResult<SandboxInfo> {
        let now = self.now();
        let path = format!("/v1/sandboxes/{id}/extend_ttl");
        let print = fingerprint(&path, &serde_json::json!({ "extend_by": extend_by }));
        let mut state = self.state();
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
        let info = self.info(&record, false, now);
        remember(&mut state, idempotency_key, &print, 200, &info, now);
        self.save(&state)?;
        Ok(info)
    }

    async fn keepalive(&self, id: &str) -> SandboxResult<()> {
        let now = self.now();
        let mut state = self.state();
        let record = state
            .persisted
            .sandboxes
            .get_mut(id)
            .ok_or_else(|| not_found(id))?;
        // Only the idle deadline moves, and it is not kept across restarts: nothing to save.
        record.idle_expires_at = self.idle_deadline(&record.profile, now);
        Ok(())
    }

    async fn python_exec(&self, id: &str, request: &PythonExec) -> SandboxResult<PythonResult> {
        let timeout = check_timeout(request.timeout)?;
        let ready = self.begin(id, "python", || Ok(())).await?;
        let started = Instant::now();
        let mut python_slot = ready.runtime.python.lock().await;
        if !python_slot.as_mut().is_some_and(PythonSession::alive) {
            if let Some(old) = python_slot.take() {
                old.stop().await;
            }
            let scratch = ready.runtime.scratch()?;
            self.hand_over(&scratch)?;
            self.hand_over(&ready.workspace)?;
            let command = self.inner.isolation.command_in(
                self.interpreter().await,
                &PythonSession::driver_args(),
                &ready.workspace,
                ".",
                &ready.env,
                &Limits {
                    scratch: Some(&scratch),
                    memory_bytes: ready.memory_bytes,
                    hidden: Some(&self.inner.config.data_dir),
                },
            );
            match PythonSession::start(command).await {
                Ok(python) => *python_slot = Some(python),
                Err(error) => {
                    // No runtime came up: the sandbox is idle again, not `ready`.
                    drop(python_slot);
                    let _ = self.end_session(id).await;
                    return Err(error);
                }
            }
        }
        let Some(python) = python_slot.as_mut() else {
            return Err(SandboxError::new(
                ErrorCode::InternalError,
                "the Python session did not start",
            ));
        };
        let executed = python.exec(&request.code, timeout).await;
        let execution_id = format!("exec-{}", random_hex());
        let (success, output, error, data) = match executed {
            Ok(done) => (
                done.success,
                done.output,
                done.error,
                Some(serde_json::json!({
                    "execution_count": done.execution_count,
                    "output": {"text": done.text, "images": []},
                })),
            ),
            Err(error) if error.code == ErrorCode::Timeout => {
                // The process was killed: the next call starts a new one.
                *python_slot = None;
                (false, String::new(), Some(error.message), None)
            }
            Err(error) => {
                *python_slot = None;
                return Err(error);
            }
        };
        drop(python_slot);
        let result = PythonResult {
            success,
            output,
            error,
            data,
            execution_id,
            execution_time_ms: elapsed_ms(started),
            code: request.include_code.then(|| request.code.clone()),
        };
        self.record_history(
            id,
            &HistoryEntry {
                id: result.execution_id.clone(),
                session_id: Some(ready.session_id),
                exec_type: "python".to_owned(),
                code: request.code.clone(),
                success: result.success,
                execution_time_ms: result.execution_time_ms,
                output: Some(result.output.clone()),
                error: result.error.clone(),
                description: request.description.clone(),
                tags: request.tags.clone(),
                notes: None,
                created_at: self.now(),
            },
        );
        Ok(result)
    }

    async fn shell_exec(&self, id: &str, request: &ShellExec) -> SandboxResult<ShellResult> {
        let timeout = check_timeout(request.timeout)?;
        let mut cwd = ".".to_owned();
        let ready = self
            .begin(id, "shell", || {
                if let Some(given) = &request.cwd {
                    cwd = paths::normalize(given, PathField::Cwd)?;
                }
                Ok(())
            })
            .await?;
        self.resolve(&ready, &cwd, PathField::Cwd)?;
        // As Ship: `cd <cwd> && <command>`, so a missing directory is the command's failure.
        let script = if cwd == "." {
            request.command.clone()
        } else {
            format!("cd {} && {}", quote(&cwd), request.command)
        };
        let scratch = ready.runtime.scratch()?;
        self.hand_over(&scratch)?;
        self.hand_over(&ready.workspace)?;
        let command = self.inner.isolation.command_in(
            "bash",
            &["-lc", &script],
            &ready.workspace,
            ".",
            &ready.env,
            &Limits {
                scratch: Some(&scratch),
                memory_bytes: ready.memory_bytes,
                hidden: Some(&self.inner.config.data_dir),
            },
        );
        let groups = &ready.runtime.shell_groups;
        let ran = shell::run(command, timeout, |group| {
            groups
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(group);
        })
        .await?;
        let result = ShellResult {
            success: ran.success,
            output: ran.output,
            error: ran.error,
            exit_code: Some(ran.exit_code),
            execution_id: format!("exec-{}", random_hex()),
            execution_time_ms: u64::try_from(ran.elapsed.as_millis()).unwrap_or(u64::MAX),
            command: request.include_code.then(|| request.command.clone()),
        };
        self.record_history(
            id,
            &HistoryEntry {
                id: result.execution_id.clone(),
                session_id: Some(ready.session_id),
                exec_type: "shell".to_owned(),
                code: request.command.clone(),
                success: result.success,
                execution_time_ms: result.execution_time_ms,
                output: Some(result.output.clone()),
                error: result.error.clone(),
                description: request.description.clone(),
                tags: request.tags.clone(),
                notes: None,
                created_at: self.now(),
            },
        );
        Ok(result)
    }

    async fn read_file(&self, id: &str, path: &str) -> SandboxResult<String> {
        let (ready, normalized) = self.file_call(id, path).await?;
        let full = self.resolve(&ready, &normalized, PathField::Path)?;
        files::read_text(&full, &normalized, ready.max_file_bytes).await
    }

    async fn write_file(&self, id: &str, path: &str, content: &str) -> SandboxResult<()> {
        let (ready, normalized) = self.file_call(id, path).await?;
        files::check_size(&normalized, content.len() as u64, ready.max_file_bytes)?;
        let full = self.resolve(&ready, &normalized, PathField::Path)?;
        files::write(&full, &normalized, content.as_bytes().to_vec()).await?;
        self.hand_over_within(&ready.workspace, &full)
    }

    async fn delete_file(&self, id: &str, path: &str) -> SandboxResult<()> {
        let (ready, normalized) = self.file_call(id, path).await?;
        let entry = paths::resolve_parent(&ready.workspace, &normalized, PathField::Path)?;
        files::delete(&entry, &normalized).await
    }

    async fn list_files(&self, id: &str, path: &str) -> SandboxResult<Vec<FileEntry>> {
        let (ready, normalized) = self.file_call(id, path).await?;
        let full = self.resolve(&ready, &normalized, PathField::Path)?;
        files::list(&full, &normalized, &Self::shown(&normalized)).await
    }

    async fn upload(&self, id: &str, path: &str, bytes: Vec<u8>) -> SandboxResult<Uploaded> {
        let (ready, normalized) = self.file_call(id, path).await?;
        let size = bytes.len() as u64;
        files::check_size(&normalized, size, ready.max_file_bytes)?;
        let full = self.resolve(&ready, &normalized, PathField::Path)?;
        files::write(&full, &normalized, bytes).await?;
        self.hand_over_within(&ready.workspace, &full)?;
        Ok(Uploaded {
            status: "ok".to_owned(),
            path: normalized,
            size,
        })
    }

    async fn download(&self, id: &str, path: &str) -> SandboxResult<Vec<u8>> {
        let (ready, normalized) = self.file_call(id, path).await?;
        let full = self.resolve(&ready, &normalized, PathField::Path)?;
        files::read_bytes(&full, &normalized, ready.max_file_bytes).await
    }

    async fn history(&self, id: &str, query: &HistoryQuery) -> SandboxResult<HistoryPage> {
        if !self.state().persisted.sandboxes.contains_key(id) {
            return Err(not_found(id));
        }
        let limit = query.limit.unwrap_or(100).min(500) as usize;
        let mut entries = state::read_history(&self.inner.config.data_dir, id)?;
        entries.retain(|entry| query.admits(entry));
        entries.reverse();
        let total = entries.len() as u64;
        let entries = entries
            .into_iter()
            .skip(query.offset as usize)
            .take(limit)
            .collect();
        Ok(HistoryPage { entries, total })
    }

    async fn execution(&self, id: &str, execution_id: &str) -> SandboxResult<HistoryEntry> {
        if !self.state().persisted.sandboxes.contains_key(id) {
            return Err(not_found(id));
        }
        state::read_history(&self.inner.config.data_dir, id)?
            .into_iter()
            .find(|entry| entry.id == execution_id)
            .ok_or_else(|| {
                SandboxError::new(
                    ErrorCode::NotFound,
                    format!("Execution not found: {execution_id}"),
                )
            })
    }

    async fn create_cargo(&self, request: &CreateCargo) -> SandboxResult<Cargo> {
        let size = request.size_limit_mb.unwrap_or(DEFAULT_CARGO_SIZE_MB);
        if !(1..=MAX_CARGO_SIZE_MB).contains(&size) {
            return Err(SandboxError::new(
                ErrorCode::ValidationError,
                format!("size_limit_mb must be between 1 and {MAX_CARGO_SIZE_MB}, not {size}"),
            ));
        }
        let now = self.now();
        let print = fingerprint(
            "/v1/cargos",
            &serde_json::json!({ "size_limit_mb": request.size_limit_mb }),
        );
        let mut state = self.state();
        if let Some(replayed) = replay(&mut state, request.idempotency_key.as_deref(), &print, now)?
        {
            return Ok(replayed);
        }
        let id = format!("ws-{}", random_hex());
        let workspace = self.workspace(&id);
        std::fs::create_dir_all(&workspace).map_err(|error| {
            SandboxError::new(
                ErrorCode::InternalError,
                format!("cannot create the cargo {}: {error}", workspace.display()),
            )
        })?;
        self.hand_over(&workspace)?;
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
        self.save(&state)?;
        Ok(cargo)
    }

    async fn list_cargos(&self, query: &CargoQuery) -> SandboxResult<CargoPage> {
        let limit = query.limit.unwrap_or(50).clamp(1, 200) as usize;
        let managed = query.managed.unwrap_or(false);
        let state = self.state();
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

    async fn get_cargo(&self, id: &str) -> SandboxResult<Cargo> {
        let state = self.state();
        state
            .persisted
            .cargos
            .get(id)
            .map(|record| cargo_of(id, record))
            .ok_or_else(|| cargo_not_found(id))
    }

    async fn delete_cargo(&self, id: &str) -> SandboxResult<()> {
        {
            let mut state = self.state();
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
            self.save(&state)?;
        }
        let workspace = self.workspace(id);
        if let Err(error) = tokio::fs::remove_dir_all(&workspace).await
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(cargo = %workspace.display(), %error, "a deleted cargo's files were not removed");
        }
        Ok(())
    }

    async fn run_gc(&self, tasks: Option<&[String]>) -> SandboxResult<GcRun> {
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
                    result.cleaned_count = self.stop_idle_sessions().await;
                    result
                }
                "expired_sandbox" => self.delete_expired().await,
                "orphan_cargo" => self.remove_orphan_cargos().await,
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

    async fn gc_status(&self) -> SandboxResult<GcStatus> {
        let enabled = self.inner.config.auto_gc;
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

    async fn annotate(
        &self,
        id: &str,
        execution_id: &str,
        annotation: &Annotation,
    ) -> SandboxResult<HistoryEntry> {
        let mut entry = self.execution(id, execution_id).await?;
        state::append_annotation(&self.inner.config.data_dir, id, execution_id, annotation)?;
        annotation.apply(&mut entry);
        Ok(entry)
    }

    async fn profiles(&self) -> SandboxResult<Vec<ProfileInfo>> {
        Ok(self
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
}

/// The skill lifecycle is the books' (`local::skills`).
#[async_trait::async_trait]
impl SkillLifecycle for LocalProvider {
    async fn create_payload(&self, payload: &NewPayload) -> SandboxResult<PayloadRef> {
        self.inner.skills.create_payload(payload).await
    }

    async fn payload(&self, payload_ref: &str) -> SandboxResult<SkillPayload> {
        self.inner.skills.payload(payload_ref).await
    }

    async fn create_candidate(&self, candidate: &NewCandidate) -> SandboxResult<SkillCandidate> {
        self.inner.skills.create_candidate(candidate).await
    }

    async fn candidates(&self, query: &CandidateQuery) -> SandboxResult<SkillPage<SkillCandidate>> {
        self.inner.skills.candidates(query).await
    }

    async fn candidate(&self, id: &str) -> SandboxResult<SkillCandidate> {
        self.inner.skills.candidate(id).await
    }

    async fn evaluate(
        &self,
        candidate_id: &str,
        evaluation: &Evaluation,
    ) -> SandboxResult<SkillEvaluation> {
        self.inner.skills.evaluate(candidate_id, evaluation).await
    }

    async fn promote(
        &self,
        candidate_id: &str,
        promotion: &Promotion,
    ) -> SandboxResult<SkillRelease> {
        self.inner.skills.promote(candidate_id, promotion).await
    }

    async fn delete_candidate(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        self.inner.skills.delete_candidate(id, reason).await
    }

    async fn releases(&self, query: &ReleaseQuery) -> SandboxResult<SkillPage<SkillRelease>> {
        self.inner.skills.releases(query).await
    }

    async fn release_health(&self, id: &str) -> SandboxResult<ReleaseHealth> {
        self.inner.skills.release_health(id).await
    }

    async fn rollback(&self, release_id: &str) -> SandboxResult<SkillRelease> {
        self.inner.skills.rollback(release_id).await
    }

    async fn delete_release(&self, id: &str, reason: Option<&str>) -> SandboxResult<Deleted> {
        self.inner.skills.delete_release(id, reason).await
    }
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

impl LocalProvider {
    /// The checks of a filesystem call, and its normalized path.
    async fn file_call(&self, id: &str, path: &str) -> SandboxResult<(Ready, String)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_released_during_the_wait_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let holder = File::create(&path).unwrap();
        holder.try_lock().unwrap();
        let waiter = File::create(&path).unwrap();
        // The holder lets go while the waiter waits, as a forked child does when it execs.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(holder);
        });
        assert!(take_lock(&waiter).unwrap());
        release.join().unwrap();
    }
}

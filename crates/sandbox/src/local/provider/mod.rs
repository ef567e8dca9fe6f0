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
//!
//! One module a concern: [`config`] (how it is set up), [`session`] (a sandbox's processes and
//! the checks of a capability call), [`sandboxes`], [`exec`], [`file_calls`], [`cargos`], [`gc`]
//! and [`replay`] (idempotency); this file holds the provider's state and the trait's table.

mod cargos;
mod config;
mod exec;
mod file_calls;
mod gc;
mod replay;
mod sandboxes;
mod session;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::clock;
use crate::error::{ErrorCode, SandboxError};
use crate::idempotency::IdempotencyStore;
use crate::local::isolation::Isolation;
use crate::local::skills::Skills;
use crate::local::state::{self, CargoRecord, Persisted};
use crate::model::{FileEntry, PythonResult, SandboxInfo, ShellResult};
use crate::provider::{
    Annotation, Cargo, CargoPage, CargoQuery, CreateCargo, CreateSandbox, DEFAULT_CARGO_SIZE_MB,
    GcRun, GcStatus, HistoryEntry, HistoryPage, HistoryQuery, ListQuery, ProfileInfo, PythonExec,
    SandboxPage, SandboxProvider, SandboxResult, ShellExec, Uploaded,
};
use crate::skills::{
    CandidateQuery, Deleted, Evaluation, NewCandidate, NewPayload, PayloadRef, Promotion,
    ReleaseHealth, ReleaseQuery, SkillCandidate, SkillEvaluation, SkillLifecycle, SkillPage,
    SkillPayload, SkillRelease,
};
pub use config::LocalConfig;
use session::SandboxSession;

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

fn random_hex() -> String {
    format!("{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

/// The answer for a sandbox id nobody knows.
fn not_found(id: &str) -> SandboxError {
    SandboxError::new(ErrorCode::NotFound, format!("Sandbox not found: {id}"))
        .detail("sandbox_id", id)
}

/// `text` quoted for bash.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
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

    /// Writes `state.json`: only for changes that outlast a restart (sandboxes, deletions,
    /// idempotency replies); session ids and idle deadlines are not kept across one.
    fn save(&self, state: &State) -> SandboxResult<()> {
        state::save(&self.inner.config.data_dir, &state.persisted)
    }

    fn workspace(&self, cargo_id: &str) -> PathBuf {
        self.inner.config.data_dir.join("cargos").join(cargo_id)
    }
}

#[async_trait::async_trait]
impl SandboxProvider for LocalProvider {
    async fn create(&self, request: &CreateSandbox) -> SandboxResult<SandboxInfo> {
        sandboxes::create(self, request).await
    }

    async fn get(&self, id: &str) -> SandboxResult<SandboxInfo> {
        sandboxes::get(self, id).await
    }

    async fn list(&self, query: &ListQuery) -> SandboxResult<SandboxPage> {
        sandboxes::list(self, query).await
    }

    async fn stop(&self, id: &str) -> SandboxResult<()> {
        sandboxes::stop(self, id).await
    }

    async fn delete(&self, id: &str) -> SandboxResult<()> {
        sandboxes::delete(self, id).await
    }

    async fn extend_ttl(
        &self,
        id: &str,
        extend_by: i64,
        idempotency_key: Option<&str>,
    ) -> SandboxResult<SandboxInfo> {
        sandboxes::extend_ttl(self, id, extend_by, idempotency_key).await
    }

    async fn keepalive(&self, id: &str) -> SandboxResult<()> {
        sandboxes::keepalive(self, id).await
    }

    async fn profiles(&self) -> SandboxResult<Vec<ProfileInfo>> {
        sandboxes::profiles(self).await
    }

    async fn python_exec(&self, id: &str, request: &PythonExec) -> SandboxResult<PythonResult> {
        exec::python(self, id, request).await
    }

    async fn shell_exec(&self, id: &str, request: &ShellExec) -> SandboxResult<ShellResult> {
        exec::shell(self, id, request).await
    }

    async fn history(&self, id: &str, query: &HistoryQuery) -> SandboxResult<HistoryPage> {
        exec::history(self, id, query).await
    }

    async fn execution(&self, id: &str, execution_id: &str) -> SandboxResult<HistoryEntry> {
        exec::execution(self, id, execution_id).await
    }

    async fn annotate(
        &self,
        id: &str,
        execution_id: &str,
        annotation: &Annotation,
    ) -> SandboxResult<HistoryEntry> {
        exec::annotate(self, id, execution_id, annotation).await
    }

    async fn read_file(&self, id: &str, path: &str) -> SandboxResult<String> {
        file_calls::read_file(self, id, path).await
    }

    async fn write_file(&self, id: &str, path: &str, content: &str) -> SandboxResult<()> {
        file_calls::write_file(self, id, path, content).await
    }

    async fn delete_file(&self, id: &str, path: &str) -> SandboxResult<()> {
        file_calls::delete_file(self, id, path).await
    }

    async fn list_files(&self, id: &str, path: &str) -> SandboxResult<Vec<FileEntry>> {
        file_calls::list_files(self, id, path).await
    }

    async fn upload(&self, id: &str, path: &str, bytes: Vec<u8>) -> SandboxResult<Uploaded> {
        file_calls::upload(self, id, path, bytes).await
    }

    async fn download(&self, id: &str, path: &str) -> SandboxResult<Vec<u8>> {
        file_calls::download(self, id, path).await
    }

    async fn create_cargo(&self, request: &CreateCargo) -> SandboxResult<Cargo> {
        cargos::create(self, request).await
    }

    async fn list_cargos(&self, query: &CargoQuery) -> SandboxResult<CargoPage> {
        cargos::list(self, query).await
    }

    async fn get_cargo(&self, id: &str) -> SandboxResult<Cargo> {
        cargos::get(self, id).await
    }

    async fn delete_cargo(&self, id: &str) -> SandboxResult<()> {
        cargos::delete(self, id).await
    }

    async fn run_gc(&self, tasks: Option<&[String]>) -> SandboxResult<GcRun> {
        gc::run(self, tasks).await
    }

    async fn gc_status(&self) -> SandboxResult<GcStatus> {
        gc::status(self).await
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

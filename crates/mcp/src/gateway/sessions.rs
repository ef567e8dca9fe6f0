//! The gateway's guard sessions on disk: `DIR/NAME.json`, written whole after every change
//! under the same lock file `wayline guard` commands take (`.NAME.json.lock`), and read again
//! whenever someone else changed it — so a person approving a break-glass request with
//! `wayline guard approve --session DIR/NAME.json` while the gateway runs is seen at the
//! agent's next call, and a restarted gateway goes on where it stopped. A connection's own
//! session (`conn-…`) is removed when the connection ends, and a client's without a
//! connection (`client-…`, [`Keyed`]) once idle: the audit log keeps their decisions.
//!
//! A decision is written before the call is forwarded. The evidence a result yields is applied
//! at once in memory (the next decision sees it) and written by the next change, or by a flush
//! shortly after: one durable write per call, not two. If someone else changed the file in
//! between, it is read again and the evidence not yet written is added to it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use chrono::Utc;
use wayline_durable::LockFile;
use wayline_guard::{Evidence, Guard, Session};

use crate::Error;

/// Where sessions live.
#[derive(Debug, Clone)]
pub(crate) struct SessionFiles {
    dir: PathBuf,
}

impl SessionFiles {
    /// Sessions in `dir` (made when missing).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Result<Self, Error> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|error| Error::Session {
            path: dir.clone(),
            reason: format!("cannot create the directory: {error}"),
        })?;
        Ok(SessionFiles { dir })
    }

    /// Session `name`: the one on disk, or a new one started by `guard`; kept after the
    /// gateway drops it.
    pub(crate) fn open(&self, name: &str, guard: &Guard) -> Result<SharedSession, Error> {
        self.open_as(name, guard, false)
    }

    /// A session for one connection: its file is removed when the connection's handlers are
    /// all dropped (the connection ended), so sessions do not pile up with connections.
    pub(crate) fn open_for_connection(
        &self,
        name: &str,
        guard: &Guard,
    ) -> Result<SharedSession, Error> {
        self.open_as(name, guard, true)
    }

    pub(crate) fn open_as(
        &self,
        name: &str,
        guard: &Guard,
        ephemeral: bool,
    ) -> Result<SharedSession, Error> {
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            return Err(Error::Session {
                path: self.dir.join(name),
                reason: format!(
                    "a session name is up to {MAX_NAME} letters, digits, `-`, `_` and `.`, not starting with `.`"
                ),
            });
        }
        let path = self.dir.join(format!("{name}.json"));
        let lock = self.dir.join(format!(".{name}.json.lock"));
        let shared = SharedSession {
            state: Mutex::new(Loaded {
                session: guard.start(name, Utc::now()),
                stamp: None,
                unwritten: Vec::new(),
            }),
            path,
            lock,
            ephemeral,
        };
        // Read (or write the new session) at once, so a bad file is an error now.
        shared.with(guard, |_| ())?;
        Ok(shared)
    }
}

/// The longest session name (a file name, and a request's `Wayline-Session` header).
const MAX_NAME: usize = 128;

/// How many sessions of clients without a connection may be open at once.
const MAX_KEYED: usize = 1024;

/// How long a session kept for requests without a connection stays open with none coming.
pub(crate) const IDLE: Duration = Duration::from_secs(30 * 60);

/// The sessions of requests that arrive without a connection (2026-07-28 over HTTP), by
/// name: one a request names, kept like `--session`'s, or its client's own, removed once it
/// has been idle for [`IDLE`] (the audit log keeps its decisions).
#[derive(Debug)]
pub(crate) struct Keyed {
    held: Mutex<std::collections::HashMap<String, Held>>,
    /// How many may be open at once.
    limit: usize,
}

impl Default for Keyed {
    fn default() -> Self {
        Keyed {
            held: Mutex::default(),
            limit: MAX_KEYED,
        }
    }
}

#[derive(Debug)]
struct Held {
    session: Arc<SharedSession>,
    used: std::time::Instant,
}

impl Keyed {
    /// Session `name`, open already or opened now (`ephemeral`: removed when it goes).
    /// Sessions idle for longer than [`IDLE`] are let go first.
    pub(crate) fn get(
        &self,
        files: &SessionFiles,
        guard: &Guard,
        name: &str,
        ephemeral: bool,
    ) -> Result<Arc<SharedSession>, Error> {
        let now = std::time::Instant::now();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|_, kept| now.duration_since(kept.used) < IDLE);
        if let Some(kept) = held.get_mut(name) {
            kept.used = now;
            return Ok(Arc::clone(&kept.session));
        }
        if held.len() >= self.limit {
            return Err(Error::Session {
                path: files.dir.join(name),
                reason: format!(
                    "{} sessions of clients without a connection are open already; one is let go after {} minutes without a request",
                    self.limit,
                    IDLE.as_secs() / 60
                ),
            });
        }
        let session = Arc::new(files.open_as(name, guard, ephemeral)?);
        held.insert(
            name.to_owned(),
            Held {
                session: Arc::clone(&session),
                used: now,
            },
        );
        Ok(session)
    }

    /// Every session open.
    pub(crate) fn all(&self) -> Vec<Arc<SharedSession>> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|kept| Arc::clone(&kept.session))
            .collect()
    }

    /// Lets every session go (the gateway stops serving).
    pub(crate) fn clear(&self) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// When a file was last changed, as far as we can tell.
type Stamp = (SystemTime, u64);

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[derive(Debug)]
struct Loaded {
    session: Session,
    /// The file as we last wrote or read it.
    stamp: Option<Stamp>,
    /// Evidence applied in memory and not yet written.
    unwritten: Vec<Evidence>,
}

/// How long recorded evidence may wait in memory for the next change to write it.
const FLUSH_AFTER: Duration = Duration::from_millis(50);

/// One session, shared by the connections that use it.
#[derive(Debug)]
pub(crate) struct SharedSession {
    path: PathBuf,
    lock: PathBuf,
    state: Mutex<Loaded>,
    /// One connection's: removed with it.
    ephemeral: bool,
}

impl Drop for SharedSession {
    fn drop(&mut self) {
        if self.ephemeral {
            // The audit log keeps every decision the session saw; nothing else reads the file
            // once its connection is gone.
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(&self.lock);
        }
    }
}

impl SharedSession {
    /// The session file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `change` on the session as it is on disk, and writes it back, under the lock.
    pub(crate) fn with<R>(
        &self,
        guard: &Guard,
        change: impl FnOnce(&mut Session) -> R,
    ) -> Result<R, Error> {
        let mut loaded = self.lock();
        let _held = LockFile::acquire(&self.lock).map_err(|error| self.fail(error.to_string()))?;
        self.refresh(guard, &mut loaded)?;
        let answer = change(&mut loaded.session);
        self.write(&mut loaded)?;
        Ok(answer)
    }

    /// Records the result of a forwarded call of `tool` as evidence (by the policy's rules),
    /// in memory at once; the file follows with the next change or [`FLUSH_AFTER`].
    pub(crate) fn record(
        self: &Arc<Self>,
        guard: &Guard,
        tool: &str,
        success: bool,
        summary: &str,
    ) {
        let mut loaded = self.lock();
        let before = loaded.session.evidence.len();
        guard.record_result(&mut loaded.session, tool, success, summary, Utc::now());
        let added: Vec<Evidence> = loaded.session.evidence[before..].to_vec();
        if added.is_empty() {
            return;
        }
        let first = loaded.unwritten.is_empty();
        loaded.unwritten.extend(added);
        if first {
            let (session, guard) = (Arc::clone(self), guard.clone());
            tokio::spawn(async move {
                tokio::time::sleep(FLUSH_AFTER).await;
                let flushed = tokio::task::spawn_blocking(move || session.flush(&guard)).await;
                if let Ok(Err(error)) = flushed {
                    tracing::warn!(%error, "the guard session could not be written");
                }
            });
        }
    }

    /// Writes evidence still waiting in memory.
    pub(crate) fn flush(&self, guard: &Guard) -> Result<(), Error> {
        if self.lock().unwritten.is_empty() {
            return Ok(());
        }
        self.with(guard, |_| ())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, reason: String) -> Error {
        Error::Session {
            path: self.path.clone(),
            reason,
        }
    }

    /// Reads the file again if someone else changed it, keeping the evidence not yet written.
    fn refresh(&self, guard: &Guard, loaded: &mut Loaded) -> Result<(), Error> {
        let on_disk = stamp(&self.path);
        if on_disk.is_none() || on_disk == loaded.stamp {
            return Ok(());
        }
        let text = std::fs::read_to_string(&self.path)
            .map_err(|error| self.fail(format!("cannot read it: {error}")))?;
        let mut session: Session = serde_json::from_str(&text).map_err(|error| {
            self.fail(format!(
                "it is not a session ({error}); move it aside to start afresh"
            ))
        })?;
        if guard.policy().state(&session.state).is_none() {
            return Err(self.fail(format!(
                "it is in `{}`, a state the policy does not have",
                session.state
            )));
        }
        for item in &loaded.unwritten {
            session.record_evidence(
                item.kind.clone(),
                item.description.clone(),
                item.source_tool.clone(),
                item.at,
            );
        }
        loaded.session = session;
        Ok(())
    }

    fn write(&self, loaded: &mut Loaded) -> Result<(), Error> {
        let text = serde_json::to_vec(&loaded.session)
            .map_err(|error| self.fail(format!("cannot encode it: {error}")))?;
        wayline_durable::write(&self.path, &text).map_err(|error| self.fail(error.to_string()))?;
        loaded.stamp = stamp(&self.path);
        loaded.unwritten.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use wayline_guard::{Guard, Mode, Policy, Session};

    use super::*;

    fn read(path: &Path) -> Session {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[tokio::test]
    async fn evidence_waiting_in_memory_survives_a_change_made_by_someone_else() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
        let files = SessionFiles::new(dir.path()).unwrap();
        let shared = Arc::new(files.open("incident", &guard).unwrap());
        shared.record(&guard, "oc_read_logs", true, "2 pods crash-looping");
        // In memory at once; not yet on disk.
        shared
            .with(&guard, |session| assert_eq!(session.evidence.len(), 1))
            .unwrap();
        shared.record(&guard, "oc_read_logs", true, "OOMKilled");
        assert_eq!(read(shared.path()).evidence.len(), 1);
        // Someone else (`wayline guard advance`, `approve`) changes the file meanwhile.
        let mut theirs = read(shared.path());
        theirs.state = "analyzing".into();
        std::fs::write(shared.path(), serde_json::to_vec(&theirs).unwrap()).unwrap();
        // Same length as ours ("analyzing", "gathering"): the time tells them apart, even on a
        // file system whose clock is coarse.
        let file = std::fs::File::options()
            .write(true)
            .open(shared.path())
            .unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
            .unwrap();
        shared.flush(&guard).unwrap();
        let merged = read(shared.path());
        assert_eq!(merged.state, "analyzing", "their change is kept");
        let said: Vec<&str> = merged
            .evidence
            .iter()
            .map(|e| e.description.as_str())
            .collect();
        assert_eq!(said, ["2 pods crash-looping", "OOMKilled"], "ours too");
        // A failed call or a tool the policy draws no evidence from adds nothing.
        shared.record(&guard, "oc_read_logs", false, "error");
        shared.record(&guard, "oc_write_scale", true, "scaled");
        shared.flush(&guard).unwrap();
        assert_eq!(read(shared.path()).evidence.len(), 2);
    }

    #[test]
    fn sessions_of_clients_without_a_connection_are_found_again_and_held_in_number() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
        let files = SessionFiles::new(dir.path()).unwrap();
        let keyed = Keyed {
            limit: 2,
            ..Keyed::default()
        };
        let first = keyed.get(&files, &guard, "client-a", true).unwrap();
        let again = keyed.get(&files, &guard, "client-a", true).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "one session per key");
        keyed.get(&files, &guard, "client-b", false).unwrap();
        let error = keyed
            .get(&files, &guard, "client-c", true)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2 sessions of clients"), "{error}");
        assert!(keyed.get(&files, &guard, "../up", true).is_err());
        // Let go, a client's session is removed and a named one kept.
        drop((first, again));
        keyed.clear();
        assert!(!dir.path().join("client-a.json").exists());
        assert!(dir.path().join("client-b.json").exists());
    }

    #[test]
    fn session_names_stay_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
        let files = SessionFiles::new(dir.path()).unwrap();
        let long = "a".repeat(MAX_NAME + 1);
        for bad in ["../up", ".hidden", "a/b", "", long.as_str()] {
            assert!(files.open(bad, &guard).is_err(), "{bad}");
        }
        std::fs::write(dir.path().join("broken.json"), "{not json").unwrap();
        let error = files.open("broken", &guard).unwrap_err().to_string();
        assert!(error.contains("move it aside"), "{error}");
    }
}

//! The gateway's guard sessions on disk: `DIR/NAME.json`, written whole after every change
//! under the same lock file `wayline guard` commands take (`.NAME.json.lock`), and read again
//! whenever someone else changed it — so a person approving a break-glass request with
//! `wayline guard approve --session DIR/NAME.json` while the gateway runs is seen at the
//! agent's next call, and a restarted gateway goes on where it stopped.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use chrono::Utc;
use wayline_durable::LockFile;
use wayline_guard::{Guard, Session};

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

    /// Session `name`: the one on disk, or a new one started by `guard`.
    pub(crate) fn open(&self, name: &str, guard: &Guard) -> Result<SharedSession, Error> {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            return Err(Error::Session {
                path: self.dir.join(name),
                reason:
                    "a session name is letters, digits, `-`, `_` and `.`, not starting with `.`"
                        .into(),
            });
        }
        let path = self.dir.join(format!("{name}.json"));
        let lock = self.dir.join(format!(".{name}.json.lock"));
        let shared = SharedSession {
            state: Mutex::new(Loaded {
                session: guard.start(name, Utc::now()),
                stamp: None,
            }),
            path,
            lock,
        };
        // Read (or write the new session) at once, so a bad file is an error now.
        shared.with(guard, |_| ())?;
        Ok(shared)
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
}

/// One session, shared by the connections that use it.
#[derive(Debug)]
pub(crate) struct SharedSession {
    path: PathBuf,
    lock: PathBuf,
    state: Mutex<Loaded>,
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
        let fail = |reason: String| Error::Session {
            path: self.path.clone(),
            reason,
        };
        let mut loaded = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _held = LockFile::acquire(&self.lock).map_err(|error| fail(error.to_string()))?;
        let on_disk = stamp(&self.path);
        if on_disk.is_some() && on_disk != loaded.stamp {
            let text = std::fs::read_to_string(&self.path)
                .map_err(|error| fail(format!("cannot read it: {error}")))?;
            let session: Session = serde_json::from_str(&text).map_err(|error| {
                fail(format!(
                    "it is not a session ({error}); move it aside to start afresh"
                ))
            })?;
            if guard.policy().state(&session.state).is_none() {
                return Err(fail(format!(
                    "it is in `{}`, a state the policy does not have",
                    session.state
                )));
            }
            loaded.session = session;
        }
        let answer = change(&mut loaded.session);
        let text = serde_json::to_vec_pretty(&loaded.session)
            .map_err(|error| fail(format!("cannot encode it: {error}")))?;
        wayline_durable::write(&self.path, &text).map_err(|error| fail(error.to_string()))?;
        loaded.stamp = stamp(&self.path);
        Ok(answer)
    }
}

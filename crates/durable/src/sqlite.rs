//! The SQLite connection setup every wayline store shares.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Action, Error};

/// How long a connection waits for another connection's write lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// When SQLite syncs a committed transaction to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// At checkpoints (`synchronous = NORMAL` in WAL mode): a committed transaction survives
    /// the process crashing, and a power loss may lose the last ones.
    #[default]
    Normal,
    /// At every commit (`synchronous = FULL`): committed transactions survive a power loss.
    Full,
}

/// Opens (creating it, and its directory, when missing) the database at `path` in WAL mode,
/// with [`BUSY_TIMEOUT`] and the given [`Synchronous`] level. Several stores may share the
/// file: each keeps its own tables and schema version.
///
/// ```
/// use wayline_durable::sqlite::{Synchronous, open};
///
/// let dir = tempfile::tempdir().unwrap();
/// let connection = open(&dir.path().join("wayline.db"), Synchronous::Normal).unwrap();
/// let mode: String = connection.query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
/// assert_eq!(mode, "wal");
/// ```
pub fn open(path: &Path, synchronous: Synchronous) -> Result<Connection, Error> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|error| Error::io(Action::Create, dir, error))?;
    }
    let sqlite = |source| Error::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let connection = Connection::open(path).map_err(sqlite)?;
    let level = match synchronous {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    connection.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
    // Switching a new database to WAL takes an exclusive lock, and SQLite answers "database is
    // locked" at once, without its busy handler, while another process creates the same file:
    // wait and retry, as the busy timeout would.
    retry_while_busy(|| connection.pragma_update(None, "journal_mode", "WAL")).map_err(sqlite)?;
    connection
        .pragma_update(None, "synchronous", level)
        .map_err(sqlite)?;
    Ok(connection)
}

/// Runs `work` again while SQLite says the database is busy or locked, for up to
/// [`BUSY_TIMEOUT`], with short random pauses (so waiting processes do not retry in step).
fn retry_while_busy<T>(mut work: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match work() {
            Err(error) if is_busy(&error) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(fastrand::u64(5..50)));
            }
            done => return done,
        }
    }
}

/// True for SQLite's "database is busy" and "database is locked".
fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

//! The crate's error type.

use std::fmt;
use std::path::PathBuf;

/// Errors of `wayline-durable`: which operation failed on which path, and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file system operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: Action,
        /// To which path.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// A file a document refers to lies outside the directories references may lead to.
    #[error(
        "{} is outside {}, where the files a document refers to must be",
        path.display(),
        roots_text(roots)
    )]
    OutsideScope {
        /// The path the reference leads to.
        path: PathBuf,
        /// The directories it may be under.
        roots: Vec<PathBuf>,
    },
    /// SQLite refused to open or set up a database.
    #[cfg(feature = "sqlite")]
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// PostgreSQL refused a connection or a statement.
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL {database}: {message}")]
    Postgres {
        /// The database's URL, its password masked.
        database: String,
        /// What the server or the connection said.
        message: String,
        /// The server's SQLSTATE code, when it answered with one.
        code: Option<String>,
    },
}

impl Error {
    pub(crate) fn io(action: Action, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// The file system operation an [`Error::Io`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Creating a directory.
    Create,
    /// Writing a file (or syncing or renaming it into place).
    Write,
    /// Opening a file.
    Open,
    /// Taking a lock.
    Lock,
    /// Reading a file.
    Read,
}

impl Action {
    /// The verb, as messages use it (`create`, `write`, `open`, `lock`, `read`).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Write => "write",
            Action::Open => "open",
            Action::Lock => "lock",
            Action::Read => "read",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The directories of a scope (an [`Error::OutsideScope`]'s `roots`), for a message.
pub fn roots_text(roots: &[PathBuf]) -> String {
    if roots.is_empty() {
        return "every allowed directory (none is)".to_owned();
    }
    roots
        .iter()
        .map(|root| root.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

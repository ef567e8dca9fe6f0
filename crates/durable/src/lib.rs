//! Local files, in one place for every crate that reads or keeps them: a document read within
//! its limits ([`read::text`]: a regular file, bounded, text, and for a file one document
//! refers to, where references may lead: [`read::ReadScope`]), a file written whole
//! or not at all ([`write()`]), the lock file that serialises writers across processes
//! ([`LockFile`]), (feature `sqlite`) the SQLite connection setup the stores share
//! ([`sqlite::open`]), and the PostgreSQL URLs they take ([`postgres::mask`]) with (feature
//! `postgres`) the pool and migrations they share (`postgres::Database`).
//!
//! Durable means a crash or a power loss leaves the old content or the new, never an empty or
//! half-written file: the new content goes to a temporary file beside the target, which is
//! synced, renamed over the target, and the directory synced so the rename itself is kept.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("sessions/ses_1.yaml");
//! wayline_durable::write(&path, b"session: {}\n").unwrap();
//! assert_eq!(std::fs::read_to_string(&path).unwrap(), "session: {}\n");
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod lock;
pub mod postgres;
pub mod read;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod write;

pub use error::{Action, Error};
pub use lock::LockFile;
pub use write::write;

//! The crate's error type, for what is not a store operation: schedules and schedules files.
//! (The stores themselves answer with `wayline-core`'s [`StoreError`](crate::StoreError), the
//! error of the traits they implement.)

use std::path::PathBuf;

use wayline_core::document::DocumentError;

/// Errors of `wayline-store`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the document it should be (with the line and a suggestion).
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// An interval or cron expression that is not a schedule.
    #[error("{message}")]
    Schedule {
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// An entry of a schedules file that cannot be used.
    #[error("{origin}: {what}: {message}")]
    Trigger {
        /// The file.
        origin: String,
        /// Which entry (`trigger 2 (`nightly`)`), or the whole file.
        what: String,
        /// What is wrong, and what to write instead.
        message: String,
    },
}

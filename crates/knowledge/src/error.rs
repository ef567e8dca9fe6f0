//! The crate's error type, for reading knowledge documents. (The stores answer with
//! `wayline-core`'s [`StoreError`](wayline_core::StoreError), the error of the trait they
//! implement.)

use std::path::PathBuf;

use wayline_core::document::DocumentError;

/// Errors of `wayline-knowledge`.
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
    /// A file is not a knowledge document (with the line and a suggestion).
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
}

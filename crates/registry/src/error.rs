//! The crate's error type.

use std::path::PathBuf;

use wayline_core::document::DocumentError;

/// Errors of `wayline-registry`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not a valid tool (or tool-configs) document.
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// Two files define the same tool id.
    #[error(
        "tool id `{id}` is defined twice: in {} and in {}; rename one of them",
        first.display(),
        second.display()
    )]
    DuplicateId {
        /// The id.
        id: String,
        /// The file loaded first.
        first: PathBuf,
        /// The file that repeats it.
        second: PathBuf,
    },
    /// An OpenAPI document that cannot be read as one.
    #[error(
        "{origin}{}: {message}",
        if pointer.is_empty() { String::new() } else { format!(" at #{pointer}") }
    )]
    Spec {
        /// The file.
        origin: String,
        /// Where in it (a JSON pointer; empty for the whole document).
        pointer: String,
        /// What is wrong, and how to fix it.
        message: String,
    },
}

impl Error {
    /// The same error with nothing of the document's text in it (see
    /// [`DocumentError::without_content`]): for a document another one refers to.
    #[must_use]
    pub fn without_content(self) -> Error {
        match self {
            Error::Document(error) => Error::Document(Box::new(error.without_content())),
            other => other,
        }
    }
}

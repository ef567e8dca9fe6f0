//! The crate's errors.

use std::fmt;
use std::path::PathBuf;

use wayline_core::document::DocumentError;

use crate::problem::Problem;

/// Why a document could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not YAML or JSON (or is past the document limits), with where.
    #[error("{0}")]
    Document(Box<DocumentError>),
    /// The document breaks rules of the specification: every one found, each located.
    #[error("{}", Invalid { origin, problems })]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// The problems, in document order.
        problems: Vec<Problem>,
    },
}

/// How [`Error::Invalid`] reads: one line per problem, `origin:line:column: message [rule]`.
struct Invalid<'a> {
    origin: &'a str,
    problems: &'a [Problem],
}

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            f,
            "{}: not a valid Arazzo document ({count} problem{})",
            self.origin,
            if count == 1 { "" } else { "s" }
        )?;
        for problem in self.problems {
            write!(f, "\n{}:{problem}", self.origin)?;
        }
        Ok(())
    }
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

//! The crate's error type.

use std::path::PathBuf;

use wayline_core::document::DocumentError;

/// Errors of `wayline-guard`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `open`, `lock`, `write`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the document it should be (with the line and a suggestion).
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// A policy that cannot be used: every problem, each naming where it is.
    #[error("policy `{origin}` is invalid:{}", .problems.iter().map(|p| format!("\n  - {p}")).collect::<String>())]
    Policy {
        /// The file (or `default`).
        origin: String,
        /// Each problem.
        problems: Vec<String>,
    },
    /// A tool-name pattern that does not compile.
    #[error("pattern `{pattern}`: {reason}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// What is wrong.
        reason: String,
    },
    /// A break-glass request (or a grant read back) that the policy refuses.
    #[error("break-glass refused: {reason}")]
    BreakGlass {
        /// Why, and what would be accepted.
        reason: String,
    },
    /// The audit log's last entry cannot be read, so the chain cannot be extended.
    #[error("{}: the last entry is unreadable ({reason}); run `wayline guard audit verify` on it", path.display())]
    AuditTail {
        /// The log file.
        path: PathBuf,
        /// What is wrong with the entry.
        reason: String,
    },
    /// An audit sink could not keep an entry.
    #[error("the audit entry was not kept: {message}")]
    Audit {
        /// Why (never a secret).
        message: String,
    },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

//! The crate's error type.

use crate::document::DocumentError;

/// Errors of `wayline-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A document (YAML or JSON) could not be read into a model.
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// A strict template names a key that has no value.
    #[error("missing template key `{key}`")]
    MissingTemplateKey {
        /// The key.
        key: String,
    },
    /// A CEL expression does not parse.
    #[error("invalid expression `{expression}` at {line}:{column}: {message}")]
    InvalidExpression {
        /// The expression's text.
        expression: String,
        /// 1-based line within the expression.
        line: usize,
        /// 1-based column within the expression.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A [`SecretProvider`](crate::SecretProvider) could not give a tool's settings.
    #[error("credentials for tool `{tool_id}` are unavailable: {message}")]
    Secrets {
        /// The tool.
        tool_id: String,
        /// What failed (never a secret value).
        message: String,
    },
}

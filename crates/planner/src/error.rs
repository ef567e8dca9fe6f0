//! The crate's errors: [`Error`], and [`ModelError`], what a
//! [`LanguageModel`](crate::llm::LanguageModel) answers with (the error of the trait a host
//! implements; `llm` re-exports it).

use wayline_core::document::DocumentError;

/// Errors of `wayline-planner`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model could not be asked.
    #[error("the model gave no answer: {0}")]
    Model(#[from] ModelError),
    /// Every answer had problems; the last ones are given.
    #[error("no valid plan after {answers} answer(s); the last one's problems: {}", problems.join("; "))]
    Invalid {
        /// Answers read.
        answers: u32,
        /// The last answer's problems (a parse error, or the validation report's errors).
        problems: Vec<String>,
    },
    /// A model's answer holds a workflow that does not read as one (with where, and the
    /// nearest known field).
    #[error(transparent)]
    Document(#[from] Box<DocumentError>),
    /// A model's answer is not the JSON asked for.
    #[error("{message}")]
    Answer {
        /// What is missing or wrong.
        message: String,
    },
    /// No model can be configured from the flags and the environment.
    #[error("{message}")]
    Config {
        /// What is missing, and how to give it.
        message: String,
    },
}

/// What kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// Unreachable, timed out, rate-limited or failing after the retries.
    Unavailable,
    /// The credentials were refused.
    Auth,
    /// The request was refused (a bad model name, too long a prompt).
    Refused,
    /// The answer is not a completion.
    Unreadable,
    /// A scripted model ran out of answers.
    Exhausted,
}

/// A model call that gave no completion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    kind: ModelErrorKind,
    message: String,
}

impl ModelError {
    /// A failure of `kind`; `message` holds no secret.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
        }
    }

    /// What kind.
    pub fn kind(&self) -> ModelErrorKind {
        self.kind
    }
}

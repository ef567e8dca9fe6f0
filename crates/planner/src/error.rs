//! The crate's error type. (A [`LanguageModel`](crate::llm::LanguageModel) answers with
//! [`ModelError`], the error of the trait a host implements.)

use wayline_core::document::DocumentError;

use crate::llm::ModelError;

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

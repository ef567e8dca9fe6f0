//! Code steps: the [`CodeRunner`] trait the engine calls for a step whose tool is of kind
//! `code`, and what goes in and out of it. The sandbox crate implements it over a local or a
//! Bay sandbox; hosts can plug in their own.
//!
//! # Contract
//!
//! - The runner runs `source` with the step's resolved inputs at hand (for Python: a dict
//!   called `inputs`) and answers the JSON value the code left as its result (for Python: the
//!   variable `result`, `null` when unset) and what it printed.
//! - Code that raises is [`CodeErrorKind::Failed`] with the traceback in the message; one that
//!   runs past `timeout` is [`CodeErrorKind::Timeout`]; a sandbox that cannot be reached is
//!   [`CodeErrorKind::Unavailable`] (the engine may retry it when the tool says it is
//!   idempotent); a request the runner cannot serve (a language it does not know) is
//!   [`CodeErrorKind::Invalid`].
//! - Runs do not share state: each call starts from a clean interpreter.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// What a code step asks a runner to do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeRequest {
    /// The language (`python`).
    pub language: String,
    /// The code.
    pub source: String,
    /// The step's resolved inputs, as a JSON object.
    pub inputs: Value,
    /// Time allowed.
    pub timeout: Duration,
    /// The sandbox profile asked for, if any.
    pub profile: Option<String>,
    /// The code tool's id (a runner may route by it).
    pub tool_id: String,
    /// The run and step this is for (for labels and logs).
    pub run_id: String,
    /// The step.
    pub step_id: String,
}

impl CodeRequest {
    /// Python `source` with `inputs`, 30 s, no profile.
    pub fn python(source: impl Into<String>, inputs: Value) -> Self {
        CodeRequest {
            language: "python".to_owned(),
            source: source.into(),
            inputs,
            timeout: Duration::from_secs(30),
            profile: None,
            tool_id: String::new(),
            run_id: String::new(),
            step_id: String::new(),
        }
    }
}

/// What the code gave.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodeOutput {
    /// The JSON result (the step's response body).
    pub result: Value,
    /// What the code printed.
    pub printed: String,
}

impl CodeOutput {
    /// A result and what was printed.
    pub fn new(result: Value, printed: impl Into<String>) -> Self {
        CodeOutput {
            result,
            printed: printed.into(),
        }
    }
}

/// Why code gave no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodeErrorKind {
    /// The code raised (or its result is not JSON).
    Failed,
    /// It ran out of time.
    Timeout,
    /// The sandbox could not be reached or started.
    Unavailable,
    /// The request cannot be served (an unknown language or profile).
    Invalid,
}

/// A code step's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodeError {
    kind: CodeErrorKind,
    message: String,
}

impl CodeError {
    /// A failure of `kind`; `message` must hold no secret.
    pub fn new(kind: CodeErrorKind, message: impl Into<String>) -> Self {
        CodeError {
            kind,
            message: message.into(),
        }
    }

    /// What kind.
    pub fn kind(&self) -> CodeErrorKind {
        self.kind
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Runs the code of code steps. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait CodeRunner: Send + Sync + fmt::Debug {
    /// Runs `request`.
    async fn run(&self, request: CodeRequest) -> Result<CodeOutput, CodeError>;
}

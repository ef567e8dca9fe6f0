//! Asking a person: the [`Interventor`] trait the explorer (and later the planner) calls when
//! it should not decide alone — to confirm a checkpoint, choose between candidates, heed a
//! pitfall, clarify a goal, or deal with an error — and [`AutoApprove`], which answers
//! without asking.
//!
//! # Contract
//!
//! - `ask` returns one [`Answer`]; for [`QuestionKind::Choose`] a `Choose(i)` names one of
//!   `options` by index (anything out of range is treated as [`Answer::Abort`] by callers).
//! - An interventor never sees a secret: questions carry operation ids, messages and
//!   non-secret context only.
//! - [`Answer::Abort`] ends the session (it is saved and can be resumed).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a person is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QuestionKind {
    /// A checkpoint operation (or manual mode): run it?
    Confirm,
    /// Several candidates score alike: which one?
    Choose,
    /// A known pitfall lies ahead: run anyway?
    Pitfall,
    /// Nothing matches the goal well: say more, or stop.
    Clarify,
    /// The API refused the credentials: provide them, or stop.
    Credentials,
    /// A call failed in a way retrying cannot fix: what now?
    Error,
}

/// A question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Question {
    /// Why.
    pub kind: QuestionKind,
    /// The operation it is about, if any.
    pub operation: Option<String>,
    /// What to tell the person.
    pub message: String,
    /// The choices, for [`QuestionKind::Choose`] (operation ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Anything that helps decide (confidence, pitfalls, the error), free of secrets.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

impl Question {
    /// A question of `kind` with `message`.
    pub fn new(kind: QuestionKind, message: impl Into<String>) -> Self {
        Question {
            kind,
            operation: None,
            message: message.into(),
            options: Vec::new(),
            context: Value::Null,
        }
    }

    /// About `operation`.
    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// With `options` to choose from.
    pub fn options(mut self, options: Vec<String>) -> Self {
        self.options = options;
        self
    }

    /// With `context`.
    pub fn context(mut self, context: Value) -> Self {
        self.context = context;
        self
    }
}

/// What the person said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// Go ahead.
    Yes,
    /// Do not run this (the session goes on without it).
    No,
    /// The option at this index.
    Choose(usize),
    /// Free text (a clarification, a value to use).
    Text(String),
    /// Stop the session.
    Abort,
}

/// Who gives an interventor's answers, as a session's transcript records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answerer {
    /// A person, asked as the question comes.
    Person,
    /// A file of answers written before the run.
    AnswersFile,
    /// No one: the answers follow a fixed rule ([`AutoApprove`]).
    Auto,
}

/// Asks a person. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait Interventor: Send + Sync + fmt::Debug {
    /// Asks `question`.
    async fn ask(&self, question: &Question) -> Answer;

    /// Who answers (a person, unless the implementation says otherwise).
    fn answerer(&self) -> Answerer {
        Answerer::Person
    }
}

/// Answers without asking: yes to confirmations and pitfalls, the first option to choices,
/// and stops where only a person can help (clarification, credentials, errors).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

#[async_trait::async_trait]
impl Interventor for AutoApprove {
    async fn ask(&self, question: &Question) -> Answer {
        match question.kind {
            QuestionKind::Confirm | QuestionKind::Pitfall => Answer::Yes,
            QuestionKind::Choose if !question.options.is_empty() => Answer::Choose(0),
            _ => Answer::Abort,
        }
    }

    fn answerer(&self) -> Answerer {
        Answerer::Auto
    }
}

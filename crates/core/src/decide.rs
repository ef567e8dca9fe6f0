//! Decision steps: the [`Decider`] trait the engine asks at a step of kind `decision`, and
//! what goes in and out of it. The planner crate implements it with a language model (one
//! scoped call per decision); [`ScriptedDecider`] answers from a list, for tests and examples.
//!
//! A decision step declares a `decision_prompt` and its `choices`. The engine gives the
//! decider the prompt, the choices, the step's resolved inputs and the outputs of the steps it
//! depends on, with the run's secrets masked. The step's output is
//! `{"choice": ..., "reason": ...}`; later steps branch with `when: "steps.ID.choice == 'x'"`.
//!
//! # Contract
//!
//! - The decider answers one of `choices`, exactly as written, with its reason. The engine
//!   checks it: any other answer fails the step, naming what was answered and what was
//!   allowed. Nothing is guessed.
//! - A decider that cannot answer (a model that is down, an answer that cannot be read) says
//!   so with a [`DecisionError`] whose message holds no secret; the step fails with it.
//! - The decider sees only what the request holds: it is one scoped question, not a
//!   conversation about the run.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;

use serde_json::Value;

/// What a decision step asks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecisionRequest {
    /// The run.
    pub run_id: String,
    /// The workflow.
    pub workflow_id: String,
    /// The decision step.
    pub step_id: String,
    /// The question (`decision_prompt`).
    pub prompt: String,
    /// The allowed answers.
    pub choices: Vec<String>,
    /// The step's resolved `input_mapping`, as a JSON object.
    pub inputs: Value,
    /// The outputs of the steps it depends on: step id → output, as a JSON object.
    pub context: Value,
}

impl DecisionRequest {
    /// A request for `prompt` with `choices`, no inputs and no context.
    pub fn new(prompt: impl Into<String>, choices: Vec<String>) -> Self {
        DecisionRequest {
            run_id: String::new(),
            workflow_id: String::new(),
            step_id: String::new(),
            prompt: prompt.into(),
            choices,
            inputs: Value::Object(serde_json::Map::new()),
            context: Value::Object(serde_json::Map::new()),
        }
    }
}

/// A decider's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// One of the request's choices.
    pub choice: String,
    /// Why.
    pub reason: String,
}

impl Decision {
    /// `choice`, because `reason`.
    pub fn new(choice: impl Into<String>, reason: impl Into<String>) -> Self {
        Decision {
            choice: choice.into(),
            reason: reason.into(),
        }
    }
}

/// Why a decider gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecisionError {
    message: String,
}

impl DecisionError {
    /// A failure; `message` must hold no secret.
    pub fn new(message: impl Into<String>) -> Self {
        DecisionError {
            message: message.into(),
        }
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Answers decision steps. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait Decider: Send + Sync + fmt::Debug {
    /// Chooses one of `request.choices`.
    async fn decide(&self, request: &DecisionRequest) -> Result<Decision, DecisionError>;
}

/// A decider that answers from a list, in order, and remembers what it was asked. When the
/// list runs out it fails rather than make an answer up.
#[derive(Debug, Default)]
pub struct ScriptedDecider {
    answers: Mutex<VecDeque<Decision>>,
    asked: Mutex<Vec<DecisionRequest>>,
}

impl ScriptedDecider {
    /// Answers `answers`, in order.
    pub fn new(answers: impl IntoIterator<Item = Decision>) -> Self {
        ScriptedDecider {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The requests received so far.
    pub fn asked(&self) -> Vec<DecisionRequest> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl Decider for ScriptedDecider {
    async fn decide(&self, request: &DecisionRequest) -> Result<Decision, DecisionError> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
            .ok_or_else(|| DecisionError::new("the scripted decider has no answers left"))
    }
}

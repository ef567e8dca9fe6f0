//! [`ScriptedModel`]: a [`LanguageModel`] that answers from a script, in process.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use crate::llm::{Completion, CompletionRequest, LanguageModel, ModelError, ModelErrorKind, Usage};

/// Answers from a script, in order, and keeps every request (for tests and examples).
#[derive(Debug, Default)]
pub struct ScriptedModel {
    answers: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<CompletionRequest>>,
}

impl ScriptedModel {
    /// A model that answers `answers`, one per call.
    pub fn new<S: Into<String>>(answers: impl IntoIterator<Item = S>) -> Self {
        ScriptedModel {
            answers: Mutex::new(answers.into_iter().map(Into::into).collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl LanguageModel for ScriptedModel {
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let text = self
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .ok_or_else(|| {
                ModelError::new(
                    ModelErrorKind::Exhausted,
                    "the scripted model has no answer left",
                )
            })?;
        let words = |text: &str| text.split_whitespace().count() as u64;
        Ok(Completion {
            usage: Usage {
                prompt_tokens: request
                    .messages
                    .iter()
                    .map(|message| words(&message.content))
                    .sum(),
                completion_tokens: words(&text),
            },
            text,
            model: "scripted".to_owned(),
        })
    }
}

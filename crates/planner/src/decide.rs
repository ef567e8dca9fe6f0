//! Decision steps answered by a language model (the "Phase 2" decision steps of the Python
//! structure-ai-bot project): one scoped call per decision, with only the question, the
//! choices, the step's inputs and its dependencies' outputs, never the whole run.
//!
//! The model is asked for `{"choice", "reason"}` with a JSON schema that lists the choices
//! (servers with structured output enforce it). The answer is read like a plan (the first JSON
//! object; fences and prose are fine). The choice is passed on as the model wrote it: the
//! engine fails the step when it is not one of the choices, so nothing is guessed.

use std::sync::Arc;

use serde_json::{Value, json};
use wayline_core::decide::{Decider, Decision, DecisionError, DecisionRequest};

use crate::Error;
use crate::llm::{CompletionRequest, LanguageModel, Message};
use crate::prompt::{estimate_tokens, json_object};

/// Tokens the context (inputs and dependencies' outputs) may use before it is shortened.
pub const CONTEXT_BUDGET: usize = 3_000;

const INSTRUCTIONS: &str = "You make one decision inside an automated workflow. Read the question and the data, choose exactly one of the allowed choices, and answer with ONE JSON object: {\"choice\": \"<one of the choices, exactly as written>\", \"reason\": \"<one sentence>\"}. Answer with the JSON only.";

/// A [`Decider`] that asks a language model.
#[derive(Debug, Clone)]
pub struct ModelDecider {
    model: Arc<dyn LanguageModel>,
    context_budget: usize,
}

impl ModelDecider {
    /// Asks `model`.
    pub fn new(model: Arc<dyn LanguageModel>) -> Self {
        ModelDecider {
            model,
            context_budget: CONTEXT_BUDGET,
        }
    }

    /// With a context budget in tokens (default [`CONTEXT_BUDGET`]).
    #[must_use]
    pub fn context_budget(mut self, tokens: usize) -> Self {
        self.context_budget = tokens;
        self
    }

    /// The messages for `request`.
    pub fn messages(&self, request: &DecisionRequest) -> Vec<Message> {
        let data = json!({"inputs": request.inputs, "steps": request.context});
        let mut data = serde_json::to_string_pretty(&data).unwrap_or_default();
        if estimate_tokens(&data) > self.context_budget {
            // Cut on a character boundary and say so: a model that sees half a document
            // should know it is half.
            let keep: String = data.chars().take(self.context_budget * 4).collect();
            data = format!("{keep}\n… (shortened to fit; the rest is left out)");
        }
        let choices = request
            .choices
            .iter()
            .map(|choice| format!("- {choice}"))
            .collect::<Vec<_>>()
            .join("\n");
        vec![
            Message::system(INSTRUCTIONS),
            Message::user(format!(
                "Question: {}\n\nChoices:\n{choices}\n\nData (the step's inputs, and what the steps before it returned):\n{data}",
                request.prompt
            )),
        ]
    }
}

/// The answer's JSON schema: a choice from the list, and a reason.
fn schema(choices: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "choice": {"type": "string", "enum": choices},
            "reason": {"type": "string"}
        },
        "required": ["choice", "reason"],
        "additionalProperties": false
    })
}

/// Reads `{"choice", "reason"}` from a model's answer.
pub fn parse_decision(text: &str) -> Result<Decision, Error> {
    let unreadable = |message: String| Error::Answer { message };
    let json = json_object(text)
        .ok_or_else(|| unreadable("the model's answer holds no JSON object".to_owned()))?;
    let value: Value = serde_json::from_str(json)
        .map_err(|error| unreadable(format!("the model's answer: {error}")))?;
    let choice = value
        .get("choice")
        .and_then(Value::as_str)
        .ok_or_else(|| unreadable("the model's answer has no `choice` string".to_owned()))?;
    let reason = value
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(Decision::new(choice.trim(), reason.trim()))
}

#[async_trait::async_trait]
impl Decider for ModelDecider {
    async fn decide(&self, request: &DecisionRequest) -> Result<Decision, DecisionError> {
        let completion = self
            .model
            .complete(
                &CompletionRequest::new(self.messages(request))
                    .json_schema(schema(&request.choices)),
            )
            .await
            .map_err(|error| DecisionError::new(format!("the model gave no answer: {error}")))?;
        parse_decision(&completion.text).map_err(|error| DecisionError::new(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_read_from_prose_and_need_a_choice() {
        let decision =
            parse_decision("Sure.\n```json\n{\"choice\": \" keep \", \"reason\": \"idle\"}\n```")
                .unwrap();
        assert_eq!(decision, Decision::new("keep", "idle"));
        assert!(
            parse_decision("keep")
                .unwrap_err()
                .to_string()
                .contains("no JSON")
        );
        assert!(
            parse_decision("{\"pick\": \"keep\"}")
                .unwrap_err()
                .to_string()
                .contains("no `choice`")
        );
    }

    #[test]
    fn the_question_lists_the_choices_and_shortens_a_large_context() {
        let decider = ModelDecider::new(Arc::new(crate::testing::ScriptedModel::new(
            Vec::<String>::new(),
        )))
        .context_budget(10);
        let mut request = DecisionRequest::new("Busy?", vec!["scale_up".into(), "keep".into()]);
        request.context = json!({"load": {"cpu": 0.9, "log": "x".repeat(500)}});
        let messages = decider.messages(&request);
        let user = &messages[1].content;
        assert!(user.contains("- scale_up\n- keep"), "{user}");
        assert!(user.contains("shortened"), "{user}");
        assert!(user.len() < 400, "{}", user.len());
    }
}

//! Questions to a person: whether to run a suggestion (or which candidate), and values for
//! the required inputs nothing gives.

use serde_json::{Value, json};
use wayline_core::intervene::{Answer, Question, QuestionKind};
use wayline_registry::openapi::ParameterLocation;

use crate::exploration::{Exploration, ExplorationStatus, RejectedStep};
use crate::intent::{self};
use crate::intervention::Action;
use crate::names;
use crate::state::ExploreState;
use crate::suggest::Suggestion;

use super::{Explorer, round};

/// The answer to a question about a suggestion.
pub(super) enum Asked {
    Go(String),
    Skip,
    Stop,
}

impl Explorer {
    /// Asks about a suggestion; what to do next.
    pub(super) async fn ask(
        &self,
        session: &mut Exploration,
        suggestion: &Suggestion,
        action: Action,
        reason: &str,
    ) -> Asked {
        let kind = action.question_kind().unwrap_or(QuestionKind::Confirm);
        let mut options = vec![suggestion.operation.clone()];
        options.extend(suggestion.alternatives.iter().cloned());
        options.retain(|option| !option.is_empty());
        let message = match action {
            Action::AskForClarification => format!("{reason}; say what you mean, or stop"),
            Action::WarnAndAsk => format!("{}: {reason}; run it anyway?", suggestion.operation),
            Action::AskToChoose => format!("{reason}; which one?"),
            _ => format!("run {}? ({reason})", suggestion.operation),
        };
        let question = Question::new(kind, message)
            .operation(suggestion.operation.clone())
            .options(options.clone())
            .context(json!({
                "confidence": round(suggestion.confidence),
                "why": suggestion.reason,
                "inputs": suggestion.inputs.keys().collect::<Vec<_>>(),
                "missing": suggestion.missing,
            }));
        session.interventions += 1;
        match self.interventor.ask(&question).await {
            Answer::Yes if !suggestion.operation.is_empty() => {
                Asked::Go(suggestion.operation.clone())
            }
            Answer::Choose(index) => match options.get(index) {
                Some(operation) => Asked::Go(operation.clone()),
                None => self.stop(session, "chose an option that does not exist"),
            },
            Answer::No => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: suggestion.operation.clone(),
                    error: reason.to_owned(),
                    user_action: "declined".to_owned(),
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
                Asked::Skip
            }
            // For a target nothing matched, words are a new target; JSON is values to use.
            Answer::Text(text)
                if kind == QuestionKind::Clarify
                    && serde_json::from_str::<Value>(&text).is_err() =>
            {
                session.session.target = text;
                Asked::Skip
            }
            Answer::Text(text) => {
                merge_variables(&mut session.current_state, &text);
                Asked::Skip
            }
            _ => self.stop(session, "stopped"),
        }
    }

    /// Values for the required inputs of `suggestion` that nothing gives. In auto mode a
    /// name-like field (`title`, `displayName`) gets a made-up unique value, which the session
    /// keeps in `generated`; anything else is asked for (as JSON, or for one input, as it is).
    pub(super) async fn fill_missing(
        &self,
        session: &mut Exploration,
        suggestion: &Suggestion,
    ) -> Asked {
        let mut missing: Vec<&String> = suggestion.missing.iter().collect();
        // Only a field of a new resource's body is made up: a name in a path, or a name a
        // resource refers to (`region.name`), points at something that must exist already.
        let operation = self.spec.operation(&suggestion.operation);
        let made_up_freely = |name: &str| {
            names::is_name_like(name)
                && operation.is_some_and(|operation| {
                    intent::operation_verb(operation) == intent::Verb::Create
                        && operation.parameters.iter().any(|parameter| {
                            parameter.name == name && parameter.location == ParameterLocation::Body
                        })
                })
        };
        if self.thresholds.auto {
            let short = session
                .session
                .id
                .trim_start_matches("ses_")
                .chars()
                .take(6)
                .collect::<String>();
            for name in missing.iter().filter(|name| made_up_freely(name)) {
                let value = Value::from(format!("wayline-{short}-{}", session.generated.len() + 1));
                tracing::info!(field = %name, %value, "a value was made up for a required field");
                session
                    .current_state
                    .variables
                    .insert((*name).clone(), value.clone());
                session.generated.insert((*name).clone(), value);
            }
            missing.retain(|name| !made_up_freely(name));
            if missing.is_empty() {
                return Asked::Go(suggestion.operation.clone());
            }
        }
        let listed = missing
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        // The other side: what the latest answer held, for a person to link by hand where no
        // rule could (`createPost` answered `key`, `title`).
        let known: Vec<String> = session
            .confirmed_steps
            .iter()
            .rev()
            .find_map(|step| {
                let fields = step.response["body"].as_object()?;
                Some(format!(
                    "`{}` answered {}",
                    step.operation_id,
                    fields
                        .keys()
                        .map(|field| format!("`{field}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
            .into_iter()
            .collect();
        let offered = if known.is_empty() {
            String::new()
        } else {
            format!(" ({})", known.join("; "))
        };
        let question = Question::new(
            QuestionKind::Clarify,
            format!(
                "`{}` needs {listed}, which nothing known gives{offered}; give the values as \
                 JSON ({{\"{}\": ...}}), or say no to skip it",
                suggestion.operation, missing[0]
            ),
        )
        .operation(suggestion.operation.clone())
        .context(json!({"missing": missing, "known": known, "why": suggestion.reason}));
        session.interventions += 1;
        match self.interventor.ask(&question).await {
            Answer::Text(text) => {
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(values)) => {
                        for (name, value) in values {
                            session.current_state.answer(name, value);
                        }
                    }
                    // One input, given as it is (`My first post`) or as a JSON scalar.
                    parsed if missing.len() == 1 => {
                        let value = parsed.unwrap_or_else(|_| Value::from(text.clone()));
                        session.current_state.answer(missing[0].clone(), value);
                    }
                    _ => merge_variables(&mut session.current_state, &text),
                }
                Asked::Go(suggestion.operation.clone())
            }
            // A number typed at the terminal reads as a choice: for one input, it is the value.
            Answer::Choose(number) if missing.len() == 1 => {
                session
                    .current_state
                    .answer(missing[0].clone(), Value::from(number));
                Asked::Go(suggestion.operation.clone())
            }
            // Nothing given: asked again (three times at most).
            Answer::Yes => Asked::Go(suggestion.operation.clone()),
            Answer::No => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: suggestion.operation.clone(),
                    error: format!("nothing gives {listed}"),
                    user_action: "declined".to_owned(),
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
                Asked::Skip
            }
            _ => self.stop(session, "values were needed and none were given"),
        }
    }

    fn stop(&self, session: &mut Exploration, why: &str) -> Asked {
        tracing::info!(why, "the session stops");
        session.session.status = ExplorationStatus::Aborted;
        Asked::Stop
    }
}

/// Values a person gave as JSON text (`{"region": ...}`) become variables; other text is kept
/// as the variable `clarification`.
pub(super) fn merge_variables(state: &mut ExploreState, text: &str) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(values)) => {
            for (name, value) in values {
                state.answer(name, value);
            }
        }
        _ => {
            state
                .variables
                .insert("clarification".to_owned(), Value::from(text));
        }
    }
}

//! Questions to a person: whether to run a suggestion (or which candidate), and values for
//! the required inputs nothing gives.

use serde_json::{Value, json};
use wayline_core::intervene::{Answer, Answerer, Question, QuestionKind};
use wayline_registry::openapi::{Operation, ParameterLocation};

use crate::exploration::{Exchange, Exploration, ExplorationStatus, RejectedStep};
use crate::intent::{self};
use crate::intervention::Action;
use crate::names;
use crate::state::{ExploreState, owner_of};
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
            // The suggestion says what did not match, and the words the API has.
            Action::AskForClarification if !suggestion.reason.is_empty() => {
                format!(
                    "{reason}: {}; say what you mean, or stop",
                    suggestion.reason
                )
            }
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
        match self.put(session, question).await {
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
                let operation = self.spec.operation(&suggestion.operation);
                merge_variables(&mut session.current_state, &text, operation);
                Asked::Skip
            }
            _ if suggestion.operation.is_empty() => {
                self.stop(session, &format!("{reason}; the answer was to stop"))
            }
            _ => self.stop(
                session,
                &format!("the answer to `{}` was to stop", suggestion.operation),
            ),
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
                // Numbered by the values made up so far: a name made for one resource is
                // never made again for the next.
                let made = session
                    .transcript
                    .iter()
                    .filter(|exchange| exchange.kind == "made_up")
                    .count();
                let value = Value::from(format!("wayline-{short}-{}", made + 1));
                tracing::info!(field = %name, %value, "a value was made up for a required field");
                // Made up for this resource alone: the next resource's name is its own.
                let key = scoped_name(operation, name);
                session
                    .current_state
                    .variables
                    .insert(key.clone(), value.clone());
                session.transcript.push(Exchange {
                    after_steps: u32::try_from(session.confirmed_steps.len()).unwrap_or(u32::MAX),
                    kind: "made_up".to_owned(),
                    operation: Some(suggestion.operation.clone()),
                    question: format!("`{name}` is required and nothing gives it"),
                    options: Vec::new(),
                    answer: value.to_string(),
                    by: Answerer::Auto,
                });
                session.generated.insert(key, value);
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
        // The other side: what the latest answer held, values and all, for a person to link
        // by hand where no rule could (`createPost` answered `data.id = "qSs3"`).
        let known: Vec<String> = session
            .confirmed_steps
            .iter()
            .rev()
            .find_map(|step| {
                let leaves = leaves(&step.response["body"], KNOWN_LEAVES);
                (!leaves.is_empty())
                    .then(|| format!("`{}` answered {}", step.operation_id, leaves.join(", ")))
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
        match self.put(session, question).await {
            Answer::Text(text) => {
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(values)) => {
                        for (name, value) in values {
                            session
                                .current_state
                                .answer(scoped_name(operation, &name), value);
                        }
                    }
                    // One input, given as it is (`My first post`) or as a JSON scalar.
                    parsed if missing.len() == 1 => {
                        let value = parsed.unwrap_or_else(|_| Value::from(text.clone()));
                        session
                            .current_state
                            .answer(scoped_name(operation, missing[0]), value);
                    }
                    _ => merge_variables(&mut session.current_state, &text, operation),
                }
                Asked::Go(suggestion.operation.clone())
            }
            // A number typed at the terminal reads as a choice: for one input, it is the value.
            Answer::Choose(number) if missing.len() == 1 => {
                session
                    .current_state
                    .answer(scoped_name(operation, missing[0]), Value::from(number));
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
            _ => self.stop(
                session,
                &format!(
                    "`{}` needs {listed}, and the answer was to stop",
                    suggestion.operation
                ),
            ),
        }
    }

    /// A collection-wide write about to run without both the target's word and the caller's
    /// leave: auto mode refuses it and the session fails, saying why; a person is told what
    /// it does and asked.
    pub(super) async fn allow_collection_write(
        &self,
        session: &mut Exploration,
        suggestion: &Suggestion,
        why: &str,
        asked_for: bool,
    ) -> Asked {
        let context = if asked_for {
            "the target asks for the whole collection, but collection-wide writes were not \
             allowed (--allow-collection-writes)"
        } else {
            "the target is about one item"
        };
        // Unattended (auto mode, an answers file, any answerer but a person): refused, for no
        // rule written before the run can know what this collection holds now.
        if self.thresholds.auto || self.interventor.answerer() != Answerer::Person {
            session.rejected_steps.push(RejectedStep {
                operation_id: suggestion.operation.clone(),
                error: format!("{why}; {context}"),
                user_action: "not run: a collection-wide write never runs unattended unasked"
                    .to_owned(),
            });
            session.end(
                ExplorationStatus::Failed,
                format!("{why}; {context}: it never runs unattended unasked"),
            );
            return Asked::Stop;
        }
        let question = Question::new(
            QuestionKind::Confirm,
            format!("{why}; {context}. Run it anyway?"),
        )
        .operation(suggestion.operation.clone())
        .context(json!({"collection_wide": why}));
        match self.put(session, question).await {
            Answer::Yes => Asked::Go(suggestion.operation.clone()),
            Answer::No => {
                session.rejected_steps.push(RejectedStep {
                    operation_id: suggestion.operation.clone(),
                    error: why.to_owned(),
                    user_action: "declined".to_owned(),
                });
                if let Some(goal) = &suggestion.goal {
                    session.goals_done.push(goal.clone());
                }
                Asked::Skip
            }
            _ => self.stop(session, "a collection-wide write was not confirmed"),
        }
    }

    fn stop(&self, session: &mut Exploration, why: &str) -> Asked {
        tracing::info!(why, "the session stops");
        session.end(ExplorationStatus::Aborted, why);
        Asked::Stop
    }

    /// Puts `question` to the interventor, and keeps it in the transcript with the answer and
    /// who gave it.
    pub(super) async fn put(&self, session: &mut Exploration, question: Question) -> Answer {
        session.interventions += 1;
        let answer = self.interventor.ask(&question).await;
        let said = match &answer {
            Answer::Yes => "yes".to_owned(),
            Answer::No => "no".to_owned(),
            Answer::Choose(index) => match question.options.get(*index) {
                Some(option) => format!("option {index} ({option})"),
                None => format!("option {index}"),
            },
            // Credentials are never taken from an answer; whatever was typed is not kept.
            Answer::Text(_) if question.kind == QuestionKind::Credentials => {
                "[not kept: credentials come from the SUT's environment]".to_owned()
            }
            Answer::Text(text) => match serde_json::from_str::<Value>(text) {
                Ok(value @ Value::Object(_)) => crate::state::redact(&value).to_string(),
                // A bare text answers the one input asked for: masked when that is a secret.
                _ if asks_for_a_secret(&question) => "[secret]".to_owned(),
                _ => text.clone(),
            },
            _ => "stop".to_owned(),
        };
        let kind = serde_json::to_value(question.kind)
            .ok()
            .and_then(|kind| kind.as_str().map(str::to_owned))
            .unwrap_or_default();
        session.transcript.push(Exchange {
            after_steps: u32::try_from(session.confirmed_steps.len()).unwrap_or(u32::MAX),
            kind,
            operation: question.operation.clone(),
            question: question.message.clone(),
            options: question.options.clone(),
            answer: said,
            by: self.interventor.answerer(),
        });
        answer
    }
}

/// True when `question` asks for an input named as a secret is (`password`, `apiKey`).
fn asks_for_a_secret(question: &Question) -> bool {
    question.context["missing"].as_array().is_some_and(|names| {
        names
            .iter()
            .filter_map(Value::as_str)
            .any(crate::state::is_secret_name)
    })
}

/// How many of an answer's values a question shows.
const KNOWN_LEAVES: usize = 8;

/// The longest value text a question shows.
const LEAF_TEXT: usize = 40;

/// The first `limit` plain values of `body`, each as `dotted.path = value` (arrays by their
/// first item; long text cut), in the answer's order.
pub(super) fn leaves(body: &Value, limit: usize) -> Vec<String> {
    fn walk(value: &Value, at: &str, out: &mut Vec<String>, limit: usize, depth: usize) {
        if out.len() >= limit || depth > 6 {
            return;
        }
        let join = |key: &str| {
            if at.is_empty() {
                key.to_owned()
            } else {
                format!("{at}.{key}")
            }
        };
        match value {
            Value::Object(fields) => {
                for (key, inner) in fields {
                    walk(inner, &join(key), out, limit, depth + 1);
                }
            }
            Value::Array(items) => {
                if let Some(first) = items.first() {
                    walk(first, &join("0"), out, limit, depth + 1);
                }
            }
            Value::Null => {}
            plain => {
                let text = plain.to_string();
                let text = if text.chars().count() > LEAF_TEXT {
                    format!("{}…", text.chars().take(LEAF_TEXT).collect::<String>())
                } else {
                    text
                };
                let shown = if crate::state::is_secret_name(at.rsplit('.').next().unwrap_or(at)) {
                    "[secret]".to_owned()
                } else {
                    text
                };
                out.push(format!("`{at}` = {shown}"));
            }
        }
    }
    let mut out = Vec::new();
    walk(body, "", &mut out, limit, 0);
    out
}

/// The name an answer for `name` is kept under: scoped to the resource the input belongs to
/// (`post.title` for `createPost`'s `title`, `bucket.id` for the `{id}` of `/buckets/{id}`),
/// so it fills that resource's inputs and no other's. A name that is no input of the
/// operation is scoped to the operation's resource; one already scoped, or given with no
/// operation, stays as it is.
pub(super) fn scoped_name(operation: Option<&Operation>, name: &str) -> String {
    let Some(operation) = operation else {
        return name.to_owned();
    };
    let parameter = operation
        .parameters
        .iter()
        .find(|parameter| parameter.name == name)
        .or_else(|| {
            operation
                .parameters
                .iter()
                .find(|parameter| names::same_name(&parameter.name, name))
        });
    match parameter {
        Some(parameter) => format!("{}.{name}", owner_of(operation, parameter)),
        None if name.contains('.') => name.to_owned(),
        None => format!("{}.{name}", intent::operation_resource(operation)),
    }
}

/// Values a person gave as JSON text (`{"region": ...}`) become variables, scoped as
/// [`scoped_name`] says; other text is kept as the variable `clarification`.
pub(super) fn merge_variables(state: &mut ExploreState, text: &str, operation: Option<&Operation>) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(values)) => {
            for (name, value) in values {
                state.answer(scoped_name(operation, &name), value);
            }
        }
        _ => {
            state
                .variables
                .insert("clarification".to_owned(), Value::from(text));
        }
    }
}

//! After a failure: what a person says to do about it, and when failures and refusals of
//! one operation end the session.

use serde_json::json;
use wayline_core::intervene::{Answer, Question, QuestionKind};
use wayline_registry::openapi::Operation;

use crate::exploration::{Exploration, ExplorationStatus, RejectedStep};

use super::Explorer;
use super::asking::merge_variables;

/// Failures or refusals of one operation before the session gives up.
pub(super) const MAX_STRIKES: u32 = 3;

/// What to do after a failure.
pub(super) enum Recovery {
    Retry,
    Skip(String),
    Stop(String),
}

impl Explorer {
    /// Counts a failure or refusal of `operation`; at the third, the session fails (and says
    /// why). True when it did.
    pub(super) fn strike(
        &self,
        session: &mut Exploration,
        strikes: &mut std::collections::HashMap<String, u32>,
        operation: &str,
        what: &str,
    ) -> bool {
        let count = strikes.entry(operation.to_owned()).or_default();
        *count += 1;
        if *count < MAX_STRIKES {
            return false;
        }
        session.rejected_steps.push(RejectedStep {
            operation_id: operation.to_owned(),
            error: format!("{what} {MAX_STRIKES} times"),
            user_action: "the session stopped".to_owned(),
        });
        session.end(
            ExplorationStatus::Failed,
            format!("`{operation}` {what} {MAX_STRIKES} times"),
        );
        true
    }

    /// What to do after a failed step: an error the explorer cannot recover from on its own
    /// (400, 401 or 403, 404, 409, anything else) is put to a person, each kind with its own
    /// question.
    pub(super) async fn recover(
        &self,
        session: &mut Exploration,
        operation: &Operation,
        error: &str,
        status: Option<u16>,
    ) -> Recovery {
        let (kind, message) = match status {
            // Bad Request, and Unprocessable Entity (FastAPI's and many others' answer to a
            // missing field).
            Some(code @ (400 | 422)) => {
                let named = wayline_knowledge::words::missing_names(error);
                let fix = match named.first() {
                    None => "give the missing or wrong values as JSON to retry".to_owned(),
                    Some(first) => format!(
                        "suggested fix: give {} (as JSON: {{\"{first}\": ...}}) to retry",
                        named
                            .iter()
                            .map(|name| format!("`{name}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                (
                    QuestionKind::Error,
                    format!(
                        "{code} {} from {}: {error}; {fix}",
                        if code == 400 {
                            "Bad Request"
                        } else {
                            "Unprocessable Entity"
                        },
                        operation.id
                    ),
                )
            }
            Some(401 | 403) => (
                QuestionKind::Credentials,
                format!(
                    "{} was refused ({error}); check the credentials",
                    operation.id
                ),
            ),
            Some(404) => (
                QuestionKind::Error,
                format!(
                    "{}: not found ({error}); does the resource still exist?",
                    operation.id
                ),
            ),
            Some(409) => (
                QuestionKind::Error,
                format!(
                    "{}: state conflict ({error}); known states: {:?}",
                    operation.id,
                    session.current_state.resource_states()
                ),
            ),
            _ => (
                QuestionKind::Error,
                format!("{} failed: {error}", operation.id),
            ),
        };
        let question = Question::new(kind, message)
            .operation(operation.id.clone())
            .context(json!({"status": status, "error": error}));
        let answer = self.put(session, question).await;
        if kind == QuestionKind::Credentials {
            // Credentials come from the SUT's environment variables, never from an answer (it
            // would land in the session file); retrying with the same ones cannot help.
            return match answer {
                Answer::No => Recovery::Skip("skipped".to_owned()),
                _ => Recovery::Stop(
                    "stopped: set the SUT's credential variables and resume".to_owned(),
                ),
            };
        }
        match answer {
            Answer::Yes => Recovery::Retry,
            Answer::Text(text) => {
                merge_variables(&mut session.current_state, &text, Some(operation));
                Recovery::Retry
            }
            Answer::No => Recovery::Skip("skipped".to_owned()),
            _ => Recovery::Stop("stopped".to_owned()),
        }
    }
}

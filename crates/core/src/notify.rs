//! Telling people about finished runs: the [`Notifier`] plug-in trait and the [`RunNotice`] it
//! receives.
//!
//! # Contract of [`Notifier`]
//! - [`Notifier::notify`] delivers one notice (a webhook call, a line on a terminal, a chat
//!   message). It may retry; when it gives up it returns an error saying why, and the caller
//!   records or prints it — a notification that cannot be delivered never changes a run.
//! - Notices carry the run record's data, which is already redacted: no secret values.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::run::{Run, RunStatus, StepStatus};
use crate::store::RunSummary;

/// Why a notice is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NoticeKind {
    /// The run failed (or was cancelled).
    RunFailed,
    /// The run succeeded.
    RunSucceeded,
}

/// What a notifier is told: the run in brief and, when it failed, which steps failed and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunNotice {
    /// Why it is sent.
    pub kind: NoticeKind,
    /// The run.
    pub run: RunSummary,
    /// The failed steps, in the record's order.
    pub failed_steps: Vec<FailedStep>,
}

/// One failed step in a [`RunNotice`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailedStep {
    /// The step.
    pub step_id: String,
    /// Why it failed.
    pub error: String,
}

impl RunNotice {
    /// The notice for a finished run.
    pub fn of(run: &Run) -> RunNotice {
        RunNotice {
            kind: if run.status == RunStatus::Success {
                NoticeKind::RunSucceeded
            } else {
                NoticeKind::RunFailed
            },
            run: RunSummary::of(run),
            failed_steps: run
                .step_results
                .iter()
                .filter(|result| result.status == StepStatus::Failed)
                .map(|result| FailedStep {
                    step_id: result.step_id.clone(),
                    error: result.error.clone().unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// One line for people: `run R of workflow W failed: step a: why; step b: why`.
    pub fn headline(&self) -> String {
        let run = &self.run;
        let version = run
            .workflow_version
            .map_or_else(String::new, |version| format!(" v{version}"));
        let outcome = match self.kind {
            NoticeKind::RunSucceeded => "succeeded".to_owned(),
            NoticeKind::RunFailed => {
                let status = run.status.as_str().to_owned();
                if self.failed_steps.is_empty() {
                    status
                } else {
                    let steps: Vec<String> = self
                        .failed_steps
                        .iter()
                        .map(|step| format!("step {}: {}", step.step_id, step.error))
                        .collect();
                    format!("{status}: {}", steps.join("; "))
                }
            }
        };
        format!(
            "run {} of workflow {}{version} {outcome}",
            run.id, run.workflow_id
        )
    }
}

/// Why a notice was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotifyErrorKind {
    /// The receiver could not be reached, or kept failing through the retries.
    Unavailable,
    /// The receiver answered that it will not take the notice (an HTTP 4xx).
    Refused,
    /// The notice could not be encoded or written out here.
    Local,
}

/// A notice that could not be delivered: its kind and a message naming the receiver (never a
/// secret; webhook URLs are shown by their origin only).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct NotifyError {
    kind: NotifyErrorKind,
    message: String,
}

impl NotifyError {
    /// A failure of `kind`; `message` must hold no secret.
    pub fn new(kind: NotifyErrorKind, message: impl Into<String>) -> Self {
        NotifyError {
            kind,
            message: message.into(),
        }
    }

    /// What kind.
    pub fn kind(&self) -> NotifyErrorKind {
        self.kind
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Delivers [`RunNotice`]s. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait Notifier: Send + Sync + fmt::Debug {
    /// Delivers one notice.
    async fn notify(&self, notice: &RunNotice) -> Result<(), NotifyError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::StepResult;

    #[test]
    fn a_failed_run_names_its_failed_steps() {
        let mut run = Run::new("r1", "briefing");
        run.status = RunStatus::Failed;
        run.workflow_version = Some(3);
        let mut failed = StepResult::pending("weather");
        failed.status = StepStatus::Failed;
        failed.error = Some("HTTP 500".into());
        run.step_results.push(StepResult::pending("geo"));
        run.step_results.push(failed);
        let notice = RunNotice::of(&run);
        assert_eq!(notice.kind, NoticeKind::RunFailed);
        assert_eq!(
            notice.headline(),
            "run r1 of workflow briefing v3 failed: step weather: HTTP 500"
        );
        run.status = RunStatus::Success;
        assert_eq!(
            RunNotice::of(&run).headline(),
            "run r1 of workflow briefing v3 succeeded"
        );
    }
}

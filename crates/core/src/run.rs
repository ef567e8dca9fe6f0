//! Run records: one [`Run`] per execution of a workflow, one [`StepResult`] per step.
//!
//! Field names and status values are those of the Python structure-ai-bot project's `Run`;
//! `attempts` and `duration_ms` are wayline's additions, left out when unset.

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One execution of a workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Run {
    /// Unique id.
    pub id: String,
    /// The workflow that ran.
    pub workflow_id: String,
    /// The saved version that ran (wayline's addition; absent for a workflow run from a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_version: Option<u32>,
    /// Overall status.
    pub status: RunStatus,
    /// One result per step, in execution order.
    #[serde(default)]
    pub step_results: Vec<StepResult>,
    /// The inputs the run was given.
    #[serde(default)]
    pub user_inputs: IndexMap<String, Value>,
    /// When the run started.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// When the run ended.
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
}

impl Run {
    /// A new run in `running` state with no step results yet.
    pub fn new(id: impl Into<String>, workflow_id: impl Into<String>) -> Self {
        Run {
            id: id.into(),
            workflow_id: workflow_id.into(),
            workflow_version: None,
            status: RunStatus::Running,
            step_results: Vec::new(),
            user_inputs: IndexMap::new(),
            started_at: None,
            finished_at: None,
        }
    }
}

/// Overall status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// No critical step failed.
    Success,
    /// A critical step failed.
    Failed,
    /// Still going.
    Running,
    /// Stopped by cancellation (Ctrl-C, a cancel token).
    Cancelled,
    /// Stopped because its deadline passed.
    TimedOut,
}

impl RunStatus {
    /// The status as records write it (`success`, `failed`, `running`, `cancelled`,
    /// `timed_out`).
    ///
    /// ```
    /// use wayline_core::RunStatus;
    /// assert_eq!(RunStatus::Cancelled.as_str(), "cancelled");
    /// assert_eq!(serde_json::to_value(RunStatus::Failed).unwrap(), RunStatus::Failed.as_str());
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::Failed => "failed",
            RunStatus::Running => "running",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
        }
    }
}

/// The outcome of one step in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StepResult {
    /// The step.
    pub step_id: String,
    /// Its status.
    pub status: StepStatus,
    /// Its output (usually an object).
    #[serde(default = "empty_object")]
    pub output_data: Value,
    /// Why it failed or was skipped.
    #[serde(default)]
    pub error: Option<String>,
    /// Non-critical validation failures and similar notes.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// When it started.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    /// Attempts made (retries and polls included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    /// Wall time of the step in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The last request sent, secrets redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestSummary>,
    /// Status of the last response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<u16>,
    /// The step's `expect` checks, each passed or failed, in the order written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<AssertionResult>,
    /// Where control went after it, in a flow run, when not on to the steps after it: kept so
    /// that a resumed run takes the same path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump: Option<Jump>,
}

/// Where control went after a step of a flow run (the executor's `flow` module), other than on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "to", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Jump {
    /// The run ended.
    End,
    /// To this step, which ran again with the steps after it.
    Step {
        /// The step's id.
        step: String,
    },
    /// The same step again, after this wait.
    Retry {
        /// The wait, in milliseconds.
        after_ms: u64,
    },
}

/// One checked expectation of a step (see [`crate::expect`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AssertionResult {
    /// What was checked: `status`, `header content-type`, `body $.id`, `duration_ms`, or
    /// `assert` with its condition.
    pub subject: String,
    /// How: `in`, `equals`, `contains`, `matches`, `exists`, `type`, `length`, `gt`, `at most`,
    /// `holds`…
    pub check: String,
    /// Whether it held.
    pub passed: bool,
    /// What was expected, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// What came, as JSON text (secrets masked, long values cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
}

impl AssertionResult {
    /// A check of `subject` by `check`.
    pub fn new(subject: impl Into<String>, check: impl Into<String>, passed: bool) -> Self {
        AssertionResult {
            subject: subject.into(),
            check: check.into(),
            passed,
            expected: None,
            actual: None,
        }
    }

    /// With what was expected and what came.
    pub fn values(mut self, expected: impl Into<String>, actual: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self.actual = Some(actual.into());
        self
    }
}

impl std::fmt::Display for AssertionResult {
    /// `body $.id equals: expected 5, got 7`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.subject, self.check)?;
        match (&self.expected, &self.actual) {
            (Some(expected), Some(actual)) => write!(f, ": expected {expected}, got {actual}"),
            (Some(expected), None) => write!(f, ": expected {expected}"),
            (None, Some(actual)) => write!(f, ": got {actual}"),
            (None, None) => Ok(()),
        }
    }
}

/// What was sent, for the record: credentials replaced by `***`, long bodies cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RequestSummary {
    /// Method.
    pub method: String,
    /// URL with query.
    pub url: String,
    /// Headers, sensitive values as `***`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// The body as JSON when it is JSON, else as text (cut at 4 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The URLs the last attempt was redirected to, in order (secrets masked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirects: Vec<String>,
}

impl RequestSummary {
    /// A summary with no headers and no body.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        RequestSummary {
            method: method.into(),
            url: url.into(),
            headers: IndexMap::new(),
            body: None,
            redirects: Vec::new(),
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl StepResult {
    /// A `pending` result for `step_id`.
    pub fn pending(step_id: impl Into<String>) -> Self {
        StepResult {
            step_id: step_id.into(),
            status: StepStatus::Pending,
            output_data: empty_object(),
            error: None,
            warnings: Vec::new(),
            started_at: None,
            finished_at: None,
            attempts: 0,
            duration_ms: None,
            request: None,
            response_status: None,
            assertions: Vec::new(),
            jump: None,
        }
    }
}

/// Status of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepStatus {
    /// Finished and passed its validations.
    Success,
    /// Failed.
    Failed,
    /// Not run: a dependency failed or was skipped, or its `when` was false.
    Skipped,
    /// Not started yet.
    Pending,
    /// In progress.
    Running,
    /// It was in flight when the process running it died: it may or may not have taken effect.
    UnknownOutcome,
    /// It was in flight when the run was cancelled or its deadline passed, and was stopped.
    Cancelled,
}

impl StepStatus {
    /// The status as records write it (`success`, `failed`, `skipped`, `pending`, `running`,
    /// `unknown_outcome`, `cancelled`).
    ///
    /// ```
    /// use wayline_core::StepStatus;
    /// assert_eq!(StepStatus::UnknownOutcome.as_str(), "unknown_outcome");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Success => "success",
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
            StepStatus::Pending => "pending",
            StepStatus::Running => "running",
            StepStatus::UnknownOutcome => "unknown_outcome",
            StepStatus::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_are_the_serialized_names() {
        use RunStatus as R;
        use StepStatus as S;
        for status in [R::Success, R::Failed, R::Running, R::Cancelled, R::TimedOut] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        for status in [
            S::Success,
            S::Failed,
            S::Skipped,
            S::Pending,
            S::Running,
            S::UnknownOutcome,
            S::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }

    #[test]
    fn run_serializes_with_seed_field_names() {
        let mut run = Run::new("r1", "w1");
        run.step_results.push(StepResult::pending("step_1"));
        run.started_at = Some("2026-01-02T03:04:05.678Z".parse().unwrap());
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "id": "r1", "workflow_id": "w1", "status": "running",
                "step_results": [{"step_id": "step_1", "status": "pending", "output_data": {},
                    "error": null, "warnings": [], "started_at": null, "finished_at": null}],
                "user_inputs": {}, "started_at": "2026-01-02T03:04:05.678Z", "finished_at": null
            })
        );
        let back: Run = serde_json::from_value(json).unwrap();
        assert_eq!(back, run);
    }
}

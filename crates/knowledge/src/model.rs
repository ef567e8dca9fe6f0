//! The knowledge of one system under test, in the shapes of the knowledge format's three YAML
//! files: `patterns.yaml` ([`PatternsFile`]), `pitfalls.yaml` ([`PitfallsFile`]) and
//! `stats.yaml` ([`Stats`]).
//!
//! Every field of the format's example files is here under its name; fields a file leaves out
//! are optional. Fields wayline adds for its own bookkeeping (`strength`, `contradiction_count`,
//! `seen_variables`, `samples`, `status_code` of a common error) are optional too and are not
//! written when unset, so a file in the original format, saved again, keeps its shape. Any other
//! field a file holds is kept in `extra` and written back: nothing present is lost silently.

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Fields a file holds that this model does not name, kept as they were.
pub type Extra = IndexMap<String, Value>;

/// Everything learned about one system under test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Knowledge {
    /// Step sequences that worked.
    pub patterns: Vec<Pattern>,
    /// Failures with their triggers and resolutions.
    pub pitfalls: Vec<Pitfall>,
    /// Per-operation statistics and state-transition timings.
    pub stats: Stats,
}

impl Knowledge {
    /// Nothing learned yet.
    pub fn new() -> Self {
        Knowledge::default()
    }

    /// True when nothing has been learned.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
            && self.pitfalls.is_empty()
            && self.stats.operations.is_empty()
            && self.stats.state_transitions.is_empty()
    }
}

/// `patterns.yaml`. Unknown top-level keys are refused (they would have nowhere to go).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PatternsFile {
    /// The patterns.
    #[serde(default)]
    pub patterns: Vec<Pattern>,
}

/// `pitfalls.yaml`. Unknown top-level keys are refused (they would have nowhere to go).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PitfallsFile {
    /// The pitfalls.
    #[serde(default)]
    pub pitfalls: Vec<Pitfall>,
}

/// A step sequence that reached a goal, and how often it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Pattern {
    /// Stable id (`pattern_001`, or a hash of the operation sequence for learned ones).
    pub id: String,
    /// A name made of the operations (`create_cluster_and_poll`).
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it applies.
    #[serde(default)]
    pub trigger: PatternTrigger,
    /// The steps, abstracted into templates.
    #[serde(default)]
    pub steps: Vec<PatternStep>,
    /// Runs that followed it and succeeded.
    #[serde(default)]
    pub success_count: u64,
    /// Runs that followed it and failed.
    #[serde(default)]
    pub failure_count: u64,
    /// When it was last followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<DateTime<Utc>>,
    /// Mean wall time of a successful run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_duration_seconds: Option<f64>,
    /// wayline: evidence weight in `[0, 1]` that fades when the pattern is unused or fails
    /// (absent means 1). See `docs/decisions.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// When a pattern matches: intent keywords and preconditions on the current state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct PatternTrigger {
    /// Words of an intent that select this pattern (all must appear).
    #[serde(default)]
    pub intent_keywords: Vec<String>,
    /// What must hold first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Precondition>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A condition on the current state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Precondition {
    /// A resource that must not exist yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_not_exists: Option<String>,
    /// Resources that must be in these states.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub resource_state: IndexMap<String, String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One step of a pattern.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct PatternStep {
    /// The operation (tool id).
    pub operation_id: String,
    /// The request, with values abstracted away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_template: Option<RequestTemplate>,
    /// Values saved from the response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub save: Vec<SaveRule>,
    /// What the response must look like (a polling condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Polls allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Seconds between polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_after: Option<u64>,
    /// A remark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A request with its values abstracted: method, path template, parameter and body key names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct RequestTemplate {
    /// HTTP method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path with `{placeholders}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Names of the body's top-level keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub body_keys: Vec<String>,
    /// Names of the path parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_params: Vec<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A value saved from a response under a key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct SaveRule {
    /// The variable.
    pub key: String,
    /// Where the value comes from (`body.clusterId`).
    pub eval: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a response must show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Expect {
    /// Expected status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// A CEL condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A way an operation fails, when it does, and how to avoid it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Pitfall {
    /// Stable id.
    pub id: String,
    /// A short name.
    pub name: String,
    /// What goes wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it applies.
    pub trigger: PitfallTrigger,
    /// The error seen.
    #[serde(default)]
    pub error_pattern: ErrorPattern,
    /// How to avoid it, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    /// Times it happened.
    #[serde(default)]
    pub occurrence_count: u64,
    /// When it last happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_occurred: Option<DateTime<Utc>>,
    /// wayline: times the operation succeeded although the trigger held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contradiction_count: Option<u64>,
    /// wayline: the variables that were set when it last happened (a later success with more
    /// variables shows which one was missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_variables: Vec<String>,
    /// wayline: evidence weight in `[0, 1]` (absent means 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The conditions under which a pitfall applies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct PitfallTrigger {
    /// The operation.
    pub operation_id: String,
    /// A variable whose absence causes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_variable: Option<String>,
    /// Resource states in which it happens.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub resource_state: IndexMap<String, String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The error a pitfall produces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct ErrorPattern {
    /// Response status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Text the error message contains (ids and numbers masked).
    #[serde(default)]
    pub message_contains: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// How to avoid a pitfall.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Resolution {
    /// In a sentence.
    pub description: String,
    /// Step by step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fix_steps: Vec<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `stats.yaml`: per-operation statistics and state-transition timings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Stats {
    /// By operation id.
    #[serde(default)]
    pub operations: IndexMap<String, OperationStats>,
    /// By resource, then `FROM_to_TO`.
    #[serde(default)]
    pub state_transitions: IndexMap<String, IndexMap<String, TransitionStats>>,
    /// Other top-level fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Attempts of one operation and how they went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct OperationStats {
    /// Attempts (polls and retries included).
    #[serde(default)]
    pub total_attempts: u64,
    /// Attempts that got a good answer.
    #[serde(default)]
    pub successes: u64,
    /// Attempts that failed.
    #[serde(default)]
    pub failures: u64,
    /// `successes / total_attempts`, as recorded (queries smooth it).
    #[serde(default)]
    pub success_rate: f64,
    /// Mean attempt duration.
    #[serde(default)]
    pub avg_duration_ms: f64,
    /// Errors by kind, most frequent first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub common_errors: Vec<CommonError>,
    /// Last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<DateTime<Utc>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One kind of error and how often it occurred.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct CommonError {
    /// The message, ids, numbers and URLs masked.
    pub error: String,
    /// Times.
    pub count: u64,
    /// wayline: the response status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CommonError {
    /// True when an error with this message and status counts under this entry: the same
    /// message, and the same status unless this entry names none (a hand-written one).
    pub fn same_kind(&self, error: &str, status_code: Option<u16>) -> bool {
        self.error == error
            && self
                .status_code
                .is_none_or(|known| Some(known) == status_code)
    }
}

/// How long a resource takes to go from one state to another while polled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct TransitionStats {
    /// Mean polls.
    #[serde(default)]
    pub avg_poll_attempts: f64,
    /// Mean seconds.
    #[serde(default)]
    pub avg_duration_seconds: f64,
    /// wayline: transitions observed (absent in a hand-written file: counted as one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TransitionStats {
    /// Observations behind the averages.
    pub fn sample_count(&self) -> u64 {
        self.samples.unwrap_or(1).max(1)
    }
}

impl OperationStats {
    /// Adds one attempt.
    pub fn record(&mut self, success: bool, duration_ms: f64, at: DateTime<Utc>) {
        let before = self.total_attempts as f64;
        self.total_attempts = self.total_attempts.saturating_add(1);
        if success {
            self.successes = self.successes.saturating_add(1);
        } else {
            self.failures = self.failures.saturating_add(1);
        }
        self.avg_duration_ms =
            (self.avg_duration_ms * before + duration_ms) / self.total_attempts as f64;
        self.success_rate = rate(self.successes, self.total_attempts);
        self.last_used = Some(self.last_used.map_or(at, |last| last.max(at)));
    }

    /// Counts one error of this kind.
    pub fn record_error(&mut self, error: &str, status_code: Option<u16>) {
        match self
            .common_errors
            .iter_mut()
            .find(|known| known.same_kind(error, status_code))
        {
            Some(known) => known.count = known.count.saturating_add(1),
            None => self.common_errors.push(CommonError {
                error: error.to_owned(),
                count: 1,
                status_code,
                extra: Extra::new(),
            }),
        }
        // Most frequent first; a stable sort keeps first-seen order among equals.
        self.common_errors
            .sort_by_key(|error| std::cmp::Reverse(error.count));
    }
}

/// `part / whole` rounded to 4 decimals (0 when `whole` is 0), as the knowledge format writes
/// rates.
pub(crate) fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 10_000.0).round() / 10_000.0
}

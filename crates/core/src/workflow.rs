//! Workflows: steps (each a call of a tool), the edges between them, and declared inputs.
//!
//! The JSON written by the Python structure-ai-bot project's models loads unchanged. wayline's
//! extensions are optional and left out when unset, so a workflow that uses none of them
//! serializes as the original did.

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::document::{self, DocumentError, Format};
use crate::expect::Expect;
use crate::tool::RetryPolicy;

/// A graph of steps.
///
/// ```
/// use wayline_core::document::{parse, Format};
/// use wayline_core::Workflow;
///
/// let workflow: Workflow = parse(r#"
/// id: weather
/// name: Weather here
/// steps:
///   - {id: where, tool_id: ip_geolocation}
///   - id: weather
///     tool_id: open_meteo
///     input_mapping: {latitude: where.lat, longitude: where.lon}
/// "#, Format::Yaml, "weather.yaml").unwrap();
/// assert_eq!(workflow.steps.len(), 2);
/// assert!(workflow.edges.is_empty()); // inferred later, by the graph crate
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Workflow {
    /// Unique id.
    pub id: String,
    /// Human label.
    pub name: String,
    /// What the workflow achieves (extension).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Declared run inputs, by name (extension). When any are declared, `$input.X` must name one.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, InputSpec>,
    /// The steps, in declaration order (which breaks ordering ties).
    pub steps: Vec<Step>,
    /// Explicit dependency edges; more are inferred from mappings and conditions.
    #[serde(default)]
    pub edges: Vec<Edge>,
    /// Lifecycle status.
    #[serde(default)]
    pub status: WorkflowStatus,
}

impl Workflow {
    /// An empty draft workflow.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Workflow {
            id: id.into(),
            name: name.into(),
            description: String::new(),
            inputs: IndexMap::new(),
            steps: Vec::new(),
            edges: Vec::new(),
            status: WorkflowStatus::Draft,
        }
    }

    /// Parses a workflow from YAML or JSON text; `origin` names it in errors.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<Workflow, Box<DocumentError>> {
        document::parse(text, format, origin)
    }

    /// The step with this id (the first, if ids repeat).
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }
}

/// A declared run input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct InputSpec {
    /// What the input is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Value used when the run does not give one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Whether a run must give it (default: required unless it has a default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// Workflow lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WorkflowStatus {
    /// Being designed.
    #[default]
    Draft,
    /// Approved by a person (who, when and which graph are in the store's record).
    Approved,
    /// The approved graph passed a validation run.
    Validated,
    /// In use: runs on triggers. At most one version of a workflow is active.
    Active,
    /// Retired; kept for history.
    Archived,
}

impl WorkflowStatus {
    /// The state as stores write it (`draft`, `approved`, `validated`, `active`, `archived`).
    ///
    /// ```
    /// use wayline_core::WorkflowStatus;
    /// assert_eq!(WorkflowStatus::Validated.as_str(), "validated");
    /// for state in [WorkflowStatus::Draft, WorkflowStatus::Active, WorkflowStatus::Archived] {
    ///     assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
    /// }
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowStatus::Draft => "draft",
            WorkflowStatus::Approved => "approved",
            WorkflowStatus::Validated => "validated",
            WorkflowStatus::Active => "active",
            WorkflowStatus::Archived => "archived",
        }
    }
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Step {
    /// Unique id within the workflow; references use it as their first segment.
    pub id: String,
    /// The tool this step calls (required for `action` and `code` steps).
    #[serde(default)]
    pub tool_id: String,
    /// Tool input name → reference or literal (see [`crate::reference`]).
    #[serde(default)]
    pub input_mapping: IndexMap<String, Value>,
    /// What the step does.
    #[serde(default)]
    pub description: String,
    /// Human label.
    #[serde(default)]
    pub name: String,
    /// Checks on inputs or outputs.
    #[serde(default)]
    pub validations: Vec<StepValidation>,
    /// Whether a failure fails the run.
    #[serde(default)]
    pub severity: Severity,

    /// CEL condition; false skips the step (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Repeat the call until a CEL condition holds (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<Poll>,
    /// Retry policy for transient failures (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Per-attempt timeout in milliseconds (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Named outputs: name → CEL expression or path over the response (extension).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub outputs: IndexMap<String, String>,
    /// What kind of node this is (extension).
    #[serde(default, skip_serializing_if = "is_default_kind")]
    pub kind: StepKind,
    /// A `decision` step's question (extension; see [`crate::decide`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_prompt: Option<String>,
    /// A `decision` step's allowed answers; later steps branch on `steps.ID.choice`
    /// (extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// What the step expects of its response: status, headers, body values, duration, CEL
    /// assertions (extension; see [`crate::expect`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

fn is_default_kind(kind: &StepKind) -> bool {
    *kind == StepKind::Action
}

impl Step {
    /// An `action` step calling `tool_id`, with no mappings.
    pub fn new(id: impl Into<String>, tool_id: impl Into<String>) -> Self {
        Step {
            id: id.into(),
            tool_id: tool_id.into(),
            input_mapping: IndexMap::new(),
            description: String::new(),
            name: String::new(),
            validations: Vec::new(),
            severity: Severity::Critical,
            when: None,
            poll: None,
            retry: None,
            timeout_ms: None,
            outputs: IndexMap::new(),
            kind: StepKind::Action,
            decision_prompt: None,
            choices: Vec::new(),
            expect: None,
        }
    }

    /// A `decision` step asking `prompt`, answered by one of `choices`.
    pub fn decision(
        id: impl Into<String>,
        prompt: impl Into<String>,
        choices: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let mut step = Step::new(id, "");
        step.kind = StepKind::Decision;
        step.decision_prompt = Some(prompt.into());
        step.choices = choices.into_iter().map(Into::into).collect();
        step
    }

    /// Adds an input mapping (builder style).
    pub fn map(mut self, input: impl Into<String>, value: impl Into<Value>) -> Self {
        self.input_mapping.insert(input.into(), value.into());
        self
    }

    /// The CEL expressions of this step with where each sits: `when`, `poll.until`, the
    /// `outputs` that are CEL rather than extraction paths (see [`is_extraction_path`]), and
    /// `expect.assert`.
    pub fn expressions(&self) -> impl Iterator<Item = (ExpressionField<'_>, &str)> {
        let when = self
            .when
            .as_deref()
            .map(|source| (ExpressionField::When, source));
        let until = self
            .poll
            .as_ref()
            .map(|poll| (ExpressionField::PollUntil, poll.until.as_str()));
        let outputs = self
            .outputs
            .iter()
            .filter(|(_, source)| !is_extraction_path(source))
            .map(|(name, source)| (ExpressionField::Output(name), source.as_str()));
        let asserts = self
            .expect
            .iter()
            .flat_map(|expect| expect.assert.iter().enumerate())
            .map(|(index, source)| (ExpressionField::Assert(index), source.as_str()));
        when.into_iter().chain(until).chain(outputs).chain(asserts)
    }
}

/// Where a CEL expression of a step sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpressionField<'a> {
    /// `when`.
    When,
    /// `poll.until`.
    PollUntil,
    /// One of `outputs`, by name.
    Output(&'a str),
    /// One of `expect.assert`, by position.
    Assert(usize),
}

impl std::fmt::Display for ExpressionField<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpressionField::When => f.write_str("when"),
            ExpressionField::PollUntil => f.write_str("poll.until"),
            ExpressionField::Output(name) => write!(f, "outputs.{name}"),
            ExpressionField::Assert(index) => write!(f, "expect.assert[{index}]"),
        }
    }
}

/// True when a step `outputs` value is an extraction path over the response body — JSONPath
/// (`$.a[0]`) or JSON Pointer (`/a/0`) — rather than a CEL expression.
///
/// ```
/// use wayline_core::workflow::is_extraction_path;
/// assert!(is_extraction_path("$.items[0].id"));
/// assert!(is_extraction_path("/items/0/id"));
/// assert!(!is_extraction_path("body.items[0].id"));
/// ```
pub fn is_extraction_path(source: &str) -> bool {
    source.starts_with('$') || source.starts_with('/')
}

/// `text` as an identifier (a step or workflow id, a template key): letters, digits and `_`
/// kept, anything else `_`; `fallback` when `text` is empty.
///
/// ```
/// use wayline_core::workflow::identifier;
/// assert_eq!(identifier("create a cluster", "step"), "create_a_cluster");
/// assert_eq!(identifier("X-Request-Id", "value"), "X_Request_Id");
/// assert_eq!(identifier("", "step"), "step");
/// ```
pub fn identifier(text: &str, fallback: &str) -> String {
    if text.is_empty() {
        return fallback.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether a failing step fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A failure fails the run.
    #[default]
    Critical,
    /// A failure skips dependents but does not fail the run.
    NonCritical,
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// Calls a tool.
    #[default]
    Action,
    /// Computes outputs from earlier steps with CEL; no I/O.
    Transform,
    /// Asks a model to choose a branch.
    Decision,
    /// Runs code in a sandbox.
    Code,
}

impl StepKind {
    /// The kind as workflows write it (`action`, `transform`, `decision`, `code`).
    ///
    /// ```
    /// use wayline_core::StepKind;
    /// assert_eq!(StepKind::Decision.as_str(), "decision");
    /// assert_eq!(serde_json::to_value(StepKind::Code).unwrap(), "code");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Action => "action",
            StepKind::Transform => "transform",
            StepKind::Decision => "decision",
            StepKind::Code => "code",
        }
    }
}

/// Polling: repeat the call until `until` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Poll {
    /// CEL condition over the response (`status`, `headers`, `body`) and the run.
    pub until: String,
    /// Calls in all before giving up.
    #[serde(default = "default_poll_attempts")]
    pub max_attempts: u32,
    /// Pause between calls, in milliseconds.
    #[serde(default = "default_poll_interval_ms")]
    pub interval_ms: u64,
}

impl Poll {
    /// Poll until `until` holds: at most `max_attempts` calls, `interval_ms` apart.
    pub fn new(until: impl Into<String>, max_attempts: u32, interval_ms: u64) -> Self {
        Poll {
            until: until.into(),
            max_attempts,
            interval_ms,
        }
    }
}

fn default_poll_attempts() -> u32 {
    20
}

fn default_poll_interval_ms() -> u64 {
    1_000
}

/// A check on a step's inputs or output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StepValidation {
    /// Dot path into the inputs or the output.
    pub field: String,
    /// `not_null`, `not_empty`, `min_length`, `regex` or `type`.
    pub check: String,
    /// `output` (default) or `input`.
    #[serde(default = "default_target")]
    pub target: String,
    /// Parameter of the check (a length, a regex, a type name). Numbers are read as text.
    #[serde(default, deserialize_with = "text_or_scalar")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<TextOrScalar>"))]
    pub value: Option<String>,
    /// Replaces the default failure message when non-empty.
    #[serde(default)]
    pub message: String,
    /// False turns a failure into a warning.
    #[serde(default = "default_critical")]
    pub critical: bool,
}

fn default_target() -> String {
    "output".to_owned()
}

fn default_critical() -> bool {
    true
}

/// What `value` may be written as (its schema).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[schemars(untagged)]
#[expect(
    dead_code,
    reason = "a shape for the schema only; values are read by `text_or_scalar`"
)]
enum TextOrScalar {
    Text(String),
    Number(f64),
    Flag(bool),
}

/// Accepts `min_length: 3` as well as `"3"`: the original rejected numbers, which only hurt.
fn text_or_scalar<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(scalar @ (Value::Number(_) | Value::Bool(_))) => Some(scalar.to_string()),
        Some(_) => {
            return Err(serde::de::Error::custom(
                "invalid type: expected a string or a number for `value`",
            ));
        }
    })
}

/// An explicit dependency: `to_step_id` runs after `from_step_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// The step that runs first.
    pub from_step_id: String,
    /// The step that depends on it.
    pub to_step_id: String,
}

impl Edge {
    /// An edge `from → to`.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Edge {
            from_step_id: from.into(),
            to_step_id: to.into(),
        }
    }
}

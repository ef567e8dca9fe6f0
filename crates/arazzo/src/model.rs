//! The Arazzo object model, 1.0.1 and 1.1 (1.1 is a superset: AsyncAPI steps, step
//! `dependsOn`, selector objects, `querystring` and `channel` parameters, `$self`). Field names
//! are the specification's; `x-` extensions are kept on every object that allows them.
//!
//! These types are what a document is once the loader's rules accept it; they deserialize any
//! shape serde can read, so build them through [`crate::load`], which checks first.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `x-` fields of an object, in document order.
pub type Extensions = IndexMap<String, Value>;

/// An Arazzo description: the document's root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ArazzoDocument {
    /// The specification version (`1.0.1`, `1.1.0`).
    pub arazzo: String,
    /// The document's own URI (1.1), against which relative references resolve.
    #[serde(rename = "$self", default, skip_serializing_if = "Option::is_none")]
    pub self_uri: Option<String>,
    /// Metadata.
    pub info: Info,
    /// The descriptions (OpenAPI, Arazzo, AsyncAPI) the workflows use.
    pub source_descriptions: Vec<SourceDescription>,
    /// The workflows.
    pub workflows: Vec<Workflow>,
    /// Reusable inputs, parameters and actions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// Metadata about the document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Info {
    /// A title for people.
    pub title: String,
    /// A short summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// A description (CommonMark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The document's own version.
    pub version: String,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A description the workflows call into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SourceDescription {
    /// Its name, as `$sourceDescriptions.NAME` refers to it.
    pub name: String,
    /// Where it is (a URL or a path relative to the document).
    pub url: String,
    /// What it is (OpenAPI when omitted).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<SourceKind>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// The kinds of source description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SourceKind {
    /// Another Arazzo document.
    Arazzo,
    /// An OpenAPI description.
    Openapi,
    /// An AsyncAPI description (1.1).
    Asyncapi,
}

/// A workflow: steps toward one objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Workflow {
    /// Its id, unique in the document.
    pub workflow_id: String,
    /// A summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// A description (CommonMark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its inputs, as a JSON Schema (2020-12) or a `$ref` to `#/components/inputs/NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Value>,
    /// Workflows that must complete before this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Success actions for every step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub success_actions: Vec<Reusable<SuccessAction>>,
    /// Failure actions for every step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_actions: Vec<Reusable<FailureAction>>,
    /// Its outputs: name → runtime expression (or selector, 1.1).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub outputs: IndexMap<String, Selectable>,
    /// Parameters for every step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Reusable<Parameter>>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A step: a call to an operation (OpenAPI or AsyncAPI) or to a workflow. Exactly one target
/// is set ([`Step::target`]); the loader refuses a step with none or more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Step {
    /// Its id, unique in the workflow.
    pub step_id: String,
    /// A description (CommonMark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An operation by id (`getPet`, or `$sourceDescriptions.NAME.getPet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// An operation by source and JSON Pointer
    /// (`{$sourceDescriptions.petstore.url}#/paths/~1pet/get`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_path: Option<String>,
    /// A workflow of this document, or `$sourceDescriptions.NAME.WORKFLOW` of another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// An AsyncAPI channel (1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_path: Option<String>,
    /// Whether an AsyncAPI step sends or receives (1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<AsyncAction>,
    /// What correlates a received message with its request (1.1, receive steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<Value>,
    /// Milliseconds before the step times out (1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Steps that must complete before this one (1.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// The parameters passed to the operation or workflow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Reusable<Parameter>>,
    /// The request body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_body: Option<RequestBody>,
    /// Assertions that must all hold for the step to succeed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub success_criteria: Vec<Criterion>,
    /// What to do on success (default: the next step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_success: Vec<Reusable<SuccessAction>>,
    /// What to do on failure (default: end the workflow, failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_failure: Vec<Reusable<FailureAction>>,
    /// Its outputs: name → runtime expression (or selector, 1.1).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub outputs: IndexMap<String, Selectable>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// What a step calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepTarget<'a> {
    /// An OpenAPI (or, with an action, AsyncAPI) operation by id.
    OperationId(&'a str),
    /// An OpenAPI operation by source and pointer.
    OperationPath(&'a str),
    /// An AsyncAPI channel.
    ChannelPath(&'a str),
    /// A workflow.
    Workflow(&'a str),
}

impl Step {
    /// What the step calls (`None` only for a step the loader would refuse).
    pub fn target(&self) -> Option<StepTarget<'_>> {
        if let Some(id) = &self.workflow_id {
            return Some(StepTarget::Workflow(id));
        }
        if let Some(path) = &self.channel_path {
            return Some(StepTarget::ChannelPath(path));
        }
        if let Some(path) = &self.operation_path {
            return Some(StepTarget::OperationPath(path));
        }
        self.operation_id.as_deref().map(StepTarget::OperationId)
    }

    /// Whether this is an AsyncAPI step (it has an `action`).
    pub fn is_async(&self) -> bool {
        self.action.is_some()
    }
}

/// An AsyncAPI step's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum AsyncAction {
    /// Sends a message to the channel.
    Send,
    /// Receives a message from the channel.
    Receive,
}

/// An object given inline, or a Reusable Object pointing at one in `components`
/// (`reference: $components.parameters.NAME`, with `value` overriding a parameter's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Reusable<T> {
    /// A reference to a component.
    Reference(Reference),
    /// The object itself.
    Inline(T),
}

/// A Reusable Object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Reference {
    /// A runtime expression naming a component (`$components.parameters.page`).
    pub reference: String,
    /// For a parameter: the value that replaces the component's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// A parameter passed to an operation (with its location) or a workflow (an input).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Parameter {
    /// Its name (case-sensitive; headers compare without case).
    pub name: String,
    /// Where it goes; required for operation steps, absent for workflow inputs.
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    pub location: Option<ParameterLocation>,
    /// Its value: a constant, a runtime expression, a string with embedded `{$…}`
    /// expressions, or (1.1) a selector.
    pub value: Selectable,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ParameterLocation {
    /// A path template variable.
    Path,
    /// One query parameter.
    Query,
    /// The whole query string (1.1).
    Querystring,
    /// A header.
    Header,
    /// A cookie.
    Cookie,
    /// An AsyncAPI channel parameter (1.1).
    Channel,
}

/// A value that is either given (a constant, or a string that may be a runtime expression)
/// or selected from structured data by a Selector Object (1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Selectable {
    /// A selector.
    Selector(Selector),
    /// A value as written.
    Value(Value),
}

/// Selects a value from structured data (1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Selector {
    /// A runtime expression giving the data (`$response.body`).
    pub context: String,
    /// The expression applied to it (`$.items[0].id`, `/items/0/id`).
    pub selector: String,
    /// What kind of expression `selector` is.
    #[serde(rename = "type")]
    pub kind: SelectorType,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A selector's expression kind, by name or with its version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SelectorType {
    /// By name, at its default version.
    Named(ExpressionKind),
    /// With a version.
    Versioned(ExpressionType),
}

/// Expression languages for selecting values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ExpressionKind {
    /// JSON Pointer (RFC 6901).
    Jsonpointer,
    /// JSONPath.
    Jsonpath,
    /// XPath.
    Xpath,
}

/// An expression language with its version (`{type: jsonpath, version: rfc9535}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExpressionType {
    /// The language.
    #[serde(rename = "type")]
    pub kind: ExpressionKind,
    /// Its version (`rfc9535`, `draft-goessner-dispatch-jsonpath-00`, `xpath-30`, `rfc6901`).
    pub version: String,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A request body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RequestBody {
    /// Its media type (`application/json` when omitted and the payload is structured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The payload: any value, runtime expressions included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Values set into the payload before it is sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<PayloadReplacement>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A value set at a place in the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PayloadReplacement {
    /// Where: a JSON Pointer (default for JSON), JSONPath or XPath.
    pub target: String,
    /// What kind of expression `target` is (1.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_selector_type: Option<SelectorType>,
    /// The value set there.
    pub value: Selectable,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// An assertion: a condition, of a type, on a context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Criterion {
    /// What the condition applies to (a runtime expression); required with `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The condition.
    pub condition: String,
    /// Its kind (simple when omitted).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<CriterionType>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// A criterion's kind, by name or as an expression type with a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CriterionType {
    /// By name.
    Named(CriterionKind),
    /// A JSONPath or XPath with its version.
    Versioned(ExpressionType),
}

/// Criterion kinds by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CriterionKind {
    /// The simple condition language (`$statusCode == 200 && $response.body#/ok`).
    Simple,
    /// A regular expression matched against the context.
    Regex,
    /// A JSONPath filter applied to the context.
    Jsonpath,
    /// An XPath applied to the context.
    Xpath,
}

/// What to do when a step succeeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SuccessAction {
    /// Its name.
    pub name: String,
    /// `end` or `goto`.
    #[serde(rename = "type")]
    pub kind: SuccessActionKind,
    /// The workflow `goto` goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The step `goto` goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// Parameters for the workflow `goto` goes to (1.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Reusable<Parameter>>,
    /// When the action applies (all must hold; always when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// Success action kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SuccessActionKind {
    /// End the workflow, successfully.
    End,
    /// Go to a step or workflow.
    Goto,
}

/// What to do when a step fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FailureAction {
    /// Its name.
    pub name: String,
    /// `end`, `goto` or `retry`.
    #[serde(rename = "type")]
    pub kind: FailureActionKind,
    /// The workflow `goto` goes to (or `retry` runs first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// The step `goto` goes to (or `retry` runs first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// Parameters for the workflow named (1.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Reusable<Parameter>>,
    /// Seconds to wait before a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
    /// How many retries at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<u64>,
    /// When the action applies (all must hold; always when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

/// Failure action kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FailureActionKind {
    /// End the workflow, failed.
    End,
    /// Go to a step or workflow.
    Goto,
    /// Try the step again.
    Retry,
}

/// Reusable objects, referred to as `$components.KIND.NAME`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Components {
    /// Input schemas (`$ref: '#/components/inputs/NAME'`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub inputs: IndexMap<String, Value>,
    /// Parameters.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: IndexMap<String, Parameter>,
    /// Success actions.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub success_actions: IndexMap<String, SuccessAction>,
    /// Failure actions.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub failure_actions: IndexMap<String, FailureAction>,
    /// `x-` fields.
    #[serde(flatten, default)]
    pub extensions: Extensions,
}

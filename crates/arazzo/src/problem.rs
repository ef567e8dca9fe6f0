//! A problem found in an Arazzo document: the rule it breaks, where (a JSON Pointer, and the
//! line and column once located), and what to do about it.

use std::fmt;

use serde::Serialize;

/// The rules of the Arazzo specification (and of its JSON Schema) a document can break; each
/// problem names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// The document (or an object in it) is not a mapping.
    NotAnObject,
    /// `arazzo` is not a version this library reads (1.0.x or 1.1.x).
    UnsupportedVersion,
    /// A required field is missing.
    RequiredField,
    /// A field the object does not have (and not an `x-` extension).
    UnknownField,
    /// A value of the wrong JSON type.
    WrongType,
    /// A value outside the allowed set (`type: jsonpath`, `in: query`, ...).
    NotAllowedValue,
    /// A name that does not match its pattern (source names, output and component keys).
    InvalidName,
    /// A list that must have at least one item is empty.
    EmptyList,
    /// A list that must not repeat an item repeats one.
    DuplicateItem,
    /// A step names no target, or more than one (`operationId`, `operationPath`,
    /// `channelPath`, `workflowId`), or fields of another kind of step.
    StepTarget,
    /// An AsyncAPI step without `action`, or `correlationId` on a step that does not receive.
    AsyncAction,
    /// A parameter of an operation step without `in`.
    ParameterLocation,
    /// An expression type whose version is not one of its type's.
    ExpressionTypeVersion,
    /// `$self` with a fragment.
    SelfFragment,
    /// A `dependsOn` entry that is not a step id or a `$workflows`/`$sourceDescriptions`
    /// step reference.
    DependsOnReference,
    /// A `goto` without exactly one of `workflowId` and `stepId`, or action `parameters`
    /// without `workflowId`.
    ActionTarget,
    /// A criterion with `type` but no `context`.
    CriterionContext,
    /// A negative number where the specification wants none (`retryAfter`, `retryLimit`).
    NegativeNumber,
    /// A field or value of Arazzo 1.1 in a document that says it is 1.0.
    NewerThanDocument,
    /// Two workflows, two steps of a workflow, or two source descriptions share an id.
    DuplicateId,
    /// A runtime expression (or a condition) that does not parse.
    InvalidExpression,
    /// A step, workflow, source description or component named but not there.
    UnknownTarget,
    /// An expression that reads what is not declared (an output a step does not have, an
    /// input the workflow's schema does not list).
    UnknownReference,
    /// An `operationId` that several source descriptions could hold, written without
    /// `$sourceDescriptions.NAME.`.
    AmbiguousOperation,
    /// Steps (or workflows) that wait for each other.
    Cycle,
    /// A source description wayline may not read: outside the document's directory (and the
    /// directories allowed), or not a regular file within the document size limit.
    RefusedSource,
    /// A workflow's inputs schema that is not a JSON Schema the validator can use (a `$ref` to
    /// nothing, a keyword with a wrong value).
    InvalidSchema,
    /// What the document may say but wayline does not run (AsyncAPI steps, XPath criteria).
    Unsupported,
}

impl Rule {
    /// The rule's name, as reports show it (`step_target`).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::NotAnObject => "not_an_object",
            Rule::UnsupportedVersion => "unsupported_version",
            Rule::RequiredField => "required_field",
            Rule::UnknownField => "unknown_field",
            Rule::WrongType => "wrong_type",
            Rule::NotAllowedValue => "not_allowed_value",
            Rule::InvalidName => "invalid_name",
            Rule::EmptyList => "empty_list",
            Rule::DuplicateItem => "duplicate_item",
            Rule::StepTarget => "step_target",
            Rule::AsyncAction => "async_action",
            Rule::ParameterLocation => "parameter_location",
            Rule::ExpressionTypeVersion => "expression_type_version",
            Rule::SelfFragment => "self_fragment",
            Rule::DependsOnReference => "depends_on_reference",
            Rule::ActionTarget => "action_target",
            Rule::CriterionContext => "criterion_context",
            Rule::NegativeNumber => "negative_number",
            Rule::NewerThanDocument => "newer_than_document",
            Rule::DuplicateId => "duplicate_id",
            Rule::InvalidExpression => "invalid_expression",
            Rule::UnknownTarget => "unknown_target",
            Rule::UnknownReference => "unknown_reference",
            Rule::AmbiguousOperation => "ambiguous_operation",
            Rule::Cycle => "cycle",
            Rule::RefusedSource => "refused_source",
            Rule::InvalidSchema => "invalid_schema",
            Rule::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much a problem matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// The document cannot be run as written.
    Error,
    /// It can, but probably not as meant (an input its schema does not list).
    Warning,
}

/// One problem in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Problem {
    /// The rule broken.
    pub rule: Rule,
    /// Whether it stops the document from running.
    pub severity: Severity,
    /// Where, as a JSON Pointer into the document (`/workflows/0/steps/2`).
    pub pointer: String,
    /// 1-based line, once located in the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, once located in the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong and how to mend it.
    pub message: String,
    /// The nearest known name, for an unknown one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl Problem {
    /// A problem at `pointer`, not located yet.
    pub fn new(rule: Rule, pointer: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            rule,
            severity: Severity::Error,
            pointer: pointer.into(),
            line: None,
            column: None,
            message: message.into(),
            suggestion: None,
        }
    }

    /// Sets the line and column from `positions` (the pointer's, or its nearest ancestor's).
    pub fn locate(&mut self, positions: &crate::Positions) {
        if let Some((line, column)) = positions.find(&self.pointer) {
            self.line = Some(line);
            self.column = Some(column);
        }
    }

    /// As a warning.
    #[must_use]
    pub fn warning(mut self) -> Problem {
        self.severity = Severity::Warning;
        self
    }

    /// Whether it is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// With the nearest known name.
    #[must_use]
    pub fn suggest(mut self, suggestion: Option<&str>) -> Problem {
        self.suggestion = suggestion.map(str::to_owned);
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "{line}:{column}: ")?,
            _ if !self.pointer.is_empty() => write!(f, "{}: ", self.pointer)?,
            _ => {}
        }
        if self.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean `{suggestion}`?)")?;
        }
        write!(f, " [{}]", self.rule)
    }
}

//! What validation finds: [`Problem`]s of a [`ProblemKind`], each a sentence saying what is
//! wrong and how to fix it, with the steps involved.

use std::fmt;

use serde::Serialize;

/// The kinds of problem a workflow can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProblemKind {
    /// Two steps share an id.
    DuplicateStepId,
    /// A step names a tool the catalog does not have (or names none).
    UnknownTool,
    /// An explicit edge names a step that does not exist.
    UnknownStep,
    /// A mapping or expression names no step of the workflow, or no declared input.
    UnknownReference,
    /// A reference is written with a reference prefix but is not well-formed.
    InvalidReference,
    /// A step refers to its own output, or an edge joins a step to itself.
    SelfReference,
    /// Steps depend on each other in a circle.
    Cycle,
    /// A required tool input is not mapped.
    MissingRequiredInput,
    /// A reference into a step whose tool extracts a closed set of fields names another field.
    UnknownOutputField,
    /// A CEL condition does not parse.
    InvalidExpression,
    /// A decision step without a question or with too few choices, or decision fields on a
    /// step that is no decision.
    InvalidDecision,
    /// A step id, or the tool id a step names, longer than [`MAX_ID_CHARS`].
    InvalidId,
    /// A warning: a mapping value is a literal that reads like a reference written wrong (a
    /// near miss of a step id or of `$input`/`$steps`, a tool id where a step belongs).
    SuspectLiteral,
}

/// The longest step or tool id accepted, in characters: ids are names a person reads in
/// views, records and file names, and a longer one is a mistake (or an attack on them).
pub const MAX_ID_CHARS: usize = 256;

impl ProblemKind {
    /// The stable snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::DuplicateStepId => "duplicate_step_id",
            ProblemKind::UnknownTool => "unknown_tool",
            ProblemKind::UnknownStep => "unknown_step",
            ProblemKind::UnknownReference => "unknown_reference",
            ProblemKind::InvalidReference => "invalid_reference",
            ProblemKind::SelfReference => "self_reference",
            ProblemKind::Cycle => "cycle",
            ProblemKind::MissingRequiredInput => "missing_required_input",
            ProblemKind::UnknownOutputField => "unknown_output_field",
            ProblemKind::InvalidExpression => "invalid_expression",
            ProblemKind::InvalidDecision => "invalid_decision",
            ProblemKind::InvalidId => "invalid_id",
            ProblemKind::SuspectLiteral => "suspect_literal",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem: its kind, a sentence saying what and how to fix it, and the steps involved
/// (for a cycle, in cycle order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// What is wrong, for people.
    pub message: String,
    /// The step ids involved.
    pub steps: Vec<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

//! [`ValidationReport`]: what validation found out about a workflow, and how the CLI shows it.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::graph::StepGraph;
use crate::problem::{Problem, ProblemKind};

/// Everything validation found out about a workflow: its problems, its complete edge set, and
/// the order and levels its steps can run in.
///
/// Serializes as the CLI's JSON document:
/// `{"valid", "errors": [{"kind", "message", "steps"}], "edges": [{"from", "to", "inferred"}],
/// "order", "levels"}`.
#[derive(Debug, Clone)]
pub struct ValidationReport {
    /// Every problem found, in a stable order.
    pub errors: Vec<Problem>,
    /// What is valid but most likely a mistake (a literal that reads like a misspelt
    /// reference), in a stable order; it does not make the workflow invalid.
    pub warnings: Vec<Problem>,
    pub(crate) graph: StepGraph,
    /// Topological order by step position, computed once during validation.
    pub(crate) order: Vec<usize>,
}

impl ValidationReport {
    /// True when there are no problems.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// The dependency graph (explicit and inferred edges).
    pub fn graph(&self) -> &StepGraph {
        &self.graph
    }

    /// Each problem as a sentence (`kind: message`), in the report's order: what a person, a
    /// log line or a model asked to repair the workflow reads.
    pub fn problems(&self) -> Vec<String> {
        self.errors.iter().map(ToString::to_string).collect()
    }

    /// The problems of one kind.
    pub fn errors_of(&self, kind: ProblemKind) -> impl Iterator<Item = &Problem> {
        self.errors
            .iter()
            .filter(move |problem| problem.kind == kind)
    }

    /// Step ids in a deterministic topological order (ties by declaration order).
    pub fn order(&self) -> Vec<&str> {
        self.order
            .iter()
            .map(|&index| self.graph.id(index))
            .collect()
    }

    /// The topological order as step positions (indexes into `workflow.steps`).
    pub fn order_indexes(&self) -> &[usize] {
        &self.order
    }

    /// Step ids grouped by parallel level.
    pub fn levels(&self) -> Vec<Vec<&str>> {
        self.graph
            .levels_for(&self.order)
            .into_iter()
            .map(|level| {
                level
                    .into_iter()
                    .map(|index| self.graph.id(index))
                    .collect()
            })
            .collect()
    }

    /// Edges as `(from, to, inferred)` step ids.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str, bool)> {
        self.graph.edges().iter().map(|edge| {
            (
                self.graph.id(edge.from),
                self.graph.id(edge.to),
                edge.inferred,
            )
        })
    }
}

impl Serialize for ValidationReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct EdgeDoc<'a> {
            from: &'a str,
            to: &'a str,
            inferred: bool,
        }
        let edges: Vec<EdgeDoc<'_>> = self
            .edges()
            .map(|(from, to, inferred)| EdgeDoc { from, to, inferred })
            .collect();
        let mut doc = serializer.serialize_struct("ValidationReport", 6)?;
        doc.serialize_field("valid", &self.is_valid())?;
        doc.serialize_field("errors", &self.errors)?;
        doc.serialize_field("warnings", &self.warnings)?;
        doc.serialize_field("edges", &edges)?;
        doc.serialize_field("order", &self.order())?;
        doc.serialize_field("levels", &self.levels())?;
        doc.end()
    }
}

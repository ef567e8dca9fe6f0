//! The validator: edge inference and every problem of a workflow, not just the first, into a
//! [`ValidationReport`].

use std::cell::Cell;
use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};

use wayline_core::document::nearest;
use wayline_core::reference::segments;
use wayline_core::workflow::ExpressionField;
use wayline_core::{Expression, Reference, StepKind, ToolCatalog, ToolDefinition, Workflow};

use crate::graph::{StepEdge, StepGraph};
use crate::problem::{MAX_ID_CHARS, Problem, ProblemKind};
use crate::report::ValidationReport;
use crate::suspect::MAX_NEAR_MISS_SEARCHES;

/// Validates a workflow against a tool catalog: infers edges, then reports every problem.
///
/// ```
/// use wayline_core::{MemoryCatalog, Step, ToolDefinition, Workflow};
/// use wayline_graph::{validate, ProblemKind};
///
/// let catalog = MemoryCatalog::from_tools([ToolDefinition::new("t", "https://example.com")]);
/// let mut workflow = Workflow::new("w", "W");
/// workflow.steps.push(Step::new("a", "t"));
/// workflow.steps.push(Step::new("b", "t").map("x", "a.items.0.id"));
/// workflow.steps.push(Step::new("c", "nope").map("y", "3.5"));
///
/// let report = validate(&workflow, &catalog);
/// assert_eq!(report.edges().collect::<Vec<_>>(), [("a", "b", true)]);
/// assert_eq!(report.order(), ["a", "b", "c"]);
/// assert_eq!(report.errors.len(), 1);
/// assert_eq!(report.errors[0].kind, ProblemKind::UnknownTool);
/// ```
pub fn validate(workflow: &Workflow, catalog: &dyn ToolCatalog) -> ValidationReport {
    Validator::new(workflow, catalog).run()
}

struct Validator<'a> {
    workflow: &'a Workflow,
    catalog: &'a dyn ToolCatalog,
    /// Step id → position of its first declaration.
    index: FxHashMap<&'a str, usize>,
    /// Whether the step at each position is the first with its id.
    first: Vec<bool>,
    /// Non-numeric stems of step ids (`step_` for `step_12`), to spot references to missing steps.
    stems: FxHashSet<&'a str>,
    graph: StepGraph,
    seen_edges: FxHashSet<(usize, usize)>,
    errors: Vec<Problem>,
    /// Near-miss searches left for "did you mean" hints: each scans every step or tool id, so
    /// a workflow of many mistakes would otherwise cost the square of its size.
    searches_left: Cell<usize>,
}

impl<'a> Validator<'a> {
    fn new(workflow: &'a Workflow, catalog: &'a dyn ToolCatalog) -> Self {
        let ids: Vec<String> = workflow.steps.iter().map(|step| step.id.clone()).collect();
        Validator {
            workflow,
            catalog,
            index: FxHashMap::with_capacity_and_hasher(workflow.steps.len(), Default::default()),
            first: vec![false; workflow.steps.len()],
            stems: FxHashSet::default(),
            graph: StepGraph::new(ids),
            seen_edges: FxHashSet::with_capacity_and_hasher(
                workflow.steps.len() * 3,
                Default::default(),
            ),
            errors: Vec::new(),
            searches_left: Cell::new(MAX_NEAR_MISS_SEARCHES),
        }
    }

    fn report(&mut self, kind: ProblemKind, message: String, steps: Vec<String>) {
        self.errors.push(Problem {
            kind,
            message,
            steps,
        });
    }

    fn run(mut self) -> ValidationReport {
        self.index_steps();
        self.explicit_edges();
        for position in 0..self.workflow.steps.len() {
            self.check_step(position);
        }
        let order = self.graph.order();
        // Kahn's order leaves out exactly the steps on or after a cycle: look for cycles only
        // when it does.
        if order.len() < self.graph.len() {
            self.check_cycles();
        }
        ValidationReport {
            errors: self.errors,
            warnings: crate::suspect::suspect_literals(self.workflow, self.catalog),
            graph: self.graph,
            order,
        }
    }

    fn index_steps(&mut self) {
        let mut duplicates: Vec<(&str, Vec<usize>)> = Vec::new();
        for (position, step) in self.workflow.steps.iter().enumerate() {
            for (what, id) in [("step id", &step.id), ("tool id", &step.tool_id)] {
                let length = id.chars().count();
                if length > MAX_ID_CHARS {
                    let shown: String = id.chars().take(40).collect();
                    self.report(
                        ProblemKind::InvalidId,
                        format!(
                            "the {what} `{shown}…` of step #{} is {length} characters long; \
                             ids have at most {MAX_ID_CHARS}",
                            position + 1
                        ),
                        vec![step.id.clone()],
                    );
                }
            }
            match self.index.get(step.id.as_str()) {
                None => {
                    self.index.insert(&step.id, position);
                    self.first[position] = true;
                    let stem = numeric_stem(&step.id);
                    if stem.len() < step.id.len() && !stem.is_empty() {
                        self.stems.insert(stem);
                    }
                }
                Some(&first) => match duplicates.iter_mut().find(|(id, _)| *id == step.id) {
                    Some((_, positions)) => positions.push(position + 1),
                    None => duplicates.push((&step.id, vec![first + 1, position + 1])),
                },
            }
        }
        for (id, positions) in duplicates {
            let listed: Vec<String> = positions.iter().map(|p| format!("#{p}")).collect();
            self.report(
                ProblemKind::DuplicateStepId,
                format!(
                    "step id `{id}` is used by steps {}; give each step its own id",
                    listed.join(", ")
                ),
                vec![id.to_owned()],
            );
        }
    }

    fn explicit_edges(&mut self) {
        for edge in &self.workflow.edges {
            let from = self.index.get(edge.from_step_id.as_str()).copied();
            let to = self.index.get(edge.to_step_id.as_str()).copied();
            for (end, id, found) in [
                ("from", &edge.from_step_id, from),
                ("to", &edge.to_step_id, to),
            ] {
                if found.is_none() {
                    let message = format!(
                        "edge {} → {} names unknown step `{id}` as its `{end}_step_id`{}",
                        edge.from_step_id,
                        edge.to_step_id,
                        self.did_you_mean_step(id)
                    );
                    self.report(ProblemKind::UnknownStep, message, vec![id.clone()]);
                }
            }
            if let (Some(from), Some(to)) = (from, to) {
                if from == to {
                    self.report(
                        ProblemKind::SelfReference,
                        format!(
                            "edge {0} → {0} joins a step to itself; remove it",
                            edge.from_step_id
                        ),
                        vec![edge.from_step_id.clone()],
                    );
                }
                self.graph.add_edge(
                    StepEdge {
                        from,
                        to,
                        inferred: false,
                    },
                    &mut self.seen_edges,
                );
            }
        }
    }

    fn check_step(&mut self, position: usize) {
        let workflow = self.workflow;
        let step = &workflow.steps[position];
        if !self.first[position] {
            return; // a duplicate: reported once, and its references would only repeat problems
        }
        self.check_decision(position);
        let tool = self.check_tool(position);
        if let Some(tool) = tool {
            let missing: Vec<&str> = tool
                .required_inputs()
                .into_iter()
                .filter(|name| !step.input_mapping.contains_key(*name))
                .collect();
            if !missing.is_empty() {
                let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
                self.report(
                    ProblemKind::MissingRequiredInput,
                    format!(
                        "step `{}` does not map {} required by tool `{}`; add {} to its input_mapping",
                        step.id,
                        names.join(", "),
                        tool.id,
                        if missing.len() == 1 { "it" } else { "them" },
                    ),
                    vec![step.id.clone()],
                );
            }
        }
        for (input, value) in &step.input_mapping {
            // Remember the position the parser's lookup found, so each reference costs one.
            let found = Cell::new(None);
            let reference = Reference::parse(value, |id| {
                let hit = self.index.get(id).copied();
                found.set(hit);
                hit.is_some()
            });
            let place = Place::Input {
                step: &step.id,
                input,
            };
            self.check_reference(position, place, reference, value.as_str(), found.get());
        }
        for (field, source) in step.expressions() {
            self.check_choice_comparisons(position, field, source);
            match Expression::compile(source) {
                Ok(expression) => {
                    let place = Place::Condition {
                        step: &step.id,
                        field,
                    };
                    for name in expression.step_refs() {
                        self.check_step_reference(position, place, name, "", None);
                    }
                    for name in expression.input_refs() {
                        self.check_input(position, place, name);
                    }
                }
                Err(error) => self.report(
                    ProblemKind::InvalidExpression,
                    format!("`{field}` of step `{}`: {error}", step.id),
                    vec![step.id.clone()],
                ),
            }
        }
    }

    /// A decision step asks a question with at least two distinct choices, calls no tool and
    /// computes no `outputs` (its output is its choice and reason); other steps have no
    /// decision fields.
    fn check_decision(&mut self, position: usize) {
        let step = &self.workflow.steps[position];
        let mut problems = Vec::new();
        if step.kind == StepKind::Decision {
            if step
                .decision_prompt
                .as_deref()
                .is_none_or(|p| p.trim().is_empty())
            {
                problems.push(
                    "has no `decision_prompt`; add the question the model answers".to_owned(),
                );
            }
            let mut seen: Vec<&str> = Vec::new();
            for choice in &step.choices {
                if choice.trim().is_empty() {
                    problems.push("has an empty choice".to_owned());
                    continue;
                }
                if choice.trim() != choice {
                    problems.push(format!(
                        "has the choice `{choice}` with spaces around it; write `{}`",
                        choice.trim()
                    ));
                }
                if seen.contains(&choice.as_str()) {
                    problems.push(format!("lists the choice `{choice}` twice"));
                } else {
                    seen.push(choice);
                }
            }
            if seen.len() < 2 {
                problems.push("needs at least two `choices` to choose between".to_owned());
            }
            if !step.tool_id.is_empty() {
                problems.push(format!(
                    "calls tool `{}`, but a decision step calls none; remove `tool_id`",
                    step.tool_id
                ));
            }
            if !step.outputs.is_empty() {
                problems.push("has `outputs`, but a decision step's output is its `choice` and `reason`; remove them".to_owned());
            }
            if step.poll.is_some() || step.retry.is_some() {
                problems.push("has `poll` or `retry`, which a decision step does not use (it asks once); remove them".to_owned());
            }
        } else if step.decision_prompt.is_some() || !step.choices.is_empty() {
            problems.push(format!(
                "has `decision_prompt` or `choices`, but its kind is `{}`; set `kind: decision` or remove them",
                step.kind.as_str()
            ));
        }
        for problem in problems {
            self.report(
                ProblemKind::InvalidDecision,
                format!("step `{}` {problem}", step.id),
                vec![step.id.clone()],
            );
        }
    }

    /// In a condition, `steps.D.FIELD` for a decision step `D` names `choice` or `reason`, and
    /// `steps.D.choice == 'x'` (or `!=`) compares with one of `D`'s choices: a branch on a
    /// choice that cannot be answered would never run.
    fn check_choice_comparisons(
        &mut self,
        position: usize,
        field: ExpressionField<'_>,
        source: &str,
    ) {
        let workflow = self.workflow;
        let step = &workflow.steps[position];
        let mut problems = Vec::new();
        let mut rest = source;
        while let Some(found) = rest.find("steps.") {
            let preceded_by_word = rest[..found]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
            rest = &rest[found + "steps.".len()..];
            if preceded_by_word {
                continue;
            }
            let (id, after) = split_word(rest);
            let Some(&from) = self.index.get(id) else {
                continue;
            };
            let decision = &workflow.steps[from];
            if decision.kind != StepKind::Decision {
                continue;
            }
            let Some(after) = after.strip_prefix('.') else {
                continue;
            };
            let (name, after) = split_word(after);
            if !DECISION_FIELDS.contains(&name) {
                let hint = nearest(name, DECISION_FIELDS.iter().copied())
                    .map(|near| format!(" (did you mean `{near}`?)"))
                    .unwrap_or_default();
                problems.push((
                    ProblemKind::UnknownOutputField,
                    format!(
                        "`{field}` of step `{}` reads field `{name}` of decision step `{id}`, which only outputs `choice` and `reason`{hint}",
                        step.id
                    ),
                    decision.id.clone(),
                ));
                continue;
            }
            if name != "choice" {
                continue;
            }
            let after = after.trim_start();
            let Some(after) = after
                .strip_prefix("==")
                .or_else(|| after.strip_prefix("!="))
            else {
                continue;
            };
            let Some(literal) = quoted(after.trim_start()) else {
                continue;
            };
            if !decision.choices.iter().any(|choice| choice == literal) {
                problems.push((
                    ProblemKind::InvalidDecision,
                    format!(
                        "`{field}` of step `{}` compares the choice of `{id}` with `{literal}`, which is not one of its choices ({})",
                        step.id,
                        decision
                            .choices
                            .iter()
                            .map(|choice| format!("`{choice}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    decision.id.clone(),
                ));
            }
        }
        for (kind, message, decision) in problems {
            self.report(kind, message, vec![step.id.clone(), decision]);
        }
    }

    /// Looks up the step's tool, reporting a missing one. Transform and decision steps need none.
    fn check_tool(&mut self, position: usize) -> Option<&'a ToolDefinition> {
        let step = &self.workflow.steps[position];
        let needs_tool = matches!(step.kind, StepKind::Action | StepKind::Code);
        if step.tool_id.is_empty() {
            if needs_tool {
                self.report(
                    ProblemKind::UnknownTool,
                    format!("step `{}` names no tool; set its `tool_id`", step.id),
                    vec![step.id.clone()],
                );
            }
            return None;
        }
        let catalog: &'a dyn ToolCatalog = self.catalog;
        let tool = catalog.tool(&step.tool_id);
        if tool.is_none() {
            let hint = self
                .search()
                .and_then(|()| nearest(&step.tool_id, catalog.tool_ids()))
                .map(|id| format!(" (did you mean `{id}`?)"))
                .unwrap_or_default();
            self.report(
                ProblemKind::UnknownTool,
                format!(
                    "step `{}` uses tool `{}`, which is not in the catalog{hint}",
                    step.id, step.tool_id
                ),
                vec![step.id.clone()],
            );
        }
        tool
    }

    fn check_reference(
        &mut self,
        position: usize,
        place: Place<'_>,
        reference: Reference<'_>,
        text: Option<&str>,
        found: Option<usize>,
    ) {
        match reference {
            Reference::Input { name } => self.check_input(position, place, name),
            Reference::Step { step, path } => {
                self.check_step_reference(position, place, step, path, found)
            }
            Reference::Malformed { reason } => {
                let step = &self.workflow.steps[position];
                self.report(
                    ProblemKind::InvalidReference,
                    format!(
                        "{place}: `{}` is not a valid reference: {reason}",
                        text.unwrap_or_default()
                    ),
                    vec![step.id.clone()],
                );
            }
            Reference::Literal => {
                if let Some(text) = text {
                    self.check_literal(position, place, text);
                }
            }
        }
    }

    /// A dotted literal whose first segment is shaped like this workflow's step ids (`step_9`
    /// beside `step_1`…`step_6`) is almost surely a reference to a step that does not exist.
    fn check_literal(&mut self, position: usize, place: Place<'_>, text: &str) {
        let Some((first, _)) = text.split_once('.') else {
            return;
        };
        let stem = numeric_stem(first);
        if stem.len() == first.len() || stem.is_empty() || !self.stems.contains(stem) {
            return;
        }
        let step = &self.workflow.steps[position];
        let message = format!(
            "{place} refers to step `{first}` (in `{text}`), which is not a step of this workflow{}",
            self.did_you_mean_step(first)
        );
        self.report(
            ProblemKind::UnknownReference,
            message,
            vec![step.id.clone(), first.to_owned()],
        );
    }

    /// `found` is the position of `target` when the caller already looked it up.
    fn check_step_reference(
        &mut self,
        position: usize,
        place: Place<'_>,
        target: &str,
        path: &str,
        found: Option<usize>,
    ) {
        let workflow = self.workflow;
        let step = &workflow.steps[position];
        let Some(from) = found.or_else(|| self.index.get(target).copied()) else {
            let message = format!(
                "{place} refers to step `{target}`, which is not a step of this workflow{}",
                self.did_you_mean_step(target)
            );
            self.report(
                ProblemKind::UnknownReference,
                message,
                vec![step.id.clone(), target.to_owned()],
            );
            return;
        };
        if from == position {
            self.report(
                ProblemKind::SelfReference,
                format!("{place} refers to the step's own output; a step can only use earlier steps' outputs"),
                vec![step.id.clone()],
            );
            return;
        }
        self.graph.add_edge(
            StepEdge {
                from,
                to: position,
                inferred: true,
            },
            &mut self.seen_edges,
        );
        self.check_output_field(position, place, from, path);
    }

    fn check_output_field(&mut self, position: usize, place: Place<'_>, from: usize, path: &str) {
        let source = &self.workflow.steps[from];
        let Some(field) = segments(path).next() else {
            return;
        };
        // A step's own `outputs` replace whatever its tool returns.
        let (fields, owner) = if source.kind == StepKind::Decision {
            (
                DECISION_FIELDS.to_vec(),
                "a decision step only outputs".to_owned(),
            )
        } else if !source.outputs.is_empty() {
            let fields: Vec<&str> = source.outputs.keys().map(String::as_str).collect();
            (fields, "it only outputs".to_owned())
        } else {
            let Some(tool) = self.catalog.tool(&source.tool_id) else {
                return;
            };
            if !tool.has_closed_outputs() {
                return;
            }
            (
                tool.output_fields(),
                format!("its tool `{}` only extracts", tool.id),
            )
        };
        if fields.contains(&field) {
            return;
        }
        let hint = nearest(field, fields.iter().copied())
            .map(|name| format!(" (did you mean `{name}`?)"))
            .unwrap_or_default();
        let message = format!(
            "{place} reads field `{field}` of step `{}`, but {owner} {}{hint}",
            source.id,
            fields
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let steps = vec![self.workflow.steps[position].id.clone(), source.id.clone()];
        self.report(ProblemKind::UnknownOutputField, message, steps);
    }

    fn check_input(&mut self, position: usize, place: Place<'_>, name: &str) {
        let inputs = &self.workflow.inputs;
        if inputs.is_empty() || inputs.contains_key(name) {
            return;
        }
        let hint = nearest(name, inputs.keys().map(String::as_str))
            .map(|known| format!(" (did you mean `{known}`?)"))
            .unwrap_or_default();
        let step = &self.workflow.steps[position];
        self.report(
            ProblemKind::UnknownReference,
            format!("{place} reads input `{name}`, which the workflow does not declare in `inputs`{hint}"),
            vec![step.id.clone()],
        );
    }

    fn check_cycles(&mut self) {
        for cycle in self.graph.cycles() {
            let ids: Vec<String> = cycle
                .iter()
                .map(|&index| self.graph.id(index).to_owned())
                .collect();
            // A long cycle is shown by its ends: the steps are all in the problem's `steps`.
            const SHOWN: usize = 12;
            let mut path = if ids.len() > SHOWN {
                format!(
                    "{} → … ({} steps in all) → {}",
                    ids[..SHOWN / 2].join(" → "),
                    ids.len(),
                    ids[ids.len() - SHOWN / 2..].join(" → ")
                )
            } else {
                ids.join(" → ")
            };
            path.push_str(" → ");
            path.push_str(&ids[0]);
            self.report(
                ProblemKind::Cycle,
                format!("steps depend on each other in a cycle: {path}; remove one of these edges or references"),
                ids,
            );
        }
    }

    fn did_you_mean_step(&self, id: &str) -> String {
        self.search()
            .and_then(|()| nearest(id, self.workflow.steps.iter().map(|step| step.id.as_str())))
            .map(|known| format!(" (did you mean `{known}`?)"))
            .unwrap_or_default()
    }

    /// Takes one near-miss search, if any is left (a hint past the bound is left out).
    fn search(&self) -> Option<()> {
        self.searches_left
            .set(self.searches_left.get().checked_sub(1)?);
        Some(())
    }
}

/// Where in a step a reference was written; formatted only when a problem is reported.
#[derive(Clone, Copy)]
enum Place<'a> {
    Input {
        step: &'a str,
        input: &'a str,
    },
    Condition {
        step: &'a str,
        field: ExpressionField<'a>,
    },
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Input { step, input } => write!(f, "input `{input}` of step `{step}`"),
            Place::Condition { step, field } => write!(f, "`{field}` of step `{step}`"),
        }
    }
}

/// The identifier at the start of `text` (word characters) and what follows it.
fn split_word(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    text.split_at(end)
}

/// The text of a CEL string literal at the start of `text`: `'x'`, `"x"`, or the triple-quoted
/// forms; `None` for anything else, raw or byte strings, and literals with escapes (which this
/// textual check leaves alone).
fn quoted(text: &str) -> Option<&str> {
    let delimiter = ["'''", "\"\"\"", "'", "\""]
        .into_iter()
        .find(|delimiter| text.starts_with(delimiter))?;
    let inner = &text[delimiter.len()..];
    let literal = &inner[..inner.find(delimiter)?];
    (!literal.contains('\\')).then_some(literal)
}

/// What a decision step outputs.
const DECISION_FIELDS: [&str; 2] = ["choice", "reason"];

/// `step_12` → `step_`; an id with no trailing digits is its own stem.
fn numeric_stem(id: &str) -> &str {
    id.trim_end_matches(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use wayline_core::{Edge, MemoryCatalog, Step, ToolDefinition};

    use super::*;

    fn catalog() -> MemoryCatalog {
        let mut repo = ToolDefinition::new("repo", "https://api.github.com");
        repo.path = "/repos/{owner}/{repo}".into();
        let mut extract = ToolDefinition::new("extract", "https://x");
        extract.response_extract = Some(
            serde_json::from_value(serde_json::json!({"fields": {"token": "access_token"}}))
                .unwrap(),
        );
        MemoryCatalog::from_tools([ToolDefinition::new("t", "https://x"), repo, extract])
    }

    fn kinds(report: &ValidationReport) -> Vec<ProblemKind> {
        report.errors.iter().map(|problem| problem.kind).collect()
    }

    #[test]
    fn did_you_mean_hints_are_searched_a_bounded_number_of_times() {
        let mut workflow = Workflow::new("w", "W");
        workflow.steps.push(Step::new("locate", "t"));
        for _ in 0..MAX_NEAR_MISS_SEARCHES + 10 {
            workflow
                .edges
                .push(wayline_core::workflow::Edge::new("locat", "locate"));
        }
        let report = validate(&workflow, &catalog());
        let hinted = report
            .errors
            .iter()
            .filter(|problem| problem.message.contains("did you mean `locate`"))
            .count();
        assert_eq!(report.errors.len(), MAX_NEAR_MISS_SEARCHES + 10);
        assert_eq!(hinted, MAX_NEAR_MISS_SEARCHES);
    }

    #[test]
    fn reports_every_problem_at_once() {
        let mut w = Workflow::new("w", "W");
        w.steps
            .push(Step::new("a", "repo").map("owner", "$input.owner"));
        w.steps.push(Step::new("a", "t"));
        w.steps.push(Step::new("b", "missing").map("x", "b.y"));
        w.steps.push(Step::new("c", "extract"));
        w.steps.push(
            Step::new("d", "t")
                .map("x", "c.tokn")
                .map("y", "$steps.zz.outputs.q"),
        );
        w.edges.push(Edge::new("a", "nowhere"));
        let mut e = Step::new("e", "t");
        e.when = Some("steps.d.ok &&".into());
        w.steps.push(e);
        let report = validate(&w, &catalog());
        assert_eq!(
            kinds(&report),
            [
                ProblemKind::DuplicateStepId,
                ProblemKind::UnknownStep,
                ProblemKind::MissingRequiredInput,
                ProblemKind::UnknownTool,
                ProblemKind::SelfReference,
                ProblemKind::UnknownOutputField,
                ProblemKind::UnknownReference,
                ProblemKind::InvalidExpression,
            ],
            "{:#?}",
            report.errors
        );
        assert!(report.errors[5].message.contains("did you mean `token`"));
    }

    #[test]
    fn cel_string_literals_are_read_in_every_quoting() {
        assert_eq!(quoted("'up' && x"), Some("up"));
        assert_eq!(quoted("\"up\""), Some("up"));
        assert_eq!(quoted("'''up''' || y"), Some("up"));
        assert_eq!(quoted("''"), Some(""));
        assert_eq!(quoted("'unterminated"), None);
        assert_eq!(quoted("'a\\'b'"), None);
        assert_eq!(quoted("r'up'"), None);
    }

    #[test]
    fn decision_steps_need_a_question_and_choices_and_output_only_their_choice() {
        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::decision("ok", "Which?", ["a", "b"]));
        let mut act = Step::new("act", "t").map("x", "ok.choice");
        act.when = Some("steps.ok.choice == 'a'".into());
        w.steps.push(act);
        let report = validate(&w, &catalog());
        assert!(report.is_valid(), "{:?}", report.errors);

        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::decision("bare", " ", ["a", "a"]));
        let mut tooled = Step::decision("tooled", "Which?", ["a", "b"]);
        tooled.tool_id = "t".into();
        w.steps.push(tooled);
        let mut stray = Step::new("stray", "t");
        stray.choices = vec!["a".into()];
        w.steps.push(stray);
        w.steps
            .push(Step::new("reader", "t").map("x", "tooled.chioce"));
        let report = validate(&w, &catalog());
        let messages: Vec<&str> = report.errors.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            kinds(&report),
            [
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::UnknownOutputField,
            ],
            "{messages:#?}"
        );
        assert!(messages[0].contains("no `decision_prompt`"));
        assert!(messages[1].contains("`a` twice"));
        assert!(messages[2].contains("at least two `choices`"));
        assert!(messages[3].contains("remove `tool_id`"));
        assert!(messages[4].contains("set `kind: decision`"));
        assert!(
            messages[5].contains("did you mean `choice`"),
            "{}",
            messages[5]
        );

        // Conditions: a comparison with a choice the decision cannot answer, a misspelt
        // field, spaces around a choice, and `poll` on a decision.
        let mut w = Workflow::new("w", "W");
        let mut pick = Step::decision("pick", "Which?", ["up", " down"]);
        pick.poll = Some(wayline_core::workflow::Poll::new("true", 2, 0));
        w.steps.push(pick);
        let mut a = Step::new("a", "t");
        a.when = Some("steps.pick.choice == 'upp' || steps.pick.choice != \"up\"".into());
        w.steps.push(a);
        let mut b = Step::new("b", "t");
        b.when = Some("steps.pick.chioce == 'up' && mysteps.pick.x == 1".into());
        w.steps.push(b);
        let report = validate(&w, &catalog());
        let messages: Vec<&str> = report.errors.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            kinds(&report),
            [
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::InvalidDecision,
                ProblemKind::UnknownOutputField,
            ],
            "{messages:#?}"
        );
        assert!(messages[0].contains("spaces around it"), "{}", messages[0]);
        assert!(messages[1].contains("`poll` or `retry`"), "{}", messages[1]);
        assert!(messages[2].contains("with `upp`"), "{}", messages[2]);
        assert!(
            messages[3].contains("did you mean `choice`"),
            "{}",
            messages[3]
        );
        assert_eq!(report.errors[2].steps, ["a", "pick"]);
    }

    #[test]
    fn conditions_add_inferred_edges() {
        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::new("check", "t"));
        let mut act = Step::new("act", "t");
        act.when = Some("steps.check.ok == true".into());
        w.steps.push(act);
        let report = validate(&w, &catalog());
        assert!(report.is_valid(), "{:?}", report.errors);
        assert_eq!(report.edges().collect::<Vec<_>>(), [("check", "act", true)]);
    }

    #[test]
    fn declared_inputs_are_enforced_only_when_declared() {
        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::new("a", "t").map("x", "$input.citty"));
        assert!(validate(&w, &catalog()).is_valid());
        w.inputs.insert("city".into(), Default::default());
        let report = validate(&w, &catalog());
        assert_eq!(kinds(&report), [ProblemKind::UnknownReference]);
        assert!(report.errors[0].message.contains("did you mean `city`"));
    }

    #[test]
    fn step_shaped_literals_are_unknown_references_other_literals_are_not() {
        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::new("step_1", "t"));
        w.steps.push(
            Step::new("step_2", "t")
                .map("a", "step_9.items.0")
                .map("b", "example.com")
                .map("c", "3.5")
                .map("d", "step.x"),
        );
        let report = validate(&w, &catalog());
        assert_eq!(kinds(&report), [ProblemKind::UnknownReference]);
        assert_eq!(report.errors[0].steps, ["step_2", "step_9"]);
    }

    #[test]
    fn report_serializes_to_the_cli_document() {
        let mut w = Workflow::new("w", "W");
        w.steps.push(Step::new("a", "t"));
        w.steps.push(Step::new("b", "t"));
        w.edges.push(Edge::new("a", "b"));
        let json = serde_json::to_value(validate(&w, &catalog())).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "valid": true, "errors": [], "warnings": [],
                "edges": [{"from": "a", "to": "b", "inferred": false}],
                "order": ["a", "b"], "levels": [["a"], ["b"]]
            })
        );
    }
}

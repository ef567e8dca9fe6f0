//! Simple views of a workflow graph for people: Mermaid, Graphviz DOT and plain text (and the
//! same facts as JSON, for programs).
//!
//! Every view labels a step with its id and its tool, and draws inferred edges differently from
//! explicit ones (dashed in Mermaid and DOT, marked `~` in text).

use std::fmt::Write;

use wayline_core::{StepKind, Workflow};

use crate::report::ValidationReport;

/// The view formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewFormat {
    /// A Mermaid `flowchart`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
    /// Indented plain text, one block per parallel level.
    Text,
    /// JSON: `{workflow_id, name, steps: [{id, label}], edges: [{from, to, inferred}],
    /// levels: [[id, …], …]}`, for programs (a level is empty of steps a cycle holds).
    Json,
}

/// Renders `workflow` (as analysed in `report`) in `format`.
///
/// ```
/// use wayline_core::{Edge, MemoryCatalog, Step, Workflow};
/// use wayline_graph::{render, validate, ViewFormat};
///
/// let mut workflow = Workflow::new("w", "W");
/// workflow.steps.push(Step::new("a", "geo"));
/// workflow.steps.push(Step::new("b", "weather").map("lat", "a.lat"));
/// let report = validate(&workflow, &MemoryCatalog::new());
/// let mermaid = render(&workflow, &report, ViewFormat::Mermaid);
/// assert!(mermaid.contains("s0 -.-> s1"));
/// ```
pub fn render(workflow: &Workflow, report: &ValidationReport, format: ViewFormat) -> String {
    match format {
        ViewFormat::Mermaid => mermaid(workflow, report),
        ViewFormat::Dot => dot(workflow, report),
        ViewFormat::Text => text(workflow, report),
        ViewFormat::Json => json(workflow, report),
    }
}

fn json(workflow: &Workflow, report: &ValidationReport) -> String {
    let steps: Vec<serde_json::Value> = (0..workflow.steps.len())
        .map(|index| {
            serde_json::json!({
                "id": workflow.steps[index].id,
                "label": step_label(workflow, index),
            })
        })
        .collect();
    let edges: Vec<serde_json::Value> = report
        .edges()
        .map(|(from, to, inferred)| serde_json::json!({"from": from, "to": to, "inferred": inferred}))
        .collect();
    let view = serde_json::json!({
        "workflow_id": workflow.id,
        "name": workflow.name,
        "steps": steps,
        "edges": edges,
        "levels": report.levels(),
    });
    let mut out = serde_json::to_string_pretty(&view).unwrap_or_default();
    out.push('\n');
    out
}

/// What a step does, for labels: its tool, or its kind when it calls none.
fn step_label(workflow: &Workflow, index: usize) -> String {
    let step = &workflow.steps[index];
    match step.kind {
        StepKind::Action | StepKind::Code if !step.tool_id.is_empty() => step.tool_id.clone(),
        StepKind::Action => "(no tool)".to_owned(),
        StepKind::Decision if !step.choices.is_empty() => {
            format!("decision: {}", step.choices.join(" or "))
        }
        kind => kind.as_str().to_owned(),
    }
}

fn mermaid(workflow: &Workflow, report: &ValidationReport) -> String {
    // Node names are positional (`s0`, `s1`, …): step ids may hold characters Mermaid reads as
    // syntax (`-`, `.`); the id itself goes in the quoted label.
    let escape = |text: &str| text.replace('"', "#quot;");
    let mut out = String::from("flowchart TD\n");
    for (index, step) in workflow.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "    s{index}[\"{}<br/><small>{}</small>\"]",
            escape(&step.id),
            escape(&step_label(workflow, index))
        );
    }
    for edge in report.graph().edges() {
        let arrow = if edge.inferred { "-.->" } else { "-->" };
        let _ = writeln!(out, "    s{} {arrow} s{}", edge.from, edge.to);
    }
    out
}

fn dot(workflow: &Workflow, report: &ValidationReport) -> String {
    let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = format!(
        "digraph {} {{\n    rankdir=LR;\n    node [shape=box, fontname=\"Helvetica\"];\n",
        quote(&workflow.id)
    );
    for (index, step) in workflow.steps.iter().enumerate() {
        let label = format!("{}\n{}", step.id, step_label(workflow, index));
        let _ = writeln!(
            out,
            "    {} [label={}];",
            quote(&step.id),
            quote(&label).replace('\n', "\\n")
        );
    }
    for edge in report.graph().edges() {
        let (from, to) = (report.graph().id(edge.from), report.graph().id(edge.to));
        let style = if edge.inferred { " [style=dashed]" } else { "" };
        let _ = writeln!(out, "    {} -> {}{style};", quote(from), quote(to));
    }
    out.push_str("}\n");
    out
}

fn text(workflow: &Workflow, report: &ValidationReport) -> String {
    let graph = report.graph();
    let inferred = graph.edges().iter().filter(|edge| edge.inferred).count();
    let mut out = format!(
        "{} — {}\n{} steps, {} edges ({inferred} inferred)\n",
        workflow.id,
        workflow.name,
        workflow.steps.len(),
        graph.edges().len(),
    );
    let width = workflow
        .steps
        .iter()
        .map(|step| step.id.chars().count())
        .max()
        .unwrap_or(0);
    let tool_width = (0..workflow.steps.len())
        .map(|index| step_label(workflow, index).chars().count())
        .max()
        .unwrap_or(0);
    let levels = graph.levels();
    let mut placed = vec![false; workflow.steps.len()];
    for &index in levels.iter().flatten() {
        placed[index] = true;
    }
    let mut incoming = vec![Vec::new(); workflow.steps.len()];
    for edge in graph.edges() {
        incoming[edge.to].push(*edge);
    }
    let write_step = |out: &mut String, index: usize| {
        let after: Vec<String> = incoming[index]
            .iter()
            .map(|edge| {
                let marker = if edge.inferred { "~" } else { "" };
                format!("{marker}{}", graph.id(edge.from))
            })
            .collect();
        let label = step_label(workflow, index);
        // Padded by hand: `format!`'s width is limited to 65,535, and ids are not.
        let id = padded(&workflow.steps[index].id, width);
        let line = if after.is_empty() {
            format!("  {id}  {label}")
        } else {
            format!(
                "  {id}  {}  after {}",
                padded(&label, tool_width),
                after.join(", ")
            )
        };
        out.push_str(line.trim_end());
        out.push('\n');
    };
    for (depth, level) in levels.into_iter().enumerate() {
        let _ = writeln!(out, "level {depth}");
        for index in level {
            write_step(&mut out, index);
        }
    }
    let unplaced: Vec<usize> = (0..workflow.steps.len()).filter(|&i| !placed[i]).collect();
    if !unplaced.is_empty() {
        out.push_str("not ordered (on or after a cycle)\n");
        for index in unplaced {
            write_step(&mut out, index);
        }
    }
    if inferred > 0 {
        out.push_str("(~ marks an inferred dependency)\n");
    }
    out
}

/// `text` followed by spaces up to `width` characters.
fn padded(text: &str, width: usize) -> String {
    let mut padded = text.to_owned();
    let count = text.chars().count();
    padded.extend(std::iter::repeat_n(' ', width.saturating_sub(count)));
    padded
}

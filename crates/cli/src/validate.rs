//! `wayline validate` and `wayline graph`: a workflow checked against its tools (every
//! problem, the edges, the order, the levels) and drawn.

use std::path::{Path, PathBuf};

use wayline_core::Workflow;
use wayline_graph::{ValidationReport, ViewFormat, render, validate};

use crate::assemble::load_tools;
use crate::report::{Outcome, ReportFormat, out, outcome_of, outln, print_errors, print_json};

/// The views `wayline graph` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GraphFormat {
    Mermaid,
    Dot,
    Text,
}

/// Loads the tools and the workflow and validates it.
fn analyse(workflow: &Path, tools: &[PathBuf]) -> Result<(Workflow, ValidationReport), Outcome> {
    let registry = load_tools(tools)?;
    let workflow = wayline_registry::load_workflow_file(workflow).map_err(|error| {
        let outcome = outcome_of(std::slice::from_ref(&error));
        print_errors(&[error]);
        outcome
    })?;
    let report = validate(&workflow, &registry);
    Ok((workflow, report))
}

pub(crate) fn validate_command(
    workflow: &Path,
    tools: &[PathBuf],
    format: ReportFormat,
) -> Outcome {
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(outcome) => return outcome,
    };
    match format {
        ReportFormat::Json => print_json(&report),
        ReportFormat::Text => print_report(&workflow, &report),
    }
    if report.is_valid() {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}

fn print_report(workflow: &Workflow, report: &ValidationReport) {
    let edges = report.graph().edges();
    let inferred = edges.iter().filter(|edge| edge.inferred).count();
    if report.is_valid() {
        outln!(
            "{}: valid ({} steps, {} edges, {inferred} inferred)",
            workflow.id,
            workflow.steps.len(),
            edges.len()
        );
    } else {
        let count = report.errors.len();
        outln!(
            "{}: invalid, {count} problem{}",
            workflow.id,
            if count == 1 { "" } else { "s" }
        );
        for problem in &report.errors {
            outln!("  {problem}");
        }
    }
    outln!("order: {}", report.order().join(", "));
    let levels: Vec<String> = report
        .levels()
        .iter()
        .map(|level| format!("[{}]", level.join(", ")))
        .collect();
    outln!("levels: {}", levels.join(" "));
}

pub(crate) fn graph_command(workflow: &Path, tools: &[PathBuf], format: GraphFormat) -> Outcome {
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(outcome) => return outcome,
    };
    if !report.is_valid() {
        eprintln!(
            "warning: {} has {} problem(s); the drawing shows it as written (see `wayline validate`)",
            workflow.id,
            report.errors.len()
        );
    }
    let view = match format {
        GraphFormat::Mermaid => ViewFormat::Mermaid,
        GraphFormat::Dot => ViewFormat::Dot,
        GraphFormat::Text => ViewFormat::Text,
    };
    out!("{}", render(&workflow, &report, view));
    Outcome::Ok
}

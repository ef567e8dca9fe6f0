//! `wayline validate` and `wayline graph`: a workflow checked against its tools (every
//! problem, the edges, the order, the levels) and drawn; an Arazzo document checked by its
//! specification's rules.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use wayline_core::Workflow;
use wayline_graph::{ValidationReport, ViewFormat, render, validate};

use wayline_registry::ToolRegistry;

use crate::args::{arazzo_text, read_scope, source_overrides};
use crate::report::{
    Outcome, ProblemDoc, ReportFormat, out, outcome_of, outln, print_errors, print_json, unreadable,
};
use wayline_durable::read::ReadScope;

/// The views `wayline graph` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GraphFormat {
    Mermaid,
    Dot,
    Text,
    Json,
}

/// Loads the tools and the workflow and validates it; the problems of files that do not load
/// otherwise.
fn analyse(
    workflow: &Path,
    tools: &[PathBuf],
) -> Result<(Workflow, ValidationReport), Vec<wayline_registry::Error>> {
    let loaded = ToolRegistry::load(tools);
    if !loaded.errors.is_empty() {
        return Err(loaded.errors);
    }
    let workflow = wayline_registry::load_workflow_file(workflow).map_err(|error| vec![error])?;
    let report = validate(&workflow, &loaded.registry);
    Ok((workflow, report))
}

/// Prints files that did not load (as `validate --format json`'s document when asked, so a
/// script always gets JSON) and returns the outcome they deserve.
fn unloaded(errors: &[wayline_registry::Error], format: ReportFormat) -> Outcome {
    match format {
        ReportFormat::Json => {
            let problems: Vec<serde_json::Value> = errors
                .iter()
                .map(|error| {
                    let mut problem =
                        serde_json::to_value(ProblemDoc::new(error)).unwrap_or_default();
                    let kind = match error {
                        wayline_registry::Error::Io { .. } => "unreadable_file",
                        _ => "invalid_document",
                    };
                    problem["kind"] = kind.into();
                    problem["steps"] = serde_json::json!([]);
                    problem
                })
                .collect();
            print_json(&serde_json::json!({
                "valid": false,
                "errors": problems,
                "edges": [],
                "order": [],
                "levels": [],
            }));
        }
        ReportFormat::Text => print_errors(errors),
    }
    outcome_of(errors)
}

pub(crate) fn validate_command(
    workflow: &Path,
    tools: &[PathBuf],
    sources: &[String],
    allow_read: &[PathBuf],
    format: ReportFormat,
) -> Outcome {
    if let Some(text) = arazzo_text(workflow) {
        let overrides = match source_overrides(sources) {
            Ok(overrides) => overrides,
            Err(outcome) => return outcome,
        };
        let scope = read_scope(workflow, allow_read);
        return validate_arazzo(workflow, &text, &overrides, scope, format);
    }
    if !sources.is_empty() || !allow_read.is_empty() {
        return unreadable(
            "`--source` and `--allow-read` are for an Arazzo document's source descriptions; a wayline workflow has none",
        );
    }
    if tools.is_empty() {
        return unreadable(format!(
            "{}: a wayline workflow is validated against its tools: add `--tools DIR` (an Arazzo document needs none)",
            workflow.display()
        ));
    }
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(errors) => return unloaded(&errors, format),
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
    for warning in &report.warnings {
        outln!("  warning: {warning}");
    }
    outln!("order: {}", report.order().join(", "));
    let levels: Vec<String> = report
        .levels()
        .iter()
        .map(|level| format!("[{}]", level.join(", ")))
        .collect();
    outln!("levels: {}", levels.join(" "));
}

pub(crate) fn graph_command(
    workflow: &Path,
    tools: &[PathBuf],
    arazzo_workflow: Option<&str>,
    format: GraphFormat,
) -> Outcome {
    if let Some(text) = arazzo_text(workflow) {
        return graph_arazzo(workflow, &text, arazzo_workflow, format);
    }
    if tools.is_empty() || arazzo_workflow.is_some() {
        return unreadable(format!(
            "{}: a wayline workflow is drawn with its tools (`--tools DIR`); `--workflow` picks a workflow of an Arazzo document",
            workflow.display()
        ));
    }
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(errors) => return unloaded(&errors, ReportFormat::Text),
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
        GraphFormat::Json => ViewFormat::Json,
    };
    out!("{}", render(&workflow, &report, view));
    Outcome::Ok
}

/// `validate` of an Arazzo document: its structure, then its references and expressions,
/// then the operations its steps call in the descriptions that could be read; every problem
/// with its rule and place.
fn validate_arazzo(
    path: &Path,
    text: &str,
    overrides: &IndexMap<String, PathBuf>,
    scope: ReadScope,
    format: ReportFormat,
) -> Outcome {
    let origin = path.display().to_string();
    let loaded = wayline_arazzo::load(text, &origin).map(|document| {
        let mut problems = wayline_arazzo::validate(&document);
        let base = path.parent().unwrap_or(Path::new("."));
        let sources =
            wayline_arazzo::sources::Sources::load_within(&document, base, overrides, scope);
        problems.extend(wayline_arazzo::sources::check_operations(
            &document, &sources,
        ));
        // Located only when there is something to say: reading places costs a second parse.
        if !problems.is_empty() {
            let positions = wayline_arazzo::Positions::of(text);
            for problem in &mut problems {
                problem.locate(&positions);
            }
        }
        problems.sort_by_key(|problem| (problem.line, problem.column));
        (document, problems)
    });
    let (document, problems) = match loaded {
        Ok((document, problems)) => (Some(document), problems),
        Err(wayline_arazzo::Error::Invalid { problems, .. }) => (None, problems),
        Err(error) => {
            let outcome = crate::report::Failure::outcome(&error);
            if format == ReportFormat::Json {
                print_json(&serde_json::json!({
                    "valid": false,
                    "format": "arazzo",
                    "errors": [{"rule": "invalid_document", "message": error.to_string()}],
                    "warnings": [],
                }));
            } else {
                eprintln!("error: {error}");
            }
            return outcome;
        }
    };
    let (errors, warnings): (Vec<_>, Vec<_>) =
        problems.iter().partition(|problem| problem.is_error());
    let workflows: Vec<&str> = document
        .iter()
        .flat_map(|document| &document.workflows)
        .map(|workflow| workflow.workflow_id.as_str())
        .collect();
    match format {
        ReportFormat::Json => print_json(&serde_json::json!({
            "valid": errors.is_empty(),
            "format": "arazzo",
            "arazzo": document.as_ref().map(|document| document.arazzo.as_str()),
            "workflows": workflows,
            "errors": errors,
            "warnings": warnings,
        })),
        ReportFormat::Text => {
            match (&document, errors.len()) {
                (Some(document), 0) => {
                    let steps: usize = document
                        .workflows
                        .iter()
                        .map(|workflow| workflow.steps.len())
                        .sum();
                    let plural = |count: usize| if count == 1 { "" } else { "s" };
                    outln!(
                        "{origin}: valid Arazzo {} document ({} workflow{}: {}; {steps} step{})",
                        document.arazzo,
                        workflows.len(),
                        plural(workflows.len()),
                        workflows.join(", "),
                        plural(steps)
                    );
                }
                (_, count) => outln!(
                    "{origin}: invalid Arazzo document, {count} problem{}",
                    if count == 1 { "" } else { "s" }
                ),
            }
            for problem in errors.iter().chain(&warnings) {
                outln!("  {origin}:{problem}");
            }
        }
    }
    if errors.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}

/// `graph` of an Arazzo document: each workflow's plan (which steps run together, the control
/// points that keep order), or the one `--workflow` names.
fn graph_arazzo(path: &Path, text: &str, only: Option<&str>, format: GraphFormat) -> Outcome {
    let document = match wayline_arazzo::load(text, &path.display().to_string()) {
        Ok(document) => document,
        Err(error) => return crate::report::fail(error),
    };
    let workflows: Vec<&wayline_arazzo::model::Workflow> = document
        .workflows
        .iter()
        .filter(|workflow| only.is_none_or(|id| workflow.workflow_id == id))
        .collect();
    let ids = || {
        document
            .workflows
            .iter()
            .map(|workflow| workflow.workflow_id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if workflows.is_empty() {
        return unreadable(format!(
            "{}: no workflow `{}`; it has {}",
            path.display(),
            only.unwrap_or_default(),
            ids()
        ));
    }
    let view = match format {
        GraphFormat::Mermaid => wayline_arazzo::view::View::Mermaid,
        GraphFormat::Dot => wayline_arazzo::view::View::Dot,
        GraphFormat::Text => wayline_arazzo::view::View::Text,
        GraphFormat::Json => wayline_arazzo::view::View::Json,
    };
    if workflows.len() > 1 && matches!(format, GraphFormat::Mermaid | GraphFormat::Dot) {
        return unreadable(format!(
            "{}: a diagram draws one workflow; name it with `--workflow ID` ({})",
            path.display(),
            ids()
        ));
    }
    let mut outcome = Outcome::Ok;
    let mut drawn = Vec::new();
    for workflow in workflows {
        match wayline_arazzo::waits::Waits::of(workflow, document.components.as_ref()) {
            Ok(plan) => drawn.push(wayline_arazzo::view::render(workflow, &plan, view)),
            Err(deadlock) => {
                eprintln!("error: workflow `{}`: {deadlock}", workflow.workflow_id);
                outcome = Outcome::Failed;
            }
        }
    }
    if format == GraphFormat::Json {
        // One document: the plans of the workflows drawn, as a list.
        let plans: Vec<serde_json::Value> = drawn
            .iter()
            .filter_map(|plan| serde_json::from_str(plan).ok())
            .collect();
        print_json(&plans);
    } else {
        out!("{}", drawn.join("\n"));
    }
    outcome
}

//! Snapshots of the views (Mermaid, DOT, text, JSON).

use wayline_graph::{ViewFormat, render, validate};
use wayline_testkit::{fixture, testdata};

use crate::support::{tools, workflow};

fn snapshot_views(name: &str, workflow_path: &std::path::Path, tools_dir: &std::path::Path) {
    let workflow = workflow(workflow_path);
    let report = validate(&workflow, &tools(tools_dir));
    for (format, suffix) in [
        (ViewFormat::Mermaid, "mermaid"),
        (ViewFormat::Dot, "dot"),
        (ViewFormat::Text, "text"),
        (ViewFormat::Json, "json"),
    ] {
        insta::assert_snapshot!(
            format!("{name}_{suffix}"),
            render(&workflow, &report, format)
        );
    }
}

#[test]
fn fixture_github_intel_views() {
    let Some(dir) = fixture("structure-ai-bot") else {
        return;
    };
    snapshot_views(
        "github_intel",
        &dir.join("workflows/github_intel.json"),
        &dir.join("tools"),
    );
}

#[test]
fn testdata_briefing_views() {
    snapshot_views(
        "briefing",
        &testdata("workflows/briefing.yaml"),
        &testdata("tools"),
    );
}

/// An id longer than `format!` can pad (65,535) is drawn, not a panic, in every view.
#[test]
fn ids_of_any_length_are_drawn() {
    let long = "s".repeat(70_000);
    let mut workflow = wayline_core::Workflow::new("w", "W");
    workflow
        .steps
        .push(wayline_core::Step::new(&long, "t".repeat(70_000)));
    workflow
        .steps
        .push(wayline_core::Step::new("next", "t").map("x", format!("{long}.out")));
    let report = validate(&workflow, &wayline_core::MemoryCatalog::new());
    for format in [
        ViewFormat::Mermaid,
        ViewFormat::Dot,
        ViewFormat::Text,
        ViewFormat::Json,
    ] {
        let drawn = render(&workflow, &report, format);
        assert!(drawn.contains(&long), "{format:?}");
    }
    // Drawn, and refused by validation: ids have at most 256 characters.
    let too_long: Vec<_> = report
        .errors_of(wayline_graph::ProblemKind::InvalidId)
        .collect();
    assert_eq!(too_long.len(), 2, "the step id and the tool id");
    assert!(
        too_long[0].message.contains("70000 characters"),
        "{}",
        too_long[0].message
    );
}

//! Snapshots of the three views (Mermaid, DOT, text).

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

//! Cross-crate tests of the `wayline` facade.

mod fuzz;
mod harness;
mod requests;

use wayline::core::ToolCatalog;
use wayline::graph::{ViewFormat, render, validate};
use wayline::registry::{ToolRegistry, load_workflow_file, render_catalog};
use wayline_testkit::testdata;

#[test]
fn load_validate_and_draw_through_the_facade() {
    let registry = ToolRegistry::load([testdata("tools")])
        .into_result()
        .unwrap();
    let workflow = load_workflow_file(&testdata("workflows/briefing.yaml")).unwrap();
    let report = validate(&workflow, &registry);
    assert!(report.is_valid(), "{:#?}", report.errors);
    assert!(render(&workflow, &report, ViewFormat::Text).contains("report        post_report"));
    // Every tool a step names is in the catalog the planner would be shown.
    let catalog = render_catalog(&registry);
    for step in &workflow.steps {
        assert!(registry.tool(&step.tool_id).is_some());
        assert!(catalog.contains(&format!("{} — ", step.tool_id)));
    }
}

#[test]
fn a_workflow_round_trips_through_json_unchanged() {
    let workflow = load_workflow_file(&testdata("workflows/geo.json")).unwrap();
    let text = std::fs::read_to_string(testdata("workflows/geo.json")).unwrap();
    let original: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(&workflow).unwrap(), original);
}

#[test]
fn fixture_workflows_round_trip_through_json_unchanged() {
    let Some(dir) = wayline_testkit::fixture("structure-ai-bot/workflows") else {
        return;
    };
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let workflow = load_workflow_file(&path).unwrap();
        let original = wayline_testkit::read_json(&path);
        assert_eq!(
            serde_json::to_value(&workflow).unwrap(),
            original,
            "{}",
            path.display()
        );
    }
}

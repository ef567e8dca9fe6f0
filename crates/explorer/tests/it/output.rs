//! The fixture's reusable output: it loads, round-trips, and converts into a workflow that
//! validates against tools of those operation ids.

use serde_json::json;
use wayline_core::{MemoryCatalog, ToolDefinition};
use wayline_explorer::output::Scenario;
use wayline_testkit::fixture;

#[test]
fn the_fixture_output_round_trips_and_becomes_a_valid_workflow() {
    let Some(path) = fixture("tidbcloud/output-example.yaml") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = Scenario::parse(&text, "output-example.yaml").unwrap();
    assert_eq!(scenario.scenario.name, "scale_in_and_out_tidb");
    assert_eq!(scenario.steps.len(), 2);
    let again = Scenario::parse(&scenario.to_yaml(), "again.yaml").unwrap();
    assert_eq!(again, scenario, "load → save → load is equal");
    let rules = scenario.steps[0].save_rules().unwrap();
    assert_eq!(
        (rules[0].key.as_str(), rules[0].eval.as_str()),
        ("cluster_1", "body.clusterId")
    );

    let (workflow, warnings) = scenario.to_workflow().unwrap();
    assert_eq!(workflow.id, "scale_in_and_out_tidb");
    let create = &workflow.steps[0];
    assert_eq!(create.tool_id, "ClusterService_CreateCluster");
    assert_eq!(create.input_mapping["regionId"], json!("$input.region_id"));
    assert_eq!(
        create.input_mapping["displayName"],
        json!("llm-e2e-cluster-1234")
    );
    assert_eq!(create.outputs["cluster_1"], "body.clusterId");
    let poll = &workflow.steps[1];
    assert_eq!(
        poll.input_mapping["clusterId"],
        json!("create_cluster.cluster_1")
    );
    let until = poll.poll.as_ref().unwrap();
    assert_eq!(
        (until.until.as_str(), until.max_attempts, until.interval_ms),
        ("body.state == 'ACTIVE'", 121, 30_000)
    );
    assert!(workflow.inputs.contains_key("region_id"));
    assert!(warnings.is_empty(), "{warnings:?}");
    // Against tools of those ids, the workflow is valid, the poll after the create.
    let catalog = MemoryCatalog::from_tools([
        ToolDefinition::new(
            "ClusterService_CreateCluster",
            "https://dedicated.tidbapi.com",
        ),
        ToolDefinition::new("ClusterService_GetCluster", "https://dedicated.tidbapi.com"),
    ]);
    let report = wayline_graph::validate(&workflow, &catalog);
    assert!(report.is_valid(), "{:?}", report.errors);
    assert_eq!(report.order(), ["create_cluster", "poll_cluster_active"]);
}

#[test]
fn broken_embedded_json_is_reported_with_the_step() {
    let text = "scenario: {id: s, name: s}\nsteps:\n  - {operation_id: A, name: first, request: '{\"method\": '}\n";
    let error = Scenario::parse(text, "broken.yaml")
        .unwrap_err()
        .to_string();
    assert!(error.contains("step `first`"), "{error}");
}

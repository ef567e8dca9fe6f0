//! The policy: the default (MCP-ocs's ADR-005) classifies MCP-ocs's tools; bad policies are
//! refused.

use wayline_guard::{Policy, ToolClass};

/// Every MCP-ocs tool and the class it must have.
const EXPECTED: [(&str, ToolClass); 24] = [
    ("core_workflow_state", ToolClass::Read),
    ("knowledge_seed", ToolClass::Write),
    ("sequential_thinking", ToolClass::Read),
    ("memory_get_stats", ToolClass::Read),
    ("memory_search_conversations", ToolClass::Read),
    ("memory_search_incidents", ToolClass::Read),
    ("memory_search_operational", ToolClass::Read),
    ("memory_store_operational", ToolClass::Write),
    ("oc_diagnostic_cluster_health", ToolClass::Read),
    ("oc_diagnostic_events", ToolClass::Read),
    ("oc_diagnostic_namespace_health", ToolClass::Read),
    ("oc_diagnostic_namespace_health_v2", ToolClass::Read),
    ("oc_diagnostic_pod_health", ToolClass::Read),
    ("oc_diagnostic_rca_checklist", ToolClass::Read),
    ("oc_diagnostic_resource_usage", ToolClass::Read),
    ("oc_diagnostic_triage", ToolClass::Read),
    (
        "oc_analyze_namespace_storage_comprehensive",
        ToolClass::Read,
    ),
    ("oc_rca_storage_pvc_pending", ToolClass::Read),
    ("oc_read_describe", ToolClass::Read),
    ("oc_read_get_pods", ToolClass::Read),
    ("oc_read_logs", ToolClass::Read),
    ("oc_write_apply", ToolClass::Write),
    ("oc_write_scale", ToolClass::Write),
    ("oc_write_restart", ToolClass::Destructive),
];

#[test]
fn the_default_policy_classifies_every_mcp_ocs_tool() {
    let policy = Policy::default_policy();
    for (tool, class) in EXPECTED {
        assert_eq!(policy.classify(tool, None), class, "{tool}");
    }
    // The fixture lists exactly these names.
    let Some(path) = wayline_testkit::fixture("guard/mcp-ocs-tools.txt") else {
        return;
    };
    let listed: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let expected: Vec<&str> = EXPECTED.iter().map(|(tool, _)| *tool).collect();
    assert_eq!(listed, expected);
    // Every write tool is blocked during gathering, every read tool allowed.
    let gathering = policy.state("gathering").unwrap();
    assert!(gathering.blocked_tools.iter().any(|p| p == "oc_write_*"));
}

#[test]
fn the_default_policy_round_trips_as_yaml() {
    let policy = Policy::default_policy();
    let again = Policy::from_yaml(&policy.to_yaml(), "printed").unwrap();
    assert_eq!(again.file(), policy.file());
    assert_eq!(policy.initial_state(), "gathering");
}

fn refused(yaml: &str) -> String {
    Policy::from_yaml(yaml, "bad.yaml").unwrap_err().to_string()
}

#[test]
fn invalid_policies_are_refused_with_every_problem() {
    let error = refused(
        "states:\n  a: {next_states: [b, c]}\n  b: {next_states: []}\n  d: {allowed_tools: [x_*], blocked_tools: [x_*]}\npanic: {forced_state: a, early_states: [a]}\n",
    );
    assert!(
        error.contains("states.a.next_states: unknown state `c`"),
        "{error}"
    );
    assert!(error.contains("states.d: unreachable from `a`"), "{error}");
    assert!(
        error.contains("`x_*` is both allowed and blocked"),
        "{error}"
    );

    let error = refused(
        "states:\n  a: {blocked_tools: [\"oc_[abc\"]}\npanic: {forced_state: a, early_states: []}\n",
    );
    assert!(error.contains("unclosed `[`"), "{error}");
    let error = refused("states: {}\n");
    assert!(error.contains("no states"), "{error}");
    let error = refused("states:\n  a: {nxt_states: []}\n");
    assert!(error.contains("bad.yaml:2"), "file and line: {error}");
    assert!(error.contains("nxt_states"), "{error}");
}

#[test]
fn tools_nothing_names_are_classed_by_their_metadata() {
    let policy = Policy::default_policy();
    let mut tool = wayline_core::ToolDefinition::new("geocode", "http://api.test");
    assert_eq!(policy.classify("geocode", Some(&tool)), ToolClass::Read);
    tool.method = "POST".into();
    assert_eq!(policy.classify("geocode", Some(&tool)), ToolClass::Write);
    tool.destructive = Some(true);
    assert_eq!(
        policy.classify("geocode", Some(&tool)),
        ToolClass::Destructive
    );
    tool.destructive = None;
    tool.method = "DELETE".into();
    assert_eq!(
        policy.classify("geocode", Some(&tool)),
        ToolClass::Destructive
    );
    assert_eq!(
        policy.classify("geocode", None),
        ToolClass::Write,
        "unknown: not harmless"
    );
    // A command's default method says nothing: `kubectl delete` is not a read.
    let mut command = wayline_core::ToolDefinition::new("kubectl_delete", "");
    command.kind = wayline_core::tool::ToolKind::Cli;
    assert_eq!(command.method, "GET");
    assert_eq!(
        policy.classify("kubectl_delete", Some(&command)),
        ToolClass::Write
    );
}

//! The suggestion engine over the tidbx fixture spec: the target read as goals, and the steps
//! suggested as the state moves — dependencies first, waits while a resource is changing,
//! learned patterns first, pitfalls warned about.

use serde_json::{Value, json};
use wayline_explorer::dataflow::infer;
use wayline_explorer::intent::{Goal, Verb};
use wayline_explorer::state::{ExploreState, Resource};
use wayline_explorer::suggest::Suggester;
use wayline_explorer::{Action, Assessment, Source, Thresholds, decide};
use wayline_knowledge::model::{PatternsFile, PitfallsFile};
use wayline_knowledge::{Knowledge, Queries};
use wayline_registry::openapi::ApiSpec;
use wayline_testkit::fixture;

const TARGET: &str = "create a cluster, create a branch on it, delete both";

fn goal(verb: Verb, resource: &str) -> Goal {
    serde_json::from_value(json!({"verb": verb, "resource": resource})).unwrap()
}

fn with(state: &mut ExploreState, kind: &str, name: &str, id: &str, current: &str) {
    let resource: Resource = serde_json::from_value(json!({"id": id, "state": current})).unwrap();
    state
        .resources
        .entry(kind.to_owned())
        .or_default()
        .insert(name.to_owned(), resource);
}

#[test]
fn the_target_is_walked_step_by_step_as_the_state_moves() {
    let Some(path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let spec = ApiSpec::load(&path).unwrap();
    let flow = infer(&spec);
    let suggester = Suggester::new(&spec, &flow, TARGET, None);
    assert_eq!(
        suggester.goals(),
        [
            goal(Verb::Create, "cluster"),
            goal(Verb::Create, "branch"),
            goal(Verb::Delete, "branch"),
            goal(Verb::Delete, "cluster"),
        ],
        "children are deleted before parents"
    );
    let mut state = ExploreState::default();
    state
        .variables
        .insert("displayName".into(), Value::from("e2e"));
    state
        .variables
        .insert("region".into(), json!({"name": "regions/aws-us-east-1"}));
    let first = suggester.next(&state, &[], &[]).unwrap();
    assert_eq!(first.operation, "ClusterService_CreateCluster");
    assert_eq!(first.source, Source::SingleCandidate);
    assert_eq!(first.inputs["displayName"], "e2e");
    assert!(first.missing.is_empty(), "{:?}", first.missing);
    assert_eq!(
        decide(
            &Assessment::new(first.confidence, first.source),
            &Thresholds::default()
        )
        .action,
        Action::AutoExecute
    );
    // The cluster is being made: the branch must wait for it.
    with(&mut state, "clusters", "cluster_1", "c-1", "CREATING");
    let done = [goal(Verb::Create, "cluster")];
    let confirmed = ["ClusterService_CreateCluster".to_owned()];
    let wait = suggester.next(&state, &done, &confirmed).unwrap();
    assert_eq!(wait.operation, "ClusterService_GetCluster");
    assert_eq!(wait.inputs["clusterId"], "c-1");
    let until = wait.wait_for.as_ref().unwrap();
    assert_eq!(
        (until.resource.as_str(), until.state.as_str()),
        ("cluster", "ACTIVE")
    );
    assert!(
        wait.reason.contains("cluster_1 is CREATING"),
        "{}",
        wait.reason
    );
    // Active: the branch, on that cluster.
    with(&mut state, "clusters", "cluster_1", "c-1", "ACTIVE");
    let branch = suggester.next(&state, &done, &confirmed).unwrap();
    assert_eq!(branch.operation, "BranchService_CreateBranch");
    assert_eq!(branch.inputs["clusterId"], "c-1");
    assert_eq!(branch.goal, Some(goal(Verb::Create, "branch")));
    // Deleting the branch before it exists: its id comes from the step that makes it.
    let done = [goal(Verb::Create, "cluster"), goal(Verb::Create, "branch")];
    let needs = suggester.next(&state, &done, &confirmed).unwrap();
    assert_eq!(needs.operation, "BranchService_CreateBranch");
    assert!(
        needs.reason.contains("needs `branchId`"),
        "{}",
        needs.reason
    );
    with(&mut state, "branches", "branch_1", "b-1", "ACTIVE");
    let delete = suggester.next(&state, &done, &confirmed).unwrap();
    assert_eq!(delete.operation, "BranchService_DeleteBranch");
    assert_eq!(
        (
            delete.inputs["clusterId"].clone(),
            delete.inputs["branchId"].clone()
        ),
        (json!("c-1"), json!("b-1"))
    );
    let all = [
        goal(Verb::Create, "cluster"),
        goal(Verb::Create, "branch"),
        goal(Verb::Delete, "branch"),
        goal(Verb::Delete, "cluster"),
    ];
    assert!(
        suggester.next(&state, &all, &confirmed).is_none(),
        "target reached"
    );
    // A goal no operation serves asks for clarification.
    let odd = Suggester::new(&spec, &flow, "delete a region", None);
    let nothing = odd.next(&ExploreState::default(), &[], &[]).unwrap();
    assert_eq!(nothing.source, Source::NoMatch);
    assert_eq!(
        decide(
            &Assessment::new(nothing.confidence, nothing.source),
            &Thresholds::default()
        )
        .action,
        Action::AskForClarification
    );
}

#[test]
fn learned_patterns_come_first_and_pitfalls_are_warned_about() {
    let (Some(spec_path), Some(patterns), Some(pitfalls)) = (
        fixture("tidbcloud/tidbx-openapi.json"),
        fixture("tidbcloud/knowledge-patterns.yaml"),
        fixture("tidbcloud/knowledge-pitfalls.yaml"),
    ) else {
        return;
    };
    let spec = ApiSpec::load(&spec_path).unwrap();
    let flow = infer(&spec);
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
    let mut knowledge = Knowledge::new();
    knowledge.patterns = wayline_core::document::parse::<PatternsFile>(
        &read(&patterns),
        wayline_core::document::Format::Yaml,
        "patterns",
    )
    .unwrap()
    .patterns;
    knowledge.pitfalls = wayline_core::document::parse::<PitfallsFile>(
        &read(&pitfalls),
        wayline_core::document::Format::Yaml,
        "pitfalls",
    )
    .unwrap()
    .pitfalls;
    let now = "2026-01-20T00:00:00Z".parse().unwrap();
    let suggester = Suggester::new(
        &spec,
        &flow,
        "create a cluster",
        Some(Queries::at(&knowledge, now)),
    );
    // The presets a SUT gives: the fields the spec requires of a new cluster.
    let mut presets = ExploreState::default();
    presets
        .variables
        .insert("displayName".into(), serde_json::json!("e2e"));
    presets
        .variables
        .insert("region".into(), serde_json::json!({"name": "regions/x"}));
    let first = suggester.next(&presets, &[], &[]).unwrap();
    assert_eq!(first.operation, "ClusterService_CreateCluster");
    assert_eq!(first.source, Source::KnownPattern);
    assert!(first.confidence > 0.9, "{}", first.confidence);
    assert!(
        first.reason.contains("create_cluster_and_poll"),
        "{}",
        first.reason
    );
    let plain = Suggester::new(&spec, &flow, "create a cluster", None)
        .next(&presets, &[], &[])
        .unwrap();
    assert!(
        first.confidence > plain.confidence,
        "knowledge raises confidence"
    );
    // The fixture's pitfalls name ClusterService_UpdateCluster (a dedicated-tier operation
    // this spec does not have) and the state they apply in; none fires for create.
    assert!(first.pitfalls.is_empty(), "{:?}", first.pitfalls);

    // A pitfall of the delete: warned about before the step runs.
    knowledge.pitfalls.extend(
        wayline_core::document::parse::<PitfallsFile>(
            "pitfalls:\n  - id: p9\n    name: delete_without_backup\n    trigger: {operation_id: ClusterService_DeleteCluster, missing_variable: backup_1}\n    error_pattern: {status_code: 400, message_contains: backup}\n    occurrence_count: 3\n",
            wayline_core::document::Format::Yaml,
            "more pitfalls",
        )
        .unwrap()
        .pitfalls,
    );
    let suggester = Suggester::new(
        &spec,
        &flow,
        "delete the cluster",
        Some(Queries::at(&knowledge, now)),
    );
    let mut state = ExploreState::default();
    with(&mut state, "clusters", "cluster_1", "c-1", "ACTIVE");
    let delete = suggester.next(&state, &[], &[]).unwrap();
    assert_eq!(delete.operation, "ClusterService_DeleteCluster");
    assert_eq!(
        delete.pitfalls,
        ["delete_without_backup (variable `backup_1` is not set)"]
    );
    let mut assessment = Assessment::new(delete.confidence, delete.source);
    assessment.pitfalls = delete.pitfalls.clone();
    let decision = decide(&assessment, &Thresholds::default());
    assert_eq!(decision.action, Action::WarnAndAsk);
    // While the cluster is changing, the delete waits (the fixture's `delete_while_modifying`
    // is avoided, not hit).
    with(&mut state, "clusters", "cluster_1", "c-1", "MODIFYING");
    let wait = suggester.next(&state, &[], &[]).unwrap();
    assert_eq!(wait.operation, "ClusterService_GetCluster");
}

#[test]
fn the_specs_links_say_which_answer_feeds_which_input() {
    // Nothing in the names links a thing's `key` to a move's `subject`: the spec's link does.
    let spec = json!({
        "openapi": "3.0.3",
        "paths": {
            "/things": {"post": {"operationId": "createThing", "responses": {"201": {
                "description": "made",
                "content": {"application/json": {"schema": {"type": "object",
                    "properties": {"key": {"type": "string"}}}}},
                "links": {"MoveIt": {"operationId": "createMove",
                    "parameters": {"subject": "$response.body#/key"}}}}}}},
            "/moves": {"post": {"operationId": "createMove",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["subject"],
                    "properties": {"subject": {"type": "string"}}}}}},
                "responses": {"201": {"description": "moved"}}}}
        }
    });
    let spec = ApiSpec::parse(&spec.to_string(), std::path::Path::new("links.json")).unwrap();
    let flow = infer(&spec);
    let producers = flow.producers_of("createMove", "subject");
    assert_eq!(producers[0].operation, "createThing");
    assert_eq!(producers[0].field, "key");
    let suggester = Suggester::new(&spec, &flow, "create a move", None);
    let first = suggester.next(&ExploreState::default(), &[], &[]).unwrap();
    assert_eq!(first.operation, "createThing", "{}", first.reason);
    let mut state = ExploreState::default();
    let thing: Resource =
        serde_json::from_value(json!({"id": "t-1", "attributes": {"key": "k-9"}})).unwrap();
    state
        .resources
        .entry("things".into())
        .or_default()
        .insert("thing_1".into(), thing);
    let next = suggester
        .next(&state, &[], &["createThing".to_owned()])
        .unwrap();
    assert_eq!(next.operation, "createMove");
    assert_eq!(next.inputs["subject"], "k-9");
    assert!(next.missing.is_empty());
}

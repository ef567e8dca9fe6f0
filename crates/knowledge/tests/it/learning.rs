//! Real runs against a loopback API teach the knowledge base what the issue says they should:
//! a create → poll until ACTIVE → update flow whose update fails with 400 "NodeGroupId is
//! required" unless the node group id was saved first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wayline_core::document::{Format, parse};
use wayline_core::{MemoryCatalog, RunStatus, ToolDefinition, Workflow};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, RunOptions};
use wayline_knowledge::learn::{AttemptSeen, RunObservation, StepSeen};
use wayline_knowledge::{
    Knowledge, KnowledgeStore, MemoryKnowledge, Queries, Recorder, ResourceStates,
};

const CREATE: &str = "ClusterService_CreateCluster";
const GET: &str = "ClusterService_GetCluster";
const UPDATE: &str = "ClusterService_UpdateCluster";

/// Clusters become ACTIVE on their third GET; an update needs `nodegroup_id` in its body.
async fn api() -> MockServer {
    let polls: Mutex<HashMap<String, u32>> = Mutex::new(HashMap::new());
    let created = Mutex::new(0u32);
    MockServer::start(move |request| {
        let path = request.path().to_owned();
        match (request.method.as_str(), path.as_str()) {
            ("POST", "/clusters") => {
                let mut created = created.lock().unwrap();
                *created += 1;
                Reply::json(200, json!({"clusterId": format!("c-{created}"), "state": "CREATING"}))
            }
            ("GET", cluster) => {
                let mut polls = polls.lock().unwrap();
                let count = polls.entry(cluster.to_owned()).or_default();
                *count += 1;
                let state = if *count >= 3 { "ACTIVE" } else { "CREATING" };
                Reply::json(
                    200,
                    json!({"state": state, "tidbNodeSetting": {"tidbNodeGroups": [{"tidbNodeGroupId": "ng-7"}]}}),
                )
            }
            ("PATCH", _) => match request.json().and_then(|body| body.get("nodegroup_id").cloned()) {
                Some(Value::String(_)) => Reply::json(200, json!({"state": "MODIFYING"})),
                _ => Reply::json(400, json!({"code": 3, "message": "NodeGroupId is required"})),
            },
            _ => Reply::status(404),
        }
    })
    .await
    .unwrap()
}

fn tools(base: &str) -> Vec<ToolDefinition> {
    let tool = |id: &str, method: &str, path: &str| {
        let mut tool = ToolDefinition::new(id, base);
        tool.method = method.into();
        tool.path = path.into();
        tool
    };
    vec![
        tool(CREATE, "POST", "/clusters"),
        tool(GET, "GET", "/clusters/{cluster_id}"),
        tool(UPDATE, "PATCH", "/clusters/{cluster_id}"),
    ]
}

/// The flow; `fixed` saves the node group id while polling and passes it to the update.
fn flow(fixed: bool) -> Workflow {
    let (outputs, update_inputs) = if fixed {
        (
            "{state: '$.state', nodegroup_id: '$.tidbNodeSetting.tidbNodeGroups[0].tidbNodeGroupId'}",
            "{cluster_id: create.clusterId, nodegroup_id: poll.nodegroup_id}",
        )
    } else {
        (
            "{state: '$.state'}",
            "{cluster_id: create.clusterId, after: poll.state}",
        )
    };
    let text = format!(
        r#"
id: scale_cluster
name: Create a cluster and scale it
steps:
  - id: create
    tool_id: {CREATE}
    input_mapping: {{displayName: demo}}
  - id: poll
    tool_id: {GET}
    input_mapping: {{cluster_id: create.clusterId}}
    poll: {{until: "body.state == 'ACTIVE'", max_attempts: 10, interval_ms: 1000}}
    outputs: {outputs}
  - id: update
    tool_id: {UPDATE}
    input_mapping: {update_inputs}
"#
    );
    parse(&text, Format::Yaml, "flow.yaml").unwrap()
}

struct Setup {
    engine: Engine,
    recorder: Recorder,
    store: Arc<MemoryKnowledge>,
    _server: MockServer,
}

async fn setup() -> Setup {
    let server = api().await;
    let catalog = Arc::new(MemoryCatalog::from_tools(tools(&server.url(""))));
    let store = Arc::new(MemoryKnowledge::new());
    let recorder = Recorder::new(store.clone(), "tidbx", catalog.clone());
    let engine = Engine::builder(catalog)
        .observer(Arc::new(recorder.clone()))
        .build();
    Setup {
        engine,
        recorder,
        store,
        _server: server,
    }
}

impl Setup {
    async fn run(&self, fixed: bool) -> RunStatus {
        let workflow = flow(fixed);
        self.recorder.register(&workflow);
        let run = self.engine.run(&workflow, RunOptions::new()).await.unwrap();
        assert_eq!(self.recorder.flush().await.unwrap(), 1);
        run.status
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_then_fixed_flow_teaches_stats_a_pitfall_its_resolution_and_a_pattern() {
    let setup = setup().await;
    assert_eq!(setup.run(false).await, RunStatus::Failed);

    let knowledge = setup.store.load("tidbx").await.unwrap();
    let stats = &knowledge.stats.operations;
    assert_eq!(
        (stats[CREATE].total_attempts, stats[CREATE].successes),
        (1, 1)
    );
    assert_eq!(
        (stats[GET].total_attempts, stats[GET].successes),
        (3, 3),
        "three polls"
    );
    assert_eq!(
        (stats[UPDATE].total_attempts, stats[UPDATE].failures),
        (1, 1)
    );
    assert_eq!(
        stats[UPDATE].common_errors[0].error,
        "NodeGroupId is required"
    );
    assert_eq!(stats[UPDATE].common_errors[0].status_code, Some(400));
    assert_eq!(knowledge.pitfalls.len(), 1);
    let pitfall = &knowledge.pitfalls[0];
    assert_eq!(pitfall.trigger.operation_id, UPDATE);
    assert_eq!(
        pitfall.trigger.missing_variable.as_deref(),
        Some("NodeGroupId")
    );
    assert!(
        pitfall.trigger.resource_state.is_empty(),
        "the named variable is the trigger, not the states of the moment"
    );
    assert_eq!(pitfall.error_pattern.status_code, Some(400));
    assert_eq!(
        pitfall.error_pattern.message_contains,
        "NodeGroupId is required"
    );
    assert!(pitfall.resolution.is_none());
    assert!(
        knowledge.patterns.is_empty(),
        "a failed run makes no pattern"
    );

    // Before the failing call is repeated, the pitfall is found.
    let mut state = ResourceStates::new();
    state.insert("cluster".into(), "ACTIVE".into());
    let queries = Queries::new(&knowledge);
    let warnings = queries.check_pitfalls(UPDATE, &state, &["cluster_id".into()]);
    assert_eq!(warnings.len(), 1);
    assert_eq!(
        queries
            .check_pitfalls(UPDATE, &ResourceStates::new(), &["cluster_id".into()])
            .len(),
        1,
        "whatever the states"
    );
    assert!(
        queries
            .check_pitfalls(UPDATE, &state, &["nodegroup_id".into()])
            .is_empty(),
        "with the id saved, it does not apply"
    );

    // The fixed flow: the update succeeds; the pitfall learns its resolution.
    assert_eq!(setup.run(true).await, RunStatus::Success);
    let knowledge = setup.store.load("tidbx").await.unwrap();
    assert_eq!(knowledge.pitfalls.len(), 1);
    let pitfall = &knowledge.pitfalls[0];
    assert_eq!(
        pitfall.trigger.missing_variable.as_deref(),
        Some("nodegroup_id")
    );
    let resolution = pitfall.resolution.as_ref().expect("resolved");
    assert_eq!(
        resolution.description,
        format!("Save `nodegroup_id` before calling {UPDATE}")
    );
    assert!(
        resolution.fix_steps[0].contains("step `poll`"),
        "{resolution:?}"
    );
    assert_eq!(knowledge.patterns.len(), 1);
    let pattern = &knowledge.patterns[0];
    assert_eq!(pattern.name, "create_cluster_and_poll_and_update_cluster");
    assert_eq!(pattern.success_count, 1);
    assert_eq!(
        pattern
            .trigger
            .precondition
            .as_ref()
            .unwrap()
            .resource_not_exists
            .as_deref(),
        Some("cluster")
    );
    assert_eq!(
        pattern.steps[1].expect.as_ref().unwrap().cel.as_deref(),
        Some("body.state == 'ACTIVE'")
    );
    assert_eq!(
        pattern.steps[2]
            .request_template
            .as_ref()
            .unwrap()
            .path
            .as_deref(),
        Some("/clusters/{cluster_id}")
    );
    let transition = &knowledge.stats.state_transitions["cluster"]["CREATING_to_ACTIVE"];
    assert_eq!(transition.avg_poll_attempts, 3.0);
    assert_eq!(
        transition.avg_duration_seconds, 2.0,
        "two 1 s pauses between three polls"
    );
    assert_eq!(transition.samples, Some(2));

    // Repeats count, they do not copy.
    assert_eq!(setup.run(true).await, RunStatus::Success);
    let knowledge = setup.store.load("tidbx").await.unwrap();
    assert_eq!(knowledge.patterns.len(), 1);
    assert_eq!(knowledge.patterns[0].success_count, 2);
    assert_eq!(knowledge.stats.operations[UPDATE].total_attempts, 3);
    assert_eq!(knowledge.stats.operations[UPDATE].successes, 2);
    assert_eq!(knowledge.stats.operations[GET].total_attempts, 9);
    assert_eq!(knowledge.pitfalls[0].occurrence_count, 1);

    // With two successes the pattern is offered for the intent; not once a cluster exists.
    let queries = Queries::new(&knowledge);
    let found = queries
        .find_matching_pattern("create a cluster and scale it", &ResourceStates::new())
        .expect("a match");
    assert_eq!(found.pattern.id, knowledge.patterns[0].id);
    assert!(
        found.confidence > 0.7 && found.confidence < 1.0,
        "{}",
        found.confidence
    );
    assert!(
        queries
            .find_matching_pattern("create a cluster", &ResourceStates::new())
            .is_some(),
        "half the keywords are enough"
    );
    assert!(
        queries
            .find_matching_pattern("create a cluster", &state)
            .is_none(),
        "not once a cluster exists"
    );
    let expected = queries
        .expected_poll("cluster", "CREATING", "ACTIVE")
        .unwrap();
    assert_eq!((expected.poll_attempts, expected.samples), (3.0, 3));
    assert_eq!(queries.settles_after("cluster", "CREATING"), Some("ACTIVE"));
    assert_eq!(queries.settles_after("cluster", "DELETING"), None);
    assert_eq!(queries.settles_after("branch", "CREATING"), None);
}

#[test]
fn a_pitfall_names_the_field_a_framework_error_body_says_is_missing() {
    let cases = [
        (
            r#"HTTP 422: {"detail":[{"loc":["body","title"],"msg":"field required","type":"value_error.missing"}]}"#,
            "createPost_without_title",
            "title",
        ),
        (
            r#"HTTP 400: {"type":"about:blank","title":"Bad Request","status":400,"detail":"missing required field: blogText"}"#,
            "createPost_without_blog_text",
            "blogText",
        ),
    ];
    for (error, name, missing) in cases {
        let mut knowledge = Knowledge::new();
        let mut observation = RunObservation::default();
        observation.goal = "create a post".to_owned();
        let mut attempt = AttemptSeen::new("createPost", false, 5.0);
        attempt.error = Some(error.to_owned());
        observation.attempts.push(attempt);
        let mut outcome = StepSeen::new("call", "createPost", false);
        outcome.error = Some(error.to_owned());
        observation.outcomes.push(outcome);
        knowledge.learn(&observation);
        let pitfall = &knowledge.pitfalls[0];
        assert_eq!(
            pitfall.trigger.missing_variable.as_deref(),
            Some(missing),
            "{error}"
        );
        assert!(
            pitfall
                .name
                .ends_with(name.trim_start_matches("createPost")),
            "{}",
            pitfall.name
        );
    }
}

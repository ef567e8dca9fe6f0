//! Knowledge-first planning: a learned pattern that fits the goal is the plan, and the model
//! is not asked; a pattern that fits part of the goal, or too weakly, leaves it to the model.

use std::sync::Arc;

use chrono::Utc;
use wayline_core::{MemoryCatalog, RunStatus};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};
use wayline_explorer::testing::{self as simulation, calls};
use wayline_knowledge::Knowledge;
use wayline_knowledge::model::PatternsFile;
use wayline_planner::plan::{PlanSource, Planner};
use wayline_planner::recall::{Recall, recall};
use wayline_planner::testing::ScriptedModel;
use wayline_registry::openapi::ApiSpec;
use wayline_testkit::fixture;

/// The fixture's patterns, confirmed just now (so their strength has not faded), polling
/// without a pause (the simulation is quick).
fn knowledge() -> Option<Knowledge> {
    let text = std::fs::read_to_string(fixture("tidbcloud/knowledge-patterns.yaml")?).unwrap();
    let file: PatternsFile = serde_norway::from_str(&text).unwrap();
    let mut knowledge = Knowledge::new();
    knowledge.patterns = file.patterns;
    for pattern in &mut knowledge.patterns {
        pattern.last_used = Some(Utc::now());
        for step in &mut pattern.steps {
            step.delay_after = step.delay_after.map(|_| 0);
        }
    }
    Some(knowledge)
}

fn catalog(base: &str) -> Option<Arc<MemoryCatalog>> {
    let spec = ApiSpec::load(&fixture("tidbcloud/tidbx-openapi.json")?).unwrap();
    Some(Arc::new(MemoryCatalog::from_tools(spec.tools(Some(base)))))
}

#[tokio::test]
async fn a_fitting_pattern_is_the_plan_and_the_model_is_not_asked() {
    let (Some(knowledge), Some(catalog)) = (knowledge(), catalog("http://api.test/v1beta1")) else {
        return;
    };
    let model = Arc::new(ScriptedModel::new(Vec::<String>::new()));
    let planner = Planner::new(model.clone(), catalog).knowledge(Arc::new(knowledge));
    let plan = planner
        .plan("Create a cluster and wait until it is ACTIVE", &[])
        .await
        .unwrap();
    assert!(model.requests().is_empty());
    assert_eq!(plan.answers, 0);
    let PlanSource::Knowledge {
        pattern_id,
        confidence,
        ..
    } = &plan.source
    else {
        panic!("{:?}", plan.source);
    };
    assert_eq!(pattern_id, "pattern_001");
    // (15 + 1) / (15 + 2 + 2), at full strength, every trigger keyword present.
    assert!((confidence - 16.0 / 19.0).abs() < 1e-3, "{confidence}");
    assert!(plan.source.to_string().contains("no model was asked"));
    let workflow = &plan.workflow;
    let ids: Vec<&str> = workflow.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["create_cluster", "get_cluster"]);
    // The id saved by the create feeds the read; the read polls the pattern's condition.
    let get = &workflow.steps[1];
    assert_eq!(get.input_mapping["clusterId"], "create_cluster.cluster_1");
    assert_eq!(get.poll.as_ref().unwrap().until, "body.state == 'ACTIVE'");
    assert_eq!(get.poll.as_ref().unwrap().max_attempts, 121);
    assert_eq!(workflow.steps[0].outputs["cluster_1"], "body.clusterId");
    // What the create needs and nothing saved provides is a run input.
    assert!(workflow.inputs.contains_key("displayName"), "{workflow:#?}");
    assert!(plan.view.contains("create_cluster"), "{}", plan.view);

    // A `1` says nothing the pattern does not.
    let plan = planner.plan("create 1 cluster", &[]).await.unwrap();
    assert!(
        matches!(plan.source, PlanSource::Knowledge { .. }),
        "{:?}",
        plan.notes
    );
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_pattern_for_part_of_the_goal_or_too_weak_leaves_it_to_the_model() {
    let (Some(knowledge), Some(catalog)) = (knowledge(), catalog("http://api.test/v1beta1")) else {
        return;
    };
    let answer = r#"{"id": "w", "name": "W", "inputs": {"clusterId": {}}, "steps": [
      {"id": "get", "tool_id": "ClusterService_GetCluster", "input_mapping": {"clusterId": "$input.clusterId"}}]}"#;
    // "branch" is not something the create-a-cluster pattern does.
    let model = Arc::new(ScriptedModel::new([answer.to_owned()]));
    let planner =
        Planner::new(model.clone(), catalog.clone()).knowledge(Arc::new(knowledge.clone()));
    let plan = planner
        .plan("create a cluster and a branch on it", &[])
        .await
        .unwrap();
    assert_eq!(plan.source, PlanSource::Model);
    assert_eq!(model.requests().len(), 1);
    assert!(
        plan.notes.iter().any(|note| note.contains("`branch`")),
        "{:?}",
        plan.notes
    );

    // Numbers count: three clusters are not what the one-cluster pattern makes.
    let model = Arc::new(ScriptedModel::new([answer.to_owned()]));
    let planner =
        Planner::new(model.clone(), catalog.clone()).knowledge(Arc::new(knowledge.clone()));
    let plan = planner.plan("create 3 clusters", &[]).await.unwrap();
    assert_eq!(plan.source, PlanSource::Model);
    assert!(
        plan.notes.iter().any(|note| note.contains("`3`")),
        "{:?}",
        plan.notes
    );

    // A pattern that also deletes is no plan for a goal that only creates.
    let mut deleting = knowledge.clone();
    let mut delete = deleting.patterns[0].steps[1].clone();
    delete.operation_id = "ClusterService_DeleteCluster".to_owned();
    delete.expect = None;
    deleting.patterns[0].steps.push(delete);
    let model = Arc::new(ScriptedModel::new([answer.to_owned()]));
    let planner = Planner::new(model.clone(), catalog.clone()).knowledge(Arc::new(deleting));
    let plan = planner.plan("create a cluster", &[]).await.unwrap();
    assert_eq!(plan.source, PlanSource::Model);
    assert!(
        plan.notes
            .iter()
            .any(|note| note.contains("delete (`ClusterService_DeleteCluster`)")),
        "{:?}",
        plan.notes
    );

    // A pattern that failed as often as it worked is below the threshold.
    let mut weak = knowledge;
    weak.patterns[0].failure_count = weak.patterns[0].success_count;
    let model = Arc::new(ScriptedModel::new([answer.to_owned()]));
    let planner = Planner::new(model.clone(), catalog).knowledge(Arc::new(weak));
    let plan = planner.plan("create a cluster", &[]).await.unwrap();
    assert_eq!(plan.source, PlanSource::Model);
    assert!(
        plan.notes
            .iter()
            .any(|note| note.contains("below the threshold")),
        "{:?}",
        plan.notes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_from_knowledge_runs_green_against_the_simulation() {
    let Some(knowledge) = knowledge() else { return };
    let (base, sim) = simulation::start().await;
    let Some(catalog) = catalog(&format!("{base}/v1beta1")) else {
        return;
    };
    let model = Arc::new(ScriptedModel::new(Vec::<String>::new()));
    let planner = Planner::new(model, catalog.clone()).knowledge(Arc::new(knowledge));
    let plan = planner
        .plan("create a cluster", &["displayName".to_owned()])
        .await
        .unwrap();
    let mut options = RunOptions::new().input("displayName", "from-knowledge");
    for name in plan.workflow.inputs.keys() {
        if name != "displayName" {
            options = options.input(name.clone(), serde_json::json!({"name": "regions/x"}));
        }
    }
    let engine = Engine::builder(catalog)
        .transport(Arc::new(ReqwestTransport::new().unwrap()))
        .build();
    let run = engine.run(&plan.workflow, options).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert_eq!(calls(&sim, "POST", "/clusters"), 1);
    // The read polled until ACTIVE and saved the node group the pattern names.
    assert_eq!(
        calls(&sim, "GET", "/clusters/{id}"),
        simulation::POLLS as usize + 1
    );
    assert_eq!(run.step_results[1].output_data["nodegroup_1"], "ng-1");
}

/// A blog API's tools: posts with an integer `id`, read and deleted at `/posts/{id}`.
fn blog_catalog(base: &str) -> Arc<MemoryCatalog> {
    let post = serde_json::json!({"type": "object", "required": ["title"], "properties": {
        "id": {"type": "integer", "readOnly": true}, "title": {"type": "string"}}});
    let one = serde_json::json!({"200": {"description": "ok", "content": {"application/json": {"schema": post}}}});
    let spec = serde_json::json!({
        "openapi": "3.0.3",
        "servers": [{"url": base}],
        "paths": {
            "/posts": {"post": {"operationId": "createPost", "responses": one,
                "requestBody": {"required": true, "content": {"application/json": {"schema": post}}}}},
            "/posts/{id}": {"get": {"operationId": "getPost", "responses": one,
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}]}}
        }
    });
    let spec = ApiSpec::parse(&spec.to_string(), std::path::Path::new("blog.json")).unwrap();
    Arc::new(MemoryCatalog::from_tools(spec.tools(None)))
}

/// What one explorer session that reached `goal` teaches: its steps, how each request was
/// made, and the id the create saved.
fn learned_once(goal: &str) -> Knowledge {
    use wayline_knowledge::learn::RunObservation;
    use wayline_knowledge::model::{PatternStep, RequestTemplate, SaveRule};
    let mut create = PatternStep::default();
    create.operation_id = "createPost".into();
    let mut template = RequestTemplate::default();
    template.body_keys = vec!["title".into()];
    create.request_template = Some(template);
    let mut save = SaveRule::default();
    save.key = "post_1".into();
    save.eval = "body.id".into();
    create.save.push(save);
    let mut read = PatternStep::default();
    read.operation_id = "getPost".into();
    let mut template = RequestTemplate::default();
    template.path_params = vec!["id".into()];
    read.request_template = Some(template);
    let mut observation = RunObservation::default();
    observation.goal = goal.to_owned();
    observation.succeeded = true;
    observation.steps = vec![create, read];
    let mut knowledge = Knowledge::new();
    knowledge.learn(&observation);
    knowledge
}

#[tokio::test]
async fn the_goal_a_pattern_was_learned_from_finds_it_and_links_the_id() {
    let goal = "create a post and read it back";
    let server = MockServer::start(|request| match (request.method.as_str(), request.path()) {
        ("POST", "/posts") => Reply::json(201, serde_json::json!({"id": 7, "title": "hello"})),
        ("GET", "/posts/7") => Reply::json(200, serde_json::json!({"id": 7, "title": "hello"})),
        _ => Reply::json(404, serde_json::json!({})),
    })
    .await
    .unwrap();
    let catalog = blog_catalog(&server.url(""));
    let model = Arc::new(ScriptedModel::new(Vec::<String>::new()));
    let planner =
        Planner::new(model.clone(), catalog.clone()).knowledge(Arc::new(learned_once(goal)));
    // Learned once: the very goal finds it (in other words, it would need more successes).
    let plan = planner
        .plan("Create a post, and read it back!", &[])
        .await
        .unwrap();
    assert!(model.requests().is_empty(), "no model was asked");
    assert!(
        matches!(plan.source, PlanSource::Knowledge { .. }),
        "{:?}",
        plan.source
    );
    let read = plan.workflow.step("get_post").unwrap();
    assert_eq!(
        read.input_mapping["id"], "create_post.post_1",
        "{:#?}",
        plan.workflow
    );
    assert!(
        !plan.workflow.inputs.contains_key("id"),
        "no new input is asked for"
    );
    // It runs: the read gets the id the create answered.
    let engine = Engine::builder(catalog)
        .transport(Arc::new(ReqwestTransport::new().unwrap()))
        .build();
    let run = engine
        .run(&plan.workflow, RunOptions::new().input("title", "hello"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|request| format!("{} {}", request.method, request.path()))
        .collect();
    assert_eq!(paths, ["POST /posts", "GET /posts/7"]);

    // Another wording of it is no exact goal: one success is too little.
    let model = Arc::new(ScriptedModel::new(Vec::<String>::new()));
    let planner =
        Planner::new(model, blog_catalog("http://x")).knowledge(Arc::new(learned_once(goal)));
    assert!(planner.plan("create a post", &[]).await.is_err());
}

#[test]
fn a_path_parameter_takes_the_id_of_its_own_collections_resource() {
    use wayline_knowledge::learn::RunObservation;
    use wayline_knowledge::model::{PatternStep, SaveRule};
    let spec = serde_json::json!({
        "openapi": "3.0.3",
        "paths": {
            "/users": {"post": {"operationId": "createUser", "responses": {"201": {"description": "ok"}}}},
            "/posts": {"post": {"operationId": "createPost", "responses": {"201": {"description": "ok"}}}},
            "/users/{id}": {"get": {"operationId": "getUser", "responses": {"200": {"description": "ok"}},
                "parameters": [{"name": "id", "in": "path", "required": true}]}}
        }
    });
    let spec = ApiSpec::parse(&spec.to_string(), std::path::Path::new("s.json")).unwrap();
    let catalog = Arc::new(MemoryCatalog::from_tools(spec.tools(Some("http://x"))));
    let step = |operation: &str, saved: Option<&str>| {
        let mut step = PatternStep::default();
        step.operation_id = operation.into();
        if let Some(key) = saved {
            let mut rule = SaveRule::default();
            rule.key = key.into();
            rule.eval = "body.id".into();
            step.save.push(rule);
        }
        step
    };
    let goal = "create a user, create a post, read the user";
    let mut observation = RunObservation::default();
    observation.goal = goal.to_owned();
    observation.succeeded = true;
    observation.steps = vec![
        step("createUser", Some("user_1")),
        step("createPost", Some("post_1")),
        step("getUser", None),
    ];
    let mut knowledge = Knowledge::new();
    knowledge.learn(&observation);
    let Recall::Found(found) = recall(&knowledge, Utc::now(), goal, &[], catalog.as_ref(), 0.8)
    else {
        panic!("the goal it was learned from finds it");
    };
    // The post's id was saved last, as `id` too; the user's is the one `/users/{id}` takes.
    assert_eq!(
        found.workflow.step("get_user").unwrap().input_mapping["id"],
        "create_user.user_1"
    );
}

//! The explorer against the loopback simulation: it reaches "create a cluster, create a
//! branch on it, delete both" in auto mode, its output converts to a workflow that runs
//! green, a second session asks fewer questions with more confidence and is warned of the
//! pitfall the first one hit, and a stopped session resumes without repeating a step.

use std::sync::Arc;

use wayline_core::intervene::QuestionKind;
use wayline_core::{MemoryCatalog, RunStatus};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};
use wayline_explorer::ScriptedInterventor;
use wayline_explorer::exploration::ExplorationStatus;
use wayline_explorer::explore::Explorer;
use wayline_explorer::sut::SutConfig;
use wayline_knowledge::{KnowledgeStore, MemoryKnowledge};
use wayline_registry::openapi::ApiSpec;
use wayline_testkit::fixture;

use wayline_explorer::testing::{self as simulation, calls, count};

const TARGET: &str = "create a cluster, create a branch on it, delete both";
const REGION: &str = r#"{"region": {"name": "regions/aws-us-east-1"}}"#;

fn sut(base: &str, threshold: f64) -> SutConfig {
    SutConfig::parse(
        &format!(
            "name: sim\nconnection: {{host: '{base}', base_path: /v1beta1}}\n\
             preset_variables: {{displayName: e2e}}\n\
             execution:\n  mode: auto\n  auto_mode:\n    confidence_threshold: {threshold}\n    polling: {{max_retries: 5, delay_seconds: 0}}\n"
        ),
        "sim.yaml",
        &|_| None,
    )
    .unwrap()
}

fn answers() -> Arc<ScriptedInterventor> {
    Arc::new(
        ScriptedInterventor::parse(
            &format!(
                "answers:\n  - {{kind: error, answer: {{text: '{REGION}'}}}}\n  - {{kind: pitfall, answer: {{text: '{REGION}'}}}}\n  - {{kind: choose, answer: {{choose: 0}}}}\ndefault: abort\n"
            ),
            "answers.yaml",
        )
        .unwrap(),
    )
}

/// A simulation, the fixture spec, a session directory, a transport, and a SUT config (auto,
/// threshold 0.7) that knows a region.
struct Setup {
    base: String,
    sim: simulation::Shared,
    spec: ApiSpec,
    dir: tempfile::TempDir,
    transport: Arc<ReqwestTransport>,
    config: SutConfig,
}

/// The fixture spec as an under-declared description would have it: `region` not marked
/// required. The API still refuses a cluster without one (400), and these tests are about what
/// the explorer learns from that refusal; with the complete spec it asks before the call
/// (`a_required_field_nothing_gives_is_asked_for_before_the_call`).
pub(crate) fn region_undeclared(mut spec: ApiSpec) -> ApiSpec {
    for parameter in spec
        .operations
        .iter_mut()
        .flat_map(|operation| operation.parameters.iter_mut())
        .filter(|parameter| parameter.name == "region")
    {
        parameter.required = false;
    }
    spec
}

async fn setup() -> Option<Setup> {
    let spec_path = fixture("tidbcloud/tidbx-openapi.json")?;
    let (base, sim) = simulation::start().await;
    let mut config = sut(&base, 0.7);
    config
        .preset_variables
        .insert("region".into(), serde_json::json!({"name": "regions/x"}));
    Some(Setup {
        spec: region_undeclared(ApiSpec::load(&spec_path).unwrap()),
        dir: tempfile::tempdir().unwrap(),
        transport: Arc::new(ReqwestTransport::new().unwrap()),
        base,
        sim,
        config,
    })
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_reaches_the_target_learns_and_asks_less_the_second_time() {
    let Some(spec_path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let (base, sim) = simulation::start().await;
    let spec = region_undeclared(ApiSpec::load(&spec_path).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn KnowledgeStore> = Arc::new(MemoryKnowledge::new());
    let transport = Arc::new(ReqwestTransport::new().unwrap());
    // The SUT's threshold is high: without knowledge, each step is asked about.
    let first_answers = answers();
    let explorer = Explorer::new(
        sut(&base, 0.9),
        spec.clone(),
        transport.clone(),
        first_answers.clone(),
    )
    .unwrap()
    .knowledge(Arc::clone(&store))
    .session_dir(dir.path());
    let mut first = explorer.start(TARGET).unwrap();
    explorer.run(&mut first).await.unwrap();
    assert_eq!(
        first.session.status,
        ExplorationStatus::Completed,
        "{first:#?}"
    );
    assert_eq!(
        first.confirmed_operations(),
        [
            "ClusterService_CreateCluster",
            "ClusterService_GetCluster",
            "BranchService_CreateBranch",
            "BranchService_GetBranch",
            "BranchService_DeleteBranch",
            "ClusterService_DeleteCluster",
        ]
    );
    // The 400 for the missing region was asked about once, with the fix, and fixed by the
    // answer.
    assert_eq!(count(&sim, 400), 1);
    let error = first_answers
        .asked()
        .into_iter()
        .find(|question| question.kind == QuestionKind::Error)
        .unwrap();
    assert!(
        error.message.contains("suggested fix: give `region`"),
        "{}",
        error.message
    );
    assert_eq!(
        count(&sim, 409),
        0,
        "children were deleted first; no create on a CREATING cluster"
    );
    assert_eq!(first.rejected_steps.len(), 0);
    let first_questions = first.interventions;
    assert!(first_questions >= 6, "{first_questions}");
    // The session is on disk as YAML, with the session format's top-level keys.
    let saved =
        std::fs::read_to_string(dir.path().join(format!("{}.yaml", first.session.id))).unwrap();
    for key in [
        "session:",
        "current_state:",
        "confirmed_steps:",
        "pending_step:",
        "rejected_steps:",
    ] {
        assert!(saved.contains(key), "{key} in {saved}");
    }

    // The output is a reusable scenario that converts into a workflow that runs green.
    let scenario = explorer.output(&first);
    assert_eq!(scenario.steps.len(), 6);
    let (workflow, warnings) = scenario.to_workflow().unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let catalog = Arc::new(MemoryCatalog::from_tools(
        spec.tools(Some(&format!("{base}/v1beta1"))),
    ));
    let report = wayline_graph::validate(&workflow, catalog.as_ref());
    assert!(report.is_valid(), "{:?}", report.errors);
    let before = calls(&sim, "POST", "/clusters");
    let engine = Engine::builder(catalog)
        .transport(transport.clone())
        .build();
    let run = engine.run(&workflow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert_eq!(calls(&sim, "POST", "/clusters"), before + 1);

    // A second session on the same target: the learned pattern runs on its own, and the
    // pitfall (no region) is warned about before the call, not hit.
    let second_answers = answers();
    let explorer = Explorer::new(
        sut(&base, 0.9),
        spec.clone(),
        transport,
        second_answers.clone(),
    )
    .unwrap()
    .knowledge(Arc::clone(&store))
    .session_dir(dir.path());
    let mut second = explorer.start(TARGET).unwrap();
    explorer.run(&mut second).await.unwrap();
    assert_eq!(second.session.status, ExplorationStatus::Completed);
    assert_eq!(count(&sim, 400), 1, "the pitfall was not hit again");
    assert!(
        second_answers
            .asked()
            .iter()
            .any(|question| question.kind == QuestionKind::Pitfall),
        "{:?}",
        second_answers.asked()
    );
    eprintln!(
        "learning: questions {first_questions} -> {}, mean confidence {:.3} -> {:.3}",
        second.interventions,
        mean(&first.confidences),
        mean(&second.confidences)
    );
    assert!(
        second.interventions < first_questions,
        "second session asked {} questions, the first {first_questions}",
        second.interventions
    );
    assert!(
        mean(&second.confidences) > mean(&first.confidences),
        "confidence {:?} then {:?}",
        first.confidences,
        second.confidences
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_session_resumes_without_repeating_a_confirmed_step() {
    let Some(Setup {
        sim,
        spec,
        dir,
        transport,
        config,
        ..
    }) = setup().await
    else {
        return;
    };
    // Stopped after three steps, as a killed process would be.
    let explorer = Explorer::new(config.clone(), spec.clone(), transport.clone(), answers())
        .unwrap()
        .session_dir(dir.path())
        .max_steps(3);
    let mut session = explorer.start(TARGET).unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(session.session.status, ExplorationStatus::InProgress);
    assert_eq!(session.confirmed_steps.len(), 3);
    let id = session.session.id.clone();
    drop(session);
    // A new explorer, from the file alone.
    let explorer = Explorer::new(config, spec, transport, answers())
        .unwrap()
        .session_dir(dir.path());
    let mut resumed = explorer.resume(&id).unwrap();
    explorer.run(&mut resumed).await.unwrap();
    assert_eq!(resumed.session.status, ExplorationStatus::Completed);
    assert_eq!(resumed.confirmed_steps.len(), 6);
    assert_eq!(
        calls(&sim, "POST", "/clusters"),
        1,
        "the cluster was made once"
    );
    assert_eq!(
        calls(&sim, "POST", "/clusters/{id}/branches"),
        1,
        "and the branch once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unclear_targets_are_asked_about_failing_steps_stop_and_secrets_stay_out_of_files() {
    let Some(Setup {
        base,
        sim,
        spec,
        dir,
        transport,
        mut config,
    }) = setup().await
    else {
        return;
    };
    config
        .preset_variables
        .insert("rootPassword".into(), serde_json::json!("hunter2-secret"));
    // A target that names nothing of this API: the explorer asks, and the answer is the
    // target it goes on with.
    let clarify = Arc::new(
        ScriptedInterventor::parse(
            "answers:\n  - {kind: clarify, answer: {text: 'create a cluster, then delete it'}}\ndefault: abort\n",
            "answers.yaml",
        )
        .unwrap(),
    );
    let explorer = Explorer::new(
        config.clone(),
        spec.clone(),
        transport.clone(),
        clarify.clone(),
    )
    .unwrap()
    .session_dir(dir.path());
    let mut session = explorer.start("make everything nice").unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(clarify.asked()[0].kind, QuestionKind::Clarify);
    assert_eq!(session.session.target, "create a cluster, then delete it");
    assert_eq!(
        session.confirmed_operations(),
        [
            "ClusterService_CreateCluster",
            "ClusterService_GetCluster",
            "ClusterService_DeleteCluster"
        ]
    );
    // The root password was sent (it is a preset) but is in no file.
    let saved =
        std::fs::read_to_string(dir.path().join(format!("{}.yaml", session.session.id))).unwrap();
    assert!(!saved.contains("hunter2"), "{saved}");
    let output = explorer.output(&session).to_yaml();
    assert!(!output.contains("hunter2"), "{output}");
    assert!(
        output.contains("{rootPassword}"),
        "a run input instead: {output}"
    );

    // A step that keeps failing (the answer retries without fixing anything) stops the
    // session after three tries instead of looping.
    let stubborn = Arc::new(
        ScriptedInterventor::parse(
            "answers:\n  - {kind: error, answer: yes}\ndefault: abort\n",
            "a.yaml",
        )
        .unwrap(),
    );
    let mut no_region = sut(&base, 0.7);
    no_region.preset_variables.shift_remove("region");
    let explorer = Explorer::new(no_region, spec, transport, stubborn)
        .unwrap()
        .session_dir(dir.path());
    let before = count(&sim, 400);
    let mut failing = explorer.start("create a cluster").unwrap();
    explorer.run(&mut failing).await.unwrap();
    assert_eq!(failing.session.status, ExplorationStatus::Failed);
    assert_eq!(count(&sim, 400), before + 3);
    assert!(
        failing
            .rejected_steps
            .last()
            .unwrap()
            .error
            .contains("failed 3 times"),
        "{:?}",
        failing.rejected_steps
    );

    // A cluster that ends in a failed state ends the wait at once (not after every poll),
    // and the step is a failure a person is asked about.
    let mut doomed = config.clone();
    doomed
        .preset_variables
        .insert("displayName".into(), serde_json::json!("doomed"));
    let told =
        Arc::new(ScriptedInterventor::parse("answers: []\ndefault: abort\n", "a.yaml").unwrap());
    let spec = ApiSpec::load(&fixture("tidbcloud/tidbx-openapi.json").unwrap()).unwrap();
    let explorer = Explorer::new(
        doomed,
        spec,
        Arc::new(ReqwestTransport::new().unwrap()),
        told.clone(),
    )
    .unwrap()
    .session_dir(dir.path());
    let reads = calls(&sim, "GET", "/clusters/{id}");
    let mut session = explorer.start("create a cluster, then delete it").unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(session.session.status, ExplorationStatus::Aborted);
    assert_eq!(
        calls(&sim, "GET", "/clusters/{id}"),
        reads + simulation::POLLS as usize + 1,
        "the poll stopped at DELETED"
    );
    let error = &told.asked()[0];
    assert_eq!(error.kind, QuestionKind::Error);
    assert!(
        error
            .message
            .contains("the cluster reached DELETED, not ACTIVE"),
        "{}",
        error.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suts_command_line_tools_are_steps_too() {
    let Some(Setup {
        spec,
        dir,
        transport,
        mut config,
        ..
    }) = setup().await
    else {
        return;
    };
    let tools = SutConfig::parse(
        "name: x\nconnection: {host: h}\ncli_tools:\n  echo: {description: prints its arguments, common_operations: ['echo hello-from-cli']}\n",
        "tools.yaml",
        &|_| None,
    )
    .unwrap();
    config.cli_tools = tools.cli_tools;
    let explorer = Explorer::new(config, spec, transport, answers())
        .unwrap()
        .session_dir(dir.path());
    let mut session = explorer
        .start("create a cluster, then run echo 'quoted words', run echo")
        .unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    let ran: Vec<&serde_json::Value> = session
        .confirmed_steps
        .iter()
        .filter(|step| step.operation_id == "cli_echo")
        .map(|step| &step.request)
        .collect();
    // The quoted command, then the tool's usual one.
    assert_eq!(ran.len(), 2);
    assert_eq!(ran[0]["args"], serde_json::json!(["quoted", "words"]));
    assert_eq!(ran[1]["args"], serde_json::json!(["hello-from-cli"]));
    let cli = session
        .confirmed_steps
        .iter()
        .find(|step| step.operation_id == "cli_echo")
        .unwrap();
    assert_eq!(
        cli.response["body"]["body"], "quoted words\n",
        "{:?}",
        cli.response
    );
    let output = explorer.output(&session);
    let step = output
        .steps
        .iter()
        .find(|step| step.request_type == "cli")
        .unwrap();
    assert!(
        step.request.contains("\"name\": \"echo\""),
        "{}",
        step.request
    );
    assert!(step.expect.contains("\"exit_code\":0"), "{}", step.expect);
    // A command line always runs the tool itself: another program in it is only an argument.
    let guarded = Explorer::new(
        {
            let mut other = sut("http://127.0.0.1:9", 0.7);
            other.cli_tools = SutConfig::parse(
                "name: x\nconnection: {host: h}\ncli_tools: {echo: {common_operations: ['rm -rf /tmp/nothing']}}\n",
                "t.yaml",
                &|_| None,
            )
            .unwrap()
            .cli_tools;
            other
        },
        ApiSpec::load(&fixture("tidbcloud/tidbx-openapi.json").unwrap()).unwrap(),
        Arc::new(ReqwestTransport::new().unwrap()),
        answers(),
    )
    .unwrap()
    .session_dir(dir.path());
    let mut session = guarded.start("run echo").unwrap();
    guarded.run(&mut session).await.unwrap();
    assert_eq!(session.session.status, ExplorationStatus::Completed);
    let request = &session.confirmed_steps[0].request;
    assert_eq!(request["name"], "echo");
    assert_eq!(
        request["args"],
        serde_json::json!(["rm", "-rf", "/tmp/nothing"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sut_behind_digest_auth_is_explored_with_one_challenge() {
    let Some(spec_path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let (base, sim) = simulation::start_with_digest("pub-key", "priv-key").await;
    let spec = ApiSpec::load(&spec_path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = SutConfig::parse(
        &format!(
            "name: sim\nconnection:\n  host: '{base}'\n  base_path: /v1beta1\n  auth:\n    type: digest\n    env_vars: {{public_key: SIM_PUBLIC_KEY, private_key: SIM_PRIVATE_KEY}}\n\
             preset_variables: {{displayName: e2e, region: {{name: regions/x}}}}\n\
             execution:\n  mode: auto\n  auto_mode: {{polling: {{max_retries: 5, delay_seconds: 0}}}}\n"
        ),
        "sim.yaml",
        &|_| None,
    )
    .unwrap();
    let explore = |password: &'static str| {
        let credentials = config
            .credentials(&move |name| match name {
                "SIM_PUBLIC_KEY" => Some("pub-key".to_owned()),
                "SIM_PRIVATE_KEY" => Some(password.to_owned()),
                _ => None,
            })
            .unwrap();
        let transport = wayline_explorer::auth::sut_transport(
            &credentials,
            Arc::new(ReqwestTransport::new().unwrap()),
        );
        Explorer::new(config.clone(), spec.clone(), transport, answers())
            .unwrap()
            .session_dir(dir.path())
    };
    let explorer = explore("priv-key");
    let mut session = explorer.start("create a cluster, then delete it").unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(count(&sim, 401), 1, "one challenge, then answered at once");
    // A wrong key: refused, asked about as credentials, and the session stops.
    let wrong = explore("not-the-key");
    let mut refused = wrong.start("create a cluster").unwrap();
    wrong.run(&mut refused).await.unwrap();
    assert_eq!(refused.session.status, ExplorationStatus::Aborted);
    assert!(
        refused
            .rejected_steps
            .iter()
            .any(|step| step.user_action.contains("credential")),
        "{:?}",
        refused.rejected_steps
    );
    let saved =
        std::fs::read_to_string(dir.path().join(format!("{}.yaml", refused.session.id))).unwrap();
    assert!(
        !saved.contains("not-the-key") && !saved.contains("priv-key"),
        "{saved}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_field_nothing_gives_is_asked_for_before_the_call() {
    let Some(spec_path) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let (base, sim) = simulation::start().await;
    let spec = ApiSpec::load(&spec_path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let answers = Arc::new(
        ScriptedInterventor::parse(
            &format!(
                "answers:\n  - {{kind: clarify, answer: {{text: '{REGION}'}}}}\ndefault: yes\n"
            ),
            "answers.yaml",
        )
        .unwrap(),
    );
    let explorer = Explorer::new(
        sut(&base, 0.7),
        spec,
        Arc::new(ReqwestTransport::new().unwrap()),
        answers.clone(),
    )
    .unwrap()
    .session_dir(dir.path());
    let mut session = explorer.start("create a cluster").unwrap();
    explorer.run(&mut session).await.unwrap();
    assert_eq!(
        session.session.status,
        ExplorationStatus::Completed,
        "{session:#?}"
    );
    assert_eq!(count(&sim, 400), 0, "no call was sent without the region");
    let asked = answers.asked();
    assert_eq!(asked[0].kind, QuestionKind::Clarify);
    assert!(
        asked[0].message.contains("`region`"),
        "{}",
        asked[0].message
    );
    assert_eq!(asked[0].context["missing"], serde_json::json!(["region"]));
    assert!(
        session.confidences[0] < 0.7,
        "a doomed call is less sure: {:?}",
        session.confidences
    );
    assert_eq!(calls(&sim, "POST", "/clusters"), 1);
}

/// A transport that, before each request, reads the session file and notes the step it says
/// is in flight: the session is saved with its pending step before the step's call.
#[derive(Debug)]
struct SessionWatcher {
    inner: Arc<ReqwestTransport>,
    dir: std::path::PathBuf,
    pending: std::sync::Mutex<Vec<Option<String>>>,
}

#[async_trait::async_trait]
impl wayline_core::Transport for SessionWatcher {
    async fn send(
        &self,
        request: wayline_core::HttpRequest,
    ) -> Result<wayline_core::HttpResponse, wayline_core::TransportError> {
        let saved: Vec<_> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                name.strip_suffix(".yaml").map(str::to_owned)
            })
            .collect();
        assert_eq!(saved.len(), 1, "one session file: {saved:?}");
        let session =
            wayline_explorer::exploration::Exploration::load(&self.dir, &saved[0]).unwrap();
        let operation = session
            .pending_step
            .and_then(|pending| pending["operation_id"].as_str().map(str::to_owned));
        self.pending.lock().unwrap().push(operation);
        self.inner.send(request).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_saved_with_its_pending_step_before_each_call() {
    let Some(Setup {
        spec,
        dir,
        transport,
        config,
        ..
    }) = setup().await
    else {
        return;
    };
    let watcher = Arc::new(SessionWatcher {
        inner: transport,
        dir: dir.path().to_owned(),
        pending: std::sync::Mutex::default(),
    });
    let explorer = Explorer::new(config, spec, watcher.clone(), answers())
        .unwrap()
        .session_dir(dir.path())
        .max_steps(3);
    let mut session = explorer.start(TARGET).unwrap();
    explorer.run(&mut session).await.unwrap();
    let pending = watcher.pending.lock().unwrap().clone();
    assert!(!pending.is_empty(), "the explorer sent requests");
    assert!(
        pending.iter().all(Option::is_some),
        "every call was preceded by a save naming its step: {pending:?}"
    );
    assert_eq!(
        session.pending_step, None,
        "no step is pending once they all ran"
    );
}

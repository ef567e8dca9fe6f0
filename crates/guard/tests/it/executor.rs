//! The guard as the executor's step policy: a destructive step during gathering is blocked in
//! blocking mode (the run record says why) and runs with a warning in guidance mode.

use std::sync::Arc;

use serde_json::json;
use wayline_core::document::{Format, parse};
use wayline_core::{MemoryCatalog, RunStatus, StepStatus, ToolDefinition, Workflow};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, RunOptions};
use wayline_guard::{Guard, GuardPolicy, Mode, Policy};

fn flow() -> Workflow {
    parse(
        "id: fix\nname: Fix it\nsteps:\n  - {id: look, tool_id: get_pods, input_mapping: {namespace: payments}}\n  - {id: wipe, tool_id: delete_pods, input_mapping: {namespace: payments, after: look.count}}\n",
        Format::Yaml,
        "fix.yaml",
    )
    .unwrap()
}

async fn run(mode: Mode) -> (wayline_core::Run, GuardPolicy, MockServer) {
    let server = MockServer::start(|_| Reply::json(200, json!({"count": 3})))
        .await
        .unwrap();
    let mut delete = ToolDefinition::new("delete_pods", server.url(""));
    delete.method = "DELETE".into();
    delete.path = "/pods".into();
    let mut get = ToolDefinition::new("get_pods", server.url(""));
    get.path = "/pods".into();
    let guard = Guard::new(Arc::new(Policy::default_policy()), mode);
    let session = guard.start("run-session", chrono::Utc::now());
    let policy = GuardPolicy::new(guard, session);
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([get, delete])))
        .policy(Arc::new(policy.clone()))
        .build();
    let run = engine.run(&flow(), RunOptions::new()).await.unwrap();
    (run, policy, server)
}

#[tokio::test]
async fn a_destructive_step_during_gathering_is_blocked_with_the_reason() {
    let (run, policy, server) = run(Mode::Blocking).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(
        run.step_results[0].status,
        StepStatus::Success,
        "reading is fine"
    );
    let wipe = &run.step_results[1];
    assert_eq!(wipe.status, StepStatus::Failed);
    let error = wipe.error.as_deref().unwrap();
    assert!(error.starts_with("blocked by policy: "), "{error}");
    assert!(error.contains("bypassing_diagnostics"), "{error}");
    assert_eq!(server.hits(), 1, "the DELETE was never sent");
    let session = policy.session();
    assert_eq!(session.history.len(), 2, "{:#?}", session.history);
    assert_eq!(session.history[1].decision, "block");
    assert_eq!(session.history[1].domain.as_deref(), Some("payments"));
}

#[tokio::test]
async fn in_guidance_mode_it_runs_with_a_warning() {
    let (run, _, server) = run(Mode::Guidance).await;
    assert_eq!(run.status, RunStatus::Success);
    let wipe = &run.step_results[1];
    assert!(
        wipe.warnings
            .iter()
            .any(|warning| warning.starts_with("policy: ")
                && warning.contains("bypassing_diagnostics")),
        "{:?}",
        wipe.warnings
    );
    assert_eq!(server.hits(), 2);
}

//! Decision steps: a scripted decider's choice picks the branch that runs (the others are
//! skipped), an answer outside the choices fails the step clearly, the decider sees the
//! dependencies' outputs with secrets masked (the tool configs' and secret-named members),
//! and an engine without a decider refuses the workflow.

use std::sync::Arc;

use wayline_core::{
    Decision, HttpResponse, MemoryCatalog, MemorySecrets, RunStatus, ScriptedDecider, Secret,
    StepStatus, ToolConfig, ToolDefinition,
};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::{Engine, RunOptions};

use crate::support::workflow;

const TOKEN: &str = "tok-9f8e7d6c5b4a";

const FLOW: &str = r#"
id: scale
name: Scale when busy
steps:
  - {id: load, tool_id: metrics}
  - id: pick
    kind: decision
    decision_prompt: "Is the service busy enough to add a replica?"
    choices: [scale_up, keep]
    input_mapping: {cpu: load.cpu}
  - {id: scale_up, tool_id: scale, when: "steps.pick.choice == 'scale_up'"}
  - {id: keep, tool_id: note, when: "steps.pick.choice == 'keep'"}
edges:
  - {from_step_id: pick, to_step_id: scale_up}
  - {from_step_id: pick, to_step_id: keep}
"#;

/// An engine over `metrics` (answers the CPU load and, carelessly, the token it was sent),
/// `scale` and `note`, with `decider`.
fn engine(decider: Arc<ScriptedDecider>) -> Engine {
    let transport = ScriptedTransport::new().with_fallback(|request| {
        Ok(match request.url.as_str() {
            "http://api.test/metrics" => {
                HttpResponse::new(200, format!(r#"{{"cpu": 0.93, "echo": "{TOKEN}", "session": {{"access_token": "fresh-1234"}}}}"#))
            }
            _ => HttpResponse::new(200, "{}"),
        })
    });
    let mut metrics = ToolDefinition::new("metrics", "http://api.test");
    metrics.path = "/metrics".to_owned();
    let mut secrets = MemorySecrets::new();
    let mut config = ToolConfig::default();
    config.auth_token = Some(Secret::new(TOKEN));
    secrets.insert("metrics", config);
    let catalog = MemoryCatalog::from_tools([
        metrics,
        ToolDefinition::new("scale", "http://api.test/scale"),
        ToolDefinition::new("note", "http://api.test/note"),
    ]);
    Engine::builder(Arc::new(catalog))
        .transport(Arc::new(transport))
        .secrets(Arc::new(secrets))
        .decider(decider)
        .build()
}

fn status(run: &wayline_core::Run, id: &str) -> StepStatus {
    run.step_results
        .iter()
        .find(|result| result.step_id == id)
        .unwrap()
        .status
}

#[tokio::test]
async fn each_choice_takes_its_branch_and_is_recorded_with_its_reason() {
    for (choice, runs, skipped) in [
        ("scale_up", "scale_up", "keep"),
        ("keep", "keep", "scale_up"),
    ] {
        let decider = Arc::new(ScriptedDecider::new([Decision::new(
            choice,
            format!("because {choice}"),
        )]));
        let run = engine(decider.clone())
            .run(&workflow(FLOW), RunOptions::new())
            .await
            .unwrap();
        assert_eq!(run.status, RunStatus::Success, "{run:#?}");
        assert_eq!(status(&run, runs), StepStatus::Success);
        assert_eq!(status(&run, skipped), StepStatus::Skipped);
        let pick = run
            .step_results
            .iter()
            .find(|r| r.step_id == "pick")
            .unwrap();
        assert_eq!(pick.output_data["choice"], choice);
        assert_eq!(pick.output_data["reason"], format!("because {choice}"));

        // One scoped question: the prompt, the choices, the inputs and what `load` gave,
        // the token masked.
        let asked = decider.asked();
        assert_eq!(asked.len(), 1);
        let request = &asked[0];
        assert_eq!(request.step_id, "pick");
        assert_eq!(request.choices, ["scale_up", "keep"]);
        assert_eq!(request.inputs["cpu"], 0.93);
        assert_eq!(request.context["load"]["cpu"], 0.93);
        let seen = format!("{request:?}");
        assert!(!seen.contains(TOKEN), "{seen}");
        assert_eq!(request.context["load"]["echo"], "***");
        // A token the run obtained is masked by its name.
        assert_eq!(request.context["load"]["session"]["access_token"], "***");
        assert!(!seen.contains("fresh-1234"), "{seen}");
    }
}

#[tokio::test]
async fn an_answer_outside_the_choices_fails_the_step_and_nothing_is_guessed() {
    let decider = Arc::new(ScriptedDecider::new([Decision::new(
        "scale_down",
        "why not",
    )]));
    let run = engine(decider)
        .run(&workflow(FLOW), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let pick = run
        .step_results
        .iter()
        .find(|r| r.step_id == "pick")
        .unwrap();
    assert_eq!(pick.status, StepStatus::Failed);
    let error = pick.error.as_deref().unwrap();
    assert!(error.contains("`scale_down`"), "{error}");
    assert!(error.contains("`scale_up`, `keep`"), "{error}");
    assert_eq!(status(&run, "scale_up"), StepStatus::Skipped);
    assert_eq!(status(&run, "keep"), StepStatus::Skipped);
}

#[tokio::test]
async fn a_decider_with_no_answer_fails_the_step_with_its_reason() {
    let decider = Arc::new(ScriptedDecider::new([]));
    let run = engine(decider)
        .run(&workflow(FLOW), RunOptions::new())
        .await
        .unwrap();
    let pick = run
        .step_results
        .iter()
        .find(|r| r.step_id == "pick")
        .unwrap();
    assert_eq!(pick.status, StepStatus::Failed);
    assert!(
        pick.error.as_deref().unwrap().contains("no answers left"),
        "{:?}",
        pick.error
    );
}

#[tokio::test]
async fn an_engine_without_a_decider_refuses_a_decision_step() {
    let catalog = MemoryCatalog::from_tools([
        ToolDefinition::new("metrics", "http://api.test/metrics"),
        ToolDefinition::new("scale", "http://api.test/scale"),
        ToolDefinition::new("note", "http://api.test/note"),
    ]);
    let engine = Engine::builder(Arc::new(catalog))
        .transport(Arc::new(ScriptedTransport::new()))
        .build();
    let error = engine
        .run(&workflow(FLOW), RunOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("decider"), "{error}");
}

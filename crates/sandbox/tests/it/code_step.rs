//! A workflow with `code` steps, end to end: the engine hands each step's inputs to a
//! `SandboxCodeRunner`, which runs the tool's Python in a fresh sandbox (local, or a Bay
//! reached over HTTP) and returns `result` as the step's output.

use std::sync::Arc;

use serde_json::json;
use wayline_core::document::{Format, parse};
use wayline_core::{MemoryCatalog, RunStatus, StepStatus, ToolDefinition, Workflow};
use wayline_executor::{Engine, RunOptions};
use wayline_sandbox::{CodeRouter, SandboxCodeRunner};

use crate::common::{Via, python_available, target};

const STATS: &str = "id: stats\nname: Stats\nkind: code\ncode:\n  source: |\n    values = inputs['values']\n    print('summing', len(values))\n    result = {'total': sum(values), 'n': len(values)}\n";
const DOUBLE: &str =
    "id: double\nname: Double\nkind: code\ncode:\n  source: |\n    result = inputs['x'] * 2\n";
const BROKEN: &str = "id: broken\nname: Broken\nkind: code\ncode:\n  source: |\n    def f(d):\n        return d['missing']\n    result = f({})\n";

fn catalog() -> Arc<MemoryCatalog> {
    Arc::new(MemoryCatalog::from_tools(
        [STATS, DOUBLE, BROKEN]
            .iter()
            .map(|yaml| parse::<ToolDefinition>(yaml, Format::Yaml, "tool.yaml").unwrap()),
    ))
}

fn flow(yaml: &str) -> Workflow {
    parse(yaml, Format::Yaml, "workflow.yaml").unwrap()
}

const CHAIN: &str = "id: w\nname: W\nsteps:\n\
  - {id: stats, tool_id: stats, kind: code, input_mapping: {values: $input.values}}\n\
  - {id: double, tool_id: double, kind: code, input_mapping: {x: stats.total}, outputs: {doubled: body}}\n";

both!(a_workflow_of_code_steps_runs_end_to_end);

async fn a_workflow_of_code_steps_runs_end_to_end(via: Via) {
    if !python_available() {
        return;
    }
    let target = target(via).await;
    let runner = SandboxCodeRunner::new(target.provider.clone());
    let engine = Engine::builder(catalog())
        .code_runner(Arc::new(runner))
        .build();
    let run = engine
        .run(
            &flow(CHAIN),
            RunOptions::new().input("values", json!([1, 2, 3.5])),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert_eq!(
        run.step_results[0].output_data,
        json!({"total": 6.5, "n": 3})
    );
    assert_eq!(run.step_results[1].output_data, json!({"doubled": 13.0}));
    // Each step had its own sandbox, deleted afterwards.
    let left = target.provider.list(&Default::default()).await.unwrap();
    assert!(left.items.is_empty(), "{left:?}");

    let failing = engine
        .run(
            &flow("id: f\nname: F\nsteps:\n  - {id: broken, tool_id: broken, kind: code}\n"),
            RunOptions::new(),
        )
        .await
        .unwrap();
    let result = &failing.step_results[0];
    assert_eq!(
        (failing.status, result.status),
        (RunStatus::Failed, StepStatus::Failed)
    );
    assert_eq!(result.attempts, 1, "code that raises is not retried");
    let error = result.error.as_deref().unwrap();
    assert!(error.contains("KeyError: 'missing'"), "{error}");
    assert!(
        error.contains("line 2, in f"),
        "the code's own line numbers: {error}"
    );
}

#[tokio::test]
async fn without_a_runner_a_code_step_is_refused_before_anything_runs() {
    let engine = Engine::builder(catalog()).build();
    let error = engine.prepare(&flow(CHAIN)).unwrap_err().to_string();
    assert!(error.contains("code steps need a code runner"), "{error}");
    // A code step must call a code tool.
    let http = Arc::new(MemoryCatalog::from_tools([ToolDefinition::new(
        "geo",
        "http://127.0.0.1:9",
    )]));
    let engine = Engine::builder(http)
        .code_runner(Arc::new(CodeRouter::new(Arc::new(SandboxCodeRunner::new(
            target(Via::Local).await.provider,
        )))))
        .build();
    let error = engine
        .prepare(&flow(
            "id: w\nname: W\nsteps:\n  - {id: g, tool_id: geo, kind: code}\n",
        ))
        .unwrap_err()
        .to_string();
    assert!(error.contains("`geo` is not one"), "{error}");
}

//! `cli` tools: a subprocess without a shell. These use real processes and real time (a
//! subprocess cannot run on tokio's paused clock), kept short.

use std::sync::Arc;

use serde_json::json;
use wayline_core::document::{Format, parse};
use wayline_core::{MemoryCatalog, RunStatus, StepStatus, ToolDefinition};
use wayline_executor::{Engine, RunOptions};

use crate::support::workflow;

fn engine(tools: &[&str]) -> Engine {
    let tools = tools
        .iter()
        .map(|yaml| parse::<ToolDefinition>(yaml, Format::Yaml, "tool.yaml").unwrap());
    Engine::builder(Arc::new(MemoryCatalog::from_tools(tools))).build()
}

#[tokio::test]
async fn json_stdout_becomes_the_output_and_args_are_templated_without_a_shell() {
    let engine = engine(&[
        "id: emit\nname: Emit\nkind: cli\ncommand: {program: printf, args: ['{\"n\": %s, \"word\": \"%s\"}', '{{n}}', '{{word}}']}\n\
         response_extract: {fields: {n: n, word: word}}\n",
        "id: shout\nname: Shout\nkind: cli\ncommand: {program: echo, args: ['{{text}}']}\n",
    ]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: emit, tool_id: emit, input_mapping: {n: 3, word: '$(rm -rf /); echo'}}\n\
         - {id: shout, tool_id: shout, input_mapping: {text: emit.word}}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert_eq!(
        run.step_results[0].output_data,
        json!({"n": 3, "word": "$(rm -rf /); echo"})
    );
    // Not JSON: kept as text; the shell syntax was passed as a plain argument.
    assert_eq!(
        run.step_results[1].output_data,
        json!({"status_code": 0, "body": "$(rm -rf /); echo\n"})
    );
}

#[tokio::test]
async fn a_non_zero_exit_fails_with_stderr() {
    let engine =
        engine(&["id: ls\nname: Ls\nkind: cli\ncommand: {program: ls, args: ['{{path}}']}\n"]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: ls, tool_id: ls, input_mapping: {path: /no/such/dir}}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let result = &run.step_results[0];
    assert_eq!(result.status, StepStatus::Failed);
    assert_eq!(result.attempts, 1, "a failed command is not retried");
    let error = result.error.as_deref().unwrap();
    assert!(error.starts_with("`ls` exited with status 2: "), "{error}");
    assert!(error.contains("/no/such/dir"), "{error}");
}

#[tokio::test]
async fn timeouts_output_caps_and_missing_programs_are_errors() {
    let engine = engine(&[
        "id: slow\nname: Slow\nkind: cli\ntimeout_ms: 200\ncommand: {program: sleep, args: ['5']}\n",
        "id: loud\nname: Loud\nkind: cli\ncommand: {program: head, args: ['-c', '5000', /dev/zero], max_output_bytes: 1000}\n",
        "id: ghost\nname: Ghost\nkind: cli\ncommand: {program: wayline-no-such-program}\n",
    ]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: slow, tool_id: slow}\n  - {id: loud, tool_id: loud}\n  - {id: ghost, tool_id: ghost}\n",
    );
    let started = std::time::Instant::now();
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "the sleep was killed"
    );
    let error = |id: &str| {
        run.step_results
            .iter()
            .find(|r| r.step_id == id)
            .and_then(|r| r.error.clone())
            .unwrap()
    };
    assert_eq!(
        error("slow"),
        "`sleep` did not finish within 200 ms and was killed"
    );
    assert!(
        error("loud").contains("stdout is larger than max_output_bytes (1000)"),
        "{}",
        error("loud")
    );
    assert!(
        error("ghost").starts_with("cannot start `wayline-no-such-program`"),
        "{}",
        error("ghost")
    );
}

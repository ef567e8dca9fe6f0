//! MCP steps: a tool of kind `mcp` is called through the engine's `McpClient` — its arguments
//! the step's inputs, its structured content (or JSON text) the step's output, `isError` a
//! failure — and retried only when the tool says it is idempotent. The client here is a fake
//! that answers from a script and writes down each call.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::json;
use wayline_core::{
    McpCall, McpClient, McpError, McpErrorKind, McpOutcome, MemoryCatalog, RetryPolicy, RunStatus,
    StepStatus, ToolDefinition,
};
use wayline_executor::{Engine, Error, RunOptions};

use crate::support::{tool, workflow};

#[derive(Debug, Default)]
struct FakeServer {
    answers: Mutex<VecDeque<Result<McpOutcome, McpError>>>,
    calls: Mutex<Vec<McpCall>>,
    /// What its tools' annotations say of being called again.
    hint: Option<bool>,
}

#[async_trait::async_trait]
impl McpClient for FakeServer {
    async fn call(&self, call: McpCall) -> Result<McpOutcome, McpError> {
        self.calls.lock().unwrap().push(call);
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Ok(McpOutcome::structured(json!({"result": 1}))))
    }

    async fn idempotent_hint(&self, _server: &str, _tool: &str) -> Option<bool> {
        self.hint
    }
}

fn mcp_tool(idempotent: Option<bool>) -> ToolDefinition {
    let mut tool = tool(
        "id: sum\nname: Sum\nkind: mcp\nmcp: {server: everything, tool: get-sum}\n",
        "",
    );
    tool.idempotent = idempotent;
    tool.retry = Some(RetryPolicy::new(3));
    tool
}

fn run_with(server: &Arc<FakeServer>, tool: ToolDefinition) -> (Engine, wayline_core::Workflow) {
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .mcp_client(server.clone())
        .build();
    let workflow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: add, tool_id: sum, input_mapping: {a: 2, b: $input.b}}\n  - {id: after, tool_id: sum, input_mapping: {a: add.result, b: 1}}\n",
    );
    (engine, workflow)
}

#[tokio::test(start_paused = true)]
async fn an_mcp_step_calls_the_servers_tool_with_its_inputs_and_reads_its_content() {
    let server = Arc::new(FakeServer::default());
    server.answers.lock().unwrap().extend([
        Ok(McpOutcome::structured(json!({"result": 5}))),
        Ok(McpOutcome::text(r#"{"result": 6}"#)),
    ]);
    let (engine, workflow) = run_with(&server, mcp_tool(None));
    let run = engine
        .run(&workflow, RunOptions::new().input("b", 3))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success, "{:#?}", run);
    assert_eq!(run.step_results[0].output_data, json!({"result": 5}));
    assert_eq!(run.step_results[1].output_data, json!({"result": 6}));
    let calls = server.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].server.as_str(), calls[0].tool.as_str()),
        ("everything", "get-sum")
    );
    assert_eq!(calls[0].arguments, json!({"a": 2, "b": 3}));
    assert_eq!(calls[1].arguments, json!({"a": 5, "b": 1}));
    assert_eq!(calls[0].step_id, "add");
    // A dry run says what it would call, and calls nothing.
    let planned = engine
        .dry_run(&workflow, [("b".to_owned(), json!(3))].into())
        .await
        .unwrap();
    assert_eq!(
        planned[0].notes,
        [r#"calls tool `get-sum` of MCP server `everything` with {"a":2,"b":3}"#]
    );
    assert_eq!(server.calls.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_says_it_failed_fails_its_step_and_is_not_called_again() {
    let server = Arc::new(FakeServer::default());
    server
        .answers
        .lock()
        .unwrap()
        .push_back(Ok(McpOutcome::text("division by zero").failed()));
    let (engine, workflow) = run_with(&server, mcp_tool(Some(true)));
    let run = engine
        .run(&workflow, RunOptions::new().input("b", 0))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.step_results[0].status, StepStatus::Failed);
    assert_eq!(
        run.step_results[0].error.as_deref(),
        Some("mcp: tool `everything/get-sum` failed: division by zero")
    );
    assert_eq!(server.calls.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_server_is_called_again_only_for_an_idempotent_tool() {
    // The tool file says, else the server's annotations do.
    let unavailable = || {
        Err(McpError::new(
            McpErrorKind::Unavailable,
            "the server exited",
        ))
    };
    for (idempotent, hint, calls, status) in [
        (Some(true), None, 3, RunStatus::Success),
        (None, None, 1, RunStatus::Failed),
        (None, Some(true), 3, RunStatus::Success),
        (Some(false), Some(true), 1, RunStatus::Failed),
    ] {
        let server = Arc::new(FakeServer {
            hint,
            ..FakeServer::default()
        });
        server
            .answers
            .lock()
            .unwrap()
            .extend([unavailable(), unavailable()]);
        let (engine, workflow) = run_with(&server, mcp_tool(idempotent));
        let run = engine
            .run(&workflow, RunOptions::new().input("b", 1))
            .await
            .unwrap();
        assert_eq!(
            run.status, status,
            "idempotent {idempotent:?}, hint {hint:?}: {run:#?}"
        );
        assert_eq!(
            server
                .calls
                .lock()
                .unwrap()
                .iter()
                .filter(|call| call.step_id == "add")
                .count(),
            calls,
            "idempotent {idempotent:?}, hint {hint:?}"
        );
        if status == RunStatus::Failed {
            assert_eq!(
                run.step_results[0].error.as_deref(),
                Some("mcp: tool `everything/get-sum`: the server exited")
            );
        }
    }
}

#[test]
fn an_engine_without_a_client_refuses_a_workflow_with_an_mcp_step() {
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([mcp_tool(None)]))).build();
    let workflow = workflow("id: w\nname: W\nsteps:\n  - {id: add, tool_id: sum}\n");
    let Err(Error::InvalidWorkflow { problems, .. }) = engine.prepare(&workflow) else {
        panic!("prepared without a client")
    };
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("this engine has no MCP client")),
        "{problems:?}"
    );
}

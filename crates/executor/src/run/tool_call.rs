//! Calling one tool on its own: what `wayline tools try` and the tool test harness do.

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::{RetryPolicy, Step, StepResult, Workflow};

use crate::{Engine, Error, RunOptions};

impl Engine {
    /// A workflow of one step, `call`, calling `tool_id` once (no retries), each input mapped
    /// from the run input of the same name.
    pub fn tool_call_workflow<'a>(
        tool_id: &str,
        input_names: impl IntoIterator<Item = &'a str>,
    ) -> Workflow {
        let mut workflow = Workflow::new("tool-call", format!("call {tool_id}"));
        let mut step = Step::new("call", tool_id);
        for name in input_names {
            step = step.map(name, format!("$input.{name}"));
        }
        step.retry = Some(RetryPolicy::new(1));
        workflow.steps.push(step);
        workflow
    }

    /// Calls `tool_id` once, without retries, with `inputs`, and returns the step's result
    /// (status, output, error, request summary). An `Err` means no call was made (an unknown
    /// tool, unusable inputs).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use indexmap::IndexMap;
    /// use wayline_core::{HttpResponse, MemoryCatalog, ToolDefinition};
    /// use wayline_executor::Engine;
    /// use wayline_executor::testing::ScriptedTransport;
    ///
    /// let catalog = MemoryCatalog::from_tools([ToolDefinition::new("ping", "http://api.test")]);
    /// let transport = ScriptedTransport::new().then_respond(HttpResponse::new(200, r#"{"pong":1}"#));
    /// let engine = Engine::builder(Arc::new(catalog)).transport(Arc::new(transport)).build();
    /// let result = engine.call_tool("ping", IndexMap::new()).await.unwrap();
    /// assert_eq!(result.output_data["pong"], 1);
    /// # });
    /// ```
    pub async fn call_tool(
        &self,
        tool_id: &str,
        inputs: IndexMap<String, Value>,
    ) -> Result<StepResult, Error> {
        let workflow = Self::tool_call_workflow(tool_id, inputs.keys().map(String::as_str));
        let mut run = self
            .run(&workflow, RunOptions::new().inputs(inputs))
            .await?;
        Ok(run.step_results.remove(0))
    }
}

//! One step through the engine: an operation as a one-step workflow (polling when it waits
//! for a state), or a command-line tool's step; what it gave as a [`Ran`].

use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;
use serde_json::{Value, json};
use wayline_core::workflow::{Poll, Step, Workflow};
use wayline_core::{MemoryCatalog, StepStatus};
use wayline_executor::{Engine, RunOptions};
use wayline_registry::openapi::Operation;

use crate::command::{CommandStep, command_step};
use crate::intent::{CLI_METHOD, operation_resource};

use super::Explorer;

/// What one run of a step gave.
#[derive(Debug)]
pub(super) struct Ran {
    /// The `Location` header of the last answer (a create's, naming what it made).
    pub(super) location: Option<String>,
    pub(super) success: bool,
    pub(super) status: Option<u16>,
    pub(super) output: Value,
    pub(super) error: Option<String>,
    pub(super) request: Value,
    pub(super) attempts: u32,
    pub(super) seconds: f64,
}

impl Explorer {
    /// Runs `operation` once (polling until `until` when given) through the engine.
    pub(super) async fn execute(
        &self,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
        until: Option<&str>,
    ) -> Ran {
        if operation.method == CLI_METHOD {
            return self.execute_command(operation, inputs).await;
        }
        let mut step = Step::new("call", &operation.id);
        for (name, value) in inputs {
            step.input_mapping.insert(name.clone(), value.clone());
        }
        let polling = self.sut.execution.auto_mode.polling;
        if let Some(until) = until {
            step.poll = Some(Poll::new(
                until,
                polling.max_retries.saturating_add(1),
                polling.delay_seconds.saturating_mul(1_000),
            ));
        }
        let mut workflow = Workflow::new("explore", &operation.id);
        workflow.steps.push(step);
        let clock = Instant::now();
        self.location.take();
        let run = self.engine.run(&workflow, RunOptions::new()).await;
        let seconds = clock.elapsed().as_secs_f64();
        let location = self.location.take();
        match run {
            Err(error) => Ran {
                location,
                success: false,
                status: None,
                output: Value::Null,
                error: Some(error.to_string()),
                request: json!({"inputs": inputs}),
                attempts: 0,
                seconds,
            },
            Ok(run) => {
                let result = &run.step_results[0];
                let mut request = serde_json::to_value(&result.request).unwrap_or(Value::Null);
                if let Value::Object(map) = &mut request {
                    map.insert("inputs".into(), json!(inputs));
                }
                Ran {
                    location,
                    success: result.status == StepStatus::Success,
                    status: result.response_status,
                    output: result.output_data.clone(),
                    error: result.error.clone(),
                    request,
                    attempts: result.attempts,
                    seconds,
                }
            }
        }
    }

    /// Runs a command-line tool's step (see [`crate::command`]) through the engine's `cli`
    /// tools.
    async fn execute_command(
        &self,
        operation: &Operation,
        inputs: &IndexMap<String, Value>,
    ) -> Ran {
        let failed = |error: String, request: Value| Ran {
            location: None,
            success: false,
            status: None,
            output: Value::Null,
            error: Some(error),
            request,
            attempts: 0,
            seconds: 0.0,
        };
        let CommandStep { tool, request } = match command_step(operation, inputs) {
            Ok(step) => step,
            Err(refused) => return failed(refused.error, refused.request),
        };
        let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool]))).build();
        let mut workflow = Workflow::new("explore", &operation.id);
        workflow.steps.push(Step::new("call", &operation.id));
        let clock = Instant::now();
        match engine.run(&workflow, RunOptions::new()).await {
            Err(error) => failed(
                error.to_string(),
                json!({"name": operation_resource(operation), "args": []}),
            ),
            Ok(run) => {
                let result = &run.step_results[0];
                Ran {
                    location: None,
                    success: result.status == StepStatus::Success,
                    status: None,
                    output: result.output_data.clone(),
                    error: result.error.clone(),
                    request,
                    attempts: result.attempts,
                    seconds: clock.elapsed().as_secs_f64(),
                }
            }
        }
    }
}

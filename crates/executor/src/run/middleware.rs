//! Hooks around each step (the "pre/post hooks" the Python structure-ai-bot project lists as
//! not built yet).

use std::fmt;

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::{Step, StepResult, ToolDefinition};

/// What a hook sees of a step about to run or just run.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StepContext<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The workflow.
    pub workflow_id: &'a str,
    /// The step.
    pub step: &'a Step,
    /// Its tool (none for transform steps).
    pub tool: Option<&'a ToolDefinition>,
    /// Its resolved inputs.
    pub inputs: &'a IndexMap<String, Value>,
}

/// Code run before and after every step, in the order the hooks were added.
///
/// # Contract
/// - `before_step` runs after the step's inputs are resolved and its input validations passed,
///   before any call. Returning `Err(reason)` fails the step with that reason, no call made.
/// - `after_step` runs once the step has its result (success or failure, not skipped steps) and
///   may change it: add warnings, fail it. The record and the events show the changed result;
///   a step turned to `failed` gives its dependents no output.
/// - Neither may block for long: both run on the engine's task.
///
/// ```
/// use wayline_executor::{StepContext, StepMiddleware};
///
/// /// Refuses DELETE calls.
/// #[derive(Debug)]
/// struct NoDeletes;
///
/// #[async_trait::async_trait]
/// impl StepMiddleware for NoDeletes {
///     async fn before_step(&self, step: &StepContext<'_>) -> Result<(), String> {
///         match step.tool {
///             Some(tool) if tool.method.eq_ignore_ascii_case("DELETE") => {
///                 Err(format!("`{}` would delete; refused", step.step.id))
///             }
///             _ => Ok(()),
///         }
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait StepMiddleware: Send + Sync + fmt::Debug {
    /// Before the call; `Err(reason)` blocks the step.
    async fn before_step(&self, step: &StepContext<'_>) -> Result<(), String> {
        let _ = step;
        Ok(())
    }

    /// After the call; may change the result.
    async fn after_step(&self, step: &StepContext<'_>, result: &mut StepResult) {
        let _ = (step, result);
    }
}

//! [`SandboxCodeRunner`]: the engine's [`CodeRunner`] over any [`SandboxProvider`], so a
//! workflow's `code` steps run in the local sandbox or in a Bay.
//!
//! Each step gets a fresh sandbox, deleted afterwards (also when the step is cancelled; its TTL
//! covers a process that dies first): runs share no state. In it, three executions: the inputs
//! are set (`inputs`, and `result = None`), the step's code runs as it is (so a traceback's
//! line numbers are the code's own), and `result` is printed as JSON. Each has the step's
//! timeout, within Bay's limit of 300 s.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use wayline_core::code::{CodeError, CodeErrorKind, CodeOutput, CodeRequest, CodeRunner};

use crate::error::{ErrorCode, SandboxError};
use crate::provider::{CreateSandbox, MAX_EXEC_TIMEOUT_SECS, PythonExec, SandboxProvider};

/// Runs code steps in sandboxes of a provider.
#[derive(Debug, Clone)]
pub struct SandboxCodeRunner {
    provider: Arc<dyn SandboxProvider>,
    profile: String,
}

impl SandboxCodeRunner {
    /// Runs code in sandboxes of `provider`, of the profile `python-default` unless a tool
    /// names another.
    pub fn new(provider: Arc<dyn SandboxProvider>) -> Self {
        SandboxCodeRunner {
            provider,
            profile: "python-default".to_owned(),
        }
    }

    /// Uses `profile` when a tool names none.
    pub fn default_profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = profile.into();
        self
    }
}

/// What kind of code failure a sandbox error is.
fn code_error(stage: &str, error: &SandboxError) -> CodeError {
    let kind = match error.code {
        ErrorCode::ValidationError
        | ErrorCode::CapabilityNotSupported
        | ErrorCode::InvalidPath
        | ErrorCode::Unauthorized
        | ErrorCode::Forbidden => CodeErrorKind::Invalid,
        ErrorCode::Timeout => CodeErrorKind::Timeout,
        _ => CodeErrorKind::Unavailable,
    };
    CodeError::new(kind, format!("{stage}: {error}"))
}

/// The Python that sets the inputs.
fn setup(inputs: &Value) -> String {
    // A JSON string is a valid Python string literal (serde_json escapes nothing Python reads
    // otherwise).
    let text = Value::String(inputs.to_string()).to_string();
    format!("import json as _wayline_json\ninputs = _wayline_json.loads({text})\nresult = None")
}

const REPORT: &str = "print(_wayline_json.dumps(result))";

#[async_trait::async_trait]
impl CodeRunner for SandboxCodeRunner {
    async fn run(&self, request: CodeRequest) -> Result<CodeOutput, CodeError> {
        if request.language != "python" {
            return Err(CodeError::new(
                CodeErrorKind::Invalid,
                format!(
                    "the sandbox runs `python`, not `{}`; set `code.language: python`",
                    request.language
                ),
            ));
        }
        let profile = request
            .profile
            .clone()
            .unwrap_or_else(|| self.profile.clone());
        // A TTL, so a sandbox whose deletion never happens (the process killed) expires.
        let ttl = i64::try_from(exec_seconds(&request))
            .unwrap_or(i64::MAX)
            .saturating_mul(3)
            .saturating_add(300);
        let sandbox = self
            .provider
            .create(&CreateSandbox::new(profile).ttl(ttl))
            .await
            .map_err(|error| code_error("cannot create a sandbox", &error))?;
        let cleanup = Cleanup {
            provider: Arc::clone(&self.provider),
            id: Some(sandbox.id.clone()),
        };
        let outcome = self.run_in(&sandbox.id, &request).await;
        cleanup.now().await;
        outcome
    }
}

/// Deletes a code step's sandbox: at the end of the step, or — when the step's future is
/// dropped (a cancelled run, a deadline) — from a task spawned on drop.
struct Cleanup {
    provider: Arc<dyn SandboxProvider>,
    id: Option<String>,
}

impl Cleanup {
    async fn now(mut self) {
        if let Some(id) = self.id.take()
            && let Err(error) = self.provider.delete(&id).await
        {
            tracing::warn!(sandbox = %id, %error, "a code step's sandbox was not deleted");
        }
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let provider = Arc::clone(&self.provider);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = provider.delete(&id).await {
                    tracing::warn!(sandbox = %id, %error, "a cancelled code step's sandbox was not deleted");
                }
            });
        }
    }
}

/// The exec timeout for `request`: its own, in whole seconds, within Bay's 1..=300.
fn exec_seconds(request: &CodeRequest) -> u64 {
    request
        .timeout
        .as_secs_f64()
        .ceil()
        .clamp(1.0, MAX_EXEC_TIMEOUT_SECS as f64) as u64
}

impl SandboxCodeRunner {
    async fn run_in(&self, id: &str, request: &CodeRequest) -> Result<CodeOutput, CodeError> {
        let seconds = exec_seconds(request);
        let exec = |code: String| PythonExec::new(code).timeout(seconds);
        let set = self
            .provider
            .python_exec(id, &exec(setup(&request.inputs)))
            .await
            .map_err(|error| code_error("cannot pass the inputs", &error))?;
        if !set.success {
            return Err(CodeError::new(
                CodeErrorKind::Invalid,
                format!("cannot pass the inputs: {}", set.error.unwrap_or_default()),
            ));
        }
        let ran = self
            .provider
            .python_exec(id, &exec(request.source.clone()))
            .await
            .map_err(|error| code_error("cannot run the code", &error))?;
        if !ran.success {
            let error = ran.error.unwrap_or_default();
            let kind = if error.starts_with("Code execution timed out") {
                CodeErrorKind::Timeout
            } else {
                CodeErrorKind::Failed
            };
            return Err(CodeError::new(kind, error));
        }
        let reported = self
            .provider
            .python_exec(id, &exec(REPORT.to_owned()))
            .await
            .map_err(|error| code_error("cannot read `result`", &error))?;
        if !reported.success {
            let error = reported.error.unwrap_or_default();
            let last = error.lines().last().unwrap_or_default();
            return Err(CodeError::new(
                CodeErrorKind::Failed,
                format!("`result` is not JSON: {last}"),
            ));
        }
        let result = serde_json::from_str(&reported.output).map_err(|error| {
            CodeError::new(
                CodeErrorKind::Failed,
                format!("`result` could not be read back: {error}"),
            )
        })?;
        Ok(CodeOutput::new(result, ran.output))
    }
}

/// Sends each code step to the runner chosen for its tool, the others to a default runner
/// (e.g. most tools to the local sandbox, one to a Bay).
#[derive(Debug, Clone)]
pub struct CodeRouter {
    default: Arc<dyn CodeRunner>,
    by_tool: HashMap<String, Arc<dyn CodeRunner>>,
}

impl CodeRouter {
    /// Everything to `default`.
    pub fn new(default: Arc<dyn CodeRunner>) -> Self {
        CodeRouter {
            default,
            by_tool: HashMap::new(),
        }
    }

    /// The code tool `tool_id` to `runner`.
    pub fn route(mut self, tool_id: impl Into<String>, runner: Arc<dyn CodeRunner>) -> Self {
        self.by_tool.insert(tool_id.into(), runner);
        self
    }
}

#[async_trait::async_trait]
impl CodeRunner for CodeRouter {
    async fn run(&self, request: CodeRequest) -> Result<CodeOutput, CodeError> {
        let runner = self.by_tool.get(&request.tool_id).unwrap_or(&self.default);
        runner.run(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_travel_as_a_python_string_literal_of_json() {
        let code = setup(&serde_json::json!({"q": "it's \"x\"\n\\", "n": [1, 2.5, null]}));
        assert!(code.contains(r#"inputs = _wayline_json.loads("{\"q\":\"it's \\\"x\\\"\\n\\\\\",\"n\":[1,2.5,null]}")"#), "{code}");
    }
}

//! What steps run with: the engine's plug-ins and settings ([`EngineInner`], built by the
//! [`EngineBuilder`](crate::EngineBuilder)) and what every step of one run shares
//! ([`RunShared`]), and what a run does when its store fails ([`StoreFailure`]). The engine
//! makes them, the scheduler and each step read them.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::code::CodeRunner;
use wayline_core::decide::Decider;
use wayline_core::mcp::McpClient;
use wayline_core::{
    HttpRequest, HttpResponse, RunEvent, RunObserver, RunStore, SecretProvider, StepPolicy,
    ToolCatalog, ToolConfig, Transport,
};

use crate::run::middleware::StepMiddleware;
use crate::run::prepare::Defaults;
use crate::values::eval::ExpressionBudget;
use crate::values::redact::{
    Redactor, credential_parts, is_credential_header, is_credential_response_header,
};

/// What an [`Engine`](crate::Engine) is made of: its plug-ins and settings, shared by every
/// run it makes.
pub(crate) struct EngineInner {
    pub(crate) catalog: Arc<dyn ToolCatalog>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) secrets: Arc<dyn SecretProvider>,
    pub(crate) observers: Vec<Arc<dyn RunObserver>>,
    pub(crate) middleware: Vec<Arc<dyn StepMiddleware>>,
    pub(crate) policies: Vec<Arc<dyn StepPolicy>>,
    pub(crate) run_store: Option<Arc<dyn RunStore>>,
    pub(crate) code_runner: Option<Arc<dyn CodeRunner>>,
    pub(crate) mcp_client: Option<Arc<dyn McpClient>>,
    pub(crate) decider: Option<Arc<dyn Decider>>,
    pub(crate) max_parallel: usize,
    pub(crate) per_host_limit: Option<usize>,
    pub(crate) defaults: Defaults,
    pub(crate) max_retry_after: Duration,
    /// Most step executions a flow run makes.
    pub(crate) max_executions: u32,
    pub(crate) expression_budget: ExpressionBudget,
    /// Values masked besides the tool configs' secrets ([`crate::EngineBuilder::mask`]).
    pub(crate) masked: Vec<String>,
    /// What every run taught (its configs' secrets, what it sent as credentials), for the
    /// host's writers ([`crate::EngineBuilder::redactor`]).
    pub(crate) redactor: Redactor,
    /// What a run does when the run store fails to record a step.
    pub(crate) store_failure: StoreFailure,
}

impl EngineInner {
    pub(crate) fn emit(&self, event: &RunEvent<'_>) {
        for observer in &self.observers {
            observer.on_event(event);
        }
    }
}

/// What a run does when its run store fails to record a step (see
/// [`EngineBuilder::on_store_failure`](crate::EngineBuilder::on_store_failure)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StoreFailure {
    /// The step fails, saying the store failed, and the run goes on as after any failed step;
    /// the run's final record is written when the store takes it. The default: a run started by
    /// a person ends, and its record says why.
    #[default]
    FailStep,
    /// The run stops where it is, as a run whose process died does: no step starts, the steps
    /// in flight finish, nothing more is written, and the run answers [`Error::Store`](crate::Error::Store) with the
    /// record so far. The stored run stays `running`, so [`Engine::resume`](crate::Engine::resume) continues it once
    /// the store is back, with the resume rules for the steps whose results were not saved.
    /// For hosts that retry runs (a worker of a queue): a brief outage of the store then
    /// pauses runs instead of failing them.
    Interrupt,
}

/// What every step of one run shares.
pub(crate) struct RunShared<'e> {
    pub(crate) engine: &'e EngineInner,
    pub(crate) run_id: String,
    pub(crate) workflow_id: String,
    pub(crate) inputs: IndexMap<String, Value>,
    pub(crate) configs: HashMap<String, Result<Option<ToolConfig>, String>>,
    pub(crate) redactor: Redactor,
    /// Observers of this run alone ([`crate::RunOptions::observer`]).
    pub(crate) observers: Vec<Arc<dyn RunObserver>>,
}

impl fmt::Debug for RunShared<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunShared")
            .field("run_id", &self.run_id)
            .field("workflow_id", &self.workflow_id)
            .finish_non_exhaustive()
    }
}

impl RunShared<'_> {
    /// Tells the engine's observers, then this run's, of `event`.
    pub(crate) fn emit(&self, event: &RunEvent<'_>) {
        self.engine.emit(event);
        for observer in &self.observers {
            observer.on_event(event);
        }
    }

    /// Learns the credentials `request` carries (its credential headers), so that from now on
    /// the run masks them wherever they appear — in a body, an output, an input — and so does
    /// every writer holding the engine's redactor.
    pub(crate) fn learn_sent(&self, request: &HttpRequest) {
        let parts: Vec<String> = request
            .headers
            .iter()
            .filter(|header| header.sensitive || is_credential_header(&header.name))
            .flat_map(|header| credential_parts(&header.name, &header.value))
            .collect();
        self.learn(parts);
    }

    /// Learns the credentials a response hands out (`Set-Cookie`, `X-Subject-Token`).
    pub(crate) fn learn_received(&self, response: &HttpResponse) {
        let parts: Vec<String> = response
            .headers
            .iter()
            .filter(|(name, _)| is_credential_response_header(name))
            .flat_map(|(name, value)| credential_parts(name, value))
            .collect();
        self.learn(parts);
    }

    fn learn(&self, parts: Vec<String>) {
        if parts.is_empty() {
            return;
        }
        self.redactor.learn(parts.iter().cloned());
        self.engine.redactor.learn(parts);
    }

    /// The tool's config, or why it could not be had.
    pub(crate) fn config(&self, tool_id: &str) -> Result<Option<&ToolConfig>, String> {
        match self.configs.get(tool_id) {
            Some(Ok(config)) => Ok(config.as_ref()),
            Some(Err(error)) => Err(error.clone()),
            None => Ok(None),
        }
    }
}

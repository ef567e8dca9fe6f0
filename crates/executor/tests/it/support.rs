//! Helpers shared by the engine tests.

use std::sync::{Arc, Mutex};

use wayline_core::document::{Format, parse};
use wayline_core::{MemoryCatalog, RunEvent, RunObserver, RunStore, ToolDefinition, Workflow};
use wayline_executor::{Engine, EngineBuilder, ReqwestTransport};

/// A tool from YAML, its `base_url` pointed at `base`.
pub(crate) fn tool(yaml: &str, base: &str) -> ToolDefinition {
    let mut tool: ToolDefinition = parse(yaml, Format::Yaml, "tool.yaml").unwrap();
    tool.base_url = base.to_owned();
    tool
}

/// A workflow from YAML.
pub(crate) fn workflow(yaml: &str) -> Workflow {
    Workflow::parse(yaml, Format::Yaml, "workflow.yaml").unwrap()
}

/// An engine builder over these tools with the real HTTP transport.
pub(crate) fn engine(tools: impl IntoIterator<Item = ToolDefinition>) -> EngineBuilder {
    Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(Arc::new(ReqwestTransport::new().unwrap()))
}

/// Remembers events as short lines (`retry step 2000ms`).
#[derive(Debug, Default)]
pub(crate) struct Events(pub Mutex<Vec<String>>);

impl Events {
    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    pub(crate) fn retry_delays_ms(&self) -> Vec<u128> {
        self.lines()
            .iter()
            .filter_map(|line| line.strip_prefix("retry "))
            .filter_map(|rest| rest.split(' ').nth(1))
            .filter_map(|ms| ms.trim_end_matches("ms").parse().ok())
            .collect()
    }
}

impl RunObserver for Events {
    fn on_event(&self, event: &RunEvent<'_>) {
        let line = match event {
            RunEvent::RunStarted { run } => format!("run started {}", run.step_results.len()),
            RunEvent::StepStarted { step_id, .. } => format!("start {step_id}"),
            RunEvent::Attempt {
                step_id,
                attempt,
                status,
                error,
                ..
            } => {
                format!(
                    "attempt {step_id} {attempt} {status:?} {}",
                    error.unwrap_or("")
                )
            }
            RunEvent::RetryScheduled { step_id, delay, .. } => {
                format!("retry {step_id} {}ms", delay.as_millis())
            }
            RunEvent::StepFinished { result, .. } => {
                format!("finish {} {:?}", result.step_id, result.status)
            }
            RunEvent::RunFinished { run } => format!("run finished {:?}", run.status),
            _ => "other".to_owned(),
        };
        self.0.lock().unwrap().push(line);
    }
}

/// A run store that refuses chosen step writes once each, as a store that is down for a moment
/// does: a write of step `id` with status `status` fails the first time it is asked for.
#[derive(Debug)]
pub(crate) struct Flaky {
    pub(crate) store: Arc<wayline_store::MemoryStore>,
    refuse: Mutex<Vec<(String, wayline_core::StepStatus)>>,
}

impl Flaky {
    pub(crate) fn new(
        store: Arc<wayline_store::MemoryStore>,
        refuse: &[(&str, wayline_core::StepStatus)],
    ) -> Self {
        Flaky {
            store,
            refuse: Mutex::new(
                refuse
                    .iter()
                    .map(|(id, status)| ((*id).to_owned(), *status))
                    .collect(),
            ),
        }
    }
}

#[async_trait::async_trait]
impl RunStore for Flaky {
    async fn create_run(&self, run: &wayline_core::Run) -> Result<(), wayline_core::StoreError> {
        self.store.create_run(run).await
    }
    async fn save_step(
        &self,
        run_id: &str,
        result: &wayline_core::StepResult,
    ) -> Result<(), wayline_core::StoreError> {
        let refused = {
            let mut refuse = self.refuse.lock().unwrap();
            let found = refuse
                .iter()
                .position(|(id, status)| *id == result.step_id && *status == result.status);
            found.map(|index| refuse.remove(index)).is_some()
        };
        if refused {
            return Err(wayline_core::StoreError::new(
                wayline_core::StoreErrorKind::Unavailable,
                "connection refused",
            ));
        }
        self.store.save_step(run_id, result).await
    }
    async fn finish_run(&self, run: &wayline_core::Run) -> Result<(), wayline_core::StoreError> {
        self.store.finish_run(run).await
    }
    async fn run(&self, id: &str) -> Result<Option<wayline_core::Run>, wayline_core::StoreError> {
        self.store.run(id).await
    }
    async fn list_runs(
        &self,
        query: &wayline_core::RunQuery,
    ) -> Result<wayline_core::RunPage, wayline_core::StoreError> {
        self.store.list_runs(query).await
    }
}

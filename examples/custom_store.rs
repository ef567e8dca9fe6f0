//! A run store of your own, and a run finished after its process died.
//!
//! ```sh
//! cargo run --example custom_store
//! ```
//!
//! The store keeps runs in a map (a service would keep them in its own database). A first
//! runtime starts a run of three steps and is shut down while the second step is in flight: the
//! process "dies". The store still holds the run as `running`, with the first step's output.
//! A new engine resumes it. The finished step is not called again; the step that was in flight
//! is a GET, safe to repeat, so it runs again; then the last one.
//!
//! What to put in your own `Cargo.toml` to use this file as it is:
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["executor"] }
//! tokio = { version = "1", features = ["rt-multi-thread", "macros", "time"] }
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use wayline::core::document::Format;
use wayline::core::store::{Cursor, RunPage, RunQuery, RunSummary, StoreError, StoreErrorKind};
use wayline::core::{
    HttpRequest, HttpResponse, MemoryCatalog, Run, RunStatus, RunStore, StepResult, ToolDefinition,
    Transport, TransportError, Workflow,
};
use wayline::executor::{Engine, ResumeOptions, RunOptions};

/// Runs in a map: the five methods of `RunStore`.
#[derive(Debug, Default)]
struct MapStore(Mutex<HashMap<String, Run>>);

impl MapStore {
    fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn no_run(id: &str) -> StoreError {
    StoreError::new(StoreErrorKind::NotFound, format!("no run {id}"))
}

#[wayline::core::async_trait]
impl RunStore for MapStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        wayline::core::store::check_id("run", &run.id)?;
        let mut runs = self.runs();
        if runs.contains_key(&run.id) {
            let message = format!("run {} exists", run.id);
            return Err(StoreError::new(StoreErrorKind::Conflict, message));
        }
        runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        let mut runs = self.runs();
        let run = runs.get_mut(run_id).ok_or_else(|| no_run(run_id))?;
        if run.finished_at.is_some() {
            return Err(StoreError::new(
                StoreErrorKind::Conflict,
                "the run has ended",
            ));
        }
        match run
            .step_results
            .iter_mut()
            .find(|step| step.step_id == result.step_id)
        {
            Some(step) => *step = result.clone(),
            None => run.step_results.push(result.clone()),
        }
        Ok(())
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        let mut runs = self.runs();
        let stored = runs.get_mut(&run.id).ok_or_else(|| no_run(&run.id))?;
        *stored = run.clone();
        Ok(())
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        Ok(self.runs().get(id).cloned())
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let mut page: Vec<RunSummary> = self
            .runs()
            .values()
            .map(RunSummary::of)
            .filter(|summary| query.matches(summary))
            .filter(|summary| cursor.as_ref().is_none_or(|at| summary.is_after(at)))
            .collect();
        page.sort_by(RunSummary::newest_first);
        Ok(RunPage::from_sorted(page, query))
    }
}

/// An API that answers at once, except that the first call to `/stock` hangs while
/// `hang_stock` is set: the moment the process dies.
#[derive(Debug, Default)]
struct Api {
    hang_stock: AtomicBool,
    calls: Mutex<Vec<String>>,
}

#[wayline::core::async_trait]
impl Transport for Api {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.url.clone());
        if request.url.contains("/stock") && self.hang_stock.swap(false, Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(HttpResponse::new(200, r#"{"count": 3}"#))
    }
}

const WORKFLOW: &str = "id: nightly\nname: Nightly stock report\nsteps:\n\
  - {id: orders, tool_id: orders}\n\
  - {id: stock, tool_id: stock, input_mapping: {after: orders.count}}\n\
  - {id: report, tool_id: report, input_mapping: {orders: orders.count, stock: stock.count}}\n";

fn catalog() -> Arc<MemoryCatalog> {
    let mut report = ToolDefinition::new("report", "http://reports.internal/report");
    report.method = "PUT".to_owned();
    Arc::new(MemoryCatalog::from_tools([
        ToolDefinition::new("orders", "http://shop.internal/orders"),
        ToolDefinition::new("stock", "http://shop.internal/stock"),
        report,
    ]))
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let workflow = Workflow::parse(WORKFLOW, Format::Yaml, "nightly.yaml")?;
    let store = Arc::new(MapStore::default());
    let api = Arc::new(Api::default());
    api.hang_stock.store(true, Ordering::SeqCst);

    // The first process: the run starts, and the process dies while `stock` is in flight.
    let first = tokio::runtime::Runtime::new()?;
    first.block_on(async {
        let engine = Engine::builder(catalog())
            .transport(api.clone())
            .run_store(store.clone())
            .build();
        let handle = engine.start(&workflow, RunOptions::new().run_id("nightly-1"))?;
        let mut events = handle.events();
        while let Some(event) = events.next().await {
            println!("first process: {event:?}");
            if matches!(&*event, wayline::core::OwnedRunEvent::StepStarted { step_id, .. } if step_id == "stock")
            {
                break;
            }
        }
        Ok::<_, wayline::executor::Error>(())
    })?;
    first.shutdown_timeout(Duration::ZERO);
    let stored = store
        .runs()
        .get("nightly-1")
        .cloned()
        .ok_or("the run was not stored")?;
    println!(
        "\nthe store after the crash: run {}",
        stored.status.as_str()
    );
    for step in &stored.step_results {
        println!("  {:<7} {}", step.step_id, step.status.as_str());
    }

    // A new process: a new engine over the same store resumes the run.
    let second = tokio::runtime::Runtime::new()?;
    let run = second.block_on(async {
        let engine = Engine::builder(catalog())
            .transport(api.clone())
            .run_store(store.clone())
            .build();
        let prepared = engine.prepare(&workflow)?;
        engine
            .resume(&prepared, "nightly-1", ResumeOptions::new())
            .await
    })?;
    println!("\nresumed: run {}", run.status.as_str());
    let calls = api
        .calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    println!("calls, both processes: {calls:#?}");
    if run.status != RunStatus::Success
        || calls.iter().filter(|url| url.contains("/orders")).count() != 1
    {
        return Err("the resumed run should succeed without calling orders again".into());
    }
    Ok(())
}

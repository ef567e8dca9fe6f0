//! wayline inside an axum service: runs are started by one request and followed and cancelled
//! by others, each a task of the service's runtime.
//!
//! ```sh
//! cargo run --example embedded_service
//! ```
//!
//! - `POST /runs` starts a run (`{"inputs": {…}}`) and answers `202 {"run_id": …}` at once.
//! - `GET /runs/{id}/events` streams the run's events as server-sent events, from the first,
//!   however late the client comes.
//! - `POST /runs/{id}/cancel` cancels it; its record stays complete.
//! - `GET /runs/{id}` answers the record from the run store.
//!
//! The example drives its own router in the process (no port is opened) and prints what each
//! request answered. To serve it, hand the router to `axum::serve` with a listener bound to
//! loopback, and put authentication in front of it: the routes start work on other systems.
//!
//! What to put in your own `Cargo.toml` to use this file as it is:
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["executor", "store"] }
//! tokio = { version = "1", features = ["rt-multi-thread", "macros", "time"] }
//! axum = { version = "0.8", default-features = false, features = ["tokio", "http1", "json"] }
//! futures-util = "0.3"
//! serde_json = "1"
//! tower = { version = "0.5", features = ["util"] }
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Path, State};
use axum::http::{Request, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use wayline::core::document::Format;
use wayline::core::{
    HttpRequest, HttpResponse, MemoryCatalog, RunStore, ToolDefinition, Transport, TransportError,
    Workflow,
};
use wayline::executor::{Engine, PreparedWorkflow, RunHandle, RunOptions};
use wayline::store::MemoryStore;

/// What every request shares.
#[derive(Clone)]
struct Service {
    engine: Engine,
    workflow: Arc<PreparedWorkflow>,
    store: Arc<MemoryStore>,
    /// Runs started here. A real service lets go of a handle some time after its run ended.
    runs: Arc<Mutex<HashMap<String, RunHandle>>>,
}

impl Service {
    fn with_run<T>(&self, id: &str, f: impl FnOnce(&RunHandle) -> T) -> Option<T> {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .map(f)
    }
}

fn router(service: Service) -> Router {
    Router::new()
        .route("/runs", post(start))
        .route("/runs/{id}", get(record))
        .route("/runs/{id}/events", get(events))
        .route("/runs/{id}/cancel", post(cancel))
        .with_state(service)
}

async fn start(State(service): State<Service>, axum::Json(body): axum::Json<Value>) -> Response {
    let inputs = body["inputs"]
        .as_object()
        .map(|inputs| inputs.clone().into_iter().collect())
        .unwrap_or_default();
    match service.engine.start_prepared(
        Arc::clone(&service.workflow),
        RunOptions::new().inputs(inputs),
    ) {
        Ok(handle) => {
            let id = handle.id().to_owned();
            service
                .runs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone(), handle);
            (StatusCode::ACCEPTED, axum::Json(json!({"run_id": id}))).into_response()
        }
        Err(error) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"error": error.to_string()})),
        )
            .into_response(),
    }
}

async fn events(State(service): State<Service>, Path(id): Path<String>) -> Response {
    let Some(events) = service.with_run(&id, RunHandle::events) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let stream = events.into_stream().map(|event| {
        let sent = Event::default()
            .json_data(&*event)
            .unwrap_or_else(|_| Event::default());
        Ok::<_, Infallible>(sent)
    });
    Sse::new(stream).into_response()
}

async fn cancel(State(service): State<Service>, Path(id): Path<String>) -> StatusCode {
    match service.with_run(&id, RunHandle::cancel) {
        Some(()) => StatusCode::ACCEPTED,
        None => StatusCode::NOT_FOUND,
    }
}

async fn record(State(service): State<Service>, Path(id): Path<String>) -> Response {
    match service.store.run(&id).await {
        Ok(Some(run)) => axum::Json(run).into_response(),
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// A report API that takes its time.
#[derive(Debug)]
struct SlowReports;

#[wayline::core::async_trait]
impl Transport for SlowReports {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let body = json!({"data": {"url": request.url, "rows": 42}});
        Ok(HttpResponse::new(200, body.to_string()))
    }
}

const WORKFLOW: &str = "id: report\nname: Monthly report\n\
inputs: {month: {description: which month, default: '2026-11'}}\n\
steps:\n\
  - {id: collect, tool_id: collect, input_mapping: {month: $input.month}}\n\
  - {id: publish, tool_id: publish, input_mapping: {rows: collect.data.rows}}\n";

/// Sends one request to the service and answers the status and the body as text.
async fn call(app: &Router, method: &str, uri: &str, body: Value) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("a valid request");
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("the router answers");
    let status = response.status();
    let bytes = to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let store = Arc::new(MemoryStore::new());
    let catalog = MemoryCatalog::from_tools([
        ToolDefinition::new("collect", "http://reports.internal/collect"),
        ToolDefinition::new("publish", "http://reports.internal/publish"),
    ]);
    let engine = Engine::builder(Arc::new(catalog))
        .transport(Arc::new(SlowReports))
        .run_store(store.clone())
        .build();
    let workflow = Workflow::parse(WORKFLOW, Format::Yaml, "report.yaml")?;
    let app = router(Service {
        workflow: Arc::new(engine.prepare(&workflow)?),
        engine,
        store,
        runs: Arc::default(),
    });

    // Two runs; the second is cancelled while its first step is in flight.
    let (_, started) = call(
        &app,
        "POST",
        "/runs",
        json!({"inputs": {"month": "2026-10"}}),
    )
    .await;
    let first: Value = serde_json::from_str(&started)?;
    let (_, started) = call(&app, "POST", "/runs", json!({})).await;
    let second: Value = serde_json::from_str(&started)?;
    let (first, second) = (
        first["run_id"].as_str().unwrap_or(""),
        second["run_id"].as_str().unwrap_or(""),
    );
    println!("started {first} and {second}");
    let (status, _) = call(&app, "POST", &format!("/runs/{second}/cancel"), json!({})).await;
    println!("cancel {second}: {status}");

    // The events of the first run, read to the end (the stream closes when the run ends).
    let (_, events) = call(&app, "GET", &format!("/runs/{first}/events"), json!({})).await;
    println!("\nevents of {first}:");
    for line in events.lines().filter(|line| line.starts_with("data:")) {
        println!("  {}", line.trim_start_matches("data:").trim());
    }

    // The second run's events still start with `run_started`, though it ended already.
    let (_, late) = call(&app, "GET", &format!("/runs/{second}/events"), json!({})).await;
    let late_events = late
        .lines()
        .filter(|line| line.starts_with("data:"))
        .count();
    println!("\nevents of {second}, read after it ended: {late_events}");

    for id in [first, second] {
        let (_, text) = call(&app, "GET", &format!("/runs/{id}"), json!({})).await;
        let run: Value = serde_json::from_str(&text)?;
        let steps: Vec<String> = run["step_results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|step| format!("{} {}", step["step_id"], step["status"]))
            .collect();
        println!("{id}: {} ({})", run["status"], steps.join(", "));
    }
    Ok(())
}

//! A host of wayline's engine, as a service at another company writes one: an API of its own
//! behind a [`Transport`], and runs kept in a store of its own ([`MapStore`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Semaphore;
use wayline::core::store::{Cursor, RunPage, RunQuery, RunSummary, StoreError, StoreErrorKind};
use wayline::core::{
    HttpRequest, HttpResponse, Run, RunStore, StepResult, Transport, TransportError,
};

/// An API answering `{"data": {"path": PATH}}`, each call once the host lets it through
/// ([`GatedApi::open`]), so a test decides what is in flight.
#[derive(Debug)]
pub struct GatedApi {
    gate: Semaphore,
    calls: AtomicUsize,
}

impl GatedApi {
    /// An API that lets no call through yet.
    pub fn closed() -> Self {
        GatedApi {
            gate: Semaphore::new(0),
            calls: AtomicUsize::new(0),
        }
    }

    /// Lets `calls` more calls through.
    pub fn open(&self, calls: usize) {
        self.gate.add_permits(calls);
    }

    /// Calls that reached the API, answered or waiting.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Transport for GatedApi {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let permit = self.gate.acquire().await.map_err(|_| {
            TransportError::new(wayline::core::TransportErrorKind::Connect, "closed")
        })?;
        permit.forget();
        let path = request
            .url
            .split("://")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let body = serde_json::json!({"data": {"path": path}});
        Ok(HttpResponse::new(200, body.to_string()))
    }
}

/// Runs in a map: the five methods of [`RunStore`].
#[derive(Debug, Default)]
pub struct MapStore {
    runs: Mutex<HashMap<String, Run>>,
}

impl MapStore {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Run>) -> T) -> T {
        f(&mut self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

#[async_trait::async_trait]
impl RunStore for MapStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        self.with(|runs| {
            if runs.contains_key(&run.id) {
                return Err(StoreError::new(
                    StoreErrorKind::Conflict,
                    format!("run {} exists", run.id),
                ));
            }
            runs.insert(run.id.clone(), run.clone());
            Ok(())
        })
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        self.with(|runs| {
            let run = runs.get_mut(run_id).ok_or_else(|| {
                StoreError::new(StoreErrorKind::NotFound, format!("no run {run_id}"))
            })?;
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
        })
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        self.with(|runs| match runs.get_mut(&run.id) {
            Some(stored) => {
                *stored = run.clone();
                Ok(())
            }
            None => Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!("no run {}", run.id),
            )),
        })
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        Ok(self.with(|runs| runs.get(id).cloned()))
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let mut summaries: Vec<RunSummary> = self.with(|runs| {
            runs.values()
                .map(RunSummary::of)
                .filter(|summary| query.matches(summary))
                .filter(|summary| {
                    cursor
                        .as_ref()
                        .is_none_or(|cursor| summary.is_after(cursor))
                })
                .collect()
        });
        summaries.sort_by(RunSummary::newest_first);
        Ok(RunPage::from_sorted(summaries, query))
    }
}

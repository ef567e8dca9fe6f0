//! [`MemoryStore`]: both stores in memory, for tests and short-lived hosts.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use wayline_core::store::{
    Cursor, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoredWorkflow, WorkflowStore,
    check_id,
};
use wayline_core::{Run, StepResult};

use crate::records;

/// Workflows and runs in memory; lost when dropped.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// (workflow id, version) → record.
    workflows: BTreeMap<(String, u32), StoredWorkflow>,
    runs: BTreeMap<String, Run>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-made change: every change is a
        // single insert or assignment.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl WorkflowStore for MemoryStore {
    async fn insert_workflow(&self, record: &StoredWorkflow) -> Result<(), StoreError> {
        check_id("workflow", record.id())?;
        let mut state = self.state();
        let key = (record.id().to_owned(), record.version);
        if state.workflows.contains_key(&key) {
            return Err(records::version_exists(record));
        }
        state.workflows.insert(key, record.clone());
        Ok(())
    }

    async fn update_workflow(&self, record: &StoredWorkflow) -> Result<StoredWorkflow, StoreError> {
        let mut state = self.state();
        let key = (record.id().to_owned(), record.version);
        let stored = state
            .workflows
            .get_mut(&key)
            .ok_or_else(|| records::version_missing(record))?;
        records::check_revision(stored, record)?;
        let mut next = record.clone();
        // Wrapping: a hand-edited record may hold the largest value; any change still shows.
        next.revision = next.revision.wrapping_add(1);
        *stored = next.clone();
        Ok(next)
    }

    async fn workflow(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<Option<StoredWorkflow>, StoreError> {
        let state = self.state();
        let versions = state
            .workflows
            .range((id.to_owned(), 0)..=(id.to_owned(), u32::MAX));
        Ok(match version {
            Some(version) => versions
                .filter(|(key, _)| key.1 == version)
                .map(|(_, record)| record.clone())
                .next(),
            None => versions.last().map(|(_, record)| record.clone()),
        })
    }

    async fn workflow_versions(&self, id: &str) -> Result<Vec<StoredWorkflow>, StoreError> {
        let state = self.state();
        Ok(state
            .workflows
            .range((id.to_owned(), 0)..=(id.to_owned(), u32::MAX))
            .map(|(_, record)| record.clone())
            .collect())
    }

    async fn list_workflows(&self) -> Result<Vec<StoredWorkflow>, StoreError> {
        let state = self.state();
        let mut latest: BTreeMap<&str, &StoredWorkflow> = BTreeMap::new();
        for ((id, _), record) in &state.workflows {
            latest.insert(id, record);
        }
        Ok(latest.into_values().cloned().collect())
    }
}

#[async_trait::async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        check_id("run", &run.id)?;
        let mut state = self.state();
        if state.runs.contains_key(&run.id) {
            return Err(records::run_exists(&run.id));
        }
        state.runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        let mut state = self.state();
        let run = state
            .runs
            .get_mut(run_id)
            .ok_or_else(|| records::run_missing(run_id))?;
        records::save_step_into(run, result)
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        let mut state = self.state();
        let stored = state
            .runs
            .get_mut(&run.id)
            .ok_or_else(|| records::run_missing(&run.id))?;
        *stored = run.clone();
        Ok(())
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        Ok(self.state().runs.get(id).cloned())
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let state = self.state();
        let summaries = state.runs.values().map(RunSummary::of);
        Ok(records::page(summaries, query, cursor.as_ref()))
    }
}

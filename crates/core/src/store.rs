//! Persistence of workflows and runs: the [`WorkflowStore`] and [`RunStore`] plug-in traits,
//! the records they keep, and [`StoreError`].
//!
//! Implementations (in-memory, files, SQLite) live in `wayline-store`, which also holds the
//! lifecycle rules and a conformance suite every implementation passes.
//!
//! # Contract of [`WorkflowStore`]
//! - A workflow is kept as numbered versions (1, 2, ...); each version is one
//!   [`StoredWorkflow`]. [`WorkflowStore::insert_workflow`] adds a version and fails with
//!   [`StoreErrorKind::Conflict`] if that id and version already exist.
//! - [`WorkflowStore::update_workflow`] replaces a version only if the stored `revision` equals
//!   the given record's (optimistic concurrency); the stored copy gets `revision + 1` and is
//!   returned. A stale revision is a `Conflict`; nothing is written.
//! - Reads return exactly what was written (field by field), or `None` for what does not exist.
//! - Ids are checked with [`check_id`] before anything is written.
//!
//! # Contract of [`RunStore`]
//! - [`RunStore::create_run`] records a new run; an existing id is a `Conflict`.
//! - [`RunStore::save_step`] replaces the run's result for that step (matched by `step_id`, or
//!   appended when the run has none yet). When it returns, the result survives the process
//!   being killed. A run whose stored status is not `running` has ended: `save_step` is then a
//!   `Conflict` and writes nothing, so a step cancelled mid-save never changes a final record.
//! - [`RunStore::finish_run`] replaces the whole record (status, times, every step result).
//! - Concurrent calls for different runs, and for different steps of one run, lose nothing.
//! - [`RunStore::list_runs`] returns summaries newest first (by `started_at`, then id) and pages
//!   with an opaque cursor; filters are exact matches.
//! - A record that cannot be read back (a damaged file or row) is a
//!   [`StoreErrorKind::Corrupt`] error naming where it is; it is never skipped silently.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::run::{Run, RunStatus, StepResult, StepStatus};
use crate::workflow::{Workflow, WorkflowStatus};

/// One version of a saved workflow, with its lifecycle state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StoredWorkflow {
    /// The definition; `workflow.id` is the workflow's id, `workflow.status` its lifecycle state.
    pub workflow: Workflow,
    /// 1-based version number.
    pub version: u32,
    /// Hash of the graph (inputs, steps, edges), to tell whether it changed.
    pub graph_hash: String,
    /// Who approved this version, when, and which graph they saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// The green validation run that allowed activation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_run_id: Option<String>,
    /// When the version was saved.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Bumped by every update; see the [module contract](self).
    #[serde(default)]
    pub revision: u64,
}

impl StoredWorkflow {
    /// A new version in the state `workflow.status` says, with no approval yet.
    pub fn new(workflow: Workflow, version: u32, graph_hash: impl Into<String>) -> Self {
        let now = Utc::now();
        StoredWorkflow {
            workflow,
            version,
            graph_hash: graph_hash.into(),
            approval: None,
            validation_run_id: None,
            created_at: now,
            updated_at: now,
            revision: 0,
        }
    }

    /// The workflow's id.
    pub fn id(&self) -> &str {
        &self.workflow.id
    }

    /// Its lifecycle state.
    pub fn state(&self) -> WorkflowStatus {
        self.workflow.status
    }
}

/// An approval: who, when, and the hash of the graph they approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Approval {
    /// Who approved.
    pub by: String,
    /// When.
    pub at: DateTime<Utc>,
    /// The graph they approved.
    pub graph_hash: String,
}

impl Approval {
    /// An approval made now.
    pub fn now(by: impl Into<String>, graph_hash: impl Into<String>) -> Self {
        Approval {
            by: by.into(),
            at: Utc::now(),
            graph_hash: graph_hash.into(),
        }
    }
}

/// Where workflow versions are kept. See the [module contract](self).
#[async_trait::async_trait]
pub trait WorkflowStore: Send + Sync + fmt::Debug {
    /// Adds a new version.
    async fn insert_workflow(&self, record: &StoredWorkflow) -> Result<(), StoreError>;
    /// Replaces a version if nobody changed it since `record` was read; returns the stored copy.
    async fn update_workflow(&self, record: &StoredWorkflow) -> Result<StoredWorkflow, StoreError>;
    /// One version, or the latest when `version` is `None`.
    async fn workflow(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<Option<StoredWorkflow>, StoreError>;
    /// Every version of a workflow, oldest first.
    async fn workflow_versions(&self, id: &str) -> Result<Vec<StoredWorkflow>, StoreError>;
    /// The latest version of every workflow, by id.
    async fn list_workflows(&self) -> Result<Vec<StoredWorkflow>, StoreError>;
}

/// Where runs are kept. See the [module contract](self).
#[async_trait::async_trait]
pub trait RunStore: Send + Sync + fmt::Debug {
    /// Records a new run.
    async fn create_run(&self, run: &Run) -> Result<(), StoreError>;
    /// Replaces (or adds) one step's result; durable when it returns.
    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError>;
    /// Replaces the whole record, typically once the run has ended.
    async fn finish_run(&self, run: &Run) -> Result<(), StoreError>;
    /// One run.
    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError>;
    /// Run history, newest first.
    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError>;
}

/// A history query: filters, page size and where the previous page ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RunQuery {
    /// Only runs of this workflow.
    pub workflow_id: Option<String>,
    /// Only runs with this status.
    pub status: Option<RunStatus>,
    /// Only runs started at or after this time.
    pub started_after: Option<DateTime<Utc>>,
    /// Only runs started before this time.
    pub started_before: Option<DateTime<Utc>>,
    /// At most this many runs (0 means [`RunQuery::DEFAULT_LIMIT`]).
    pub limit: usize,
    /// The previous page's [`RunPage::next_cursor`].
    pub cursor: Option<String>,
    /// Only runs held (or last held) by this worker of a run queue.
    pub worker: Option<String>,
}

impl RunQuery {
    /// Page size when none is given.
    pub const DEFAULT_LIMIT: usize = 50;

    /// Every run, first page.
    pub fn new() -> Self {
        RunQuery::default()
    }

    /// Only runs of `workflow_id`.
    #[must_use]
    pub fn workflow(mut self, workflow_id: impl Into<String>) -> Self {
        self.workflow_id = Some(workflow_id.into());
        self
    }

    /// Only runs with `status`.
    #[must_use]
    pub fn status(mut self, status: RunStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Only runs started in `[after, before)`; either end may be open.
    #[must_use]
    pub fn started_between(
        mut self,
        after: Option<DateTime<Utc>>,
        before: Option<DateTime<Utc>>,
    ) -> Self {
        self.started_after = after;
        self.started_before = before;
        self
    }

    /// Only runs held (or last held) by the queue worker `name`.
    #[must_use]
    pub fn worker(mut self, name: impl Into<String>) -> Self {
        self.worker = Some(name.into());
        self
    }

    /// Pages of `limit` runs.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The page after the one that returned `cursor`.
    #[must_use]
    pub fn after(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// The page size to use.
    pub fn page_size(&self) -> usize {
        if self.limit == 0 {
            RunQuery::DEFAULT_LIMIT
        } else {
            self.limit
        }
    }

    /// True when `summary` passes the filters (not the cursor).
    pub fn matches(&self, summary: &RunSummary) -> bool {
        self.workflow_id
            .as_ref()
            .is_none_or(|id| *id == summary.workflow_id)
            && self.status.is_none_or(|status| status == summary.status)
            && self
                .started_after
                .is_none_or(|after| summary.started_at.is_some_and(|at| at >= after))
            && self
                .started_before
                .is_none_or(|before| summary.started_at.is_some_and(|at| at < before))
            && self
                .worker
                .as_ref()
                .is_none_or(|worker| summary.worker.as_ref() == Some(worker))
    }
}

/// One page of run history.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[non_exhaustive]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// Pass to [`RunQuery::after`] for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl RunPage {
    /// Cuts `sorted` (newest first, filtered, starting after the query's cursor) into a page.
    pub fn from_sorted(mut sorted: Vec<RunSummary>, query: &RunQuery) -> RunPage {
        let size = query.page_size();
        let next_cursor = if sorted.len() > size {
            sorted.truncate(size);
            sorted.last().map(RunSummary::cursor)
        } else {
            None
        };
        RunPage {
            runs: sorted,
            next_cursor,
        }
    }
}

/// A run without its step outputs: what history lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunSummary {
    /// The run.
    pub id: String,
    /// Its workflow.
    pub workflow_id: String,
    /// The workflow version it ran, when it ran a saved one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_version: Option<u32>,
    /// Overall status.
    pub status: RunStatus,
    /// When it started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Steps in the workflow.
    pub steps: usize,
    /// Steps that failed, or whose outcome is unknown (skipped on resume): not done either way.
    pub failed_steps: usize,
    /// The run-queue worker that holds (or last held) it; only stores with a run queue know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

impl RunSummary {
    /// The summary of `run`.
    pub fn of(run: &Run) -> RunSummary {
        RunSummary {
            id: run.id.clone(),
            workflow_id: run.workflow_id.clone(),
            workflow_version: run.workflow_version,
            status: run.status,
            started_at: run.started_at,
            finished_at: run.finished_at,
            steps: run.step_results.len(),
            failed_steps: run
                .step_results
                .iter()
                .filter(|result| {
                    matches!(
                        result.status,
                        StepStatus::Failed | StepStatus::UnknownOutcome
                    )
                })
                .count(),
            worker: None,
        }
    }

    /// The history order: newest `started_at` first (runs not started last), then id.
    pub fn newest_first(a: &RunSummary, b: &RunSummary) -> std::cmp::Ordering {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| a.id.cmp(&b.id))
    }

    /// True when this summary comes after the page that ended at `cursor`.
    pub fn is_after(&self, cursor: &Cursor) -> bool {
        Self::newest_first(self, &cursor.at) == std::cmp::Ordering::Greater
    }

    fn cursor(&self) -> String {
        let at = self
            .started_at
            .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true))
            .unwrap_or_default();
        format!("{at}|{}", self.id)
    }
}

/// A decoded [`RunPage::next_cursor`]: the last run of the previous page.
#[derive(Debug, Clone)]
pub struct Cursor {
    at: RunSummary,
}

impl Cursor {
    /// Decodes a cursor; a malformed one is an [`StoreErrorKind::Invalid`] error.
    pub fn parse(text: &str) -> Result<Cursor, StoreError> {
        let invalid = || {
            StoreError::new(
                StoreErrorKind::Invalid,
                format!("`{text}` is not a run history cursor; pass the `next_cursor` of a page"),
            )
        };
        let (at, id) = text.split_once('|').ok_or_else(invalid)?;
        let started_at = if at.is_empty() {
            None
        } else {
            Some(
                DateTime::parse_from_rfc3339(at)
                    .map_err(|_| invalid())?
                    .with_timezone(&Utc),
            )
        };
        Ok(Cursor {
            at: RunSummary {
                id: id.to_owned(),
                workflow_id: String::new(),
                workflow_version: None,
                status: RunStatus::Running,
                started_at,
                finished_at: None,
                steps: 0,
                failed_steps: 0,
                worker: None,
            },
        })
    }

    /// When the last run of the previous page started.
    pub fn started_at(&self) -> Option<DateTime<Utc>> {
        self.at.started_at
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.at.id
    }
}

/// Checks a workflow or run id: 1 to 128 characters from `A-Z a-z 0-9 _ - .`, not starting
/// with `.` (ids become file names in the file store, so every store accepts the same ids).
pub fn check_id(what: &str, id: &str) -> Result<(), StoreError> {
    let valid = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(StoreError::new(
            StoreErrorKind::Invalid,
            format!(
                "{what} id `{}` cannot be stored: use 1 to 128 letters, digits, `_`, `-` or `.`, not starting with `.`",
                id.escape_debug()
            ),
        ))
    }
}

/// What kind of store failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The thing named does not exist.
    NotFound,
    /// It exists already, or changed since it was read.
    Conflict,
    /// The request itself is wrong (a bad id, a bad cursor).
    Invalid,
    /// Stored data cannot be read back.
    Corrupt,
    /// The storage failed (disk, database, permissions).
    Unavailable,
}

/// A store failure: its kind and a message that says what and where (never a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

impl StoreError {
    /// A failure of `kind`.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        StoreError {
            kind,
            message: message.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// Its message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, at: Option<&str>) -> RunSummary {
        let mut run = Run::new(id, "w");
        run.started_at = at.map(|at| at.parse().unwrap());
        RunSummary::of(&run)
    }

    #[test]
    fn ids_that_are_not_file_names_are_refused() {
        for good in ["a", "run-1.2_x", &"x".repeat(128)] {
            assert!(check_id("run", good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "a b", "..", "ü", &"x".repeat(129)] {
            let error = check_id("run", bad).unwrap_err();
            assert_eq!(error.kind(), StoreErrorKind::Invalid, "{bad}");
        }
    }

    #[test]
    fn pages_follow_the_cursor_newest_first() {
        let mut all = vec![
            summary("b", Some("2026-01-01T00:00:02Z")),
            summary("a", Some("2026-01-01T00:00:02Z")),
            summary("c", Some("2026-01-01T00:00:03Z")),
            summary("d", None),
        ];
        all.sort_by(RunSummary::newest_first);
        let ids: Vec<_> = all.iter().map(|run| run.id.as_str()).collect();
        assert_eq!(ids, ["c", "a", "b", "d"]);
        let query = RunQuery::new().limit(2);
        let page = RunPage::from_sorted(all.clone(), &query);
        assert_eq!(page.runs.len(), 2);
        let cursor = Cursor::parse(page.next_cursor.as_deref().unwrap()).unwrap();
        let rest: Vec<_> = all
            .into_iter()
            .filter(|run| run.is_after(&cursor))
            .collect();
        let ids: Vec<_> = rest.iter().map(|run| run.id.as_str()).collect();
        assert_eq!(ids, ["b", "d"]);
        assert_eq!(
            Cursor::parse("nonsense").unwrap_err().kind(),
            StoreErrorKind::Invalid
        );
    }
}

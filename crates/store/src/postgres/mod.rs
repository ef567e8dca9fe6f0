//! [`PostgresStore`]: workflows and runs in a PostgreSQL database, shared by every process that
//! opens it (several hosts, a pool of workers).
//!
//! The tables mirror the SQLite store's: `wayline_workflows`, `wayline_runs` (a run's header)
//! and `wayline_step_results` (one row per step). Records are `json` (not `jsonb`, which would
//! reorder their keys); the columns that queries filter and sort on are plain columns, text
//! ones in the `C` collation so that their order is byte order, as in the other stores. The
//! schema is versioned in `wayline_migrations` and brought up to date on first use.
//!
//! Every write is one transaction on the server; a step result locks its run's row, so that a
//! result cannot land after the run's final record, whatever process sends it.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use wayline_core::store::{
    Cursor, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreErrorKind, StoredWorkflow,
    WorkflowStore, check_id,
};
use wayline_core::{Run, RunStatus, StepResult};
use wayline_durable::postgres::deadpool_postgres::{Client, GenericClient};
use wayline_durable::postgres::{Database, Tables, tokio_postgres};

use crate::records::{self, timestamp, to_json};

mod queue;
mod schedules;

/// The schema of the workflow and run store (component `store` in `wayline_migrations`).
const MIGRATIONS: &[&str] = &[
    // 1: workflows, runs, step results.
    r#"CREATE TABLE wayline_workflows (
        id TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        state TEXT NOT NULL,
        revision BIGINT NOT NULL,
        record JSON NOT NULL,
        PRIMARY KEY (id, version)
    );
    CREATE TABLE wayline_runs (
        id TEXT COLLATE "C" PRIMARY KEY,
        workflow_id TEXT COLLATE "C" NOT NULL,
        workflow_version BIGINT,
        status TEXT NOT NULL,
        -- RFC 3339 UTC with nanoseconds, fixed width: text order is time order, and the
        -- precision is the record's (timestamptz keeps microseconds).
        started_at TEXT COLLATE "C",
        finished_at TEXT COLLATE "C",
        record JSON NOT NULL
    );
    CREATE INDEX wayline_runs_newest_first ON wayline_runs (started_at DESC, id);
    CREATE INDEX wayline_runs_by_workflow ON wayline_runs (workflow_id, started_at DESC, id);
    CREATE TABLE wayline_step_results (
        run_id TEXT COLLATE "C" NOT NULL REFERENCES wayline_runs (id) ON DELETE CASCADE,
        -- From a sequence: results keep the order they were first saved in, without two
        -- writers of one run computing the same next position.
        position BIGSERIAL NOT NULL,
        step_id TEXT COLLATE "C" NOT NULL,
        status TEXT NOT NULL,
        result JSON NOT NULL,
        PRIMARY KEY (run_id, step_id)
    );
    CREATE INDEX wayline_step_results_position ON wayline_step_results (run_id, position);"#,
    // 2: the run queue and its workers (see `queue.rs`).
    r#"CREATE TABLE wayline_queue (
        run_id TEXT COLLATE "C" PRIMARY KEY,
        workflow_id TEXT COLLATE "C" NOT NULL,
        workflow_version BIGINT NOT NULL,
        inputs JSON NOT NULL,
        in_flight TEXT NOT NULL,
        state TEXT NOT NULL,
        worker TEXT COLLATE "C",
        attempts INTEGER NOT NULL DEFAULT 0,
        submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        -- Submission order among runs submitted in the same microsecond.
        seq BIGSERIAL NOT NULL,
        claimed_at TIMESTAMPTZ,
        lease_until TIMESTAMPTZ,
        finished_at TIMESTAMPTZ,
        cancel_requested BOOLEAN NOT NULL DEFAULT false,
        note TEXT
    );
    -- What a claim scans: only runs not yet ended are in it.
    CREATE INDEX wayline_queue_claimable ON wayline_queue (submitted_at, seq)
        WHERE state IN ('queued', 'running');
    CREATE INDEX wayline_queue_by_worker ON wayline_queue (worker, state);
    CREATE TABLE wayline_workers (
        name TEXT COLLATE "C" PRIMARY KEY,
        host TEXT NOT NULL,
        pid BIGINT NOT NULL,
        concurrency INTEGER NOT NULL,
        lease_ms BIGINT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        last_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
        stopping BOOLEAN NOT NULL DEFAULT false,
        finished BIGINT NOT NULL DEFAULT 0
    );"#,
    // 3: shared schedules and the record of each due time (see `schedules.rs`).
    r#"CREATE TABLE wayline_schedules (
        id TEXT COLLATE "C" PRIMARY KEY,
        workflow_id TEXT COLLATE "C" NOT NULL,
        every_ms BIGINT,
        cron TEXT,
        inputs JSON NOT NULL,
        missed TEXT NOT NULL,
        until_at TIMESTAMPTZ,
        -- The definition as text: a sync that changes it starts the schedule again.
        definition TEXT NOT NULL,
        start_at TIMESTAMPTZ NOT NULL,
        next_due TIMESTAMPTZ
    );
    CREATE INDEX wayline_schedules_due ON wayline_schedules (next_due);
    -- One row per schedule and due time: the reason a due time fires once, whoever fires it.
    CREATE TABLE wayline_schedule_fires (
        schedule_id TEXT COLLATE "C" NOT NULL,
        due_at TIMESTAMPTZ NOT NULL,
        run_id TEXT COLLATE "C",
        note TEXT,
        fired_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (schedule_id, due_at)
    );"#,
    // 4: a shared schedule's in-flight policy for the runs it queues.
    r#"ALTER TABLE wayline_schedules ADD COLUMN in_flight TEXT NOT NULL DEFAULT 'ask';"#,
    // 5: a schedule counts its fires itself, so that old fire records can be pruned.
    r#"ALTER TABLE wayline_schedules ADD COLUMN fired BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN skipped BIGINT NOT NULL DEFAULT 0;
    UPDATE wayline_schedules s SET
        fired = (SELECT COUNT(*) FROM wayline_schedule_fires f
                 WHERE f.schedule_id = s.id AND f.run_id IS NOT NULL),
        skipped = (SELECT COUNT(*) FROM wayline_schedule_fires f
                   WHERE f.schedule_id = s.id AND f.run_id IS NULL);
    CREATE INDEX wayline_schedule_fires_age ON wayline_schedule_fires (fired_at);"#,
];

/// Workflows, runs and the run queue in PostgreSQL. Cloning shares the connection pool.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pub(crate) inner: Arc<Inner>,
    /// The worker whose leases this handle's run writes need (see
    /// [`RunQueue::fenced_runs`](crate::queue::RunQueue::fenced_runs)).
    pub(crate) fence: Option<Arc<str>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    tables: Tables,
}

impl PostgresStore {
    /// The store in the database `url` names (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`).
    /// Nothing connects yet: the first call connects and brings the schema up to date, and
    /// reports a server that cannot be reached.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let database = Database::open(url).map_err(unavailable)?;
        Ok(PostgresStore::on(database))
    }

    /// The store in `database` (whose pool it shares).
    pub fn on(database: Database) -> PostgresStore {
        PostgresStore {
            inner: Arc::new(Inner {
                tables: database.tables("store", MIGRATIONS),
            }),
            fence: None,
        }
    }

    /// Opens the store at `url`, connects and brings the schema up to date now.
    pub async fn connect(url: &str) -> Result<PostgresStore, StoreError> {
        let store = PostgresStore::open(url)?;
        drop(store.client().await?);
        Ok(store)
    }

    /// The database (its pool, and its URL with the password masked).
    pub fn database(&self) -> &Database {
        self.inner.tables.database()
    }

    /// A pooled connection to an up-to-date schema.
    pub(crate) async fn client(&self) -> Result<Client, StoreError> {
        self.inner.tables.client().await.map_err(unavailable)
    }

    /// `error` from this store's database, as a [`StoreError`].
    pub(crate) fn error(&self, error: &tokio_postgres::Error) -> StoreError {
        unavailable(self.database().error(error))
    }

    /// Refuses a write to `run_id` through a fenced handle when the run is in the queue and
    /// this handle's worker does not hold it. The queue row stays key-share-locked until the
    /// transaction ends, so a claim (`FOR UPDATE SKIP LOCKED`) cannot take the run between
    /// the check and the write; renewals and releases, which change no key, do not wait.
    async fn check_fence(
        &self,
        client: &impl GenericClient,
        run_id: &str,
    ) -> Result<(), StoreError> {
        let Some(worker) = &self.fence else {
            return Ok(());
        };
        let row = client
            .query_opt(
                "SELECT worker, state FROM wayline_queue WHERE run_id = $1 FOR KEY SHARE",
                &[&run_id],
            )
            .await
            .map_err(|error| self.error(&error))?;
        match row {
            None => Ok(()),
            Some(row)
                if row.get::<_, Option<&str>>(0) == Some(&**worker)
                    && row.get::<_, &str>(1) == "running" =>
            {
                Ok(())
            }
            Some(_) => Err(lease_lost(run_id, worker)),
        }
    }

    /// Run `id`, read through `client` (inside its transaction, if it is one).
    pub(crate) async fn run_in(
        &self,
        client: &impl GenericClient,
        id: &str,
    ) -> Result<Option<Run>, StoreError> {
        // One statement, so the header and the steps come from one snapshot.
        let row = client
            .query_opt(
                "SELECT r.record::text,
                    (SELECT COALESCE(json_agg(s.result ORDER BY s.position), '[]'::json)::text
                     FROM wayline_step_results s WHERE s.run_id = r.id)
                 FROM wayline_runs r WHERE r.id = $1",
                &[&id],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let mut run: Run = self.decode(row.get(0), &format!("run `{id}`"))?;
        run.step_results = self.decode(row.get(1), &format!("the step results of run `{id}`"))?;
        Ok(Some(run))
    }

    /// Writes `run` whole (header and steps) in one transaction, replacing the stored run when
    /// `replace` is set; `false` when there is no run to replace, or one already to create.
    async fn write_whole(&self, run: &Run, replace: bool) -> Result<bool, StoreError> {
        let rows = RunRows::of(run)?;
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        self.check_fence(&transaction, &run.id).await?;
        let written = write_run(&transaction, run, &rows, replace)
            .await
            .map_err(|error| self.error(&error))?;
        if written {
            transaction
                .commit()
                .await
                .map_err(|error| self.error(&error))?;
        }
        Ok(written)
    }

    fn corrupt(&self, what: &str, error: &serde_json::Error) -> StoreError {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!(
                "{what} in {} is damaged: {error}; restore the database from a backup or delete that row",
                self.database().shown()
            ),
        )
    }

    fn decode<T: DeserializeOwned>(&self, text: &str, what: &str) -> Result<T, StoreError> {
        serde_json::from_str(text).map_err(|error| self.corrupt(what, &error))
    }
}

/// The refusal of a write by a worker that no longer holds the run.
pub(crate) fn lease_lost(run_id: &str, worker: &str) -> StoreError {
    StoreError::new(
        StoreErrorKind::Conflict,
        format!(
            "run `{run_id}` is no longer held by worker `{worker}` (its lease ran out and another worker took the run over, or it was requeued); this worker's writes to it are refused"
        ),
    )
}

/// A failure of the database, as a [`StoreError`] the caller may retry.
pub(crate) fn unavailable(error: wayline_durable::Error) -> StoreError {
    StoreError::new(StoreErrorKind::Unavailable, error.to_string())
}

/// A run's header (its record without step results) and its step results, as rows.
struct RunRows {
    header: String,
    step_ids: Vec<String>,
    statuses: Vec<String>,
    results: Vec<String>,
}

impl RunRows {
    fn of(run: &Run) -> Result<RunRows, StoreError> {
        let mut header = run.clone();
        header.step_results = Vec::new();
        let mut rows = RunRows {
            header: to_json(&header)?,
            step_ids: Vec::with_capacity(run.step_results.len()),
            statuses: Vec::with_capacity(run.step_results.len()),
            results: Vec::with_capacity(run.step_results.len()),
        };
        for result in &run.step_results {
            rows.step_ids.push(result.step_id.clone());
            rows.statuses.push(result.status.as_str().to_owned());
            rows.results.push(to_json(result)?);
        }
        Ok(rows)
    }
}

/// Inserts the run's header row.
const INSERT_RUN: &str = "INSERT INTO wayline_runs
        (id, workflow_id, workflow_version, status, started_at, finished_at, record)
    VALUES ($1, $2, $3, $4, $5, $6, $7::text::json)
    ON CONFLICT (id) DO NOTHING";

/// Inserts a run's step results in their order (positions from the sequence, in row order).
const INSERT_STEPS: &str = "INSERT INTO wayline_step_results (run_id, step_id, status, result)
    SELECT $1, s.step_id, s.status, s.result::json
    FROM UNNEST($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS s(step_id, status, result, n)
    ORDER BY s.n";

/// Writes the run's header and steps inside `client`'s transaction; `false` when `replace`
/// is set and the run is not stored, or is not set and it is.
async fn write_run(
    client: &impl GenericClient,
    run: &Run,
    rows: &RunRows,
    replace: bool,
) -> Result<bool, tokio_postgres::Error> {
    let version = run.workflow_version.map(i64::from);
    let (started, finished) = (timestamp(run.started_at), timestamp(run.finished_at));
    let written = if replace {
        let updated = client
            .execute(
                "UPDATE wayline_runs SET workflow_id = $2, workflow_version = $3, status = $4,
                    started_at = $5, finished_at = $6, record = $7::text::json
                 WHERE id = $1",
                &[
                    &run.id,
                    &run.workflow_id,
                    &version,
                    &run.status.as_str(),
                    &started,
                    &finished,
                    &rows.header,
                ],
            )
            .await?;
        if updated == 1 {
            client
                .execute(
                    "DELETE FROM wayline_step_results WHERE run_id = $1",
                    &[&run.id],
                )
                .await?;
        }
        updated
    } else {
        let statement = client.prepare_cached(INSERT_RUN).await?;
        client
            .execute(
                &statement,
                &[
                    &run.id,
                    &run.workflow_id,
                    &version,
                    &run.status.as_str(),
                    &started,
                    &finished,
                    &rows.header,
                ],
            )
            .await?
    };
    if written == 0 {
        return Ok(false);
    }
    if !rows.results.is_empty() {
        let statement = client.prepare_cached(INSERT_STEPS).await?;
        client
            .execute(
                &statement,
                &[&run.id, &rows.step_ids, &rows.statuses, &rows.results],
            )
            .await?;
    }
    Ok(true)
}

#[async_trait::async_trait]
impl WorkflowStore for PostgresStore {
    async fn insert_workflow(&self, record: &StoredWorkflow) -> Result<(), StoreError> {
        check_id("workflow", record.id())?;
        let text = to_json(record)?;
        let client = self.client().await?;
        let inserted = client
            .execute(
                "INSERT INTO wayline_workflows (id, version, state, revision, record)
                 VALUES ($1, $2, $3, $4, $5::text::json) ON CONFLICT DO NOTHING",
                &[
                    &record.id(),
                    &i64::from(record.version),
                    &record.state().as_str(),
                    &(record.revision as i64),
                    &text,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        if inserted == 0 {
            return Err(records::version_exists(record));
        }
        Ok(())
    }

    async fn update_workflow(&self, record: &StoredWorkflow) -> Result<StoredWorkflow, StoreError> {
        let mut next = record.clone();
        // Wrapping: a hand-edited record may hold the largest value; any change still shows.
        next.revision = next.revision.wrapping_add(1);
        let text = to_json(&next)?;
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        let current = transaction
            .query_opt(
                "SELECT revision FROM wayline_workflows WHERE id = $1 AND version = $2 FOR UPDATE",
                &[&record.id(), &i64::from(record.version)],
            )
            .await
            .map_err(|error| self.error(&error))?
            .ok_or_else(|| records::version_missing(record))?;
        let mut stored = record.clone();
        stored.revision = current.get::<_, i64>(0) as u64;
        records::check_revision(&stored, record)?;
        transaction
            .execute(
                "UPDATE wayline_workflows SET state = $3, revision = $4, record = $5::text::json
                 WHERE id = $1 AND version = $2",
                &[
                    &next.id(),
                    &i64::from(next.version),
                    &next.state().as_str(),
                    &(next.revision as i64),
                    &text,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        transaction
            .commit()
            .await
            .map_err(|error| self.error(&error))?;
        Ok(next)
    }

    async fn workflow(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<Option<StoredWorkflow>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT record::text FROM wayline_workflows
                 WHERE id = $1 AND ($2::bigint IS NULL OR version = $2)
                 ORDER BY version DESC LIMIT 1",
                &[&id, &version.map(i64::from)],
            )
            .await
            .map_err(|error| self.error(&error))?;
        row.map(|row| self.decode(row.get(0), &format!("workflow `{id}`")))
            .transpose()
    }

    async fn workflow_versions(&self, id: &str) -> Result<Vec<StoredWorkflow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT record::text FROM wayline_workflows WHERE id = $1 ORDER BY version",
                &[&id],
            )
            .await
            .map_err(|error| self.error(&error))?;
        rows.iter()
            .map(|row| self.decode(row.get(0), &format!("workflow `{id}`")))
            .collect()
    }

    async fn list_workflows(&self) -> Result<Vec<StoredWorkflow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT ON (id) id, record::text FROM wayline_workflows
                 ORDER BY id, version DESC",
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?;
        rows.iter()
            .map(|row| {
                let id: &str = row.get(0);
                self.decode(row.get(1), &format!("workflow `{id}`"))
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        check_id("run", &run.id)?;
        if self.write_whole(run, false).await? {
            Ok(())
        } else {
            Err(records::run_exists(&run.id))
        }
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        let text = to_json(result)?;
        let client = self.client().await?;
        // One statement: the run's row is locked (a final record being written waits, or has
        // been written), the result is saved only while the run is running and, through a
        // fenced handle, while its worker ($5) holds it in the queue (the queue row is
        // key-share-locked, so a claim skips the run until this write is done); the answer
        // says which.
        let statement = client
            .prepare_cached(
                "WITH fence AS (
                    SELECT worker, state FROM wayline_queue WHERE run_id = $1 FOR KEY SHARE
                 ),
                 allowed AS (
                    SELECT $5::text IS NULL OR NOT EXISTS (SELECT 1 FROM fence)
                        OR EXISTS (SELECT 1 FROM fence WHERE worker = $5 AND state = 'running')
                        AS ok
                 ),
                 run AS (SELECT status FROM wayline_runs WHERE id = $1 FOR UPDATE),
                 saved AS (
                    INSERT INTO wayline_step_results (run_id, step_id, status, result)
                    SELECT $1, $2, $3, $4::text::json FROM run, allowed
                    WHERE run.status = 'running' AND allowed.ok
                    ON CONFLICT (run_id, step_id)
                    DO UPDATE SET status = excluded.status, result = excluded.result
                    RETURNING 1
                 )
                 SELECT (SELECT status FROM run), (SELECT COUNT(*) FROM saved),
                    (SELECT ok FROM allowed)",
            )
            .await
            .map_err(|error| self.error(&error))?;
        let fence = self.fence.as_deref();
        let row = client
            .query_one(
                &statement,
                &[
                    &run_id,
                    &result.step_id,
                    &result.status.as_str(),
                    &text,
                    &fence,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let status: Option<&str> = row.get(0);
        let saved: i64 = row.get(1);
        let allowed: bool = row.get(2);
        match (status, fence) {
            (None, _) => Err(records::run_missing(run_id)),
            (Some(_), Some(worker)) if !allowed => Err(lease_lost(run_id, worker)),
            (Some(_), _) if saved == 0 => Err(records::run_ended(run_id)),
            (Some(_), _) => Ok(()),
        }
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        if self.write_whole(run, true).await? {
            Ok(())
        } else {
            Err(records::run_missing(&run.id))
        }
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        let client = self.client().await?;
        self.run_in(&client, id).await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let (cursor_set, cursor_at, cursor_id) = match &cursor {
            Some(cursor) => (true, timestamp(cursor.started_at()), cursor.id().to_owned()),
            None => (false, None, String::new()),
        };
        let limit = i64::try_from(query.page_size().saturating_add(1)).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT r.id, r.record::text,
                    (SELECT COUNT(*) FROM wayline_step_results s WHERE s.run_id = r.id),
                    (SELECT COUNT(*) FROM wayline_step_results s
                     WHERE s.run_id = r.id AND s.status IN ('failed', 'unknown_outcome')),
                    q.worker
                 FROM wayline_runs AS r LEFT JOIN wayline_queue AS q ON q.run_id = r.id
                 WHERE ($1::text IS NULL OR r.workflow_id = $1)
                   AND ($9::text IS NULL OR q.worker = $9)
                   AND ($2::text IS NULL OR r.status = $2)
                   AND ($3::text IS NULL OR r.started_at >= $3)
                   AND ($4::text IS NULL OR r.started_at < $4)
                   AND (NOT $5::bool
                        OR ($6::text IS NOT NULL AND (r.started_at < $6
                            OR (r.started_at = $6 AND r.id > $7) OR r.started_at IS NULL))
                        OR ($6::text IS NULL AND r.started_at IS NULL AND r.id > $7))
                 ORDER BY r.started_at IS NULL, r.started_at DESC, r.id
                 LIMIT $8",
                &[
                    &query.workflow_id,
                    &query.status.map(RunStatus::as_str),
                    &timestamp(query.started_after),
                    &timestamp(query.started_before),
                    &cursor_set,
                    &cursor_at,
                    &cursor_id,
                    &limit,
                    &query.worker,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let mut summaries = Vec::with_capacity(rows.len());
        for row in rows {
            let id: &str = row.get(0);
            let run: Run = self.decode(row.get(1), &format!("run `{id}`"))?;
            let mut summary = RunSummary::of(&run);
            summary.steps = usize::try_from(row.get::<_, i64>(2)).unwrap_or_default();
            summary.failed_steps = usize::try_from(row.get::<_, i64>(3)).unwrap_or_default();
            summary.worker = row.get(4);
            summaries.push(summary);
        }
        Ok(RunPage::from_sorted(summaries, query))
    }
}

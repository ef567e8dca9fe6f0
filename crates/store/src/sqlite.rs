//! [`SqliteStore`]: workflows and runs in one SQLite database (WAL mode, versioned migrations).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use wayline_core::store::{
    Cursor, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreErrorKind, StoredWorkflow,
    WorkflowStore, check_id,
};
use wayline_core::{Run, RunStatus, StepResult};
use wayline_durable::sqlite::{self, BUSY_TIMEOUT, Synchronous};

use crate::records::{self, timestamp, to_json};

/// The schema, one entry per version; a database at version N runs entries N.. on open.
const MIGRATIONS: &[&str] = &[
    // 1: workflows, runs, step results.
    "CREATE TABLE workflows (
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        state TEXT NOT NULL,
        revision INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (id, version)
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        workflow_id TEXT NOT NULL,
        workflow_version INTEGER,
        status TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        record TEXT NOT NULL
    );
    CREATE INDEX runs_newest_first ON runs (started_at DESC, id);
    CREATE INDEX runs_by_workflow ON runs (workflow_id, started_at DESC, id);
    CREATE TABLE step_results (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        step_id TEXT NOT NULL,
        status TEXT NOT NULL,
        result TEXT NOT NULL,
        PRIMARY KEY (run_id, step_id)
    );",
    // 2: appending a step result finds the next position through an index, not a scan.
    "CREATE INDEX step_results_position ON step_results (run_id, position);",
];

/// How much a commit survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Survives the process being killed (`kill -9`, a panic, an OOM kill), not necessarily a
    /// power cut or an OS crash (`synchronous=NORMAL`: the WAL is synced at checkpoints, not at
    /// every commit). An uncontended write commits on the caller's thread; concurrent writes
    /// are batched by the writer thread.
    #[default]
    Process,
    /// Survives a power cut too (`synchronous=FULL`: every commit syncs the WAL). Every write
    /// goes through the writer thread, so no async task blocks on an fsync.
    Power,
}

/// Workflows and runs in a SQLite database.
///
/// All writes go through one writer thread that owns the write connection. It takes every
/// change waiting for it, applies each in its own savepoint inside one transaction, commits
/// once and then answers each caller: many steps finishing at once cost one commit (group
/// commit), and a caller's change is durable when its call returns. Reads use a second
/// connection, which WAL lets run beside the writer. Another process may share the database;
/// SQLite's locking (with a busy timeout) keeps the two apart.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    writer: Mutex<mpsc::Sender<Job>>,
    /// The write connection, shared by the writer thread and the inline path.
    connection: Arc<Mutex<Connection>>,
    /// Whether an uncontended write may commit on the caller's thread (see [`Durability`]).
    inline: bool,
    reader: Mutex<Connection>,
}

/// What a change answers: the stored workflow for an update, nothing otherwise.
type Outcome = Result<Option<StoredWorkflow>, StoreError>;

/// One change, applied inside a transaction.
type Change = Box<dyn FnOnce(&Connection) -> Outcome + Send>;

/// A change for the writer thread, and whom to answer.
struct Job {
    change: Change,
    reply: oneshot::Sender<Outcome>,
}

/// At most this many changes share one transaction.
const MAX_BATCH: usize = 512;

impl SqliteStore {
    /// Opens (creating when needed) the database at `path`, with [`Durability::Process`].
    pub fn open(path: impl Into<PathBuf>) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, Durability::default())
    }

    /// Opens the database at `path` with the given durability.
    pub fn open_with(
        path: impl Into<PathBuf>,
        durability: Durability,
    ) -> Result<SqliteStore, StoreError> {
        let path = path.into();
        let writer = connect(&path, durability)?;
        migrate(&writer, &path)?;
        let reader = connect(&path, durability)?;
        let connection = Arc::new(Mutex::new(writer));
        let (sender, receiver) = mpsc::channel();
        let thread_path = path.clone();
        let thread_connection = Arc::clone(&connection);
        std::thread::Builder::new()
            .name("wayline-sqlite-writer".into())
            .spawn(move || write_loop(&thread_connection, &receiver, &thread_path))
            .map_err(|error| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("cannot start the SQLite writer thread: {error}"),
                )
            })?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(sender),
                connection,
                inline: durability == Durability::Process,
                reader: Mutex::new(reader),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Applies `change` in a transaction of its own or in the writer's next batch; returns once
    /// it is committed.
    async fn write(&self, change: impl FnOnce(&Connection) -> Outcome + Send + 'static) -> Outcome {
        // The inline path: when nobody else is writing, a commit without an fsync is cheaper
        // than two thread hand-offs. Under contention the writer thread batches, and when
        // another process holds the database's write lock the writer thread waits for it, so
        // an async task never sits in SQLite's busy wait.
        if self.inner.inline
            && let Ok(connection) = self.inner.connection.try_lock()
            && begin_without_waiting(&connection)
        {
            let change: Change = Box::new(change);
            return apply_begun(&connection, vec![change], &self.inner.path)
                .pop()
                .unwrap_or_else(|| Err(self.writer_gone()));
        }
        let (reply, answer) = oneshot::channel();
        let job = Job {
            change: Box::new(change),
            reply,
        };
        let sent = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(job);
        if sent.is_err() {
            return Err(self.writer_gone());
        }
        answer.await.map_err(|_| self.writer_gone())?
    }

    fn writer_gone(&self) -> StoreError {
        StoreError::new(
            StoreErrorKind::Unavailable,
            format!(
                "the writer of {} stopped; reopen the store",
                self.inner.path.display()
            ),
        )
    }

    /// Runs a read on the blocking pool with the reading connection.
    async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection, &Path) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let connection = inner
                .reader
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // One read transaction: a run's header and its step rows come from the same
            // snapshot even while a writer commits between the two queries. Dropping it ends
            // it (a rollback, which for a reader only releases the snapshot).
            let snapshot = connection
                .unchecked_transaction()
                .map_err(|error| sql_error(&inner.path, &error))?;
            read(&snapshot, &inner.path)
        })
        .await
        .map_err(|error| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("SQLite read task failed: {error}"),
            )
        })?
    }
}

fn connect(path: &Path, durability: Durability) -> Result<Connection, StoreError> {
    let synchronous = match durability {
        Durability::Process => Synchronous::Normal,
        Durability::Power => Synchronous::Full,
    };
    let connection = sqlite::open(path, synchronous).map_err(|error| match error {
        wayline_durable::Error::Sqlite { source, .. } => sql_error(path, &source),
        other => StoreError::new(StoreErrorKind::Unavailable, other.to_string()),
    })?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(|error| sql_error(path, &error))?;
    Ok(connection)
}

fn migrate(connection: &Connection, path: &Path) -> Result<(), StoreError> {
    let migrated = (|| -> rusqlite::Result<Result<(), StoreError>> {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        let current: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if current > known {
            connection.execute_batch("ROLLBACK")?;
            return Ok(Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!(
                    "{} has schema version {current}, newer than this wayline knows ({known}); upgrade wayline",
                    path.display()
                ),
            )));
        }
        for (index, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
            connection.execute_batch(migration)?;
            connection.pragma_update(None, "user_version", index + 1)?;
        }
        connection.execute_batch("COMMIT")?;
        Ok(Ok(()))
    })();
    match migrated {
        Ok(outcome) => outcome,
        Err(error) => {
            let _ = connection.execute_batch("ROLLBACK");
            Err(sql_error(path, &error))
        }
    }
}

/// The writer thread: batches of changes, one transaction each. Ends when the store is dropped.
fn write_loop(connection: &Mutex<Connection>, jobs: &mpsc::Receiver<Job>, path: &Path) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let (changes, replies): (Vec<Change>, Vec<_>) =
            batch.into_iter().map(|job| (job.change, job.reply)).unzip();
        let outcomes = {
            let connection = connection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            apply(&connection, changes, path)
        };
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }
}

/// Starts a write transaction if the database's write lock is free right now.
fn begin_without_waiting(connection: &Connection) -> bool {
    if connection.busy_timeout(Duration::ZERO).is_err() {
        return false;
    }
    let began = connection
        .prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut statement| statement.execute([]))
        .is_ok();
    // Restored whatever happened: the writer thread shares this connection.
    let restored = connection.busy_timeout(BUSY_TIMEOUT).is_ok();
    if began && !restored {
        let _ = connection.execute_batch("ROLLBACK");
        return false;
    }
    began
}

/// Applies `changes` in one transaction; one outcome per change. In a batch each change has its
/// own savepoint, so a failed one leaves the others in place; a change alone needs none (if it
/// fails, the transaction is rolled back).
fn apply(connection: &Connection, changes: Vec<Change>, path: &Path) -> Vec<Outcome> {
    if let Err(error) = connection
        .prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut statement| statement.execute([]))
    {
        let error = sql_error(path, &error);
        return changes.iter().map(|_| Err(error.clone())).collect();
    }
    apply_begun(connection, changes, path)
}

/// Applies `changes` in the transaction already begun on `connection`, and ends it.
fn apply_begun(connection: &Connection, changes: Vec<Change>, path: &Path) -> Vec<Outcome> {
    // Cached: the same few statements run for every batch.
    let run = |sql: &str| -> rusqlite::Result<()> {
        connection.prepare_cached(sql)?.execute([]).map(drop)
    };
    let count = changes.len();
    let fail_all = |error: &rusqlite::Error| {
        let error = sql_error(path, error);
        (0..count).map(|_| Err(error.clone())).collect::<Vec<_>>()
    };
    let single = count == 1;
    let mut outcomes = Vec::with_capacity(count);
    for change in changes {
        let outcome = if single {
            change(connection)
        } else {
            match run("SAVEPOINT change") {
                Err(error) => Err(sql_error(path, &error)),
                Ok(()) => {
                    let outcome = change(connection);
                    let ended = if outcome.is_ok() {
                        run("RELEASE change")
                    } else {
                        run("ROLLBACK TO change").and_then(|()| run("RELEASE change"))
                    };
                    match ended {
                        Ok(()) => outcome,
                        Err(error) => Err(sql_error(path, &error)),
                    }
                }
            }
        };
        outcomes.push(outcome);
    }
    let end = if single && outcomes[0].is_err() {
        run("ROLLBACK")
    } else {
        run("COMMIT")
    };
    if let Err(error) = end {
        let _ = run("ROLLBACK");
        return fail_all(&error);
    }
    outcomes
}

fn sql_error(path: &Path, error: &rusqlite::Error) -> StoreError {
    StoreError::new(
        StoreErrorKind::Unavailable,
        format!("SQLite store {}: {error}", path.display()),
    )
}

fn from_json<T: DeserializeOwned>(text: &str, what: &str, path: &Path) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|error| {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!(
                "{what} in {} is damaged: {error}; restore the database from a backup or delete that row",
                path.display()
            ),
        )
    })
}

fn insert_run(connection: &Connection, run: &Run) -> rusqlite::Result<()> {
    let mut header = run.clone();
    header.step_results = Vec::new();
    let record = serde_json::to_string(&header).unwrap_or_default();
    connection.execute(
        "INSERT INTO runs (id, workflow_id, workflow_version, status, started_at, finished_at, record)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            run.id,
            run.workflow_id,
            run.workflow_version,
            run.status.as_str(),
            timestamp(run.started_at),
            timestamp(run.finished_at),
            record
        ],
    )?;
    for (position, result) in run.step_results.iter().enumerate() {
        connection.execute(
            "INSERT INTO step_results (run_id, position, step_id, status, result)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                run.id,
                position as i64,
                result.step_id,
                result.status.as_str(),
                serde_json::to_string(result).unwrap_or_default()
            ],
        )?;
    }
    Ok(())
}

fn run_exists(connection: &Connection, id: &str) -> rusqlite::Result<bool> {
    connection
        .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")?
        .query_row([id], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

fn read_run(connection: &Connection, path: &Path, id: &str) -> Result<Option<Run>, StoreError> {
    let header: Option<String> = connection
        .query_row("SELECT record FROM runs WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|error| sql_error(path, &error))?;
    let Some(header) = header else {
        return Ok(None);
    };
    let mut run: Run = from_json(&header, &format!("run `{id}`"), path)?;
    let mut statement = connection
        .prepare_cached(
            "SELECT step_id, result FROM step_results WHERE run_id = ?1 ORDER BY position",
        )
        .map_err(|error| sql_error(path, &error))?;
    let rows = statement
        .query_map([id], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(|error| sql_error(path, &error))?;
    for row in rows {
        let (step_id, text) = row.map_err(|error| sql_error(path, &error))?;
        run.step_results.push(from_json(
            &text,
            &format!("the result of step `{step_id}` of run `{id}`"),
            path,
        )?);
    }
    Ok(Some(run))
}

#[async_trait::async_trait]
impl WorkflowStore for SqliteStore {
    async fn insert_workflow(&self, record: &StoredWorkflow) -> Result<(), StoreError> {
        check_id("workflow", record.id())?;
        let text = to_json(record)?;
        let record = record.clone();
        let path = self.inner.path.clone();
        self.write(move |connection| {
            let inserted = connection
                .execute(
                    "INSERT INTO workflows (id, version, state, revision, record)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                    params![
                        record.id(),
                        record.version,
                        record.state().as_str(),
                        record.revision as i64,
                        text
                    ],
                )
                .map_err(|error| sql_error(&path, &error))?;
            if inserted == 0 {
                return Err(records::version_exists(&record));
            }
            Ok(None)
        })
        .await
        .map(drop)
    }

    async fn update_workflow(&self, record: &StoredWorkflow) -> Result<StoredWorkflow, StoreError> {
        let mut next = record.clone();
        // Wrapping: a hand-edited record may hold the largest value; any change still shows.
        next.revision = next.revision.wrapping_add(1);
        let text = to_json(&next)?;
        let record = record.clone();
        let path = self.inner.path.clone();
        let stored = self
            .write(move |connection| {
                let current: Option<i64> = connection
                    .query_row(
                        "SELECT revision FROM workflows WHERE id = ?1 AND version = ?2",
                        params![record.id(), record.version],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(|error| sql_error(&path, &error))?;
                let current = current.ok_or_else(|| records::version_missing(&record))?;
                let mut stored = record.clone();
                stored.revision = u64::try_from(current).unwrap_or_default();
                records::check_revision(&stored, &record)?;
                connection
                    .execute(
                        "UPDATE workflows SET state = ?3, revision = ?4, record = ?5
                         WHERE id = ?1 AND version = ?2",
                        params![
                            next.id(),
                            next.version,
                            next.state().as_str(),
                            next.revision as i64,
                            text
                        ],
                    )
                    .map_err(|error| sql_error(&path, &error))?;
                Ok(Some(next))
            })
            .await?;
        stored.ok_or_else(|| {
            StoreError::new(StoreErrorKind::Unavailable, "the update returned no record")
        })
    }

    async fn workflow(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<Option<StoredWorkflow>, StoreError> {
        let id = id.to_owned();
        self.read(move |connection, path| {
            let text: Option<String> = connection
                .query_row(
                    "SELECT record FROM workflows WHERE id = ?1 AND (?2 IS NULL OR version = ?2)
                     ORDER BY version DESC LIMIT 1",
                    params![id, version],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|error| sql_error(path, &error))?;
            text.map(|text| from_json(&text, &format!("workflow `{id}`"), path))
                .transpose()
        })
        .await
    }

    async fn workflow_versions(&self, id: &str) -> Result<Vec<StoredWorkflow>, StoreError> {
        let id = id.to_owned();
        self.read(move |connection, path| {
            let mut statement = connection
                .prepare_cached("SELECT record FROM workflows WHERE id = ?1 ORDER BY version")
                .map_err(|error| sql_error(path, &error))?;
            let rows = statement
                .query_map([&id], |row| row.get::<_, String>(0))
                .map_err(|error| sql_error(path, &error))?;
            rows.map(|row| {
                let text = row.map_err(|error| sql_error(path, &error))?;
                from_json(&text, &format!("workflow `{id}`"), path)
            })
            .collect()
        })
        .await
    }

    async fn list_workflows(&self) -> Result<Vec<StoredWorkflow>, StoreError> {
        self.read(|connection, path| {
            let mut statement = connection
                .prepare_cached(
                    "SELECT id, record FROM workflows AS w
                     WHERE version = (SELECT MAX(version) FROM workflows WHERE id = w.id)
                     ORDER BY id",
                )
                .map_err(|error| sql_error(path, &error))?;
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(|error| sql_error(path, &error))?;
            rows.map(|row| {
                let (id, text) = row.map_err(|error| sql_error(path, &error))?;
                from_json(&text, &format!("workflow `{id}`"), path)
            })
            .collect()
        })
        .await
    }
}

#[async_trait::async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &Run) -> Result<(), StoreError> {
        check_id("run", &run.id)?;
        let run = run.clone();
        let path = self.inner.path.clone();
        self.write(move |connection| {
            if run_exists(connection, &run.id).map_err(|error| sql_error(&path, &error))? {
                return Err(records::run_exists(&run.id));
            }
            insert_run(connection, &run).map_err(|error| sql_error(&path, &error))?;
            Ok(None)
        })
        .await
        .map(drop)
    }

    async fn save_step(&self, run_id: &str, result: &StepResult) -> Result<(), StoreError> {
        let text = to_json(result)?;
        let (run_id, step_id, status) = (
            run_id.to_owned(),
            result.step_id.clone(),
            result.status.as_str(),
        );
        let path = self.inner.path.clone();
        self.write(move |connection| {
            let stored_status: Option<String> = connection
                .prepare_cached("SELECT status FROM runs WHERE id = ?1")
                .and_then(|mut statement| {
                    statement.query_row([&run_id], |row| row.get(0)).optional()
                })
                .map_err(|error| sql_error(&path, &error))?;
            match stored_status {
                None => return Err(records::run_missing(&run_id)),
                Some(status) if status != RunStatus::Running.as_str() => {
                    return Err(records::run_ended(&run_id));
                }
                Some(_) => {}
            }
            connection
                .prepare_cached(
                    "INSERT INTO step_results (run_id, position, step_id, status, result)
                     VALUES (?1, (SELECT COALESCE(MAX(position) + 1, 0) FROM step_results
                                  WHERE run_id = ?1), ?2, ?3, ?4)
                     ON CONFLICT (run_id, step_id)
                     DO UPDATE SET status = excluded.status, result = excluded.result",
                )
                .and_then(|mut statement| statement.execute(params![run_id, step_id, status, text]))
                .map_err(|error| sql_error(&path, &error))?;
            Ok(None)
        })
        .await
        .map(drop)
    }

    async fn finish_run(&self, run: &Run) -> Result<(), StoreError> {
        let run = run.clone();
        let path = self.inner.path.clone();
        self.write(move |connection| {
            let replaced = (|| -> rusqlite::Result<bool> {
                if !run_exists(connection, &run.id)? {
                    return Ok(false);
                }
                connection.execute("DELETE FROM step_results WHERE run_id = ?1", [&run.id])?;
                connection.execute("DELETE FROM runs WHERE id = ?1", [&run.id])?;
                insert_run(connection, &run)?;
                Ok(true)
            })()
            .map_err(|error| sql_error(&path, &error))?;
            if replaced {
                Ok(None)
            } else {
                Err(records::run_missing(&run.id))
            }
        })
        .await
        .map(drop)
    }

    async fn run(&self, id: &str) -> Result<Option<Run>, StoreError> {
        let id = id.to_owned();
        self.read(move |connection, path| read_run(connection, path, &id))
            .await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<RunPage, StoreError> {
        let cursor = query.cursor.as_deref().map(Cursor::parse).transpose()?;
        let query = query.clone();
        self.read(move |connection, path| {
            let (cursor_set, cursor_at, cursor_id) = match &cursor {
                Some(cursor) => (true, timestamp(cursor.started_at()), cursor.id().to_owned()),
                None => (false, None, String::new()),
            };
            let mut statement = connection
                .prepare_cached(
                    "SELECT r.id, r.workflow_id, r.workflow_version, r.record,
                        (SELECT COUNT(*) FROM step_results s WHERE s.run_id = r.id),
                        (SELECT COUNT(*) FROM step_results s
                         WHERE s.run_id = r.id AND s.status IN ('failed', 'unknown_outcome'))
                     FROM runs AS r
                     WHERE (?1 IS NULL OR r.workflow_id = ?1)
                       AND (?2 IS NULL OR r.status = ?2)
                       AND (?3 IS NULL OR r.started_at >= ?3)
                       AND (?4 IS NULL OR r.started_at < ?4)
                       AND (NOT ?5
                            OR (?6 IS NOT NULL AND (r.started_at < ?6
                                OR (r.started_at = ?6 AND r.id > ?7) OR r.started_at IS NULL))
                            OR (?6 IS NULL AND r.started_at IS NULL AND r.id > ?7))
                     ORDER BY r.started_at IS NULL, r.started_at DESC, r.id
                     LIMIT ?8",
                )
                .map_err(|error| sql_error(path, &error))?;
            let limit = i64::try_from(query.page_size().saturating_add(1)).unwrap_or(i64::MAX);
            let rows = statement
                .query_map(
                    params![
                        query.workflow_id,
                        query.status.map(RunStatus::as_str),
                        timestamp(query.started_after),
                        timestamp(query.started_before),
                        cursor_set,
                        cursor_at,
                        cursor_id,
                        limit
                    ],
                    |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(3)?,
                            row.get::<_, i64>(4)?,
                            row.get::<_, i64>(5)?,
                        ))
                    },
                )
                .map_err(|error| sql_error(path, &error))?;
            let mut summaries = Vec::new();
            for row in rows {
                let (id, header, steps, failed) = row.map_err(|error| sql_error(path, &error))?;
                let run: Run = from_json(&header, &format!("run `{id}`"), path)?;
                let mut summary = RunSummary::of(&run);
                summary.steps = usize::try_from(steps).unwrap_or_default();
                summary.failed_steps = usize::try_from(failed).unwrap_or_default();
                summaries.push(summary);
            }
            Ok(RunPage::from_sorted(summaries, &query))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_in_wal_mode_with_the_chosen_synchronous_level() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let store = SqliteStore::open_with(&path, Durability::Process).unwrap();
        let reader = store.inner.reader.lock().unwrap();
        let mode: String = reader
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        let synchronous: i64 = reader
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), synchronous), ("wal", 1));
    }
}

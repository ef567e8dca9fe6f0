//! The run queue on PostgreSQL: `wayline_queue` (one row per submitted run) and
//! `wayline_workers` (one row per worker name, its heartbeat).
//!
//! Claims take rows with `FOR UPDATE SKIP LOCKED`, so workers never wait for each other and
//! never take the same run; every lease time is the server's `now()`.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use wayline_core::store::{StoreError, StoreErrorKind, check_id};
use wayline_core::{Run, RunStatus, RunStore};
use wayline_durable::postgres::deadpool_postgres::GenericClient;
use wayline_durable::postgres::tokio_postgres::Row;

use super::{PostgresStore, RunRows, write_run};
use crate::queue::{
    Cancellation, Claimed, Fire, Heartbeat, InFlight, Lease, QueueEntry, QueueState, QueueStats,
    Release, Renewed, RunQueue, SharedSchedule, Submission, Synced, WorkerInfo,
};
use crate::records::to_json;
use crate::schedule::Trigger;

/// The columns [`entry`] reads, in its order.
const ENTRY: &str = "run_id, workflow_id, workflow_version, inputs::text, in_flight, state, \
    worker, attempts, submitted_at, claimed_at, lease_until, finished_at, cancel_requested, note";

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

impl PostgresStore {
    /// A row of `ENTRY` columns as an entry.
    fn entry_of(&self, row: &Row) -> Result<QueueEntry, StoreError> {
        let run_id: String = row.get(0);
        let inputs: &str = row.get(3);
        let state: &str = row.get(5);
        let in_flight: &str = row.get(4);
        let damaged = |what: &str| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!(
                    "the queue entry of run `{run_id}` in {} has {what}",
                    self.database().shown()
                ),
            )
        };
        Ok(QueueEntry {
            workflow_id: row.get(1),
            workflow_version: u32::try_from(row.get::<_, i64>(2))
                .map_err(|_| damaged("a workflow version out of range"))?,
            inputs: serde_json::from_str(inputs)
                .map_err(|error| damaged(&format!("damaged inputs ({error})")))?,
            in_flight: InFlight::parse(in_flight)
                .ok_or_else(|| damaged(&format!("an unknown in-flight policy `{in_flight}`")))?,
            state: QueueState::parse(state)
                .ok_or_else(|| damaged(&format!("an unknown state `{state}`")))?,
            worker: row.get(6),
            attempts: u32::try_from(row.get::<_, i32>(7)).unwrap_or_default(),
            submitted_at: row.get(8),
            claimed_at: row.get(9),
            lease_until: row.get(10),
            finished_at: row.get(11),
            cancel_requested: row.get(12),
            note: row.get(13),
            run_id,
        })
    }

    /// Inserts a queued run (a new id when `run_id` is `None`); `None` when the id is taken,
    /// in the queue or by a run outside it.
    pub(crate) async fn enqueue(
        &self,
        client: &impl GenericClient,
        run_id: Option<&str>,
        workflow_id: &str,
        version: u32,
        inputs: &str,
        in_flight: InFlight,
    ) -> Result<Option<Row>, StoreError> {
        client
            .query_opt(
                &format!(
                    "INSERT INTO wayline_queue
                        (run_id, workflow_id, workflow_version, inputs, in_flight, state)
                     SELECT COALESCE($1, gen_random_uuid()::text), $2, $3, $4::text::json, $5,
                        'queued'
                     WHERE NOT EXISTS (SELECT 1 FROM wayline_runs WHERE id = $1)
                     ON CONFLICT (run_id) DO NOTHING
                     RETURNING {ENTRY}"
                ),
                &[
                    &run_id,
                    &workflow_id,
                    &i64::from(version),
                    &inputs,
                    &in_flight.as_str(),
                ],
            )
            .await
            .map_err(|error| self.error(&error))
    }

    /// Ends a waiting run's record as cancelled: the record a blocked run already has, or a
    /// new one for a run that never started.
    async fn record_cancelled(
        &self,
        client: &impl GenericClient,
        entry: &QueueEntry,
    ) -> Result<(), StoreError> {
        let now = Utc::now();
        let stored = self.run_in(client, &entry.run_id).await?;
        let (run, replace) = match stored {
            Some(mut run) => {
                if run.status != RunStatus::Running {
                    return Ok(());
                }
                run.status = RunStatus::Cancelled;
                run.finished_at = Some(now);
                (run, true)
            }
            None => {
                let mut run = Run::new(&entry.run_id, &entry.workflow_id);
                run.workflow_version = Some(entry.workflow_version);
                run.user_inputs = entry.inputs.clone();
                run.status = RunStatus::Cancelled;
                run.finished_at = Some(now);
                (run, false)
            }
        };
        let rows = RunRows::of(&run)?;
        write_run(client, &run, &rows, replace)
            .await
            .map_err(|error| self.error(&error))?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl RunQueue for PostgresStore {
    async fn submit(&self, submission: &Submission) -> Result<QueueEntry, StoreError> {
        if let Some(id) = &submission.run_id {
            check_id("run", id)?;
        }
        check_id("workflow", &submission.workflow_id)?;
        let inputs = to_json(&submission.inputs)?;
        let client = self.client().await?;
        let row = self
            .enqueue(
                &client,
                submission.run_id.as_deref(),
                &submission.workflow_id,
                submission.workflow_version,
                &inputs,
                submission.in_flight,
            )
            .await?;
        match row {
            Some(row) => self.entry_of(&row),
            None => Err(StoreError::new(
                StoreErrorKind::Conflict,
                format!(
                    "run `{}` already exists; submit it with another id, or none",
                    submission.run_id.as_deref().unwrap_or_default()
                ),
            )),
        }
    }

    async fn register(&self, heartbeat: &Heartbeat) -> Result<(), StoreError> {
        let client = self.client().await?;
        let lease_ms = i64::try_from(heartbeat.lease.as_millis()).unwrap_or(i64::MAX);
        // Taken over only when the worker of that name is not alive (stopped, or silent for
        // longer than its lease), or is this very process.
        let row = client
            .query_opt(
                "INSERT INTO wayline_workers AS w (name, host, pid, concurrency, lease_ms, stopping)
                 VALUES ($1, $2, $3, $4, $5, false)
                 ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                    concurrency = excluded.concurrency, lease_ms = excluded.lease_ms,
                    stopping = false, started_at = now(), last_seen = now()
                 WHERE w.stopping
                    OR w.last_seen + w.lease_ms * interval '1 millisecond' < now()
                    OR (w.host = excluded.host AND w.pid = excluded.pid)
                 RETURNING 1",
                &[
                    &heartbeat.name,
                    &heartbeat.host,
                    &i64::from(heartbeat.pid),
                    &i32::try_from(heartbeat.concurrency).unwrap_or(i32::MAX),
                    &lease_ms,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        if row.is_none() {
            return Err(StoreError::new(
                StoreErrorKind::Conflict,
                format!(
                    "a worker named `{}` is alive (it renewed within its lease time); give this one another --name, or stop that one first",
                    heartbeat.name
                ),
            ));
        }
        Ok(())
    }

    async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        limit: usize,
        holding: &[String],
    ) -> Result<Vec<Claimed>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "WITH picked AS (
                    SELECT run_id AS picked_id FROM wayline_queue
                    WHERE (state = 'queued' OR (state = 'running' AND lease_until < now()))
                      AND NOT (run_id = ANY($4::text[]))
                    ORDER BY submitted_at, seq
                    LIMIT $3
                    FOR UPDATE SKIP LOCKED
                 )
                 UPDATE wayline_queue AS q SET state = 'running', worker = $1,
                    attempts = q.attempts + 1, claimed_at = now(),
                    lease_until = now() + $2::float8 * interval '1 millisecond'
                 FROM picked WHERE q.run_id = picked.picked_id
                 RETURNING {ENTRY}"
            ))
            .await
            .map_err(|error| self.error(&error))?;
        let rows = client
            .query(
                &statement,
                &[
                    &worker,
                    &milliseconds(lease),
                    &i64::try_from(limit).unwrap_or(i64::MAX),
                    &holding,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let mut claimed = rows
            .iter()
            .map(|row| {
                let entry = self.entry_of(row)?;
                let lease = Lease::new(&entry.run_id, worker, entry.attempts);
                Ok(Claimed { entry, lease })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        claimed.sort_by_key(|claim| claim.entry.submitted_at);
        Ok(claimed)
    }

    async fn renew(&self, heartbeat: &Heartbeat, held: &[Lease]) -> Result<Renewed, StoreError> {
        let ids: Vec<&str> = held.iter().map(|lease| lease.run_id.as_str()).collect();
        let attempts: Vec<i32> = held
            .iter()
            .map(|lease| i32::try_from(lease.attempt).unwrap_or(i32::MAX))
            .collect();
        let client = self.client().await?;
        // One statement: the heartbeat and the leases.
        let statement = client
            .prepare_cached(
                "WITH beat AS (
                    INSERT INTO wayline_workers (name, host, pid, concurrency, lease_ms, stopping)
                    VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                        concurrency = excluded.concurrency, lease_ms = excluded.lease_ms,
                        stopping = excluded.stopping, last_seen = now()
                 )
                 UPDATE wayline_queue AS q
                 SET lease_until = now() + $5::float8 * interval '1 millisecond'
                 FROM UNNEST($7::text[], $8::int[]) AS h(run_id, attempts)
                 WHERE q.run_id = h.run_id AND q.attempts = h.attempts AND q.worker = $1
                   AND q.state = 'running'
                 RETURNING q.run_id, q.cancel_requested",
            )
            .await
            .map_err(|error| self.error(&error))?;
        let lease_ms = i64::try_from(heartbeat.lease.as_millis()).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &statement,
                &[
                    &heartbeat.name,
                    &heartbeat.host,
                    &i64::from(heartbeat.pid),
                    &i32::try_from(heartbeat.concurrency).unwrap_or(i32::MAX),
                    &lease_ms,
                    &heartbeat.stopping,
                    &ids,
                    &attempts,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let kept: Vec<(String, bool)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        let mut renewed = Renewed::default();
        for lease in held {
            match kept.iter().find(|(id, _)| *id == lease.run_id) {
                None => renewed.lost.push(lease.run_id.clone()),
                Some((id, true)) => renewed.cancel.push(id.clone()),
                Some(_) => {}
            }
        }
        Ok(renewed)
    }

    async fn release(&self, lease: &Lease, release: Release) -> Result<bool, StoreError> {
        let (state, note, finished) = match &release {
            Release::Done => ("done", None, true),
            Release::Blocked(why) => ("blocked", Some(why.as_str()), true),
            Release::Requeue => ("queued", None, false),
        };
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "WITH released AS (
                    UPDATE wayline_queue SET state = $4, note = $5, lease_until = NULL,
                        finished_at = CASE WHEN $6 THEN now() END
                    WHERE run_id = $1 AND worker = $2 AND attempts = $3 AND state = 'running'
                    RETURNING 1
                 ),
                 counted AS (
                    UPDATE wayline_workers SET finished = finished + 1
                    WHERE name = $2 AND $4 = 'done' AND EXISTS (SELECT 1 FROM released)
                 )
                 SELECT COUNT(*) FROM released",
            )
            .await
            .map_err(|error| self.error(&error))?;
        let row = client
            .query_one(
                &statement,
                &[
                    &lease.run_id,
                    &lease.worker,
                    &i32::try_from(lease.attempt).unwrap_or(i32::MAX),
                    &state,
                    &note,
                    &finished,
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        Ok(row.get::<_, i64>(0) == 1)
    }

    async fn requeue(&self, run_id: &str, in_flight: InFlight) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let updated = client
            .execute(
                "UPDATE wayline_queue SET state = 'queued', in_flight = $2, note = NULL,
                    finished_at = NULL
                 WHERE run_id = $1 AND state = 'blocked'",
                &[&run_id, &in_flight.as_str()],
            )
            .await
            .map_err(|error| self.error(&error))?;
        Ok(updated == 1)
    }

    async fn cancel(&self, run_id: &str) -> Result<Cancellation, StoreError> {
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        let row = transaction
            .query_opt(
                &format!("SELECT {ENTRY} FROM wayline_queue WHERE run_id = $1 FOR UPDATE"),
                &[&run_id],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let Some(row) = row else {
            return Err(StoreError::new(
                StoreErrorKind::NotFound,
                format!(
                    "run `{run_id}` is not in the run queue; only submitted runs can be cancelled from another machine"
                ),
            ));
        };
        let entry = self.entry_of(&row)?;
        let outcome = match entry.state {
            QueueState::Done | QueueState::Cancelled => return Ok(Cancellation::Ended),
            QueueState::Running => {
                transaction
                    .execute(
                        "UPDATE wayline_queue SET cancel_requested = true WHERE run_id = $1",
                        &[&run_id],
                    )
                    .await
                    .map_err(|error| self.error(&error))?;
                Cancellation::Requested
            }
            QueueState::Queued | QueueState::Blocked => {
                self.record_cancelled(&transaction, &entry).await?;
                transaction
                    .execute(
                        "UPDATE wayline_queue SET state = 'cancelled', cancel_requested = true,
                            finished_at = now(), lease_until = NULL
                         WHERE run_id = $1",
                        &[&run_id],
                    )
                    .await
                    .map_err(|error| self.error(&error))?;
                Cancellation::Cancelled
            }
        };
        transaction
            .commit()
            .await
            .map_err(|error| self.error(&error))?;
        Ok(outcome)
    }

    async fn entry(&self, run_id: &str) -> Result<Option<QueueEntry>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {ENTRY} FROM wayline_queue WHERE run_id = $1"),
                &[&run_id],
            )
            .await
            .map_err(|error| self.error(&error))?;
        row.map(|row| self.entry_of(&row)).transpose()
    }

    async fn entries(
        &self,
        state: Option<QueueState>,
        limit: usize,
    ) -> Result<Vec<QueueEntry>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {ENTRY} FROM wayline_queue WHERE ($1::text IS NULL OR state = $1)
                     ORDER BY submitted_at, seq LIMIT $2"
                ),
                &[
                    &state.map(QueueState::as_str),
                    &i64::try_from(limit).unwrap_or(i64::MAX),
                ],
            )
            .await
            .map_err(|error| self.error(&error))?;
        rows.iter().map(|row| self.entry_of(row)).collect()
    }

    async fn workers(&self) -> Result<Vec<WorkerInfo>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT w.name, w.host, w.pid, w.concurrency, w.started_at, w.last_seen,
                    NOT w.stopping
                        AND w.last_seen + w.lease_ms * interval '1 millisecond' >= now(),
                    COALESCE((SELECT array_agg(q.run_id ORDER BY q.claimed_at) FROM wayline_queue q
                              WHERE q.worker = w.name AND q.state = 'running'), '{}'),
                    w.finished
                 FROM wayline_workers w ORDER BY w.last_seen DESC, w.name",
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?;
        Ok(rows
            .iter()
            .map(|row| WorkerInfo {
                name: row.get(0),
                host: row.get(1),
                pid: u32::try_from(row.get::<_, i64>(2)).unwrap_or_default(),
                concurrency: u32::try_from(row.get::<_, i32>(3)).unwrap_or_default(),
                started_at: row.get(4),
                last_seen: row.get(5),
                alive: row.get(6),
                runs: row.get(7),
                finished: u64::try_from(row.get::<_, i64>(8)).unwrap_or_default(),
            })
            .collect())
    }

    async fn stats(&self) -> Result<QueueStats, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT COUNT(*) FILTER (WHERE state = 'queued'),
                    COUNT(*) FILTER (WHERE state = 'running'),
                    COUNT(*) FILTER (WHERE state = 'blocked'),
                    COALESCE(EXTRACT(EPOCH FROM now() - MIN(submitted_at)
                        FILTER (WHERE state = 'queued'))::float8, 0)
                 FROM wayline_queue WHERE state IN ('queued', 'running', 'blocked')",
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let count = |index: usize| u64::try_from(row.get::<_, i64>(index)).unwrap_or_default();
        Ok(QueueStats {
            queued: count(0),
            running: count(1),
            blocked: count(2),
            lag_seconds: row.get(3),
        })
    }

    async fn sync_schedules(&self, triggers: &[Trigger]) -> Result<Synced, StoreError> {
        self.sync_shared_schedules(triggers).await
    }

    async fn schedules(&self) -> Result<Vec<SharedSchedule>, StoreError> {
        self.shared_schedules().await
    }

    async fn fire_schedules(&self) -> Result<Vec<Fire>, StoreError> {
        self.fire_due_schedules().await
    }

    fn fenced_runs(&self, worker: &str) -> Arc<dyn RunStore> {
        Arc::new(PostgresStore {
            inner: Arc::clone(&self.inner),
            fence: Some(worker.into()),
        })
    }
}

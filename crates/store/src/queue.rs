//! The run queue: runs of saved workflows submitted by any host and run by a pool of workers
//! that share one store (see `wayline-worker`).
//!
//! - [`RunQueue::submit`] enqueues a run of a saved workflow version with its inputs.
//! - A worker [claims](RunQueue::claim) queued runs, and runs whose worker stopped renewing
//!   its lease, and holds a lease on each that it [renews](RunQueue::renew) while it works.
//!   A run taken over from a lost worker is continued with the durable-resume rules: finished
//!   steps are kept, and a step that was in flight is run again when that is safe, else
//!   handled as its [`InFlight`] policy says.
//! - The worker [releases](RunQueue::release) a run when it has ended, when it needs a person
//!   ([`Release::Blocked`]), or when the worker shuts down before it ended
//!   ([`Release::Requeue`]: another worker takes it at once).
//! - [`RunQueue::cancel`] works from any host: a queued run ends at once, a running one is
//!   stopped by its worker at its next renewal.
//! - [`RunQueue::fenced_runs`] is the run store a worker records runs through: its writes to a
//!   run are refused once another worker has taken the run over, so a worker that was cut off
//!   cannot overwrite what its successor records.
//!
//! Lease times are the store's clock, not the workers', so workers whose clocks disagree still
//! agree on when a lease has run out.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wayline_core::RunStore;
use wayline_core::store::StoreError;

pub use crate::in_flight::InFlight;
use crate::schedule::Trigger;

/// A run to enqueue.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Submission {
    /// The run's id; a new one when `None`.
    pub run_id: Option<String>,
    /// The saved workflow.
    pub workflow_id: String,
    /// Its version (the caller resolves "the active one", e.g. with
    /// [`Lifecycle::active`](crate::Lifecycle::active)).
    pub workflow_version: u32,
    /// The run's inputs. They are kept in the queue until the run starts, so secrets belong in
    /// the workers' environment, not here.
    pub inputs: IndexMap<String, Value>,
    /// What to do with an unsafe step in flight when a worker is lost.
    pub in_flight: InFlight,
}

impl Submission {
    /// A run of `workflow_id` version `version` with no inputs, asking when unsure.
    pub fn new(workflow_id: impl Into<String>, version: u32) -> Self {
        Submission {
            run_id: None,
            workflow_id: workflow_id.into(),
            workflow_version: version,
            inputs: IndexMap::new(),
            in_flight: InFlight::Ask,
        }
    }

    /// Sets the run's id.
    #[must_use]
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Adds an input.
    #[must_use]
    pub fn input(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.inputs.insert(name.into(), value.into());
        self
    }

    /// Sets the inputs.
    #[must_use]
    pub fn inputs(mut self, inputs: IndexMap<String, Value>) -> Self {
        self.inputs = inputs;
        self
    }

    /// Sets the in-flight policy.
    #[must_use]
    pub fn in_flight(mut self, policy: InFlight) -> Self {
        self.in_flight = policy;
        self
    }
}

/// Where a queued run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueueState {
    /// Waiting for a worker.
    Queued,
    /// Held by a worker (or by a lost worker whose lease has not run out yet).
    Running,
    /// Waiting for a person: a step's outcome is unknown, or the run could not start (see
    /// [`QueueEntry::note`]).
    Blocked,
    /// Ended; its run record says how.
    Done,
    /// Cancelled before it started.
    Cancelled,
}

impl QueueState {
    /// The state's name.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueState::Queued => "queued",
            QueueState::Running => "running",
            QueueState::Blocked => "blocked",
            QueueState::Done => "done",
            QueueState::Cancelled => "cancelled",
        }
    }

    /// The state `name` names.
    pub fn parse(name: &str) -> Option<QueueState> {
        Some(match name {
            "queued" => QueueState::Queued,
            "running" => QueueState::Running,
            "blocked" => QueueState::Blocked,
            "done" => QueueState::Done,
            "cancelled" => QueueState::Cancelled,
            _ => return None,
        })
    }
}

/// A run in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueEntry {
    /// The run's id (its run record, once it started, has the same).
    pub run_id: String,
    /// The saved workflow.
    pub workflow_id: String,
    /// Its version.
    pub workflow_version: u32,
    /// The run's inputs.
    pub inputs: IndexMap<String, Value>,
    /// The in-flight policy.
    pub in_flight: InFlight,
    /// Where it is.
    pub state: QueueState,
    /// The worker holding (or that last held) it.
    pub worker: Option<String>,
    /// How many times a worker has taken it (more than one: it was taken over or requeued).
    pub attempts: u32,
    /// When it was submitted.
    pub submitted_at: DateTime<Utc>,
    /// When a worker last took it.
    pub claimed_at: Option<DateTime<Utc>>,
    /// When its worker's lease runs out, while running.
    pub lease_until: Option<DateTime<Utc>>,
    /// When it left the queue (done, cancelled or blocked).
    pub finished_at: Option<DateTime<Utc>>,
    /// Someone asked to cancel it; its worker stops it.
    pub cancel_requested: bool,
    /// Why it is blocked, or what went wrong.
    pub note: Option<String>,
}

/// A worker's hold on a run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lease {
    /// The run.
    pub run_id: String,
    /// The worker.
    pub worker: String,
    /// Which time the run was taken (see [`QueueEntry::attempts`]).
    pub attempt: u32,
}

impl Lease {
    /// The lease `worker` holds on `run_id`, taken for the `attempt`-th time.
    pub fn new(run_id: impl Into<String>, worker: impl Into<String>, attempt: u32) -> Self {
        Lease {
            run_id: run_id.into(),
            worker: worker.into(),
            attempt,
        }
    }
}

/// A run a worker has just taken.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Claimed {
    /// The queue entry (now running, held by the worker).
    pub entry: QueueEntry,
    /// The lease.
    pub lease: Lease,
}

/// What a renewal found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Renewed {
    /// Runs the worker no longer holds (taken over after its lease ran out, or cancelled
    /// while queued again): it must stop working on them.
    pub lost: Vec<String>,
    /// Runs it holds that someone asked to cancel.
    pub cancel: Vec<String>,
}

/// How a worker lets go of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Release {
    /// The run ended (its record says how).
    Done,
    /// It needs a person; the text says why.
    Blocked(String),
    /// The worker is stopping before the run ended: queue it again for another worker.
    Requeue,
}

/// What [`RunQueue::cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancellation {
    /// It was waiting (queued or blocked): it is cancelled, and a cancelled run record says so.
    Cancelled,
    /// It is running: its worker stops it at its next renewal.
    Requested,
    /// It had already ended.
    Ended,
}

/// A worker as the store last heard from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerInfo {
    /// Its name (unique among live workers).
    pub name: String,
    /// The machine it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// How many runs it works on at once.
    pub concurrency: u32,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it last renewed (its heartbeat).
    pub last_seen: DateTime<Utc>,
    /// Whether it is alive: it said it is stopping, or it has not been heard from within its
    /// lease time, when not.
    pub alive: bool,
    /// The runs it holds now.
    pub runs: Vec<String>,
    /// How many runs it has finished (released as done).
    pub finished: u64,
}

/// A worker's heartbeat: who it is and how it works.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Heartbeat {
    /// Its name.
    pub name: String,
    /// Its machine.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Runs at once.
    pub concurrency: u32,
    /// Its lease time: it is thought dead when not heard from for this long.
    pub lease: Duration,
    /// It is stopping (graceful shutdown).
    pub stopping: bool,
}

impl Heartbeat {
    /// The heartbeat of a worker that is not stopping.
    pub fn new(
        name: impl Into<String>,
        host: impl Into<String>,
        pid: u32,
        concurrency: u32,
        lease: Duration,
    ) -> Self {
        Heartbeat {
            name: name.into(),
            host: host.into(),
            pid,
            concurrency,
            lease,
            stopping: false,
        }
    }
}

/// How deep the queue is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QueueStats {
    /// Runs waiting for a worker.
    pub queued: u64,
    /// Runs held by workers.
    pub running: u64,
    /// Runs waiting for a person.
    pub blocked: u64,
    /// How long the oldest queued run has waited (the queue's lag), in seconds.
    pub lag_seconds: f64,
}

/// A shared schedule as the store keeps it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SharedSchedule {
    /// The trigger.
    pub trigger: Trigger,
    /// When it was first stored: intervals count from here.
    pub start: DateTime<Utc>,
    /// When it fires next (`None`: past its `until`, or never again).
    pub next_due: Option<DateTime<Utc>>,
    /// Due times that started a run.
    pub fired: u64,
    /// Due times recorded without a run: missed (with `missed: skip`), or no active version.
    pub skipped: u64,
}

/// What [`RunQueue::sync_schedules`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Synced {
    /// Ids of schedules that were not stored before.
    pub added: Vec<String>,
    /// Ids of schedules whose definition changed (they start again from now).
    pub changed: Vec<String>,
    /// Ids of stored schedules that are no longer in the set (removed).
    pub removed: Vec<String>,
    /// Ids of schedules stored as they were.
    pub kept: Vec<String>,
}

/// One due time of a shared schedule, as the store recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fire {
    /// The schedule.
    pub schedule_id: String,
    /// The due time.
    pub due_at: DateTime<Utc>,
    /// The run it queued (`None`: skipped, see `note`).
    pub run_id: Option<String>,
    /// Why it queued no run.
    pub note: Option<String>,
}

/// The run queue. See the [module documentation](self).
#[async_trait::async_trait]
pub trait RunQueue: Send + Sync + fmt::Debug {
    /// Enqueues `submission`; refused when its run id is taken.
    async fn submit(&self, submission: &Submission) -> Result<QueueEntry, StoreError>;

    /// Records a worker starting; refused when a live worker already has its name.
    async fn register(&self, heartbeat: &Heartbeat) -> Result<(), StoreError>;

    /// Takes up to `limit` runs for `worker`, oldest first: queued runs, and runs whose
    /// worker's lease has run out, except those in `holding` (runs the worker is still busy
    /// with, which it must not take twice). Each is held for `lease`.
    async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        limit: usize,
        holding: &[String],
    ) -> Result<Vec<Claimed>, StoreError>;

    /// Extends `worker`'s leases on `held` by `lease` from now, and records its heartbeat;
    /// says which it has lost and which someone asked to cancel.
    async fn renew(&self, heartbeat: &Heartbeat, held: &[Lease]) -> Result<Renewed, StoreError>;

    /// Lets go of `lease`'s run. `false` when the lease had been lost (nothing changed).
    async fn release(&self, lease: &Lease, release: Release) -> Result<bool, StoreError>;

    /// Queues a blocked run again, with `in_flight` deciding what happens to its steps of
    /// unknown outcome (a person has checked them). `false` when the run is not blocked.
    async fn requeue(&self, run_id: &str, in_flight: InFlight) -> Result<bool, StoreError>;

    /// Cancels a run from any host.
    async fn cancel(&self, run_id: &str) -> Result<Cancellation, StoreError>;

    /// A run's queue entry.
    async fn entry(&self, run_id: &str) -> Result<Option<QueueEntry>, StoreError>;

    /// Entries in `state` (any when `None`), oldest first, at most `limit`.
    async fn entries(
        &self,
        state: Option<QueueState>,
        limit: usize,
    ) -> Result<Vec<QueueEntry>, StoreError>;

    /// The workers the store has heard from, newest first.
    async fn workers(&self) -> Result<Vec<WorkerInfo>, StoreError>;

    /// The queue's depth and lag.
    async fn stats(&self) -> Result<QueueStats, StoreError>;

    /// The run store `worker` records its runs through: like the store, except that a write to
    /// a run in the queue is refused unless `worker` holds it.
    fn fenced_runs(&self, worker: &str) -> Arc<dyn RunStore>;

    /// Makes the stored shared schedules `triggers` (by id): new ones start now, changed ones
    /// start again, unchanged ones keep their next due time, and stored ones not in `triggers`
    /// are removed. Several hosts syncing the same file change nothing.
    async fn sync_schedules(&self, triggers: &[Trigger]) -> Result<Synced, StoreError>;

    /// The stored shared schedules, by id.
    async fn schedules(&self) -> Result<Vec<SharedSchedule>, StoreError>;

    /// Fires the shared schedules that are due, by the store's clock: each due time once, however
    /// many workers call this at once (a unique record per schedule and due time), queuing a
    /// run of the workflow's active version with the run id `SCHEDULE-YYYYMMDDTHHMMSS.mmmZ`.
    /// Due times missed while nobody called are handled as the schedule's
    /// [`Missed`](crate::schedule::Missed) says.
    async fn fire_schedules(&self) -> Result<Vec<Fire>, StoreError>;
}

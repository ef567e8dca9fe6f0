//! [`Worker`]: the loop that claims queued runs, works on several at once, renews its leases,
//! stops the runs it lost or was asked to cancel, and hands back what it has not finished when
//! it shuts down.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::{AbortHandle, Abortable, Aborted};
use futures_util::stream::FuturesUnordered;
use tokio::time::{Instant, MissedTickBehavior};
use wayline_core::{RunStore, WorkflowStore};
use wayline_executor::{CancelToken, Engine, EngineBuilder, StoreFailure};
use wayline_store::StoreError;
use wayline_store::queue::{Claimed, Fire, Heartbeat, Lease, Release, Renewed, RunQueue};

use crate::backoff::{Backoff, MAX_WAIT};
use crate::error::Error;
use crate::metrics::{Counters, Metrics};
use crate::options::WorkerOptions;
use crate::work::{Context, Outcome, Prepared, work};

/// A worker: one process's share of a run queue. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Worker {
    queue: Arc<dyn RunQueue>,
    workflows: Arc<dyn WorkflowStore>,
    runs: Arc<dyn RunStore>,
    engine: Engine,
    options: WorkerOptions,
    counters: Arc<Counters>,
    prepared: Prepared,
}

/// What a worker did, when it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// Its counters.
    pub metrics: Metrics,
}

/// A run being worked on.
struct Active {
    lease: Lease,
    cancel: CancelToken,
    abort: AbortHandle,
}

/// A run's work: its lease (which run, which attempt) and how it ended.
type Running<'w> = Pin<Box<dyn Future<Output = (Lease, Result<Outcome, Aborted>)> + 'w>>;

/// A call to the queue the loop waits for while it goes on polling the runs. Awaiting one
/// in place would stop the runs mid-transaction, and the call could wait on a lock (or a
/// pooled connection) one of them holds: a deadlock the server cannot see.
type Call<'w> = Pin<Box<dyn Future<Output = Answer> + 'w>>;

/// What a queue call answered.
enum Answer {
    Claimed(Result<Vec<Claimed>, StoreError>),
    Renewed(Vec<Lease>, Result<Renewed, StoreError>),
    Released(Counted, Result<bool, StoreError>),
    Fired(Result<Vec<Fire>, StoreError>),
}

/// Which counter a release adds to when it goes through.
#[derive(Clone, Copy)]
enum Counted {
    Finished,
    Blocked,
    Requeued,
}

impl Worker {
    /// A worker taking runs from `queue`, reading their workflow versions from `workflows`, and
    /// running them on the engine `engine` builds. The engine records runs through the queue's
    /// fenced run store ([`RunQueue::fenced_runs`]), so any run store set on the builder is
    /// replaced, and a run whose step the store fails to record stops there
    /// ([`StoreFailure::Interrupt`]) and goes back to the queue, to be resumed.
    pub fn new(
        queue: Arc<dyn RunQueue>,
        workflows: Arc<dyn WorkflowStore>,
        engine: EngineBuilder,
        options: WorkerOptions,
    ) -> Worker {
        let runs = queue.fenced_runs(&options.name);
        let engine = engine
            .run_store(Arc::clone(&runs))
            .on_store_failure(StoreFailure::Interrupt)
            .build();
        Worker {
            queue,
            workflows,
            runs,
            engine,
            options,
            counters: Arc::default(),
            prepared: Prepared::default(),
        }
    }

    /// Its options.
    pub fn options(&self) -> &WorkerOptions {
        &self.options
    }

    /// Its counters so far.
    pub fn metrics(&self) -> Metrics {
        self.counters.snapshot()
    }

    fn heartbeat(&self) -> Heartbeat {
        Heartbeat::new(
            self.options.name.clone(),
            self.options.host.clone(),
            std::process::id(),
            u32::try_from(self.options.concurrency).unwrap_or(u32::MAX),
            self.options.lease,
        )
    }

    /// Works until `shutdown` completes, then stops taking runs, lets the runs it holds finish
    /// for up to the grace time, and hands the rest back to the queue (another worker
    /// continues them without repeating finished steps). Fails only when it cannot start;
    /// afterwards a store that fails is retried.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<Report, Error> {
        if let Some(reason) = self.options.problem() {
            return Err(Error::Options {
                worker: self.options.name.clone(),
                reason,
            });
        }
        let mut heartbeat = self.heartbeat();
        self.queue
            .register(&heartbeat)
            .await
            .map_err(|error| Error::Register {
                worker: self.options.name.clone(),
                error,
            })?;
        tracing::info!(worker = %self.options.name, "worker started");
        tokio::pin!(shutdown);
        let mut active: HashMap<String, Active> = HashMap::new();
        let mut running: FuturesUnordered<Running<'_>> = FuturesUnordered::new();
        let mut calls: FuturesUnordered<Call<'_>> = FuturesUnordered::new();
        let (mut claiming, mut renewing, mut firing) = (false, false, false);
        let mut renew = tokio::time::interval(self.options.lease / 3);
        renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(self.options.poll);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut stop_by: Option<Instant> = None;
        let mut backoff = Backoff::new(self.options.poll, MAX_WAIT, Instant::now());
        loop {
            if stop_by.is_some() && active.is_empty() && calls.is_empty() {
                break;
            }
            let free = self.options.concurrency.saturating_sub(active.len());
            let mut claim_now = false;
            tokio::select! {
                () = &mut shutdown, if stop_by.is_none() => {
                    tracing::info!(worker = %self.options.name, runs = active.len(), "stopping: no new runs; letting these finish");
                    stop_by = Some(Instant::now() + self.options.grace);
                    heartbeat.stopping = true;
                    if !renewing {
                        renewing = true;
                        calls.push(self.renew(&heartbeat, &active));
                    }
                }
                Some((lease, ended)) = running.next() => {
                    // An aborted run was removed when it was stopped, and its id may be held
                    // again by a later claim: only this attempt's entry is this run's.
                    if let Ok(outcome) = ended
                        && active.get(&lease.run_id).is_some_and(|held| held.lease == lease)
                    {
                        active.remove(&lease.run_id);
                        if let Some(call) = self.release(lease, outcome) {
                            calls.push(call);
                        }
                    }
                    claim_now = true;
                }
                Some(answer) = calls.next() => match answer {
                    Answer::Claimed(claimed) => {
                        claiming = false;
                        if stop_by.is_none() {
                            self.start(claimed, &mut backoff, &mut active, &mut running);
                        } else {
                            // Taken just as the worker began to stop: straight back.
                            for claim in claimed.into_iter().flatten() {
                                let requeue = Outcome::Release(Release::Requeue);
                                calls.extend(self.release(claim.lease, requeue));
                            }
                        }
                    }
                    Answer::Renewed(leases, renewed) => {
                        renewing = false;
                        self.renewed(&leases, renewed, &mut backoff, &mut active);
                    }
                    Answer::Released(counted, released) => {
                        if released.is_ok() {
                            store_answers(&mut backoff);
                        }
                        self.released(counted, released);
                    }
                    Answer::Fired(fired) => {
                        firing = false;
                        claim_now |= self.fired(fired, &mut backoff);
                    }
                },
                _ = renew.tick(), if !renewing => {
                    renewing = true;
                    calls.push(self.renew(&heartbeat, &active));
                }
                _ = poll.tick() => {
                    // While the store fails, the looks at the queue are spaced out.
                    let due = backoff.due(Instant::now());
                    claim_now = free > 0 && due;
                    if due && self.options.schedules && !firing && stop_by.is_none() {
                        firing = true;
                        calls.push(Box::pin(async move {
                            Answer::Fired(self.queue.fire_schedules().await)
                        }));
                    }
                }
                () = tokio::time::sleep_until(stop_by.unwrap_or_else(far_future)), if stop_by.is_some() && !active.is_empty() => {
                    for (run_id, held) in active.drain() {
                        held.abort.abort();
                        tracing::info!(run_id = %run_id, "grace time over: handing the run back to the queue");
                        if let Some(call) = self.release(held.lease, Outcome::Release(Release::Requeue)) {
                            calls.push(call);
                        }
                    }
                }
            }
            if claim_now && stop_by.is_none() && !claiming && backoff.due(Instant::now()) {
                let free = self.options.concurrency.saturating_sub(active.len());
                if free > 0 {
                    claiming = true;
                    let holding: Vec<String> = active.keys().cloned().collect();
                    calls.push(Box::pin(async move {
                        Answer::Claimed(
                            self.queue
                                .claim(&self.options.name, self.options.lease, free, &holding)
                                .await,
                        )
                    }));
                }
            }
        }
        heartbeat.stopping = true;
        if let Err(error) = self.queue.renew(&heartbeat, &[]).await {
            tracing::warn!(%error, "could not tell the store this worker stopped");
        }
        tracing::info!(worker = %self.options.name, "worker stopped");
        Ok(Report {
            metrics: self.metrics(),
        })
    }

    /// Starts the runs a claim took.
    fn start<'w>(
        &'w self,
        claimed: Result<Vec<Claimed>, StoreError>,
        backoff: &mut Backoff,
        active: &mut HashMap<String, Active>,
        running: &mut FuturesUnordered<Running<'w>>,
    ) {
        let Some(claimed) = self.answered(claimed, backoff, "look for queued runs") else {
            return;
        };
        for Claimed { entry, lease, .. } in claimed {
            Counters::add(&self.counters.claimed);
            let run_id = entry.run_id.clone();
            tracing::info!(run_id = %run_id, attempt = lease.attempt, "claimed");
            let cancel = CancelToken::new();
            let (abort, registration) = AbortHandle::new_pair();
            let context = Context {
                engine: &self.engine,
                workflows: &*self.workflows,
                runs: &*self.runs,
                prepared: &self.prepared,
                counters: &self.counters,
            };
            let future = Abortable::new(work(context, entry, cancel.clone()), registration);
            let held = lease.clone();
            running.push(Box::pin(async move { (held, future.await) }));
            active.insert(
                run_id,
                Active {
                    lease,
                    cancel,
                    abort,
                },
            );
        }
    }

    /// The renewal of the leases held now (and the heartbeat).
    fn renew<'w>(&'w self, heartbeat: &Heartbeat, active: &HashMap<String, Active>) -> Call<'w> {
        let leases: Vec<Lease> = active.values().map(|held| held.lease.clone()).collect();
        let heartbeat = heartbeat.clone();
        Box::pin(async move {
            let renewed = self.queue.renew(&heartbeat, &leases).await;
            Answer::Renewed(leases, renewed)
        })
    }

    /// Stops runs it lost; cancels runs someone asked to cancel.
    fn renewed(
        &self,
        leases: &[Lease],
        renewed: Result<Renewed, StoreError>,
        backoff: &mut Backoff,
        active: &mut HashMap<String, Active>,
    ) {
        let Some(renewed) = self.answered(renewed, backoff, "renew the leases") else {
            return;
        };
        // Only the attempts this renewal was about: a run released since, or taken again,
        // is not affected.
        let renewed_lease = |run_id: &str, held: &Active| {
            leases
                .iter()
                .any(|lease| lease.run_id == run_id && *lease == held.lease)
        };
        for run_id in renewed.lost {
            if active
                .get(&run_id)
                .is_some_and(|held| renewed_lease(&run_id, held))
                && let Some(held) = active.remove(&run_id)
            {
                Counters::add(&self.counters.lost);
                tracing::warn!(run_id = %run_id, "lost the lease (another worker has the run now); stopping work on it");
                held.abort.abort();
            }
        }
        for run_id in renewed.cancel {
            if let Some(held) = active.get(&run_id)
                && !held.cancel.is_cancelled()
            {
                Counters::add(&self.counters.cancel_requests);
                tracing::info!(run_id = %run_id, "cancelling, as asked");
                held.cancel.cancel();
            }
        }
    }

    /// The release a finished run's outcome asks for (none when the run was lost).
    fn release<'w>(&'w self, lease: Lease, outcome: Outcome) -> Option<Call<'w>> {
        let release = match outcome {
            Outcome::Lost => {
                Counters::add(&self.counters.lost);
                return None;
            }
            Outcome::Release(release) => release,
        };
        let counted = match &release {
            Release::Done => Counted::Finished,
            Release::Blocked(why) => {
                tracing::warn!(run_id = %lease.run_id, reason = %why, "the run needs a person");
                Counted::Blocked
            }
            _ => Counted::Requeued,
        };
        Some(Box::pin(async move {
            Answer::Released(counted, self.release_retrying(&lease, release).await)
        }))
    }

    /// Releases `lease`, trying again while the store fails (a database restarting) for up to
    /// a lease's time: the run goes back to the queue (or ends) when the store answers again,
    /// rather than waiting for its lease to run out. After that the lease has run out anyway,
    /// and another worker sees the run as it was left.
    async fn release_retrying(&self, lease: &Lease, release: Release) -> Result<bool, StoreError> {
        let give_up = Instant::now() + self.options.lease;
        let mut backoff = Backoff::new(self.options.poll, MAX_RELEASE_WAIT, Instant::now());
        loop {
            let error = match self.queue.release(lease, release.clone()).await {
                Err(error) => error,
                released => return released,
            };
            let first = backoff.failed(Instant::now());
            if backoff.next() >= give_up {
                tracing::warn!(run_id = %lease.run_id, %error, "could not release the run; its lease will run out");
                return Err(error);
            }
            Counters::add(&self.counters.store_errors);
            if first {
                tracing::warn!(run_id = %lease.run_id, %error, "could not release the run; trying again");
            } else {
                tracing::debug!(run_id = %lease.run_id, %error, "could not release the run; trying again");
            }
            tokio::time::sleep_until(backoff.next()).await;
        }
    }

    /// Reports what the schedules fired; `true` when runs were queued (worth claiming now).
    fn fired(&self, fired: Result<Vec<Fire>, StoreError>, backoff: &mut Backoff) -> bool {
        let Some(fires) = self.answered(fired, backoff, "fire the due schedules") else {
            return false;
        };
        for fire in &fires {
            match (&fire.run_id, &fire.note) {
                (Some(run_id), _) => {
                    Counters::add(&self.counters.fired);
                    tracing::info!(schedule = %fire.schedule_id, run_id = %run_id, due = %fire.due_at, "schedule fired");
                }
                (None, note) => {
                    tracing::warn!(schedule = %fire.schedule_id, due = %fire.due_at, reason = note.as_deref().unwrap_or_default(), "schedule due time queued no run")
                }
            }
        }
        fires.iter().any(|fire| fire.run_id.is_some())
    }

    /// What a queue call answered, or `None` when the store failed (counted, and said once
    /// per outage: the first failure is a warning, the rest debug lines, and the end of it
    /// is said too). `doing` names the call ("renew the leases").
    fn answered<T>(
        &self,
        answer: Result<T, StoreError>,
        backoff: &mut Backoff,
        doing: &str,
    ) -> Option<T> {
        let now = Instant::now();
        match answer {
            Ok(answer) => {
                store_answers(backoff);
                Some(answer)
            }
            Err(error) => {
                Counters::add(&self.counters.store_errors);
                if backoff.failed(now) {
                    tracing::warn!(%error, "could not {doing}; trying again, less often while the store fails");
                } else {
                    tracing::debug!(%error, "could not {doing}; trying again");
                }
                None
            }
        }
    }

    fn released(&self, counted: Counted, released: Result<bool, StoreError>) {
        let counter = match (counted, released) {
            (_, Err(_)) => &self.counters.store_errors,
            (_, Ok(false)) => &self.counters.lost,
            (Counted::Finished, Ok(true)) => &self.counters.finished,
            (Counted::Blocked, Ok(true)) => &self.counters.blocked,
            (Counted::Requeued, Ok(true)) => &self.counters.requeued,
        };
        Counters::add(counter);
    }
}

/// A call went through: the end of an outage, if there was one, is said.
fn store_answers(backoff: &mut Backoff) {
    if let Some(down) = backoff.answered(Instant::now()) {
        tracing::info!(after = ?down, "the store answers again");
    }
}

/// The longest wait between two attempts at a release the store refused.
const MAX_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

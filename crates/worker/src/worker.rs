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
use wayline_executor::{CancelToken, Engine, EngineBuilder};
use wayline_store::queue::{Claimed, Heartbeat, Lease, Release, RunQueue};

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

impl Worker {
    /// A worker taking runs from `queue`, reading their workflow versions from `workflows`, and
    /// running them on the engine `engine` builds. The engine records runs through the queue's
    /// fenced run store ([`RunQueue::fenced_runs`]), so any run store set on the builder is
    /// replaced.
    pub fn new(
        queue: Arc<dyn RunQueue>,
        workflows: Arc<dyn WorkflowStore>,
        engine: EngineBuilder,
        options: WorkerOptions,
    ) -> Worker {
        let runs = queue.fenced_runs(&options.name);
        let engine = engine.run_store(Arc::clone(&runs)).build();
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

    fn heartbeat(&self, stopping: bool) -> Heartbeat {
        let mut heartbeat = Heartbeat::new(
            self.options.name.clone(),
            self.options.host.clone(),
            std::process::id(),
            u32::try_from(self.options.concurrency).unwrap_or(u32::MAX),
            self.options.lease,
        );
        heartbeat.stopping = stopping;
        heartbeat
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
        let mut heartbeat = self.heartbeat(false);
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
        let mut renew = tokio::time::interval(self.options.lease / 3);
        renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(self.options.poll);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut stop_by: Option<Instant> = None;
        loop {
            if stop_by.is_some() && active.is_empty() {
                break;
            }
            let free = self.options.concurrency.saturating_sub(active.len());
            tokio::select! {
                () = &mut shutdown, if stop_by.is_none() => {
                    tracing::info!(worker = %self.options.name, runs = active.len(), "stopping: no new runs; letting these finish");
                    stop_by = Some(Instant::now() + self.options.grace);
                    heartbeat.stopping = true;
                    self.renew(&heartbeat, &mut active).await;
                }
                Some((lease, ended)) = running.next() => {
                    // An aborted run was removed when it was stopped, and its id may be held
                    // again by a later claim: only this attempt's entry is this run's.
                    if let Ok(outcome) = ended
                        && active.get(&lease.run_id).is_some_and(|held| held.lease == lease)
                    {
                        active.remove(&lease.run_id);
                        self.release(&lease, outcome).await;
                    }
                    if stop_by.is_none() {
                        self.claim(&mut active, &mut running).await;
                    }
                }
                _ = renew.tick() => self.renew(&heartbeat, &mut active).await,
                _ = poll.tick(), if stop_by.is_none() && free > 0 => {
                    self.claim(&mut active, &mut running).await;
                }
                () = tokio::time::sleep_until(stop_by.unwrap_or_else(far_future)), if stop_by.is_some() => {
                    for (run_id, held) in active.drain() {
                        held.abort.abort();
                        tracing::info!(run_id = %run_id, "grace time over: handing the run back to the queue");
                        self.release(&held.lease, Outcome::Release(Release::Requeue)).await;
                    }
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

    /// Takes as many runs as there is room for, and starts them.
    async fn claim<'w>(
        &'w self,
        active: &mut HashMap<String, Active>,
        running: &mut FuturesUnordered<Running<'w>>,
    ) {
        let free = self.options.concurrency.saturating_sub(active.len());
        if free == 0 {
            return;
        }
        let holding: Vec<String> = active.keys().cloned().collect();
        let claimed = match self
            .queue
            .claim(&self.options.name, self.options.lease, free, &holding)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                Counters::add(&self.counters.store_errors);
                tracing::warn!(%error, "could not look for queued runs; trying again");
                return;
            }
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

    /// Renews the leases (and the heartbeat); stops runs it lost, cancels runs someone asked
    /// to cancel.
    async fn renew(&self, heartbeat: &Heartbeat, active: &mut HashMap<String, Active>) {
        let leases: Vec<Lease> = active.values().map(|held| held.lease.clone()).collect();
        let renewed = match self.queue.renew(heartbeat, &leases).await {
            Ok(renewed) => renewed,
            Err(error) => {
                Counters::add(&self.counters.store_errors);
                tracing::warn!(%error, "could not renew the leases; trying again");
                return;
            }
        };
        for run_id in renewed.lost {
            if let Some(held) = active.remove(&run_id) {
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

    async fn release(&self, lease: &Lease, outcome: Outcome) {
        let release = match outcome {
            Outcome::Lost => {
                Counters::add(&self.counters.lost);
                return;
            }
            Outcome::Release(release) => release,
        };
        let counter = match &release {
            Release::Done => &self.counters.finished,
            Release::Blocked(why) => {
                tracing::warn!(run_id = %lease.run_id, reason = %why, "the run needs a person");
                &self.counters.blocked
            }
            _ => &self.counters.requeued,
        };
        match self.queue.release(lease, release).await {
            Ok(true) => Counters::add(counter),
            Ok(false) => Counters::add(&self.counters.lost),
            Err(error) => {
                // The lease runs out and another worker sees the run as it was left.
                Counters::add(&self.counters.store_errors);
                tracing::warn!(run_id = %lease.run_id, %error, "could not release the run; its lease will run out");
            }
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + std::time::Duration::from_secs(86_400 * 365)
}

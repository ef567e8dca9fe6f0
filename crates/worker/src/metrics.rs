//! What a worker counts, under the names `wayline workers metrics` prints them (Prometheus
//! text format; see `docs/cli.md`).

use std::sync::atomic::{AtomicU64, Ordering};

/// A worker's counters, shared with whoever reads them.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) claimed: AtomicU64,
    pub(crate) taken_over: AtomicU64,
    pub(crate) finished: AtomicU64,
    pub(crate) blocked: AtomicU64,
    pub(crate) requeued: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) cancel_requests: AtomicU64,
    pub(crate) store_errors: AtomicU64,
    pub(crate) fired: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Metrics {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Metrics {
            claimed: read(&self.claimed),
            taken_over: read(&self.taken_over),
            finished: read(&self.finished),
            blocked: read(&self.blocked),
            requeued: read(&self.requeued),
            lost: read(&self.lost),
            cancel_requests: read(&self.cancel_requests),
            store_errors: read(&self.store_errors),
            fired: read(&self.fired),
        }
    }
}

/// A worker's counters at one moment, since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Runs taken from the queue (`wayline_worker_runs_claimed_total`).
    pub claimed: u64,
    /// Of those, runs another worker had started and lost (`wayline_worker_runs_taken_over_total`).
    pub taken_over: u64,
    /// Runs that ended, whatever their status (`wayline_worker_runs_finished_total`).
    pub finished: u64,
    /// Runs left for a person (`wayline_worker_runs_blocked_total`).
    pub blocked: u64,
    /// Runs handed back to the queue unfinished: shutdown, or a store that failed
    /// (`wayline_worker_runs_requeued_total`).
    pub requeued: u64,
    /// Runs whose lease this worker lost to another (`wayline_worker_leases_lost_total`).
    pub lost: u64,
    /// Cancellations asked of runs it held (`wayline_worker_cancel_requests_total`).
    pub cancel_requests: u64,
    /// Queue calls that failed and were retried (`wayline_worker_store_errors_total`).
    pub store_errors: u64,
    /// Due times of shared schedules this worker fired, each queuing a run
    /// (`wayline_worker_schedule_fires_total`).
    pub fired: u64,
}

impl Metrics {
    /// Each counter with its metric name.
    pub fn named(&self) -> [(&'static str, u64); 9] {
        [
            ("wayline_worker_runs_claimed_total", self.claimed),
            ("wayline_worker_runs_taken_over_total", self.taken_over),
            ("wayline_worker_runs_finished_total", self.finished),
            ("wayline_worker_runs_blocked_total", self.blocked),
            ("wayline_worker_runs_requeued_total", self.requeued),
            ("wayline_worker_leases_lost_total", self.lost),
            ("wayline_worker_cancel_requests_total", self.cancel_requests),
            ("wayline_worker_store_errors_total", self.store_errors),
            ("wayline_worker_schedule_fires_total", self.fired),
        ]
    }
}

//! Workers: several processes, on one machine or many, sharing the run queue of one store
//! (PostgreSQL, through `wayline-store`'s [`RunQueue`](wayline_store::queue::RunQueue)).
//!
//! A [`Worker`] claims queued runs of saved workflow versions, works on up to
//! [`WorkerOptions::concurrency`] of them at once on its engine, and renews a lease on each
//! three times per [`WorkerOptions::lease`]. A worker that stops renewing (killed, cut off,
//! its machine gone) loses its runs when the lease runs out; the next worker to claim one
//! resumes it with the engine's durable-resume rules: finished steps are not repeated, a step
//! that was in flight runs again when that is safe (a transform, an idempotent tool, a tool
//! that sends an idempotency key), and otherwise the run's
//! [`InFlight`](wayline_store::queue::InFlight) policy decides (ask a person, skip, retry).
//! A worker's writes to a run it has lost are refused by the store (fencing), so it cannot
//! overwrite what its successor records. When the store fails to record a step (the database
//! restarting, a network cut), the run stops where it is and goes back to the queue instead of
//! failing: it is resumed by the same rules once the store answers again.
//!
//! Cancellation reaches a running run at its worker's next renewal. On shutdown a worker takes
//! no new runs, lets its runs finish for the grace time, and hands the rest back to the queue.
//!
//! ```no_run
//! # async fn example(store: std::sync::Arc<wayline_store::PostgresStore>,
//! #     engine: wayline_executor::EngineBuilder) -> Result<(), wayline_worker::Error> {
//! use std::time::Duration;
//! use wayline_worker::{Worker, WorkerOptions};
//!
//! let options = WorkerOptions::new("ops-1").concurrency(8).lease(Duration::from_secs(15));
//! let worker = Worker::new(store.clone(), store, engine, options);
//! // Works until `stop` is sent (or dropped), e.g. from a signal handler.
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! # drop(stop);
//! let report = worker.run(async { let _ = stopped.await; }).await?;
//! println!("{} runs finished", report.metrics.finished);
//! # Ok(()) }
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backoff;
mod error;
mod metrics;
mod options;
mod work;
mod worker;

pub use error::Error;
pub use metrics::Metrics;
pub use options::{WorkerOptions, default_name};
pub use worker::{Report, Worker};

//! The crate's error type.

use wayline_core::StoreError;

/// Errors of `wayline-worker`: what stops a worker from starting. Once it runs, a store that
/// fails is retried, and a run that cannot go on is recorded in the queue instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The options cannot work.
    #[error("worker `{worker}`: {reason}")]
    Options {
        /// The worker.
        worker: String,
        /// What is wrong, and what to write instead.
        reason: String,
    },
    /// The store refused the worker (its name is taken by a live worker, or the store is not
    /// reachable).
    #[error("worker `{worker}` cannot start: {error}")]
    Register {
        /// The worker.
        worker: String,
        /// What the store said.
        error: StoreError,
    },
}

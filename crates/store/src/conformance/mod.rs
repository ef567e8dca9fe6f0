//! The conformance suite every [`WorkflowStore`](wayline_core::WorkflowStore) and
//! [`RunStore`](wayline_core::RunStore) passes: call
//! [`workflow_store`] and [`run_store`] from a test with a fresh, empty store, and
//! [`run_queue`] for a store with a [`RunQueue`](crate::queue::RunQueue). They panic with a
//! message naming the broken rule.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wayline_store::{MemoryStore, conformance};
//!
//! let store = Arc::new(MemoryStore::new());
//! conformance::workflow_store(store.clone()).await;
//! conformance::run_store(store).await;
//! # });
//! ```

//!
//! One module per contract: `workflows` ([`workflow_store`]), `runs` ([`run_store`]) and
//! `queue` ([`run_queue`], with the schedules workers share).

mod queue;
mod runs;
mod workflows;

pub use queue::run_queue;
pub use runs::run_store;
pub use workflows::workflow_store;

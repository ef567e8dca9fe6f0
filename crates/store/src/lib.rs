//! Workflow and run stores, the workflow lifecycle, run history, and what runs saved workflows
//! on their own: triggers and notifications.
//!
//! - [`MemoryStore`], [`FileStore`] (JSON files, for development) and, with the default
//!   `sqlite` feature, [`SqliteStore`] (the embedded default at `$WAYLINE_HOME/wayline.db`)
//!   implement `wayline-core`'s [`WorkflowStore`] and [`RunStore`]; [`conformance`] checks
//!   any implementation against their contracts.
//! - [`Lifecycle`] moves saved workflows through `Draft → Approved → Validated → Active →
//!   Archived`, keeping every version.
//! - With the `postgres` feature, `PostgresStore`: the store several hosts and workers share,
//!   with a [`queue::RunQueue`] workers claim runs from under leases.
//! - [`open`] picks the store a [`Location`] names (`--store`, `WAYLINE_STORE`): a
//!   `postgres://` URL is PostgreSQL, a `.db` file SQLite, anything else a directory of files.
//! - [`schedule`]: interval and cron [`Trigger`](schedule::Trigger)s, read from a schedules
//!   file, and the loop a host embeds to fire them ([`run_triggers`](schedule::run_triggers)).
//! - [`Notifications`]: who is told when a run fails (or succeeds): [`WebhookNotifier`] posts
//!   a notice through core's `Transport`, [`ConsoleNotifier`] prints one line.
//! - [`Error`]: schedules and schedules files that cannot be used (the stores themselves answer
//!   core's [`StoreError`]).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wayline_core::{Step, Workflow, WorkflowStatus};
//! use wayline_store::{Lifecycle, MemoryStore};
//!
//! let lifecycle = Lifecycle::new(Arc::new(MemoryStore::new()));
//! let mut workflow = Workflow::new("briefing", "Briefing");
//! workflow.steps.push(Step::new("geo", "geocode"));
//! let saved = lifecycle.save(&workflow).await.unwrap();
//! assert_eq!((saved.record.version, saved.created), (1, true));
//! let approved = lifecycle.approve("briefing", None, "ada").await.unwrap();
//! assert_eq!(approved.state(), WorkflowStatus::Approved);
//! // Any change to the graph makes a new draft version.
//! workflow.steps.push(Step::new("weather", "forecast").map("lat", "geo.lat"));
//! let changed = lifecycle.save(&workflow).await.unwrap();
//! assert_eq!((changed.record.version, changed.record.state()), (2, WorkflowStatus::Draft));
//! # });
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod conformance;
mod error;
mod file;
mod in_flight;
mod lifecycle;
mod location;
mod memory;
mod notify;
#[cfg(feature = "postgres")]
mod postgres;
pub mod queue;
mod records;
pub mod schedule;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::sync::Arc;

pub use error::Error;
pub use file::FileStore;
pub use lifecycle::{Lifecycle, Saved, graph_hash};
pub use location::{Location, STORE_VARIABLE, default_location};
pub use memory::MemoryStore;
pub use notify::{ConsoleNotifier, Notifications, WebhookNotifier, origin};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::{Durability, SqliteStore};
pub use wayline_core::store::{
    Approval, Cursor, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreErrorKind,
    StoredWorkflow, WorkflowStore,
};

/// The stores of one location.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Stores {
    /// Workflow versions.
    pub workflows: Arc<dyn WorkflowStore>,
    /// Runs.
    pub runs: Arc<dyn RunStore>,
    /// The run queue, for a store that has one (PostgreSQL).
    pub queue: Option<Arc<dyn queue::RunQueue>>,
}

impl Stores {
    /// The two halves of one store that implements both traits.
    pub fn from_shared<S: WorkflowStore + RunStore + 'static>(store: Arc<S>) -> Stores {
        Stores {
            workflows: store.clone(),
            runs: store,
            queue: None,
        }
    }

    /// The three parts of one store that has a run queue too.
    pub fn with_queue<S: WorkflowStore + RunStore + queue::RunQueue + 'static>(
        store: Arc<S>,
    ) -> Stores {
        Stores {
            workflows: store.clone(),
            runs: store.clone(),
            queue: Some(store),
        }
    }
}

/// Opens the store `location` names: a PostgreSQL database (feature `postgres`; connected on
/// first use), a path ending in `.db` a SQLite database (created when missing), anything else
/// a [`FileStore`] directory (created when missing).
pub fn open(location: &Location) -> Result<Stores, StoreError> {
    let path = match location {
        Location::Postgres(url) => {
            #[cfg(feature = "postgres")]
            return Ok(Stores::with_queue(Arc::new(PostgresStore::open(url)?)));
            #[cfg(not(feature = "postgres"))]
            return Err(StoreError::new(
                StoreErrorKind::Unavailable,
                format!(
                    "{} is a PostgreSQL store, but this build has no `postgres` feature",
                    Location::Postgres(url.clone())
                ),
            ));
        }
        Location::Path(path) => path,
    };
    if path.extension().is_some_and(|extension| extension == "db") {
        #[cfg(feature = "sqlite")]
        return Ok(Stores::from_shared(Arc::new(SqliteStore::open(path)?)));
        #[cfg(not(feature = "sqlite"))]
        return Err(StoreError::new(
            StoreErrorKind::Unavailable,
            format!(
                "{} is a SQLite store, but this build has no `sqlite` feature; use a directory (the file store)",
                path.display()
            ),
        ));
    }
    Ok(Stores::from_shared(Arc::new(FileStore::open(path)?)))
}

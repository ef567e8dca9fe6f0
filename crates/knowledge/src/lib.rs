//! Learned operational knowledge: successful **patterns**, known **pitfalls** with their
//! resolutions, and per-operation **statistics** with state-transition timings, kept per system
//! under test (SUT), written by real runs and read by the explorer, the planner and the guard.
//!
//! - [`model`]: the three YAML files of a SUT's knowledge (`patterns.yaml`, `pitfalls.yaml`,
//!   `stats.yaml`) as types ([`Knowledge`] holds all three).
//! - [`KnowledgeStore`] with [`MemoryKnowledge`], [`YamlKnowledge`] (the three files in
//!   `knowledge/<sut>/`), with the default `sqlite` feature [`SqliteKnowledge`], and with
//!   the `postgres` feature `PostgresKnowledge`; [`conformance`] checks any implementation.
//! - [`Recorder`]: a run observer that learns from runs; [`Knowledge::learn`] holds the update
//!   rules, for hosts that observe sessions of their own.
//! - [`Queries`]: the pattern for an intent, the pitfalls ahead of a call, operations ranked by
//!   success, expected poll durations.
//! - [`export()`] and [`Knowledge::merge`]: sharing between stores.
//!
//! ```
//! use wayline_knowledge::{Knowledge, Queries, ResourceStates};
//! use wayline_knowledge::learn::{RunObservation, StepSeen};
//!
//! let mut knowledge = Knowledge::new();
//! let mut failed = StepSeen::new("update", "ClusterService_UpdateCluster", false);
//! failed.error = Some(r#"HTTP 400: {"message": "NodeGroupId is required"}"#.into());
//! let mut seen = RunObservation::default();
//! seen.outcomes.push(failed);
//! knowledge.learn(&seen);
//!
//! let warnings = Queries::new(&knowledge).check_pitfalls(
//!     "ClusterService_UpdateCluster",
//!     &ResourceStates::new(),
//!     &["cluster_id".to_owned()],
//! );
//! assert_eq!(warnings.len(), 1);
//! assert_eq!(warnings[0].pitfall.trigger.missing_variable.as_deref(), Some("NodeGroupId"));
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod conformance;
mod error;
mod export;
mod incidents;
pub mod learn;
pub mod mask;
mod memory;
pub mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod query;
mod recorder;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
pub mod words;
mod yaml_dir;

pub use error::Error;
pub use export::export;
pub use memory::MemoryKnowledge;
pub use model::Knowledge;
#[cfg(feature = "postgres")]
pub use postgres::PostgresKnowledge;
pub use query::{
    ExpectedPoll, PatternMatch, PitfallWarning, Queries, RankedOperation, ResourceStates,
};
pub use recorder::Recorder;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteKnowledge;
pub use store::{Change, KnowledgeStore, sut_key};
pub use yaml_dir::YamlKnowledge;

/// Reads a knowledge document (an export, or `knowledge show --format json` output): YAML or
/// JSON by the file's extension. Errors name the file and line.
pub fn read_document(path: &std::path::Path) -> Result<Knowledge, Error> {
    let text =
        wayline_durable::read::text(path, wayline_core::document::Limits::configured().max_bytes)
            .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let format = wayline_core::document::Format::from_path(path)
        .unwrap_or(wayline_core::document::Format::Yaml);
    Ok(wayline_core::document::parse(
        &text,
        format,
        &path.display().to_string(),
    )?)
}

//! The [`IncidentMemory`] plug-in trait: past incidents like the one at hand, for advice that
//! builds on what worked before (the guard's memory-guided suggestions). The knowledge crate
//! implements it over learned pitfalls; a host can plug in its own incident store.

use std::fmt;

/// A past incident similar to the current one.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Incident {
    /// Its id in the memory.
    pub id: String,
    /// What happened.
    pub summary: String,
    /// How it was resolved, when that is known.
    pub resolution: Option<String>,
    /// How alike, in `[0, 1]`.
    pub similarity: f64,
}

impl Incident {
    /// An incident.
    pub fn new(
        id: impl Into<String>,
        summary: impl Into<String>,
        resolution: Option<String>,
        similarity: f64,
    ) -> Self {
        Incident {
            id: id.into(),
            summary: summary.into(),
            resolution,
            similarity,
        }
    }
}

/// Finds past incidents like a description of symptoms.
///
/// # Contract
/// - [`IncidentMemory::similar_incidents`] returns at most `limit` incidents, most similar
///   first, each with a similarity in `(0, 1]`; none when nothing is alike.
/// - It must return quickly and must not block on I/O (callers decide on the hot path).
pub trait IncidentMemory: Send + Sync + fmt::Debug {
    /// Incidents like `symptoms`.
    fn similar_incidents(&self, symptoms: &str, limit: usize) -> Vec<Incident>;
}

//! [`InFlight`]: what a worker taking over a run does with a step of unknown outcome (a run in
//! the queue has one, and so does a shared schedule, for the runs it queues).

use serde::{Deserialize, Serialize};

/// What a worker taking over a run does with a step that was in flight when the run's previous
/// worker was lost, when repeating the step is not known to be safe (a POST without an
/// idempotency key, a tool marked `idempotent: false` or `destructive: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum InFlight {
    /// Stop and ask: the run is [`QueueState::Blocked`](crate::queue::QueueState::Blocked)
    /// until a person decides.
    #[default]
    Ask,
    /// Skip the step (and what depends on it) and finish the rest.
    Skip,
    /// Send it again.
    Retry,
}

impl InFlight {
    /// The policy's name: `ask`, `skip` or `retry`.
    pub fn as_str(self) -> &'static str {
        match self {
            InFlight::Ask => "ask",
            InFlight::Skip => "skip",
            InFlight::Retry => "retry",
        }
    }

    /// The policy `name` names.
    pub fn parse(name: &str) -> Option<InFlight> {
        match name {
            "ask" => Some(InFlight::Ask),
            "skip" => Some(InFlight::Skip),
            "retry" => Some(InFlight::Retry),
            _ => None,
        }
    }
}

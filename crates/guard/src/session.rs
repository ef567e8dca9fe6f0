//! A diagnostic session: where it stands, what has been gathered, what was called, what was
//! noticed, and the emergency grants in force. Plain data, saved as YAML or JSON by hosts that
//! keep sessions between calls (`wayline guard check --session FILE`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::breakglass::{Grant, PendingRequest};
use crate::policy::ToolClass;
use crate::signal::PanicSignal;

/// One diagnostic session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Session {
    /// Its id.
    pub id: String,
    /// The current state.
    pub state: String,
    /// When it entered the current state.
    pub entered_state_at: DateTime<Utc>,
    /// How many evidence items it had when it entered the current state: those after count
    /// towards leaving it.
    #[serde(default)]
    pub evidence_at_entry: usize,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// Evidence gathered, oldest first.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Tool calls decided, oldest first.
    #[serde(default)]
    pub history: Vec<Call>,
    /// Panic signals raised, oldest first.
    #[serde(default)]
    pub signals: Vec<PanicSignal>,
    /// Emergency grants (expired ones stay, for the record).
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// Emergency requests waiting for a second person's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<PendingRequest>,
    /// State changes, oldest first.
    #[serde(default)]
    pub transitions: Vec<Transition>,
}

/// An item of evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Evidence {
    /// Its type (`symptoms`, `affected_resources`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// What it says.
    #[serde(default)]
    pub description: String,
    /// The tool whose result it came from, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_tool: Option<String>,
    /// When it was recorded.
    pub at: DateTime<Utc>,
}

/// A tool call the guard decided on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Call {
    /// The tool.
    pub tool: String,
    /// Its class.
    pub class: ToolClass,
    /// When.
    pub at: DateTime<Utc>,
    /// The domain it was about (a namespace, a resource), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `allow`, `warn` or `block`.
    pub decision: String,
    /// The state it was decided in.
    pub state: String,
}

/// A move between states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Transition {
    /// From.
    pub from: String,
    /// To.
    pub to: String,
    /// When.
    pub at: DateTime<Utc>,
    /// Why: `requirements met`, `advance`, `back`, `panic intervention`.
    pub reason: String,
}

impl Session {
    /// A session starting now in `state`.
    pub fn new(id: impl Into<String>, state: impl Into<String>, now: DateTime<Utc>) -> Self {
        Session {
            id: id.into(),
            state: state.into(),
            entered_state_at: now,
            evidence_at_entry: 0,
            started_at: now,
            evidence: Vec::new(),
            history: Vec::new(),
            signals: Vec::new(),
            grants: Vec::new(),
            requests: Vec::new(),
            transitions: Vec::new(),
        }
    }

    /// Items of evidence of `kind`, gathered at any time.
    pub fn evidence_count(&self, kind: &str) -> usize {
        self.evidence
            .iter()
            .filter(|item| item.kind == kind)
            .count()
    }

    /// Items of evidence of `kind` gathered since the session entered its current state: what
    /// counts towards leaving it (evidence from before a move back does not carry it forward
    /// again).
    pub fn evidence_in_state(&self, kind: &str) -> usize {
        self.evidence
            .iter()
            .skip(self.evidence_at_entry)
            .filter(|item| item.kind == kind)
            .count()
    }

    /// Records an item of evidence.
    pub fn record_evidence(
        &mut self,
        kind: impl Into<String>,
        description: impl Into<String>,
        source_tool: Option<String>,
        at: DateTime<Utc>,
    ) {
        self.evidence.push(Evidence {
            kind: kind.into(),
            description: description.into(),
            source_tool,
            at,
        });
    }

    pub(crate) fn move_to(&mut self, to: &str, at: DateTime<Utc>, reason: &str) {
        if self.state == to {
            return;
        }
        self.transitions.push(Transition {
            from: std::mem::replace(&mut self.state, to.to_owned()),
            to: to.to_owned(),
            at,
            reason: reason.to_owned(),
        });
        self.entered_state_at = at;
        self.evidence_at_entry = self.evidence.len();
    }
}

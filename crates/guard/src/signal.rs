//! What the panic detectors raise: a signal's kind, its severity, and the signal itself, as
//! sessions keep them. (The detectors are in `panic.rs`; sessions and detectors both use
//! these types, and neither needs the other's.)

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of panic pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PanicKind {
    /// Several destructive calls in a short window.
    RapidFireCommands,
    /// A change before enough evidence, or in an early diagnostic state.
    BypassingDiagnostics,
    /// Switching between namespaces or resources without gathering evidence.
    JumpingBetweenDomains,
    /// A privileged tool.
    EscalatingPermissions,
}

impl PanicKind {
    /// The snake-case name.
    pub fn name(self) -> &'static str {
        match self {
            PanicKind::RapidFireCommands => "rapid_fire_commands",
            PanicKind::BypassingDiagnostics => "bypassing_diagnostics",
            PanicKind::JumpingBetweenDomains => "jumping_between_domains",
            PanicKind::EscalatingPermissions => "escalating_permissions",
        }
    }

    /// The line of the calming message that speaks to it.
    pub fn calming_line(self) -> &'static str {
        match self {
            PanicKind::RapidFireCommands => "Moving too quickly between operations",
            PanicKind::BypassingDiagnostics => {
                "Trying to apply fixes before understanding the problem"
            }
            PanicKind::JumpingBetweenDomains => "Jumping between different investigation areas",
            PanicKind::EscalatingPermissions => {
                "Reaching for more permissions than the diagnosis needs"
            }
        }
    }
}

/// How serious a signal is; `high` and `critical` block in blocking mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth a note.
    Low,
    /// Worth a warning.
    Medium,
    /// Worth stopping for.
    High,
    /// Stop.
    Critical,
}

impl Severity {
    /// True for `high` and `critical`.
    pub fn blocks(self) -> bool {
        self >= Severity::High
    }
}

/// A detected panic pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PanicSignal {
    /// What.
    #[serde(rename = "type")]
    pub kind: PanicKind,
    /// How serious.
    pub severity: Severity,
    /// When.
    pub at: DateTime<Utc>,
    /// In words.
    pub description: String,
    /// What triggered it.
    #[serde(default)]
    pub evidence: Value,
}

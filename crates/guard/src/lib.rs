//! The guard (MCP-ocs's ADR-005): a diagnostic state machine that keeps operators and agents
//! from "4 AM panic operations". Tools are allowed or blocked per diagnostic phase (gathering →
//! analyzing → hypothesizing → testing → resolving), evidence moves a session on, panic
//! patterns get a calming intervention, an emergency break-glass needs a second person and
//! expires by itself, and everything is written to a hash-chained audit log.
//!
//! - [`Policy`]: the state machine as data (YAML), checked before use;
//!   [`Policy::default_policy`] is the table of MCP-ocs's ADR-005.
//! - [`Guard`] decides a [`ToolCall`] in a [`Session`]: [`GuardVerdict`] Allow, Warn or Block, in
//!   [`Mode`] blocking, guidance or audit.
//! - [`GuardPolicy`] plugs the guard into the executor as a `StepPolicy`; a host that gates
//!   its own tool calls (an MCP server, an agent loop) calls [`Guard::decide`] directly.
//! - [`audit`]: the append-only log and its verification; [`suite`]: decision-table suites.
//! - [`Guard::suggest`]: memory-guided suggestions, with past incidents from any
//!   `IncidentMemory` (core's trait; the knowledge crate implements it over its pitfalls).
//!
//! ```
//! use std::sync::Arc;
//! use chrono::Utc;
//! use wayline_guard::{GuardVerdict, Guard, Mode, Policy, ToolCall};
//!
//! let guard = Guard::new(Arc::new(Policy::default_policy()), Mode::Blocking);
//! let now = Utc::now();
//! let mut session = guard.start("incident-42", now);
//! assert!(matches!(guard.decide(&mut session, ToolCall::new("oc_read_logs"), now), GuardVerdict::Allow { .. }));
//! let scale = guard.decide(&mut session, ToolCall::new("oc_write_scale"), now);
//! assert_eq!(scale.name(), "block");
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod audit;
mod breakglass;
mod error;
mod glob;
mod guard;
mod panic;
mod policy;
mod session;
mod signal;
mod step_policy;
mod suggest;
pub mod suite;

pub use breakglass::{BreakGlassRequest, Grant, PendingRequest, Scope};
pub use error::Error;
pub use glob::Glob;
pub use guard::{Ask, GUIDANCE_BLOCK, Guard, GuardVerdict, Mode, ToolCall};
pub use policy::{
    BreakGlassConfig, DEFAULT_POLICY, EvidenceRequirement, Hints, PanicConfig, Policy, PolicyFile,
    StateConfig, ToolClass,
};
pub use session::{Call, Evidence, Session, Transition};
pub use signal::{PanicKind, PanicSignal, Severity};
pub use step_policy::GuardPolicy;
pub use suggest::{Priority, Suggestion};

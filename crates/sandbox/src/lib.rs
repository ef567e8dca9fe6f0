//! Code sandboxes (seed 003), compatible with Bay (shipyard-neo) 0.3.1.
//!
//! This crate is being built (issue 7). What is here so far is the part both the local
//! provider and the Bay client stand on, written against `../shared/reference/bay-api.md`:
//!
//! - [`error`]: Bay's error codes, statuses and envelope;
//! - [`path`]: Bay's workspace path rules (and the symlink-escape check Ship adds);
//! - [`ttl`]: Bay's TTL rules at create and on `extend_ttl`;
//! - [`idempotency`]: Bay's idempotency keys, fingerprints, replays and conflicts;
//! - [`time`]: Bay's naive UTC timestamps;
//! - [`model`]: the records in Bay's wire shapes (`SandboxResponse`, exec results, file
//!   entries).
//!
//! - [`profile`]: profiles from YAML (capabilities, idle timeout, env) and Bay's defaults;
//! - [`local::python`]: the local provider's persistent Python sessions (a driver speaking JSON
//!   lines: variables persist, REPL-style values, full tracebacks, timeouts that kill).
//!
//! Still to come (see issue 7's notes): the `Sandbox` trait, the `BayClient`, the rest of the
//! local provider (workspaces, shell, files, TTL, idle timeout, persisted state, profiles), the
//! loopback server and the workflow `code` step.

pub mod client;
pub mod clock;
pub mod error;
pub mod idempotency;
pub mod local;
pub mod model;
pub mod path;
pub mod profile;
pub mod provider;
pub mod runner;
#[cfg(feature = "server")]
pub mod server;
pub mod time;
pub mod ttl;

pub use client::{BayClient, BayConfig};
pub use error::{ErrorCode, SandboxError};
pub use local::{LocalConfig, LocalProvider};
pub use model::{FileEntry, PythonResult, SandboxInfo, ShellResult, Status};
pub use provider::{
    CreateSandbox, HistoryEntry, HistoryPage, HistoryQuery, ListQuery, ProfileInfo, PythonExec,
    Sandbox, SandboxPage, SandboxProvider, SandboxResult, ShellExec, Uploaded,
};
pub use runner::{CodeRouter, SandboxCodeRunner};

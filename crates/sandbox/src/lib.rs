//! Code sandboxes compatible with Bay (shipyard-neo) 0.3.1's HTTP API.
//!
//! One trait, [`SandboxProvider`], covers Bay's sandbox API (with [`SkillLifecycle`], its
//! skill candidates and releases); [`Sandbox`] is a handle on one sandbox. Three things speak it:
//!
//! - [`LocalProvider`] — the embedded default: a workspace directory per sandbox, one
//!   persistent Python process per session, `bash -lc` for shell commands, Bay's rules for
//!   paths, TTLs, idempotency and idle timeouts, state kept across restarts. **Not a security
//!   boundary** (see [`local`]).
//! - [`BayClient`] — a real Bay over HTTP, through core's `Transport`.
//! - `server` (feature `server`) — Bay's HTTP API over any provider (`wayline sandbox serve`).
//!
//! [`SandboxCodeRunner`] makes any provider the engine's `CodeRunner`, so a workflow's `code`
//! steps run in it.
//!
//! [`conformance`] is the public suite every provider passes: the contract checked through the
//! trait alone.
//!
//! ```no_run
//! # async fn demo() -> Result<(), wayline_sandbox::SandboxError> {
//! use std::sync::Arc;
//! use wayline_sandbox::{CreateSandbox, LocalConfig, LocalProvider, Sandbox};
//!
//! let provider = Arc::new(LocalProvider::open(LocalConfig::new("/tmp/sandboxes"))?);
//! let sandbox = Sandbox::create(provider, &CreateSandbox::default().ttl(600)).await?;
//! sandbox.python("x = 21").await?;
//! assert_eq!(sandbox.python("x * 2").await?.output, "42");
//! sandbox.delete().await?;
//! # Ok(()) }
//! ```
//!
//! Bay's rules, each in one place: [`error`] (codes, statuses, envelope), [`path`] (workspace
//! paths), [`ttl`], [`idempotency`], [`time`] (naive timestamps), [`model`] (wire records),
//! [`profile`].

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod client;
pub mod clock;
pub mod conformance;
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
pub mod skills;
pub mod time;
pub mod ttl;

pub use client::{BayClient, BayConfig};
pub use error::{Error, ErrorCode, SandboxError};
pub use local::{LocalConfig, LocalProvider};
pub use model::{FileEntry, PythonResult, SandboxInfo, ShellResult, Status};
pub use provider::{
    Annotation, Cargo, CargoPage, CargoQuery, CreateCargo, CreateSandbox, GC_TASKS, GcRun,
    GcStatus, GcTaskResult, HistoryEntry, HistoryPage, HistoryQuery, ListQuery, ProfileInfo,
    PythonExec, Sandbox, SandboxPage, SandboxProvider, SandboxResult, ShellExec, Uploaded,
};
pub use runner::{CodeRouter, SandboxCodeRunner};
pub use skills::{
    CandidateQuery, CandidateStatus, Deleted, Evaluation, NewCandidate, NewPayload, PayloadRef,
    Promotion, ReleaseHealth, ReleaseQuery, ReleaseStage, SkillCandidate, SkillEvaluation,
    SkillLifecycle, SkillPage, SkillPayload, SkillRelease,
};

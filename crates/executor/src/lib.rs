//! wayline's engine: runs a validated workflow as a graph of calls.
//!
//! - **Scheduling** by readiness, bounded by `max_parallel` and a per-host limit, with critical
//!   path priority; results never depend on timing ([`Engine`]).
//! - **Requests** from tool definitions, legacy and config style ([`build_request`]), sent by a
//!   [`Transport`](wayline_core::Transport): `ReqwestTransport` (feature `http`) or the
//!   [`testing::ScriptedTransport`] for tests.
//! - **Retries** of transient failures with capped, jittered exponential backoff and
//!   `Retry-After`; non-idempotent requests are not resent blindly. **Polling** until a CEL
//!   condition holds, separate from retries.
//! - **Extraction** by dot path, JSONPath or JSON Pointer ([`extract::Path`]); **validations**;
//!   `transform` steps (CEL, no I/O) and `cli` tools (a subprocess, no shell).
//! - A complete **run record** whatever happens — failures, skips, cancellation, deadline — with
//!   secrets scrubbed, and [`RunObserver`](wayline_core::RunObserver) events and `tracing`
//!   spans along the way; [`StepMiddleware`] hooks around each step.
//! - **Runs a host spawns**: every run future is `Send`; [`Engine::start`] answers a
//!   [`RunHandle`] to follow (owned events from the first), cancel and finish a run.
//!
//! Features: `http` (default) the reqwest transport; `response-schemas` (default) response
//! bodies checked against their tools' JSON Schemas; `testing` the loopback `MockServer`.
//!
//! The example under [`Engine`] runs a one-step workflow against a scripted transport.
//!
//! Runs need a Tokio runtime with time enabled (see [`Engine`]).

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod cancel;
mod error;
mod run;
pub mod testing;
mod values;

pub use run::durable;
pub use run::flow;
pub use values::extract;

pub use call::digest::DigestTransport;
#[cfg(feature = "http")]
pub use call::http::{ReqwestTransport, ReqwestTransportBuilder};
pub use call::record::{Exchange, RecordingTransport};
pub use call::request::{BuiltRequest, build_request};
pub use call::retry::parse_retry_after;
pub use cancel::CancelToken;
pub use error::Error;
pub use run::context::StoreFailure;
pub use run::dry_run::{PlannedStep, dry_run};
pub use run::durable::{ResumeOptions, UnknownSteps};
pub use run::engine::{
    DEFAULT_MAX_EXECUTIONS, DEFAULT_MAX_PARALLEL, Engine, EngineBuilder, RunOptions,
};
pub use run::handle::{MAX_LOGGED_EVENTS, RunEvents, RunHandle};
pub use run::middleware::{StepContext, StepMiddleware};
pub use run::prepare::PreparedWorkflow;
pub use run::progress::{Progress, ProgressStyle, summary};
pub use values::eval::{ExpressionBudget, MAX_BUILT_BYTES, MAX_EVALUATION_TIME, MAX_ITERATIONS};
pub use values::redact::{Redactor, is_credential_response_header};

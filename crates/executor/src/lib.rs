//! wayline's engine: runs a validated workflow as a graph of calls.
//!
//! - **Scheduling** by readiness, bounded by `max_parallel` and a per-host limit, with critical
//!   path priority; results never depend on timing ([`Engine`]).
//! - **Requests** from tool definitions, legacy and config style ([`build_request`]), sent by a
//!   [`Transport`](wayline_core::Transport): [`ReqwestTransport`] (feature `http`) or the
//!   [`ScriptedTransport`] for tests.
//! - **Retries** of transient failures with capped, jittered exponential backoff and
//!   `Retry-After`; non-idempotent requests are not resent blindly. **Polling** until a CEL
//!   condition holds, separate from retries.
//! - **Extraction** by dot path, JSONPath or JSON Pointer ([`extract::Path`]); **validations**;
//!   `transform` steps (CEL, no I/O) and `cli` tools (a subprocess, no shell).
//! - A complete **run record** whatever happens — failures, skips, cancellation, deadline — with
//!   secrets scrubbed, and [`RunObserver`](wayline_core::RunObserver) events and `tracing`
//!   spans along the way; [`StepMiddleware`] hooks around each step.
//!
//! The example under [`Engine`] runs a one-step workflow against a scripted transport.

mod assertion;
mod cancel;
mod command;
mod context;
mod digest;
mod dry_run;
pub mod durable;
mod engine;
mod error;
mod eval;
pub mod extract;
pub mod flow;
#[cfg(feature = "http")]
mod http;
mod middleware;
mod mock;
mod prepare;
mod progress;
mod ready;
mod record;
mod redact;
mod request;
mod resolve;
mod response;
mod retry;
mod scheduler;
mod schema;
mod step;
#[cfg(feature = "testing")]
pub mod testing;
mod token;
mod tool_call;
mod validation;

pub use cancel::CancelToken;
pub use context::StoreFailure;
pub use digest::DigestTransport;
pub use dry_run::{PlannedStep, dry_run};
pub use durable::{ResumeOptions, UnknownSteps};
pub use engine::{DEFAULT_MAX_EXECUTIONS, DEFAULT_MAX_PARALLEL, Engine, EngineBuilder, RunOptions};
pub use error::Error;
pub use eval::{ExpressionBudget, MAX_BUILT_BYTES, MAX_EVALUATION_TIME, MAX_ITERATIONS};
#[cfg(feature = "http")]
pub use http::{ReqwestTransport, ReqwestTransportBuilder};
pub use middleware::{StepContext, StepMiddleware};
pub use mock::ScriptedTransport;
pub use prepare::PreparedWorkflow;
pub use progress::{Progress, ProgressStyle, summary};
pub use record::{Exchange, RecordingTransport};
pub use redact::{Redactor, is_credential_response_header};
pub use request::{BuiltRequest, build_request};
pub use retry::parse_retry_after;

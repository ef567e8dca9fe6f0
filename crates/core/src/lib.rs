//! wayline's vocabulary: the models (tools, workflows, runs), the reference and template syntax,
//! CEL expressions, document parsing with actionable errors, and the plug-in traits hosts
//! implement.
//!
//! This crate does no network I/O and starts no runtime; the wayline crates above it
//! build on it (`wayline-durable` and `wayline-listen` stand beside it, on nothing of wayline).
//!
//! ```
//! use wayline_core::document::{parse, Format};
//! use wayline_core::{Reference, Workflow};
//!
//! let workflow: Workflow = parse(
//!     r#"{"id": "w", "name": "W", "steps": [{"id": "a", "tool_id": "t"}]}"#,
//!     Format::Json,
//!     "w.json",
//! ).unwrap();
//! let is_step = |id: &str| workflow.step(id).is_some();
//! assert_eq!(Reference::parse_str("a.items.0", is_step), Reference::Step { step: "a", path: "items.0" });
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod advice;
pub mod canonical;
pub mod catalog;
pub mod code;
pub mod decide;
pub mod document;
mod error;
pub mod expect;
pub mod expr;
pub mod inputs;
pub mod intervene;
pub mod mcp;
pub mod notify;
pub mod observer;
pub mod policy;
pub mod reference;
pub mod run;
pub mod secret;
pub mod store;
pub mod template;
pub mod tool;
pub mod transport;
pub mod workflow;

pub use advice::{Incident, IncidentMemory};
/// The attribute that implements wayline's async traits (`Transport`, `RunStore`…) on your
/// types, re-exported so a host needs no dependency of its own: `#[wayline_core::async_trait]`.
pub use async_trait::async_trait;
pub use catalog::{MemoryCatalog, ToolCatalog};
pub use code::{CodeError, CodeErrorKind, CodeOutput, CodeRequest, CodeRunner};
pub use decide::{Decider, Decision, DecisionError, DecisionRequest, ScriptedDecider};
pub use error::Error;
pub use expect::{Check, CheckOps, Expect, JsonType, StatusPattern, StatusSet};
pub use expr::Expression;
pub use intervene::{Answer, Answerer, AutoApprove, Interventor, Question, QuestionKind};
pub use mcp::{McpCall, McpClient, McpError, McpErrorKind, McpOutcome, McpServer};
pub use notify::{FailedStep, NoticeKind, Notifier, NotifyError, NotifyErrorKind, RunNotice};
pub use observer::{OwnedRunEvent, RunEvent, RunObserver};
pub use policy::{AllowAll, StepPolicy, StepRequest, Verdict};
pub use reference::Reference;
pub use run::{AssertionResult, Jump, RequestSummary, Run, RunStatus, StepResult, StepStatus};
pub use secret::{CommandLine, MemorySecrets, Secret, SecretProvider, ToolConfig};
pub use store::{
    Approval, RunPage, RunQuery, RunStore, RunSummary, StoreError, StoreErrorKind, StoredWorkflow,
    WorkflowStore,
};
pub use tool::{
    AuthConfig, AuthType, CodeConfig, CodePath, CommandConfig, RequestConfig,
    ResponseExtractConfig, RetryPolicy, ToolDefinition, ToolKind,
};
pub use transport::{
    Header, HttpRequest, HttpResponse, Transport, TransportError, TransportErrorKind,
};
pub use workflow::{
    Edge, ExpressionField, InputSpec, Poll, Severity, Step, StepKind, StepValidation, Workflow,
    WorkflowStatus,
};

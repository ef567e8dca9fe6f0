//! Workflow graphs: edge inference, a [`ValidationReport`] listing every problem, deterministic
//! topological order, parallel levels, critical path, and Mermaid / DOT / text views.
//!
//! Pure: no I/O. Edges come from three places — the workflow's explicit `edges`, its
//! `input_mapping` references (`STEP.path`, `$steps.STEP.outputs.path`) and the `steps.STEP`
//! its CEL conditions read — and a step runs after every step it depends on.
//!
//! ```
//! use wayline_core::{MemoryCatalog, Step, ToolDefinition, Workflow};
//! use wayline_graph::validate;
//!
//! let catalog = MemoryCatalog::from_tools([ToolDefinition::new("t", "https://example.com")]);
//! let mut workflow = Workflow::new("w", "W");
//! workflow.steps.push(Step::new("b", "t").map("x", "a.id"));
//! workflow.steps.push(Step::new("a", "t"));
//! let report = validate(&workflow, &catalog);
//! assert!(report.is_valid());
//! assert_eq!(report.order(), ["a", "b"]);
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod graph;
mod problem;
mod report;
mod suspect;
mod validate;
mod view;

pub use graph::{StepEdge, StepGraph};
pub use problem::{MAX_ID_CHARS, Problem, ProblemKind};
pub use report::ValidationReport;
pub use validate::validate;
pub use view::{ViewFormat, render};

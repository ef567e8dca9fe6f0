//! **wayline** — AI-assisted API automation as an embeddable library.
//!
//! A goal becomes a **graph of API calls**: written by hand, proposed by a planner, or found by
//! an explorer. The graph is validated, shown as a simple view, approved, and then run by a
//! deterministic engine. This facade re-exports the workspace's crates behind additive features:
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`core`] | `wayline-core`: models, references, templates, CEL, plug-in traits | always |
//! | [`graph`] | `wayline-graph`: edge inference, validation, order, views | `graph` |
//! | [`registry`] | `wayline-registry`: tool files, tool configs, catalog | `registry` |
//! | [`executor`] | `wayline-executor`: the engine — scheduling, HTTP, retries, polling, records | `executor` |
//! | `store` | `wayline-store`: workflow and run stores (memory, files, SQLite, PostgreSQL), lifecycle, history, triggers, notifications, the run queue | `store` (`store-sqlite` adds SQLite, `store-postgres` PostgreSQL with the run queue and shared schedules) |
//! | `knowledge` | `wayline-knowledge`: patterns, pitfalls and statistics learned from runs, their stores, the recorder, queries | `knowledge` (`knowledge-sqlite` adds SQLite, `knowledge-postgres` PostgreSQL) |
//! | `guard` | `wayline-guard`: the diagnostic state machine — phase-gated tools, panic detection, break-glass, audit log | `guard` |
//! | `sandbox` | `wayline-sandbox`: code sandboxes — the `SandboxProvider` trait, the embedded local provider, `BayClient`, the code runner for code steps | `sandbox` (`sandbox-server` adds the Bay-compatible HTTP server) |
//! | `explorer` | `wayline-explorer`: the explorer — SUT configs, suggestions, the intervention matrix, sessions, reusable scenarios | `explorer` |
//! | `planner` | `wayline-planner`: the planner — language models, plans validated and repaired, learned plans, decision steps | `planner` |
//! | `mcp` | `wayline-mcp`: the Model Context Protocol — the client for `kind: mcp` steps, the guard's gateway in front of MCP servers | `mcp` (not default: it brings the MCP SDK and its HTTP client) |
//! | `worker` | `wayline-worker`: workers sharing a PostgreSQL store's run queue and schedules — leases, takeover without repeating finished steps, cancellation, graceful shutdown | `worker` (not default: it brings the PostgreSQL driver) |
//! | `testing` | the tool test harness and a loopback mock server | `testing` |
//!
//! ```
//! use wayline::core::{MemoryCatalog, Step, ToolDefinition, Workflow};
//!
//! let catalog = MemoryCatalog::from_tools([ToolDefinition::new("geo", "http://127.0.0.1:8080")]);
//! let mut workflow = Workflow::new("w", "Where am I?");
//! workflow.steps.push(Step::new("locate", "geo"));
//! # #[cfg(feature = "graph")] {
//! let report = wayline::graph::validate(&workflow, &catalog);
//! assert!(report.is_valid());
//! # }
//! ```

#[cfg(feature = "arazzo")]
pub use wayline_arazzo as arazzo;
pub use wayline_core as core;
#[cfg(feature = "executor")]
pub use wayline_executor as executor;
#[cfg(feature = "explorer")]
pub use wayline_explorer as explorer;
#[cfg(feature = "graph")]
pub use wayline_graph as graph;
#[cfg(feature = "guard")]
pub use wayline_guard as guard;
#[cfg(feature = "knowledge")]
pub use wayline_knowledge as knowledge;
#[cfg(feature = "mcp")]
pub use wayline_mcp as mcp;
#[cfg(feature = "planner")]
pub use wayline_planner as planner;
#[cfg(feature = "registry")]
pub use wayline_registry as registry;
#[cfg(feature = "sandbox")]
pub use wayline_sandbox as sandbox;
#[cfg(feature = "store")]
pub use wayline_store as store;
#[cfg(feature = "worker")]
pub use wayline_worker as worker;
#[cfg(feature = "testing")]
pub mod testing;

//! **wayline** — AI-assisted API automation as an embeddable library.
//!
//! A goal becomes a **graph of API calls**: written by hand, proposed by a planner, or found by
//! an explorer. The graph is validated, shown as a simple view, approved, and then run by a
//! deterministic async engine — with retries, polling, run records, learned knowledge and
//! guard rails. A host plugs in its own transport and stores through traits.
//!
//! This crate is a facade: each module is one of the workspace's crates, behind a feature of
//! the same name. Depend on `wayline` and pick features, or depend on the crates themselves.
//! The [`embedding`] guide walks a newcomer through it: depend, pick features, plug in a
//! transport and a store, test tool YAMLs, run inside a service.
//!
//! | module | crate | what it is | feature |
//! |---|---|---|---|
//! | `core` | [wayline-core] | models, references, templates, CEL, the plug-in traits (`Transport`, `RunStore`, `RunObserver`…) | always |
//! | `graph` | [wayline-graph] | edge inference, validation reports, order, levels, views | `graph` |
//! | `registry` | [wayline-registry] | tool YAML files, tool configs and secrets, the catalog | `registry` |
//! | `executor` | [wayline-executor] | the engine: scheduling, retries, polling, records, run handles | `executor` (`http` adds the reqwest transport, `response-schemas` JSON Schema checks of responses) |
//! | `store` | [wayline-store] | workflow and run stores (memory, files, SQLite, PostgreSQL), lifecycle, history, triggers, notifications, the run queue | `store` (`store-sqlite`, `store-postgres`) |
//! | `knowledge` | [wayline-knowledge] | patterns, pitfalls and statistics learned from runs; their stores, the recorder | `knowledge` (`knowledge-sqlite`, `knowledge-postgres`) |
//! | `guard` | [wayline-guard] | phase-gated tools, panic detection, break-glass, the audit log | `guard` |
//! | `sandbox` | [wayline-sandbox] | code sandboxes: the local provider, `BayClient`, code steps | `sandbox` (`sandbox-server` adds the Bay-compatible server) |
//! | `explorer` | [wayline-explorer] | SUT configs, suggestions, the intervention matrix, explorations, scenarios | `explorer` |
//! | `planner` | [wayline-planner] | language models, plans validated and repaired, decision steps | `planner` |
//! | `arazzo` | [wayline-arazzo] | Arazzo documents: the model, loading by the specification's rules, running | `arazzo` |
//! | `mcp` | [wayline-mcp] | the Model Context Protocol: `kind: mcp` steps, the guard's gateway, serving tools | `mcp` (not default) |
//! | `worker` | [wayline-worker] | workers sharing a PostgreSQL store's run queue and schedules | `worker` (not default) |
//! | `testing` | — | the tool test harness and a loopback mock server | `testing` (not default) |
//!
//! The default features are everything but `mcp`, `worker`, `testing` and the SQL stores'
//! extras. A service that loads tools and runs workflows with its own transport needs only
//! `registry` and `executor` (`default-features = false`); the guide's table says what each
//! choice compiles.
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
//!
//! [wayline-core]: https://docs.rs/wayline-core
//! [wayline-graph]: https://docs.rs/wayline-graph
//! [wayline-registry]: https://docs.rs/wayline-registry
//! [wayline-executor]: https://docs.rs/wayline-executor
//! [wayline-store]: https://docs.rs/wayline-store
//! [wayline-knowledge]: https://docs.rs/wayline-knowledge
//! [wayline-guard]: https://docs.rs/wayline-guard
//! [wayline-sandbox]: https://docs.rs/wayline-sandbox
//! [wayline-explorer]: https://docs.rs/wayline-explorer
//! [wayline-planner]: https://docs.rs/wayline-planner
//! [wayline-arazzo]: https://docs.rs/wayline-arazzo
//! [wayline-mcp]: https://docs.rs/wayline-mcp
//! [wayline-worker]: https://docs.rs/wayline-worker

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

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

/// Embedding wayline in a Rust service, for a newcomer (`docs/embedding.md` in the repository;
/// every snippet is compiled and run as a test).
#[doc = include_str!("../docs/embedding.md")]
pub mod embedding {}

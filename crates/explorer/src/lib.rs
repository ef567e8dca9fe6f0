//! The explorer: from an OpenAPI spec, a system-under-test configuration and a target in plain
//! words to confirmed steps, kept as a session and written out as a reusable scenario.
//!
//! The explorer decides and the engine runs: every step is a one-step workflow run by
//! `wayline-executor`, with the same retries, polling, redaction and records as `wayline run`.
//!
//! The modules:
//!
//! - [`sut`]: the system-under-test configuration (`sut.yaml`): connection and base URL, auth
//!   with credentials from environment variables, the spec, preset variables, command-line
//!   tools, and the execution settings (auto mode, checkpoints, confidence threshold, polling).
//! - [`auth`]: the SUT's credentials on every request.
//! - [`intent`]: a target in plain words read as goals (verbs → CRUD, nouns → resources,
//!   values and expected answers; `phrases.rs` lifts the values out of the words).
//! - [`dataflow`]: producer/consumer inference over a spec (which operation provides the id
//!   another needs).
//! - [`envelope`]: where the resource and its id are in an answer of any shape.
//! - [`extent`]: how much an operation touches (one item, a collection, a singleton), and
//!   the safety rule for collection-wide writes.
//! - [`state`]: the explorer's resources and variables, and the rules that update them.
//! - [`suggest`]: the next step toward the target, with its confidence.
//! - [`intervention`]: the intervention matrix (when to run a step alone, when to ask) and an
//!   interventor that answers from a file.
//! - [`explore`]: the explorer's loop; [`exploration`]: one exploration and its file.
//! - [`output`]: the reusable scenario and its conversion into a workflow.
//! - `testing` (feature `testing`): a loopback simulation of the fixture API, optionally
//!   behind digest authentication.
//!
//! ```
//! use wayline_explorer::intent::{self, Verb};
//! use wayline_registry::openapi::ApiSpec;
//!
//! let spec = ApiSpec::parse(
//!     r#"{"openapi": "3.0.0", "paths": {"/clusters": {"post": {
//!         "operationId": "createCluster", "responses": {"200": {"description": "ok"}}}}}}"#,
//!     std::path::Path::new("spec.json"),
//! )
//! .unwrap();
//! let goals = intent::parse("create a cluster", &spec);
//! assert_eq!(goals[0].verb, Verb::Create);
//! assert_eq!(goals[0].resource, "cluster");
//! ```

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
mod command;
pub mod dataflow;
pub mod envelope;
mod error;
pub mod exploration;
pub mod explore;
pub mod extent;
pub mod intent;
pub mod intervention;
mod lifecycle;
mod location;
mod names;
mod operations;
pub mod output;
mod phrases;
mod placing;
pub mod state;
pub mod suggest;
pub mod sut;
#[cfg(feature = "testing")]
pub mod testing;
mod verbs;
mod vocabulary;

pub use error::Error;
pub use exploration::{Exploration, ExplorationStatus};
pub use explore::Explorer;
pub use intervention::{
    Action, Assessment, ChosenAction, ScriptedInterventor, Source, Thresholds, decide,
};
pub use output::Scenario;
pub use sut::{Auth, AuthKind, Credentials, Execution, SutConfig};

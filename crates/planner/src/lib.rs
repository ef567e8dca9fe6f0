//! The explorer (seed 000) and the planner (seed 004): from a goal to a graph of API calls.
//!
//! The modules:
//!
//! - [`sut`]: the system-under-test configuration (`sut.yaml`): connection and base URL, auth
//!   with credentials from environment variables, the spec, preset variables, CLI tools, and the
//!   execution settings (auto mode, checkpoints, confidence threshold, polling).
//! - [`dataflow`]: producer/consumer inference over a spec (which operation provides the id
//!   another needs).
//! - [`intent`]: a target in plain words read as goals (verbs → CRUD, nouns → resources).
//! - [`state`]: the explorer's resources and variables, in the seed's shape.
//! - [`suggest`]: the next step toward the target (seed 000's suggestion algorithm).
//! - [`llm`]: language models — the trait, an OpenAI-compatible chat-completions client, and a
//!   scripted model.
//! - [`plan`]: planning — a learned pattern that fits the goal ([`recall`]), else the model's
//!   answer validated, and repaired from the validation report a bounded number of times.
//! - [`mod@decide`]: decision steps answered by a language model (core's `Decider`).
//! - [`prompt`]: the planner's prompt (the catalog within a token budget, most relevant tools
//!   first) and reading a model's answer into a workflow.
//! - [`output`]: the reusable scenario (the seed's output YAML) and its conversion into a
//!   workflow.
//! - [`intervention`]: seed 000's intervention matrix (when to run a step alone, when to ask)
//!   and an interventor that answers from a file.
//! - [`explore`]: the explorer's loop; [`session`]: its session file; [`auth`]: the SUT's
//!   credentials on every request.
//! - `testing` and `fake_model` (feature `testing`): a loopback simulation of the fixture API
//!   and a loopback OpenAI-compatible server answering from a script.

pub mod auth;
pub mod dataflow;
pub mod decide;
pub mod explore;
#[cfg(feature = "testing")]
pub mod fake_model;
pub mod intent;
pub mod intervention;
pub mod llm;
pub mod output;
pub mod plan;
pub mod prompt;
pub mod recall;
pub mod session;
pub mod state;
pub mod suggest;
pub mod sut;
#[cfg(feature = "testing")]
pub mod testing;

pub use intervention::{
    Action, Assessment, Decision, ScriptedInterventor, Source, Thresholds, decide,
};
pub use sut::{Auth, AuthKind, Credentials, Execution, SutConfig, SutError};

//! The planner: from a goal in plain words to a validated graph of API calls, and decision
//! steps answered by a language model.
//!
//! The modules:
//!
//! - [`llm`]: language models — the trait and an OpenAI-compatible chat-completions client.
//! - [`plan`]: planning — a learned pattern that fits the goal ([`recall`]), else the model's
//!   answer validated, and repaired from the validation report a bounded number of times.
//! - [`prompt`]: the planner's prompt (the catalog within a token budget, most relevant tools
//!   first) and reading a model's answer into a workflow.
//! - [`mod@decide`]: decision steps answered by a language model (core's `Decider`).
//! - [`testing`]: models that answer from a script — in process, and (feature `testing`) a
//!   loopback OpenAI-compatible server.

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod decide;
mod error;
pub mod llm;
pub mod plan;
pub mod prompt;
pub mod recall;
pub mod testing;

pub use error::Error;

//! Test doubles, one home: language models that answer from a script, for hosts' tests and
//! examples as well as ours.
//!
//! - [`ScriptedModel`]: in process, a [`LanguageModel`](crate::llm::LanguageModel) that answers
//!   from a script and keeps every request.
//! - `ModelServer` (feature `testing`): a loopback server that speaks OpenAI's
//!   chat-completions API and answers from a script, for tests that go through HTTP (the CLI's
//!   `plan`).

#[cfg(feature = "testing")]
mod model_server;
mod scripted;

#[cfg(feature = "testing")]
pub use model_server::ModelServer;
pub use scripted::ScriptedModel;

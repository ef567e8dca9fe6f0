//! Test doubles, one home: what stands in for the network in hosts' tests, demos and
//! benchmarks as well as ours.
//!
//! - [`ScriptedTransport`]: in process, answers from a script and records the requests.
//! - `MockServer` (feature `testing`): a loopback HTTP server that answers from a function,
//!   records the requests, and misbehaves on purpose when asked.

mod scripted;
#[cfg(feature = "testing")]
mod server;

pub use scripted::ScriptedTransport;
#[cfg(feature = "testing")]
pub use server::{MockServer, RecordedRequest, Reply};

//! Making one call: a request built from a tool definition and resolved inputs (`request`), sent
//! by a [`Transport`](wayline_core::Transport) — reqwest (`http`, feature `http`), recorded
//! (`record`), with digest authentication (`digest`), or none to be had (`unavailable`) — or a
//! `cli` tool's subprocess (`command`); its response read into a step's output (`response`);
//! when to retry (`retry`); a tool config's token from a command (`token`).
//!
//! Knows nothing of workflows or runs: the run layer drives it.

pub(crate) mod command;
pub(crate) mod digest;
#[cfg(feature = "http")]
pub(crate) mod http;

pub(crate) mod record;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod retry;
pub(crate) mod token;
pub(crate) mod unavailable;

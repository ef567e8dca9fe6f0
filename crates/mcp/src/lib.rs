//! wayline and the Model Context Protocol, on the official Rust SDK (`rmcp`).
//!
//! - [`McpServers`]: the engine's `McpClient` for `kind: mcp` steps, over the servers a
//!   tool-configs file defines under `mcp_servers` (a command on stdio, or a streamable HTTP
//!   URL), each connected on first use and kept for the run.
//! - [`Upstream`]: one connection to an MCP server.

mod client;
mod error;
mod upstream;

pub use client::{CONNECT_TIMEOUT, McpServers};
pub use error::Error;
pub use upstream::Upstream;

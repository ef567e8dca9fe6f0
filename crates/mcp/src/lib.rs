//! wayline and the Model Context Protocol, on the official Rust SDK (`rmcp`).
//!
//! - [`McpServers`]: the engine's `McpClient` for `kind: mcp` steps, over the servers a
//!   tool-configs file defines under `mcp_servers` (a command on stdio, or a streamable HTTP
//!   URL), each connected on first use and kept for the run.
//! - [`Upstream`]: one connection to an MCP server.
//! - [`Gateway`]: an MCP server in front of upstream MCP servers, deciding every tool call with
//!   the guard (phase gating, evidence, panic detection, break-glass, the audit chain), over
//!   stdio or streamable HTTP with a bearer token.
//! - [`HttpOptions`]: how either listens over HTTP: loopback, `Host`/`Origin` checks, and one
//!   static token or, as an OAuth resource server ([`OAuthOptions`]), tokens an authorization
//!   server issued and vouches for.
//! - [`WaylineServer`]: wayline's own tools and saved workflows served as MCP tools (stdio or
//!   streamable HTTP); a call runs on the engine, with progress notifications per step.

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod error;
pub mod gateway;
mod http;
mod oauth;
mod relay;
mod serve;
mod upstream;

pub use client::{CONNECT_TIMEOUT, McpServers};
pub use error::Error;
pub use gateway::{Gateway, GatewayConfig, GatewayHandler, SessionChoice};
pub use http::{Access, HttpOptions};
pub use oauth::OAuthOptions;
pub use serve::{Document, DocumentRun, DocumentTool, WaylineServer};
pub use upstream::Upstream;

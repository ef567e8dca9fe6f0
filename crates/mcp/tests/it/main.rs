//! The MCP crate against real MCP servers and clients from the package registries:
//! `@modelcontextprotocol/server-everything` (npm) behind the client and the gateway, and the
//! official Python SDK (`mcp`, PyPI) in front of the gateway. `.ci/run` installs both; where
//! one is missing, the tests that need it say so in one line and pass.

mod client;
mod gateway;
mod support;

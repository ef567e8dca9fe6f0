//! [`McpServers`]: the engine's [`McpClient`] over the servers a tool-configs file defines.
//! A connection is opened on a server's first call and kept for the calls after it (a host
//! makes one `McpServers` per run, so connections are pooled per run); a connection found
//! closed is opened again on the next call, so a retried idempotent call meets a fresh
//! server rather than the one that went away.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use wayline_core::mcp::{McpCall, McpClient, McpError, McpErrorKind, McpOutcome, McpServer};

use crate::Error;
use crate::upstream::Upstream;

/// How long a server may take to start and complete the handshake, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The MCP servers a run may call, by name, each connected on first use.
#[derive(Debug)]
pub struct McpServers {
    servers: BTreeMap<String, McpServer>,
    connections: Mutex<BTreeMap<String, Arc<Upstream>>>,
    connect_timeout: Duration,
}

impl McpServers {
    /// A client for `servers` (name → definition), none connected yet.
    pub fn new(servers: BTreeMap<String, McpServer>) -> Self {
        McpServers {
            servers,
            connections: Mutex::new(BTreeMap::new()),
            connect_timeout: CONNECT_TIMEOUT,
        }
    }

    /// Allows each server `timeout` to start and complete the handshake.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The server names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// The connection to `server`, opened when there is none or the last one closed.
    pub async fn connection(&self, server: &str) -> Result<Arc<Upstream>, Error> {
        let Some(definition) = self.servers.get(server) else {
            let known: Vec<&str> = self.names().collect();
            return Err(Error::Definition {
                server: server.to_owned(),
                reason: if known.is_empty() {
                    "no MCP server is defined; add it under `mcp_servers` in the tool-configs file"
                        .to_owned()
                } else {
                    format!(
                        "not defined under `mcp_servers` in the tool-configs file (defined: {})",
                        known.join(", ")
                    )
                },
            });
        };
        // One lock for the pool: a server's first calls wait for one connection rather than
        // each starting a process.
        let mut connections = self.connections.lock().await;
        if let Some(open) = connections.get(server)
            && !open.is_closed()
        {
            return Ok(Arc::clone(open));
        }
        let upstream = Arc::new(Upstream::connect(server, definition, self.connect_timeout).await?);
        connections.insert(server.to_owned(), Arc::clone(&upstream));
        Ok(upstream)
    }

    /// Closes every open connection (servers started as processes are stopped).
    pub async fn close(&self) {
        let open = std::mem::take(&mut *self.connections.lock().await);
        for (_, upstream) in open {
            if let Ok(upstream) = Arc::try_unwrap(upstream) {
                upstream.close().await;
            }
        }
    }
}

#[async_trait::async_trait]
impl McpClient for McpServers {
    async fn call(&self, call: McpCall) -> Result<McpOutcome, McpError> {
        let upstream = self.connection(&call.server).await.map_err(|error| {
            let kind = match error {
                Error::Definition { .. } => McpErrorKind::Invalid,
                _ => McpErrorKind::Unavailable,
            };
            McpError::new(kind, error.to_string())
        })?;
        upstream
            .call(&call.tool, &call.arguments, call.timeout)
            .await
    }

    async fn idempotent_hint(&self, server: &str, tool: &str) -> Option<bool> {
        self.connection(server)
            .await
            .ok()?
            .idempotent_hint(tool)
            .await
    }
}

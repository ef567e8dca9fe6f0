//! What the tests share: finding the real servers and clients, and defining servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wayline_core::McpServer;
use wayline_core::secret::CommandLine;

/// The `mcp-server-everything` executable, if it can run here.
pub(crate) fn everything() -> Option<PathBuf> {
    wayline_testkit::mcp_server_everything("the MCP client's tests")
}

/// Server `everything` defined as the executable on stdio.
pub(crate) fn everything_servers(executable: &Path) -> BTreeMap<String, McpServer> {
    let command = CommandLine::Words(vec![executable.display().to_string(), "stdio".to_owned()]);
    BTreeMap::from([("everything".to_owned(), McpServer::command(command))])
}

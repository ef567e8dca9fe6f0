//! What the tests share: finding the real servers and clients, and defining servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use wayline_core::McpServer;
use wayline_core::secret::CommandLine;

/// The `mcp-server-everything` executable, if it can run here (`WAYLINE_MCP_EVERYTHING`
/// overrides where it is looked for).
pub(crate) fn everything() -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/node/node_modules/.bin/mcp-server-everything");
    let found = std::env::var_os("WAYLINE_MCP_EVERYTHING")
        .map(PathBuf::from)
        .or_else(|| installed.is_file().then_some(installed));
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    match found {
        Some(found) if node => Some(found),
        _ => {
            eprintln!(
                "skipped: @modelcontextprotocol/server-everything or Node.js is not installed here \
                 (.ci/run installs them; or set WAYLINE_MCP_EVERYTHING)"
            );
            None
        }
    }
}

/// Server `everything` defined as the executable on stdio.
pub(crate) fn everything_servers(executable: &Path) -> BTreeMap<String, McpServer> {
    let command = CommandLine::Words(vec![executable.display().to_string(), "stdio".to_owned()]);
    BTreeMap::from([("everything".to_owned(), McpServer::command(command))])
}

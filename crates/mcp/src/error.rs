//! The crate's error type.

use std::path::PathBuf;

/// Errors of `wayline-mcp`. Messages never hold a credential of a server definition.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A server definition that cannot be used.
    #[error("MCP server `{server}`: {reason}")]
    Definition {
        /// The server's name.
        server: String,
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A server could not be started or reached, or went away.
    #[error("MCP server `{server}` is unavailable: {reason}")]
    Unavailable {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// A server answered, but not as the protocol says, or refused a request.
    #[error("MCP server `{server}`: {reason}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What it said.
        reason: String,
    },
    /// Two servers expose tools under the same name.
    #[error(
        "the tool `{tool}` is offered by both `{first}` and `{second}`; prefix their tools (`--prefix`) to tell them apart"
    )]
    ToolClash {
        /// The exposed name.
        tool: String,
        /// The server that offered it first.
        first: String,
        /// The other.
        second: String,
    },
    /// A session file or directory could not be used.
    #[error("guard session {}: {reason}", path.display())]
    Session {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A socket could not be opened or served.
    #[error("cannot serve on {address}: {source}")]
    Serve {
        /// Where.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// OAuth could not be set up: the authorization server, or how it was named.
    #[error("OAuth authorization server `{issuer}`: {reason}")]
    Authorization {
        /// The issuer (or the URL at fault).
        issuer: String,
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// The guard refused to work (its policy or audit log).
    #[error(transparent)]
    Guard(#[from] wayline_guard::Error),
}

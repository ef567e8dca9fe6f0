//! MCP steps: the [`McpClient`] trait the engine calls for a step whose tool is of kind `mcp`
//! (a tool of a Model Context Protocol server), and what goes in and out of it. The MCP crate
//! implements it over the servers a tool-configs file names; hosts can plug in their own.
//!
//! # Contract
//!
//! - The client calls tool `tool` of the server it knows as `server` with `arguments` (the
//!   step's resolved inputs, a JSON object) and answers what the tool gave: its structured
//!   content, its content items, and whether the tool said it failed (`isError`).
//! - A server that cannot be reached, or that went away during the call, is
//!   [`McpErrorKind::Unavailable`] (the engine may call again when the tool is idempotent); a
//!   call past `timeout` is [`McpErrorKind::Timeout`]; a server or tool the client does not
//!   know, or arguments the server refuses as a protocol error, is [`McpErrorKind::Invalid`].
//! - A client may keep connections between calls (pooled per run or longer); calls do not
//!   depend on each other otherwise.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::secret::{CommandLine, Secret};

/// How to reach an MCP server: a command started with its standard input and output as the
/// connection (stdio), or the URL of a streamable HTTP endpoint. Servers are defined in the
/// tool-configs file, under `mcp_servers`, so a tool file only names them and holds no secret.
///
/// ```yaml
/// mcp_servers:
///   everything:
///     command: [npx, -y, "@modelcontextprotocol/server-everything", stdio]
///     env: {API_KEY: ${EVERYTHING_KEY}}
///   tickets:
///     url: https://mcp.example.com/mcp
///     auth_token: ${TICKETS_TOKEN}     # sent as `Authorization: Bearer …`
///     headers: {X-Tenant: acme}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct McpServer {
    /// The command that starts the server (stdio).
    #[serde(default)]
    pub command: Option<CommandLine>,
    /// Environment variables for the command (they may hold credentials).
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// The directory the command runs in (default: the current one).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The server's streamable HTTP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// A bearer token for `url`.
    #[serde(default)]
    pub auth_token: Option<Secret>,
    /// Headers sent with every request to `url`.
    #[serde(default)]
    pub headers: IndexMap<String, Secret>,
}

impl McpServer {
    /// A server started by `command` (stdio).
    pub fn command(command: CommandLine) -> Self {
        McpServer {
            command: Some(command),
            ..McpServer::default()
        }
    }

    /// A server at `url` (streamable HTTP).
    pub fn url(url: impl Into<String>) -> Self {
        McpServer {
            url: Some(url.into()),
            ..McpServer::default()
        }
    }

    /// What is wrong with the definition, if anything: it needs a command or a URL, not both,
    /// and HTTP settings only go with a URL.
    pub fn problem(&self) -> Option<String> {
        match (&self.command, &self.url) {
            (None, None) => {
                Some("give `command` (a process on stdio) or `url` (streamable HTTP)".into())
            }
            (Some(_), Some(_)) => Some("give `command` or `url`, not both".into()),
            (Some(_), None) if self.auth_token.is_some() || !self.headers.is_empty() => {
                Some("`auth_token` and `headers` go with `url`; a command gets `env`".into())
            }
            (None, Some(_)) if !self.env.is_empty() || self.cwd.is_some() => Some(
                "`env` and `cwd` go with `command`; a URL gets `headers` or `auth_token`".into(),
            ),
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Some(format!(
                    "`url` must be an http:// or https:// URL, not `{url}`"
                ))
            }
            _ => None,
        }
    }

    /// The values that are credentials: the token, header values, and environment values whose
    /// names say they are secret (`GITHUB_TOKEN`, `API_KEY`; masking every value, `1` or `info`,
    /// everywhere it appears would garble records).
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        self.env
            .iter()
            .filter(|(name, _)| crate::secret::is_secret_name(name))
            .map(|(_, value)| value)
            .chain(&self.auth_token)
            .chain(self.headers.values())
    }
}

/// What an MCP step asks a client to do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpCall {
    /// The server, by the name the tool file gives it.
    pub server: String,
    /// The tool on that server.
    pub tool: String,
    /// The call's arguments: the step's resolved inputs, a JSON object.
    pub arguments: Value,
    /// Time allowed.
    pub timeout: Duration,
    /// The run and step this is for (for labels and logs).
    pub run_id: String,
    /// The step.
    pub step_id: String,
}

impl McpCall {
    /// A call of `tool` on `server` with `arguments`, 30 s.
    pub fn new(server: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        McpCall {
            server: server.into(),
            tool: tool.into(),
            arguments,
            timeout: Duration::from_secs(30),
            run_id: String::new(),
            step_id: String::new(),
        }
    }
}

/// What an MCP tool gave.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct McpOutcome {
    /// Its `structuredContent`, when it gave one.
    pub structured: Option<Value>,
    /// Its content items, as the protocol writes them (`{"type": "text", "text": …}`, …).
    pub content: Vec<Value>,
    /// Whether the tool said the call failed (`isError`).
    pub is_error: bool,
}

impl McpOutcome {
    /// An outcome with `structured` content and no items.
    pub fn structured(structured: Value) -> Self {
        McpOutcome {
            structured: Some(structured),
            ..McpOutcome::default()
        }
    }

    /// An outcome of one text item.
    pub fn text(text: impl Into<String>) -> Self {
        McpOutcome {
            content: vec![serde_json::json!({"type": "text", "text": text.into()})],
            ..McpOutcome::default()
        }
    }

    /// The same outcome, said to be a failure of the tool.
    #[must_use]
    pub fn failed(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// The step's output: the structured content when there is some; else the text of the
    /// content items, read as JSON when it is JSON (one item: its value; several: a list),
    /// else `{"text": …}`.
    pub fn output(&self) -> Value {
        if let Some(structured) = &self.structured {
            return structured.clone();
        }
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect();
        let read = |text: &str| {
            serde_json::from_str::<Value>(text)
                .unwrap_or_else(|_| serde_json::json!({ "text": text }))
        };
        match texts.as_slice() {
            [] => Value::Object(serde_json::Map::new()),
            [one] => read(one),
            many => Value::Array(many.iter().map(|text| read(text)).collect()),
        }
    }

    /// The text of the content items, joined by new lines (what a failure says).
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why an MCP call gave no outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpErrorKind {
    /// The server could not be reached or started, or went away.
    Unavailable,
    /// No answer in time.
    Timeout,
    /// A server or tool the client does not know, or a call the server refused.
    Invalid,
    /// Anything else.
    Failed,
}

/// An MCP call's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct McpError {
    kind: McpErrorKind,
    message: String,
}

impl McpError {
    /// A failure of `kind`; `message` must hold no secret.
    pub fn new(kind: McpErrorKind, message: impl Into<String>) -> Self {
        McpError {
            kind,
            message: message.into(),
        }
    }

    /// What kind.
    pub fn kind(&self) -> McpErrorKind {
        self.kind
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Calls the tools of MCP steps. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait McpClient: Send + Sync + fmt::Debug {
    /// Makes `call`.
    async fn call(&self, call: McpCall) -> Result<McpOutcome, McpError>;

    /// Whether tool `tool` of `server` says a second call with the same arguments has no
    /// further effect (its `idempotentHint`), when the client can tell. The engine asks for
    /// a tool whose file does not say, before deciding whether a failed call may be made
    /// again. The default knows nothing.
    async fn idempotent_hint(&self, server: &str, tool: &str) -> Option<bool> {
        let _ = (server, tool);
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_output_is_the_structured_content_else_the_text_read_as_json() {
        assert_eq!(
            McpOutcome::structured(json!({"sum": 3})).output(),
            json!({"sum": 3})
        );
        assert_eq!(
            McpOutcome::text(r#"{"sum": 3}"#).output(),
            json!({"sum": 3})
        );
        assert_eq!(
            McpOutcome::text("Echo: hi").output(),
            json!({"text": "Echo: hi"})
        );
        let two = McpOutcome {
            content: vec![
                json!({"type": "text", "text": "1"}),
                json!({"type": "image", "data": "…"}),
                json!({"type": "text", "text": "two"}),
            ],
            ..McpOutcome::default()
        };
        assert_eq!(two.output(), json!([1, {"text": "two"}]));
        assert_eq!(McpOutcome::default().output(), json!({}));
        assert_eq!(two.text_content(), "1\ntwo");
    }
}

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

use std::fmt;
use std::time::Duration;

use serde_json::Value;

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

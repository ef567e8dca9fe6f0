//! One connection to an MCP server, as its [`McpServer`] definition says: a process started
//! with its standard input and output as the connection (stdio), or a streamable HTTP
//! endpoint. What the server writes on standard error is logged, and its last lines explain a
//! server that would not start or went away.

mod handler;

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use wayline_core::mcp::{McpError, McpErrorKind, McpOutcome, McpServer};
use wayline_core::secret::CommandLine;

use self::handler::UpstreamHandler;
use crate::Error;
use crate::relay::Relay;

/// How many lines of a server's standard error are kept to explain its failures.
const STDERR_LINES: usize = 20;

/// The variables a stdio server inherits from this process, as the official MCP SDKs pass them
/// (TypeScript's `getDefaultEnvironment`, Python's `get_default_environment`), with the locale,
/// time zone and temporary directory besides: enough to find and run a program, nothing that
/// usually holds a credential. Everything else comes from the server's definition (`env`).
#[cfg(unix)]
const INHERITED: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];
#[cfg(not(unix))]
const INHERITED: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// [`INHERITED`] as this process has them; a value that is a shell function (`() {…`), as the
/// SDKs do, is left out.
fn inherited_environment() -> Vec<(String, std::ffi::OsString)> {
    INHERITED
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), std::env::var_os(name)?)))
        .filter(|(_, value)| !value.to_string_lossy().starts_with("()"))
        .collect()
}

/// A live connection to one MCP server.
#[derive(Debug)]
pub struct Upstream {
    name: String,
    service: RunningService<RoleClient, UpstreamHandler>,
    masks: Arc<Vec<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Each tool's `idempotentHint`, read once.
    idempotent: tokio::sync::OnceCell<HashMap<String, Option<bool>>>,
}

impl Upstream {
    /// Starts or reaches server `name` as `server` defines it, and goes through the protocol's
    /// initialization, all within `timeout`.
    pub async fn connect(
        name: &str,
        server: &McpServer,
        timeout: Duration,
    ) -> Result<Upstream, Error> {
        Upstream::connect_relayed(name, server, timeout, None).await
    }

    /// As [`connect`](Upstream::connect), the server's notifications and requests to its
    /// client going to `relay` (the gateway's clients).
    pub(crate) async fn connect_relayed(
        name: &str,
        server: &McpServer,
        timeout: Duration,
        relay: Option<Arc<Relay>>,
    ) -> Result<Upstream, Error> {
        if let Some(reason) = server.problem() {
            return Err(Error::Definition {
                server: name.to_owned(),
                reason,
            });
        }
        let masks: Arc<Vec<String>> = Arc::new(
            server
                .secrets()
                .map(|secret| secret.expose().to_owned())
                .filter(|value| !value.is_empty())
                .collect(),
        );
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let unavailable = |reason: String| Error::Unavailable {
            server: name.to_owned(),
            reason: mask(&masks, &reason),
        };
        let client = UpstreamHandler::new(name, relay);
        let started = match (&server.command, &server.url) {
            (Some(command), _) => {
                let transport = spawn(name, command, server, &stderr).map_err(&unavailable)?;
                tokio::time::timeout(timeout, client.serve(transport)).await
            }
            (None, Some(url)) => {
                let config = http_config(url, server).map_err(|reason| Error::Definition {
                    server: name.to_owned(),
                    reason,
                })?;
                // reqwest is built without a default TLS provider; ring is the workspace's.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let transport = StreamableHttpClientTransport::from_config(config);
                tokio::time::timeout(timeout, client.serve(transport)).await
            }
            (None, None) => {
                return Err(Error::Definition {
                    server: name.to_owned(),
                    reason: "give `command` or `url`".into(),
                });
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => {
                let mut reason = format!("it did not complete the MCP handshake: {error}");
                reason.push_str(&stderr_tail(&stderr));
                return Err(unavailable(reason));
            }
            Err(_) => {
                let mut reason = format!(
                    "it did not complete the MCP handshake within {} s",
                    timeout.as_secs_f64()
                );
                reason.push_str(&stderr_tail(&stderr));
                return Err(unavailable(reason));
            }
        };
        Ok(Upstream {
            name: name.to_owned(),
            service,
            masks,
            stderr,
            idempotent: tokio::sync::OnceCell::new(),
        })
    }

    /// `text` with the server's credentials masked (`***`).
    pub(crate) fn masked(&self, text: &str) -> String {
        mask(&self.masks, text)
    }

    /// The server's credentials, for masking text later.
    pub(crate) fn masks(&self) -> Arc<Vec<String>> {
        Arc::clone(&self.masks)
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol peer, for requests this type does not wrap (resources, prompts).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// True once the connection is gone (the process exited, the session ended).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// Every tool the server offers (all pages).
    pub async fn tools(&self) -> Result<Vec<Tool>, Error> {
        self.service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| match self.kind_of(&error) {
                McpErrorKind::Unavailable => Error::Unavailable {
                    server: self.name.clone(),
                    reason: self.explain(&error),
                },
                _ => Error::Protocol {
                    server: self.name.clone(),
                    reason: self.explain(&error),
                },
            })
    }

    /// What `tool` says of being called again (`idempotentHint`), from the tool list (read
    /// once); `None` when it says nothing or the list cannot be had.
    pub async fn idempotent_hint(&self, tool: &str) -> Option<bool> {
        let hints = self
            .idempotent
            .get_or_try_init(|| async {
                let tools = self.tools().await?;
                Ok::<_, Error>(
                    tools
                        .into_iter()
                        .map(|tool| {
                            let hint = tool.annotations.and_then(|hints| hints.idempotent_hint);
                            (tool.name.to_string(), hint)
                        })
                        .collect(),
                )
            })
            .await
            .ok()?;
        hints.get(tool).copied().flatten()
    }

    /// Calls `tool` with `arguments`, within `timeout`, answering the result as the server
    /// gave it. Errors say what happened, not which server and tool (the caller knows).
    pub async fn call_raw(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        match tokio::time::timeout(timeout, self.service.peer().call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(McpError::new(self.kind_of(&error), self.explain(&error))),
            Err(_) => Err(McpError::new(
                McpErrorKind::Timeout,
                format!("no answer within {} s", timeout.as_secs_f64()),
            )),
        }
    }

    /// Calls `tool` with `arguments` (a JSON object) within `timeout`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<McpOutcome, McpError> {
        let arguments = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            other => {
                return Err(McpError::new(
                    McpErrorKind::Invalid,
                    format!(
                        "the arguments of tool `{tool}` must be an object (the step's inputs), not {}",
                        type_name(other)
                    ),
                ));
            }
        };
        let result = self.call_raw(tool, arguments, timeout).await?;
        Ok(outcome(&result))
    }

    /// Ends the connection (a process gets its standard input closed, then is stopped).
    pub async fn close(mut self) {
        let _ = self
            .service
            .close_with_timeout(Duration::from_secs(2))
            .await;
    }

    fn kind_of(&self, error: &ServiceError) -> McpErrorKind {
        match error {
            ServiceError::McpError(_) => McpErrorKind::Invalid,
            ServiceError::Timeout { .. } => McpErrorKind::Timeout,
            ServiceError::TransportSend(_) | ServiceError::TransportClosed => {
                McpErrorKind::Unavailable
            }
            _ if self.is_closed() => McpErrorKind::Unavailable,
            _ => McpErrorKind::Failed,
        }
    }

    /// What went wrong, with the server's last words when it went away; credentials masked.
    fn explain(&self, error: &ServiceError) -> String {
        let mut reason = match error {
            ServiceError::TransportClosed => {
                format!(
                    "MCP server `{}` went away (its connection closed)",
                    self.name
                )
            }
            ServiceError::TransportSend(_) => {
                format!("MCP server `{}` cannot be reached: {error}", self.name)
            }
            other => other.to_string(),
        };
        if self.is_closed() {
            reason.push_str(&stderr_tail(&self.stderr));
        }
        mask(&self.masks, &reason)
    }
}

/// Starts `command` with its standard input and output as the connection; its standard error
/// is logged and its last lines kept.
fn spawn(
    name: &str,
    command: &CommandLine,
    server: &McpServer,
    stderr: &Arc<Mutex<VecDeque<String>>>,
) -> Result<TokioChildProcess, String> {
    let words = match command {
        CommandLine::Line(line) => shlex::split(line)
            .ok_or_else(|| format!("cannot split the command line `{line}` (unbalanced quotes)"))?,
        CommandLine::Words(words) => words.clone(),
        _ => return Err("this kind of command is not supported".into()),
    };
    let Some((program, args)) = words.split_first() else {
        return Err("the command is empty".into());
    };
    let mut process = tokio::process::Command::new(program);
    // Stopped with its handle, even when the runtime that would run a polite shutdown is
    // going away (the end of a CLI run).
    process.args(args).kill_on_drop(true);
    // A server gets what it needs to run and what its definition names, not the gateway's
    // whole environment (which holds the gateway's own token, a store's password…).
    process.env_clear();
    process.envs(inherited_environment());
    for (key, value) in &server.env {
        process.env(key, value.expose());
    }
    if let Some(dir) = &server.cwd {
        process.current_dir(dir);
    }
    let (transport, errors) = TokioChildProcess::builder(process)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start `{program}`: {error}"))?;
    if let Some(errors) = errors {
        let kept = Arc::clone(stderr);
        let name = name.to_owned();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(errors).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %name, "{line}");
                let mut kept = kept
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if kept.len() == STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
    }
    Ok(transport)
}

/// The streamable HTTP settings for `url`, with the definition's token and headers.
fn http_config(
    url: &str,
    server: &McpServer,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut headers = HashMap::new();
    for (key, value) in &server.headers {
        let name = key
            .parse::<axum::http::HeaderName>()
            .map_err(|_| format!("`{key}` is not a valid header name"))?;
        let value = value
            .expose()
            .parse()
            .map_err(|_| format!("the value of header `{key}` is not a valid header value"))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    if let Some(token) = &server.auth_token {
        config = config.auth_header(token.expose());
    }
    Ok(config)
}

/// The outcome the engine reads from a tool's result.
pub(crate) fn outcome(result: &CallToolResult) -> McpOutcome {
    let mut outcome = McpOutcome::default();
    outcome.structured = result.structured_content.clone();
    outcome.content = result
        .content
        .iter()
        .filter_map(|item| serde_json::to_value(item).ok())
        .collect();
    outcome.is_error = result.is_error == Some(true);
    outcome
}

fn stderr_tail(stderr: &Mutex<VecDeque<String>>) -> String {
    let kept = stderr
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = kept.iter().map(String::as_str).collect();
    format!(
        "; its last words on standard error:\n  {}",
        lines.join("\n  ")
    )
}

/// `text` with every credential replaced by `***`.
pub(crate) fn mask(masks: &[String], text: &str) -> String {
    masks
        .iter()
        .fold(text.to_owned(), |text, secret| text.replace(secret, "***"))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

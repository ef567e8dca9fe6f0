//! Tool definitions: one API operation (or command) a workflow step can call.
//!
//! Two request styles load from the same YAML, as in the Python original (structure-ai-bot): the
//! **legacy** flat form (`auth_type`, `auth_header`, `parameters`) and the **config** form (`auth`,
//! `request`, `response_extract`); a tool with a `request` block takes the config path. The
//! optional extensions (`kind`, `timeout_ms`, `retry`, `idempotent`, `destructive`,
//! `idempotency_key`, `tags`) are wayline's own. Unknown fields are rejected.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::template;

/// One tool: an HTTP operation (or, with `kind`, a command or code runner) with its auth,
/// request shape and output extraction.
///
/// ```
/// use wayline_core::document::{parse, Format};
/// use wayline_core::ToolDefinition;
///
/// let tool: ToolDefinition = parse(
///     "id: repo\nname: Repo\nbase_url: https://api.github.com\npath: /repos/{owner}/{repo}\n",
///     Format::Yaml,
///     "repo.yaml",
/// ).unwrap();
/// assert_eq!(tool.required_inputs(), ["owner", "repo"]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Key used by `Step::tool_id` and by the tool-configs file.
    pub id: String,
    /// Human label.
    pub name: String,
    /// What the tool does; shown to planners.
    #[serde(default)]
    pub description: String,
    /// Scheme, host and optional base path. Required for `http` tools.
    #[serde(default)]
    pub base_url: String,
    /// HTTP method; upper-cased when sent.
    #[serde(default = "default_method")]
    pub method: String,
    /// Appended to `base_url`; `{name}` placeholders are path parameters.
    #[serde(default)]
    pub path: String,
    /// Legacy flat auth type.
    #[serde(default)]
    pub auth_type: AuthType,
    /// Legacy header name for `api_key` auth.
    #[serde(default)]
    pub auth_header: String,
    /// Legacy parameter names (descriptive only).
    #[serde(default)]
    pub parameters: Vec<String>,
    /// Config-style auth; takes precedence over the legacy fields.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Config-style request shape; its presence selects the config request path.
    #[serde(default)]
    pub request: Option<RequestConfig>,
    /// Output fields extracted from the response.
    #[serde(default)]
    pub response_extract: Option<ResponseExtractConfig>,

    /// What runs the tool (extension; default `http`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub kind: ToolKind,
    /// Per-attempt timeout in milliseconds (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Default retry policy for steps calling this tool (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Hint: repeating the call has the same effect as making it once (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Hint: the call deletes or irreversibly changes something (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Name of a header that carries a per-run, per-step idempotency key (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Free labels for catalogs and policies (extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The command a `cli` tool runs (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandConfig>,
    /// The code a `code` tool runs in a sandbox (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeConfig>,
    /// The MCP server tool an `mcp` tool calls (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<McpConfig>,
    /// JSON Schemas of its responses by status — a code (`200`), a class (`4XX`) or `default`
    /// — as an OpenAPI import embeds them; a step (or `wayline test --check-schema`) checks
    /// the body it gets against the one for its status (extension).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub response_schemas: IndexMap<String, serde_json::Value>,
}

fn default_method() -> String {
    "GET".to_owned()
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Which request path a tool takes (see [`ToolDefinition::code_path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePath {
    /// Flat form: path placeholders, the rest as query (GET) or JSON body (anything else).
    Legacy,
    /// `request` block: declared path/query params, templated headers and body.
    Config,
}

impl ToolDefinition {
    /// A minimal `http` tool, for tests and programmatic catalogs.
    pub fn new(id: impl Into<String>, base_url: impl Into<String>) -> Self {
        let id = id.into();
        ToolDefinition {
            name: id.clone(),
            id,
            description: String::new(),
            base_url: base_url.into(),
            method: default_method(),
            path: String::new(),
            auth_type: AuthType::None,
            auth_header: String::new(),
            parameters: Vec::new(),
            auth: None,
            request: None,
            response_extract: None,
            kind: ToolKind::Http,
            timeout_ms: None,
            retry: None,
            idempotent: None,
            destructive: None,
            idempotency_key: None,
            tags: Vec::new(),
            command: None,
            code: None,
            mcp: None,
            response_schemas: IndexMap::new(),
        }
    }

    /// A `code` tool running Python `source` (see [`CodeConfig`]).
    pub fn python(id: impl Into<String>, source: impl Into<String>) -> Self {
        let mut tool = ToolDefinition::new(id, "");
        tool.kind = ToolKind::Code;
        tool.code = Some(CodeConfig {
            language: default_language(),
            source: source.into(),
            profile: None,
        });
        tool
    }

    /// The request path this tool takes: config when it has a `request` block.
    pub fn code_path(&self) -> CodePath {
        if self.request.is_some() {
            CodePath::Config
        } else {
            CodePath::Legacy
        }
    }

    /// `auth` when present, otherwise the legacy `auth_type` / `auth_header` as an [`AuthConfig`].
    pub fn effective_auth(&self) -> AuthConfig {
        self.auth.clone().unwrap_or_else(|| AuthConfig {
            kind: self.auth_type,
            header: (!self.auth_header.is_empty()).then(|| self.auth_header.clone()),
            username_key: None,
        })
    }

    /// The `{name}` placeholders in `path`, in order, without repeats.
    pub fn path_placeholders(&self) -> Vec<&str> {
        let mut names = Vec::new();
        let mut rest = self.path.as_str();
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else { break };
            let name = &after[..close];
            if !name.is_empty() && !names.contains(&name) {
                names.push(name);
            }
            rest = &after[close + 1..];
        }
        names
    }

    /// True when calling the tool a second time cannot do harm the first call did not: what
    /// the tool says of itself (`idempotent`, `destructive`, an `idempotency_key`) outranks
    /// what its method suggests, and `cli`, `code` and `mcp` tools are repeatable only when they say
    /// they are idempotent. The engine uses this to decide whether a step may run again after
    /// a crash; the planner, whether a step may poll.
    pub fn safe_to_repeat(&self) -> bool {
        if matches!(self.kind, ToolKind::Cli | ToolKind::Code | ToolKind::Mcp) {
            return self.idempotent == Some(true);
        }
        if self.idempotency_key.is_some() || self.idempotent == Some(true) {
            return true;
        }
        if self.idempotent == Some(false) || self.destructive == Some(true) {
            return false;
        }
        !(self.method.eq_ignore_ascii_case("POST") || self.method.eq_ignore_ascii_case("PATCH"))
    }

    /// Inputs a step must map for the request to be complete: the path placeholders, and on
    /// the config path the placeholders of the header and body templates.
    ///
    /// Query parameters and legacy `parameters` are optional: an absent one is simply not sent.
    pub fn required_inputs(&self) -> Vec<&str> {
        let mut names = self.path_placeholders();
        if let Some(request) = &self.request {
            for value in request.headers.values() {
                template::collect_keys_in_str(value, &mut names);
            }
            if let Some(body) = &request.body {
                template::collect_keys(body, &mut names);
            }
        }
        if let Some(command) = &self.command {
            let texts = command
                .args
                .iter()
                .chain(command.env.values())
                .chain(&command.working_dir);
            for text in texts {
                template::collect_keys_in_str(text, &mut names);
            }
        }
        names
    }

    /// Every input name the tool knows of: required ones, then query and legacy parameters.
    pub fn input_names(&self) -> Vec<&str> {
        let mut names = self.required_inputs();
        let optional = self
            .request
            .iter()
            .flat_map(|request| request.path_params.iter().chain(&request.query_params))
            .chain(&self.parameters);
        for name in optional {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        names
    }

    /// The JSON Schema of the tool's inputs (every input it knows of, the required ones
    /// listed), each typed by where its value goes: one put into text (a path, a query, a
    /// header, a command line, part of a string) is a string (a number or boolean given is
    /// written the same); one that is a whole value of the body, or an argument of a code or
    /// MCP tool, keeps its JSON type, whichever it is ([`any_value`]).
    ///
    /// ```
    /// use serde_json::json;
    /// let tool: wayline_core::ToolDefinition = serde_json::from_value(json!({
    ///     "id": "t", "name": "T", "base_url": "http://x", "method": "POST",
    ///     "path": "/pets/{id}", "request": {"body": {"tags": "{{tags}}"}},
    /// }))
    /// .unwrap();
    /// assert_eq!(
    ///     tool.input_schema(),
    ///     json!({
    ///         "type": "object",
    ///         "properties": {
    ///             "id": {"type": "string"},
    ///             "tags": wayline_core::inputs::any_value(),
    ///         },
    ///         "required": ["id", "tags"],
    ///     })
    /// );
    /// ```
    pub fn input_schema(&self) -> serde_json::Value {
        let mut whole = Vec::new();
        let mut in_text = self.path_placeholders();
        let mut texts: Vec<&str> = Vec::new();
        if let Some(request) = &self.request {
            texts.extend(request.headers.values().map(String::as_str));
            in_text.extend(
                request
                    .path_params
                    .iter()
                    .chain(&request.query_params)
                    .map(String::as_str),
            );
            if let Some(body) = &request.body {
                body_keys(body, &mut whole, &mut texts);
            }
        }
        if let Some(command) = &self.command {
            texts.extend(
                command
                    .args
                    .iter()
                    .chain(command.env.values())
                    .chain(&command.working_dir)
                    .map(String::as_str),
            );
        }
        // An HTTP tool's legacy parameters go in its query; the others' are arguments as given.
        match self.kind {
            ToolKind::Http => in_text.extend(self.parameters.iter().map(String::as_str)),
            _ => whole.extend(self.parameters.iter().map(String::as_str)),
        }
        for text in texts {
            template::collect_keys_in_str(text, &mut in_text);
        }
        let properties: serde_json::Map<String, serde_json::Value> = self
            .input_names()
            .into_iter()
            .map(|name| {
                let schema = if in_text.contains(&name) || !whole.contains(&name) {
                    serde_json::json!({"type": "string"})
                } else {
                    any_value()
                };
                (name.to_owned(), schema)
            })
            .collect();
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": self.required_inputs(),
        })
    }

    /// The output fields `response_extract` declares, in order (empty when it declares none).
    pub fn output_fields(&self) -> Vec<&str> {
        self.response_extract
            .iter()
            .flat_map(|extract| extract.fields.keys())
            .map(String::as_str)
            .collect()
    }

    /// True when `response_extract` is strict and declares fields: then the step's output holds
    /// exactly those keys, and a reference to any other is a mistake.
    pub fn has_closed_outputs(&self) -> bool {
        self.response_extract
            .as_ref()
            .is_some_and(|extract| extract.strict && !extract.fields.is_empty())
    }
}

/// Authentication types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AuthType {
    /// No credentials.
    #[default]
    None,
    /// A key in a header (`X-API-Key` unless named).
    ApiKey,
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `Authorization: Basic base64(user:password)`.
    Basic,
}

/// Config-style authentication. Secrets come from the tool-configs file, never from here.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AuthConfig {
    /// The auth type.
    #[serde(rename = "type", default)]
    pub kind: AuthType,
    /// Header name for `api_key` (default `X-API-Key`).
    #[serde(default)]
    pub header: Option<String>,
    /// For `basic`: the tool-configs key holding the user name (default `auth_username`).
    #[serde(default)]
    pub username_key: Option<String>,
}

/// Config-style request shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RequestConfig {
    /// Inputs substituted into `{name}` in the path.
    #[serde(default)]
    pub path_params: Vec<String>,
    /// Inputs sent as the query string.
    #[serde(default)]
    pub query_params: Vec<String>,
    /// Extra headers; values are `{{key}}` templates.
    #[serde(default)]
    pub headers: IndexMap<String, String>,
    /// Body template; `None` sends no body.
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    /// `application/x-www-form-urlencoded` sends a form; anything else sends JSON.
    #[serde(default = "default_content_type")]
    pub content_type: String,
}

fn default_content_type() -> String {
    "application/json".to_owned()
}

/// Output extraction: output key → path into the parsed response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResponseExtractConfig {
    /// Output key → dot path, JSONPath (`$...`) or JSON Pointer (`/...`).
    #[serde(default)]
    pub fields: IndexMap<String, String>,
    /// A missing path fails the step when true, gives `null` when false.
    #[serde(default = "default_true")]
    pub strict: bool,
}

fn default_true() -> bool {
    true
}

/// The command of a `cli` tool: run without a shell, arguments passed as they are.
///
/// ```yaml
/// kind: cli
/// command:
///   program: git
///   args: [log, -n, "{{count}}", --format=%s]
///   env: {GIT_PAGER: cat}
///   working_dir: "{{repo}}"
///   max_output_bytes: 65536
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CommandConfig {
    /// The program: a path, or a name looked up in `PATH`.
    pub program: String,
    /// Arguments; each is a `{{key}}` template rendered with the step's inputs.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables (templates); the rest of the environment is inherited.
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Working directory (a template); the engine's own when absent.
    #[serde(default)]
    pub working_dir: Option<String>,
    /// Largest stdout or stderr kept, in bytes; more fails the step (default 1 MiB).
    #[serde(default = "default_max_output_bytes")]
    pub max_output_bytes: u64,
}

fn default_max_output_bytes() -> u64 {
    1 << 20
}

/// The code of a `code` tool, run in a sandbox by the engine's
/// [`CodeRunner`](crate::code::CodeRunner). The step's inputs are the dict `inputs`; the
/// value left in `result` (JSON) is the step's response body.
///
/// ```yaml
/// kind: code
/// code:
///   language: python          # the only one so far (default)
///   profile: python-default   # the sandbox profile (optional)
///   source: |
///     result = {"total": sum(inputs["values"])}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CodeConfig {
    /// The language (`python`).
    #[serde(default = "default_language")]
    pub language: String,
    /// The code.
    pub source: String,
    /// The sandbox profile (the runner's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

fn default_language() -> String {
    "python".to_owned()
}

/// What runs a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// An HTTP request.
    #[default]
    Http,
    /// A local command line.
    Cli,
    /// Code run in a sandbox.
    Code,
    /// A tool of an MCP (Model Context Protocol) server.
    Mcp,
}

/// What an `mcp` tool calls: a tool of an MCP server. The server is named here and defined
/// where credentials may live (its command line or URL, in the tool-configs file), so a tool
/// file holds no secret.
///
/// ```yaml
/// id: fs_read
/// name: Read a file
/// kind: mcp
/// mcp: {server: files, tool: read_file}
/// idempotent: true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct McpConfig {
    /// The server, by name.
    pub server: String,
    /// The tool on it.
    pub tool: String,
}

impl McpConfig {
    /// Tool `tool` of server `server`.
    pub fn new(server: impl Into<String>, tool: impl Into<String>) -> Self {
        McpConfig {
            server: server.into(),
            tool: tool.into(),
        }
    }
}

/// Retry policy for transient failures (a tool's default, or a step's override).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff before the second attempt, in milliseconds.
    #[serde(default = "default_initial_backoff_ms")]
    pub initial_backoff_ms: u64,
    /// Upper bound of the exponential backoff, in milliseconds.
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
}

fn default_initial_backoff_ms() -> u64 {
    200
}

fn default_max_backoff_ms() -> u64 {
    10_000
}

impl RetryPolicy {
    /// A policy of `max_attempts` attempts with the default backoff (200 ms doubling to 10 s).
    pub fn new(max_attempts: u32) -> Self {
        RetryPolicy {
            max_attempts,
            initial_backoff_ms: default_initial_backoff_ms(),
            max_backoff_ms: default_max_backoff_ms(),
        }
    }
}

/// The JSON Schema of an input that may be any JSON value, each type its own branch (a
/// `type` array is legal but less portable: clients that map schemas onto a single-type
/// dialect reject it).
pub fn any_value() -> serde_json::Value {
    serde_json::json!({"anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "object"},
        {"type": "array"},
        {"type": "null"},
    ]})
}

/// The keys of a body template: those that are a whole value (`"{{tags}}"`, keeping the
/// value's type) go in `whole`, the texts that hold keys among other characters in `texts`.
fn body_keys<'a>(body: &'a serde_json::Value, whole: &mut Vec<&'a str>, texts: &mut Vec<&'a str>) {
    match body {
        serde_json::Value::String(text) => match template::whole_placeholder(text) {
            Some(key) => whole.push(key),
            None => texts.push(text),
        },
        serde_json::Value::Array(items) => {
            items.iter().for_each(|item| body_keys(item, whole, texts))
        }
        serde_json::Value::Object(fields) => {
            fields
                .values()
                .for_each(|value| body_keys(value, whole, texts));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_inputs_cover_path_headers_and_body() {
        let mut tool = ToolDefinition::new("t", "https://x");
        tool.path = "/a/{id}/b/{id}/{other}".into();
        tool.request = Some(RequestConfig {
            path_params: vec!["id".into()],
            query_params: vec!["q".into()],
            headers: IndexMap::from([("Authorization".into(), "Bearer {{token}}".into())]),
            body: Some(serde_json::json!({"query": "{ x(id: \"{{id}}\") }", "n": "{{count}}"})),
            content_type: default_content_type(),
        });
        assert_eq!(tool.required_inputs(), ["id", "other", "token", "count"]);
        assert_eq!(tool.input_names(), ["id", "other", "token", "count", "q"]);

        // Only `count` is a whole body value; `id` is one too, but also part of a string.
        let schema = tool.input_schema();
        for name in ["id", "other", "token", "q"] {
            assert_eq!(schema["properties"][name]["type"], "string", "{name}");
        }
        assert_eq!(schema["properties"]["count"], any_value());
        assert_eq!(
            schema["required"],
            serde_json::json!(["id", "other", "token", "count"])
        );

        // An MCP tool's parameters are arguments, kept as given.
        let mut mcp = ToolDefinition::new("m", "");
        mcp.kind = ToolKind::Mcp;
        mcp.parameters = vec!["items".into()];
        assert_eq!(mcp.input_schema()["properties"]["items"], any_value());
    }

    #[test]
    fn legacy_auth_becomes_effective_auth() {
        let mut tool = ToolDefinition::new("t", "https://x");
        tool.auth_type = AuthType::ApiKey;
        tool.auth_header = "X-Key".into();
        let auth = tool.effective_auth();
        assert_eq!(auth.kind, AuthType::ApiKey);
        assert_eq!(auth.header.as_deref(), Some("X-Key"));
        assert_eq!(tool.code_path(), CodePath::Legacy);
    }
}

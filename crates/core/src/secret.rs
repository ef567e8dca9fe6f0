//! Credentials and per-tool settings, kept apart from tool definitions (which never hold
//! secrets): the [`Secret`] value, the per-tool [`ToolConfig`], and the [`SecretProvider`]
//! plug-in trait through which the engine asks for them.
//!
//! # Contract of [`SecretProvider`]
//! - [`SecretProvider::tool_config`] returns the settings of one tool, or `None` when it has
//!   none (the tool then runs without credentials).
//! - It may be called once per step run; an implementation that fetches from a remote vault
//!   should cache.
//! - Errors name the tool and what failed, never a secret value.
//! - Every value typed [`Secret`] is treated as a credential by the engine: it is scrubbed from
//!   run records, errors and events.

use std::collections::BTreeMap;
use std::fmt;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::Error;

/// A secret value: its `Debug` and `Display` never show it.
///
/// ```
/// use wayline_core::secret::Secret;
/// let token = Secret::new("s3cret");
/// assert_eq!(format!("{token:?} {token}"), "Secret(***) ***");
/// assert_eq!(token.expose(), "s3cret");
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Secret {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Secret".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A credential: masked wherever it would be shown. `${VAR}` reads it from the environment."
        })
    }
}

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// Settings and credentials for one tool (one entry of the tool-configs file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolConfig {
    /// Replaces the tool's `base_url` (e.g. a staging host or a loopback mock).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Token for `api_key` and `bearer` auth; the password for `basic`.
    #[serde(default)]
    pub auth_token: Option<Secret>,
    /// User name for `basic` auth.
    #[serde(default)]
    pub auth_username: Option<Secret>,
    /// Extra headers sent with every request of the tool.
    #[serde(default)]
    pub headers: IndexMap<String, Secret>,
    /// Further named values (e.g. the key an `auth.username_key` names).
    #[serde(default)]
    pub values: BTreeMap<String, Secret>,
    /// A command that prints the token on standard output (a secret manager's CLI), run
    /// without a shell when `auth_token` is not set: once per run for each distinct command,
    /// its output never printed (see the executor's `EngineBuilder`).
    #[serde(default)]
    pub auth_token_command: Option<CommandLine>,
}

/// A command to run: a command line (split as a POSIX shell would, but run without one) or its
/// words. Used for a command that prints a token, and for an MCP server started as a process.
///
/// ```yaml
/// auth_token_command: "vault kv get -field=token secret/api"
/// auth_token_command: [gcloud, auth, print-access-token]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
#[non_exhaustive]
pub enum CommandLine {
    /// A command line.
    Line(String),
    /// Its words: the program, then its arguments.
    Words(Vec<String>),
}

impl ToolConfig {
    /// A value by its tool-configs key: `auth_token`, `auth_username` or one of `values`.
    pub fn get(&self, key: &str) -> Option<&Secret> {
        match key {
            "auth_token" => self.auth_token.as_ref(),
            "auth_username" => self.auth_username.as_ref(),
            other => self.values.get(other),
        }
    }

    /// The values that are credentials: the token, header values and named values. The user
    /// name is left out: it identifies rather than authenticates (a client id), and masking a
    /// short common word everywhere it appears would garble records. Headers carrying it (basic
    /// auth) are hidden whole anyway.
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        self.auth_token
            .iter()
            .chain(self.headers.values())
            .chain(self.values.values())
    }
}

/// Where the engine gets each tool's [`ToolConfig`]. See the [module documentation](self).
#[async_trait::async_trait]
pub trait SecretProvider: Send + Sync + fmt::Debug {
    /// The settings of `tool_id`, or `None` when it has none.
    async fn tool_config(&self, tool_id: &str) -> Result<Option<ToolConfig>, Error>;
}

/// An in-memory [`SecretProvider`]: tool id → [`ToolConfig`].
///
/// ```
/// use wayline_core::secret::{MemorySecrets, Secret, ToolConfig};
///
/// let mut config = ToolConfig::default();
/// config.auth_token = Some(Secret::new("s3cret"));
/// let mut secrets = MemorySecrets::new();
/// secrets.insert("github_repo", config);
/// assert!(!format!("{secrets:?}").contains("s3cret"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemorySecrets {
    tools: BTreeMap<String, ToolConfig>,
}

impl MemorySecrets {
    /// No configs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the config of a tool.
    pub fn insert(&mut self, tool_id: impl Into<String>, config: ToolConfig) {
        self.tools.insert(tool_id.into(), config);
    }
}

#[async_trait::async_trait]
impl SecretProvider for MemorySecrets {
    async fn tool_config(&self, tool_id: &str) -> Result<Option<ToolConfig>, Error> {
        Ok(self.tools.get(tool_id).cloned())
    }
}

/// True for a name that holds a secret (`rootPassword`, `api_token`, `clientSecret`). The
/// explorer keeps such values out of session files and outputs, and the engine keeps them
/// from the model a decision step asks.
pub fn is_secret_name(name: &str) -> bool {
    let lowered = name.to_lowercase().replace(['_', '-'], "");
    [
        "password",
        "secret",
        "token",
        "apikey",
        "credential",
        "privatekey",
        "passphrase",
    ]
    .iter()
    .any(|word| lowered.contains(word))
}

/// `value` with the values of secret-named members (at any depth) replaced by `***`.
pub fn mask_secret_names(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, inner)| {
                    let shown = if is_secret_name(key) && !inner.is_null() {
                        Value::from("***")
                    } else {
                        mask_secret_names(inner)
                    };
                    (key.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask_secret_names).collect()),
        other => other.clone(),
    }
}

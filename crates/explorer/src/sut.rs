//! The system-under-test configuration (`sut.yaml`) the explorer starts from, in the TiDB
//! Cloud explorer's format (its configuration files load unchanged):
//!
//! ```yaml
//! name: TiDB Cloud TiDBX
//! version: v1beta1
//! connection:
//!   host: ${TIDBCLOUD_HOST:-serverless.tidbapi.com}     # ${VAR} and ${VAR:-default} expand
//!   base_path: ${TIDBCLOUD_BASE_PATH:-/v1beta1}
//!   auth:
//!     type: digest                                     # none | basic | digest | bearer | api_key
//!     env_vars: {private_key: TIDB_PRIVATE_KEY, public_key: TIDB_PUBLIC_KEY}
//! specs: {openapi: openapi.json}                        # relative to this file
//! preset_variables: {project_id: ${TIDBCLOUD_PROJECT_ID:-}}
//! cli_tools:
//!   mysqlsh: {description: MySQL Shell, explore_hints: [mysqlsh --help], common_operations: []}
//! execution:
//!   mode: auto
//!   auto_mode:
//!     checkpoint_operations: [".*Create.*", ".*Delete.*"]   # confirm these before running
//!     confidence_threshold: 0.7
//!     max_silent_steps: 10
//!     polling: {max_retries: 6, delay_seconds: 10}
//! ```
//!
//! Credentials are never in the file: `env_vars` names the variables that hold them, read when
//! [`SutConfig::credentials`] is called. The names the explorer understands per auth type:
//! `username`/`password` (basic, digest; TiDB Cloud's `public_key`/`private_key` are the same
//! pair), `token` (bearer), `key` (api_key, sent in `auth.header`, default `X-API-Key`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wayline_core::Secret;
use wayline_core::document::{self, Format};

use crate::Error;

/// How the SUT authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthKind {
    /// No credentials.
    #[default]
    None,
    /// HTTP basic.
    Basic,
    /// HTTP digest (RFC 7616).
    Digest,
    /// `Authorization: Bearer`.
    Bearer,
    /// A key in a header.
    ApiKey,
}

/// The `connection.auth` block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Auth {
    /// The type.
    #[serde(rename = "type", default)]
    pub kind: AuthKind,
    /// Credential role → the environment variable holding it.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub env_vars: IndexMap<String, String>,
    /// The header of an `api_key` (default `X-API-Key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
}

/// The `connection` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Connection {
    /// The host (`serverless.tidbapi.com`, `127.0.0.1:8080`).
    #[serde(default)]
    pub host: String,
    /// The path prefix of every operation (`/v1beta1`).
    #[serde(default)]
    pub base_path: String,
    /// `https` unless set.
    #[serde(default = "default_scheme")]
    pub scheme: String,
    /// Authentication.
    #[serde(default)]
    pub auth: Auth,
}

fn default_scheme() -> String {
    "https".to_owned()
}

/// The `specs` block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Specs {
    /// The OpenAPI (or Swagger) file, relative to the SUT file.
    #[serde(default)]
    pub openapi: Option<String>,
}

/// One CLI tool the explorer may use.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CliTool {
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Commands that show how to use it.
    #[serde(default)]
    pub explore_hints: Vec<String>,
    /// Commands often run with it.
    #[serde(default)]
    pub common_operations: Vec<String>,
}

/// Polling defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Polling {
    /// Polls before giving up (default 120).
    #[serde(default = "default_poll_retries")]
    pub max_retries: u32,
    /// Seconds between polls (default 30).
    #[serde(default = "default_poll_delay")]
    pub delay_seconds: u64,
}

fn default_poll_retries() -> u32 {
    120
}

fn default_poll_delay() -> u64 {
    30
}

impl Default for Polling {
    fn default() -> Self {
        Polling {
            max_retries: default_poll_retries(),
            delay_seconds: default_poll_delay(),
        }
    }
}

impl Polling {
    /// The pause between polls.
    pub fn delay(&self) -> Duration {
        Duration::from_secs(self.delay_seconds)
    }
}

/// The `execution.auto_mode` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AutoMode {
    /// Operation-id regexes that are confirmed before they run, whatever the confidence.
    #[serde(default)]
    pub checkpoint_operations: Vec<String>,
    /// Below this confidence, a person is asked (default 0.7, the intervention matrix's line).
    #[serde(default = "default_threshold")]
    pub confidence_threshold: f64,
    /// Steps run in a row without showing anything before a person is asked to look.
    #[serde(default = "default_silent_steps")]
    pub max_silent_steps: u32,
    /// Polling defaults.
    #[serde(default)]
    pub polling: Polling,
}

fn default_threshold() -> f64 {
    0.7
}

fn default_silent_steps() -> u32 {
    10
}

impl Default for AutoMode {
    fn default() -> Self {
        AutoMode {
            checkpoint_operations: Vec::new(),
            confidence_threshold: default_threshold(),
            max_silent_steps: default_silent_steps(),
            polling: Polling::default(),
        }
    }
}

/// The `execution` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Execution {
    /// `auto` (decide by the intervention matrix) or `manual` (confirm every step).
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Auto-mode settings.
    #[serde(default)]
    pub auto_mode: AutoMode,
}

fn default_mode() -> String {
    "manual".to_owned()
}

impl Default for Execution {
    fn default() -> Self {
        Execution {
            mode: default_mode(),
            auto_mode: AutoMode::default(),
        }
    }
}

/// A SUT config.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SutConfig {
    /// Its name.
    pub name: String,
    /// The API version.
    #[serde(default)]
    pub version: String,
    /// Where and how to connect.
    pub connection: Connection,
    /// The spec.
    #[serde(default)]
    pub specs: Specs,
    /// Variables known from the start (`project_id`).
    #[serde(default)]
    pub preset_variables: IndexMap<String, Value>,
    /// CLI tools.
    #[serde(default)]
    pub cli_tools: IndexMap<String, CliTool>,
    /// Execution settings.
    #[serde(default)]
    pub execution: Execution,
    /// The file it came from (to find the spec), when loaded from one.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// The checkpoint regexes, compiled.
    #[serde(skip)]
    checkpoints: Vec<Regex>,
}

/// Credentials read from the environment, as the auth type needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credentials {
    /// None needed.
    None,
    /// Basic or digest.
    UserPassword {
        /// Basic or digest.
        kind: AuthKind,
        /// The user (TiDB Cloud: the public key).
        username: Secret,
        /// The password (TiDB Cloud: the private key).
        password: Secret,
    },
    /// A bearer token.
    Bearer(Secret),
    /// An API key and its header.
    ApiKey {
        /// The header.
        header: String,
        /// The key.
        key: Secret,
    },
}

impl SutConfig {
    /// Reads a SUT file, expanding `${VAR}` and `${VAR:-default}` from the environment.
    pub fn load(path: &Path) -> Result<SutConfig, Error> {
        SutConfig::load_with(path, &|name| std::env::var(name).ok())
    }

    /// As [`load`](Self::load), with variables from `env`.
    pub fn load_with(
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SutConfig, Error> {
        let text = wayline_durable::read::text(
            path,
            wayline_core::document::Limits::configured().max_bytes,
        )
        .map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut config = SutConfig::parse(&text, &path.display().to_string(), env)?;
        config.source = Some(path.to_owned());
        Ok(config)
    }

    /// Parses SUT text; `origin` names it in errors (which never show an expanded value).
    pub fn parse(
        text: &str,
        origin: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SutConfig, Error> {
        let expansion = document::expand_vars(text, env)
            .map_err(|unset| Error::Document(Box::new(unset.into_document_error(text, origin))))?;
        let mut config: SutConfig = expansion.parse(text, Format::Yaml, origin)?;
        let invalid = |message: String| Error::Invalid {
            origin: origin.to_owned(),
            message,
        };
        if !(0.0..=1.0).contains(&config.execution.auto_mode.confidence_threshold) {
            return Err(invalid(format!(
                "execution.auto_mode.confidence_threshold is {}; give a number from 0 to 1",
                config.execution.auto_mode.confidence_threshold
            )));
        }
        if !matches!(config.execution.mode.as_str(), "auto" | "manual") {
            return Err(invalid(format!(
                "execution.mode is `{}`; use `auto` or `manual`",
                config.execution.mode
            )));
        }
        config.checkpoints = config
            .execution
            .auto_mode
            .checkpoint_operations
            .iter()
            .map(|pattern| {
                // A checkpoint names whole operation ids.
                Regex::new(&format!("^(?:{pattern})$")).map_err(|error| {
                    invalid(format!(
                        "execution.auto_mode.checkpoint_operations: `{pattern}` is not a regex: {error}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(config)
    }

    /// The API's base URL: `scheme://host` + `base_path`. An empty host is an error that
    /// says how to set it.
    pub fn base_url(&self) -> Result<String, Error> {
        let host = self.connection.host.trim().trim_end_matches('/');
        if host.is_empty() {
            return Err(Error::Invalid {
                origin: self.origin(),
                message: "connection.host is empty; set it (or the environment variable the file names for it)".to_owned(),
            });
        }
        let host = host
            .strip_prefix("https://")
            .or_else(|| host.strip_prefix("http://"))
            .map_or_else(
                || format!("{}://{host}", self.connection.scheme),
                |_| host.to_owned(),
            );
        let base = self.connection.base_path.trim();
        let base = if base.is_empty() || base.starts_with('/') {
            base.to_owned()
        } else {
            format!("/{base}")
        };
        Ok(format!("{host}{}", base.trim_end_matches('/')))
    }

    /// The spec file: `specs.openapi` relative to the SUT file's directory.
    pub fn spec_path(&self) -> Option<PathBuf> {
        let spec = self.specs.openapi.as_deref()?;
        let dir = self
            .source
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        Some(dir.join(spec))
    }

    /// True when `operation_id` is a checkpoint: confirmed before it runs.
    pub fn is_checkpoint(&self, operation_id: &str) -> bool {
        self.checkpoints
            .iter()
            .any(|pattern| pattern.is_match(operation_id))
    }

    /// True in auto mode.
    pub fn auto(&self) -> bool {
        self.execution.mode == "auto"
    }

    /// The credentials, read from the environment through `env`. A variable the auth type
    /// needs that is unset or empty is an error naming it.
    pub fn credentials(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Credentials, Error> {
        let auth = &self.connection.auth;
        let read = |roles: &[&str]| -> Result<Secret, Error> {
            let Some((role, variable)) = roles
                .iter()
                .find_map(|role| auth.env_vars.get(*role).map(|variable| (*role, variable)))
            else {
                return Err(Error::Invalid {
                    origin: self.origin(),
                    message: format!(
                        "connection.auth.env_vars needs `{}` (the environment variable holding it) for {:?} auth",
                        roles.join("` or `"),
                        auth.kind
                    ),
                });
            };
            env(variable)
                .filter(|value| !value.is_empty())
                .map(Secret::new)
                .ok_or_else(|| Error::Invalid {
                    origin: self.origin(),
                    message: format!("the environment variable {variable} (the {role}) is not set"),
                })
        };
        Ok(match auth.kind {
            AuthKind::None => Credentials::None,
            kind @ (AuthKind::Basic | AuthKind::Digest) => Credentials::UserPassword {
                kind,
                username: read(&["username", "public_key", "user"])?,
                password: read(&["password", "private_key"])?,
            },
            AuthKind::Bearer => Credentials::Bearer(read(&["token", "access_token"])?),
            AuthKind::ApiKey => Credentials::ApiKey {
                header: auth
                    .header
                    .clone()
                    .unwrap_or_else(|| "X-API-Key".to_owned()),
                key: read(&["key", "api_key"])?,
            },
        })
    }

    fn origin(&self) -> String {
        self.source
            .as_deref()
            .map_or_else(|| self.name.clone(), |path| path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_config_takes_the_defaults() {
        let config = SutConfig::parse(
            "name: Mini\nconnection: {host: 'http://127.0.0.1:8080', base_path: v1/}\n",
            "mini.yaml",
            &|_| None,
        )
        .unwrap();
        assert_eq!(config.base_url().unwrap(), "http://127.0.0.1:8080/v1");
        assert!(!config.auto());
        assert_eq!(config.execution.auto_mode.confidence_threshold, 0.7);
        assert_eq!(config.execution.auto_mode.polling.max_retries, 120);
        assert_eq!(config.credentials(&|_| None).unwrap(), Credentials::None);
    }
}

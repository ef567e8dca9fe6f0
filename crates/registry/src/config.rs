//! The tool-configs file: per tool, a `base_url` override and credentials, kept apart from the
//! tool definitions (which never hold secrets).
//!
//! ```yaml
//! github_repo:
//!   auth_token: ${GITHUB_TOKEN}
//! spotify_token:
//!   auth_username: ${SPOTIFY_CLIENT_ID}
//!   auth_token: ${SPOTIFY_CLIENT_SECRET}
//! internal_api:
//!   base_url: http://127.0.0.1:8080
//!   headers: {X-Tenant: acme}
//!   values: {client_id: ${CLIENT_ID}}   # further named values, e.g. for `auth.username_key`
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use wayline_core::document::{self, DocumentError, Format};
use wayline_core::secret::SecretProvider;
pub use wayline_core::secret::{Secret, ToolConfig};

use crate::Error;
use crate::load::{EnvLookup, expand, process_env, read_text};

/// The tool-configs file: tool id → [`ToolConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct ToolConfigs {
    tools: BTreeMap<String, ToolConfig>,
}

impl ToolConfigs {
    /// No configs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a tool-configs file (YAML or JSON), expanding `${VAR}` from the environment.
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::load_with(path, &process_env)
    }

    /// [`load`](Self::load) with `${VAR}` values from `env`.
    pub fn load_with(path: &Path, env: EnvLookup<'_>) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let format = Format::from_path(path).unwrap_or(Format::Yaml);
        let text = read_text(path)?;
        Self::parse(&text, format, &origin, env)
    }

    /// Parses tool-configs text; `origin` names it in errors, which never show a value that came
    /// from the environment.
    pub fn parse(
        text: &str,
        format: Format,
        origin: &str,
        env: EnvLookup<'_>,
    ) -> Result<Self, Error> {
        let expansion = expand(text, origin, env)?;
        if expansion.text.trim().is_empty() {
            return Ok(Self::new());
        }
        Ok(expansion.parse(text, format, origin)?)
    }

    /// Adds or replaces the config of a tool.
    pub fn insert(&mut self, tool_id: impl Into<String>, config: ToolConfig) {
        self.tools.insert(tool_id.into(), config);
    }

    /// The config of a tool, if it has one.
    pub fn get(&self, tool_id: &str) -> Option<&ToolConfig> {
        self.tools.get(tool_id)
    }

    /// Tool ids that have a config.
    pub fn tool_ids(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Configs naming tools the catalog does not have (likely typos), as problems.
    pub fn unknown_tools(&self, known: &[&str], origin: &str) -> Vec<DocumentError> {
        self.tool_ids()
            .filter(|id| !known.contains(id))
            .map(|id| {
                let mut error =
                    DocumentError::new(origin, format!("configuration for unknown tool `{id}`"));
                error.suggestion = document::nearest(id, known.iter().copied()).map(str::to_owned);
                error
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl SecretProvider for ToolConfigs {
    async fn tool_config(&self, tool_id: &str) -> Result<Option<ToolConfig>, wayline_core::Error> {
        Ok(self.get(tool_id).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_expanded_and_never_shown() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        let text = "github_repo:\n  auth_token: ${TOKEN}\n  headers: {X-Trace: on}\n";
        let configs = ToolConfigs::parse(text, Format::Yaml, "c.yaml", &env).unwrap();
        let config = configs.get("github_repo").unwrap();
        assert_eq!(
            config.auth_token.as_ref().map(Secret::expose),
            Some("s3cret")
        );
        assert!(!format!("{configs:?}").contains("s3cret"));
    }

    #[test]
    fn typos_are_errors_with_suggestions() {
        let env = |_: &str| Some("s3cret".to_owned());
        let text = "github_repo:\n  auth_tokn: ${TOKEN}\n";
        let err = ToolConfigs::parse(text, Format::Yaml, "c.yaml", &env).unwrap_err();
        let shown = err.to_string();
        assert!(shown.contains("did you mean `auth_token`"), "{shown}");
        assert!(shown.contains("c.yaml:2:"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn wrong_types_do_not_leak_values() {
        let env = |_: &str| Some("12345".to_owned());
        let text = "github_repo:\n  headers: ${TOKEN}\n";
        let err = ToolConfigs::parse(text, Format::Yaml, "c.yaml", &env).unwrap_err();
        assert!(!err.to_string().contains("12345"), "{err}");
    }
}

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
//! mcp_servers:                          # the MCP servers `kind: mcp` tools name
//!   files:
//!     command: [npx, -y, "@modelcontextprotocol/server-filesystem", /srv/data]
//!   tickets:
//!     url: https://mcp.example.com/mcp
//!     auth_token: ${TICKETS_TOKEN}
//! ```
//!
//! `mcp_servers` is the one key that is not a tool id: it holds the [`McpServer`]s by name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de};
use wayline_core::document::{self, DocumentError, Format};
use wayline_core::mcp::McpServer;
use wayline_core::secret::SecretProvider;
pub use wayline_core::secret::{Secret, ToolConfig};

use crate::Error;
use crate::load::{EnvLookup, expand, process_env, read_text};

/// The key of the MCP server definitions in a tool-configs file.
const MCP_SERVERS: &str = "mcp_servers";

/// The tool-configs file: tool id → [`ToolConfig`], and the MCP servers by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolConfigs {
    tools: BTreeMap<String, ToolConfig>,
    mcp_servers: BTreeMap<String, McpServer>,
}

/// Read key by key, straight from the document, so a mistake inside an entry keeps its line.
impl<'de> Deserialize<'de> for ToolConfigs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = ToolConfigs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of tool ids to their settings (and `mcp_servers`)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolConfigs, A::Error> {
                let mut configs = ToolConfigs::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == MCP_SERVERS {
                        let servers: BTreeMap<String, McpServer> = map.next_value()?;
                        if let Some((name, problem)) = servers
                            .iter()
                            .find_map(|(name, server)| Some((name, server.problem()?)))
                        {
                            return Err(de::Error::custom(format!(
                                "MCP server `{name}`: {problem}"
                            )));
                        }
                        configs.mcp_servers = servers;
                    } else {
                        let config = map.next_value()?;
                        configs.tools.insert(key, config);
                    }
                }
                Ok(configs)
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// The file's JSON Schema: tool ids to [`ToolConfig`]s, with [`McpServer`]s under
/// `mcp_servers`.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ToolConfigs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolConfigs".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let tool = generator.subschema_for::<ToolConfig>();
        let servers = generator.subschema_for::<BTreeMap<String, McpServer>>();
        schemars::json_schema!({
            "description": "Per tool id, a base_url override and credentials; the MCP servers `kind: mcp` tools name under `mcp_servers`.",
            "type": "object",
            "properties": { MCP_SERVERS: servers },
            "additionalProperties": tool,
        })
    }
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

    /// The MCP servers, by name.
    pub fn mcp_servers(&self) -> &BTreeMap<String, McpServer> {
        &self.mcp_servers
    }

    /// Adds or replaces an MCP server.
    pub fn insert_mcp_server(&mut self, name: impl Into<String>, server: McpServer) {
        self.mcp_servers.insert(name.into(), server);
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
    fn mcp_servers_are_read_beside_the_tools_and_checked() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
        let text = "github_repo:\n  auth_token: ${TOKEN}\nmcp_servers:\n  files:\n    command: npx -y server-files /srv\n    env: {FILES_TOKEN: ${TOKEN}}\n  remote:\n    url: http://127.0.0.1:9/mcp\n    auth_token: ${TOKEN}\n";
        let configs = ToolConfigs::parse(text, Format::Yaml, "c.yaml", &env).unwrap();
        assert_eq!(configs.tool_ids().collect::<Vec<_>>(), ["github_repo"]);
        let servers = configs.mcp_servers();
        assert_eq!(servers.len(), 2);
        assert!(servers["files"].command.is_some());
        assert_eq!(servers["remote"].secrets().count(), 1);
        assert_eq!(servers["files"].secrets().count(), 1);
        assert!(!format!("{configs:?}").contains("s3cret"));

        let both = "mcp_servers:\n  files:\n    command: x\n    url: http://h/mcp\n";
        let err = ToolConfigs::parse(both, Format::Yaml, "c.yaml", &env).unwrap_err();
        assert!(
            err.to_string()
                .contains("MCP server `files`: give `command` or `url`, not both"),
            "{err}"
        );
        let typo = "mcp_servers:\n  files:\n    comand: x\n";
        let err = ToolConfigs::parse(typo, Format::Yaml, "c.yaml", &env).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.contains("c.yaml:3:") && shown.contains("`command`"),
            "{shown}"
        );
    }

    #[test]
    fn wrong_types_do_not_leak_values() {
        let env = |_: &str| Some("12345".to_owned());
        let text = "github_repo:\n  headers: ${TOKEN}\n";
        let err = ToolConfigs::parse(text, Format::Yaml, "c.yaml", &env).unwrap_err();
        assert!(!err.to_string().contains("12345"), "{err}");
    }
}

//! Testing your own tool YAMLs (feature `testing`): load a tool file, point it at a loopback
//! mock server, call it with inputs, and assert on the request that went out and the outputs it
//! extracted.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use wayline::testing::{MockServer, Reply, ToolHarness};
//!
//! let harness = ToolHarness::from_yaml(r#"
//! id: repo
//! name: Repo
//! base_url: https://api.github.com
//! path: /repos/{owner}/{repo}
//! response_extract: {fields: {stars: stargazers_count}}
//! "#).unwrap();
//! let server = MockServer::start(|_| Reply::json(200, json!({"stargazers_count": 7}))).await.unwrap();
//! let call = harness.call(&server, [("owner", json!("rust-lang")), ("repo", json!("rust"))]).await;
//! assert_eq!(call.request().path(), "/repos/rust-lang/rust");
//! assert_eq!(call.output(), &json!({"stars": 7}));
//! # });
//! ```

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use wayline_core::document::Format;
use wayline_core::{
    MemoryCatalog, MemorySecrets, StepResult, StepStatus, ToolConfig, ToolDefinition,
};
use wayline_executor::Engine;
pub use wayline_executor::testing::{MockServer, RecordedRequest, Reply};

/// A tool under test. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct ToolHarness {
    tool: ToolDefinition,
    config: ToolConfig,
}

impl ToolHarness {
    /// Loads a tool file (YAML or JSON, `${VAR}` expanded from the environment).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, wayline_registry::Error> {
        Ok(Self::new(wayline_registry::load_tool_file(path.as_ref())?))
    }

    /// Parses a tool from YAML text.
    pub fn from_yaml(yaml: &str) -> Result<Self, wayline_registry::Error> {
        let tool = wayline_registry::parse_tool(
            yaml,
            Format::Yaml,
            "tool under test",
            &wayline_registry::process_env,
        )?;
        Ok(Self::new(tool))
    }

    /// A harness for a tool already loaded.
    pub fn new(tool: ToolDefinition) -> Self {
        ToolHarness {
            tool,
            config: ToolConfig::default(),
        }
    }

    /// The tool.
    pub fn tool(&self) -> &ToolDefinition {
        &self.tool
    }

    /// Credentials and headers to call with (its `base_url` is replaced by the server's).
    pub fn with_config(mut self, config: ToolConfig) -> Self {
        self.config = config;
        self
    }

    /// Calls the tool once (no retries) against `server` with `inputs`; the base URL's path,
    /// if any, is kept (`https://host/v2` becomes `http://127.0.0.1:PORT/v2`).
    pub async fn call<'a>(
        &self,
        server: &MockServer,
        inputs: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> ToolCall {
        let before = server.requests().len();
        let mut call = self.call_at(&server.url(""), inputs).await;
        call.request = server.requests().into_iter().nth(before);
        call
    }

    /// Calls the tool once (no retries) against any server at `server_url` (`http://host:port`),
    /// keeping the path of the tool's base URL. The server records the request; the returned
    /// call has none.
    pub async fn call_at<'a>(
        &self,
        server_url: &str,
        inputs: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> ToolCall {
        let base_path = url_path(&self.tool.base_url);
        let mut config = self.config.clone();
        config.base_url = Some(format!(
            "{}{}",
            server_url.trim_end_matches('/'),
            base_path.trim_end_matches('/')
        ));
        let mut secrets = MemorySecrets::new();
        secrets.insert(self.tool.id.clone(), config);
        let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([self.tool.clone()])))
            .secrets(Arc::new(secrets))
            .build();
        let inputs = inputs
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        let result = engine
            .call_tool(&self.tool.id, inputs)
            .await
            .unwrap_or_else(|error| {
                let mut result = StepResult::pending("call");
                result.status = StepStatus::Failed;
                result.error = Some(error.to_string());
                result
            });
        ToolCall {
            result,
            request: None,
        }
    }
}

fn url_path(base_url: &str) -> String {
    match base_url.split_once("://") {
        Some((_, rest)) => rest
            .find('/')
            .map_or(String::new(), |at| rest[at..].to_owned()),
        None => String::new(),
    }
}

/// The outcome of one [`ToolHarness::call`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// The step result: status, output, error, warnings, the request summary.
    pub result: StepResult,
    /// The request the server received, if one was sent.
    pub request: Option<RecordedRequest>,
}

impl ToolCall {
    /// The request the server received; panics (this is for tests) saying why when none was.
    pub fn request(&self) -> &RecordedRequest {
        match &self.request {
            Some(request) => request,
            None => panic!(
                "the tool sent no request: {}",
                self.result.error.as_deref().unwrap_or("no error recorded")
            ),
        }
    }

    /// The extracted output.
    pub fn output(&self) -> &Value {
        &self.result.output_data
    }

    /// Why the call failed, if it did.
    pub fn error(&self) -> Option<&str> {
        self.result.error.as_deref()
    }
}

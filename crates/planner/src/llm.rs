//! Language models for the planner: the [`LanguageModel`] trait, a client for any server that
//! speaks OpenAI's chat-completions API ([`OpenAiModel`]: hosted ones, vLLM, llama.cpp, Ollama),
//! and a scripted model for tests and examples ([`crate::testing::ScriptedModel`]).
//!
//! # Contract
//!
//! - `complete` sends the messages and answers the model's text, with the tokens used.
//! - With a JSON schema the model is asked for JSON matching it (where the server supports
//!   structured output); the answer is still text, which the caller parses and checks.
//! - Failures are [`ModelError`]s of a kind: the server unreachable or overloaded after the
//!   retries ([`ModelErrorKind::Unavailable`]), credentials refused (`Auth`), the request
//!   refused (`Refused`), or an answer that is not a completion (`Unreadable`). No error,
//!   `Debug` output or log holds the API key.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wayline_core::Secret;
use wayline_core::transport::{Header, HttpRequest, Transport};

use crate::Error;
pub use crate::error::{ModelError, ModelErrorKind};

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// Instructions.
    System,
    /// The person (or the program) asking.
    User,
    /// The model.
    Assistant,
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What.
    pub content: String,
}

impl Message {
    /// A message of `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::new(Role::Assistant, content)
    }
}

/// What to ask.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The conversation.
    pub messages: Vec<Message>,
    /// A JSON schema the answer should match (structured output), if any.
    pub json_schema: Option<Value>,
    /// Sampling temperature (the server's default when unset).
    pub temperature: Option<f64>,
    /// The most tokens to answer with.
    pub max_tokens: Option<u32>,
}

impl CompletionRequest {
    /// A request with these messages.
    pub fn new(messages: Vec<Message>) -> Self {
        CompletionRequest {
            messages,
            ..CompletionRequest::default()
        }
    }

    /// Asks for JSON matching `schema`.
    pub fn json_schema(mut self, schema: Value) -> Self {
        self.json_schema = Some(schema);
        self
    }
}

/// Tokens used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// In the prompt.
    pub prompt_tokens: u64,
    /// In the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    fn add(&mut self, other: Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Completion {
    /// The model's text.
    pub text: String,
    /// The tokens it took.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
}

/// A language model. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync + fmt::Debug {
    /// Answers `request`.
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError>;
}

/// Where an OpenAI-compatible server is and how to talk to it.
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The base URL, `/v1` included (`https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// The API key (sent as a Bearer token), if the server wants one.
    pub api_key: Option<Secret>,
    /// The model.
    pub model: String,
    /// Time allowed per call (120 s).
    pub timeout: Duration,
    /// Retries after the first attempt, on 429, 5xx and transient transport failures (3).
    pub max_retries: u32,
    /// The first wait between attempts (1 s), doubling up to 30 s; a `Retry-After` in seconds
    /// is honoured up to 30 s.
    pub retry_base: Duration,
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl OpenAiConfig {
    /// `model` at `base_url`, no key, the defaults.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(120),
            max_retries: 3,
            retry_base: Duration::from_secs(1),
        }
    }

    /// Sends `key` as the Bearer token.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(key));
        self
    }

    /// Waits from `base` between retries.
    pub fn retry_base(mut self, base: Duration) -> Self {
        self.retry_base = base;
        self
    }

    /// From flags where given, else `WAYLINE_LLM_URL`, `WAYLINE_LLM_API_KEY`,
    /// `WAYLINE_LLM_MODEL` (read through `var`). The URL and the model are required.
    pub fn resolve(
        url: Option<&str>,
        model: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<OpenAiConfig, Error> {
        let missing = |message: &str| Error::Config {
            message: message.to_owned(),
        };
        let url = url
            .map(str::to_owned)
            .or_else(|| var("WAYLINE_LLM_URL"))
            .filter(|url| !url.trim().is_empty())
            .ok_or_else(|| missing("no model server: pass --model-url URL or set WAYLINE_LLM_URL (e.g. http://127.0.0.1:8000/v1)"))?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::Config {
                message: format!("the model URL `{url}` is not an http(s) URL"),
            });
        }
        let model = model
            .map(str::to_owned)
            .or_else(|| var("WAYLINE_LLM_MODEL"))
            .filter(|model| !model.trim().is_empty())
            .ok_or_else(|| missing("no model named: pass --model NAME or set WAYLINE_LLM_MODEL"))?;
        let mut config = OpenAiConfig::new(url, model);
        if let Some(key) = var("WAYLINE_LLM_API_KEY").filter(|key| !key.is_empty()) {
            config = config.api_key(key);
        }
        Ok(config)
    }
}

/// A model behind an OpenAI-compatible chat-completions endpoint, over the core `Transport`.
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: OpenAiConfig,
    transport: Arc<dyn Transport>,
    usage: Arc<Mutex<Usage>>,
}

/// The longest wait between attempts.
const RETRY_CAP: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

impl OpenAiModel {
    /// A client for the server `config` describes, sending through `transport`.
    pub fn new(config: OpenAiConfig, transport: Arc<dyn Transport>) -> Self {
        OpenAiModel {
            config,
            transport,
            usage: Arc::new(Mutex::new(Usage::default())),
        }
    }

    /// The tokens used by every call so far.
    pub fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn body(&self, request: &CompletionRequest) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": request.messages,
        });
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(max_tokens) = request.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(schema) = &request.json_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            });
        }
        body
    }

    fn wait(&self, attempt: u32, retry_after: Option<&str>) -> Duration {
        let asked = retry_after
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        asked
            .unwrap_or_else(|| {
                self.config
                    .retry_base
                    .saturating_mul(2u32.saturating_pow(attempt.min(16)))
            })
            .min(RETRY_CAP)
    }
}

/// The server's own message from an error body (`{"error": {"message"}}`), or the start of
/// the body.
fn server_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    parsed
        .as_ref()
        .and_then(|value| {
            value
                .pointer("/error/message")
                .or_else(|| value.get("error"))
                .or_else(|| value.get("message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect())
}

#[async_trait::async_trait]
impl LanguageModel for OpenAiModel {
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        let url = format!("{}/chat/completions", self.config.base_url);
        let mut http = HttpRequest::new("POST", &url);
        http.timeout = Some(self.config.timeout);
        http.headers
            .push(Header::new("Content-Type", "application/json"));
        if let Some(key) = &self.config.api_key {
            http.headers.push(Header::sensitive(
                "Authorization",
                format!("Bearer {}", key.expose()),
            ));
        }
        http.body = Some(self.body(request).to_string().into_bytes());
        let mut attempt = 0u32;
        loop {
            let last = attempt >= self.config.max_retries;
            let (retry, why, after) = match self.transport.send(http.clone()).await {
                Ok(response) if response.status < 300 => {
                    let parsed: ChatResponse =
                        serde_json::from_slice(&response.body).map_err(|error| {
                            ModelError::new(
                                ModelErrorKind::Unreadable,
                                format!(
                                    "the model server's answer is not a chat completion: {error}"
                                ),
                            )
                        })?;
                    let text = parsed
                        .choices
                        .into_iter()
                        .next()
                        .and_then(|choice| choice.message.content)
                        .ok_or_else(|| {
                            ModelError::new(
                                ModelErrorKind::Unreadable,
                                "the model answered no text",
                            )
                        })?;
                    let usage = parsed.usage.unwrap_or_default();
                    self.usage
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .add(usage);
                    return Ok(Completion {
                        text,
                        usage,
                        model: parsed.model.unwrap_or_else(|| self.config.model.clone()),
                    });
                }
                Ok(response) if response.status == 429 || response.status >= 500 => (
                    true,
                    format!(
                        "HTTP {}: {}",
                        response.status,
                        server_message(&response.body)
                    ),
                    response.header("retry-after").map(str::to_owned),
                ),
                Ok(response) => {
                    let kind = if matches!(response.status, 401 | 403) {
                        ModelErrorKind::Auth
                    } else {
                        ModelErrorKind::Refused
                    };
                    return Err(ModelError::new(
                        kind,
                        format!(
                            "the model server refused the request (HTTP {}): {}",
                            response.status,
                            server_message(&response.body)
                        ),
                    ));
                }
                Err(error) => (
                    error.kind().is_transient(),
                    error.message().to_owned(),
                    None,
                ),
            };
            if !retry || last {
                return Err(ModelError::new(
                    ModelErrorKind::Unavailable,
                    format!(
                        "the model server at {} gave no completion after {} attempt(s): {why}",
                        self.config.base_url,
                        attempt + 1
                    ),
                ));
            }
            tokio::time::sleep(self.wait(attempt, after.as_deref())).await;
            attempt += 1;
        }
    }
}

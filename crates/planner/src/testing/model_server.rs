//! [`ModelServer`]: a loopback server that speaks the OpenAI
//! chat-completions API and answers from a script, in order. It keeps every request body, so
//! a test can see what was asked, or that nothing was. When the script runs out it refuses
//! (HTTP 400) rather than make an answer up.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::prompt::estimate_tokens;

#[derive(Debug, Default)]
struct Script {
    answers: VecDeque<String>,
    requests: Vec<Value>,
}

/// A running loopback model server.
#[derive(Debug, Clone)]
pub struct ModelServer {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl ModelServer {
    /// Starts a server on a loopback port answering `answers` in order (panics when no
    /// loopback port can be bound: it is for tests).
    pub async fn start<S: Into<String>>(answers: impl IntoIterator<Item = S>) -> ModelServer {
        let script = Arc::new(Mutex::new(Script {
            answers: answers.into_iter().map(Into::into).collect(),
            requests: Vec::new(),
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(Arc::clone(&script));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("a loopback port for the fake model");
        let address = listener.local_addr().expect("the fake model's address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ModelServer {
            url: format!("http://{address}/v1"),
            script,
        }
    }

    /// The base URL to configure a client with (`/v1` included).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .requests
            .clone()
    }
}

async fn complete(State(script): State<Arc<Mutex<Script>>>, Json(body): Json<Value>) -> Response {
    let answer = {
        let mut script = script.lock().unwrap_or_else(PoisonError::into_inner);
        script.requests.push(body.clone());
        script.answers.pop_front()
    };
    let Some(answer) = answer else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"message": "the fake model has no answers left"}})),
        )
            .into_response();
    };
    let prompt_tokens: usize = body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|message| message["content"].as_str())
                .map(estimate_tokens)
                .sum()
        })
        .unwrap_or(0);
    let completion_tokens = estimate_tokens(&answer);
    Json(json!({
        "id": "fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    }))
    .into_response()
}

//! [`ScriptedTransport`]: a [`Transport`] that answers from a queue or a function and records
//! requests, in process.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use wayline_core::{HttpRequest, HttpResponse, Transport, TransportError};

type Responder = dyn Fn(&HttpRequest) -> Result<HttpResponse, TransportError> + Send + Sync;

/// A transport that sends nothing: it answers each request from a script and remembers it.
///
/// Scripted answers are used first, in order; after them the fallback function answers (by
/// default a 404 naming the URL).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use wayline_core::{HttpRequest, HttpResponse, Transport};
/// use wayline_executor::testing::ScriptedTransport;
///
/// let transport = ScriptedTransport::new().then_respond(HttpResponse::new(200, r#"{"ok":true}"#));
/// let response = transport.send(HttpRequest::new("GET", "http://api.test/x")).await.unwrap();
/// assert_eq!(response.status, 200);
/// assert_eq!(transport.requests()[0].url, "http://api.test/x");
/// # });
/// ```
#[derive(Clone)]
pub struct ScriptedTransport {
    state: Arc<Mutex<State>>,
    fallback: Arc<Responder>,
}

#[derive(Default)]
struct State {
    script: VecDeque<Result<HttpResponse, TransportError>>,
    requests: Vec<HttpRequest>,
}

impl fmt::Debug for ScriptedTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("ScriptedTransport")
            .field("scripted", &state.script.len())
            .field("requests", &state.requests.len())
            .finish()
    }
}

impl Default for ScriptedTransport {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedTransport {
    /// An empty script; unscripted requests get a 404.
    pub fn new() -> Self {
        ScriptedTransport {
            state: Arc::default(),
            fallback: Arc::new(|request: &HttpRequest| {
                Ok(HttpResponse::new(
                    404,
                    format!("no scripted answer for {}", request.url),
                ))
            }),
        }
    }

    /// Answers every request without a scripted answer with `respond`.
    pub fn with_fallback(
        mut self,
        respond: impl Fn(&HttpRequest) -> Result<HttpResponse, TransportError> + Send + Sync + 'static,
    ) -> Self {
        self.fallback = Arc::new(respond);
        self
    }

    /// Queues a response.
    pub fn then_respond(self, response: HttpResponse) -> Self {
        self.lock().script.push_back(Ok(response));
        self
    }

    /// Queues a transport error.
    pub fn then_fail(self, error: TransportError) -> Self {
        self.lock().script.push_back(Err(error));
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl Transport for ScriptedTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let scripted = {
            let mut state = self.lock();
            state.requests.push(request.clone());
            state.script.pop_front()
        };
        scripted.unwrap_or_else(|| (self.fallback)(&request))
    }
}

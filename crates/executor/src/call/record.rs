//! Recording the exchanges a transport carries — each request, its response or its error, when
//! it started and how long it took — with secrets masked as the run record masks them. A
//! transport wrapper, so whatever sends through it (the engine, `tools try`, a host) is
//! recorded; `wayline test --har` writes what it holds as an HTTP Archive.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use wayline_core::{Header, HttpRequest, HttpResponse, Transport, TransportError};

use crate::values::redact::{Redactor, is_credential_header, is_credential_response_header};

/// What a masked credential reads as.
const MASK: &str = "***";

/// One request and what came of it, secrets masked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Exchange {
    /// When the request was sent.
    pub started_at: DateTime<Utc>,
    /// Until its response (or error) came.
    pub duration: Duration,
    /// The request: credential headers `***`, secrets masked in its URL and a text body.
    pub request: HttpRequest,
    /// The response, credential headers (`Set-Cookie` among them) `***` and secrets masked in
    /// a text body; `None` when the request failed.
    pub response: Option<HttpResponse>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// A transport that records every exchange it carries for another one. Cheap to share.
#[derive(Debug, Clone)]
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    redactor: Redactor,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
}

impl RecordingTransport {
    /// Records what `inner` carries, masking what `redactor` knows (and every credential
    /// header).
    pub fn new(inner: Arc<dyn Transport>, redactor: Redactor) -> Self {
        RecordingTransport {
            inner,
            redactor,
            exchanges: Arc::default(),
        }
    }

    /// The exchanges so far, in the order they were sent.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn masked_body(&self, body: &[u8]) -> Vec<u8> {
        match std::str::from_utf8(body) {
            Ok(text) => self.redactor.text(text).into_owned().into_bytes(),
            // A body that is not text is kept as it came: no secret of a tool config is sent in
            // one by the engine.
            Err(_) => body.to_vec(),
        }
    }

    fn masked_request(&self, request: &HttpRequest) -> HttpRequest {
        let mut masked = request.clone();
        masked.url = self.redactor.text(&request.url).into_owned();
        masked.headers = request
            .headers
            .iter()
            .map(|header| {
                if header.sensitive || is_credential_header(&header.name) {
                    Header::sensitive(header.name.clone(), MASK)
                } else {
                    Header::new(header.name.clone(), self.redactor.text(&header.value))
                }
            })
            .collect();
        masked.body = request.body.as_deref().map(|body| self.masked_body(body));
        masked
    }

    fn masked_response(&self, response: &HttpResponse) -> HttpResponse {
        let mut masked = response.clone();
        masked.headers = response
            .headers
            .iter()
            .map(|(name, value)| {
                let value = if is_credential_response_header(name) {
                    MASK.to_owned()
                } else {
                    self.redactor.text(value).into_owned()
                };
                (name.clone(), value)
            })
            .collect();
        masked.body = self.masked_body(&response.body);
        masked.redirects = response
            .redirects
            .iter()
            .map(|url| self.redactor.text(url).into_owned())
            .collect();
        masked
    }
}

#[async_trait::async_trait]
impl Transport for RecordingTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let started_at = Utc::now();
        let clock = tokio::time::Instant::now();
        let recorded = self.masked_request(&request);
        let result = self.inner.send(request).await;
        let exchange = Exchange {
            started_at,
            duration: clock.elapsed(),
            request: recorded,
            response: result
                .as_ref()
                .ok()
                .map(|response| self.masked_response(response)),
            error: result
                .as_ref()
                .err()
                .map(|error| self.redactor.text(&error.to_string()).into_owned()),
        };
        self.exchanges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(exchange);
        result
    }
}

#[cfg(test)]
mod tests {
    use wayline_core::{Secret, ToolConfig};

    use super::*;
    use crate::testing::ScriptedTransport;

    #[tokio::test]
    async fn exchanges_are_kept_with_every_secret_masked() {
        let mock = ScriptedTransport::new().then_respond(
            HttpResponse::new(200, r#"{"echo": "tok-123456"}"#)
                .with_header("Set-Cookie", "session=abc")
                .with_header("Content-Type", "application/json"),
        );
        let mut config = ToolConfig::default();
        config.auth_token = Some(Secret::new("tok-123456"));
        let recorder = RecordingTransport::new(Arc::new(mock), Redactor::for_configs([&config]));
        let mut request = HttpRequest::new("POST", "https://api.example/x?key=tok-123456");
        request.headers = vec![
            Header::sensitive("Authorization", "Bearer tok-123456"),
            Header::new("X-Api-Key", "tok-123456"),
            Header::new("Accept", "application/json"),
        ];
        request.body = Some(br#"{"token": "tok-123456"}"#.to_vec());
        recorder.send(request).await.unwrap();
        let exchanges = recorder.exchanges();
        let exchange = &exchanges[0];
        let shown = format!("{exchange:?}");
        assert!(!shown.contains("tok-123456"), "{shown}");
        assert_eq!(exchange.request.url, "https://api.example/x?key=***");
        assert_eq!(exchange.request.header("accept"), Some("application/json"));
        let response = exchange.response.as_ref().unwrap();
        assert_eq!(response.header("set-cookie"), Some("***"));
        assert_eq!(response.status, 200);
    }

    #[tokio::test]
    async fn a_failed_request_is_kept_with_its_error() {
        let mock = ScriptedTransport::new().then_fail(TransportError::new(
            wayline_core::TransportErrorKind::Connect,
            "connection refused",
        ));
        let recorder = RecordingTransport::new(Arc::new(mock), Redactor::default());
        assert!(
            recorder
                .send(HttpRequest::new("GET", "http://127.0.0.1:9/"))
                .await
                .is_err()
        );
        let exchanges = recorder.exchanges();
        assert!(exchanges[0].response.is_none());
        assert!(exchanges[0].error.as_deref().unwrap().contains("refused"));
    }
}

//! How an HTTP request is sent: the [`Transport`] plug-in trait and its own request, response
//! and error types, so that no HTTP client's types appear in wayline's signatures.
//!
//! # Contract
//! - [`Transport::send`] sends one request and returns the response whatever its status: a 404
//!   or a 503 is an `Ok` response, not an error. Errors are for requests that got no complete
//!   response.
//! - It honours [`HttpRequest::timeout`] for the whole exchange and reports running out of it as
//!   [`TransportErrorKind::Timeout`].
//! - [`TransportError::kind`] says whether the request may have reached the server:
//!   [`TransportErrorKind::Connect`] means it certainly did not, which makes a retry safe even
//!   for a non-idempotent request.
//! - Response header names are lower case.
//! - It never retries by itself: retrying is the engine's decision.
//! - It never logs header values marked [`Header::sensitive`].

use std::fmt;
use std::time::Duration;

/// One HTTP header of a request.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    /// Header name as it will be sent.
    pub name: String,
    /// Header value.
    pub value: String,
    /// True when the value is a credential: `Debug` and request summaries hide it.
    pub sensitive: bool,
}

impl Header {
    /// A header whose value may be shown.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Header {
            name: name.into(),
            value: value.into(),
            sensitive: false,
        }
    }

    /// A header whose value is a credential.
    pub fn sensitive(name: impl Into<String>, value: impl Into<String>) -> Self {
        Header {
            sensitive: true,
            ..Header::new(name, value)
        }
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value: &dyn fmt::Debug = if self.sensitive { &"***" } else { &self.value };
        write!(f, "{}: {:?}", self.name, value)
    }
}

/// A request ready to send.
///
/// ```
/// use wayline_core::transport::{Header, HttpRequest};
///
/// let mut request = HttpRequest::new("GET", "https://api.example.com/v1/things");
/// request.headers.push(Header::sensitive("Authorization", "Bearer s3cret"));
/// assert!(!format!("{request:?}").contains("s3cret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpRequest {
    /// Method, upper case (`GET`, `POST`, ...).
    pub method: String,
    /// Absolute URL, query string included.
    pub url: String,
    /// Headers in the order they are sent.
    pub headers: Vec<Header>,
    /// Body bytes; `None` sends none.
    pub body: Option<Vec<u8>>,
    /// Time allowed for the whole exchange.
    pub timeout: Option<Duration>,
}

impl HttpRequest {
    /// A request with no headers, body or timeout.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        HttpRequest {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            timeout: None,
        }
    }

    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|header| header.name.eq_ignore_ascii_case(name))
            .map(|header| header.value.as_str())
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("body_len", &self.body.as_ref().map(Vec::len))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A complete response, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers with lower-case names, in the order received.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
    /// The URLs the request was redirected to before this response, in order (empty when it
    /// was answered where it was sent). A transport that follows redirects fills it in, so
    /// the run record can show where a request really went.
    pub redirects: Vec<String>,
}

impl HttpResponse {
    /// A response with a status and a body and no headers.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Self {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: body.into(),
            redirects: Vec::new(),
        }
    }

    /// Adds a header (builder style); the name is lower-cased.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }
}

/// Why a request got no complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// No connection was made (refused, DNS, TLS handshake): the request was not sent.
    Connect,
    /// The request's time ran out.
    Timeout,
    /// The connection broke after the request may have been sent (reset, closed early).
    Interrupted,
    /// The request itself is unusable (malformed URL, invalid header); retrying cannot help.
    InvalidRequest,
    /// Anything else.
    Other,
}

impl TransportErrorKind {
    /// True for failures that may go away on their own (connect, timeout, interrupted).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            TransportErrorKind::Connect
                | TransportErrorKind::Timeout
                | TransportErrorKind::Interrupted
        )
    }
}

impl fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportErrorKind::Connect => "connect error",
            TransportErrorKind::Timeout => "timed out",
            TransportErrorKind::Interrupted => "connection interrupted",
            TransportErrorKind::InvalidRequest => "invalid request",
            TransportErrorKind::Other => "transport error",
        })
    }
}

/// A request that got no complete response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct TransportError {
    kind: TransportErrorKind,
    message: String,
}

impl TransportError {
    /// An error of `kind`; `message` says what happened and must not contain credentials.
    pub fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError {
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure this is; drives the engine's retry decision.
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// What happened.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Sends HTTP requests. See the [module documentation](self) for the contract.
#[async_trait::async_trait]
pub trait Transport: Send + Sync + fmt::Debug {
    /// Sends `request` and returns the complete response, whatever its status.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError>;
}

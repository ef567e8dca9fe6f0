//! [`MockServer`]: a loopback HTTP/1.1 server for tests, demos and benchmarks.
//!
//! It records every request and answers from a handler that can also misbehave on purpose:
//! delay, reset the connection, close it without answering, or never answer. It binds
//! `127.0.0.1` on a free port and stops when dropped.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use wayline_core::{HttpRequest, Transport};
//! use wayline_executor::testing::{MockServer, Reply};
//! use wayline_executor::ReqwestTransport;
//!
//! let server = MockServer::start(|request| match request.path() {
//!     "/ping" => Reply::json(200, json!({"pong": true})),
//!     _ => Reply::status(404),
//! })
//! .await
//! .unwrap();
//! let transport = ReqwestTransport::new().unwrap();
//! let response = transport.send(HttpRequest::new("GET", server.url("/ping?x=1"))).await.unwrap();
//! assert_eq!(response.status, 200);
//! assert_eq!(server.requests()[0].query("x"), Some("1".to_owned()));
//! # });
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Largest request head (request line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// Method.
    pub method: String,
    /// Path and query, as sent (`/a/b?x=1`).
    pub target: String,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The path without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The first value of query parameter `name`, decoded.
    pub fn query(&self, name: &str) -> Option<String> {
        self.query_pairs()
            .into_iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }

    /// Every query parameter, decoded, in order.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        let query = self.target.split_once('?').map_or("", |(_, query)| query);
        url::form_urlencoded::parse(query.as_bytes())
            .map(|(key, value)| (key.into_owned(), value.into_owned()))
            .collect()
    }

    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// How the server answers one request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reply {
    /// A response, after an optional delay.
    Respond {
        /// Status code.
        status: u16,
        /// Headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: Vec<u8>,
        /// Wait before answering (tokio time: pausable in tests).
        delay: Duration,
        /// Wait measured by the wall clock instead (see [`Reply::latency`]).
        latency: Duration,
    },
    /// Reset the connection (TCP RST) without answering.
    Reset,
    /// Close the connection without answering.
    Close,
    /// Never answer (the client's timeout decides).
    Hang,
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
            latency: Duration::ZERO,
        }
    }

    /// A plain-text response.
    pub fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into().into_bytes(),
            delay: Duration::ZERO,
            latency: Duration::ZERO,
        }
    }

    /// An empty response with this status.
    pub fn status(status: u16) -> Reply {
        Reply::Respond {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
            latency: Duration::ZERO,
        }
    }

    /// Adds a header (responses only).
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Reply {
        if let Reply::Respond { headers, .. } = &mut self {
            headers.push((name.to_ascii_lowercase(), value.into()));
        }
        self
    }

    /// Delays the answer on tokio's clock (responses only): instant under a paused clock in
    /// tests, but rounded up to tokio's millisecond timer ticks.
    pub fn delay(mut self, wait: Duration) -> Reply {
        if let Reply::Respond { delay, .. } = &mut self {
            *delay = wait;
        }
        self
    }

    /// Delays the answer by wall-clock time, precise to the operating system's sleep (responses
    /// only): for benchmarks that need a server whose latency is what it says. Each waiting
    /// answer holds a thread of tokio's blocking pool.
    pub fn latency(mut self, wait: Duration) -> Reply {
        if let Reply::Respond { latency, .. } = &mut self {
            *latency = wait;
        }
        self
    }
}

type Handler = dyn Fn(&RecordedRequest) -> Reply + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    requests: Mutex<Vec<RecordedRequest>>,
    hits: AtomicUsize,
    record: bool,
}

/// A loopback server; see the [module documentation](crate::testing).
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl fmt::Debug for MockServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("hits", &self.hits())
            .finish()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockServer {
    /// Starts a server that records requests and answers with `handler`.
    pub async fn start(
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<MockServer> {
        Self::start_with(handler, true).await
    }

    /// Starts a server that only counts requests (for benchmarks: recording costs memory).
    pub async fn start_unrecorded(
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> std::io::Result<MockServer> {
        Self::start_with(handler, false).await
    }

    async fn start_with(
        handler: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
        record: bool,
    ) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            requests: Mutex::new(Vec::new()),
            hits: AtomicUsize::new(0),
            record,
        });
        let task = tokio::spawn(accept(listener, Arc::clone(&shared)));
        Ok(MockServer { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far (empty for an unrecorded server).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many requests arrived.
    pub fn hits(&self) -> usize {
        self.shared.hits.load(Ordering::SeqCst)
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve(stream, Arc::clone(&shared)));
    }
}

/// Serves one connection, request after request (keep-alive), until the client closes it.
async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buffer = Vec::with_capacity(4096);
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer).await else {
            return;
        };
        shared.hits.fetch_add(1, Ordering::SeqCst);
        let reply = (shared.handler)(&request);
        let close = request
            .header("connection")
            .is_some_and(|value| value.eq_ignore_ascii_case("close"));
        if shared.record {
            shared
                .requests
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(request);
        }
        match reply {
            Reply::Respond {
                status,
                headers,
                body,
                delay,
                latency,
            } => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if !latency.is_zero() {
                    let _ = tokio::task::spawn_blocking(move || std::thread::sleep(latency)).await;
                }
                let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
                for (name, value) in &headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
                let mut bytes = head.into_bytes();
                bytes.extend_from_slice(&body);
                if stream.write_all(&bytes).await.is_err() || close {
                    return;
                }
            }
            Reply::Reset => {
                let _ = stream.set_zero_linger();
                return;
            }
            Reply::Close => return,
            Reply::Hang => {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Reads one request; `None` when the connection closed or sent something unreadable.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<RecordedRequest> {
    let head_end = loop {
        if let Some(end) = find(buffer, b"\r\n\r\n") {
            break end;
        }
        if buffer.len() > MAX_HEAD || !fill(stream, buffer).await {
            return None;
        }
    };
    let head = std::str::from_utf8(&buffer[..head_end]).ok()?.to_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        if !fill(stream, buffer).await {
            return None;
        }
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(RecordedRequest {
        method,
        target,
        headers,
        body,
    })
}

async fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 8192];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(read) => {
            buffer.extend_from_slice(&chunk[..read]);
            true
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

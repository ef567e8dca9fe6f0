//! The HTTP [`Transport`] on reqwest (rustls, pooled keep-alive connections).

use std::error::Error as _;
use std::time::{Duration, Instant};

use wayline_core::{HttpRequest, HttpResponse, Transport, TransportError, TransportErrorKind};

/// Sends requests with a shared reqwest client: connections are pooled per host, TLS is rustls
/// with the webpki roots, and every request has a connect timeout and its own overall timeout.
///
/// Redirects (301, 302, 303, 307, 308; at most ten) are followed here, not by reqwest, so that
/// what leaves with them is decided here: a redirect to another origin (scheme, host or port)
/// drops every header marked sensitive — credentials of any auth type and the tool config's
/// headers — and `Authorization`, `Cookie` and `Proxy-Authorization` whatever their marking;
/// no `Referer` is ever added; and the URLs followed are returned in
/// [`HttpResponse::redirects`] for the run record.
///
/// ```
/// use std::time::Duration;
/// use wayline_executor::ReqwestTransport;
///
/// let transport = ReqwestTransport::builder()
///     .connect_timeout(Duration::from_secs(5))
///     .max_response_bytes(8 << 20)
///     .build()
///     .unwrap();
/// # let _ = transport;
/// ```
#[derive(Debug, Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
    max_response_bytes: usize,
    follow_redirects: bool,
}

/// Settings of a [`ReqwestTransport`].
#[derive(Clone)]
pub struct ReqwestTransportBuilder {
    connect_timeout: Duration,
    pool_idle_timeout: Duration,
    max_idle_per_host: Option<usize>,
    user_agent: String,
    max_response_bytes: usize,
    roots: Vec<Vec<u8>>,
    accept_invalid_certs: bool,
    identity: Option<Vec<u8>>,
    proxy: Option<String>,
    follow_redirects: bool,
}

impl std::fmt::Debug for ReqwestTransportBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqwestTransportBuilder")
            .field("connect_timeout", &self.connect_timeout)
            .field("user_agent", &self.user_agent)
            .field("roots", &self.roots.len())
            .field("accept_invalid_certs", &self.accept_invalid_certs)
            // A client key is a secret.
            .field("identity", &self.identity.as_ref().map(|_| "<redacted>"))
            .field("proxy", &self.proxy.as_deref().map(mask_userinfo))
            .finish_non_exhaustive()
    }
}

/// `url` with its user and password (a proxy's credentials) masked.
fn mask_userinfo(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("***");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

impl Default for ReqwestTransportBuilder {
    fn default() -> Self {
        ReqwestTransportBuilder {
            connect_timeout: Duration::from_secs(10),
            pool_idle_timeout: Duration::from_secs(90),
            max_idle_per_host: None,
            user_agent: concat!("wayline/", env!("CARGO_PKG_VERSION")).to_owned(),
            max_response_bytes: 32 << 20,
            roots: Vec::new(),
            accept_invalid_certs: false,
            identity: None,
            proxy: None,
            follow_redirects: true,
        }
    }
}

impl ReqwestTransportBuilder {
    /// Whether redirects are followed (default yes, up to 10, credentials dropped on the way
    /// to another origin). Without, a redirect is the answer, `Location` and all: what an
    /// Arazzo step's criteria (`$statusCode == 302`) and outputs (`$response.header.Location`)
    /// read.
    pub fn follow_redirects(mut self, follow: bool) -> Self {
        self.follow_redirects = follow;
        self
    }

    /// Time allowed to open a connection (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long an idle pooled connection is kept (default 90 s).
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// Idle connections kept per host (default: no limit; idle ones close after the pool idle
    /// timeout). A limit below `max_parallel` makes every wave of parallel steps reconnect.
    pub fn max_idle_per_host(mut self, count: usize) -> Self {
        self.max_idle_per_host = Some(count);
        self
    }

    /// The `User-Agent` sent with every request (default `wayline/<version>`; many APIs, GitHub's
    /// among them, refuse requests without one).
    pub fn user_agent(mut self, user_agent: impl Into<String>) -> Self {
        self.user_agent = user_agent.into();
        self
    }

    /// Largest response body accepted (default 32 MiB); a larger one is an error.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Trusts the certificate authorities in `pem` (one or more PEM certificates) besides the
    /// webpki roots: a private CA, a test server's own.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.roots.push(pem.into());
        self
    }

    /// Accepts any server certificate, expired, self-signed or for another host. **Anyone on
    /// the network path can then read and change every call**: for a test server only.
    pub fn danger_accept_invalid_certs(mut self, accept: bool) -> Self {
        self.accept_invalid_certs = accept;
        self
    }

    /// Presents a client certificate: `pem` holds the certificate (and its chain) and its
    /// private key (PKCS#8, PKCS#1 or SEC1).
    pub fn client_identity_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.identity = Some(pem.into());
        self
    }

    /// Sends every request through this proxy (`http://user:pass@host:port`). Without one, the
    /// usual environment variables are honoured: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
    /// `NO_PROXY` (any case).
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// Builds the transport; fails when a certificate, key or proxy given cannot be used, or
    /// the TLS backend cannot start.
    pub fn build(self) -> Result<ReqwestTransport, TransportError> {
        let invalid = |what: &str, error: &reqwest::Error| {
            TransportError::new(
                TransportErrorKind::Other,
                format!("{what}: {}", describe(error)),
            )
        };
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .connect_timeout(self.connect_timeout)
            .pool_idle_timeout(self.pool_idle_timeout)
            .user_agent(self.user_agent)
            .danger_accept_invalid_certs(self.accept_invalid_certs);
        if let Some(count) = self.max_idle_per_host {
            builder = builder.pool_max_idle_per_host(count);
        }
        for pem in &self.roots {
            let certificates = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|error| invalid("the CA certificates are not PEM certificates", &error))?;
            if certificates.is_empty() {
                return Err(TransportError::new(
                    TransportErrorKind::Other,
                    "the CA certificates file holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                ));
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some(pem) = &self.identity {
            let identity = reqwest::Identity::from_pem(pem).map_err(|error| {
                invalid(
                    "the client certificate and key are not a PEM certificate with its private key",
                    &error,
                )
            })?;
            builder = builder.identity(identity);
        }
        if let Some(url) = &self.proxy {
            let proxy = reqwest::Proxy::all(url.as_str())
                .map_err(|error| invalid(&format!("proxy {}", mask_userinfo(url)), &error))?;
            builder = builder.proxy(proxy);
        }
        let client = builder
            .build()
            .map_err(|error| TransportError::new(TransportErrorKind::Other, describe(&error)))?;
        Ok(ReqwestTransport {
            client,
            max_response_bytes: self.max_response_bytes,
            follow_redirects: self.follow_redirects,
        })
    }
}

impl ReqwestTransport {
    /// A transport with the default settings.
    pub fn new() -> Result<Self, TransportError> {
        Self::builder().build()
    }

    /// Settings to adjust before building.
    pub fn builder() -> ReqwestTransportBuilder {
        ReqwestTransportBuilder::default()
    }

    /// A transport over a client the host built (its TLS, proxies, DNS, pool). The client
    /// **must not follow redirects** (`redirect(reqwest::redirect::Policy::none())`): this
    /// transport follows them itself, dropping credentials on the way to another origin, and a
    /// client that follows them would carry credentials there unchecked. Responses are held to
    /// the default 32 MiB.
    pub fn with_client(client: reqwest::Client) -> Self {
        ReqwestTransport {
            client,
            max_response_bytes: ReqwestTransportBuilder::default().max_response_bytes,
            follow_redirects: true,
        }
    }
}

/// Redirects followed for one request before it fails.
const MAX_REDIRECTS: usize = 10;

/// Headers never sent to another origin, whatever their marking.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

#[async_trait::async_trait]
impl Transport for ReqwestTransport {
    async fn send(&self, mut request: HttpRequest) -> Result<HttpResponse, TransportError> {
        // One deadline for the whole chain of redirects, not one per hop.
        let deadline = request.timeout.map(|timeout| Instant::now() + timeout);
        let mut redirects = Vec::new();
        loop {
            if let Some(deadline) = deadline {
                request.timeout = Some(deadline.saturating_duration_since(Instant::now()));
            }
            let mut reply = self.send_once(&request).await?;
            if !self.follow_redirects {
                return Ok(reply);
            }
            let Some(next) = redirect_target(&request, &reply)? else {
                reply.redirects = redirects;
                return Ok(reply);
            };
            if redirects.len() == MAX_REDIRECTS {
                return Err(TransportError::new(
                    TransportErrorKind::Other,
                    format!("more than {MAX_REDIRECTS} redirects (the last to {next})"),
                ));
            }
            follow(&mut request, reply.status, &next);
            redirects.push(next.to_string());
        }
    }
}

impl ReqwestTransport {
    /// Sends `request` once, without following a redirect.
    async fn send_once(&self, request: &HttpRequest) -> Result<HttpResponse, TransportError> {
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|_| {
            TransportError::new(
                TransportErrorKind::InvalidRequest,
                format!("`{}` is not an HTTP method", request.method),
            )
        })?;
        let mut builder = self.client.request(method, &request.url);
        for header in &request.headers {
            builder = builder.header(&header.name, &header.value);
        }
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        if let Some(timeout) = request.timeout {
            builder = builder.timeout(timeout);
        }
        let mut response = builder.send().await.map_err(|error| convert(&error))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|error| convert(&error))? {
            if body.len() + chunk.len() > self.max_response_bytes {
                return Err(TransportError::new(
                    TransportErrorKind::Other,
                    format!(
                        "the response body is larger than the {} bytes allowed",
                        self.max_response_bytes
                    ),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let mut reply = HttpResponse::new(status, body);
        reply.headers = headers;
        Ok(reply)
    }
}

/// Where `reply` redirects `request` to, if it is a redirect with a `Location`.
fn redirect_target(
    request: &HttpRequest,
    reply: &HttpResponse,
) -> Result<Option<url::Url>, TransportError> {
    if !matches!(reply.status, 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = reply.header("location") else {
        return Ok(None);
    };
    let invalid = |why: String| TransportError::new(TransportErrorKind::Other, why);
    let base = url::Url::parse(&request.url)
        .map_err(|error| invalid(format!("`{}` is not a URL: {error}", request.url)))?;
    let next = base
        .join(location)
        .map_err(|error| invalid(format!("redirect to `{location}`: {error}")))?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "redirect to `{next}`: only http and https are followed"
        )));
    }
    Ok(Some(next))
}

/// `request` made into the request for the redirect `status` to `next`: a 303 (and a 301 or
/// 302 after a POST) becomes a GET without a body, as browsers and HTTP clients do; another
/// origin gets no credentials.
fn follow(request: &mut HttpRequest, status: u16, next: &url::Url) {
    let to_get = status == 303 && request.method != "HEAD"
        || matches!(status, 301 | 302) && request.method == "POST";
    if to_get {
        request.method = "GET".to_owned();
        request.body = None;
        request.headers.retain(|header| {
            !header.name.eq_ignore_ascii_case("content-type")
                && !header.name.eq_ignore_ascii_case("content-length")
        });
    }
    let same_origin =
        url::Url::parse(&request.url).is_ok_and(|from| from.origin() == next.origin());
    if !same_origin {
        request.headers.retain(|header| {
            !header.sensitive
                && !CREDENTIAL_HEADERS
                    .iter()
                    .any(|name| header.name.eq_ignore_ascii_case(name))
        });
    }
    request.url = next.to_string();
}

fn convert(error: &reqwest::Error) -> TransportError {
    let kind = if error.is_timeout() {
        TransportErrorKind::Timeout
    } else if error.is_connect() {
        TransportErrorKind::Connect
    } else if error.is_builder() {
        TransportErrorKind::InvalidRequest
    } else if error.is_request() || error.is_body() || error.is_decode() {
        TransportErrorKind::Interrupted
    } else {
        TransportErrorKind::Other
    };
    TransportError::new(kind, describe(error))
}

/// The error with its causes ("error sending request: connection reset by peer").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

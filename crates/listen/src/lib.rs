//! What every HTTP listener of wayline's checks before a request reaches a handler — and so
//! before its body is read:
//!
//! - the `Host` it was sent to is one the listener answers to: `localhost`, an IP address, or a
//!   name the host allowed. A page that rebinds its own DNS name to 127.0.0.1 reaches a
//!   loopback listener, but its requests name the page's host, never one of these;
//! - no web page sent it: a request carrying `Origin` is refused unless that origin is allowed
//!   (browsers send it on every request a page's script makes across origins, and on every
//!   POST), so a page a user happens to visit cannot drive a local server;
//! - it carries the bearer token, compared in constant time, unless the listener was opened to
//!   anyone on purpose ([`Gate::anonymous`], which a server should allow only on loopback).
//!
//! ```
//! use axum::http::{HeaderMap, HeaderValue, header};
//! use wayline_listen::{Gate, Refusal};
//!
//! let gate = Gate::bearer("s3cret-token");
//! let mut headers = HeaderMap::new();
//! headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8114"));
//! assert_eq!(gate.check("/v1/sandboxes", &headers), Err(Refusal::Unauthenticated));
//! headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer s3cret-token"));
//! assert_eq!(gate.check("/v1/sandboxes", &headers), Ok(()));
//! headers.insert(header::HOST, HeaderValue::from_static("attacker.example"));
//! assert!(matches!(gate.check("/v1/sandboxes", &headers), Err(Refusal::Host(_))));
//! ```

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

/// Who may talk to a listener: the token it requires (or nobody's, on purpose), and the hosts
/// and origins it answers besides its own.
#[derive(Clone)]
pub struct Gate {
    token: Option<Arc<[u8]>>,
    open_paths: Vec<String>,
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("open_paths", &self.open_paths)
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .finish()
    }
}

/// Why a request was refused, before anything else was done with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// It was sent to a host the listener does not answer to (DNS rebinding): the `Host` given.
    Host(String),
    /// A web page sent it: its `Origin`.
    Origin(String),
    /// It carries no token.
    Unauthenticated,
    /// It carries a token that is not the one.
    WrongToken,
}

impl Refusal {
    /// The HTTP status it is answered with: 401 without the right token, 403 otherwise.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Host(_) | Refusal::Origin(_) => StatusCode::FORBIDDEN,
            Refusal::Unauthenticated | Refusal::WrongToken => StatusCode::UNAUTHORIZED,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Host(host) => write!(
                f,
                "this server does not answer to the host `{}`; it answers to localhost, its IP addresses and the hosts it was told to allow",
                shown(host)
            ),
            Refusal::Origin(origin) => write!(
                f,
                "requests from web pages (origin `{}`) are refused unless the origin is allowed",
                shown(origin)
            ),
            Refusal::Unauthenticated => {
                f.write_str("authentication required: send `Authorization: Bearer TOKEN`")
            }
            Refusal::WrongToken => f.write_str("the bearer token is not valid"),
        }
    }
}

impl std::error::Error for Refusal {}

/// A header value from the request, cut for a message.
fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

impl Gate {
    /// A gate that requires `Authorization: Bearer TOKEN`.
    pub fn bearer(token: impl AsRef<str>) -> Gate {
        Gate {
            token: Some(Arc::from(token.as_ref().as_bytes())),
            open_paths: Vec::new(),
            hosts: Vec::new(),
            origins: Vec::new(),
        }
    }

    /// A gate that lets anyone who can connect in (the `Host` and `Origin` are still checked).
    /// Meant for a listener on loopback, where that is everyone on the machine.
    pub fn anonymous() -> Gate {
        Gate {
            token: None,
            open_paths: Vec::new(),
            hosts: Vec::new(),
            origins: Vec::new(),
        }
    }

    /// Lets requests to `path` in without a token (a health check).
    #[must_use]
    pub fn open_path(mut self, path: impl Into<String>) -> Gate {
        self.open_paths.push(path.into());
        self
    }

    /// Answers requests sent to these hosts too (each a name, or `name:port`), as a
    /// deployment behind a real name needs.
    #[must_use]
    pub fn allow_hosts(mut self, hosts: impl IntoIterator<Item = impl AsRef<str>>) -> Gate {
        self.hosts.extend(
            hosts
                .into_iter()
                .map(|host| host.as_ref().to_ascii_lowercase()),
        );
        self
    }

    /// Lets requests web pages at these origins send in (`https://console.example.com`).
    #[must_use]
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = impl AsRef<str>>) -> Gate {
        self.origins.extend(
            origins
                .into_iter()
                .map(|origin| origin.as_ref().trim_end_matches('/').to_ascii_lowercase()),
        );
        self
    }

    /// Whether a request to `path` with `headers` may go on.
    pub fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(host) = headers.get(header::HOST) {
            let host = String::from_utf8_lossy(host.as_bytes());
            if !self.answers_to(&host) {
                return Err(Refusal::Host(host.into_owned()));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            let given = origin.trim_end_matches('/').to_ascii_lowercase();
            if !self.origins.contains(&given) {
                return Err(Refusal::Origin(origin.into_owned()));
            }
        }
        let Some(token) = &self.token else {
            return Ok(());
        };
        if self.open_paths.iter().any(|open| open == path) {
            return Ok(());
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .ok_or(Refusal::Unauthenticated)?
            .as_bytes();
        match bearer_credentials(given) {
            Some(given) if same_secret(given, token) => Ok(()),
            _ => Err(Refusal::WrongToken),
        }
    }

    /// Whether `authority` (a `Host` header: `name`, `name:port`, `[v6]:port`) is one this
    /// listener answers to.
    fn answers_to(&self, authority: &str) -> bool {
        let authority = authority.trim().to_ascii_lowercase();
        if self.hosts.contains(&authority) {
            return true;
        }
        let name = match authority.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or_default(),
            None => authority
                .rsplit_once(':')
                .map_or(authority.as_str(), |(name, port)| {
                    if port.chars().all(|c| c.is_ascii_digit()) {
                        name
                    } else {
                        authority.as_str()
                    }
                }),
        };
        name == "localhost"
            || name.ends_with(".localhost")
            || name.parse::<IpAddr>().is_ok()
            || self.hosts.iter().any(|host| host == name)
    }

    /// `router` with this gate in front of every route: a refused request is answered by
    /// `refuse` (with the request's headers, for a request id or an error envelope), and its
    /// body is never read.
    pub fn layer<S>(
        self,
        router: axum::Router<S>,
        refuse: fn(&Refusal, &HeaderMap) -> Response,
    ) -> axum::Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router.layer(middleware::from_fn_with_state(
            (Arc::new(self), refuse),
            guard,
        ))
    }
}

/// The answer a listener without an envelope of its own gives: the status, and the refusal as
/// text (with `WWW-Authenticate: Bearer` on a 401).
pub fn plain_refusal(refusal: &Refusal, _headers: &HeaderMap) -> Response {
    let mut response = (refusal.status(), refusal.to_string()).into_response();
    if refusal.status() == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

type Guarded = (Arc<Gate>, fn(&Refusal, &HeaderMap) -> Response);

async fn guard(State((gate, refuse)): State<Guarded>, request: Request, next: Next) -> Response {
    match gate.check(request.uri().path(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refuse(&refusal, request.headers()),
    }
}

/// The credentials of an `Authorization: Bearer …` header's value: the scheme's name is
/// case-insensitive and spaces may follow it (RFC 9110 §11.1, §11.4).
fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(b"bearer".len())?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    Some(rest.trim_ascii_start())
}

/// `given == expected`, taking the same time wherever they differ (the length aside), so the
/// answer's timing does not reveal how much of a guessed token was right.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn hosts_are_loopback_names_addresses_or_allowed() {
        let gate = Gate::anonymous().allow_hosts(["sandbox.internal"]);
        for host in [
            "localhost",
            "LOCALHOST:8114",
            "127.0.0.1",
            "127.0.0.1:8114",
            "[::1]:8114",
            "10.1.2.3:80",
            "api.localhost",
            "sandbox.internal",
            "sandbox.internal:9000",
        ] {
            assert_eq!(
                gate.check("/", &headers(&[(header::HOST, host)])),
                Ok(()),
                "{host}"
            );
        }
        for host in [
            "attacker.example",
            "attacker.example:8114",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
        ] {
            assert!(
                matches!(
                    gate.check("/", &headers(&[(header::HOST, host)])),
                    Err(Refusal::Host(_))
                ),
                "{host}"
            );
        }
        // No `Host` (HTTP/1.0): no browser sends that.
        assert_eq!(gate.check("/", &HeaderMap::new()), Ok(()));
    }

    #[test]
    fn origins_are_refused_unless_allowed() {
        let gate = Gate::anonymous().allow_origins(["https://console.example.com/"]);
        let from = |origin: &str| gate.check("/", &headers(&[(header::ORIGIN, origin)]));
        assert!(matches!(
            from("https://evil.example"),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(from("null"), Err(Refusal::Origin(_))));
        assert_eq!(from("https://console.example.com"), Ok(()));
    }

    #[test]
    fn tokens_are_required_except_on_open_paths() {
        let gate = Gate::bearer("tok-123456").open_path("/health");
        let with = |value: &str| gate.check("/v1/x", &headers(&[(header::AUTHORIZATION, value)]));
        assert_eq!(
            gate.check("/v1/x", &HeaderMap::new()),
            Err(Refusal::Unauthenticated)
        );
        assert_eq!(with("Bearer tok-123457"), Err(Refusal::WrongToken));
        assert_eq!(with("Basic tok-123456"), Err(Refusal::WrongToken));
        assert_eq!(with("Bearer tok-123456"), Ok(()));
        assert_eq!(with("bearer tok-123456"), Ok(()));
        assert_eq!(with("BEARER   tok-123456"), Ok(()));
        assert_eq!(with("Bearertok-123456"), Err(Refusal::WrongToken));
        assert_eq!(with("Bearer"), Err(Refusal::WrongToken));
        assert_eq!(gate.check("/health", &HeaderMap::new()), Ok(()));
        assert!(!format!("{gate:?}").contains("tok-123456"));
    }
}

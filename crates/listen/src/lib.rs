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
//!   anyone on purpose ([`Gate::anonymous`], which a server should allow only on loopback) —
//!   or a token a [`TokenVerifier`] accepts ([`Gate::verified`]: an OAuth authorization
//!   server's, say), whose [`Principal`] the handlers then find in the request's extensions.
//!
//! A refused request is answered with the `WWW-Authenticate` challenge RFC 6750 asks for,
//! naming the resource's metadata when the gate was told where it is
//! ([`Gate::resource_metadata`], RFC 9728), so an OAuth client can find where to get a token.
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

// On docs.rs, items behind a feature say which one.
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};

/// Who may talk to a listener: the token it requires (or nobody's, on purpose), and the hosts
/// and origins it answers besides its own.
#[derive(Clone)]
pub struct Gate {
    credential: Credential,
    open_paths: Vec<String>,
    hosts: Vec<String>,
    origins: Vec<String>,
    resource_metadata: Option<String>,
}

/// What a request must carry to get in.
#[derive(Clone)]
enum Credential {
    /// Nothing: anyone who can connect.
    Anyone,
    /// This one token.
    Token(Arc<[u8]>),
    /// A bearer token the verifier accepts.
    Verified(Arc<dyn TokenVerifier>),
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let credential = match &self.credential {
            Credential::Anyone => "anyone",
            Credential::Token(_) => "token <redacted>",
            Credential::Verified(_) => "verified bearer tokens",
        };
        f.debug_struct("Gate")
            .field("credential", &credential)
            .field("open_paths", &self.open_paths)
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("resource_metadata", &self.resource_metadata)
            .finish()
    }
}

/// Whom a verified token was issued to, as its verifier says: put in the extensions of the
/// request it came with, for the handlers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The resource owner (`sub`), when the verifier knows it.
    pub subject: Option<String>,
    /// The client the token was issued to (`client_id`).
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

impl Principal {
    /// Whom a token was issued to: `subject`, through `client_id`, with `scopes`.
    pub fn new(subject: Option<String>, client_id: Option<String>, scopes: Vec<String>) -> Self {
        Principal {
            subject,
            client_id,
            scopes,
        }
    }
}

/// Decides whether a bearer token lets its request in (an OAuth resource server asks its
/// authorization server). Never logs or echoes the token.
#[async_trait::async_trait]
pub trait TokenVerifier: Send + Sync + 'static {
    /// Whom `token` was issued to, or why it does not let a request in:
    /// [`Refusal::WrongToken`] for a token that is not (or no longer) valid here,
    /// [`Refusal::InsufficientScope`] for one that lacks a scope, [`Refusal::Unverifiable`]
    /// when the verifier could not decide.
    async fn verify(&self, token: &str) -> Result<Principal, Refusal>;

    /// The scopes a request needs (named in the challenge of a 401).
    fn required_scopes(&self) -> &[String] {
        &[]
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
    /// It carries a token that is not the one (or one its verifier does not accept).
    WrongToken,
    /// Its token is valid but lacks these scopes.
    InsufficientScope(Vec<String>),
    /// Its token could not be checked (the authorization server did not answer): why, in
    /// words that hold no token.
    Unverifiable(String),
}

impl Refusal {
    /// The HTTP status it is answered with: 401 without a valid token, 503 when it could not be
    /// checked, 403 otherwise.
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Host(_) | Refusal::Origin(_) | Refusal::InsufficientScope(_) => {
                StatusCode::FORBIDDEN
            }
            Refusal::Unauthenticated | Refusal::WrongToken => StatusCode::UNAUTHORIZED,
            Refusal::Unverifiable(_) => StatusCode::SERVICE_UNAVAILABLE,
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
            Refusal::InsufficientScope(scopes) => write!(
                f,
                "the bearer token lacks the scope this server requires: {}",
                scopes.join(" ")
            ),
            Refusal::Unverifiable(why) => write!(f, "the bearer token could not be checked: {why}"),
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
        Gate::with(Credential::Token(Arc::from(token.as_ref().as_bytes())))
    }

    /// A gate that lets anyone who can connect in (the `Host` and `Origin` are still checked).
    /// Meant for a listener on loopback, where that is everyone on the machine.
    pub fn anonymous() -> Gate {
        Gate::with(Credential::Anyone)
    }

    /// A gate that lets in requests whose bearer token `verifier` accepts; [`Gate::layer`]
    /// puts the token's [`Principal`] in the request's extensions.
    pub fn verified(verifier: Arc<dyn TokenVerifier>) -> Gate {
        Gate::with(Credential::Verified(verifier))
    }

    fn with(credential: Credential) -> Gate {
        Gate {
            credential,
            open_paths: Vec::new(),
            hosts: Vec::new(),
            origins: Vec::new(),
            resource_metadata: None,
        }
    }

    /// Names where the resource's metadata is (RFC 9728) in every challenge, so OAuth clients
    /// find the authorization server to get a token from.
    #[must_use]
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Gate {
        self.resource_metadata = Some(url.into());
        self
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

    /// Whether a request to `path` with `headers` may go on, and whom its token was issued to
    /// when a verifier said so ([`Gate::verified`]; else `None`).
    pub async fn admit(
        &self,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Option<Principal>, Refusal> {
        self.check(path, headers)?;
        let Credential::Verified(verifier) = &self.credential else {
            return Ok(None);
        };
        if self.open_paths.iter().any(|open| open == path) {
            return Ok(None);
        }
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| bearer_credentials(value.as_bytes()))
            .and_then(|token| std::str::from_utf8(token).ok())
            .filter(|token| !token.is_empty() && token.len() <= MAX_TOKEN_BYTES)
            .ok_or(Refusal::WrongToken)?;
        verifier.verify(token).await.map(Some)
    }

    /// What [`Gate::admit`] checks without asking anyone: the host, the origin, and the token
    /// when it is the gate's own. For a gate with a verifier, only that a token is there: ask
    /// `admit` to have it verified.
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
        if matches!(self.credential, Credential::Anyone)
            || self.open_paths.iter().any(|open| open == path)
        {
            return Ok(());
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .ok_or(Refusal::Unauthenticated)?
            .as_bytes();
        match (&self.credential, bearer_credentials(given)) {
            (Credential::Token(token), Some(given)) if same_secret(given, token) => Ok(()),
            (Credential::Verified(_), Some(_)) => Ok(()),
            _ => Err(Refusal::WrongToken),
        }
    }

    /// The `WWW-Authenticate` challenge a refusal is answered with (RFC 6750 §3), if any.
    fn challenge(&self, refusal: &Refusal) -> Option<String> {
        let mut params = Vec::new();
        match refusal {
            Refusal::Unauthenticated => {}
            Refusal::WrongToken => params.push(r#"error="invalid_token""#.to_owned()),
            Refusal::InsufficientScope(scopes) => {
                params.push(r#"error="insufficient_scope""#.to_owned());
                params.push(format!(r#"scope="{}""#, quoted(&scopes.join(" "))));
            }
            Refusal::Host(_) | Refusal::Origin(_) | Refusal::Unverifiable(_) => return None,
        }
        if let (Credential::Verified(verifier), Refusal::Unauthenticated) =
            (&self.credential, refusal)
        {
            let scopes = verifier.required_scopes();
            if !scopes.is_empty() {
                params.push(format!(r#"scope="{}""#, quoted(&scopes.join(" "))));
            }
        }
        if let Some(url) = &self.resource_metadata {
            params.push(format!(r#"resource_metadata="{}""#, quoted(url)));
        }
        Some(if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        })
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
/// text (the gate adds the `WWW-Authenticate` challenge).
pub fn plain_refusal(refusal: &Refusal, _headers: &HeaderMap) -> Response {
    (refusal.status(), refusal.to_string()).into_response()
}

/// The longest bearer token a verifier is asked about (longer ones are refused unasked).
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// `text` fit for a quoted-string: no quote or backslash to end it early.
fn quoted(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '"' | '\\')).collect()
}

type Guarded = (Arc<Gate>, fn(&Refusal, &HeaderMap) -> Response);

async fn guard(
    State((gate, refuse)): State<Guarded>,
    mut request: Request,
    next: Next,
) -> Response {
    match gate.admit(request.uri().path(), request.headers()).await {
        Ok(principal) => {
            if let Some(principal) = principal {
                request.extensions_mut().insert(principal);
            }
            next.run(request).await
        }
        Err(refusal) => {
            let mut response = refuse(&refusal, request.headers());
            let challenge = gate
                .challenge(&refusal)
                .and_then(|challenge| HeaderValue::from_str(&challenge).ok());
            if let Some(challenge) = challenge {
                response
                    .headers_mut()
                    .entry(header::WWW_AUTHENTICATE)
                    .or_insert(challenge);
            }
            response
        }
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

    /// Accepts `good` (with a scope) and `narrow` (without), cannot reach its server for
    /// `later`, and counts what it was asked.
    struct Verifier(std::sync::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl TokenVerifier for Verifier {
        async fn verify(&self, token: &str) -> Result<Principal, Refusal> {
            self.0.lock().unwrap().push(token.to_owned());
            match token {
                "good" => Ok(Principal::new(
                    Some("ana".into()),
                    Some("agent".into()),
                    vec!["mcp".into()],
                )),
                "narrow" => Err(Refusal::InsufficientScope(vec!["mcp".into()])),
                "later" => Err(Refusal::Unverifiable("no answer".into())),
                _ => Err(Refusal::WrongToken),
            }
        }

        fn required_scopes(&self) -> &[String] {
            static SCOPES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
            SCOPES.get_or_init(|| vec!["mcp".into()])
        }
    }

    #[tokio::test]
    async fn a_verifier_decides_and_refusals_carry_their_challenge() {
        let verifier = Arc::new(Verifier(Default::default()));
        let gate = Gate::verified(verifier.clone())
            .open_path("/.well-known/oauth-protected-resource")
            .resource_metadata("https://mcp.example/.well-known/oauth-protected-resource");
        let admit = |value: Option<&str>, path: &'static str| {
            let headers = match value {
                Some(value) => headers(&[(header::AUTHORIZATION, value)]),
                None => HeaderMap::new(),
            };
            let gate = gate.clone();
            async move { gate.admit(path, &headers).await }
        };
        let principal = admit(Some("Bearer good"), "/mcp").await.unwrap().unwrap();
        assert_eq!(principal.subject.as_deref(), Some("ana"));
        assert_eq!(principal.scopes, ["mcp"]);
        let refused = [
            (None, Refusal::Unauthenticated),
            (Some("Bearer bad"), Refusal::WrongToken),
            (Some("Basic good"), Refusal::WrongToken),
            (
                Some("Bearer narrow"),
                Refusal::InsufficientScope(vec!["mcp".into()]),
            ),
            (
                Some("Bearer later"),
                Refusal::Unverifiable("no answer".into()),
            ),
        ];
        for (value, expected) in refused {
            assert_eq!(admit(value, "/mcp").await, Err(expected), "{value:?}");
        }
        let long = format!("Bearer {}", "x".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(admit(Some(&long), "/mcp").await, Err(Refusal::WrongToken));
        // The open path is answered without a token, and the verifier is not asked.
        let asked = verifier.0.lock().unwrap().len();
        assert_eq!(
            admit(None, "/.well-known/oauth-protected-resource").await,
            Ok(None)
        );
        assert_eq!(verifier.0.lock().unwrap().len(), asked);
        assert_eq!(asked, 4, "a malformed or oversized token is not sent on");

        let metadata =
            r#"resource_metadata="https://mcp.example/.well-known/oauth-protected-resource""#;
        assert_eq!(
            gate.challenge(&Refusal::Unauthenticated).unwrap(),
            format!(r#"Bearer scope="mcp", {metadata}"#)
        );
        assert_eq!(
            gate.challenge(&Refusal::WrongToken).unwrap(),
            format!(r#"Bearer error="invalid_token", {metadata}"#)
        );
        assert_eq!(
            gate.challenge(&Refusal::InsufficientScope(vec!["a".into(), "b\"".into()]))
                .unwrap(),
            format!(r#"Bearer error="insufficient_scope", scope="a b", {metadata}"#)
        );
        assert_eq!(gate.challenge(&Refusal::Unverifiable("x".into())), None);
        assert_eq!(
            Refusal::InsufficientScope(vec![]).status(),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            Refusal::Unverifiable(String::new()).status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            Gate::bearer("t")
                .challenge(&Refusal::Unauthenticated)
                .unwrap(),
            "Bearer"
        );
    }
}

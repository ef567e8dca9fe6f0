//! OAuth 2.1 for wayline's MCP servers over HTTP, as the MCP authorization specification
//! describes for a protected server: the server is a resource server. It publishes its
//! metadata (RFC 9728) at `/.well-known/oauth-protected-resource`, naming the authorization
//! server that issues its tokens; its 401s point there (`WWW-Authenticate: Bearer
//! resource_metadata="…"`, by `wayline-listen`'s gate); and it asks the authorization server
//! about every bearer token it has not seen lately (token introspection, RFC 7662), letting a
//! request in only when the token is active, was issued for this resource (its audience,
//! RFC 8707) and carries the scopes the server requires.
//!
//! Introspection rather than reading tokens as JWTs: it works with opaque tokens and with
//! every authorization server that implements the RFC, and a revoked token stops working
//! within the cache's minute.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::time::Instant;
use url::Url;
use wayline_listen::{Principal, Refusal, TokenVerifier};

use crate::Error;

/// The resource server an MCP server over HTTP is, when its tokens come from an OAuth
/// authorization server instead of being one static token.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// The URL clients reach the server at (`https://mcp.example.com/mcp`, a proxy's): tokens
    /// must be issued for it, and its metadata names it.
    pub resource: String,
    /// The authorization server's issuer identifier (`https://auth.example.com/realms/ops`).
    pub issuer: String,
    /// Its token introspection endpoint; when `None`, read from its metadata (RFC 8414, or
    /// OpenID Connect discovery).
    pub introspection_endpoint: Option<String>,
    /// The client id the server introspects with.
    pub client_id: String,
    /// That client's secret.
    client_secret: String,
    /// Scopes every request's token must carry (and the metadata advertises).
    pub scopes: Vec<String>,
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("introspection_endpoint", &self.introspection_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl OAuthOptions {
    /// Tokens for `resource` from `issuer`, checked at its introspection endpoint with the
    /// client `client_id` and its `client_secret`.
    pub fn new(
        resource: impl Into<String>,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        OAuthOptions {
            resource: resource.into(),
            issuer: issuer.into(),
            introspection_endpoint: None,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: Vec::new(),
        }
    }

    /// Introspects at `url` instead of the endpoint the issuer's metadata names.
    #[must_use]
    pub fn introspection_endpoint(mut self, url: impl Into<String>) -> Self {
        self.introspection_endpoint = Some(url.into());
        self
    }

    /// Requires `scope` of every token.
    #[must_use]
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }
}

/// Where the resource's metadata is served, relative to the server's root: RFC 9728's
/// well-known path, and that path with the resource's own path after it (§3.1).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How long the authorization server may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from it (metadata, an introspection).
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How long an answer about a token is trusted: a revoked token stops working within it.
const CACHE_FOR: Duration = Duration::from_secs(60);

/// How many tokens' answers are kept (each token at most 8 KiB: the gate's bound).
const MAX_CACHED: usize = 1024;

/// A resource server ready to serve: its checked resource, its metadata, and its verifier.
pub(crate) struct Protected {
    /// The paths the metadata is served at.
    pub(crate) metadata_paths: Vec<String>,
    /// Where clients are told the metadata is (the first path, on the resource's origin).
    pub(crate) metadata_url: String,
    /// The metadata (RFC 9728 §2).
    pub(crate) metadata: Value,
    /// Asks the authorization server about tokens.
    pub(crate) verifier: Arc<Introspection>,
}

impl Protected {
    /// Checks `options` and finds the introspection endpoint (asking the issuer for its
    /// metadata when it was not given).
    pub(crate) async fn prepare(options: OAuthOptions) -> Result<Protected, Error> {
        let resource = secure_url("the resource", &options.resource)?;
        let issuer = secure_url("the issuer", &options.issuer)?;
        if options.client_id.is_empty() || options.client_secret.is_empty() {
            return Err(authorization(
                &options.issuer,
                "give the client id and secret wayline introspects tokens with",
            ));
        }
        // reqwest is built without a default TLS provider; ring is the workspace's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            // Credentials go to the endpoint named and nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| authorization(&options.issuer, error.to_string()))?;
        let endpoint = match &options.introspection_endpoint {
            Some(url) => secure_url("the introspection endpoint", url)?,
            None => discover(&http, &issuer, &options.issuer).await?,
        };
        let resource_path = resource.path().trim_end_matches('/');
        let mut metadata_paths = vec![METADATA_PATH.to_owned()];
        if !resource_path.is_empty() {
            metadata_paths.insert(0, format!("{METADATA_PATH}{resource_path}"));
        }
        let mut metadata_url = resource.clone();
        metadata_url.set_path(&metadata_paths[0]);
        metadata_url.set_query(None);
        let mut metadata = json!({
            "resource": options.resource,
            "authorization_servers": [options.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "wayline MCP server",
        });
        if !options.scopes.is_empty() {
            metadata["scopes_supported"] = json!(options.scopes);
        }
        Ok(Protected {
            metadata_paths,
            metadata_url: metadata_url.to_string(),
            metadata,
            verifier: Arc::new(Introspection {
                http,
                endpoint,
                resource: options.resource.trim_end_matches('/').to_owned(),
                client_id: options.client_id,
                client_secret: options.client_secret,
                scopes: options.scopes,
                cache: Mutex::new(HashMap::new()),
            }),
        })
    }
}

fn authorization(issuer: &str, reason: impl Into<String>) -> Error {
    Error::Authorization {
        issuer: issuer.to_owned(),
        reason: reason.into(),
    }
}

/// `text` as a URL tokens or credentials may be sent to: HTTPS, or HTTP to this machine.
fn secure_url(what: &str, text: &str) -> Result<Url, Error> {
    let url = Url::parse(text)
        .map_err(|error| authorization(text, format!("{what} `{text}` is not a URL: {error}")))?;
    let local = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost" || name.ends_with(".localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => {}
        "http" if local => {}
        _ => {
            return Err(authorization(
                text,
                format!("{what} `{text}` must be an https URL (http only to this machine)"),
            ));
        }
    }
    if url.fragment().is_some() {
        return Err(authorization(
            text,
            format!("{what} `{text}` may not have a fragment"),
        ));
    }
    Ok(url)
}

/// The URLs an issuer's metadata may be at: RFC 8414's (the well-known path before the
/// issuer's path), then OpenID Connect's, inserted and appended.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |well_known: &str| {
        let mut url = issuer.clone();
        url.set_path(well_known);
        url.set_query(None);
        url
    };
    let mut urls = vec![
        at(&format!("/.well-known/oauth-authorization-server{path}")),
        at(&format!("/.well-known/openid-configuration{path}")),
    ];
    if !path.is_empty() {
        urls.push(at(&format!("{path}/.well-known/openid-configuration")));
    }
    urls
}

/// The introspection endpoint `issuer`'s metadata names.
async fn discover(http: &reqwest::Client, issuer: &Url, given: &str) -> Result<Url, Error> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let answer = match http.get(url.clone()).send().await {
            Ok(response) if response.status().is_success() => read_json(response).await,
            Ok(response) => Err(format!("HTTP {}", response.status().as_u16())),
            Err(error) => Err(error.to_string()),
        };
        let metadata = match answer {
            Ok(metadata) => metadata,
            Err(why) => {
                tried.push(format!("{url}: {why}"));
                continue;
            }
        };
        let named = metadata["issuer"].as_str().unwrap_or_default();
        if named.trim_end_matches('/') != given.trim_end_matches('/') {
            return Err(authorization(
                given,
                format!("the metadata at {url} is for the issuer `{named}` (RFC 8414 §3.3)"),
            ));
        }
        let Some(endpoint) = metadata["introspection_endpoint"].as_str() else {
            return Err(authorization(
                given,
                format!(
                    "its metadata at {url} names no introspection_endpoint; give one (--oauth-introspection)"
                ),
            ));
        };
        return secure_url("the introspection endpoint", endpoint);
    }
    Err(authorization(
        given,
        format!(
            "found no authorization server metadata ({}); give the introspection endpoint (--oauth-introspection)",
            tried.join("; ")
        ),
    ))
}

/// A JSON object answered, read up to [`MAX_ANSWER_BYTES`].
async fn read_json(mut response: reqwest::Response) -> Result<Value, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| error.to_string())? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(format!("the answer is over {MAX_ANSWER_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(value) if value.is_object() => Ok(value),
        _ => Err("the answer is not a JSON object".into()),
    }
}

/// Checks bearer tokens by asking the authorization server (RFC 7662), and remembers its
/// answers for a minute.
pub(crate) struct Introspection {
    http: reqwest::Client,
    endpoint: Url,
    /// Tokens must name it in their audience.
    resource: String,
    client_id: String,
    client_secret: String,
    scopes: Vec<String>,
    cache: Mutex<HashMap<String, Remembered>>,
}

/// An answer about a token, and until when it is trusted.
type Remembered = (Result<Principal, Refusal>, Instant);

#[async_trait::async_trait]
impl TokenVerifier for Introspection {
    async fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        let now = Instant::now();
        if let Some((answer, _)) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .filter(|(_, until)| *until > now)
        {
            return answer.clone();
        }
        let answer = match self.introspect(token).await {
            Ok(answer) => answer,
            Err(why) => {
                tracing::warn!(endpoint = %self.endpoint, "cannot check a bearer token: {why}");
                return Err(Refusal::Unverifiable(why));
            }
        };
        let (decided, expires) = judge(&answer, &self.resource, &self.scopes, unix_now());
        let trusted = expires
            .map(|seconds| Duration::from_secs(seconds.saturating_sub(unix_now())))
            .map_or(CACHE_FOR, |left| left.min(CACHE_FOR));
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(token.to_owned(), (decided.clone(), now + trusted));
        decided
    }

    fn required_scopes(&self) -> &[String] {
        &self.scopes
    }
}

impl Introspection {
    /// The authorization server's answer about `token`, or why there is none (in words that
    /// hold neither the token nor the client's secret).
    async fn introspect(&self, token: &str) -> Result<Value, String> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        // RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined.
        let encode =
            |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
        let credentials = format!(
            "{}:{}",
            encode(&self.client_id),
            encode(&self.client_secret)
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(credentials);
        let response = self
            .http
            .post(self.endpoint.clone())
            .header("authorization", format!("Basic {basic}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|error| {
                // reqwest's message names the URL, never the body or headers.
                format!("the authorization server did not answer: {error}")
            })?;
        match response.status().as_u16() {
            200 => read_json(response).await,
            401 | 403 => Err(format!(
                "the authorization server refused wayline's client `{}` (HTTP {}): check the client id and secret",
                self.client_id,
                response.status().as_u16()
            )),
            status => Err(format!("the authorization server answered HTTP {status}")),
        }
    }
}

/// Seconds since the epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// What an introspection `answer` means at `now` for a request to `resource` needing
/// `scopes`, and when it stops holding (its `exp`).
fn judge(
    answer: &Value,
    resource: &str,
    scopes: &[String],
    now: u64,
) -> (Result<Principal, Refusal>, Option<u64>) {
    let expires = answer["exp"].as_u64();
    if answer["active"] != Value::Bool(true)
        || expires.is_some_and(|exp| exp <= now)
        || answer["nbf"].as_u64().is_some_and(|nbf| nbf > now)
    {
        return (Err(Refusal::WrongToken), expires);
    }
    let audiences: Vec<&str> = match &answer["aud"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences
        .iter()
        .any(|audience| audience.trim_end_matches('/') == resource)
    {
        // Issued for another resource, or for none named: MCP servers accept only tokens
        // issued for them, so one cannot be passed on to another.
        tracing::info!(
            audiences = ?audiences,
            "refused a token not issued for {resource} (its audience must name it)"
        );
        return (Err(Refusal::WrongToken), expires);
    }
    let granted: Vec<String> = answer["scope"]
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .filter(|scope| !scope.is_empty())
        .map(str::to_owned)
        .collect();
    if !scopes.iter().all(|scope| granted.contains(scope)) {
        return (Err(Refusal::InsufficientScope(scopes.to_vec())), expires);
    }
    let text = |key: &str| answer[key].as_str().map(str::to_owned);
    (
        Ok(Principal::new(text("sub"), text("client_id"), granted)),
        expires,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESOURCE: &str = "https://mcp.example/mcp";

    fn judged(answer: Value, scopes: &[&str]) -> Result<Principal, Refusal> {
        let scopes: Vec<String> = scopes.iter().map(|scope| (*scope).to_owned()).collect();
        judge(&answer, RESOURCE, &scopes, 1_000).0
    }

    #[test]
    fn only_active_tokens_for_this_resource_with_the_scopes_get_in() {
        let principal = judged(
            json!({"active": true, "aud": ["other", "https://mcp.example/mcp/"], "scope": "mcp read",
                   "sub": "ana", "client_id": "agent", "exp": 2_000}),
            &["mcp"],
        )
        .unwrap();
        assert_eq!(principal.subject.as_deref(), Some("ana"));
        assert_eq!(principal.client_id.as_deref(), Some("agent"));
        assert_eq!(principal.scopes, ["mcp", "read"]);
        let refused = [
            json!({"active": false, "aud": RESOURCE}),
            json!({"aud": RESOURCE}),
            json!({"active": "true", "aud": RESOURCE}),
            json!({"active": true, "aud": RESOURCE, "exp": 1_000}),
            json!({"active": true, "aud": RESOURCE, "nbf": 1_001}),
            json!({"active": true}),
            json!({"active": true, "aud": "https://mcp.example/mcp/other"}),
            json!({"active": true, "aud": ["https://other.example/mcp"]}),
        ];
        for answer in refused {
            assert_eq!(
                judged(answer.clone(), &[]),
                Err(Refusal::WrongToken),
                "{answer}"
            );
        }
        assert_eq!(
            judged(
                json!({"active": true, "aud": RESOURCE, "scope": "mcpx"}),
                &["mcp"]
            ),
            Err(Refusal::InsufficientScope(vec!["mcp".into()]))
        );
        assert!(judged(json!({"active": true, "aud": RESOURCE}), &[]).is_ok());
    }

    #[test]
    fn metadata_is_looked_for_where_the_rfcs_put_it() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(&Url::parse(issuer).unwrap())
                .iter()
                .map(Url::to_string)
                .collect()
        };
        assert_eq!(
            urls("https://auth.example/realms/ops/"),
            [
                "https://auth.example/.well-known/oauth-authorization-server/realms/ops",
                "https://auth.example/.well-known/openid-configuration/realms/ops",
                "https://auth.example/realms/ops/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://auth.example"),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn tokens_and_secrets_go_over_https_or_stay_on_this_machine() {
        for good in [
            "https://auth.example/x",
            "http://127.0.0.1:9000/",
            "http://localhost/",
            "http://[::1]:80/",
        ] {
            assert!(secure_url("it", good).is_ok(), "{good}");
        }
        for bad in [
            "http://auth.example/",
            "http://10.0.0.1/",
            "ftp://auth.example/",
            "https://auth.example/#x",
            "auth.example",
        ] {
            assert!(secure_url("it", bad).is_err(), "{bad}");
        }
        let options = OAuthOptions::new(RESOURCE, "https://auth.example", "id", "s3cret-value");
        assert!(!format!("{options:?}").contains("s3cret-value"));
    }
}

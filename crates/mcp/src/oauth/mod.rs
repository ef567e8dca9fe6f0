//! OAuth 2.1 for wayline's MCP servers over HTTP, as the MCP authorization specification
//! describes for a protected server: the server is a resource server. It publishes its
//! metadata (RFC 9728) at `/.well-known/oauth-protected-resource`, naming the authorization
//! server that issues its tokens; its 401s point there (`WWW-Authenticate: Bearer
//! resource_metadata="…"`, by `wayline-listen`'s gate); and it lets a request in only when its
//! bearer token is valid, was issued for this resource (its audience, RFC 8707) and carries
//! the scopes the server requires. A token is checked one of two ways:
//!
//! - a JWT (RFC 9068) against the authorization server's published keys (`jwt`), when its
//!   metadata names a `jwks_uri`: Entra ID, Auth0 and Cognito issue these and offer no
//!   introspection;
//! - any other token by asking the authorization server (introspection, RFC 7662:
//!   `introspect`), as the client given, with answers remembered for a minute.

mod introspect;
mod jwt;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use url::Url;
use wayline_listen::{Principal, Refusal, TokenVerifier};

use self::introspect::Introspection;
use self::jwt::{Jwks, Jwt};
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
    /// The client the server introspects as, and its secret; without one, only JWTs signed
    /// with the issuer's published keys are accepted.
    client: Option<(String, String)>,
    /// Scopes every request's token must carry (and the metadata advertises).
    pub scopes: Vec<String>,
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("introspection_endpoint", &self.introspection_endpoint)
            .field(
                "client",
                &self.client.as_ref().map(|(id, _)| (id, "<redacted>")),
            )
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl OAuthOptions {
    /// Tokens for `resource` from `issuer`: JWTs checked against its published keys.
    pub fn new(resource: impl Into<String>, issuer: impl Into<String>) -> Self {
        OAuthOptions {
            resource: resource.into(),
            issuer: issuer.into(),
            introspection_endpoint: None,
            client: None,
            scopes: Vec::new(),
        }
    }

    /// Checks other tokens by introspection, as the client `id` with `secret`.
    #[must_use]
    pub fn introspect_as(mut self, id: impl Into<String>, secret: impl Into<String>) -> Self {
        self.client = Some((id.into(), secret.into()));
        self
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

/// The largest answer read from it (metadata, keys, an introspection).
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// A resource server ready to serve: its metadata, and its verifier.
pub(crate) struct Protected {
    /// The paths the metadata is served at.
    pub(crate) metadata_paths: Vec<String>,
    /// Where clients are told the metadata is (the first path, on the resource's origin).
    pub(crate) metadata_url: String,
    /// The metadata (RFC 9728 §2).
    pub(crate) metadata: Value,
    /// Checks tokens.
    pub(crate) verifier: Arc<Verifier>,
}

impl Protected {
    /// Checks `options`, reads the issuer's metadata, and fetches its keys.
    pub(crate) async fn prepare(options: OAuthOptions) -> Result<Protected, Error> {
        let resource = secure_url("the resource", &options.resource)?;
        let issuer = secure_url("the issuer", &options.issuer)?;
        // reqwest is built without a default TLS provider; ring is the workspace's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            // Credentials go to the endpoint named and nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| authorization(&options.issuer, error.to_string()))?;
        let found = discover(&http, &issuer, &options.issuer).await;
        let introspection = match &options.client {
            Some((id, secret)) => {
                let named = match (&options.introspection_endpoint, &found) {
                    (Some(url), _) => url,
                    (None, Ok(found)) => found.introspection.as_ref().ok_or_else(|| {
                        authorization(
                            &options.issuer,
                            "its metadata names no introspection_endpoint; give one (--oauth-introspection)",
                        )
                    })?,
                    (None, Err(why)) => return Err(authorization(&options.issuer, why.clone())),
                };
                let endpoint = secure_url("the introspection endpoint", named)?;
                if secret.is_empty() {
                    return Err(authorization(
                        &options.issuer,
                        format!("the client `{id}` needs its secret to introspect tokens"),
                    ));
                }
                Some(Introspection::new(
                    http.clone(),
                    endpoint,
                    id.clone(),
                    secret.clone(),
                ))
            }
            None => None,
        };
        let jwks = match found.as_ref().ok().and_then(|found| found.jwks.as_ref()) {
            Some(url) => match (secure_url("the issuer's jwks_uri", url), &introspection) {
                (Ok(url), _) => match Jwks::fetch(http.clone(), url).await {
                    Ok(jwks) => Some(jwks),
                    Err(why) if introspection.is_some() => {
                        tracing::warn!("JWT access tokens will be introspected: {why}");
                        None
                    }
                    Err(why) => return Err(authorization(&options.issuer, why)),
                },
                (Err(_), Some(_)) => None,
                (Err(error), None) => return Err(error),
            },
            None => None,
        };
        if jwks.is_none() && introspection.is_none() {
            let why = match found {
                Ok(_) => "its metadata names no jwks_uri to check JWT access tokens with; give a client to introspect tokens as (--oauth-client-id)".to_owned(),
                Err(why) => why,
            };
            return Err(authorization(&options.issuer, why));
        }
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
            verifier: Arc::new(Verifier {
                claims: Claims {
                    resource: options.resource.trim_end_matches('/').to_owned(),
                    issuer: options.issuer,
                    scopes: options.scopes,
                },
                jwks,
                introspection,
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

/// What the issuer's metadata says of checking its tokens.
struct IssuerMetadata {
    /// `introspection_endpoint`, as given.
    introspection: Option<String>,
    /// `jwks_uri`, as given.
    jwks: Option<String>,
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

/// `issuer`'s metadata, from the first place it is found, or why there is none to use.
async fn discover(
    http: &reqwest::Client,
    issuer: &Url,
    given: &str,
) -> Result<IssuerMetadata, String> {
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
            return Err(format!(
                "the metadata at {url} is for the issuer `{named}` (RFC 8414 §3.3)"
            ));
        }
        let text = |key: &str| metadata[key].as_str().map(str::to_owned);
        return Ok(IssuerMetadata {
            introspection: text("introspection_endpoint"),
            jwks: text("jwks_uri"),
        });
    }
    Err(format!(
        "found no authorization server metadata ({}); give the introspection endpoint (--oauth-introspection) and a client to introspect as",
        tried.join("; ")
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

/// Seconds since the epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Checks a bearer token as a JWT signed with the issuer's keys, or else by introspection.
pub(crate) struct Verifier {
    claims: Claims,
    jwks: Option<Jwks>,
    introspection: Option<Introspection>,
}

#[async_trait::async_trait]
impl TokenVerifier for Verifier {
    async fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        if let (Some(jwks), Some(jwt)) = (&self.jwks, Jwt::parse(token)) {
            let claims = jwks.verify(&jwt).await?;
            // RFC 9068 §4: from this issuer, and expiring.
            if claims["iss"].as_str() != Some(self.claims.issuer.as_str())
                || !claims["exp"].is_u64()
            {
                return Err(Refusal::WrongToken);
            }
            return self.claims.judge(&claims, unix_now());
        }
        match &self.introspection {
            Some(introspection) => introspection.verify(token, &self.claims).await,
            None => Err(Refusal::WrongToken),
        }
    }

    fn required_scopes(&self) -> &[String] {
        &self.claims.scopes
    }
}

/// What a token's claims (a JWT's, or an introspection's answer) must say to let a request in.
pub(super) struct Claims {
    /// Tokens must name it in their audience.
    resource: String,
    /// JWTs must name it as their issuer.
    issuer: String,
    /// Tokens must carry these.
    scopes: Vec<String>,
}

impl Claims {
    /// Whether an introspection's `answer` lets a request in at `now`: the token is active,
    /// and its claims are as [`Claims::judge`] wants them.
    fn introspected(&self, answer: &Value, now: u64) -> Result<Principal, Refusal> {
        if answer["active"] != Value::Bool(true) {
            return Err(Refusal::WrongToken);
        }
        self.judge(answer, now)
    }

    /// Whether `claims` let a request in at `now`: not expired nor early, issued for this
    /// resource, with the scopes required (`scope`, or Entra ID's `scp`).
    fn judge(&self, claims: &Value, now: u64) -> Result<Principal, Refusal> {
        if claims["exp"].as_u64().is_some_and(|exp| exp <= now)
            || claims["nbf"].as_u64().is_some_and(|nbf| nbf > now)
        {
            return Err(Refusal::WrongToken);
        }
        let audiences: Vec<&str> = match &claims["aud"] {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences
            .iter()
            .any(|audience| audience.trim_end_matches('/') == self.resource)
        {
            // Issued for another resource, or for none named: MCP servers accept only tokens
            // issued for them, so one cannot be passed on to another.
            tracing::info!(
                audiences = ?audiences,
                "refused a token not issued for {} (its audience must name it)",
                self.resource
            );
            return Err(Refusal::WrongToken);
        }
        let granted: Vec<String> = match (&claims["scope"], &claims["scp"]) {
            (Value::String(scopes), _) | (_, Value::String(scopes)) => {
                scopes.split(' ').map(str::to_owned).collect()
            }
            (_, Value::Array(scopes)) => scopes
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let granted: Vec<String> = granted.into_iter().filter(|s| !s.is_empty()).collect();
        if !self.scopes.iter().all(|scope| granted.contains(scope)) {
            return Err(Refusal::InsufficientScope(self.scopes.clone()));
        }
        let text = |key: &str| claims[key].as_str().map(str::to_owned);
        let client = text("client_id")
            .or_else(|| text("azp"))
            .or_else(|| text("appid"));
        Ok(Principal::new(text("sub"), client, granted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESOURCE: &str = "https://mcp.example/mcp";

    fn claims(scopes: &[&str]) -> Claims {
        Claims {
            resource: RESOURCE.to_owned(),
            issuer: "https://auth.example".to_owned(),
            scopes: scopes.iter().map(|scope| (*scope).to_owned()).collect(),
        }
    }

    fn judged(answer: Value, scopes: &[&str]) -> Result<Principal, Refusal> {
        claims(scopes).introspected(&answer, 1_000)
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
        let options =
            OAuthOptions::new(RESOURCE, "https://auth.example").introspect_as("id", "s3cret-value");
        assert!(!format!("{options:?}").contains("s3cret-value"));
    }

    #[tokio::test]
    async fn jwts_of_the_issuer_for_this_resource_get_in_unasked() {
        let signer = jwt::tests::Signer::ec();
        let verifier = Verifier {
            claims: claims(&["mcp"]),
            jwks: Some(jwt::tests::held(&[signer.jwk("k1")])),
            introspection: None,
        };
        let good = json!({"iss": "https://auth.example", "aud": RESOURCE, "exp": 4_000_000_000u64,
                          "scp": ["mcp", "read"], "sub": "ana", "azp": "agent"});
        let principal = verifier.verify(&signer.token("k1", &good)).await.unwrap();
        assert_eq!(principal.subject.as_deref(), Some("ana"));
        assert_eq!(principal.client_id.as_deref(), Some("agent"));
        assert_eq!(principal.scopes, ["mcp", "read"]);
        let with = |key: &str, value: Value| {
            let mut claims = good.clone();
            match value {
                Value::Null => claims.as_object_mut().unwrap().remove(key),
                value => claims
                    .as_object_mut()
                    .unwrap()
                    .insert(key.to_owned(), value),
            };
            signer.token("k1", &claims)
        };
        for token in [
            with("iss", json!("https://elsewhere.example")),
            with("exp", Value::Null),
            with("exp", json!(1_000)),
            with("aud", json!("https://elsewhere.example/mcp")),
            "an-opaque-token".to_owned(),
        ] {
            assert_eq!(
                verifier.verify(&token).await,
                Err(Refusal::WrongToken),
                "{token}"
            );
        }
        assert_eq!(
            verifier.verify(&with("scp", json!("read"))).await,
            Err(Refusal::InsufficientScope(vec!["mcp".into()]))
        );
    }
}

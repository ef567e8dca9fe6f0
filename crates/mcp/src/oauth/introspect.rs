//! Opaque access tokens, checked by asking the authorization server (token introspection,
//! RFC 7662) as a client of its own; answers are remembered for a minute, so a revoked token
//! stops working within it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use tokio::time::Instant;
use url::Url;
use wayline_listen::{Principal, Refusal};

use super::{Claims, read_json, unix_now};

/// How long an answer about a token is trusted.
const CACHE_FOR: Duration = Duration::from_secs(60);

/// How many tokens' answers are kept (each token at most 8 KiB: the gate's bound).
const MAX_CACHED: usize = 1024;

/// An answer about a token, and until when it is trusted.
type Remembered = (Result<Principal, Refusal>, Instant);

/// Asks the authorization server about tokens.
pub(super) struct Introspection {
    http: reqwest::Client,
    endpoint: Url,
    client_id: String,
    client_secret: String,
    cache: Mutex<HashMap<String, Remembered>>,
}

impl Introspection {
    /// Introspects at `endpoint` as the client `client_id`.
    pub(super) fn new(
        http: reqwest::Client,
        endpoint: Url,
        client_id: String,
        client_secret: String,
    ) -> Self {
        Introspection {
            http,
            endpoint,
            client_id,
            client_secret,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// What the authorization server says of `token`, judged by `claims` — remembered.
    pub(super) async fn verify(&self, token: &str, claims: &Claims) -> Result<Principal, Refusal> {
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
        let decided = claims.introspected(&answer, unix_now());
        let trusted = answer["exp"]
            .as_u64()
            .map(|exp| Duration::from_secs(exp.saturating_sub(unix_now())))
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
            // reqwest's message names the URL, never the body or headers.
            .map_err(|error| format!("the authorization server did not answer: {error}"))?;
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

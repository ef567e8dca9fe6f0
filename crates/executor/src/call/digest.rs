//! HTTP digest authentication (RFC 7616, and RFC 2617's MD5) as a [`Transport`] wrapper: a
//! request answered `401` with a `Digest` challenge is sent once more with the answer, and
//! later requests answer the remembered challenge at once (counting `nc`), so only the first
//! request pays the extra round trip. A challenge marked `stale` is answered afresh.
//!
//! Algorithms `MD5`, `MD5-sess`, `SHA-256` and `SHA-256-sess`; `qop` `auth` (or none, as RFC
//! 2069). `auth-int` alone is not supported (the request goes without an answer and its `401`
//! comes back).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use md5::Md5;
use sha2::{Digest, Sha256};
use wayline_core::Secret;
use wayline_core::transport::{Header, HttpRequest, HttpResponse, Transport, TransportError};

/// A challenge's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Challenge {
    realm: String,
    nonce: String,
    opaque: Option<String>,
    algorithm: Algorithm,
    qop_auth: bool,
    stale: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Md5,
    Md5Sess,
    Sha256,
    Sha256Sess,
}

impl Algorithm {
    fn parse(name: &str) -> Option<Algorithm> {
        match name.to_ascii_uppercase().as_str() {
            "" | "MD5" => Some(Algorithm::Md5),
            "MD5-SESS" => Some(Algorithm::Md5Sess),
            "SHA-256" => Some(Algorithm::Sha256),
            "SHA-256-SESS" => Some(Algorithm::Sha256Sess),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Md5Sess => "MD5-sess",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha256Sess => "SHA-256-sess",
        }
    }

    fn hash(self, text: &str) -> String {
        let bytes: Vec<u8> = match self {
            Algorithm::Md5 | Algorithm::Md5Sess => Md5::digest(text.as_bytes()).to_vec(),
            Algorithm::Sha256 | Algorithm::Sha256Sess => Sha256::digest(text.as_bytes()).to_vec(),
        };
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    fn session(self) -> bool {
        matches!(self, Algorithm::Md5Sess | Algorithm::Sha256Sess)
    }
}

/// The `Digest` challenge in a `WWW-Authenticate` value, if it has one this can answer.
fn parse_challenge(header: &str) -> Option<Challenge> {
    let rest = header.trim_start();
    let scheme_end = rest.find(char::is_whitespace)?;
    if !rest[..scheme_end].eq_ignore_ascii_case("digest") {
        return None;
    }
    let mut parameters = std::collections::HashMap::new();
    let mut text = rest[scheme_end..].trim_start();
    while !text.is_empty() {
        let Some(equals) = text.find('=') else {
            break;
        };
        let key = text[..equals]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        text = text[equals + 1..].trim_start();
        let value;
        if let Some(quoted) = text.strip_prefix('"') {
            // A quoted string, `\` escaping the next character.
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((at, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            out.push(next);
                        }
                    }
                    '"' => {
                        end = at + 1;
                        break;
                    }
                    other => out.push(other),
                }
            }
            value = out;
            text = quoted.get(end..).unwrap_or_default();
        } else {
            let end = text.find(',').unwrap_or(text.len());
            value = text[..end].trim().to_owned();
            text = &text[end..];
        }
        text = text.trim_start().trim_start_matches(',').trim_start();
        parameters.insert(key, value);
    }
    let qop = parameters.get("qop").cloned().unwrap_or_default();
    let offers: Vec<&str> = qop.split(',').map(str::trim).collect();
    let qop_auth = offers.contains(&"auth");
    if !qop.is_empty() && !qop_auth {
        return None; // auth-int only
    }
    Some(Challenge {
        realm: parameters.get("realm").cloned().unwrap_or_default(),
        nonce: parameters.get("nonce").cloned()?,
        opaque: parameters.get("opaque").cloned(),
        algorithm: Algorithm::parse(parameters.get("algorithm").map_or("", String::as_str))?,
        qop_auth,
        stale: parameters
            .get("stale")
            .is_some_and(|stale| stale.eq_ignore_ascii_case("true")),
    })
}

/// The `Authorization` value answering `challenge` for `method` on `uri`.
fn answer(
    challenge: &Challenge,
    username: &str,
    password: &str,
    method: &str,
    uri: &str,
    nc: u32,
    cnonce: &str,
) -> String {
    let algorithm = challenge.algorithm;
    let mut ha1 = algorithm.hash(&format!("{username}:{}:{password}", challenge.realm));
    if algorithm.session() {
        ha1 = algorithm.hash(&format!("{ha1}:{}:{cnonce}", challenge.nonce));
    }
    let ha2 = algorithm.hash(&format!("{method}:{uri}"));
    let nc = format!("{nc:08x}");
    let response = if challenge.qop_auth {
        algorithm.hash(&format!(
            "{ha1}:{}:{nc}:{cnonce}:auth:{ha2}",
            challenge.nonce
        ))
    } else {
        algorithm.hash(&format!("{ha1}:{}:{ha2}", challenge.nonce))
    };
    let quote = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
    let mut value = format!(
        "Digest username=\"{}\", realm=\"{}\", nonce=\"{}\", uri=\"{}\", algorithm={}, response=\"{response}\"",
        quote(username),
        quote(&challenge.realm),
        quote(&challenge.nonce),
        quote(uri),
        algorithm.name()
    );
    if challenge.qop_auth {
        value.push_str(&format!(", qop=auth, nc={nc}, cnonce=\"{cnonce}\""));
    }
    if let Some(opaque) = &challenge.opaque {
        value.push_str(&format!(", opaque=\"{}\"", quote(opaque)));
    }
    value
}

/// The request target of `url` (path and query), as digest's `uri` names it.
fn request_uri(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => match parsed.query() {
            Some(query) => format!("{}?{query}", parsed.path()),
            None => parsed.path().to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

/// Sends through `inner`, answering digest challenges with a user name and password.
pub struct DigestTransport {
    inner: Arc<dyn Transport>,
    username: Secret,
    password: Secret,
    /// The challenge being answered and the last `nc` used with it.
    current: Mutex<Option<(Challenge, u32)>>,
}

impl fmt::Debug for DigestTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DigestTransport")
            .field("inner", &self.inner)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl DigestTransport {
    /// Digest auth as `username` with `password` over `inner`.
    pub fn new(inner: Arc<dyn Transport>, username: Secret, password: Secret) -> Self {
        DigestTransport {
            inner,
            username,
            password,
            current: Mutex::new(None),
        }
    }

    /// `request` with an answer to the remembered challenge, if there is one.
    fn authorized(&self, request: &HttpRequest) -> HttpRequest {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let mut request = request.clone();
        if let Some((challenge, nc)) = current.as_mut() {
            *nc = nc.wrapping_add(1);
            let cnonce = format!("{:016x}", fastrand::u64(..));
            let value = answer(
                challenge,
                self.username.expose(),
                self.password.expose(),
                &request.method,
                &request_uri(&request.url),
                *nc,
                &cnonce,
            );
            request
                .headers
                .retain(|header| !header.name.eq_ignore_ascii_case("authorization"));
            request
                .headers
                .push(Header::sensitive("Authorization", value));
        }
        request
    }

    fn challenge_in(response: &HttpResponse) -> Option<Challenge> {
        response
            .headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("www-authenticate"))
            .find_map(|(_, value)| parse_challenge(value))
    }
}

#[async_trait::async_trait]
impl Transport for DigestTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let answered_nonce = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(challenge, _)| challenge.nonce.clone());
        let response = self.inner.send(self.authorized(&request)).await?;
        if response.status != 401 {
            return Ok(response);
        }
        let Some(challenge) = Self::challenge_in(&response) else {
            return Ok(response);
        };
        // A first challenge, a stale nonce, or a new nonce (a server that rotates them
        // without saying `stale`): answer it, once. The same nonce challenged again means
        // refused credentials: the caller's 401.
        if answered_nonce.as_deref() == Some(challenge.nonce.as_str()) && !challenge.stale {
            return Ok(response);
        }
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some((challenge, 0));
        self.inner.send(self.authorized(&request)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2617s_example_is_answered_exactly() {
        let challenge = parse_challenge(
            r#"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#,
        )
        .unwrap();
        let value = answer(
            &challenge,
            "Mufasa",
            "Circle Of Life",
            "GET",
            "/dir/index.html",
            1,
            "0a4f113b",
        );
        assert!(
            value.contains(r#"response="6629fae49393a05397450978507c4ef1""#),
            "{value}"
        );
        assert!(value.contains("nc=00000001"), "{value}");
        assert!(value.contains(r#"opaque="5ccc069c403ebaf9f0171e9517f40e41""#));
    }

    #[test]
    fn rfc_7616s_sha_256_example_is_answered_exactly() {
        let challenge = parse_challenge(
            r#"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#,
        )
        .unwrap();
        let value = answer(
            &challenge,
            "Mufasa",
            "Circle of Life",
            "GET",
            "/dir/index.html",
            1,
            "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ",
        );
        assert!(
            value.contains(
                r#"response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1""#
            ),
            "{value}"
        );
    }

    /// A server that wants digest auth: checks each answer, counts calls, and can make its
    /// nonce stale.
    #[derive(Debug)]
    struct Server {
        nonce: Mutex<String>,
        calls: Mutex<Vec<Option<String>>>,
        /// Whether an old nonce is answered with `stale=true` (some servers just send a
        /// new challenge).
        says_stale: bool,
    }

    impl Server {
        fn challenge(&self, stale: bool) -> HttpResponse {
            let nonce = self.nonce.lock().unwrap().clone();
            HttpResponse::new(401, "who are you?").with_header(
                "WWW-Authenticate",
                format!(
                    r#"Digest realm="api", qop="auth", nonce="{nonce}", opaque="op", algorithm=MD5{}"#,
                    if stale { ", stale=true" } else { "" }
                ),
            )
        }
    }

    #[async_trait::async_trait]
    impl Transport for Server {
        async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
            let given = request.header("authorization").map(str::to_owned);
            self.calls.lock().unwrap().push(given.clone());
            let Some(given) = given else {
                return Ok(self.challenge(false));
            };
            let field = |name: &str| {
                let start = given.find(&format!("{name}="))? + name.len() + 1;
                let rest = given[start..].trim_start_matches('"');
                Some(rest[..rest.find(['"', ',']).unwrap_or(rest.len())].to_owned())
            };
            let nonce = self.nonce.lock().unwrap().clone();
            if field("nonce").as_deref() != Some(nonce.as_str()) {
                return Ok(self.challenge(self.says_stale));
            }
            let nc = u32::from_str_radix(&field("nc").unwrap(), 16).unwrap();
            let expected = answer(
                &parse_challenge(&format!(
                    r#"Digest realm="api", qop="auth", nonce="{nonce}", opaque="op""#
                ))
                .unwrap(),
                "user",
                "right",
                &request.method,
                &field("uri").unwrap(),
                nc,
                &field("cnonce").unwrap(),
            );
            if expected == given {
                Ok(HttpResponse::new(200, format!("nc {nc}")))
            } else {
                Ok(self.challenge(false))
            }
        }
    }

    #[tokio::test]
    async fn the_first_request_is_challenged_and_later_ones_answer_at_once() {
        let server = Arc::new(Server {
            nonce: Mutex::new("n1".into()),
            calls: Mutex::new(Vec::new()),
            says_stale: true,
        });
        let client =
            DigestTransport::new(server.clone(), Secret::new("user"), Secret::new("right"));
        let get = |path: &str| HttpRequest::new("GET", format!("http://127.0.0.1:1{path}"));
        let first = client.send(get("/clusters?page=2")).await.unwrap();
        assert_eq!(
            (first.status, first.text().into_owned()),
            (200, "nc 1".to_owned())
        );
        let second = client.send(get("/clusters/c1")).await.unwrap();
        assert_eq!(second.text(), "nc 2");
        assert_eq!(
            server.calls.lock().unwrap().len(),
            3,
            "one challenge in all"
        );
        assert!(
            server.calls.lock().unwrap()[1]
                .as_deref()
                .unwrap()
                .contains(r#"uri="/clusters?page=2""#)
        );
        // The server moves on to a new nonce: the stale answer is redone once.
        *server.nonce.lock().unwrap() = "n2".into();
        let third = client.send(get("/regions")).await.unwrap();
        assert_eq!(third.text(), "nc 1");
        assert_eq!(server.calls.lock().unwrap().len(), 5);
        // The password is never shown.
        assert!(!format!("{client:?}").contains("right"));
        // Wrong credentials: the 401 comes back after one answer, not a loop.
        // A server that rotates nonces without saying `stale`: the new one is answered once.
        let rotating = Arc::new(Server {
            nonce: Mutex::new("n1".into()),
            calls: Mutex::new(Vec::new()),
            says_stale: false,
        });
        let client =
            DigestTransport::new(rotating.clone(), Secret::new("user"), Secret::new("right"));
        assert_eq!(client.send(get("/a")).await.unwrap().status, 200);
        *rotating.nonce.lock().unwrap() = "n9".into();
        assert_eq!(client.send(get("/b")).await.unwrap().status, 200);
        assert_eq!(rotating.calls.lock().unwrap().len(), 4);
        let server = Arc::new(Server {
            nonce: Mutex::new("n1".into()),
            calls: Mutex::new(Vec::new()),
            says_stale: true,
        });
        let wrong = DigestTransport::new(server.clone(), Secret::new("user"), Secret::new("wrong"));
        assert_eq!(wrong.send(get("/x")).await.unwrap().status, 401);
        assert_eq!(wrong.send(get("/x")).await.unwrap().status, 401);
        assert_eq!(server.calls.lock().unwrap().len(), 3);
    }

    #[test]
    fn challenges_this_cannot_answer_are_left_alone() {
        assert!(parse_challenge("Basic realm=\"x\"").is_none());
        assert!(parse_challenge("Digest realm=\"x\", nonce=\"n\", qop=\"auth-int\"").is_none());
        assert!(
            parse_challenge("Digest realm=\"x\", nonce=\"n\", algorithm=SHA-512-256").is_none()
        );
        assert!(parse_challenge("Digest realm=\"x\"").is_none(), "no nonce");
        let quoted =
            parse_challenge(r#"Digest realm="a \"b\", c", nonce="n", stale=TRUE"#).unwrap();
        assert_eq!(quoted.realm, "a \"b\", c");
        assert!(quoted.stale);
    }
}

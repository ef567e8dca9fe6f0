//! Access tokens that are JWTs (RFC 9068, and what Entra ID, Auth0 and Cognito issue), checked
//! here against the authorization server's published keys (its `jwks_uri`) rather than by
//! asking it: many such servers offer no introspection, and some refuse to introspect their
//! own JWTs. Only asymmetric signatures are accepted (RS*, PS*, ES256/384, EdDSA): never
//! `none`, never a shared-secret HMAC a client could forge with a public key.

use std::sync::RwLock;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;
use tokio::time::Instant;
use url::Url;
use wayline_listen::Refusal;

use super::read_json;

/// How often the keys may be fetched again for a token signed with a key not yet seen (a
/// rotation), so tokens naming made-up keys cannot make us hammer the server.
const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// The most keys a key set may hold.
const MAX_KEYS: usize = 64;

/// A compact JWS: what was signed, the header's claims, and the signature.
pub(super) struct Jwt<'a> {
    /// `header.payload`, as sent.
    signed: &'a str,
    payload: &'a str,
    alg: String,
    kid: Option<String>,
    signature: Vec<u8>,
}

impl<'a> Jwt<'a> {
    /// `token` read as a JWT, or `None` when it is not shaped as one (an opaque token).
    pub(super) fn parse(token: &'a str) -> Option<Jwt<'a>> {
        let (signed, signature) = token.rsplit_once('.')?;
        let (header, payload) = signed.split_once('.')?;
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
        Some(Jwt {
            signed,
            payload,
            alg: header["alg"].as_str()?.to_owned(),
            kid: header["kid"].as_str().map(str::to_owned),
            signature: URL_SAFE_NO_PAD.decode(signature).ok()?,
        })
    }
}

/// A JWS algorithm this server accepts, and the kind of key it takes.
#[derive(Clone, Copy)]
enum Algorithm {
    Rsa(&'static signature::RsaParameters),
    Ecdsa(&'static signature::EcdsaVerificationAlgorithm, &'static str),
    Ed25519,
}

fn algorithm(name: &str) -> Option<Algorithm> {
    Some(match name {
        "RS256" => Algorithm::Rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
        "RS384" => Algorithm::Rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
        "RS512" => Algorithm::Rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
        "PS256" => Algorithm::Rsa(&signature::RSA_PSS_2048_8192_SHA256),
        "PS384" => Algorithm::Rsa(&signature::RSA_PSS_2048_8192_SHA384),
        "PS512" => Algorithm::Rsa(&signature::RSA_PSS_2048_8192_SHA512),
        "ES256" => Algorithm::Ecdsa(&signature::ECDSA_P256_SHA256_FIXED, "P-256"),
        "ES384" => Algorithm::Ecdsa(&signature::ECDSA_P384_SHA384_FIXED, "P-384"),
        "EdDSA" | "Ed25519" => Algorithm::Ed25519,
        _ => return None,
    })
}

/// One published verification key.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    kid: Option<String>,
    alg: Option<String>,
    material: Material,
}

#[derive(Debug, Clone, PartialEq)]
enum Material {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (`04 || x || y`) on the curve named.
    Ec {
        curve: String,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

impl Key {
    /// A JWK, when it is a signature key of a kind this server can use.
    fn of(jwk: &Value) -> Option<Key> {
        if jwk["use"].as_str().is_some_and(|usage| usage != "sig") {
            return None;
        }
        let bytes = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str()?).ok();
        let material = match jwk["kty"].as_str()? {
            "RSA" => Material::Rsa {
                n: bytes("n")?,
                e: bytes("e")?,
            },
            "EC" => {
                let mut point = vec![4];
                point.extend(bytes("x")?);
                point.extend(bytes("y")?);
                Material::Ec {
                    curve: jwk["crv"].as_str()?.to_owned(),
                    point,
                }
            }
            "OKP" if jwk["crv"] == "Ed25519" => Material::Ed25519(bytes("x")?),
            _ => return None,
        };
        Some(Key {
            kid: jwk["kid"].as_str().map(str::to_owned),
            alg: jwk["alg"].as_str().map(str::to_owned),
            material,
        })
    }

    /// Whether this key could have made `jwt`'s signature (kind, curve, `kid`, `alg`).
    fn fits(&self, jwt: &Jwt<'_>, algorithm: Algorithm) -> bool {
        let kind = match (&self.material, algorithm) {
            (Material::Rsa { .. }, Algorithm::Rsa(_))
            | (Material::Ed25519(_), Algorithm::Ed25519) => true,
            (Material::Ec { curve, .. }, Algorithm::Ecdsa(_, wanted)) => curve == wanted,
            _ => false,
        };
        kind && (jwt.kid.is_none() || self.kid == jwt.kid)
            && self.alg.as_ref().is_none_or(|alg| *alg == jwt.alg)
    }

    /// Whether `jwt`'s signature is this key's.
    fn signed(&self, jwt: &Jwt<'_>, algorithm: Algorithm) -> bool {
        let message = jwt.signed.as_bytes();
        let signature = jwt.signature.as_slice();
        match (&self.material, algorithm) {
            (Material::Rsa { n, e }, Algorithm::Rsa(parameters)) => RsaPublicKeyComponents { n, e }
                .verify(parameters, message, signature)
                .is_ok(),
            (Material::Ec { point, .. }, Algorithm::Ecdsa(verification, _)) => {
                UnparsedPublicKey::new(verification, point)
                    .verify(message, signature)
                    .is_ok()
            }
            (Material::Ed25519(key), Algorithm::Ed25519) => {
                UnparsedPublicKey::new(&signature::ED25519, key)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// The keys in a JWK Set document (at most [`MAX_KEYS`]; the rest are ignored).
fn keys_of(document: &Value) -> Vec<Key> {
    document["keys"]
        .as_array()
        .map(|keys| keys.iter().filter_map(Key::of).take(MAX_KEYS).collect())
        .unwrap_or_default()
}

/// The authorization server's signing keys, fetched from its `jwks_uri` at start and again
/// (at most once a minute) when a token names a key not among them.
pub(super) struct Jwks {
    http: reqwest::Client,
    url: Url,
    keys: RwLock<(Vec<Key>, Instant)>,
}

impl Jwks {
    /// The keys at `url`, or why they could not be had.
    pub(super) async fn fetch(http: reqwest::Client, url: Url) -> Result<Jwks, String> {
        let keys = load(&http, &url).await?;
        Ok(Jwks {
            http,
            url,
            keys: RwLock::new((keys, Instant::now())),
        })
    }

    /// The claims of `jwt` once its signature is found to be one of the server's keys'.
    pub(super) async fn verify(&self, jwt: &Jwt<'_>) -> Result<Value, Refusal> {
        let algorithm = algorithm(&jwt.alg).ok_or(Refusal::WrongToken)?;
        if let Some(verified) = self.check(jwt, algorithm) {
            return verified;
        }
        let fetched = self.keys.read().map_or(Instant::now(), |keys| keys.1);
        if fetched.elapsed() < REFETCH_AFTER {
            return Err(Refusal::WrongToken);
        }
        let keys = match load(&self.http, &self.url).await {
            Ok(keys) => keys,
            Err(why) => {
                tracing::warn!(url = %self.url, "cannot fetch the token signing keys again: {why}");
                return Err(Refusal::Unverifiable(why));
            }
        };
        if let Ok(mut held) = self.keys.write() {
            *held = (keys, Instant::now());
        }
        self.check(jwt, algorithm)
            .unwrap_or(Err(Refusal::WrongToken))
    }

    /// `jwt`'s claims if a key held signed it; a refusal if the keys that fit did not; `None`
    /// when no key fits (it may be new).
    fn check(&self, jwt: &Jwt<'_>, algorithm: Algorithm) -> Option<Result<Value, Refusal>> {
        let keys = self.keys.read().ok()?;
        let mut fitting = keys
            .0
            .iter()
            .filter(|key| key.fits(jwt, algorithm))
            .peekable();
        fitting.peek()?;
        if !fitting.any(|key| key.signed(jwt, algorithm)) {
            return Some(Err(Refusal::WrongToken));
        }
        let claims = URL_SAFE_NO_PAD
            .decode(jwt.payload)
            .ok()
            .and_then(|payload| serde_json::from_slice::<Value>(&payload).ok())
            .filter(Value::is_object);
        Some(claims.ok_or(Refusal::WrongToken))
    }
}

/// The usable keys of the JWK Set at `url`.
async fn load(http: &reqwest::Client, url: &Url) -> Result<Vec<Key>, String> {
    let response = http
        .get(url.clone())
        .send()
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}: HTTP {}", response.status().as_u16()));
    }
    let document = read_json(response)
        .await
        .map_err(|why| format!("{url}: {why}"))?;
    let keys = keys_of(&document);
    if keys.is_empty() {
        return Err(format!("{url}: no signature key this server can use"));
    }
    Ok(keys)
}

#[cfg(test)]
pub(super) mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
    use serde_json::json;

    use super::*;

    /// A test-only RSA key (PKCS#1, generated for these tests with openssl, used nowhere else).
    const RSA_KEY: &[u8] = include_bytes!("../../tests/data/oauth-test-only-rsa-2048.der");

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A signer of test tokens, and its public JWK.
    pub(crate) enum Signer {
        Rsa(RsaKeyPair),
        Ec(EcdsaKeyPair),
        Ed(Ed25519KeyPair),
    }

    impl Signer {
        pub(crate) fn rsa() -> Signer {
            Signer::Rsa(RsaKeyPair::from_der(RSA_KEY).unwrap())
        }

        pub(crate) fn ec() -> Signer {
            let rng = SystemRandom::new();
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
            Signer::Ec(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap())
        }

        pub(crate) fn ed() -> Signer {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
            Signer::Ed(Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap())
        }

        pub(crate) fn jwk(&self, kid: &str) -> Value {
            match self {
                Signer::Rsa(pair) => {
                    let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public());
                    json!({"kty": "RSA", "kid": kid, "use": "sig", "n": b64(&public.n), "e": b64(&public.e)})
                }
                Signer::Ec(pair) => {
                    let point = pair.public_key().as_ref();
                    json!({"kty": "EC", "kid": kid, "crv": "P-256",
                           "x": b64(&point[1..33]), "y": b64(&point[33..])})
                }
                Signer::Ed(pair) => {
                    json!({"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(pair.public_key().as_ref())})
                }
            }
        }

        /// A JWT of `claims` with `kid`, signed with this key.
        pub(crate) fn token(&self, kid: &str, claims: &Value) -> String {
            let alg = match self {
                Signer::Rsa(_) => "RS256",
                Signer::Ec(_) => "ES256",
                Signer::Ed(_) => "EdDSA",
            };
            let header = json!({"alg": alg, "typ": "at+jwt", "kid": kid});
            let signed = format!(
                "{}.{}",
                b64(header.to_string().as_bytes()),
                b64(claims.to_string().as_bytes())
            );
            let rng = SystemRandom::new();
            let signature = match self {
                Signer::Rsa(pair) => {
                    let mut out = vec![0; pair.public().modulus_len()];
                    pair.sign(
                        &signature::RSA_PKCS1_SHA256,
                        &rng,
                        signed.as_bytes(),
                        &mut out,
                    )
                    .unwrap();
                    out
                }
                Signer::Ec(pair) => pair
                    .sign(&rng, signed.as_bytes())
                    .unwrap()
                    .as_ref()
                    .to_vec(),
                Signer::Ed(pair) => pair.sign(signed.as_bytes()).as_ref().to_vec(),
            };
            format!("{signed}.{}", b64(&signature))
        }
    }

    /// A key set holding `keys`, as if just fetched.
    pub(crate) fn held(keys: &[Value]) -> Jwks {
        Jwks {
            http: reqwest::Client::new(),
            url: Url::parse("http://127.0.0.1:9/jwks").unwrap(),
            keys: RwLock::new((keys_of(&json!({ "keys": keys })), Instant::now())),
        }
    }

    #[tokio::test]
    async fn signatures_of_the_servers_keys_are_accepted_and_nothing_else() {
        let claims = json!({"iss": "https://auth.example", "sub": "ana"});
        let (rsa, ec, ed) = (Signer::rsa(), Signer::ec(), Signer::ed());
        let jwks = held(&[rsa.jwk("r1"), ec.jwk("e1"), ed.jwk("d1")]);
        for (signer, kid) in [(&rsa, "r1"), (&ec, "e1"), (&ed, "d1")] {
            let token = signer.token(kid, &claims);
            let jwt = Jwt::parse(&token).unwrap();
            assert_eq!(jwks.verify(&jwt).await.unwrap(), claims, "{kid}");
        }
        // Another key's signature under a known kid, a changed payload, a kid the set does
        // not have (fetched again only after a minute), `none` and HMAC: refused.
        let other = Signer::ec();
        let forged = other.token("e1", &claims);
        let token = ec.token("e1", &claims);
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let (header, _) = signed.split_once('.').unwrap();
        let altered = format!(
            "{header}.{}.{signature}",
            b64(json!({"iss": "https://auth.example", "sub": "root"})
                .to_string()
                .as_bytes())
        );
        let unknown = ec.token("e9", &claims);
        let none = format!(
            "{}.{}.",
            b64(br#"{"alg":"none"}"#),
            b64(claims.to_string().as_bytes())
        );
        let hmac = format!(
            "{}.{}.{}",
            b64(br#"{"alg":"HS256","kid":"r1"}"#),
            b64(claims.to_string().as_bytes()),
            b64(b"mac")
        );
        for token in [forged, altered, unknown, none, hmac] {
            let jwt = Jwt::parse(&token).unwrap();
            assert_eq!(jwks.verify(&jwt).await, Err(Refusal::WrongToken), "{token}");
        }
        // A key of another curve or an `alg` pinned otherwise does not fit.
        let pinned = held(&[json!({"kty": "RSA", "kid": "r1", "alg": "PS256",
            "n": rsa.jwk("r1")["n"], "e": rsa.jwk("r1")["e"]})]);
        let token = rsa.token("r1", &claims);
        let jwt = Jwt::parse(&token).unwrap();
        assert_eq!(pinned.verify(&jwt).await, Err(Refusal::WrongToken));
        // Opaque tokens are not JWTs.
        assert!(Jwt::parse("at-1").is_none());
        assert!(Jwt::parse("a.b.c").is_none());
    }

    #[test]
    fn only_signature_keys_of_known_kinds_are_kept() {
        let rsa = Signer::rsa().jwk("r1");
        let mut encryption = rsa.clone();
        encryption["use"] = json!("enc");
        let keys = keys_of(&json!({"keys": [
            rsa, encryption, {"kty": "oct", "k": "c2VjcmV0"}, {"kty": "EC", "crv": "P-256"}, 7
        ]}));
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("r1"));
        let many: Vec<Value> = (0..100).map(|n| Signer::ed().jwk(&n.to_string())).collect();
        assert_eq!(keys_of(&json!({ "keys": many })).len(), MAX_KEYS);
    }
}

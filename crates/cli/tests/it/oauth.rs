//! The gateway's HTTP side as an OAuth 2.1 resource server (`--oauth-issuer`): what an MCP
//! client finds when it comes without a token, and the official Python SDK's own
//! client-credentials flow, and the TypeScript SDK's, against an authorization server the test
//! runs on loopback, which issues opaque tokens (introspected) and JWTs (checked against its
//! published key) by turns.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use wayline_executor::testing::{MockServer, RecordedRequest, Reply};

use super::{code, path, script_json, wayline};
use crate::mcp::{everything, listening, python_mcp, stop};

/// The client the SDK gets its token as, and the one the gateway introspects as.
const AGENT: (&str, &str) = ("agent", "agent-secret");
const GATEWAY: (&str, &str) = ("wayline", "introspect-secret");

/// What the authorization server issued and was asked.
#[derive(Default)]
struct Issued {
    /// The resource tokens are for (the gateway's URL, once it listens).
    resource: String,
    /// Access token → the resource and scope it was issued for.
    tokens: HashMap<String, (String, String)>,
    /// The JWTs among them.
    jwts: Vec<String>,
    /// Introspections asked, by token.
    introspected: Vec<String>,
}

fn basic((id, secret): (&str, &str)) -> String {
    let pair = format!("{id}:{secret}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

fn form(request: &RecordedRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(request.text().as_bytes())
        .into_owned()
        .collect()
}

/// An authorization server: RFC 8414 metadata, client credentials at `/token` (for `AGENT`;
/// every other token an ES256 JWT signed with the key at `/jwks`), introspection at
/// `/introspect` (for `GATEWAY`). Besides what it issued it knows `narrow` (no scope) and
/// `elsewhere` (issued for another resource).
fn authorization_server(
    runtime: &tokio::runtime::Runtime,
    issued: Arc<Mutex<Issued>>,
) -> MockServer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = key.public_key().as_ref().to_vec();
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
                     "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])});
    let sign = move |claims: &Value| {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"ES256","typ":"at+jwt","kid":"k1"}"#);
        let signed = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = key.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    };
    runtime
        .block_on(MockServer::start(move |request| {
            let base = format!("http://{}", request.header("host").unwrap_or_default());
            let mut issued = issued.lock().unwrap();
            match (request.method.as_str(), request.path()) {
                ("GET", "/.well-known/oauth-authorization-server") => Reply::json(
                    200,
                    json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "response_types_supported": ["code"],
                        "token_endpoint": format!("{base}/token"),
                        "introspection_endpoint": format!("{base}/introspect"),
                        "jwks_uri": format!("{base}/jwks"),
                        "grant_types_supported": ["client_credentials"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                    }),
                ),
                ("GET", "/jwks") => Reply::json(200, json!({"keys": [jwk]})),
                ("POST", "/token") if request.header("authorization") == Some(&basic(AGENT)) => {
                    let asked = form(request);
                    let resource = asked.get("resource").cloned().unwrap_or_default();
                    let scope = asked.get("scope").cloned().unwrap_or_default();
                    let n = issued.tokens.len() + 1;
                    let token = if n.is_multiple_of(2) {
                        let jwt = sign(&json!({"iss": base, "aud": resource, "scope": scope,
                            "sub": "ana", "client_id": AGENT.0, "exp": 4_000_000_000u64, "jti": n}));
                        issued.jwts.push(jwt.clone());
                        jwt
                    } else {
                        format!("at-{n}")
                    };
                    issued
                        .tokens
                        .insert(token.clone(), (resource, scope.clone()));
                    Reply::json(
                        200,
                        json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": scope}),
                    )
                }
                ("POST", "/introspect")
                    if request.header("authorization") == Some(&basic(GATEWAY)) =>
                {
                    let token = form(request).remove("token").unwrap_or_default();
                    issued.introspected.push(token.clone());
                    let resource = issued.resource.clone();
                    let (audience, scope) = match token.as_str() {
                        "narrow" => (resource, String::new()),
                        "elsewhere" => ("https://elsewhere.example/mcp".to_owned(), "mcp".into()),
                        _ => match issued.tokens.get(&token) {
                            Some(found) => found.clone(),
                            None => return Reply::json(200, json!({"active": false})),
                        },
                    };
                    Reply::json(
                        200,
                        json!({"active": true, "aud": audience, "scope": scope, "sub": "ana",
                               "client_id": AGENT.0, "exp": 4_000_000_000u64}),
                    )
                }
                ("POST", _) => Reply::json(401, json!({"error": "invalid_client"})),
                _ => Reply::status(404),
            }
        }))
        .unwrap()
}

/// The gateway in front of server-everything, taking tokens from `issuer`, introspecting with
/// `secret`; data in `data`.
fn oauth_gateway(
    server: &Path,
    issuer: &str,
    secret: &str,
    data: &Path,
) -> (std::process::Child, String) {
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_wayline"));
    gateway
        .args(["mcp", "gateway", "--prefix", "--http", "127.0.0.1:0"])
        .arg("--upstream")
        .arg(format!("everything={} stdio", server.display()))
        .args(["--oauth-issuer", issuer, "--oauth-client-id", GATEWAY.0])
        .args(["--oauth-scope", "mcp", "--data-dir", path(data)])
        .env("WAYLINE_OAUTH_CLIENT_SECRET", secret);
    listening(gateway)
}

/// Runs tests/mcp_oauth.py against `url` on revision `mode` (probing with `probes` first,
/// then the SDK's flow when `sdk`) — or, given the TypeScript client's package, the SDK flow
/// of tests/mcp_oauth.mjs; answers what it saw.
fn client(
    url: &str,
    issuer: &str,
    mode: &str,
    typescript: Option<&Path>,
    probes: &[&str],
    sdk: bool,
) -> Value {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut client = match typescript {
        Some(package) => {
            let mut node = Command::new("node");
            node.arg(tests.join("mcp_oauth.mjs"))
                .env("MCP_TS_CLIENT", package);
            node
        }
        None => {
            let mut python = Command::new("python3");
            python
                .arg(tests.join("mcp_oauth.py"))
                .env("PROBES", serde_json::to_string(probes).unwrap())
                .env("SDK", if sdk { "1" } else { "0" });
            python
        }
    };
    let out = client
        .arg(url)
        .env("ISSUER", issuer)
        .env("CLIENT_ID", AGENT.0)
        .env("CLIENT_SECRET", AGENT.1)
        .env("MODE", mode)
        .env("TOOL", "everything__echo")
        .env("ARGUMENTS", r#"{"message": "with a token"}"#)
        .output()
        .unwrap();
    script_json(&out)
}

#[test]
fn the_gateway_takes_tokens_an_authorization_server_vouches_for() {
    let Some(server) = everything() else { return };
    if !python_mcp() {
        return;
    }
    let runtime = crate::server_runtime();
    let issued = Arc::new(Mutex::new(Issued::default()));
    let authority = authorization_server(&runtime, Arc::clone(&issued));
    let issuer = authority.url("");
    let data = tempfile::tempdir().unwrap();

    // Flags that cannot work are refused before anything listens.
    let without_secret = wayline(&[
        "mcp",
        "gateway",
        "--http",
        "127.0.0.1:0",
        "--upstream",
        "x=y",
        "--oauth-issuer",
        &issuer,
        "--oauth-client-id",
        "wayline",
    ]);
    assert_eq!(code(&without_secret), 2);
    assert!(
        String::from_utf8_lossy(&without_secret.stderr).contains("WAYLINE_OAUTH_CLIENT_SECRET"),
        "{}",
        String::from_utf8_lossy(&without_secret.stderr)
    );

    let (gateway, url) = oauth_gateway(&server, &issuer, GATEWAY.1, data.path());
    issued.lock().unwrap().resource.clone_from(&url);
    let metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let typescript = wayline_testkit::mcp_ts_client("the TypeScript client's OAuth flow");
    let mut runs = 0;
    for mode in ["legacy", "2026-07-28"] {
        if let Some(package) = &typescript {
            let seen = client(&url, &issuer, mode, Some(package), &[], true);
            sdk_got_in(&seen, mode);
            runs += 1;
        }
        let probes = ["unknown", "narrow", "elsewhere"];
        let seen = client(&url, &issuer, mode, None, &probes, true);
        sdk_got_in(&seen, mode);
        runs += 1;
        // Without a token: a 401 whose challenge names the metadata and the scope needed.
        assert_eq!(seen["without_token"]["status"], 401, "{seen}");
        assert_eq!(
            seen["without_token"]["challenge"],
            format!(r#"Bearer scope="mcp", resource_metadata="{metadata_url}""#)
        );
        // The metadata names this resource and the authorization server (RFC 9728).
        assert_eq!(
            seen["metadata"],
            json!({
                "resource": url,
                "authorization_servers": [issuer],
                "scopes_supported": ["mcp"],
                "bearer_methods_supported": ["header"],
                "resource_name": "wayline MCP server",
            })
        );
        // A token it does not vouch for, or one issued for another resource: 401; one
        // without the scope: 403 with the scope to ask for (a client steps up).
        let probes = &seen["probes"];
        for token in ["unknown", "elsewhere"] {
            assert_eq!(probes[token]["status"], 401, "{token}: {seen}");
            let challenge = probes[token]["challenge"].as_str().unwrap();
            assert!(
                challenge.starts_with(r#"Bearer error="invalid_token""#),
                "{challenge}"
            );
        }
        assert_eq!(probes["narrow"]["status"], 403, "{seen}");
        assert!(
            probes["narrow"]["challenge"]
                .as_str()
                .unwrap()
                .starts_with(r#"Bearer error="insufficient_scope", scope="mcp""#),
            "{seen}"
        );
    }
    // On the newest revision over HTTP no request belongs to a connection: the guard session
    // is the token's subject and client's, not a name the client chose.
    let sessions: Vec<String> = std::fs::read_dir(data.path().join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        sessions
            .iter()
            .any(|name| name.starts_with("token-ana-agent-")),
        "{sessions:?}"
    );
    stop(gateway);
    {
        let issued = issued.lock().unwrap();
        // Each run got its token for this resource, with the challenge's scope ...
        assert_eq!(issued.tokens.len(), runs);
        for (resource, scope) in issued.tokens.values() {
            assert_eq!((resource.as_str(), scope.as_str()), (url.as_str(), "mcp"));
        }
        // ... and each opaque token was introspected once, however many requests carried
        // it; the JWTs never (the gateway checked them against the published key).
        assert_eq!(issued.jwts.len(), runs / 2);
        for token in issued.tokens.keys() {
            let asked = issued.introspected.iter().filter(|t| *t == token).count();
            let expected = usize::from(!issued.jwts.contains(token));
            assert_eq!(asked, expected, "{token}: {:?}", issued.introspected);
        }
    }

    // When the authorization server refuses the gateway's own credentials, a request is
    // answered 503 (not 401: the client's token may be fine).
    let (gateway, refusing) = oauth_gateway(&server, &issuer, "not-the-secret", data.path());
    let seen = client(&refusing, &issuer, "legacy", None, &["at-1"], false);
    assert_eq!(seen["probes"]["at-1"]["status"], 503, "{seen}");
    stop(gateway);

    // Without a client to introspect as, JWTs signed with the issuer's key are all it takes
    // (the gateway listens where the first did: the JWT was issued for that resource).
    let jwt = issued.lock().unwrap().jwts[0].clone();
    let address = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut only_jwts = Command::new(env!("CARGO_BIN_EXE_wayline"));
    only_jwts
        .args(["mcp", "gateway", "--prefix", "--http", address])
        .arg("--upstream")
        .arg(format!("everything={} stdio", server.display()))
        .args(["--oauth-issuer", &issuer, "--data-dir", path(data.path())]);
    let (gateway, at) = listening(only_jwts);
    assert_eq!(at, url);
    let seen = client(&at, &issuer, "legacy", None, &[&jwt, "at-1"], false);
    stop(gateway);
    assert_eq!(seen["probes"][&jwt]["status"], 200, "{seen}");
    assert_eq!(seen["probes"]["at-1"]["status"], 401, "{seen}");
}

/// The SDK found its way in by itself (a token for this resource, with the scope the
/// challenge named), on revision `mode`, and its calls went through.
fn sdk_got_in(seen: &Value, mode: &str) {
    let expected = if mode == "legacy" { "2025-11-25" } else { mode };
    assert_eq!(seen["protocol"], expected, "{seen}");
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("everything__echo")),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["text"][0], "Echo: with a token", "{seen}");
    assert_eq!(seen["again"][0], "Echo: with a token", "{seen}");
}

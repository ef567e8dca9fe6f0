//! The HTTP transport's TLS and proxy settings against servers made here: a private CA
//! trusted or not, certificates not checked at all, a client certificate the server requires,
//! and a proxy every request goes through.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use wayline_core::{HttpRequest, Transport};
use wayline_executor::ReqwestTransport;
use wayline_executor::testing::{MockServer, Reply};

/// A private CA, a server certificate it signed for 127.0.0.1 and `localhost`, and a client
/// certificate (with its key) it signed.
struct Pki {
    ca_pem: String,
    server_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    server_key: rustls::pki_types::PrivateKeyDer<'static>,
    client_pem: String,
    ca_der: rustls::pki_types::CertificateDer<'static>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "wayline test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    client_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "wayline client");
    let client = client_params.signed_by(&client_key, &issuer).unwrap();
    Pki {
        ca_pem: ca.pem(),
        ca_der: ca.der().clone(),
        server_chain: vec![server.der().clone()],
        server_key: rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
        client_pem: format!("{}{}", client.pem(), client_key.serialize_pem()),
    }
}

/// An HTTPS server answering `{"tls": true}` to every request, requiring a client certificate
/// signed by the CA when `client_auth` is set.
async fn https_server(pki: &Pki, client_auth: bool) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca_der.clone()).unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(pki.server_chain.clone(), pki.server_key.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut seen = Vec::new();
                let mut buffer = [0u8; 1024];
                while !seen.windows(4).any(|window| window == b"\r\n\r\n") {
                    match tls.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => seen.extend_from_slice(&buffer[..read]),
                    }
                }
                let body = r#"{"tls": true}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    address
}

async fn get(transport: &ReqwestTransport, url: String) -> Result<serde_json::Value, String> {
    transport
        .send(HttpRequest::new("GET", url))
        .await
        .map(|response| serde_json::from_slice(&response.body).unwrap())
        .map_err(|error| error.to_string())
}

#[tokio::test]
async fn a_private_ca_is_trusted_only_when_given() {
    let pki = pki();
    let address = https_server(&pki, false).await;
    let url = format!("https://127.0.0.1:{}/", address.port());
    let default = ReqwestTransport::new().unwrap();
    let error = get(&default, url.clone()).await.unwrap_err();
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    let trusting = ReqwestTransport::builder()
        .root_certificates_pem(pki.ca_pem.clone())
        .build()
        .unwrap();
    assert_eq!(
        get(&trusting, url.clone()).await.unwrap(),
        json!({"tls": true})
    );
    let careless = ReqwestTransport::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    assert_eq!(get(&careless, url).await.unwrap(), json!({"tls": true}));
}

#[tokio::test]
async fn a_client_certificate_is_presented_when_the_server_asks() {
    let pki = pki();
    let address = https_server(&pki, true).await;
    let url = format!("https://127.0.0.1:{}/", address.port());
    let anonymous = ReqwestTransport::builder()
        .root_certificates_pem(pki.ca_pem.clone())
        .build()
        .unwrap();
    assert!(get(&anonymous, url.clone()).await.is_err());
    let identified = ReqwestTransport::builder()
        .root_certificates_pem(pki.ca_pem.clone())
        .client_identity_pem(pki.client_pem.clone())
        .build()
        .unwrap();
    assert_eq!(get(&identified, url).await.unwrap(), json!({"tls": true}));
}

#[tokio::test]
async fn what_cannot_be_used_is_refused_when_built() {
    let not_pem = ReqwestTransport::builder()
        .root_certificates_pem("not a certificate")
        .build()
        .unwrap_err();
    assert!(
        not_pem.to_string().contains("no PEM certificate"),
        "{not_pem}"
    );
    let no_key = ReqwestTransport::builder()
        .client_identity_pem(pki().ca_pem)
        .build()
        .unwrap_err();
    assert!(no_key.to_string().contains("private key"), "{no_key}");
    let builder = ReqwestTransport::builder().proxy("http://user:hunter2@proxy.invalid:3128");
    assert!(!format!("{builder:?}").contains("hunter2"));
}

#[tokio::test]
async fn requests_go_through_the_proxy() {
    // A forward proxy sees the absolute URL of each request; this one answers them itself.
    let proxy = MockServer::start(|request| {
        Reply::json(200, json!({"via": "proxy", "host": request.header("host")}))
    })
    .await
    .unwrap();
    let transport = ReqwestTransport::builder()
        .proxy(proxy.url(""))
        .build()
        .unwrap();
    let answer = get(&transport, "http://api.example.invalid/users".into())
        .await
        .unwrap();
    assert_eq!(
        answer,
        json!({"via": "proxy", "host": "api.example.invalid"})
    );
    assert_eq!(
        proxy.requests()[0].path(),
        "http://api.example.invalid/users",
        "the absolute form a proxy is sent"
    );
}

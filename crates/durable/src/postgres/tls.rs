//! TLS to PostgreSQL, as libpq's `sslmode` describes it: `disable` (never), `allow` and
//! `prefer` (the default: encrypted when the server offers it), `require` (always encrypted),
//! `verify-ca` (and the server's certificate signed by a trusted authority) and `verify-full`
//! (and issued for the host named). As in libpq, only the `verify-` modes check the
//! certificate. The authorities are those of `sslrootcert=FILE` (PEM), else the public ones
//! (`webpki-roots`; `sslrootcert=system` says so too).
//!
//! The driver knows only `disable`, `prefer` and `require`, and no `sslrootcert`, so the URL
//! handed to it has them rewritten; the check itself is done here, by rustls (ring).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The URL the driver takes, and the connector that does what its `sslmode` asked.
pub(crate) struct Settings {
    pub(crate) url: String,
    pub(crate) connector: MakeRustlsConnect,
}

/// How much of the server's certificate is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing: encryption against eavesdroppers only (libpq's `prefer` and `require`).
    Nothing,
    /// Its chain up to a trusted authority (`verify-ca`).
    Authority,
    /// Its chain and the host name (`verify-full`).
    Everything,
}

/// The settings `url` asks for; `Err` says what in it is wrong, without repeating it.
pub(crate) fn settings(url: &str) -> Result<Settings, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut mode = "prefer".to_owned();
    let mut root_file = None;
    let mut kept = Vec::new();
    for parameter in query.split('&').filter(|parameter| !parameter.is_empty()) {
        let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        match key {
            "sslmode" => mode = decode(value),
            "sslrootcert" => root_file = Some(decode(value)),
            _ => kept.push(parameter.to_owned()),
        }
    }
    let (driver_mode, check) = match mode.as_str() {
        "disable" => ("disable", Check::Nothing),
        "allow" | "prefer" => ("prefer", Check::Nothing),
        "require" => ("require", Check::Nothing),
        "verify-ca" => ("require", Check::Authority),
        "verify-full" => ("require", Check::Everything),
        other => {
            return Err(format!(
                "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ));
        }
    };
    kept.push(format!("sslmode={driver_mode}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Unchecked(Arc::clone(&provider))),
        Check::Authority | Check::Everything => {
            let roots = roots(root_file.as_deref())?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .map_err(|error| format!("cannot check server certificates: {error}"))?;
            Arc::new(Checked {
                webpki,
                names: check == Check::Everything,
            })
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("cannot set up TLS: {error}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Settings {
        url: format!("{base}?{}", kept.join("&")),
        connector: MakeRustlsConnect::new(config),
    })
}

/// The authorities to trust: the PEM file named, or the public ones.
fn roots(file: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match file {
        None | Some("system") => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|error| format!("sslrootcert {path}: {error}"))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| format!("sslrootcert {path}: {error}"))?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {path}: no certificate in it; give the PEM file of the authority that signed the server's certificate"
                ));
            }
        }
    }
    Ok(roots)
}

/// `%XX` escapes decoded (a path in a URL).
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// Accepts any certificate, checking only that the handshake is signed by it: libpq's
/// `prefer` and `require`, which encrypt without authenticating the server.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The WebPKI check, with or without the host name (`verify-full` or `verify-ca`).
#[derive(Debug)]
struct Checked {
    webpki: Arc<WebPkiServerVerifier>,
    names: bool,
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki
            .verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki
            .verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_modes_become_the_drivers_and_the_rest_of_the_url_is_kept() {
        for (url, rewritten) in [
            ("postgres://h/d", "postgres://h/d?sslmode=prefer"),
            (
                "postgres://h/d?sslmode=verify-full&application_name=x",
                "postgres://h/d?application_name=x&sslmode=require",
            ),
            (
                "postgres://h/d?sslmode=disable",
                "postgres://h/d?sslmode=disable",
            ),
            (
                "postgres://h/d?sslmode=verify-ca",
                "postgres://h/d?sslmode=require",
            ),
        ] {
            assert_eq!(
                settings(url).ok().map(|s| s.url).as_deref(),
                Some(rewritten),
                "{url}"
            );
        }
        let bad = settings("postgres://h/d?sslmode=always").err().unwrap();
        assert!(bad.contains("verify-full"), "{bad}");
        let missing = settings("postgres://h/d?sslmode=verify-full&sslrootcert=%2Fnone%2Fca.pem")
            .err()
            .unwrap();
        assert!(missing.contains("/none/ca.pem"), "{missing}");
    }
}

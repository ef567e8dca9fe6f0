//! TLS to PostgreSQL, as libpq's `sslmode` describes it: `disable` (never), `allow` and
//! `prefer` (the default: encrypted when the server offers it), `require` (always encrypted),
//! `verify-ca` (and the server's certificate signed by a trusted authority) and `verify-full`
//! (and issued for the host named). As in libpq, only the `verify-` modes check the
//! certificate. The authorities are those of `sslrootcert=FILE` (PEM), else the public ones
//! (`webpki-roots`; `sslrootcert=system` says so too). `sslcert=FILE` and `sslkey=FILE` (PEM;
//! the key not encrypted) present a client certificate, for servers that ask for one
//! (PostgreSQL's `cert` method, managed services that require them); unlike libpq, nothing is
//! read from `~/.postgresql` unless named.
//!
//! The driver knows only `disable`, `prefer` and `require`, and no `sslrootcert`, so the URL
//! handed to it has them rewritten; the check itself is done here, by rustls (ring).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, InconsistentKeys, RootCertStore,
    SignatureScheme,
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
    let (base, query) = super::split_query(url);
    let mut mode = "prefer".to_owned();
    let mut root_file = None;
    let (mut cert_file, mut key_file) = (None, None);
    let mut kept = Vec::new();
    for parameter in query.split('&').filter(|parameter| !parameter.is_empty()) {
        let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        match key {
            "sslmode" => mode = decode(value),
            "sslrootcert" => root_file = Some(decode(value)),
            "sslcert" => cert_file = Some(decode(value)),
            "sslkey" => key_file = Some(decode(value)),
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
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("cannot set up TLS: {error}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match client_identity(cert_file.as_deref(), key_file.as_deref(), &provider)? {
        Some(identity) => builder.with_client_cert_resolver(Arc::new(identity)),
        None => builder.with_no_client_auth(),
    };
    Ok(Settings {
        url: format!("{base}?{}", kept.join("&")),
        connector: MakeRustlsConnect::new(config),
    })
}

/// The client certificate and key of `sslcert` and `sslkey`, when given (both or neither).
/// A key that is not the certificate's is refused here when that can be checked; it cannot for
/// a certificate webpki does not read (X.509 version 1, which `openssl x509 -req` makes
/// without extensions), which is presented as it is: the server reads it.
fn client_identity(
    cert: Option<&str>,
    key: Option<&str>,
    provider: &CryptoProvider,
) -> Result<Option<SingleCertAndKey>, String> {
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        (Some(_), None) => {
            return Err("sslcert needs sslkey: name the client certificate's private key".into());
        }
        (None, Some(_)) => {
            return Err("sslkey needs sslcert: name the client certificate too".into());
        }
    };
    let chain = certificates("sslcert", cert)?;
    if chain.is_empty() {
        return Err(format!(
            "sslcert {cert}: no certificate in it; give the client certificate as PEM"
        ));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|error| {
        format!(
            "sslkey {key}: no private key read ({error}); give it as PEM, not encrypted (PKCS#8, PKCS#1 or SEC1)"
        )
    })?;
    let signing = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|error| format!("sslkey {key}: {error}"))?;
    let identity = CertifiedKey::new(chain, signing);
    if let Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) =
        identity.keys_match()
    {
        return Err(format!(
            "sslkey {key} is not the private key of the certificate in sslcert {cert}"
        ));
    }
    Ok(Some(SingleCertAndKey::from(identity)))
}

/// The authorities to trust: the PEM file named, or the public ones.
fn roots(file: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match file {
        None | Some("system") => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let (added, _) = roots.add_parsable_certificates(certificates("sslrootcert", path)?);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {path}: no certificate in it; give the PEM file of the authority that signed the server's certificate"
                ));
            }
        }
    }
    Ok(roots)
}

/// The certificates of the PEM file `path`, which the URL's parameter `parameter` names (for
/// the message when it cannot be read).
fn certificates(parameter: &str, path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| format!("{parameter} {path}: {error}"))
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
        unless_unreadable(verify_tls12_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        unless_unreadable(verify_tls13_signature(
            message,
            certificate,
            signature,
            &self.0.signature_verification_algorithms,
        ))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A handshake signature that could not be checked because webpki does not read the
/// certificate (X.509 version 1, which `openssl x509 -req` makes without extensions) passes,
/// in the modes that do not authenticate the server anyway: whoever sits in the middle could
/// present a certificate of its own, and libpq accepts such a server. A bad signature by a
/// certificate that was read still fails.
fn unless_unreadable(
    checked: Result<HandshakeSignatureValid, rustls::Error>,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    match checked {
        Err(rustls::Error::InvalidCertificate(CertificateError::BadSignature)) => checked,
        Err(rustls::Error::InvalidCertificate(_)) => Ok(HandshakeSignatureValid::assertion()),
        other => other,
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
        let stripped = settings("postgres://h/d?sslcert=%2Fnone%2Fc.pem&sslkey=%2Fnone%2Fk.pem")
            .err()
            .unwrap();
        assert!(stripped.starts_with("sslcert /none/c.pem"), "{stripped}");
    }

    #[test]
    fn unchecked_modes_pass_signatures_by_certificates_webpki_cannot_read() {
        use rustls::OtherError;

        let unreadable = Err(rustls::Error::InvalidCertificate(CertificateError::Other(
            OtherError(Arc::new(std::io::Error::other("UnsupportedCertVersion"))),
        )));
        assert!(unless_unreadable(unreadable).is_ok());
        let forged = Err(rustls::Error::InvalidCertificate(
            CertificateError::BadSignature,
        ));
        assert!(unless_unreadable(forged).is_err());
        let broken = Err(rustls::Error::DecryptError);
        assert!(unless_unreadable(broken).is_err());
    }
}

//! The SUT's credentials applied to every request: a header (bearer, basic, API key) or the
//! digest challenge-response ([`wayline_executor::DigestTransport`]). The values live in the
//! transport, marked sensitive, so they never reach a run record, a session or the output.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use wayline_core::Secret;
use wayline_core::transport::{Header, HttpRequest, HttpResponse, Transport, TransportError};
use wayline_executor::DigestTransport;

use crate::sut::{AuthKind, Credentials};

/// Adds one sensitive header to every request.
struct HeaderTransport {
    inner: Arc<dyn Transport>,
    name: String,
    value: Secret,
}

impl fmt::Debug for HeaderTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeaderTransport")
            .field("inner", &self.inner)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Transport for HeaderTransport {
    async fn send(&self, mut request: HttpRequest) -> Result<HttpResponse, TransportError> {
        request
            .headers
            .retain(|header| !header.name.eq_ignore_ascii_case(&self.name));
        request
            .headers
            .push(Header::sensitive(self.name.clone(), self.value.expose()));
        self.inner.send(request).await
    }
}

/// `inner` with `credentials` applied.
pub fn sut_transport(credentials: &Credentials, inner: Arc<dyn Transport>) -> Arc<dyn Transport> {
    let header = |name: &str, value: String| -> Arc<dyn Transport> {
        Arc::new(HeaderTransport {
            inner: Arc::clone(&inner),
            name: name.to_owned(),
            value: Secret::new(value),
        })
    };
    match credentials {
        Credentials::None => inner,
        Credentials::UserPassword {
            kind: AuthKind::Digest,
            username,
            password,
        } => Arc::new(DigestTransport::new(
            Arc::clone(&inner),
            username.clone(),
            password.clone(),
        )),
        Credentials::UserPassword {
            username, password, ..
        } => {
            let pair = format!("{}:{}", username.expose(), password.expose());
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            header("Authorization", format!("Basic {encoded}"))
        }
        Credentials::Bearer(token) => header("Authorization", format!("Bearer {}", token.expose())),
        Credentials::ApiKey { header: name, key } => header(name, key.expose().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Remembers the last request.
    #[derive(Debug, Default)]
    struct Last(Mutex<Option<HttpRequest>>);

    #[async_trait::async_trait]
    impl Transport for Last {
        async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
            *self.0.lock().unwrap() = Some(request);
            Ok(HttpResponse::new(200, "{}"))
        }
    }

    #[tokio::test]
    async fn each_auth_type_is_applied_and_marked_sensitive() {
        let cases = [
            (
                Credentials::Bearer(Secret::new("t0k")),
                "authorization",
                "Bearer t0k",
            ),
            (
                Credentials::UserPassword {
                    kind: AuthKind::Basic,
                    username: Secret::new("u"),
                    password: Secret::new("p"),
                },
                "authorization",
                "Basic dTpw",
            ),
            (
                Credentials::ApiKey {
                    header: "X-Key".into(),
                    key: Secret::new("k3y"),
                },
                "x-key",
                "k3y",
            ),
        ];
        for (credentials, header, value) in cases {
            let last = Arc::new(Last::default());
            let transport = sut_transport(&credentials, last.clone());
            transport
                .send(HttpRequest::new("GET", "http://127.0.0.1:1/a"))
                .await
                .unwrap();
            let sent = last.0.lock().unwrap().take().unwrap();
            assert_eq!(sent.header(header), Some(value));
            assert!(
                !format!("{sent:?}{transport:?}").contains(value),
                "hidden in Debug"
            );
        }
        let digest = sut_transport(
            &Credentials::UserPassword {
                kind: AuthKind::Digest,
                username: Secret::new("u"),
                password: Secret::new("p"),
            },
            Arc::new(Last::default()),
        );
        assert!(format!("{digest:?}").starts_with("DigestTransport"));
    }
}

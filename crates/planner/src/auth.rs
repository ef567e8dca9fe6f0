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

//! The transport of an engine that has none: every request fails with the reason.

use wayline_core::{HttpRequest, HttpResponse, Transport, TransportError};

/// A transport that fails every request with the same explanation (used when no real transport
/// is available).
#[derive(Debug)]
pub(crate) struct Unavailable(pub(crate) String);

#[async_trait::async_trait]
impl Transport for Unavailable {
    async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, TransportError> {
        Err(TransportError::new(
            wayline_core::TransportErrorKind::Other,
            self.0.clone(),
        ))
    }
}

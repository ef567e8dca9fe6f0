//! The `Location` header of the latest answer. A create that answers `201` with `Location:
//! /posts/17` and no id in its body still says which post it made; the engine keeps bodies,
//! not headers, so the explorer's transport keeps this one header aside.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use wayline_core::transport::{HttpRequest, HttpResponse, Transport, TransportError};

/// A transport that remembers the `Location` of the latest response (the explorer runs one
/// call at a time).
#[derive(Debug)]
pub(crate) struct LocationTransport {
    inner: Arc<dyn Transport>,
    latest: Mutex<Option<String>>,
}

impl LocationTransport {
    pub(crate) fn new(inner: Arc<dyn Transport>) -> Self {
        LocationTransport {
            inner,
            latest: Mutex::new(None),
        }
    }

    /// The `Location` of the latest response, if it had one; forgotten once taken.
    pub(crate) fn take(&self) -> Option<String> {
        self.latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

#[async_trait::async_trait]
impl Transport for LocationTransport {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let response = self.inner.send(request).await;
        *self
            .latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = response
            .as_ref()
            .ok()
            .and_then(|response| response.header("location"))
            .map(str::to_owned);
        response
    }
}

/// The id a `Location` names: its last path segment (`/posts/17?x=1` → `17`), a number when
/// it is one.
pub(crate) fn id_of(location: &str) -> Option<Value> {
    let path = location.split(['?', '#']).next().unwrap_or(location);
    // An absolute URL's path starts after its host.
    let path = match path.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, path)| path),
        None => path,
    };
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    if last.is_empty() || last.contains(':') {
        return None;
    }
    Some(
        last.parse::<u64>()
            .map_or_else(|_| Value::from(last), Value::from),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_segment_is_the_id() {
        assert_eq!(id_of("/posts/17"), Some(Value::from(17)));
        assert_eq!(
            id_of("https://api.test/v1/posts/ab-12/?view=full"),
            Some(Value::from("ab-12"))
        );
        assert_eq!(id_of(""), None);
        assert_eq!(
            id_of("https://api.test"),
            None,
            "a bare origin names nothing"
        );
    }
}

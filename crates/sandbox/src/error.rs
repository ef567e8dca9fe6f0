//! The crate's errors: [`SandboxError`], an error with Bay's codes, answered by every sandbox
//! operation so a caller handles a local sandbox and a Bay deployment alike; and [`Error`], for
//! setting a sandbox up (a profiles file, the isolation asked for), which happens before any
//! Bay operation.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Errors of `wayline-sandbox` in setting a sandbox up. Sandbox operations answer
/// [`SandboxError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the document it should be (with the line and a suggestion).
    #[error(transparent)]
    Document(#[from] Box<wayline_core::document::DocumentError>),
    /// A profiles file that parses but cannot be used.
    #[error("{origin}: {message}")]
    Profiles {
        /// The file.
        origin: String,
        /// Which profile, what is wrong, and what to write instead.
        message: String,
    },
    /// The isolation asked for cannot run on this machine.
    #[error("{message}")]
    Isolation {
        /// Why, and what to install or choose instead.
        message: String,
    },
}

/// Bay's error codes (and the HTTP status Bay answers each with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// 404: an unknown or deleted sandbox, cargo or execution.
    NotFound,
    /// 401: no or a wrong token.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 429.
    QuotaExceeded,
    /// 400: an unknown profile, a non-positive `extend_by`, a malformed request.
    ValidationError,
    /// 400: a path that is empty, holds a NUL byte, is absolute or climbs out of the workspace.
    InvalidPath,
    /// 400: the sandbox's profile lacks the capability.
    CapabilityNotSupported,
    /// 409: an idempotency key reused with another request, or a malformed key.
    Conflict,
    /// 409: `extend_ttl` after the sandbox expired.
    SandboxExpired,
    /// 409: `extend_ttl` on a sandbox without expiry.
    SandboxTtlInfinite,
    /// 404: a download of a missing file.
    FileNotFound,
    /// 503: the runtime is starting; retry after `details.retry_after_ms`.
    SessionNotReady,
    /// 502: the runtime failed.
    ShipError,
    /// 504: the runtime did not answer in time.
    Timeout,
    /// 500: anything else.
    InternalError,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 15] = [
        ErrorCode::NotFound,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::QuotaExceeded,
        ErrorCode::ValidationError,
        ErrorCode::InvalidPath,
        ErrorCode::CapabilityNotSupported,
        ErrorCode::Conflict,
        ErrorCode::SandboxExpired,
        ErrorCode::SandboxTtlInfinite,
        ErrorCode::FileNotFound,
        ErrorCode::SessionNotReady,
        ErrorCode::ShipError,
        ErrorCode::Timeout,
        ErrorCode::InternalError,
    ];

    /// The code as Bay writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "not_found",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::QuotaExceeded => "quota_exceeded",
            ErrorCode::ValidationError => "validation_error",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::CapabilityNotSupported => "capability_not_supported",
            ErrorCode::Conflict => "conflict",
            ErrorCode::SandboxExpired => "sandbox_expired",
            ErrorCode::SandboxTtlInfinite => "sandbox_ttl_infinite",
            ErrorCode::FileNotFound => "file_not_found",
            ErrorCode::SessionNotReady => "session_not_ready",
            ErrorCode::ShipError => "ship_error",
            ErrorCode::Timeout => "timeout",
            ErrorCode::InternalError => "internal_error",
        }
    }

    /// The code Bay writes as `text`, if it is one.
    pub fn parse(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
    }

    /// The HTTP status Bay answers with.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::NotFound | ErrorCode::FileNotFound => 404,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::QuotaExceeded => 429,
            ErrorCode::ValidationError
            | ErrorCode::InvalidPath
            | ErrorCode::CapabilityNotSupported => 400,
            ErrorCode::Conflict | ErrorCode::SandboxExpired | ErrorCode::SandboxTtlInfinite => 409,
            ErrorCode::SessionNotReady => 503,
            ErrorCode::ShipError => 502,
            ErrorCode::Timeout => 504,
            ErrorCode::InternalError => 500,
        }
    }

    /// The code a status means when a response carries none (as Bay's SDK falls back).
    pub fn from_status(status: u16) -> ErrorCode {
        match status {
            400 | 422 => ErrorCode::ValidationError,
            401 => ErrorCode::Unauthorized,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            409 => ErrorCode::Conflict,
            429 => ErrorCode::QuotaExceeded,
            502 => ErrorCode::ShipError,
            503 => ErrorCode::SessionNotReady,
            504 => ErrorCode::Timeout,
            _ => ErrorCode::InternalError,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox error: Bay's code, its message and details.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
#[non_exhaustive]
pub struct SandboxError {
    /// What kind.
    pub code: ErrorCode,
    /// In words.
    pub message: String,
    /// Bay's `details` (`{"field": "path", "reason": "path_traversal"}`, `{"retry_after_ms":
    /// 1000}`, ...); an empty object when there are none.
    pub details: Value,
}

impl SandboxError {
    /// An error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SandboxError {
            code,
            message: message.into(),
            details: Value::Object(Map::new()),
        }
    }

    /// With a detail.
    #[must_use]
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let Value::Object(map) = &mut self.details {
            map.insert(key.to_owned(), value.into());
        }
        self
    }

    /// The HTTP status Bay answers this error with.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// How long to wait before retrying, for `session_not_ready`.
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.details.get("retry_after_ms").and_then(Value::as_u64)
    }

    /// Bay's error envelope: `{"error": {"code", "message", "request_id"?, "details"?}}`
    /// (`details` left out when empty, as Bay does).
    pub fn envelope(&self, request_id: Option<&str>) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.as_str().into());
        error.insert("message".into(), self.message.clone().into());
        if let Some(id) = request_id {
            error.insert("request_id".into(), id.into());
        }
        if self
            .details
            .as_object()
            .is_some_and(|details| !details.is_empty())
        {
            error.insert("details".into(), self.details.clone());
        }
        serde_json::json!({ "error": error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_map_to_bays_statuses() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
        assert_eq!(ErrorCode::SandboxExpired.status(), 409);
        assert_eq!(ErrorCode::SessionNotReady.status(), 503);
        assert_eq!(ErrorCode::from_status(502), ErrorCode::ShipError);
        assert_eq!(ErrorCode::parse("nope"), None);
    }

    #[test]
    fn the_envelope_leaves_out_empty_details_as_bay_does() {
        let plain = SandboxError::new(ErrorCode::NotFound, "Sandbox not found");
        assert_eq!(
            plain.envelope(Some("req-1")),
            serde_json::json!({"error": {"code": "not_found", "message": "Sandbox not found", "request_id": "req-1"}})
        );
        let detailed = SandboxError::new(ErrorCode::SessionNotReady, "starting")
            .detail("retry_after_ms", 1000);
        assert_eq!(detailed.retry_after_ms(), Some(1000));
        assert_eq!(
            detailed.envelope(None)["error"]["details"]["retry_after_ms"],
            1000
        );
    }
}

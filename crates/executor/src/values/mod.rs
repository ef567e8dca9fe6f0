//! Reading, checking and masking values, with no I/O: extraction paths over JSON (`extract`),
//! CEL evaluation under a budget (`eval`), resolving a step's inputs (`resolve`), a step's
//! `expect` (`assertion`), its validations (`validation`), response JSON Schemas (`schema`),
//! and keeping secrets out of everything written (`redact`).
//!
//! Depends on nothing else of the crate but the cancellation token: the call and run layers
//! above use it.

pub(crate) mod assertion;
pub(crate) mod eval;
pub mod extract;
pub(crate) mod redact;
pub(crate) mod resolve;
pub(crate) mod schema;
pub(crate) mod validation;

use serde_json::Value;

/// A value as text in a request or a check: strings raw, everything else as JSON text.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

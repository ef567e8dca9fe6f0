//! Masking: error messages bucketed without their ids and numbers, and text made safe to
//! share.

use std::sync::LazyLock;

use regex::Regex;

static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\x22<>)\]]+").expect("valid"));
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\b")
        .expect("valid")
});
/// A hex run of 8 or more with at least one digit (so words like `deadbeef` stay).
static HEX_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[0-9A-Fa-f]{8,}\b").expect("valid"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d+(\.\d+)?\b").expect("valid"));
/// Credentials written as `key=value` / `key: value` (`client_secret=…`, `DB_PASSWORD: …`).
static KEYED_CREDENTIAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b([\w-]*(?:api[_-]?key|token|secret|password|passwd|pwd|access[_-]?key|private[_-]?key|credential)[\w-]*\x22?\s*[:=]\s*\x22?)(?:(?:bearer|basic|token)\s+)?[^\s\x22,;&]+",
    )
    .expect("valid")
});
/// `Authorization: <scheme> <value>` (or a bare value), and `Bearer`/`Basic` tokens anywhere.
static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(authorization\x22?\s*[:=]\s*\x22?)[^\s\x22,;&]+(?:\s+[^\s\x22,;&]+)?|\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+",
    )
    .expect("valid")
});
/// A long token mixing letters and digits: an API key, a signature, a session id. (No `/`:
/// a path is not a token.)
static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[A-Za-z0-9_+=-]{20,}\b").expect("valid"));

/// `text` with URLs, UUIDs, hex ids and numbers replaced by `<url>`, `<id>` and `<n>`: the
/// form errors are counted under, so `cluster 1234 not found` and `cluster 99 not found` are
/// one kind of error.
pub fn mask_message(text: &str) -> String {
    let text = URL.replace_all(text, "<url>");
    let text = UUID.replace_all(&text, "<id>");
    let text = HEX_ID.replace_all(&text, |captures: &regex::Captures<'_>| {
        let found = &captures[0];
        if found.bytes().any(|byte| byte.is_ascii_digit()) {
            "<id>".to_owned()
        } else {
            found.to_owned()
        }
    });
    NUMBER.replace_all(&text, "<n>").trim().to_owned()
}

/// `text` with credentials and long tokens replaced by `<secret>`, nothing else changed: for
/// expressions and templates, which must keep their numbers and paths.
pub fn mask_secrets(text: &str) -> String {
    let text = AUTHORIZATION.replace_all(text, |captures: &regex::Captures<'_>| {
        match (captures.get(1), captures.get(2)) {
            (Some(key), _) => format!("{}<secret>", key.as_str()),
            (None, Some(scheme)) => format!("{} <secret>", scheme.as_str()),
            _ => "<secret>".to_owned(),
        }
    });
    let text = KEYED_CREDENTIAL.replace_all(&text, "${1}<secret>");
    TOKEN
        .replace_all(&text, |captures: &regex::Captures<'_>| {
            let found = &captures[0];
            let digits = found.bytes().any(|byte| byte.is_ascii_digit());
            let letters = found.bytes().any(|byte| byte.is_ascii_alphabetic());
            if digits && letters {
                "<secret>".to_owned()
            } else {
                found.to_owned()
            }
        })
        .into_owned()
}

/// `text` made safe to share: URLs first (their paths and queries can hold anything), then
/// [`mask_secrets`], then [`mask_message`] (ids and numbers).
pub fn mask_for_export(text: &str) -> String {
    let text = URL.replace_all(text, "<url>");
    mask_message(&mask_secrets(&text))
}

/// The server's message in an engine error text, and the status it names: `HTTP 400: {"message":
/// "x"}` gives `(Some(400), "x")`; `(after 3 attempts)` is dropped.
pub fn error_message(error: &str) -> (Option<u16>, String) {
    let mut text = error.trim();
    if let Some(at) = text.rfind(" (after ")
        && text.ends_with(" attempts)")
    {
        text = &text[..at];
    }
    let mut status = None;
    if let Some(rest) = text.strip_prefix("HTTP ") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(code) = digits.parse::<u16>() {
            status = Some(code);
            text = rest[digits.len()..].trim_start_matches(':').trim();
        }
    }
    let message = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|body| server_message(&body))
        .unwrap_or_else(|| text.to_owned());
    (status, message)
}

/// The human message in a JSON error body: `message`, `error`, `detail`, `msg` or
/// `error_description`, at the top level or inside an `error` object.
fn server_message(body: &serde_json::Value) -> Option<String> {
    const KEYS: [&str; 5] = ["message", "detail", "msg", "error_description", "error"];
    for key in KEYS {
        match body.get(key) {
            Some(serde_json::Value::String(text)) if !text.trim().is_empty() => {
                return Some(text.trim().to_owned());
            }
            Some(inner @ serde_json::Value::Object(_)) => {
                if let Some(text) = server_message(inner) {
                    return Some(text);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_bucketed_without_ids_numbers_and_urls() {
        assert_eq!(
            mask_message("cluster 1234567 not found at https://api.test/v1/clusters/1234567"),
            "cluster <n> not found at <url>"
        );
        assert_eq!(
            mask_message("branch 3f2a9c1e-0b1d-4e5f-9a8b-7c6d5e4f3a2b is busy"),
            "branch <id> is busy"
        );
        assert_eq!(mask_message("id 0a1b2c3d4e5f is bad"), "id <id> is bad");
        assert_eq!(mask_message("deadbeefcafe stays"), "deadbeefcafe stays");
        assert_eq!(
            mask_message("NodeGroupId is required"),
            "NodeGroupId is required"
        );
    }

    #[test]
    fn exports_lose_credentials_and_tokens_but_keep_operation_ids() {
        let text = "call failed: api_key=abc123 Authorization: Bearer eyJhbGciOi.J9x token ghp_a1B2c3D4e5F6g7H8i9J0k1L2 in ClusterService_UpdateCluster";
        let masked = mask_for_export(text);
        assert!(!masked.contains("abc123"), "{masked}");
        assert!(!masked.contains("eyJhbGciOi"), "{masked}");
        assert!(!masked.contains("ghp_a1B2"), "{masked}");
        assert!(masked.contains("ClusterService_UpdateCluster"), "{masked}");
        assert!(masked.contains("api_key=<secret>"), "{masked}");
        for (text, secret) in [
            ("client_secret=abc", "abc"),
            ("DB_PASSWORD: hunter2", "hunter2"),
            ("access_token=t0k", "t0k"),
            ("Authorization: Token xyz", "xyz"),
            ("auth_token=\"qq\"", "qq"),
        ] {
            let masked = mask_for_export(text);
            assert!(!masked.contains(secret), "{text} gave {masked}");
        }
        assert_eq!(
            mask_secrets("GET /api/v2/serverless/clusters/{id} when body.count > 3"),
            "GET /api/v2/serverless/clusters/{id} when body.count > 3",
            "paths and numbers stay in expressions"
        );
    }

    #[test]
    fn the_server_message_is_found_in_engine_errors() {
        assert_eq!(
            error_message(r#"HTTP 400: {"code": 400, "message": "NodeGroupId is required"}"#),
            (Some(400), "NodeGroupId is required".into())
        );
        assert_eq!(
            error_message(r#"HTTP 409: {"error": {"message": "busy"}} (after 3 attempts)"#),
            (Some(409), "busy".into())
        );
        assert_eq!(
            error_message("HTTP request failed: connect error: refused"),
            (None, "HTTP request failed: connect error: refused".into())
        );
        assert_eq!(error_message("HTTP 500: oops"), (Some(500), "oops".into()));
    }
}

//! Keeping credentials out of run records, errors and events.
//!
//! Two layers: headers that carry credentials are shown as `***` by name (and by the transport's
//! `sensitive` flag), and every secret value the run's tool configs hold is replaced by `***`
//! wherever it appears in text — a server that echoes a token back cannot put it in the record.

use std::borrow::Cow;

use base64::Engine as _;
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::{HttpRequest, RequestSummary, ToolConfig};

const MASK: &str = "***";
/// Secrets shorter than this are not searched for in text (they would mask ordinary words);
/// headers carrying them are still hidden.
const MIN_SCRUBBED_LEN: usize = 6;
/// Longest body kept in a request summary.
const MAX_SUMMARY_BODY: usize = 4 * 1024;

/// `secret` as it is, and as JSON escaping and URL encoding write it, when they change it.
fn encodings(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_owned()];
    if let Ok(quoted) = serde_json::to_string(secret) {
        forms.push(quoted[1..quoted.len() - 1].to_owned());
    }
    forms.push(url::form_urlencoded::byte_serialize(secret.as_bytes()).collect());
    // A path segment or a query built by `Url` writes a space as `%20`, not `+`.
    forms.push(
        url::form_urlencoded::byte_serialize(secret.as_bytes())
            .collect::<String>()
            .replace('+', "%20"),
    );
    forms.sort();
    forms.dedup();
    forms
}

/// Header names whose values are credentials, whatever the tool says.
pub(crate) fn is_credential_header(name: &str) -> bool {
    const NAMES: [&str; 8] = [
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-goog-api-key",
        "x-amz-security-token",
    ];
    NAMES.iter().any(|known| known.eq_ignore_ascii_case(name))
}

/// Replaces the secret values of tool configs by `***` in text and JSON, as the engine does for
/// run records and events.
///
/// ```
/// use wayline_core::{Secret, ToolConfig};
/// use wayline_executor::Redactor;
///
/// let mut config = ToolConfig::default();
/// config.auth_token = Some(Secret::new("tok-123456"));
/// let redactor = Redactor::for_configs([&config]);
/// assert_eq!(redactor.text("echo: tok-123456"), "echo: ***");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for the [`secrets`](ToolConfig::secrets) of these tool configs, in every form
    /// the engine itself may send them: as they are, JSON-escaped (a token with `"` or `\` in
    /// a JSON body), URL-encoded (in a query or a form body), and the base64 of Basic auth's
    /// `user:password` pairs.
    pub fn for_configs<'c>(configs: impl IntoIterator<Item = &'c ToolConfig>) -> Self {
        let mut forms = Vec::new();
        for config in configs {
            let values: Vec<&str> = config.secrets().map(|secret| secret.expose()).collect();
            for value in &values {
                forms.extend(encodings(value));
            }
            // Basic auth sends base64("user:token"), the user being `auth_username` or another
            // of the config's values (a tool's `username_key` may name one).
            let token = config
                .auth_token
                .as_ref()
                .map_or("", |token| token.expose());
            let username = config.auth_username.as_ref().map(|user| user.expose());
            for user in values.iter().copied().chain(username).chain([""]) {
                for password in [token, ""] {
                    if !user.is_empty() || !password.is_empty() {
                        forms.push(
                            base64::engine::general_purpose::STANDARD
                                .encode(format!("{user}:{password}")),
                        );
                    }
                }
            }
        }
        Self::new(forms)
    }

    /// This redactor, masking `values` too (in the same forms as a config's secrets: as they
    /// are, JSON-escaped and URL-encoded).
    #[must_use]
    pub fn with_values(self, values: impl IntoIterator<Item = String>) -> Self {
        let mut forms = self.secrets;
        for value in values {
            forms.extend(encodings(&value));
        }
        Self::new(forms)
    }

    /// A redactor for these values.
    fn new<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|secret| secret.len() >= MIN_SCRUBBED_LEN)
            .collect();
        // Longest first, so a secret containing another is masked whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` with every secret masked.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        out
    }

    /// Masks secrets in every string of `value`, keys included.
    pub fn value(&self, value: &mut Value) {
        if self.secrets.is_empty() {
            return;
        }
        match value {
            Value::String(text) => {
                if let Cow::Owned(masked) = self.text(text) {
                    *text = masked;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(fields) => {
                let needs_key_change = fields
                    .keys()
                    .any(|key| matches!(self.text(key), Cow::Owned(_)));
                if needs_key_change {
                    let old = std::mem::take(fields);
                    *fields = old
                        .into_iter()
                        .map(|(key, value)| (self.text(&key).into_owned(), value))
                        .collect();
                }
                fields.values_mut().for_each(|field| self.value(field));
            }
            _ => {}
        }
    }

    /// The record of a request: credentials masked, body parsed when JSON and cut when long.
    pub(crate) fn summary(&self, request: &HttpRequest) -> RequestSummary {
        let headers: IndexMap<String, String> = request
            .headers
            .iter()
            .map(|header| {
                let value = if header.sensitive || is_credential_header(&header.name) {
                    MASK.to_owned()
                } else {
                    self.text(&header.value).into_owned()
                };
                (header.name.clone(), value)
            })
            .collect();
        let body =
            request
                .body
                .as_deref()
                .map(|bytes| match serde_json::from_slice::<Value>(bytes) {
                    Ok(mut json) => {
                        self.value(&mut json);
                        json
                    }
                    Err(_) => {
                        let text = String::from_utf8_lossy(bytes);
                        let cut = cut(&text, MAX_SUMMARY_BODY);
                        Value::String(self.text(cut).into_owned())
                    }
                });
        let mut summary = RequestSummary::new(&request.method, self.text(&request.url));
        summary.headers = headers;
        summary.body = body;
        summary
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wayline_core::Header;

    use super::*;

    #[test]
    fn secrets_are_masked_everywhere() {
        let redactor = Redactor::new(["s3cret-token", "s3cret", "abc"]);
        assert_eq!(
            redactor.text("x s3cret-token y s3cret ab"),
            "x *** y *** ab"
        );
        let mut value = json!({"echo": ["Bearer s3cret-token"], "s3cret": 1});
        redactor.value(&mut value);
        assert_eq!(value, json!({"echo": ["Bearer ***"], "***": 1}));
    }

    #[test]
    fn every_encoding_the_engine_sends_is_masked() {
        let mut config = ToolConfig::default();
        config.auth_username = Some(wayline_core::Secret::new("ada-admin"));
        config.auth_token = Some(wayline_core::Secret::new(r#"pa"ss\wo rd&1"#));
        let redactor = Redactor::for_configs([&config]);
        let basic = base64::engine::general_purpose::STANDARD.encode(r#"ada-admin:pa"ss\wo rd&1"#);
        for shown in [
            format!("Basic {basic}"),
            r#"{"token": "pa\"ss\\wo rd&1"}"#.to_owned(),
            "?token=pa%22ss%5Cwo+rd%261".to_owned(),
            "/tokens/pa%22ss%5Cwo%20rd%261".to_owned(),
        ] {
            let masked = redactor.text(&shown);
            assert!(masked.contains("***"), "{shown} → {masked}");
            for leak in ["ss\\wo", "ss%5Cwo", "ss\\\\wo", basic.as_str()] {
                assert!(!masked.contains(leak), "{shown} → {masked}");
            }
        }
    }

    #[test]
    fn summaries_hide_credential_headers_and_secret_text() {
        let redactor = Redactor::new(["tok-123456"]);
        let mut request = HttpRequest::new("POST", "https://x/a?key=tok-123456");
        request.headers = vec![
            Header::new("Authorization", "Bearer from-a-step"),
            Header::sensitive("X-Custom", "whatever"),
            Header::new("Accept", "application/json"),
        ];
        request.body = Some(br#"{"token": "tok-123456", "n": 1}"#.to_vec());
        let summary = redactor.summary(&request);
        assert_eq!(summary.url, "https://x/a?key=***");
        assert_eq!(summary.headers["Authorization"], "***");
        assert_eq!(summary.headers["X-Custom"], "***");
        assert_eq!(summary.headers["Accept"], "application/json");
        assert_eq!(summary.body, Some(json!({"token": "***", "n": 1})));
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("abc", 10), "abc");
    }
}

//! Keeping credentials out of run records, errors and events.
//!
//! Two layers: headers that carry credentials are shown as `***` by name (and by the transport's
//! `sensitive` flag), and every secret value the run's tool configs hold is replaced by `***`
//! wherever it appears in text — a server that echoes a token back cannot put it in the record.

use std::borrow::Cow;

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::{HttpRequest, RequestSummary, ToolConfig};

const MASK: &str = "***";
/// Secrets shorter than this are not searched for in text (they would mask ordinary words);
/// headers carrying them are still hidden.
const MIN_SCRUBBED_LEN: usize = 6;
/// Longest body kept in a request summary.
const MAX_SUMMARY_BODY: usize = 4 * 1024;

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
    /// A redactor for the [`secrets`](ToolConfig::secrets) of these tool configs.
    pub fn for_configs<'c>(configs: impl IntoIterator<Item = &'c ToolConfig>) -> Self {
        Self::new(
            configs
                .into_iter()
                .flat_map(ToolConfig::secrets)
                .map(|secret| secret.expose()),
        )
    }

    /// A redactor for these values.
    fn new<'s>(secrets: impl IntoIterator<Item = &'s str>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|secret| secret.len() >= MIN_SCRUBBED_LEN)
            .map(str::to_owned)
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

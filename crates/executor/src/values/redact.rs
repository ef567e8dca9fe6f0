//! Keeping credentials out of run records, errors, events and every report a user reads.
//!
//! Two layers: headers that carry credentials are shown as `***` by name (and by the transport's
//! `sensitive` flag), and every secret value the run's tool configs hold is replaced by `***`
//! wherever it appears in text — a server that echoes a token back cannot put it in the record.
//!
//! A [`Redactor`] also learns: a token a command printed, a value a run sent as a credential, a
//! session cookie an API set. Its clones share what it knows, so the one an engine is given
//! ([`EngineBuilder::redactor`](crate::EngineBuilder::redactor)) masks, in every writer a host
//! hands it to (an HTTP archive, a printed response), what the engine learned since.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

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
/// The most values a redactor keeps (each in its forms); past it, the first learned are
/// forgotten first. A long-lived engine learns a few per run (rotating tokens, credentials of
/// runs' inputs); what a finished run sent no longer reaches a writer.
const MAX_KEPT: usize = 4_096;

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

/// Response header names whose values are credentials: what a request sends as one, and what
/// a server hands out as one (`Set-Cookie`: a session cookie alone logs in; OpenStack's
/// `X-Subject-Token`).
///
/// ```
/// assert!(wayline_executor::is_credential_response_header("Set-Cookie"));
/// assert!(!wayline_executor::is_credential_response_header("Content-Type"));
/// ```
pub fn is_credential_response_header(name: &str) -> bool {
    is_credential_header(name)
        || ["set-cookie", "set-cookie2", "x-subject-token"]
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name))
}

/// The secrets a credential header carries, to mask once it has been sent or received: its
/// value, or for a value with a scheme (`Bearer TOKEN`) what follows the scheme and the
/// password of a Basic pair; for `Cookie`, each cookie's value; for `Set-Cookie`, the cookie's value (not its
/// attributes: `Path`, `Expires`).
pub(crate) fn credential_parts(name: &str, value: &str) -> Vec<String> {
    let value = value.trim();
    // (For a value with a scheme, the part after it: an echo then reads `Bearer ***`.)
    let mut parts = Vec::new();
    let name = name.to_ascii_lowercase();
    let scheme = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphabetic()));
    if scheme.is_none() || name.contains("cookie") {
        parts.push(value.to_owned());
    }
    if name == "cookie" {
        parts.extend(
            value
                .split(';')
                .filter_map(|cookie| cookie.split_once('='))
                .map(|(_, cookie)| cookie.trim().to_owned()),
        );
    } else if name.starts_with("set-cookie") {
        if let Some((_, cookie)) = value
            .split(';')
            .next()
            .and_then(|pair| pair.split_once('='))
        {
            parts.push(cookie.trim().to_owned());
        }
    } else if let Some((scheme, rest)) = scheme {
        let rest = rest.trim();
        parts.push(rest.to_owned());
        if scheme.eq_ignore_ascii_case("basic")
            && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(rest)
            && let Ok(pair) = String::from_utf8(decoded)
            && let Some((_, password)) = pair.split_once(':')
        {
            parts.push(password.to_owned());
        }
    }
    parts
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
    known: Arc<RwLock<Known>>,
}

/// What a redactor masks.
#[derive(Default)]
struct Known {
    /// Every form of every value, longest first (a secret containing another is masked whole).
    forms: Vec<String>,
    /// The values, in the order they were learned, each with its forms.
    values: IndexMap<String, Vec<String>>,
}

impl Known {
    fn add(&mut self, value: String, forms: Vec<String>) -> bool {
        // A short value is kept for its longer forms (its URL encoding, a Basic pair).
        if value.is_empty() || self.values.contains_key(&value) {
            return false;
        }
        self.values.insert(value, forms);
        if self.values.len() > MAX_KEPT {
            self.values.shift_remove_index(0);
        }
        true
    }

    fn sort(&mut self) {
        let mut forms: Vec<String> = self
            .values
            .values()
            .flatten()
            .filter(|form| form.len() >= MIN_SCRUBBED_LEN)
            .cloned()
            .collect();
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        self.forms = forms;
    }

    /// `text` with every form masked.
    fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.forms {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
        }
        out
    }

    /// Masks `text` in place.
    fn mask(&self, text: &mut String) {
        if let Cow::Owned(masked) = self.text(text) {
            *text = masked;
        }
    }

    /// Masks every string of `value`, keys included.
    fn value(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.mask(text),
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
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.read().values.len())
    }
}

impl Redactor {
    /// A redactor for the [`secrets`](ToolConfig::secrets) of these tool configs, in every form
    /// the engine itself may send them: as they are, JSON-escaped (a token with `"` or `\` in
    /// a JSON body), URL-encoded (in a query or a form body), and the base64 of Basic auth's
    /// `user:password` pairs.
    pub fn for_configs<'c>(configs: impl IntoIterator<Item = &'c ToolConfig>) -> Self {
        let redactor = Redactor::default();
        redactor.learn_configs(configs);
        redactor
    }

    /// Learns the secrets of these tool configs, as [`Redactor::for_configs`] reads them.
    pub fn learn_configs<'c>(&self, configs: impl IntoIterator<Item = &'c ToolConfig>) {
        let mut learned = Vec::new();
        for config in configs {
            let values: Vec<&str> = config.secrets().map(|secret| secret.expose()).collect();
            for value in &values {
                learned.push((value.to_string(), encodings(value)));
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
                        let pair = base64::engine::general_purpose::STANDARD
                            .encode(format!("{user}:{password}"));
                        learned.push((pair.clone(), vec![pair]));
                    }
                }
            }
        }
        self.add(learned);
    }

    /// This redactor's values and `values`, in a redactor of their own (what either learns
    /// later, the other does not).
    #[must_use]
    pub fn with_values(self, values: impl IntoIterator<Item = String>) -> Self {
        let copy = Redactor::default();
        copy.learn_from(&self);
        copy.learn(values);
        copy
    }

    /// Learns `values` (in the forms a config's secrets are masked in: as they are,
    /// JSON-escaped and URL-encoded); every clone of this redactor masks them from now on.
    pub fn learn(&self, values: impl IntoIterator<Item = String>) {
        self.add(
            values
                .into_iter()
                .map(|value| {
                    let forms = encodings(&value);
                    (value, forms)
                })
                .collect(),
        );
    }

    /// Learns every value `other` knows.
    pub fn learn_from(&self, other: &Redactor) {
        if Arc::ptr_eq(&self.known, &other.known) {
            return;
        }
        let theirs: Vec<(String, Vec<String>)> = other
            .read()
            .values
            .iter()
            .map(|(value, forms)| (value.clone(), forms.clone()))
            .collect();
        self.add(theirs);
    }

    /// A redactor for these values.
    #[cfg(test)]
    fn new<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        let redactor = Redactor::default();
        redactor.add(
            secrets
                .into_iter()
                .map(|secret| {
                    let secret = secret.into();
                    (secret.clone(), vec![secret])
                })
                .collect(),
        );
        redactor
    }

    fn add(&self, learned: Vec<(String, Vec<String>)>) {
        if learned.is_empty() {
            return;
        }
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        let mut changed = false;
        for (value, forms) in learned {
            changed |= known.add(value, forms);
        }
        if changed {
            known.sort();
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Known> {
        self.known.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// `text` with every secret masked.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.read().text(text)
    }

    /// Whether this redactor knows nothing (nothing it would mask).
    pub fn is_empty(&self) -> bool {
        self.read().forms.is_empty()
    }

    /// Masks secrets in every string of `value`, keys included.
    pub fn value(&self, value: &mut Value) {
        let known = self.read();
        if !known.forms.is_empty() {
            known.value(value);
        }
    }

    /// Masks every text of a step's result with what this redactor knows now (a run's record
    /// is masked once more when it closes, with what the run learned meanwhile).
    pub(crate) fn step_result(&self, result: &mut wayline_core::StepResult) {
        let known = self.read();
        if known.forms.is_empty() {
            return;
        }
        let text = |text: &mut String| known.mask(text);
        if let Some(error) = &mut result.error {
            text(error);
        }
        result.warnings.iter_mut().for_each(text);
        for checked in &mut result.assertions {
            text(&mut checked.subject);
            checked.expected.iter_mut().for_each(text);
            checked.actual.iter_mut().for_each(text);
        }
        if let Some(request) = &mut result.request {
            text(&mut request.url);
            request.headers.values_mut().for_each(text);
            if let Some(body) = &mut request.body {
                known.value(body);
            }
        }
        known.value(&mut result.output_data);
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

//! Turning a tool definition and resolved inputs into an [`HttpRequest`], for both request
//! paths of the Python structure-ai-bot project's HTTP client.
//!
//! **Config path** (the tool has a `request` block): declared path parameters fill `{name}` in
//! the path, declared query parameters go to the query string, then headers and body are
//! `{{key}}` templates rendered (leniently) with the inputs that remain.
//! **Legacy path**: every `{name}` in the path that has an input is filled; a GET sends the
//! remaining inputs as the query string, any other method as a JSON body.
//!
//! Headers are sent in this order, a later one replacing an earlier one of the same name: auth,
//! the tool's `request.headers`, the tool config's `headers`, the idempotency key.

use base64::Engine as _;
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::template::{self, Mode};
use wayline_core::tool::CodePath;
use wayline_core::{AuthType, Header, HttpRequest, ToolConfig, ToolDefinition};

use crate::Error;
use crate::values::redact::is_credential_header;
use crate::values::text;

/// The content type that selects a form-encoded body.
const FORM: &str = "application/x-www-form-urlencoded";

/// A request built from a tool, with notes about it (e.g. missing credentials).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuiltRequest {
    /// The request, ready to send.
    pub request: HttpRequest,
    /// Things worth knowing that do not stop the request.
    pub warnings: Vec<String>,
}

/// Builds the request `tool` makes with `inputs`, using `config` for the base URL override and
/// credentials, and `idempotency_key` as the value of the tool's idempotency header if it has
/// one. The error says what is wrong with the tool or the inputs.
///
/// ```
/// use indexmap::IndexMap;
/// use serde_json::json;
/// use wayline_core::{ToolConfig, ToolDefinition, Secret};
/// use wayline_core::document::{parse, Format};
/// use wayline_executor::build_request;
///
/// let tool: ToolDefinition = parse(r#"
/// id: repo
/// name: Repo
/// base_url: https://api.github.com
/// path: /repos/{owner}/{repo}
/// auth: {type: bearer}
/// request: {path_params: [owner, repo], query_params: [per_page]}
/// "#, Format::Yaml, "repo.yaml").unwrap();
/// let inputs = IndexMap::from([
///     ("owner".to_owned(), json!("rust-lang")),
///     ("repo".to_owned(), json!("rust")),
///     ("per_page".to_owned(), json!(5)),
/// ]);
/// let mut config = ToolConfig::default();
/// config.auth_token = Some(Secret::new("t0ken"));
/// let built = build_request(&tool, &inputs, Some(&config), None).unwrap();
/// assert_eq!(built.request.url, "https://api.github.com/repos/rust-lang/rust?per_page=5");
/// assert_eq!(built.request.header("authorization"), Some("Bearer t0ken"));
/// ```
pub fn build_request(
    tool: &ToolDefinition,
    inputs: &IndexMap<String, Value>,
    config: Option<&ToolConfig>,
    idempotency_key: Option<&str>,
) -> Result<BuiltRequest, Error> {
    build(tool, inputs, config, idempotency_key).map_err(|reason| Error::Request {
        tool_id: tool.id.clone(),
        reason,
    })
}

fn build(
    tool: &ToolDefinition,
    inputs: &IndexMap<String, Value>,
    config: Option<&ToolConfig>,
    idempotency_key: Option<&str>,
) -> Result<BuiltRequest, String> {
    let mut remaining = inputs.clone();
    let mut warnings = Vec::new();
    let base_url = config
        .and_then(|config| config.base_url.as_deref())
        .unwrap_or(&tool.base_url);
    if base_url.is_empty() {
        return Err(format!(
            "tool `{}` has no `base_url`; set one in the tool file or in its tool config",
            tool.id
        ));
    }
    let method = tool.method.to_ascii_uppercase();
    let path_params: Vec<&str> = match &tool.request {
        Some(request) => request.path_params.iter().map(String::as_str).collect(),
        None => tool.path_placeholders(),
    };
    let path = fill_path(&tool.path, &path_params, &mut remaining);
    let mut url = url::Url::parse(&join_url(base_url, &path)).map_err(|error| {
        format!(
            "tool `{}` makes the invalid URL `{}`: {error}",
            tool.id,
            join_url(base_url, &path)
        )
    })?;

    let mut headers = auth_headers(tool, config, &mut warnings);
    let mut body = None;
    match (tool.code_path(), &tool.request) {
        (CodePath::Config, Some(request)) => {
            let query: Vec<(String, Value)> = request
                .query_params
                .iter()
                .filter_map(|name| remaining.shift_remove_entry(name))
                .collect();
            append_query(&mut url, &query);
            for (name, value) in &request.headers {
                let rendered = template::render_str(value, &remaining, Mode::Lenient)
                    .map_err(|error| error.to_string())?;
                let sensitive = is_credential_header(name);
                set_header(&mut headers, name, &text(&rendered), sensitive);
            }
            if let Some(template) = &request.body {
                let rendered = template::render(template, &remaining, Mode::Lenient)
                    .map_err(|error| error.to_string())?;
                let declared = request.content_type.as_str();
                body = Some(match &rendered {
                    // Text for a type that is not JSON (XML, plain text, a form already
                    // encoded) goes as it is.
                    Value::String(text) if !declared.is_empty() && !is_json(declared) => {
                        (text.clone().into_bytes(), declared)
                    }
                    _ if declared == FORM => (form_body(&rendered), FORM),
                    _ if is_json(declared) => (json_bytes(&rendered), declared),
                    _ => (json_bytes(&rendered), "application/json"),
                });
            }
        }
        _ => {
            let rest: Vec<(String, Value)> = remaining.into_iter().collect();
            if method == "GET" {
                append_query(&mut url, &rest);
            } else {
                let object = Value::Object(rest.into_iter().collect());
                body = Some((json_bytes(&object), "application/json"));
            }
        }
    }
    if let Some(config) = config {
        for (name, value) in &config.headers {
            set_header(&mut headers, name, value.expose(), true);
        }
    }
    if let (Some(name), Some(key)) = (&tool.idempotency_key, idempotency_key) {
        set_header(&mut headers, name, key, false);
    }
    let mut request = HttpRequest::new(method, url.to_string());
    if let Some((bytes, content_type)) = body {
        if !headers
            .iter()
            .any(|header| header.name.eq_ignore_ascii_case("content-type"))
        {
            headers.push(Header::new("Content-Type", content_type));
        }
        request.body = Some(bytes);
    }
    request.headers = headers;
    Ok(BuiltRequest { request, warnings })
}

/// `base` and `path` joined with exactly one `/`; `base` alone when `path` is empty.
fn join_url(base: &str, path: &str) -> String {
    if path.is_empty() {
        return base.to_owned();
    }
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Fills `{name}` for each listed name that has an input, consuming the input.
fn fill_path(path: &str, names: &[&str], inputs: &mut IndexMap<String, Value>) -> String {
    let mut path = path.to_owned();
    for name in names {
        let placeholder = format!("{{{name}}}");
        if path.contains(&placeholder)
            && let Some(value) = inputs.shift_remove(*name)
        {
            path = path.replace(&placeholder, &encode_segment(&text(&value)));
        }
    }
    path
}

/// Percent-encodes what a path segment cannot hold (a `/` in a value stays inside its segment).
fn encode_segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&byte);
        if keep {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Query pairs: lists repeat the key, `null` is left out, objects are sent as JSON text.
fn append_query(url: &mut url::Url, pairs: &[(String, Value)]) {
    let values = pairs
        .iter()
        .flat_map(|(name, value)| match value {
            Value::Array(items) => items.iter().map(|item| (name, item)).collect(),
            other => vec![(name, other)],
        })
        .filter(|(_, value)| !value.is_null())
        .collect::<Vec<_>>();
    if values.is_empty() {
        return;
    }
    let mut query = url.query_pairs_mut();
    for (name, value) in values {
        query.append_pair(name, &text(value));
    }
}

fn auth_headers(
    tool: &ToolDefinition,
    config: Option<&ToolConfig>,
    warnings: &mut Vec<String>,
) -> Vec<Header> {
    let auth = tool.effective_auth();
    let value_of = |key: &str| {
        config
            .and_then(|config| config.get(key))
            .map(|secret| secret.expose())
            .filter(|value| !value.is_empty())
    };
    let token = value_of("auth_token");
    let mut missing = |what: &str| {
        warnings.push(format!(
            "tool `{}` uses {} auth but its tool config has no {what}; the request is sent without credentials",
            tool.id,
            auth_name(auth.kind)
        ));
    };
    match auth.kind {
        AuthType::None => Vec::new(),
        AuthType::ApiKey => match token {
            Some(token) => vec![Header::sensitive(
                auth.header.as_deref().unwrap_or("X-API-Key"),
                token,
            )],
            None => {
                missing("`auth_token`");
                Vec::new()
            }
        },
        AuthType::Bearer => match token {
            Some(token) => vec![Header::sensitive(
                "Authorization",
                format!("Bearer {token}"),
            )],
            None => {
                missing("`auth_token`");
                Vec::new()
            }
        },
        AuthType::Basic => {
            let username_key = auth.username_key.as_deref().unwrap_or("auth_username");
            let user = value_of(username_key);
            if user.is_none() && token.is_none() {
                missing(&format!("`{username_key}` or `auth_token`"));
                return Vec::new();
            }
            let pair = format!("{}:{}", user.unwrap_or(""), token.unwrap_or(""));
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            vec![Header::sensitive(
                "Authorization",
                format!("Basic {encoded}"),
            )]
        }
    }
}

fn auth_name(kind: AuthType) -> &'static str {
    match kind {
        AuthType::None => "no",
        AuthType::ApiKey => "api_key",
        AuthType::Bearer => "bearer",
        AuthType::Basic => "basic",
    }
}

/// Sets a header, replacing any of the same name (case-insensitive) in place.
fn set_header(headers: &mut Vec<Header>, name: &str, value: &str, sensitive: bool) {
    let header = Header {
        name: name.to_owned(),
        value: value.to_owned(),
        sensitive,
    };
    match headers
        .iter_mut()
        .find(|existing| existing.name.eq_ignore_ascii_case(name))
    {
        Some(existing) => {
            let sensitive = existing.sensitive || sensitive;
            *existing = Header {
                sensitive,
                ..header
            };
        }
        None => headers.push(header),
    }
}

fn json_bytes(value: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail: its keys are strings.
    serde_json::to_vec(value).unwrap_or_default()
}

/// Whether a content type is JSON (`application/json`, `application/problem+json`, …).
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
}

/// A form body from an object (other values: sent as the single field `value`).
fn form_body(value: &Value) -> Vec<u8> {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                if !field.is_null() {
                    form.append_pair(name, &text(field));
                }
            }
        }
        other => {
            form.append_pair("value", &text(other));
        }
    }
    form.finish().into_bytes()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wayline_core::Secret;
    use wayline_core::document::{Format, parse};

    use super::*;

    fn tool(yaml: &str) -> ToolDefinition {
        parse(yaml, Format::Yaml, "t.yaml").unwrap()
    }

    fn inputs(value: Value) -> IndexMap<String, Value> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn legacy_get_sends_the_rest_as_query_and_encodes_path() {
        let tool = tool("id: w\nname: W\nbase_url: https://wttr.in/\npath: \"/{city}\"\n");
        let built = build_request(
            &tool,
            &inputs(json!({"city": "New York", "format": "j1", "n": 2})),
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            built.request.url,
            "https://wttr.in/New%20York?format=j1&n=2"
        );
        assert!(built.request.body.is_none());
    }

    #[test]
    fn legacy_post_sends_json_body() {
        let tool = tool("id: p\nname: P\nbase_url: https://h\npath: /post\nmethod: post\n");
        let built =
            build_request(&tool, &inputs(json!({"a": 1, "b": [true]})), None, None).unwrap();
        assert_eq!(built.request.method, "POST");
        assert_eq!(
            built.request.body.as_deref(),
            Some(&br#"{"a":1,"b":[true]}"#[..])
        );
        assert_eq!(
            built.request.header("content-type"),
            Some("application/json")
        );
    }

    #[test]
    fn config_form_body_with_basic_auth() {
        let tool = tool(
            "id: s\nname: S\nbase_url: https://accounts\npath: /api/token\nmethod: POST\n\
             auth: {type: basic, username_key: auth_username}\n\
             request:\n  body: {grant_type: client_credentials}\n  content_type: application/x-www-form-urlencoded\n",
        );
        let mut config = ToolConfig::default();
        config.auth_username = Some(Secret::new("id"));
        config.auth_token = Some(Secret::new("pw"));
        let built = build_request(&tool, &IndexMap::new(), Some(&config), None).unwrap();
        assert_eq!(
            built.request.header("authorization"),
            Some("Basic aWQ6cHc=")
        );
        assert_eq!(
            built.request.body.as_deref(),
            Some(&b"grant_type=client_credentials"[..])
        );
        assert_eq!(built.request.header("content-type"), Some(FORM));
    }

    #[test]
    fn templated_headers_replace_auth_and_config_headers_win() {
        let tool = tool(
            "id: a\nname: A\nbase_url: https://x\nauth: {type: bearer}\n\
             request:\n  headers: {Authorization: \"Bearer {{access_token}}\", X-Env: yaml}\n",
        );
        let mut config = ToolConfig::default();
        config.auth_token = Some(Secret::new("config-token"));
        config
            .headers
            .insert("X-Env".into(), Secret::new("from-config"));
        let built = build_request(
            &tool,
            &inputs(json!({"access_token": "step-token"})),
            Some(&config),
            Some("key-1"),
        )
        .unwrap();
        assert_eq!(
            built.request.header("authorization"),
            Some("Bearer step-token")
        );
        assert_eq!(built.request.header("x-env"), Some("from-config"));
        assert!(
            built.request.headers.iter().all(
                |header| header.sensitive || !header.name.eq_ignore_ascii_case("authorization")
            )
        );
    }

    #[test]
    fn missing_credentials_warn() {
        let tool = tool("id: k\nname: K\nbase_url: https://x\nauth_type: api_key\n");
        let built = build_request(&tool, &IndexMap::new(), None, None).unwrap();
        assert!(built.request.headers.is_empty());
        assert!(
            built.warnings[0].contains("no `auth_token`"),
            "{:?}",
            built.warnings
        );
    }

    #[test]
    fn bad_base_url_is_an_error() {
        let tool = tool("id: b\nname: B\nbase_url: \"not a url\"\n");
        let error = build_request(&tool, &IndexMap::new(), None, None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("invalid URL `not a url`"), "{error}");
    }
}

//! `{{key}}` templates in request bodies and headers.
//!
//! A string that is exactly `{{key}}` becomes the value itself, keeping its JSON type (a list
//! stays a list). Any other string has each `{{key}}` replaced by text: strings raw, everything
//! else as its JSON text (`["a","b"]`, `3`, `true`, `null`). Object keys are never rendered. A key
//! is one or more word characters (letters, digits, `_`); `{{ key }}` with spaces is plain text.
//!
//! An object member whose value is exactly `{{?key}}` is optional: the value when `key` has
//! one, and the member is left out when it has none (in either mode). Imported OpenAPI
//! operations use it for the optional fields of a request body.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexMap;
use serde_json::Value;

use crate::Error;

/// What to do with a placeholder whose key has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fail with [`Error::MissingTemplateKey`] naming the key.
    Strict,
    /// Keep the placeholder text as it was.
    Lenient,
}

/// Where template values come from.
pub trait TemplateVars {
    /// The value for `key`, if there is one.
    fn get_var(&self, key: &str) -> Option<&Value>;
}

impl TemplateVars for serde_json::Map<String, Value> {
    fn get_var(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl TemplateVars for IndexMap<String, Value> {
    fn get_var(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl TemplateVars for BTreeMap<String, Value> {
    fn get_var(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

impl<S: std::hash::BuildHasher> TemplateVars for HashMap<String, Value, S> {
    fn get_var(&self, key: &str) -> Option<&Value> {
        self.get(key)
    }
}

/// Renders a template value (objects, arrays and strings are walked; other values pass through).
///
/// ```
/// use serde_json::json;
/// use wayline_core::template::{render, Mode};
///
/// let vars = json!({"ids": [1, 2], "name": "Ada"});
/// let vars = vars.as_object().unwrap();
/// let body = json!({"ids": "{{ids}}", "greeting": "Hi {{name}}, ids {{ids}}"});
/// assert_eq!(
///     render(&body, vars, Mode::Strict).unwrap(),
///     json!({"ids": [1, 2], "greeting": "Hi Ada, ids [1,2]"}),
/// );
/// ```
pub fn render(template: &Value, vars: &dyn TemplateVars, mode: Mode) -> Result<Value, Error> {
    Ok(match template {
        Value::String(text) => render_str(text, vars, mode)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| render(item, vars, mode))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(fields) => {
            let mut rendered = serde_json::Map::with_capacity(fields.len());
            for (key, value) in fields {
                let optional = value.as_str().and_then(optional_placeholder);
                match optional {
                    Some(name) => {
                        if let Some(value) = vars.get_var(name) {
                            rendered.insert(key.clone(), value.clone());
                        }
                    }
                    None => {
                        rendered.insert(key.clone(), render(value, vars, mode)?);
                    }
                }
            }
            Value::Object(rendered)
        }
        other => other.clone(),
    })
}

/// Renders one template string (see [`render`]).
pub fn render_str(text: &str, vars: &dyn TemplateVars, mode: Mode) -> Result<Value, Error> {
    if let Some(key) = whole_placeholder(text) {
        return match (vars.get_var(key), mode) {
            (Some(value), _) => Ok(value.clone()),
            (None, Mode::Lenient) => Ok(Value::String(text.to_owned())),
            (None, Mode::Strict) => Err(Error::MissingTemplateKey {
                key: key.to_owned(),
            }),
        };
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, key, end)) = next_placeholder(rest) {
        out.push_str(&rest[..start]);
        match vars.get_var(key) {
            Some(Value::String(value)) => out.push_str(value),
            Some(value) => out.push_str(&value.to_string()),
            None if mode == Mode::Lenient => out.push_str(&rest[start..end]),
            None => {
                return Err(Error::MissingTemplateKey {
                    key: key.to_owned(),
                });
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

/// Every placeholder key in a template value, in order of first appearance.
///
/// ```
/// use serde_json::json;
/// let template = json!({"q": "{{a}} and {{b}}", "x": ["{{a}}"]});
/// assert_eq!(wayline_core::template::keys(&template), ["a", "b"]);
/// ```
pub fn keys(template: &Value) -> Vec<&str> {
    let mut names = Vec::new();
    collect_keys(template, &mut names);
    names
}

/// Adds the keys of a template value to `names`, skipping ones already there.
pub fn collect_keys<'a>(template: &'a Value, names: &mut Vec<&'a str>) {
    match template {
        Value::String(text) => collect_keys_in_str(text, names),
        Value::Array(items) => items.iter().for_each(|item| collect_keys(item, names)),
        Value::Object(fields) => fields.values().for_each(|value| collect_keys(value, names)),
        _ => {}
    }
}

/// Adds the keys of a template string to `names`, skipping ones already there.
pub fn collect_keys_in_str<'a>(text: &'a str, names: &mut Vec<&'a str>) {
    let mut rest = text;
    while let Some((_, key, end)) = next_placeholder(rest) {
        if !names.contains(&key) {
            names.push(key);
        }
        rest = &rest[end..];
    }
}

/// The key when `text` is exactly one placeholder (`{{key}}`), whose value keeps its type.
pub fn whole_placeholder(text: &str) -> Option<&str> {
    let key = text.strip_prefix("{{")?.strip_suffix("}}")?;
    is_key(key).then_some(key)
}

/// The key of an optional placeholder `{{?key}}`.
pub fn optional_placeholder(text: &str) -> Option<&str> {
    let key = text.strip_prefix("{{?")?.strip_suffix("}}")?;
    is_key(key).then_some(key)
}

/// The next placeholder in `text`: (start, key, end) byte offsets.
fn next_placeholder(text: &str) -> Option<(usize, &str, usize)> {
    let mut from = 0;
    while let Some(offset) = text[from..].find("{{") {
        let start = from + offset;
        let after = &text[start + 2..];
        let key_len = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if key_len > 0 && after[key_len..].starts_with("}}") {
            return Some((start, &after[..key_len], start + 2 + key_len + 2));
        }
        from = start + 1;
    }
    None
}

fn is_key(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn vars() -> serde_json::Map<String, Value> {
        json!({"s": "text", "n": 3, "l": ["Action", "Drama"], "z": null, "b": true})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn optional_members_are_left_out_when_their_key_has_no_value() {
        let body = json!({"name": "{{s}}", "size": "{{?n}}", "note": "{{?missing}}", "deep": {"x": "{{?missing}}"}});
        for mode in [Mode::Strict, Mode::Lenient] {
            assert_eq!(
                render(&body, &vars(), mode).unwrap(),
                json!({"name": "text", "size": 3, "deep": {}})
            );
        }
        // Only as a member's whole value: elsewhere it is plain text.
        assert_eq!(
            render_str("{{?s}}", &vars(), Mode::Strict).unwrap(),
            json!("{{?s}}")
        );
    }

    #[test]
    fn whole_placeholder_keeps_type() {
        for key in ["s", "n", "l", "z", "b"] {
            let rendered = render_str(&format!("{{{{{key}}}}}"), &vars(), Mode::Strict).unwrap();
            assert_eq!(rendered, vars()[key]);
        }
    }

    #[test]
    fn embedded_placeholders_use_json_text_for_non_strings() {
        let rendered = render_str("{{s}}/{{n}}/{{l}}/{{z}}/{{b}}", &vars(), Mode::Strict).unwrap();
        assert_eq!(rendered, json!(r#"text/3/["Action","Drama"]/null/true"#));
    }

    #[test]
    fn spaces_and_surrounding_whitespace_are_not_whole_placeholders() {
        assert_eq!(
            render_str("{{ s }}", &vars(), Mode::Strict).unwrap(),
            json!("{{ s }}")
        );
        assert_eq!(
            render_str(" {{n}}", &vars(), Mode::Strict).unwrap(),
            json!(" 3")
        );
        assert_eq!(
            render_str("{{{n}}}", &vars(), Mode::Strict).unwrap(),
            json!("{3}")
        );
    }

    #[test]
    fn missing_keys_fail_strict_and_stay_lenient() {
        let err = render_str("a {{missing}}", &vars(), Mode::Strict).unwrap_err();
        assert_eq!(err.to_string(), "missing template key `missing`");
        assert_eq!(
            render(
                &json!({"x": "{{missing}}", "y": "a {{missing}} {{n}}"}),
                &vars(),
                Mode::Lenient
            )
            .unwrap(),
            json!({"x": "{{missing}}", "y": "a {{missing}} 3"})
        );
    }

    #[test]
    fn object_keys_are_not_rendered_and_scalars_pass_through() {
        let template = json!({"{{s}}": 1.5, "list": ["{{n}}", false]});
        assert_eq!(
            render(&template, &vars(), Mode::Strict).unwrap(),
            json!({"{{s}}": 1.5, "list": [3, false]})
        );
    }

    #[test]
    fn graphql_query_keys_are_found() {
        let body = json!({"query": "{ Media(search: \"{{search}}\", type: ANIME) { id } }"});
        assert_eq!(keys(&body), ["search"]);
    }
}

//! The values a step sends and keeps: request bodies rendered from the values so far (JSON
//! text read as JSON first), and the value of a parameter, output or replacement — a runtime
//! expression, a literal, or a selector (JSONPath, JSON Pointer, XPath) over its context.

use serde_json::Value;

use crate::expression::{Expression, ExpressionError, Part, Template};
use crate::model::{ExpressionKind, Selectable, SelectorType};
use crate::runtime::{Values, as_text};

/// A request body: its strings rendered. A JSON or form body written as JSON text (`payload: |`
/// then JSON) is read as JSON first, and a string in it that is one embedded expression and nothing else
/// (`"{$inputs.customer}"`, quoted because JSON text must be) takes the expression's value with
/// its type; elsewhere embedded expressions give text, as the specification says.
pub(super) fn render_payload(
    payload: &Value,
    content_type: Option<&str>,
    values: &Values,
) -> Result<Value, ExpressionError> {
    let json_text = match payload {
        Value::String(text) if content_type.is_some_and(|kind| is_json(kind) || is_form(kind)) => {
            serde_json::from_str::<Value>(text).ok()
        }
        _ => None,
    };
    match json_text {
        Some(parsed) => typed(&parsed, values),
        None => values.render_value(payload),
    }
}

fn typed(value: &Value, values: &Values) -> Result<Value, ExpressionError> {
    Ok(match value {
        Value::String(text) => match Template::parse(text)? {
            Template::Embedded(parts) if parts.len() == 1 => match &parts[0] {
                Part::Expression(expression) => {
                    crate::condition::Resolver::resolve(values, expression).unwrap_or(Value::Null)
                }
                Part::Text(_) => values.render(text)?,
            },
            _ => values.render(text)?,
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| typed(item, values))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| Ok((key.clone(), typed(item, values)?)))
                .collect::<Result<_, ExpressionError>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether a content type is a URL-encoded form.
fn is_form(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// Whether a content type is JSON (`application/json`, `application/vnd.api+json`, …).
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// The value of a parameter, output or replacement: a runtime expression (or text embedding
/// them), a literal (its strings rendered), or a selector applied to its context.
pub(super) fn select(
    selectable: &Selectable,
    values: &Values,
    stop: crate::xpath::Stop<'_>,
) -> Result<Value, String> {
    match selectable {
        Selectable::Value(value) => values
            .render_value(value)
            .map_err(|error| error.to_string()),
        Selectable::Selector(selector) => {
            let context = Expression::parse(&selector.context)
                .map_err(|error| format!("`{}`: {error}", selector.context))?;
            let subject =
                crate::condition::Resolver::resolve(values, &context).unwrap_or(Value::Null);
            let kind = match &selector.kind {
                SelectorType::Named(kind) => *kind,
                SelectorType::Versioned(versioned) => versioned.kind,
            };
            match kind {
                ExpressionKind::Jsonpointer => Ok(subject
                    .pointer(selector.selector.trim_start_matches('#'))
                    .cloned()
                    .unwrap_or(Value::Null)),
                ExpressionKind::Jsonpath => {
                    let query = jsonpath_rust::parser::parse_json_path(&selector.selector)
                        .map_err(|error| format!("`{}`: {error}", selector.selector))?;
                    let found = jsonpath_rust::query::js_path_process(&query, &subject)
                        .map_err(|error| format!("`{}`: {error}", selector.selector))?;
                    Ok(match found.as_slice() {
                        [] => Value::Null,
                        [one] => one.clone().val().clone(),
                        many => Value::Array(
                            many.iter().map(|node| node.clone().val().clone()).collect(),
                        ),
                    })
                }
                ExpressionKind::Xpath => {
                    let found =
                        crate::xpath::select(as_text(&subject), selector.selector.clone(), stop)
                            .map_err(|error| match error {
                            crate::xpath::XPathError::NotBuilt => {
                                "XPath selectors are not evaluated by this build of wayline (feature `xpath`)".to_owned()
                            }
                            crate::xpath::XPathError::Document(reason) => {
                                format!("`{}` is not an XML document: {reason}", selector.context)
                            }
                            crate::xpath::XPathError::Query(reason) => {
                                format!("`{}`: {reason}", selector.selector)
                            }
                            crate::xpath::XPathError::Stopped(reason) => {
                                format!("`{}`: given up: {reason}", selector.selector)
                            }
                        })?;
                    Ok(match found.as_slice() {
                        [] => Value::Null,
                        [one] => Value::String(one.clone()),
                        many => Value::Array(many.iter().cloned().map(Value::String).collect()),
                    })
                }
            }
        }
    }
}

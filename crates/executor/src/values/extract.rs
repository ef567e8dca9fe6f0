//! Extraction paths over JSON: dot paths (`items.0.name`, the Python original's form), JSONPath
//! (`$.items[0].name`, RFC 9535) and JSON Pointer (`/items/0/name`), each compiled once.

use std::fmt;

use jsonpath_rust::parser::model::{JpQuery, Segment, Selector};
use serde_json::Value;

/// A compiled extraction path.
///
/// ```
/// use serde_json::json;
/// use wayline_executor::extract::Path;
///
/// let body = json!({"items": [{"id": 7, "tags": ["a", "b"]}, {"id": 9, "tags": []}]});
/// for source in ["items.0.id", "$.items[0].id", "/items/0/id"] {
///     assert_eq!(Path::compile(source).unwrap().extract(&body), Some(json!(7)));
/// }
/// // A query that can select several nodes gives a list, possibly empty.
/// let ids = Path::compile("$.items[*].id").unwrap();
/// assert_eq!(ids.extract(&body), Some(json!([7, 9])));
/// assert_eq!(Path::compile("items.5.id").unwrap().extract(&body), None);
/// ```
#[derive(Clone)]
pub struct Path {
    source: String,
    kind: PathKind,
}

#[derive(Clone)]
enum PathKind {
    Dot(Vec<String>),
    Pointer,
    JsonPath { query: Box<JpQuery>, singular: bool },
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Path").field(&self.source).finish()
    }
}

/// A path that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid path `{path}`: {message}")]
pub struct PathError {
    /// The path as written.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Path {
    /// Compiles `source`: `$…` is JSONPath, `/…` (or empty) JSON Pointer, anything else a dot
    /// path.
    pub fn compile(source: &str) -> Result<Path, PathError> {
        let kind = if source.starts_with('$') {
            let query =
                jsonpath_rust::parser::parse_json_path(source).map_err(|error| PathError {
                    path: source.to_owned(),
                    message: error.to_string(),
                })?;
            let singular = query.segments.iter().all(|segment| {
                matches!(
                    segment,
                    Segment::Selector(Selector::Name(_) | Selector::Index(_))
                )
            });
            PathKind::JsonPath {
                query: Box::new(query),
                singular,
            }
        } else if source.starts_with('/') {
            PathKind::Pointer
        } else {
            PathKind::Dot(
                wayline_core::reference::segments(source)
                    .map(str::to_owned)
                    .collect(),
            )
        };
        Ok(Path {
            source: source.to_owned(),
            kind,
        })
    }

    /// The path as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The value at the path, or `None` when it is not there. A JSONPath query that is not
    /// singular (wildcards, slices, filters, descendants, several selectors) gives the list of
    /// every node it selects, which may be empty.
    pub fn extract(&self, value: &Value) -> Option<Value> {
        match &self.kind {
            PathKind::Dot(segments) => walk(value, segments).ok().cloned(),
            PathKind::Pointer => value.pointer(&self.source).cloned(),
            PathKind::JsonPath { query, singular } => {
                let nodes = query_nodes(query, value)?;
                if *singular {
                    nodes.into_iter().next()
                } else {
                    Some(Value::Array(nodes))
                }
            }
        }
    }

    /// Every node a JSONPath query selects (for dot paths and pointers: zero or one).
    pub fn select(&self, value: &Value) -> Vec<Value> {
        match &self.kind {
            PathKind::JsonPath { query, .. } => query_nodes(query, value).unwrap_or_default(),
            _ => self.extract(value).into_iter().collect(),
        }
    }
}

fn query_nodes(query: &JpQuery, value: &Value) -> Option<Vec<Value>> {
    jsonpath_rust::query::js_path_process(query, value)
        .ok()
        .map(|nodes| nodes.into_iter().map(|node| node.val.clone()).collect())
}

/// Why a dot path could not be walked (the Python original's rules: keys on objects, integer
/// indexes on lists, negative indexes from the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkError {
    /// An object has no such key.
    MissingField {
        /// The key looked for.
        field: String,
        /// The keys the object has (the first [`FIELDS_SHOWN`] of them), to say what is there.
        fields: Vec<String>,
        /// How many more keys it has.
        more: usize,
    },
    /// A list index is not an integer.
    BadIndex(String),
    /// A list index is out of range.
    OutOfRange(String),
    /// A scalar cannot be walked into.
    Scalar(&'static str),
}

impl fmt::Display for WalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkError::MissingField {
                field,
                fields,
                more,
            } => {
                write!(f, "output has no field `{field}`")?;
                if fields.is_empty() {
                    return write!(f, " (it is an empty object)");
                }
                let listed: Vec<String> = fields.iter().map(|name| format!("`{name}`")).collect();
                write!(f, " (its fields: {}", listed.join(", "))?;
                if *more > 0 {
                    write!(f, " and {more} more")?;
                }
                // A JSON list answer is kept as `{"items": [...], "count": n}`.
                if field.parse::<i64>().is_ok() && fields.iter().any(|name| name == "items") {
                    write!(
                        f,
                        "; a list answer is kept under `items`: write `items.{field}`"
                    )?;
                }
                write!(f, ")")
            }
            WalkError::BadIndex(segment) => write!(f, "cannot index a list with `{segment}`"),
            WalkError::OutOfRange(segment) => write!(f, "list index `{segment}` is out of range"),
            WalkError::Scalar(kind) => write!(f, "cannot walk into a {kind}"),
        }
    }
}

/// How many of an object's keys [`WalkError::MissingField`] names.
pub const FIELDS_SHOWN: usize = 12;

/// Walks `segments` into `value`.
pub fn walk<'v, S: AsRef<str>>(value: &'v Value, segments: &[S]) -> Result<&'v Value, WalkError> {
    let mut current = value;
    for segment in segments {
        let segment = segment.as_ref();
        current = match current {
            Value::Object(fields) => {
                fields.get(segment).ok_or_else(|| WalkError::MissingField {
                    field: segment.to_owned(),
                    fields: fields.keys().take(FIELDS_SHOWN).cloned().collect(),
                    more: fields.len().saturating_sub(FIELDS_SHOWN),
                })?
            }
            Value::Array(items) => {
                let index: i64 = segment
                    .parse()
                    .map_err(|_| WalkError::BadIndex(segment.to_owned()))?;
                let position = if index < 0 {
                    items.len().checked_sub(index.unsigned_abs() as usize)
                } else {
                    Some(index as usize)
                };
                position
                    .and_then(|position| items.get(position))
                    .ok_or_else(|| WalkError::OutOfRange(segment.to_owned()))?
            }
            other => return Err(WalkError::Scalar(json_type(other))),
        };
    }
    Ok(current)
}

/// The JSON type name of a value (`null`, `boolean`, `number`, `string`, `array`, `object`).
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_missing_field_names_the_fields_there_and_the_list_wrapper() {
        let message = |value: Value, path: &[&str]| walk(&value, path).unwrap_err().to_string();
        assert_eq!(
            message(json!({"items": [{"id": 1}], "count": 1}), &["0", "id"]),
            "output has no field `0` (its fields: `items`, `count`; a list answer is kept under `items`: write `items.0`)"
        );
        assert_eq!(
            message(json!({"id": 1, "title": "x"}), &["name"]),
            "output has no field `name` (its fields: `id`, `title`)"
        );
        assert_eq!(
            message(json!({}), &["name"]),
            "output has no field `name` (it is an empty object)"
        );
        let wide: serde_json::Map<String, Value> =
            (0..20).map(|n| (format!("f{n:02}"), json!(n))).collect();
        let wide = message(Value::Object(wide), &["x"]);
        assert!(wide.ends_with("`f11` and 8 more)"), "{wide}");
    }

    #[test]
    fn dot_paths_follow_seed_rules() {
        let value = json!({"a": [{"b": 1}, {"b": 2}]});
        assert_eq!(walk(&value, &["a", "-1", "b"]), Ok(&json!(2)));
        assert_eq!(
            walk(&value, &["a", "x"]),
            Err(WalkError::BadIndex("x".into()))
        );
        assert_eq!(
            walk(&value, &["a", "0", "b", "c"]),
            Err(WalkError::Scalar("number"))
        );
        assert_eq!(
            walk(&value, &["z"]),
            Err(WalkError::MissingField {
                field: "z".into(),
                fields: vec!["a".into()],
                more: 0
            })
        );
        assert_eq!(
            walk(&value, &["a", "-3"]),
            Err(WalkError::OutOfRange("-3".into()))
        );
    }

    #[test]
    fn invalid_jsonpath_is_an_error() {
        let error = Path::compile("$.a[").unwrap_err();
        assert_eq!(error.path, "$.a[");
    }

    #[test]
    fn pointer_and_root() {
        let value = json!({"a/b": {"c": [true]}});
        assert_eq!(
            Path::compile("/a~1b/c/0").unwrap().extract(&value),
            Some(json!(true))
        );
        assert_eq!(Path::compile("$").unwrap().extract(&value), Some(value));
    }
}

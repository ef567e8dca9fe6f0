//! An OpenAPI schema as plain JSON Schema (draft 2020-12), so a response can be checked against
//! it by any JSON Schema validator: OpenAPI 3.0's `nullable` (and Swagger's `x-nullable`)
//! becomes a `null` type, draft-4 style boolean `exclusiveMinimum`/`exclusiveMaximum` become
//! numbers, and Swagger's `type: file` (a binary body) checks nothing. Everything else is JSON
//! Schema already, or an annotation a validator ignores.

use serde_json::{Map, Value};

/// `schema` as JSON Schema 2020-12.
pub(crate) fn json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(object(map)),
        other => other.clone(),
    }
}

/// Keywords whose value is a schema.
const ONE: [&str; 6] = ["additionalProperties", "items", "not", "if", "then", "else"];
/// Keywords whose value is a list of schemas.
const MANY: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const NAMED: [&str; 3] = ["properties", "patternProperties", "$defs"];

fn object(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        let converted = if ONE.contains(&key.as_str()) {
            match value {
                // Swagger's tuple-less `items: [...]` is a list of schemas too.
                Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
                other => json_schema(other),
            }
        } else if MANY.contains(&key.as_str()) {
            match value {
                Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
                other => other.clone(),
            }
        } else if NAMED.contains(&key.as_str()) {
            match value {
                Value::Object(named) => Value::Object(
                    named
                        .iter()
                        .map(|(name, schema)| (name.clone(), json_schema(schema)))
                        .collect(),
                ),
                other => other.clone(),
            }
        } else {
            value.clone()
        };
        out.insert(key.clone(), converted);
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(exclusive)) = out.get(flag).cloned() {
            out.remove(flag);
            if exclusive && let Some(limit) = out.remove(bound) {
                out.insert(flag.to_owned(), limit);
            }
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("file") {
        out.remove("type");
    }
    let nullable = [out.remove("nullable"), out.remove("x-nullable")]
        .into_iter()
        .flatten()
        .any(|flag| flag == Value::Bool(true));
    if nullable {
        return admit_null(out);
    }
    out
}

/// `schema` also admitting `null`.
fn admit_null(mut schema: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get_mut("type") {
        Some(Value::String(kind)) => {
            let kind = Value::String(std::mem::take(kind));
            schema.insert(
                "type".to_owned(),
                Value::Array(vec![kind, Value::from("null")]),
            );
            schema
        }
        Some(Value::Array(kinds)) => {
            if !kinds.contains(&Value::from("null")) {
                kinds.push(Value::from("null"));
            }
            schema
        }
        _ => Map::from_iter([(
            "anyOf".to_owned(),
            Value::Array(vec![
                Value::Object(schema),
                serde_json::json!({"type": "null"}),
            ]),
        )]),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nullable_becomes_a_null_type_at_any_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "nullable": true},
                "tags": {"type": "array", "items": {"type": "string", "x-nullable": true}},
                "state": {"type": "string", "enum": ["A", "B"], "nullable": true},
                "any": {"nullable": true, "description": "anything"},
                "kept": {"type": "string", "nullable": false}
            }
        });
        let converted = json_schema(&schema);
        let properties = &converted["properties"];
        assert_eq!(properties["name"], json!({"type": ["string", "null"]}));
        assert_eq!(
            properties["tags"]["items"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(properties["state"]["enum"], json!(["A", "B", null]));
        assert_eq!(
            properties["any"],
            json!({"anyOf": [{"description": "anything"}, {"type": "null"}]})
        );
        assert_eq!(properties["kept"], json!({"type": "string"}));
    }

    #[test]
    fn draft_four_bounds_become_numbers() {
        assert_eq!(
            json_schema(
                &json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false})
            ),
            json!({"type": "integer", "exclusiveMinimum": 1, "maximum": 9})
        );
        assert_eq!(json_schema(&json!({"type": "file"})), json!({}));
    }
}

//! Where the values a target gives go in a request, and whether an answer shows them.
//! "update its title to Second" puts `Second` in the operation's `title` input, typed as the
//! spec types it; a value for a field the operation has no input of goes into the object body
//! field that holds the resource's own fields (`data` of Kinto's `{"data": {...}}`); "named
//! demo" fills `name`, or the operation's one name-like field. A read after an update checks
//! that the answer shows the new values.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde_json::Value;
use wayline_registry::openapi::{Operation, Parameter, ParameterLocation};

use crate::names;

/// `text` as the JSON type `kind` says (`5` for an integer); as text when it says nothing or
/// the text is not of that type.
pub(crate) fn typed(text: &str, kind: Option<&str>) -> Value {
    let parsed = match kind {
        Some("integer") => text.parse::<i64>().ok().map(Value::from),
        Some("number") => text.parse::<f64>().ok().map(Value::from),
        Some("boolean") => text.parse::<bool>().ok().map(Value::from),
        Some("object" | "array") => serde_json::from_str(text).ok(),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::from(text))
}

/// The input of `operation` that takes a value for `field`: one of that name in any
/// convention; for `name` (from "named x" or "rename it to x"), the one name-like field.
fn input_for<'o>(operation: &'o Operation, field: &str) -> Option<&'o Parameter> {
    let writable = |parameter: &&Parameter| {
        !parameter.read_only
            && matches!(
                parameter.location,
                ParameterLocation::Body | ParameterLocation::Query | ParameterLocation::Path
            )
    };
    let named = operation
        .parameters
        .iter()
        .filter(writable)
        .find(|parameter| {
            let last = parameter.name.rsplit('.').next().unwrap_or(&parameter.name);
            names::same_name(&parameter.name, field) || names::same_name(last, field)
        });
    named.or_else(|| {
        if field != "name" {
            return None;
        }
        let mut name_like = operation
            .parameters
            .iter()
            .filter(writable)
            .filter(|parameter| parameter.location == ParameterLocation::Body)
            .filter(|parameter| names::is_name_like(&parameter.name));
        match (name_like.next(), name_like.next()) {
            (Some(only), None) => Some(only),
            (Some(_), Some(_)) => None,
            // No name field: a resource named by its path's parameter is renamed by a body
            // field of that name (Jupyter's `PATCH /api/contents/{path}` with `{"path": ...}`).
            (None, _) => {
                let item = item_parameter(&operation.path)?;
                operation
                    .parameters
                    .iter()
                    .filter(writable)
                    .find(|parameter| {
                        parameter.location == ParameterLocation::Body
                            && names::same_name(&parameter.name, &item)
                    })
            }
        }
    })
}

/// The parameter an item path ends in (`path` of `/api/contents/{path}`).
fn item_parameter(path: &str) -> Option<String> {
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    let name = last.strip_prefix('{')?.split('}').next()?;
    Some(name.to_owned())
}

/// The object body field that holds a resource's own fields: one named as an envelope is
/// (`data`, `result`, ...), typed an object.
fn holder(operation: &Operation) -> Option<&Parameter> {
    operation.parameters.iter().find(|parameter| {
        parameter.location == ParameterLocation::Body
            && parameter
                .kind
                .as_deref()
                .is_none_or(|kind| kind == "object")
            && crate::envelope::ENVELOPE_KEYS
                .iter()
                .any(|key| key.eq_ignore_ascii_case(&parameter.name))
    })
}

/// Puts `values` into `inputs` for a call of `operation` (see the module's doc); answers the
/// fields no input takes.
pub(crate) fn place(
    operation: &Operation,
    values: &BTreeMap<String, String>,
    inputs: &mut IndexMap<String, Value>,
) -> Vec<String> {
    let mut unplaced = Vec::new();
    for (field, text) in values {
        if let Some(parameter) = input_for(operation, field) {
            inputs.insert(
                parameter.input.clone(),
                typed(text, parameter.kind.as_deref()),
            );
            continue;
        }
        if let Some(holder) = holder(operation) {
            let held = inputs
                .entry(holder.input.clone())
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if !held.is_object() {
                *held = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(fields) = held {
                fields.insert(field.clone(), Value::from(text.as_str()));
            }
            continue;
        }
        unplaced.push(field.clone());
    }
    unplaced
}

/// The values of `expected` that `object` (a resource found in an answer) does not show, each
/// as `field` reads `seen`, not `wanted`.
pub(crate) fn differences(object: &Value, expected: &BTreeMap<String, String>) -> Vec<String> {
    expected
        .iter()
        .filter_map(|(field, wanted)| {
            let seen = object.as_object().and_then(|fields| {
                fields
                    .iter()
                    .find(|(key, _)| names::same_name(key, field))
                    .map(|(_, value)| value)
            });
            let matches = seen.is_some_and(|seen| match seen {
                Value::String(text) => text == wanted,
                // A number or a flag reads as the text of its JSON (`5`, `true`).
                other => serde_json::from_str::<Value>(wanted).is_ok_and(|parsed| parsed == *other),
            });
            (!matches).then(|| {
                format!(
                    "`{field}` reads {}, not {wanted:?}",
                    seen.map_or("nothing".to_owned(), Value::to_string)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;
    use wayline_registry::openapi::ApiSpec;

    use super::*;

    fn operation(body: Value) -> Operation {
        let spec = json!({"openapi": "3.0.0", "paths": {"/things/{id}": {"patch": {
            "operationId": "patchThing",
            "parameters": [{"name": "id", "in": "path", "required": true}],
            "requestBody": {"content": {"application/json": {"schema": body}}},
            "responses": {"200": {"description": "ok"}}}}}});
        ApiSpec::parse(&spec.to_string(), Path::new("spec.json"))
            .unwrap()
            .operations
            .remove(0)
    }

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(field, value)| ((*field).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn values_go_to_their_input_typed_or_into_the_resource_holder() {
        let plain = operation(json!({"type": "object", "properties": {
            "title": {"type": "string"}, "size": {"type": "integer"}, "displayName": {"type": "string"}}}));
        let mut inputs = IndexMap::new();
        let unplaced = place(
            &plain,
            &values(&[
                ("title", "Second"),
                ("size", "5"),
                ("name", "demo"),
                ("color", "red"),
            ]),
            &mut inputs,
        );
        assert_eq!(inputs["title"], json!("Second"));
        assert_eq!(inputs["size"], json!(5));
        // Two name-like fields: which one "named" means is not guessed.
        assert_eq!(unplaced, ["color", "name"]);
        let named = operation(json!({"type": "object", "properties": {
            "displayName": {"type": "string"}, "size": {"type": "integer"}}}));
        let mut inputs = IndexMap::new();
        assert!(place(&named, &values(&[("name", "demo")]), &mut inputs).is_empty());
        assert_eq!(
            inputs["displayName"],
            json!("demo"),
            "the one name-like field"
        );
        // Kinto: the fields of a record go inside `data`, beside what it holds already.
        let kinto = operation(json!({"type": "object", "properties": {
            "data": {"type": "object", "additionalProperties": {}}, "permissions": {"type": "object"}}}));
        let mut inputs = IndexMap::new();
        inputs.insert("data".to_owned(), json!({"kept": 1}));
        assert!(place(&kinto, &values(&[("title", "Second")]), &mut inputs).is_empty());
        assert_eq!(inputs["data"], json!({"kept": 1, "title": "Second"}));
    }

    #[test]
    fn a_read_back_names_what_differs() {
        let expected = values(&[("title", "Second"), ("size", "5")]);
        assert!(differences(&json!({"title": "Second", "size": 5}), &expected).is_empty());
        assert_eq!(
            differences(&json!({"title": "First"}), &expected),
            [
                "`size` reads nothing, not \"5\"",
                "`title` reads \"First\", not \"Second\""
            ]
        );
    }
}

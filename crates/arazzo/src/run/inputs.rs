//! A workflow's inputs checked against its JSON Schema before it runs, with the schema's
//! defaults filled in. `$ref`s to `#/components/inputs/NAME` are resolved from the document.

use serde_json::{Map, Value};

use crate::model::ArazzoDocument;

/// How deep `$ref`s to the document's input components are followed (a loop stops here).
const MAX_REF_DEPTH: usize = 32;

/// `inputs` with the schema's top-level defaults added, or every way they break the schema.
pub(crate) fn check(
    document: &ArazzoDocument,
    schema: Option<&Value>,
    mut inputs: Map<String, Value>,
) -> Result<Map<String, Value>, Vec<String>> {
    let Some(schema) = schema else {
        return Ok(inputs);
    };
    let schema = inline(document, schema, 0);
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !inputs.contains_key(name)
            {
                inputs.insert(name.clone(), default.clone());
            }
        }
    }
    let validator = match jsonschema::validator_for(&schema) {
        Ok(validator) => validator,
        Err(error) => return Err(vec![format!("the inputs schema is not valid: {error}")]),
    };
    let value = Value::Object(inputs);
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("{at}: {error}")
            }
        })
        .collect();
    match (problems.is_empty(), value) {
        (true, Value::Object(inputs)) => Ok(inputs),
        (_, _) => Err(problems),
    }
}

/// The values of `inputs` that are credentials, to be masked wherever the run shows them: an
/// input the schema marks `format: password` or `writeOnly`, or whose name says it holds a secret
/// (`token`, `client_secret`, `apiKey`…), and inside any input, the members so named.
pub(crate) fn secrets(
    document: &ArazzoDocument,
    schema: Option<&Value>,
    inputs: &Map<String, Value>,
) -> Vec<String> {
    let schema = schema.map(|schema| inline(document, schema, 0));
    let marked = |name: &str| {
        let Some(property) = schema
            .as_ref()
            .and_then(|schema| schema.get("properties")?.get(name))
        else {
            return false;
        };
        property.get("format").and_then(Value::as_str) == Some("password")
            || property.get("writeOnly").and_then(Value::as_bool) == Some(true)
    };
    let mut found = Vec::new();
    for (name, value) in inputs {
        if marked(name) || wayline_core::secret::is_secret_name(name) {
            texts(value, &mut found);
        } else {
            named(value, &mut found);
        }
    }
    found
}

/// Every string (and number) in `value`.
fn texts(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(text) => found.push(text.clone()),
        Value::Number(number) => found.push(number.to_string()),
        Value::Array(items) => items.iter().for_each(|item| texts(item, found)),
        Value::Object(map) => map.values().for_each(|item| texts(item, found)),
        _ => {}
    }
}

/// The values of the members of `value` whose names say they hold secrets, at any depth.
fn named(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| named(item, found)),
        Value::Object(map) => {
            for (key, item) in map {
                if wayline_core::secret::is_secret_name(key) {
                    texts(item, found);
                } else {
                    named(item, found);
                }
            }
        }
        _ => {}
    }
}

/// `schema` with each `$ref` to `#/components/inputs/NAME` replaced by that schema.
fn inline(document: &ArazzoDocument, schema: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref")
                && let Some(name) = reference.strip_prefix("#/components/inputs/")
                && let Some(target) = document
                    .components
                    .as_ref()
                    .and_then(|components| components.inputs.get(name))
                && depth < MAX_REF_DEPTH
            {
                return inline(document, target, depth + 1);
            }
            Value::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), inline(document, value, depth)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inline(document, item, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document() -> ArazzoDocument {
        crate::load(
            "arazzo: 1.0.1\ninfo: {title: T, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\n\
             workflows: [{workflowId: w, steps: [{stepId: s, operationId: op}]}]\n\
             components:\n  inputs:\n    store: {type: string, default: main}\n",
            "t.arazzo.yaml",
        )
        .unwrap()
    }

    #[test]
    fn defaults_fill_in_and_references_resolve() {
        let schema = json!({"type": "object", "properties": {"store": {"$ref": "#/components/inputs/store"}, "page": {"type": "integer", "default": 1}}});
        let inputs = check(&document(), Some(&schema), Map::new()).unwrap();
        assert_eq!(Value::Object(inputs), json!({"store": "main", "page": 1}));
        let wrong = Map::from_iter([("store".to_owned(), json!(5))]);
        let problems = check(&document(), Some(&schema), wrong).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("/store: "), "{problems:?}");
    }

    #[test]
    fn credentials_are_found_by_schema_and_by_name() {
        let schema = json!({"type": "object", "properties": {"pin": {"type": "string", "format": "password"}, "key": {"writeOnly": true}}});
        let inputs = json!({
            "pin": "1234", "key": "k-9", "client_secret": "s3cret", "user": "ada",
            "nested": {"apiKey": "nk", "name": "x"}, "count": 3
        });
        let Value::Object(inputs) = inputs else {
            unreachable!()
        };
        assert_eq!(
            secrets(&document(), Some(&schema), &inputs),
            ["1234", "k-9", "s3cret", "nk"]
        );
    }

    #[test]
    fn required_inputs_must_be_given() {
        let schema = json!({"type": "object", "required": ["user"], "properties": {"user": {"type": "string"}}});
        let problems = check(&document(), Some(&schema), Map::new()).unwrap_err();
        assert!(
            problems[0].contains("\"user\" is a required property"),
            "{problems:?}"
        );
    }
}

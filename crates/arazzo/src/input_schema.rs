//! A workflow's inputs schema: compiled for checking a run's inputs (with its defaults filled
//! in), read for the inputs that hold credentials, and checked by validation the same way, so
//! `validate` refuses what a run would.
//!
//! `$ref`s to `#/components/inputs/NAME` are left to the JSON Schema validator, which follows
//! them as it validates (the components travel with the schema, where those pointers find them):
//! a schema is never expanded, so components that refer to each other twice per level cost
//! their own size, not two to the power of their depth. Reading defaults and credential marks
//! follows at most [`MAX_REF_HOPS`] `$ref`s from one place, so a loop of references ends.

use serde_json::{Map, Value};

use crate::model::ArazzoDocument;

/// How many `$ref`s in a row are followed to the schema they name (a loop stops here).
const MAX_REF_HOPS: usize = 32;

/// The validator of `schema` (a workflow's `inputs`), its references to the document's input
/// components resolvable; `Err` says why the schema cannot be used.
pub(crate) fn compile(
    document: &ArazzoDocument,
    schema: &Value,
) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(&self_contained(document, schema))
        .map_err(|error| format!("the inputs schema is not valid: {error}"))
}

/// `schema` (a workflow's `inputs`) with the document's input components beside it, under
/// `components.inputs`, where its `$ref`s to `#/components/inputs/NAME` find them: a schema
/// a validator or a client reads on its own, never expanded.
pub(crate) fn self_contained(document: &ArazzoDocument, schema: &Value) -> Value {
    let mut root = schema.clone();
    if let (Value::Object(root), Some(components)) = (&mut root, &document.components)
        && !components.inputs.is_empty()
        && !root.contains_key("components")
    {
        let inputs: Map<String, Value> = components
            .inputs
            .iter()
            .map(|(name, schema)| (name.clone(), schema.clone()))
            .collect();
        root.insert(
            "components".to_owned(),
            Value::Object(Map::from_iter([(
                "inputs".to_owned(),
                Value::Object(inputs),
            )])),
        );
    }
    root
}

/// `schema` (a workflow's `inputs`) as a client reads it on its own: the schema its root
/// `$ref` names (clients expect an object schema at the root), the document's input
/// components beside it, `type: object` said when it was not.
pub(crate) fn for_clients(document: &ArazzoDocument, schema: &Value) -> Value {
    let mut root = self_contained(document, target(document, schema));
    if let Value::Object(root) = &mut root {
        root.entry("type").or_insert_with(|| Value::from("object"));
    }
    root
}

/// The schema `schema` stands for: itself, or what its `$ref` to `#/components/inputs/NAME`
/// names, and so on (at most [`MAX_REF_HOPS`] times).
fn target<'a>(document: &'a ArazzoDocument, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_REF_HOPS {
        let Some(next) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix("#/components/inputs/"))
            .and_then(|name| document.components.as_ref()?.inputs.get(name))
        else {
            break;
        };
        schema = next;
    }
    schema
}

/// The top-level properties of `schema`, each as the schema it stands for.
fn properties<'a>(
    document: &'a ArazzoDocument,
    schema: &'a Value,
) -> impl Iterator<Item = (&'a String, &'a Value)> {
    target(document, schema)
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(move |(name, property)| (name, target(document, property)))
}

/// `inputs` with the schema's top-level defaults added, or every way they break the schema
/// (or why the schema cannot be used).
pub(crate) fn check(
    document: &ArazzoDocument,
    schema: Option<&Value>,
    mut inputs: Map<String, Value>,
) -> Result<Map<String, Value>, Vec<String>> {
    let Some(schema) = schema else {
        return Ok(inputs);
    };
    let validator = compile(document, schema).map_err(|problem| vec![problem])?;
    for (name, property) in properties(document, schema) {
        if let Some(default) = property.get("default")
            && !inputs.contains_key(name)
        {
            inputs.insert(name.clone(), default.clone());
        }
    }
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
    let marked: Vec<&String> = schema
        .into_iter()
        .flat_map(|schema| properties(document, schema))
        .filter(|(_, property)| {
            property.get("format").and_then(Value::as_str) == Some("password")
                || property.get("writeOnly").and_then(Value::as_bool) == Some(true)
        })
        .map(|(name, _)| name)
        .collect();
    let marked = |name: &str| marked.iter().any(|known| *known == name);
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

/// Every string (and number) in the inputs `names` names (an input whose name has a dot is
/// found by its whole name, else by what comes before the first dot).
pub(crate) fn values_of(inputs: &Map<String, Value>, names: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for name in names {
        let value = inputs.get(name).or_else(|| {
            let (head, _) = name.split_once('.')?;
            inputs.get(head)
        });
        if let Some(value) = value {
            texts(value, &mut found);
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

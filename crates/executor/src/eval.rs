//! Evaluating compiled CEL expressions over a run's data.
//!
//! Variables: `inputs` (the run inputs), `steps` (only the step ids the expression names, each
//! that step's output), and with a response at hand `status`, `headers` (lower-case names) and
//! `body` (parsed JSON, or the text when it is not JSON).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use cel::objects::{Key, Map};
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::Expression;

static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// A response as expressions see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseView<'a> {
    pub(crate) status: u16,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a Value,
}

/// What an expression can read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) inputs: &'a IndexMap<String, Value>,
    pub(crate) steps: &'a HashMap<String, Arc<Value>>,
    pub(crate) response: Option<ResponseView<'a>>,
}

/// Evaluates `expression` to JSON.
pub(crate) fn evaluate(expression: &Expression, scope: Scope<'_>) -> Result<Value, String> {
    let mut context = cel::Context::with_env(Arc::clone(&ENV));
    context.add_variable_from_value("inputs", object_to_cel(scope.inputs.iter()));
    let steps = expression.step_refs().iter().filter_map(|id| {
        scope
            .steps
            .get(id)
            .map(|output| (id.as_str(), output.as_ref()))
    });
    context.add_variable_from_value("steps", object_to_cel(steps));
    if let Some(response) = scope.response {
        context.add_variable_from_value("status", cel::Value::Int(i64::from(response.status)));
        let headers = response
            .headers
            .iter()
            .map(|(name, value)| (Key::from(name.as_str()), cel::Value::from(value.as_str())))
            .collect::<HashMap<_, _>>();
        context.add_variable_from_value("headers", cel::Value::Map(Map::from(headers)));
        context.add_variable_from_value("body", to_cel(response.body));
    }
    let value = expression
        .program()
        .execute(&context)
        .map_err(|error| format!("`{}` failed: {}", expression.source(), lowercase(&error)))?;
    from_cel(&value).map_err(|kind| {
        format!(
            "`{}` gave a {kind}, which has no JSON form",
            expression.source()
        )
    })
}

/// Evaluates a condition; anything but a boolean is an error.
pub(crate) fn condition(expression: &Expression, scope: Scope<'_>) -> Result<bool, String> {
    match evaluate(expression, scope)? {
        Value::Bool(holds) => Ok(holds),
        other => Err(format!(
            "`{}` gave {other}, not true or false",
            expression.source()
        )),
    }
}

fn lowercase(error: &impl std::fmt::Display) -> String {
    let text = error.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

fn object_to_cel<'v, K: AsRef<str>>(fields: impl Iterator<Item = (K, &'v Value)>) -> cel::Value {
    let map = fields
        .map(|(key, value)| (Key::from(key.as_ref()), to_cel(value)))
        .collect::<HashMap<_, _>>();
    cel::Value::Map(Map::from(map))
}

/// JSON → CEL. Integers stay integers; other numbers become doubles.
pub(crate) fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(flag) => cel::Value::Bool(*flag),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                cel::Value::Int(int)
            } else if let Some(uint) = number.as_u64() {
                cel::Value::UInt(uint)
            } else {
                cel::Value::Float(number.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(text) => cel::Value::from(text.as_str()),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => object_to_cel(fields.iter()),
    }
}

/// CEL → JSON; the error names a CEL type JSON cannot hold.
pub(crate) fn from_cel(value: &cel::Value) -> Result<Value, &'static str> {
    Ok(match value {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(flag) => Value::Bool(*flag),
        cel::Value::Int(int) => Value::from(*int),
        cel::Value::UInt(uint) => Value::from(*uint),
        cel::Value::Float(float) => serde_json::Number::from_f64(*float)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        cel::Value::String(text) => Value::String(text.to_string()),
        cel::Value::Bytes(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        cel::Value::List(items) => {
            Value::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?)
        }
        cel::Value::Map(map) => {
            let mut entries = map
                .map
                .iter()
                .map(|(key, value)| Ok((key_text(key), from_cel(value)?)))
                .collect::<Result<Vec<_>, &'static str>>()?;
            // CEL maps are unordered; sort so outputs do not depend on hashing.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        cel::Value::Function(..) => return Err("function"),
        _ => return Err("value of an unsupported type"),
    })
}

fn key_text(key: &Key) -> String {
    match key {
        Key::Int(int) => int.to_string(),
        Key::Uint(uint) => uint.to_string(),
        Key::Bool(flag) => flag.to_string(),
        Key::String(text) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scope<'a>(
        inputs: &'a IndexMap<String, Value>,
        steps: &'a HashMap<String, Arc<Value>>,
        body: &'a Value,
    ) -> Scope<'a> {
        Scope {
            inputs,
            steps,
            response: Some(ResponseView {
                status: 200,
                headers: &[],
                body,
            }),
        }
    }

    #[test]
    fn reads_inputs_steps_and_body() {
        let inputs = IndexMap::from([("min".to_owned(), json!(2))]);
        let steps = HashMap::from([("a".to_owned(), Arc::new(json!({"n": 3})))]);
        let body = json!({"state": "ACTIVE", "items": [1, 2.5]});
        let expr = Expression::compile(
            "body.state == 'ACTIVE' && steps.a.n > inputs.min && status == 200",
        )
        .unwrap();
        assert_eq!(condition(&expr, scope(&inputs, &steps, &body)), Ok(true));
        let expr = Expression::compile("{'n': steps.a.n * 2, 'first': body.items}").unwrap();
        assert_eq!(
            evaluate(&expr, scope(&inputs, &steps, &body)),
            Ok(json!({"first": [1, 2.5], "n": 6}))
        );
    }

    #[test]
    fn errors_name_the_expression() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({});
        let expr = Expression::compile("body.missing == 1").unwrap();
        let error = condition(&expr, scope(&inputs, &steps, &body)).unwrap_err();
        assert!(error.contains("`body.missing == 1` failed"), "{error}");
        let expr = Expression::compile("1 + 1").unwrap();
        let error = condition(&expr, scope(&inputs, &steps, &body)).unwrap_err();
        assert!(error.contains("not true or false"), "{error}");
    }
}

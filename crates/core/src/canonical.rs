//! Canonical JSON text: every mapping's keys sorted, no whitespace, so equal values (JSON
//! equality ignores key order) have one text. The store hashes workflow graphs with it; Arazzo's
//! loading finds duplicate list items with it.

use serde_json::Value;

/// `value` as canonical JSON text.
///
/// ```
/// use serde_json::json;
/// use wayline_core::canonical::canonical_json;
///
/// assert_eq!(canonical_json(&json!({"b": [1, {"d": 1, "c": 2}], "a": null})), r#"{"a":null,"b":[1,{"c":2,"d":1}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::canonical_json as canonical;

    #[test]
    fn equal_values_have_one_canonical_text_whatever_their_key_order() {
        assert_eq!(
            canonical(&json!({"name": "a", "in": "query", "x": [1, {"b": 2, "a": 1}]})),
            canonical(&json!({"x": [1, {"a": 1, "b": 2}], "in": "query", "name": "a"}))
        );
        assert_ne!(canonical(&json!({"a": 1})), canonical(&json!({"a": 1.0})));
        assert_ne!(canonical(&json!(["a", "b"])), canonical(&json!(["b", "a"])));
        assert_ne!(canonical(&json!("a,b")), canonical(&json!(["a", "b"])));
    }
}

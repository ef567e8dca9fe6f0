//! Resolving a step's `input_mapping` into input values (see `wayline_core::reference`).

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::reference::segments;
use wayline_core::{Reference, Step};

use crate::values::extract::walk;

/// Where step outputs come from while resolving.
pub(crate) trait Outputs {
    /// The output of step `id`, if it has finished successfully.
    fn output(&self, id: &str) -> Option<&Value>;
}

/// What to do with a reference to an output that does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// It is an error (a real run).
    Fail,
    /// It becomes the text `<step.path>` (a dry run).
    Placeholder,
}

/// Resolves every mapping of `step`. `is_step` says whether a name is a step id.
pub(crate) fn resolve(
    step: &Step,
    is_step: &dyn Fn(&str) -> bool,
    run_inputs: &IndexMap<String, Value>,
    outputs: &dyn Outputs,
    unresolved: Unresolved,
) -> Result<IndexMap<String, Value>, String> {
    let mut resolved = IndexMap::with_capacity(step.input_mapping.len());
    for (name, source) in &step.input_mapping {
        let value = match Reference::parse(source, is_step) {
            Reference::Literal => source.clone(),
            Reference::Input { name: input } => match run_inputs.get(input) {
                Some(value) => value.clone(),
                None if unresolved == Unresolved::Placeholder => {
                    Value::String(format!("<$input.{input}>"))
                }
                None => {
                    return Err(format!(
                        "input `{name}` needs the run input `{input}`, which was not given; pass it with --input {input}=VALUE"
                    ));
                }
            },
            Reference::Step { step: from, path } => match outputs.output(from) {
                Some(output) => {
                    let path: Vec<&str> = segments(path).collect();
                    walk(output, &path)
                        .map_err(|error| {
                            format!(
                                "input `{name}` reads `{from}.{}`: step `{from}` {error}",
                                path.join(".")
                            )
                        })?
                        .clone()
                }
                None if unresolved == Unresolved::Placeholder => {
                    Value::String(format!("<{from}.{path}>"))
                }
                None => {
                    return Err(format!(
                        "input `{name}` reads step `{from}`, which has no output"
                    ));
                }
            },
            Reference::Malformed { reason } => {
                return Err(format!("input `{name}`: {reason}"));
            }
        };
        resolved.insert(name.clone(), value);
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    impl Outputs for HashMap<&str, Value> {
        fn output(&self, id: &str) -> Option<&Value> {
            self.get(id)
        }
    }

    #[test]
    fn resolves_inputs_outputs_and_literals() {
        let step = Step::new("b", "t")
            .map("city", "$input.city")
            .map("login", "a.items.-1.login")
            .map("version", "3.5")
            .map("n", 4);
        let outputs = HashMap::from([("a", json!({"items": [{"login": "x"}, {"login": "y"}]}))]);
        let inputs = IndexMap::from([("city".to_owned(), json!("Oslo"))]);
        let resolved =
            resolve(&step, &|id| id == "a", &inputs, &outputs, Unresolved::Fail).unwrap();
        assert_eq!(
            Value::Object(resolved.into_iter().collect()),
            json!({"city": "Oslo", "login": "y", "version": "3.5", "n": 4})
        );
    }

    #[test]
    fn errors_say_what_is_missing() {
        let step = Step::new("b", "t").map("login", "a.items.5.login");
        let outputs = HashMap::from([("a", json!({"items": []}))]);
        let error = resolve(
            &step,
            &|id| id == "a",
            &IndexMap::new(),
            &outputs,
            Unresolved::Fail,
        )
        .unwrap_err();
        assert_eq!(
            error,
            "input `login` reads `a.items.5.login`: step `a` list index `5` is out of range"
        );
        let step = Step::new("b", "t").map("city", "$input.city");
        let error = resolve(
            &step,
            &|_| false,
            &IndexMap::new(),
            &outputs,
            Unresolved::Fail,
        )
        .unwrap_err();
        assert!(error.contains("--input city=VALUE"), "{error}");
    }

    #[test]
    fn placeholders_for_dry_runs() {
        let step = Step::new("b", "t").map("login", "a.items.0.login");
        let outputs: HashMap<&str, Value> = HashMap::new();
        let resolved = resolve(
            &step,
            &|id| id == "a",
            &IndexMap::new(),
            &outputs,
            Unresolved::Placeholder,
        )
        .unwrap();
        assert_eq!(resolved["login"], json!("<a.items.0.login>"));
    }
}

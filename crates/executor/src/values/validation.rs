//! Step validations, as the Python structure-ai-bot project runs them: checks on a step's
//! resolved inputs (before the call) or its output (after it). A failing critical check fails
//! the step; a non-critical one is a warning.
//!
//! Unlike the Python original, unknown check names, bad `min_length` numbers and bad regexes are
//! found when the workflow is prepared, before anything runs.

use regex::Regex;
use serde_json::Value;
use wayline_core::StepValidation;
use wayline_core::reference::segments;

use crate::values::extract::walk;

/// Which data a validation looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Input,
    Output,
}

#[derive(Debug, Clone)]
enum Check {
    NotNull,
    NotEmpty,
    MinLength(usize),
    Regex(Regex),
    Type(TypeName),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeName {
    Str,
    Int,
    Float,
    List,
    Dict,
    Bool,
}

/// A validation ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Validation {
    field: String,
    path: Vec<String>,
    check: Check,
    value: String,
    message: String,
    critical: bool,
    target: Target,
}

/// What the validations of one phase found.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub(crate) errors: Vec<String>,
    pub(crate) warnings: Vec<String>,
}

const CHECKS: [&str; 5] = ["not_null", "not_empty", "min_length", "regex", "type"];

impl Validation {
    /// Compiles one validation; the error says what is wrong and how to fix it.
    pub(crate) fn compile(spec: &StepValidation) -> Result<Validation, String> {
        let value = spec.value.clone().unwrap_or_default();
        let check = match spec.check.as_str() {
            "not_null" => Check::NotNull,
            "not_empty" => Check::NotEmpty,
            "min_length" => Check::MinLength(if value.trim().is_empty() {
                0
            } else {
                value.trim().parse().map_err(|_| {
                    format!(
                        "validation of `{}`: min_length needs a whole number, not `{value}`",
                        spec.field
                    )
                })?
            }),
            "regex" => Check::Regex(Regex::new(&value).map_err(|error| {
                format!("validation of `{}`: invalid regex `{value}`: {error}", spec.field)
            })?),
            "type" => Check::Type(type_name(&value).ok_or_else(|| {
                format!(
                    "validation of `{}`: unknown type `{value}`; use str, int, float, list, dict or bool",
                    spec.field
                )
            })?),
            other => {
                let hint = wayline_core::document::nearest(other, CHECKS)
                    .map(|name| format!(" (did you mean `{name}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "validation of `{}`: unknown check `{other}`{hint}; checks are {}",
                    spec.field,
                    CHECKS.join(", ")
                ));
            }
        };
        let target = match spec.target.as_str() {
            "input" => Target::Input,
            "output" => Target::Output,
            other => {
                return Err(format!(
                    "validation of `{}`: unknown target `{other}`; use `input` or `output`",
                    spec.field
                ));
            }
        };
        Ok(Validation {
            field: spec.field.clone(),
            path: segments(&spec.field).map(str::to_owned).collect(),
            check,
            value,
            message: spec.message.clone(),
            critical: spec.critical,
            target,
        })
    }

    /// The failure message, if `data` fails this check.
    fn failure(&self, data: &Value) -> Option<String> {
        let found = walk(data, &self.path).ok().filter(|value| !value.is_null());
        let field = &self.field;
        let value = &self.value;
        let failure = match (&self.check, found) {
            (Check::NotNull, None) => format!("'{field}' is null"),
            (Check::NotNull, Some(_)) => return None,
            (Check::NotEmpty, Some(found)) if !is_empty(found) => return None,
            (Check::NotEmpty, _) => format!("'{field}' is empty"),
            (Check::MinLength(_), None) => {
                format!("'{field}' is null (expected min_length {value})")
            }
            (Check::MinLength(min), Some(found)) => match length(found) {
                Some(length) if length >= *min => return None,
                Some(length) => format!("'{field}' length {length} < {min}"),
                None => format!("'{field}' has no length (type: {})", python_type(found)),
            },
            (Check::Regex(_), None) => format!("'{field}' is null (expected to match /{value}/)"),
            (Check::Regex(regex), Some(found)) => {
                if regex.is_match(&crate::values::text(found)) {
                    return None;
                }
                format!("'{field}' does not match /{value}/")
            }
            (Check::Type(expected), found) => {
                let found = found.unwrap_or(&Value::Null);
                if is_type(found, *expected) {
                    return None;
                }
                format!("'{field}' is {}, expected {value}", python_type(found))
            }
        };
        Some(if self.message.is_empty() {
            failure
        } else {
            self.message.clone()
        })
    }
}

/// Runs the validations aimed at `target` over `data`.
pub(crate) fn run(validations: &[Validation], target: Target, data: &Value) -> Findings {
    let mut findings = Findings::default();
    for validation in validations.iter().filter(|v| v.target == target) {
        if let Some(message) = validation.failure(data) {
            if validation.critical {
                findings.errors.push(message);
            } else {
                findings.warnings.push(message);
            }
        }
    }
    findings
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

fn length(value: &Value) -> Option<usize> {
    match value {
        Value::String(text) => Some(text.chars().count()),
        Value::Array(items) => Some(items.len()),
        Value::Object(fields) => Some(fields.len()),
        _ => None,
    }
}

fn type_name(name: &str) -> Option<TypeName> {
    Some(match name.trim() {
        "str" | "string" => TypeName::Str,
        "int" | "integer" => TypeName::Int,
        "float" | "number" => TypeName::Float,
        "list" | "array" => TypeName::List,
        "dict" | "object" => TypeName::Dict,
        "bool" | "boolean" => TypeName::Bool,
        _ => return None,
    })
}

fn is_type(value: &Value, expected: TypeName) -> bool {
    match (expected, value) {
        (TypeName::Str, Value::String(_))
        | (TypeName::List, Value::Array(_))
        | (TypeName::Dict, Value::Object(_))
        | (TypeName::Bool, Value::Bool(_)) => true,
        (TypeName::Int, Value::Number(number)) => number.is_i64() || number.is_u64(),
        (TypeName::Float, Value::Number(number)) => number.is_f64(),
        _ => false,
    }
}

/// The Python type name the original's messages use.
fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn validation(check: &str, field: &str, value: Option<&str>, critical: bool) -> Validation {
        let spec: StepValidation = serde_json::from_value(json!({
            "field": field, "check": check, "value": value, "critical": critical
        }))
        .unwrap();
        Validation::compile(&spec).unwrap()
    }

    #[test]
    fn checks_and_messages_follow_the_seed() {
        let data = json!({"name": "", "items": [1, 2], "n": 0, "flag": false, "x": 2.5});
        let cases = [
            (
                validation("not_null", "missing", None, true),
                Some("'missing' is null"),
            ),
            (validation("not_null", "n", None, true), None),
            (
                validation("not_empty", "name", None, true),
                Some("'name' is empty"),
            ),
            (validation("not_empty", "flag", None, true), None),
            (
                validation("min_length", "items", Some("3"), true),
                Some("'items' length 2 < 3"),
            ),
            (
                validation("min_length", "n", Some("1"), true),
                Some("'n' has no length (type: int)"),
            ),
            (validation("regex", "items", Some(r"^\[1"), true), None),
            (
                validation("regex", "name", Some("a"), true),
                Some("'name' does not match /a/"),
            ),
            (validation("type", "x", Some("float"), true), None),
            (
                validation("type", "n", Some("float"), true),
                Some("'n' is int, expected float"),
            ),
            (
                validation("type", "flag", Some("int"), true),
                Some("'flag' is bool, expected int"),
            ),
        ];
        for (validation, expected) in cases {
            assert_eq!(
                validation.failure(&data).as_deref(),
                expected,
                "{validation:?}"
            );
        }
    }

    #[test]
    fn critical_decides_error_or_warning() {
        let data = json!({});
        let validations = [
            validation("not_null", "a", None, true),
            validation("not_null", "b", None, false),
        ];
        let findings = run(&validations, Target::Output, &data);
        assert_eq!(findings.errors, ["'a' is null"]);
        assert_eq!(findings.warnings, ["'b' is null"]);
        assert!(run(&validations, Target::Input, &data).errors.is_empty());
    }

    #[test]
    fn bad_specs_are_caught_early() {
        let spec: StepValidation =
            serde_json::from_value(json!({"field": "a", "check": "not_nul"})).unwrap();
        let error = Validation::compile(&spec).unwrap_err();
        assert!(error.contains("did you mean `not_null`"), "{error}");
        let spec: StepValidation =
            serde_json::from_value(json!({"field": "a", "check": "regex", "value": "("})).unwrap();
        assert!(
            Validation::compile(&spec)
                .unwrap_err()
                .contains("invalid regex")
        );
    }
}

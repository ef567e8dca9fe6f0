//! Checking a response body against the JSON Schema its tool has for the status
//! ([`ToolDefinition::response_schemas`], embedded by an OpenAPI import): the schema for the
//! exact code first, then for its class (`4XX`), then `default`. Each violation is an
//! [`AssertionResult`] naming the JSON Pointer of the offending value and the schema keyword it
//! broke.
//!
//! The validator is the `jsonschema` crate's, behind feature `response-schemas`. Without it a
//! tool whose schemas a step would check is refused when the workflow is prepared, saying which
//! feature to enable; nothing is checked halfway.

use serde_json::Value;
use wayline_core::{AssertionResult, ToolDefinition};

#[cfg(feature = "response-schemas")]
use crate::values::assertion::MAX_SHOWN;
#[cfg(feature = "response-schemas")]
use crate::values::redact::cut;

/// At most this many violations are listed for one response.
#[cfg(feature = "response-schemas")]
const MAX_VIOLATIONS: usize = 10;

/// Which statuses a schema is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum For {
    Code(u16),
    Class(u16),
    Default,
}

impl For {
    fn parse(key: &str) -> Option<For> {
        if key.eq_ignore_ascii_case("default") {
            return Some(For::Default);
        }
        if let Some(class) = key
            .strip_suffix("XX")
            .or_else(|| key.strip_suffix("xx"))
            .and_then(|digit| digit.parse::<u16>().ok())
            .filter(|digit| (1..=5).contains(digit))
        {
            return Some(For::Class(class));
        }
        key.parse::<u16>()
            .ok()
            .filter(|code| (100..=599).contains(code))
            .map(For::Code)
    }
}

/// A compiled schema.
#[cfg(feature = "response-schemas")]
type Validator = jsonschema::Validator;

/// A build without a validator compiles no schema, so it has none to hold.
#[cfg(not(feature = "response-schemas"))]
#[derive(Debug)]
enum Validator {}

/// A tool's response schemas, compiled.
#[derive(Debug, Default)]
pub(crate) struct ResponseSchemas {
    schemas: Vec<(String, For, Validator)>,
}

impl ResponseSchemas {
    /// Compiles the schemas of `tool`; a key that names no status or a schema that is not one
    /// is a problem.
    pub(crate) fn compile(tool: &ToolDefinition) -> Result<ResponseSchemas, Vec<String>> {
        let mut problems = Vec::new();
        let mut schemas = Vec::new();
        for (key, schema) in &tool.response_schemas {
            let Some(status) = For::parse(key) else {
                problems.push(format!(
                    "`response_schemas` of tool `{}`: `{key}` is no status (write a code such as 200, a class such as 4XX, or default)",
                    tool.id
                ));
                continue;
            };
            match compile(schema) {
                Ok(validator) => schemas.push((key.clone(), status, validator)),
                Err(error) => problems.push(format!(
                    "`response_schemas.{key}` of tool `{}` {error}",
                    tool.id
                )),
            }
        }
        if problems.is_empty() {
            Ok(ResponseSchemas { schemas })
        } else {
            Err(problems)
        }
    }

    /// The schema for `status` with the key it is under: the code's, else its class's, else
    /// the default.
    fn for_status(&self, status: u16) -> Option<(&str, &Validator)> {
        let wanted = [For::Code(status), For::Class(status / 100), For::Default];
        wanted.iter().find_map(|wanted| {
            self.schemas
                .iter()
                .find(|(_, status, _)| status == wanted)
                .map(|(key, _, validator)| (key.as_str(), validator))
        })
    }

    /// The check of a response: `None` when there is no schema for its status and none is
    /// `required`; else the results (a single passed one when it is valid).
    pub(crate) fn check(
        &self,
        status: u16,
        body: Option<&Value>,
        required: bool,
    ) -> Option<Vec<AssertionResult>> {
        let Some((key, validator)) = self.for_status(status) else {
            return required.then(|| {
                vec![AssertionResult::new("body", "schema", false).values(
                    format!("a response schema for {status}"),
                    "none in the tool's `response_schemas`",
                )]
            });
        };
        let expected = format!("the response schema for {key}");
        let Some(body) = body else {
            return Some(vec![
                AssertionResult::new("body", "schema", false)
                    .values(expected, "a body that is not JSON"),
            ]);
        };
        let mut results = violations(validator, body, &expected);
        if results.is_empty() {
            results.push(AssertionResult::new("body", "schema", true).values(expected, "valid"));
        }
        Some(results)
    }
}

/// Compiles one schema, or says why it cannot (the sentence follows the schema's name).
#[cfg(feature = "response-schemas")]
fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::validator_for(schema).map_err(|error| format!("is not a JSON Schema: {error}"))
}

#[cfg(not(feature = "response-schemas"))]
fn compile(_schema: &Value) -> Result<Validator, String> {
    Err("cannot be checked: this build of wayline-executor has no JSON Schema validator; enable its feature `response-schemas` (the `wayline` crate's feature of that name), or turn the check off with `expect: {schema: false}`".to_owned())
}

/// The first violations of `body` against `validator`, each naming where and which keyword.
#[cfg(feature = "response-schemas")]
fn violations(validator: &Validator, body: &Value, expected: &str) -> Vec<AssertionResult> {
    validator
        .iter_errors(body)
        .take(MAX_VIOLATIONS)
        .map(|error| {
            let at = error.instance_path().to_string();
            let message = error.to_string();
            AssertionResult::new(
                format!("body {}", if at.is_empty() { "/" } else { at.as_str() }),
                "schema",
                false,
            )
            .values(
                format!("{expected} (at {})", error.schema_path()),
                cut(&message, MAX_SHOWN).to_owned(),
            )
        })
        .collect()
}

#[cfg(not(feature = "response-schemas"))]
fn violations(validator: &Validator, _body: &Value, _expected: &str) -> Vec<AssertionResult> {
    match *validator {}
}

#[cfg(all(test, feature = "response-schemas"))]
mod tests {
    use serde_json::json;
    use wayline_core::document::{Format, parse};

    use super::*;

    fn schemas(yaml: &str) -> Result<ResponseSchemas, Vec<String>> {
        let tool: ToolDefinition = parse(yaml, Format::Yaml, "t.yaml").unwrap();
        ResponseSchemas::compile(&tool)
    }

    const TOOL: &str = "id: t\nname: T\nbase_url: x\nresponse_schemas:\n  '200': {type: object, required: [id], properties: {id: {type: integer}, tags: {type: array, items: {type: string}}}}\n  4XX: {type: object, required: [detail]}\n  default: {type: object}\n";

    #[test]
    fn violations_name_the_pointer_and_the_keyword() {
        let schemas = schemas(TOOL).unwrap();
        let results = schemas
            .check(200, Some(&json!({"id": "7", "tags": ["a", 3]})), false)
            .unwrap();
        let subjects: Vec<&str> = results.iter().map(|r| r.subject.as_str()).collect();
        assert_eq!(subjects, ["body /id", "body /tags/1"], "{results:#?}");
        assert!(results.iter().all(|r| !r.passed));
        assert!(
            results[0]
                .expected
                .as_deref()
                .unwrap()
                .contains("/properties/id/type")
        );
        assert!(results[0].actual.as_deref().unwrap().contains("integer"));
        let valid = schemas.check(200, Some(&json!({"id": 7})), false).unwrap();
        assert!(valid[0].passed);
    }

    #[test]
    fn a_status_finds_its_code_then_its_class_then_the_default() {
        let schemas = schemas(TOOL).unwrap();
        let missing_detail = schemas.check(404, Some(&json!({})), false).unwrap();
        assert_eq!(missing_detail[0].subject, "body /");
        assert!(
            missing_detail[0]
                .expected
                .as_deref()
                .unwrap()
                .contains("for 4XX")
        );
        assert!(schemas.check(500, Some(&json!({})), false).unwrap()[0].passed);
        let only_ok = schemas_of_200();
        assert!(only_ok.check(503, Some(&json!({})), false).is_none());
        assert!(!only_ok.check(503, Some(&json!({})), true).unwrap()[0].passed);
        assert!(
            !only_ok.check(200, None, false).unwrap()[0].passed,
            "a body that is not JSON"
        );
    }

    fn schemas_of_200() -> ResponseSchemas {
        schemas("id: t\nname: T\nbase_url: x\nresponse_schemas: {'200': {type: object}}\n").unwrap()
    }

    #[test]
    fn bad_keys_and_schemas_are_problems() {
        let problems =
            schemas("id: t\nname: T\nbase_url: x\nresponse_schemas: {ok: {}, '201': {type: 7}}\n")
                .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`ok` is no status"));
        assert!(problems[1].contains("is not a JSON Schema"));
    }
}

//! Turning a response into a step's output, on both request paths, by the Python
//! structure-ai-bot project's rules for responses.
//!
//! - Status ≥ 400: the step fails with `HTTP <status>: <body>`.
//! - A JSON body with `response_extract.fields`: the output is exactly those fields, each taken
//!   by its path (dot, JSONPath or pointer); a missing one fails the step when `strict`, else is
//!   `null`.
//! - A JSON body otherwise: an array becomes `{"items": [...], "count": n}`, anything else is the
//!   output as it is.
//! - A body that is not JSON: `{"status_code": n, "body": "<text>"}` — unless the tool declares
//!   strict fields to extract, which then fails with a message saying the body is not JSON.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_core::{HttpResponse, ToolDefinition};

use crate::values::extract::{Path, PathError};
use crate::values::redact::cut;

/// How much of an error body goes into a step error.
const MAX_ERROR_BODY: usize = 1_000;

/// A tool's compiled `response_extract`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extraction {
    fields: Vec<(String, Path)>,
    strict: bool,
}

impl Extraction {
    /// Compiles the tool's extraction paths.
    pub(crate) fn compile(tool: &ToolDefinition) -> Result<Extraction, PathError> {
        let Some(extract) = &tool.response_extract else {
            return Ok(Extraction::default());
        };
        let fields = extract
            .fields
            .iter()
            .map(|(name, source)| Ok((name.clone(), Path::compile(source)?)))
            .collect::<Result<_, PathError>>()?;
        Ok(Extraction {
            fields,
            strict: extract.strict,
        })
    }

    fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Applies the extraction to a parsed body.
    pub(crate) fn apply(&self, body: &Value) -> Result<Value, String> {
        let mut output = Map::new();
        for (name, path) in &self.fields {
            let value = match path.extract(body) {
                Some(value) => value,
                None if self.strict => {
                    return Err(format!(
                        "response extraction failed: field '{}' not found",
                        path.source()
                    ));
                }
                None => Value::Null,
            };
            output.insert(name.clone(), value);
        }
        Ok(Value::Object(output))
    }
}

/// The body parsed as JSON, or `None` when it is not JSON (an empty body is not JSON).
pub(crate) fn parse_body(response: &HttpResponse) -> Option<Value> {
    serde_json::from_slice(&response.body).ok()
}

/// The error of a response with status ≥ 400, if it is one.
pub(crate) fn status_error(response: &HttpResponse) -> Option<String> {
    (response.status >= 400).then(|| {
        let text = response.text();
        let body = cut(text.trim(), MAX_ERROR_BODY);
        format!("HTTP {}: {body}", response.status)
    })
}

/// The error of a response whose status is not among the `expected` ones (`201 or 2xx`).
pub(crate) fn unexpected_status(response: &HttpResponse, expected: &str) -> String {
    let text = response.text();
    let body = cut(text.trim(), MAX_ERROR_BODY);
    let shown = if body.is_empty() {
        String::new()
    } else {
        format!(" (body: {body})")
    };
    format!(
        "expectation failed: status in: expected {expected}, got {}{shown}",
        response.status
    )
}

/// The output of a successful response (status < 400), given its parsed body (taken, not
/// copied).
pub(crate) fn output(
    extraction: &Extraction,
    response: &HttpResponse,
    parsed: Option<Value>,
) -> Result<Value, String> {
    match parsed {
        Some(body) if !extraction.is_empty() => extraction.apply(&body),
        Some(Value::Array(items)) => {
            let count = items.len();
            Ok(json!({"items": items, "count": count}))
        }
        Some(body) => Ok(body),
        None if !extraction.is_empty() && extraction.strict => {
            let content_type = response.header("content-type").unwrap_or("none");
            let text = response.text();
            Err(format!(
                "response extraction failed: the response is not JSON (content type {content_type}): {}",
                cut(text.trim(), 200)
            ))
        }
        None => Ok(json!({"status_code": response.status, "body": response.text()})),
    }
}

/// Named step outputs that are paths (`$…`, `/…`) rather than CEL.
pub(crate) fn path_outputs(
    outputs: &IndexMap<String, String>,
) -> Result<Vec<(String, Path)>, PathError> {
    outputs
        .iter()
        .filter(|(_, source)| wayline_core::workflow::is_extraction_path(source))
        .map(|(name, source)| Ok((name.clone(), Path::compile(source)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use wayline_core::document::{Format, parse};

    use super::*;

    fn extraction(yaml: &str) -> Extraction {
        let tool: ToolDefinition = parse(yaml, Format::Yaml, "t.yaml").unwrap();
        Extraction::compile(&tool).unwrap()
    }

    #[test]
    fn lists_are_wrapped_and_objects_kept() {
        let none = Extraction::default();
        let response = HttpResponse::new(200, "[1,2]");
        let parsed = parse_body(&response);
        assert_eq!(
            output(&none, &response, parsed),
            Ok(json!({"items": [1, 2], "count": 2}))
        );
        let response = HttpResponse::new(200, "plain text");
        assert_eq!(
            output(&none, &response, None),
            Ok(json!({"status_code": 200, "body": "plain text"}))
        );
    }

    #[test]
    fn strict_and_lenient_extraction() {
        let strict = extraction(
            "id: t\nname: T\nbase_url: h\nresponse_extract:\n  fields: {name: 0.name, id: '$[0].id', missing: /0/x}\n",
        );
        let body = json!([{"name": "Ada", "id": 1}]);
        let error = strict.apply(&body).unwrap_err();
        assert_eq!(error, "response extraction failed: field '/0/x' not found");
        let lenient = extraction(
            "id: t\nname: T\nbase_url: h\nresponse_extract:\n  strict: false\n  fields: {name: 0.name, id: '$[0].id', missing: /0/x}\n",
        );
        assert_eq!(
            lenient.apply(&body),
            Ok(json!({"name": "Ada", "id": 1, "missing": null}))
        );
        let response = HttpResponse::new(200, "<html>").with_header("Content-Type", "text/html");
        let error = output(&strict, &response, None).unwrap_err();
        assert!(
            error.contains("not JSON (content type text/html)"),
            "{error}"
        );
    }

    #[test]
    fn error_statuses_carry_the_body() {
        let response = HttpResponse::new(404, " not here \n");
        assert_eq!(
            status_error(&response).as_deref(),
            Some("HTTP 404: not here")
        );
        assert_eq!(status_error(&HttpResponse::new(302, "")), None);
    }
}

//! Operations turned into tool definitions (config form), and tool definitions written as YAML.

use serde_json::{Map, Value, json};
use wayline_core::ToolDefinition;

use super::{ApiSpec, Body, Operation, ParameterLocation, Security};

/// Where a tool goes when neither the caller nor the spec names a base URL.
const FALLBACK_BASE_URL: &str = "http://localhost";

/// A tool made from an operation: its document (what is written) and what was guessed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ImportedTool {
    /// The tool.
    pub tool: ToolDefinition,
    /// The tool as a document (what [`tool_yaml`] writes).
    pub document: Value,
    /// What could not be expressed, or was guessed.
    pub warnings: Vec<String>,
}

impl ApiSpec {
    /// One tool per operation, the base URL `base_url` (else the spec's, else
    /// `http://localhost` with a warning).
    pub fn tools(&self, base_url: Option<&str>) -> Vec<ToolDefinition> {
        self.imported_tools(base_url)
            .into_iter()
            .map(|imported| imported.tool)
            .collect()
    }

    /// One tool per operation, with its document and warnings.
    pub fn imported_tools(&self, base_url: Option<&str>) -> Vec<ImportedTool> {
        self.operations
            .iter()
            .map(|operation| self.import_operation(operation, base_url))
            .collect()
    }

    fn import_operation(&self, operation: &Operation, base_url: Option<&str>) -> ImportedTool {
        let mut warnings = Vec::new();
        let base = match base_url.or(self.base_url.as_deref()) {
            Some(base) => base.trim_end_matches('/').to_owned(),
            None => {
                warnings.push(format!(
                    "`{}`: the spec names no host; `base_url` is {FALLBACK_BASE_URL} (override it in the tool-configs file, or import with --base-url)",
                    operation.id
                ));
                FALLBACK_BASE_URL.to_owned()
            }
        };
        let mut document = Map::new();
        document.insert("id".into(), operation.id.clone().into());
        document.insert("name".into(), display_name(operation).into());
        let description = describe(operation);
        if !description.is_empty() {
            document.insert("description".into(), description.into());
        }
        document.insert("base_url".into(), base.into());
        document.insert("method".into(), operation.method.clone().into());
        document.insert("path".into(), operation.path.clone().into());
        document.insert("request".into(), request(operation, &mut warnings));
        if !operation.outputs.is_empty() {
            let fields: Map<String, Value> = operation
                .outputs
                .iter()
                .map(|field| (field.clone(), Value::from(field.clone())))
                .collect();
            // Not every field comes back every time: a missing one is `null`, not a failure.
            document.insert(
                "response_extract".into(),
                json!({"fields": fields, "strict": false}),
            );
        }
        if let Some(auth) = self.auth(operation, &mut warnings) {
            document.insert("auth".into(), auth);
        }
        if !operation.tags.is_empty() {
            document.insert("tags".into(), json!(operation.tags));
        }
        if !operation.response_schemas.is_empty() {
            // Embedded, so a response can be checked against the spec without it at hand.
            document.insert("response_schemas".into(), json!(operation.response_schemas));
        }
        let document = Value::Object(document);
        let tool = serde_json::from_value(document.clone()).unwrap_or_else(|error| {
            // The document is built to the tool format; should it ever not be, the tool is
            // still usable and the warning says what went wrong.
            warnings.push(format!("`{}`: {error}", operation.id));
            ToolDefinition::new(operation.id.clone(), FALLBACK_BASE_URL)
        });
        ImportedTool {
            tool,
            document,
            warnings,
        }
    }

    /// The auth of the first security scheme the operation names that tools can express.
    fn auth(&self, operation: &Operation, warnings: &mut Vec<String>) -> Option<Value> {
        for name in &operation.security {
            match self.security.get(name) {
                Some(Security::Basic) => return Some(json!({"type": "basic"})),
                Some(Security::Bearer) => return Some(json!({"type": "bearer"})),
                Some(Security::ApiKeyHeader { name }) => {
                    return Some(json!({"type": "api_key", "header": name}));
                }
                Some(Security::Digest) => warnings.push(format!(
                    "`{}`: digest auth is not a tool auth type; explore it with a SUT config (auth type digest)",
                    operation.id
                )),
                Some(Security::ApiKeyQuery { name: key }) => warnings.push(format!(
                    "`{}`: the API key goes in the query parameter `{key}`; tools send keys in headers, so pass it as an input",
                    operation.id
                )),
                Some(Security::Other { description }) => warnings.push(format!(
                    "`{}`: security scheme `{name}` ({description}) cannot be expressed in a tool",
                    operation.id
                )),
                None => {}
            }
        }
        None
    }
}

fn display_name(operation: &Operation) -> String {
    if operation.summary.is_empty() {
        operation.id.clone()
    } else {
        operation.summary.clone()
    }
}

/// The summary, or else the first paragraph of the description.
fn describe(operation: &Operation) -> String {
    let first = operation
        .description
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .trim();
    if !operation.summary.is_empty() && first.is_empty() {
        return operation.summary.clone();
    }
    if operation.summary.is_empty() || first.starts_with(&operation.summary) {
        return first.to_owned();
    }
    format!("{}. {first}", operation.summary.trim_end_matches('.'))
}

fn request(operation: &Operation, warnings: &mut Vec<String>) -> Value {
    let inputs = |location: ParameterLocation| -> Vec<&str> {
        operation
            .parameters
            .iter()
            .filter(|parameter| parameter.location == location)
            .map(|parameter| parameter.input.as_str())
            .collect()
    };
    let mut request = Map::new();
    request.insert("path_params".into(), json!(inputs(ParameterLocation::Path)));
    request.insert(
        "query_params".into(),
        json!(inputs(ParameterLocation::Query)),
    );
    let mut headers = Map::new();
    for parameter in &operation.parameters {
        match parameter.location {
            ParameterLocation::Header if parameter.required => {
                headers.insert(
                    parameter.name.clone(),
                    Value::from(format!("{{{{{}}}}}", parameter.input)),
                );
            }
            // A template header is always sent, so only required ones are in the tool.
            ParameterLocation::Header => warnings.push(format!(
                "`{}`: the optional header `{}` is left out",
                operation.id, parameter.name
            )),
            ParameterLocation::Cookie => warnings.push(format!(
                "`{}`: the cookie `{}` is left out (tools send no cookies)",
                operation.id, parameter.name
            )),
            _ => {}
        }
    }
    request.insert("headers".into(), Value::Object(headers));
    if let Some(body) = &operation.body {
        request.insert("body".into(), body_template(operation, body));
        if body.content_type.contains("form") {
            if body.content_type.contains("multipart") {
                warnings.push(format!(
                    "`{}`: a multipart body is sent as a URL-encoded form",
                    operation.id
                ));
            }
            request.insert(
                "content_type".into(),
                "application/x-www-form-urlencoded".into(),
            );
        }
    }
    Value::Object(request)
}

/// The body template: the whole body from one input, or one member per writable field,
/// required ones as `{{input}}` and optional ones as `{{?input}}` (left out when not given).
fn body_template(operation: &Operation, body: &Body) -> Value {
    if let Some(whole) = &body.whole {
        return Value::from(format!("{{{{{whole}}}}}"));
    }
    let members: Map<String, Value> = operation
        .parameters
        .iter()
        .filter(|parameter| parameter.location == ParameterLocation::Body && !parameter.read_only)
        .map(|parameter| {
            let marker = if parameter.required { "" } else { "?" };
            (
                parameter.name.clone(),
                Value::from(format!("{{{{{marker}{}}}}}", parameter.input)),
            )
        })
        .collect();
    Value::Object(members)
}

/// Empty strings, lists and objects, and nulls, left out (recursively).
fn prune(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .iter()
                .filter_map(|(key, inner)| {
                    // A body template is kept as it is (an empty object is a real body).
                    if key == "body" {
                        return Some((key.clone(), inner.clone()));
                    }
                    // An empty `request` is kept too: without one, a tool takes the legacy
                    // request path, which sends a POST's inputs as a JSON body (`{}`).
                    if key == "request" {
                        let request = prune(inner).unwrap_or_else(|| Value::Object(Map::new()));
                        return Some((key.clone(), request));
                    }
                    prune(inner).map(|inner| (key.clone(), inner))
                })
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// A tool document as YAML, empty members left out.
pub fn tool_yaml(document: &Value) -> String {
    let pruned = prune(document).unwrap_or(Value::Null);
    serde_norway::to_string(&pruned).unwrap_or_else(|error| format!("# cannot write: {error}\n"))
}

//! What runtime expressions read while a document runs — its inputs, the outputs of the steps
//! and workflows so far, and the request, response or message of the step at hand — and the
//! values they give, with the specification's rules for strings that embed them.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::condition::Resolver;
use crate::expression::{
    ComponentKind, Expression, ExpressionError, Field, Part, Source, Template, WorkflowPart,
};
use crate::model::ArazzoDocument;

/// A request, response or message, as expressions read it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Exchange {
    /// Headers, in order (names compare without case).
    pub headers: Vec<(String, String)>,
    /// Query parameters (a request's).
    pub query: Vec<(String, String)>,
    /// Path parameters (a request's).
    pub path: Map<String, Value>,
    /// The body: parsed JSON, or the text.
    pub body: Option<Value>,
}

impl Exchange {
    /// An exchange with `headers` and `body`.
    pub fn new(headers: Vec<(String, String)>, body: Option<Value>) -> Exchange {
        Exchange {
            headers,
            body,
            ..Exchange::default()
        }
    }

    /// The first header named `name`, without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// A workflow's values, once it has run (for `$workflows.ID.…`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct WorkflowValues {
    /// Its inputs.
    pub inputs: Map<String, Value>,
    /// Its outputs.
    pub outputs: Map<String, Value>,
    /// Its steps' outputs, by step id.
    pub steps: IndexMap<String, Map<String, Value>>,
}

/// Everything an expression can read at one point of a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Values {
    /// The document's `$self`.
    pub self_uri: Option<String>,
    /// Source description URLs by name (`$sourceDescriptions.NAME.url`).
    pub sources: IndexMap<String, String>,
    /// The document's components, as JSON (`$components.parameters.NAME`).
    pub components: Value,
    /// The workflow's inputs.
    pub inputs: Map<String, Value>,
    /// `$outputs`: the workflow's outputs so far, or, for a step that calls a workflow, that
    /// workflow's.
    pub outputs: Map<String, Value>,
    /// The outputs of the workflow's steps so far, by step id.
    pub steps: IndexMap<String, Map<String, Value>>,
    /// Workflows that have run, by id.
    pub workflows: IndexMap<String, WorkflowValues>,
    /// The step's request URL.
    pub url: Option<String>,
    /// The step's request method.
    pub method: Option<String>,
    /// The step's response status.
    pub status: Option<u16>,
    /// The step's request.
    pub request: Option<Exchange>,
    /// The step's response.
    pub response: Option<Exchange>,
    /// The step's message (AsyncAPI).
    pub message: Option<Exchange>,
}

impl Values {
    /// The values a run of `document` starts with: its `$self`, sources and components, and
    /// the workflow's `inputs`.
    pub fn new(document: &ArazzoDocument, inputs: Map<String, Value>) -> Values {
        Values {
            self_uri: document.self_uri.clone(),
            sources: document
                .source_descriptions
                .iter()
                .map(|source| (source.name.clone(), source.url.clone()))
                .collect(),
            components: document
                .components
                .as_ref()
                .and_then(|components| serde_json::to_value(components).ok())
                .unwrap_or(Value::Null),
            inputs,
            ..Values::default()
        }
    }

    /// The value of `text` as the specification reads a value: a whole runtime expression
    /// gives its value with its type; text embedding `{$…}` gives text, each expression's value
    /// written as text (strings as they are, numbers and booleans as written, `null` as
    /// `null`, lists and mappings as JSON); other text is itself. What is not there reads as
    /// `null`.
    ///
    /// ```
    /// use serde_json::{json, Map};
    /// use wayline_arazzo::runtime::Values;
    ///
    /// let mut values = Values::default();
    /// values.inputs = Map::from_iter([("host".to_owned(), json!("pets.example")), ("page".to_owned(), json!(2))]);
    /// assert_eq!(values.render("$inputs.page").unwrap(), json!(2));
    /// assert_eq!(values.render("https://{$inputs.host}/pets?page={$inputs.page}").unwrap(), json!("https://pets.example/pets?page=2"));
    /// ```
    pub fn render(&self, text: &str) -> Result<Value, ExpressionError> {
        Ok(match Template::parse(text)? {
            Template::Literal(text) => Value::String(text),
            Template::Expression(expression) => self.resolve(&expression).unwrap_or(Value::Null),
            Template::Embedded(parts) => {
                let mut rendered = String::new();
                for part in parts {
                    match part {
                        Part::Text(text) => rendered.push_str(&text),
                        Part::Expression(expression) => {
                            rendered.push_str(&as_text(
                                &self.resolve(&expression).unwrap_or(Value::Null),
                            ));
                        }
                    }
                }
                Value::String(rendered)
            }
        })
    }

    /// `value` with every string in it rendered ([`render`](Self::render)): a payload.
    pub fn render_value(&self, value: &Value) -> Result<Value, ExpressionError> {
        Ok(match value {
            Value::String(text) => self.render(text)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| self.render_value(item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| Ok((key.clone(), self.render_value(item)?)))
                    .collect::<Result<_, ExpressionError>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// A value written into text: strings as they are, other scalars as JSON writes them, lists
/// and mappings as JSON.
pub fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Values {
    /// The value `expression` reads, borrowed, when it is a whole body (`$response.body`,
    /// `$request.body`): what a criterion queries, without a copy of a body that can be large.
    pub(crate) fn body(&self, expression: &Expression) -> Option<&Value> {
        let exchange = match expression {
            Expression::Response(Source::Body(None)) => self.response.as_ref()?,
            Expression::Request(Source::Body(None)) => self.request.as_ref()?,
            _ => return None,
        };
        exchange.body.as_ref()
    }
}

impl Resolver for Values {
    fn resolve(&self, expression: &Expression) -> Option<Value> {
        match expression {
            Expression::Url => self.url.clone().map(Value::String),
            Expression::Method => self.method.clone().map(Value::String),
            Expression::StatusCode => self.status.map(Value::from),
            Expression::SelfUri => self.self_uri.clone().map(Value::String),
            Expression::Request(source) => read_source(self.request.as_ref()?, source),
            Expression::Response(source) => read_source(self.response.as_ref()?, source),
            Expression::Message(source) => read_source(self.message.as_ref()?, source),
            Expression::Inputs(field) => read_field(&self.inputs, field),
            Expression::Outputs(field) => read_field(&self.outputs, field),
            Expression::Steps { step, output } => {
                read_outputs(self.steps.get(step)?, output.as_ref())
            }
            Expression::Workflows {
                workflow,
                part,
                field,
            } => {
                let workflow = self.workflows.get(workflow)?;
                match part {
                    WorkflowPart::Inputs => read_field(&workflow.inputs, field),
                    WorkflowPart::Outputs => read_field(&workflow.outputs, field),
                }
            }
            Expression::WorkflowStep {
                workflow,
                step,
                output,
            } => read_outputs(
                self.workflows.get(workflow)?.steps.get(step)?,
                output.as_ref(),
            ),
            Expression::SourceDescriptions { source, reference } if reference == "url" => {
                self.sources.get(source).cloned().map(Value::String)
            }
            Expression::SourceDescriptions { .. } => None,
            Expression::Components { kind, name } => {
                let kind = match kind {
                    ComponentKind::Parameters => "parameters",
                    ComponentKind::SuccessActions => "successActions",
                    ComponentKind::FailureActions => "failureActions",
                };
                self.components.get(kind)?.get(name).cloned()
            }
        }
    }
}

fn read_source(exchange: &Exchange, source: &Source) -> Option<Value> {
    match source {
        Source::Header(name) => exchange
            .header(name)
            .map(|value| Value::String(value.to_owned())),
        Source::Query(name) => exchange
            .query
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, value)| Value::String(value.clone())),
        Source::Path(name) => exchange.path.get(name).cloned(),
        Source::Body(pointer) | Source::Payload(pointer) => {
            let body = exchange.body.as_ref()?;
            match pointer {
                None => Some(body.clone()),
                Some(pointer) => pointed(body, pointer),
            }
        }
    }
}

/// `pointer` into `value`; a body kept as text that is JSON is read as JSON.
fn pointed(value: &Value, pointer: &str) -> Option<Value> {
    if let Value::String(text) = value {
        let parsed: Value = serde_json::from_str(text).ok()?;
        return parsed.pointer(pointer).cloned();
    }
    value.pointer(pointer).cloned()
}

/// A named value with its pointer. A name with dots that is not itself there reads as the
/// first name and properties after it (`$inputs.user.name` → `user` → `name`).
fn read_field(values: &Map<String, Value>, field: &Field) -> Option<Value> {
    let value = match values.get(&field.name) {
        Some(value) => value.clone(),
        None => {
            let mut segments = field.name.split('.');
            let mut value = values.get(segments.next()?)?.clone();
            for segment in segments {
                value = match value {
                    Value::Object(mut map) => map.remove(segment)?,
                    Value::Array(mut items) => {
                        let index: usize = segment.parse().ok()?;
                        (index < items.len()).then(|| items.swap_remove(index))?
                    }
                    _ => return None,
                };
            }
            value
        }
    };
    match &field.pointer {
        None => Some(value),
        Some(pointer) => pointed(&value, pointer),
    }
}

fn read_outputs(outputs: &Map<String, Value>, output: Option<&Field>) -> Option<Value> {
    match output {
        None => Some(Value::Object(outputs.clone())),
        Some(field) => read_field(outputs, field),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn values() -> Values {
        Values {
            inputs: Map::from_iter([
                (
                    "user".to_owned(),
                    json!({"name": "ada", "tags": ["a", "b"]}),
                ),
                ("x-api-key".to_owned(), json!("k")),
            ]),
            steps: IndexMap::from([(
                "login".to_owned(),
                Map::from_iter([("token".to_owned(), json!({"value": "t-1", "ttl": 60}))]),
            )]),
            status: Some(201),
            response: Some(Exchange::new(
                vec![("Content-Type".to_owned(), "application/json".to_owned())],
                Some(json!({"items": [{"id": 7}]})),
            )),
            request: Some(Exchange {
                query: vec![("page".to_owned(), "2".to_owned())],
                path: Map::from_iter([("id".to_owned(), json!("p1"))]),
                body: Some(json!("{\"raw\": true}")),
                ..Exchange::default()
            }),
            sources: IndexMap::from([("pets".to_owned(), "./pets.yaml".to_owned())]),
            ..Values::default()
        }
    }

    #[test]
    fn expressions_read_what_the_run_has() {
        let values = values();
        let cases = [
            ("$statusCode", json!(201)),
            ("$response.header.content-type", json!("application/json")),
            ("$response.body#/items/0/id", json!(7)),
            ("$response.body.items", json!([{"id": 7}])),
            ("$request.query.page", json!("2")),
            ("$request.path.id", json!("p1")),
            ("$request.body#/raw", json!(true)),
            ("$inputs.user.name", json!("ada")),
            ("$inputs.user#/tags/1", json!("b")),
            ("$inputs.x-api-key", json!("k")),
            ("$steps.login.outputs.token#/value", json!("t-1")),
            (
                "$steps.login.outputs",
                json!({"token": {"value": "t-1", "ttl": 60}}),
            ),
            ("$sourceDescriptions.pets.url", json!("./pets.yaml")),
            ("$inputs.missing", Value::Null),
            ("$message.payload", Value::Null),
        ];
        for (text, expected) in cases {
            assert_eq!(values.render(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn embedded_values_are_written_as_text_by_type() {
        let values = values();
        assert_eq!(
            values
                .render("user={$inputs.user.name} ttl={$steps.login.outputs.token#/ttl} tags={$inputs.user#/tags} none={$inputs.nope}")
                .unwrap(),
            json!("user=ada ttl=60 tags=[\"a\",\"b\"] none=null")
        );
        let payload = json!({"who": "$inputs.user.name", "n": 3, "list": ["{$statusCode}!"]});
        assert_eq!(
            values.render_value(&payload).unwrap(),
            json!({"who": "ada", "n": 3, "list": ["201!"]})
        );
        assert!(values.render("$inputz.x").is_err());
    }
}

//! The explorer's reusable output: confirmed steps as a scenario in the TiDB Cloud explorer's
//! output format (`request`, `expect`, `save` and `meta` are JSON text inside YAML strings),
//! made from a session ([`Scenario::from_session`]), and its conversion into a wayline
//! workflow.
//!
//! Conversion: each step calls the tool named by its `operation_id` (as `wayline import
//! openapi` names them). A step's `save` rules become its `outputs` (CEL over the response
//! body). A value a step takes from a variable (`path_params`, `query_params`, `body_params`)
//! becomes a reference to the step that saved it, or else a run input. An `expect.cel` with
//! retries becomes a `poll`. `continue_on_unexpected` makes a step non-critical. Each step
//! runs after the one before it, as the scenario was recorded.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use wayline_core::workflow::{Edge, Poll, Severity, Step, StepKind, Workflow};
use wayline_registry::openapi::{ApiSpec, Operation, ParameterLocation};

use crate::Error;
use crate::envelope::id_path;
use crate::exploration::Exploration;
use crate::intent::{self, CLI_METHOD, Verb, operation_resource, operation_verb};
use crate::names;
use crate::state::is_secret_name;
use crate::sut::SutConfig;

/// The `scenario` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScenarioInfo {
    /// Its id.
    pub id: String,
    /// Where it ran (`auth.type`, `base_path`, `host`).
    #[serde(default)]
    pub context: Value,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its name.
    pub name: String,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScenarioStep {
    /// The operation.
    pub operation_id: String,
    /// `http` or `cli`.
    #[serde(default = "default_request_type")]
    pub request_type: String,
    /// The request, as JSON text.
    pub request: String,
    /// What to expect, as JSON text (`{"status_code", "cel"}`).
    #[serde(default = "empty_object")]
    pub expect: String,
    /// What to save, as JSON text (`{"placeholder": [{"key", "eval"}]}`).
    #[serde(default = "empty_object")]
    pub save: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Polls after the first call, until `expect` holds.
    #[serde(default)]
    pub max_retries: u32,
    /// Seconds between polls.
    #[serde(default)]
    pub delay_after: u64,
    /// Its name (unique in the scenario).
    pub name: String,
    /// Go on when it fails.
    #[serde(default)]
    pub continue_on_unexpected: bool,
    /// `setup`, `test`, `teardown`, ...
    #[serde(default)]
    pub stage: String,
    /// Anything else, as JSON text.
    #[serde(default = "empty_object")]
    pub meta: String,
    /// The session that made it.
    #[serde(default)]
    pub generation_id: String,
    /// Its position.
    #[serde(default)]
    pub order: u32,
    /// Other fields, kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_request_type() -> String {
    "http".to_owned()
}

fn empty_object() -> String {
    "{}".to_owned()
}

/// A reusable scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Scenario {
    /// Its description.
    pub scenario: ScenarioInfo,
    /// Its steps, in order.
    pub steps: Vec<ScenarioStep>,
}

/// A save rule: `key` gets the value of the CEL expression `eval` over the response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SaveRule {
    /// The variable.
    pub key: String,
    /// The expression (`body.clusterId`).
    pub eval: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SaveBlock {
    #[serde(default)]
    placeholder: Vec<SaveRule>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ExpectBlock {
    #[serde(default)]
    cel: String,
}

fn parse_json<T: for<'de> Deserialize<'de> + Default>(
    text: &str,
    step: &str,
    field: &'static str,
) -> Result<T, Error> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_str(text).map_err(|error| Error::Scenario {
        step: step.to_owned(),
        field,
        message: error.to_string(),
    })
}

impl ScenarioStep {
    /// The request, parsed.
    pub fn request_json(&self) -> Result<Value, Error> {
        serde_json::from_str(&self.request).map_err(|error| Error::Scenario {
            step: self.name.clone(),
            field: "request",
            message: error.to_string(),
        })
    }

    /// The save rules, parsed.
    pub fn save_rules(&self) -> Result<Vec<SaveRule>, Error> {
        Ok(parse_json::<SaveBlock>(&self.save, &self.name, "save")?.placeholder)
    }

    /// The `expect.cel` condition, if any.
    pub fn expect_cel(&self) -> Result<Option<String>, Error> {
        let expect: ExpectBlock = parse_json(&self.expect, &self.name, "expect")?;
        Ok(Some(expect.cel).filter(|cel| !cel.trim().is_empty()))
    }
}

impl Scenario {
    /// Reads a scenario from YAML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, Error> {
        let scenario: Scenario =
            wayline_core::document::parse(text, wayline_core::document::Format::Yaml, origin)?;
        for step in &scenario.steps {
            step.request_json()?;
            step.save_rules()?;
            step.expect_cel()?;
        }
        Ok(scenario)
    }

    /// The scenario as YAML.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).unwrap_or_else(|error| format!("# cannot write: {error}\n"))
    }

    /// The scenario as a wayline workflow (see the module documentation), with the warnings
    /// about what could not be carried over.
    pub fn to_workflow(&self) -> Result<(Workflow, Vec<String>), Error> {
        let mut workflow = Workflow::new(step_id(&self.scenario.name), &self.scenario.name);
        workflow.description = self.scenario.description.clone();
        let mut warnings = Vec::new();
        // Variable → the step that saved it.
        let mut saved: IndexMap<String, String> = IndexMap::new();
        let mut ids: Vec<String> = Vec::new();
        for scenario_step in &self.steps {
            let mut id = step_id(&scenario_step.name);
            while ids.contains(&id) {
                id.push('_');
            }
            ids.push(id.clone());
            if scenario_step.request_type != "http" {
                warnings.push(format!(
                    "step `{id}` is a `{}` request; it calls the tool `{}` as an HTTP tool",
                    scenario_step.request_type, scenario_step.operation_id
                ));
            }
            let mut step = Step::new(&id, &scenario_step.operation_id);
            step.description = scenario_step.description.clone();
            let request = scenario_step.request_json()?;
            let reference = |variable: &str, workflow: &mut Workflow| -> Value {
                match saved.get(variable) {
                    Some(from) => Value::from(format!("{from}.{variable}")),
                    None => {
                        workflow.inputs.entry(variable.to_owned()).or_default();
                        Value::from(format!("$input.{variable}"))
                    }
                }
            };
            for (name, variable) in string_map(request.get("path_params")) {
                let value = reference(&variable, &mut workflow);
                step.input_mapping.insert(name, value);
            }
            if let Some(Value::Object(query)) = request.get("query_params") {
                for (name, value) in query {
                    step.input_mapping.insert(name.clone(), value.clone());
                }
            }
            let body_params = string_map(request.get("body_params"));
            if let Some(Value::Object(body)) = request.get("body") {
                for (field, value) in body {
                    let mapped = match value.as_str().and_then(placeholder) {
                        Some(name) => {
                            let variable = body_params.get(name).map_or(name, String::as_str);
                            reference(variable, &mut workflow)
                        }
                        None => {
                            if mentions_placeholder(value) {
                                warnings.push(format!(
                                    "step `{id}`: `{field}` holds a placeholder inside a value; it is sent as written"
                                ));
                            }
                            value.clone()
                        }
                    };
                    step.input_mapping.insert(field.clone(), mapped);
                }
            }
            for rule in scenario_step.save_rules()? {
                step.outputs.insert(rule.key.clone(), rule.eval.clone());
                saved.insert(rule.key, id.clone());
            }
            if let Some(until) = scenario_step.expect_cel()? {
                step.poll = Some(Poll::new(
                    until,
                    scenario_step.max_retries.saturating_add(1),
                    scenario_step.delay_after.saturating_mul(1_000),
                ));
            }
            if scenario_step.continue_on_unexpected {
                step.severity = Severity::NonCritical;
            }
            step.kind = StepKind::Action;
            // A scenario is a script: each step after the one before, not only after the
            // steps whose values it uses (a delete must wait for the reads before it).
            if let Some(previous) = workflow.steps.last() {
                workflow
                    .edges
                    .push(Edge::new(previous.id.clone(), id.clone()));
            }
            workflow.steps.push(step);
        }
        Ok((workflow, warnings))
    }

    /// The confirmed steps of `session` as a reusable scenario, for the SUT `sut` whose API
    /// `spec` describes. A value that a step took from an earlier step's saved id becomes a
    /// reference to its variable; a secret body field becomes a value to give at run time.
    pub fn from_session(session: &Exploration, spec: &ApiSpec, sut: &SutConfig) -> Scenario {
        let base = sut.base_url().unwrap_or_default();
        let mut steps = Vec::new();
        // Which variable holds each saved resource id, for later steps' parameters.
        let mut holders: Vec<(String, String)> = Vec::new();
        for (index, confirmed) in session.confirmed_steps.iter().enumerate() {
            let Some(operation) = spec.operation(&confirmed.operation_id) else {
                continue;
            };
            if operation.method == CLI_METHOD {
                // A CLI request as the TiDB Cloud explorer writes it: the tool's name and its
                // arguments.
                let request = json!({
                    "name": confirmed.request["name"],
                    "args": confirmed.request["args"],
                });
                steps.push(ScenarioStep {
                    operation_id: operation.id.clone(),
                    request_type: "cli".to_owned(),
                    request: serde_json::to_string_pretty(&request).unwrap_or_default(),
                    expect: json!({"exit_code": 0, "cel": ""}).to_string(),
                    save: json!({ "placeholder": [] }).to_string(),
                    description: operation.summary.clone(),
                    max_retries: 0,
                    delay_after: 0,
                    name: format!("{}_{index}", operation.id.to_lowercase()),
                    continue_on_unexpected: false,
                    stage: "test".to_owned(),
                    meta: "{}".to_owned(),
                    generation_id: session.session.id.clone(),
                    order: u32::try_from(index).unwrap_or(u32::MAX),
                    extra: serde_json::Map::new(),
                });
                continue;
            }
            let inputs = confirmed.request.get("inputs").and_then(Value::as_object);
            let mut path_params = serde_json::Map::new();
            let mut body = serde_json::Map::new();
            let mut body_params = serde_json::Map::new();
            let mut query = serde_json::Map::new();
            for parameter in &operation.parameters {
                let Some(value) = inputs.and_then(|inputs| inputs.get(&parameter.input)) else {
                    continue;
                };
                let variable = holders
                    .iter()
                    .rev()
                    .find(|(_, id)| names::id_text(value).as_deref() == Some(id.as_str()))
                    .map(|(name, _)| name.clone());
                match (parameter.location, variable) {
                    (ParameterLocation::Path, Some(variable)) => {
                        path_params.insert(parameter.name.clone(), Value::from(variable));
                    }
                    (ParameterLocation::Path, None) => {
                        path_params
                            .insert(parameter.name.clone(), Value::from(parameter.name.clone()));
                    }
                    (ParameterLocation::Body, Some(variable)) => {
                        body.insert(
                            parameter.name.clone(),
                            Value::from(format!("{{{variable}}}")),
                        );
                        body_params.insert(variable.clone(), Value::from(variable));
                    }
                    // A secret is never written out: it becomes a value to give at run time.
                    (ParameterLocation::Body, None) if is_secret_name(&parameter.name) => {
                        let input = parameter.input.clone();
                        body.insert(parameter.name.clone(), Value::from(format!("{{{input}}}")));
                        body_params.insert(input.clone(), Value::from(input));
                    }
                    (ParameterLocation::Body, None) => {
                        body.insert(parameter.name.clone(), value.clone());
                    }
                    (ParameterLocation::Query, _) => {
                        query.insert(parameter.name.clone(), value.clone());
                    }
                    _ => {}
                }
            }
            let mut request = json!({
                "method": operation.method,
                "path": format!("{base}{}", operation.path),
            });
            for (key, map) in [
                ("path_params", path_params),
                ("query_params", query),
                ("body", body),
                ("body_params", body_params),
            ] {
                if !map.is_empty() {
                    request[key] = Value::Object(map);
                }
            }
            let resource = operation_resource(operation);
            let save: Vec<Value> = confirmed
                .saved_variables
                .iter()
                .map(|name| {
                    let field = id_path(spec, &confirmed.response["body"], &resource)
                        .unwrap_or_else(|| "id".to_owned());
                    json!({"key": name, "eval": format!("body.{field}")})
                })
                .collect();
            for name in &confirmed.saved_variables {
                if let Some(value) = session
                    .current_state
                    .variables
                    .get(name)
                    .and_then(names::id_text)
                {
                    holders.push((name.clone(), value));
                } else if let Some(id) = id_path(spec, &confirmed.response["body"], &resource)
                    .and_then(|path| {
                        path.split('.')
                            .try_fold(&confirmed.response["body"], |value, key| value.get(key))
                            .and_then(names::id_text)
                    })
                {
                    holders.push((name.clone(), id));
                }
            }
            let name = format!(
                "{}_{index}",
                operation
                    .id
                    .rsplit('_')
                    .next()
                    .unwrap_or(&operation.id)
                    .to_lowercase()
            );
            let polled = confirmed.until.is_some();
            let polling = sut.execution.auto_mode.polling;
            let step = ScenarioStep {
                operation_id: operation.id.clone(),
                request_type: "http".to_owned(),
                request: serde_json::to_string_pretty(&request).unwrap_or_default(),
                expect: json!({
                    "status_code": confirmed.response["status_code"],
                    "cel": confirmed.until.clone().unwrap_or_default(),
                })
                .to_string(),
                save: json!({ "placeholder": save }).to_string(),
                description: format!("{} {}", operation.method, operation.path),
                max_retries: if polled { polling.max_retries } else { 0 },
                delay_after: if polled { polling.delay_seconds } else { 0 },
                name,
                continue_on_unexpected: false,
                stage: stage(operation).to_owned(),
                meta: "{}".to_owned(),
                generation_id: session.session.id.clone(),
                order: u32::try_from(index).unwrap_or(u32::MAX),
                extra: serde_json::Map::new(),
            };
            steps.push(step);
        }
        Scenario {
            scenario: ScenarioInfo {
                id: session.session.id.clone(),
                context: json!({
                    "auth": {"type": sut.connection.auth.kind},
                    "base_path": sut.connection.base_path,
                    "host": sut.connection.host,
                }),
                description: session.session.target.clone(),
                name: scenario_name(&session.session.target),
                extra: serde_json::Map::new(),
            },
            steps,
        }
    }
}

fn stage(operation: &Operation) -> &'static str {
    match operation_verb(operation) {
        Verb::Create => "setup",
        Verb::Delete => "teardown",
        _ => "test",
    }
}

fn scenario_name(target: &str) -> String {
    let mut words = intent::words(target);
    words.truncate(8);
    if words.is_empty() {
        "explored".to_owned()
    } else {
        words.join("_")
    }
}

/// `{name}` as a whole string: the name.
fn placeholder(text: &str) -> Option<&str> {
    let name = text.strip_prefix('{')?.strip_suffix('}')?;
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(name)
}

fn mentions_placeholder(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('{') && text.contains('}'),
        Value::Array(items) => items.iter().any(mentions_placeholder),
        Value::Object(map) => map.values().any(mentions_placeholder),
        _ => false,
    }
}

fn string_map(value: Option<&Value>) -> IndexMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// `name` as a step or workflow id.
fn step_id(name: &str) -> String {
    wayline_core::workflow::identifier(name, "step")
}

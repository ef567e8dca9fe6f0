//! A document's workflows in the engine's prepared form: one wayline step per Arazzo step, each
//! calling a tool made from the operation it names (method, path, server from the OpenAPI
//! description; the parameters the step sends, where it sends them; the body as one input), and
//! edges from the concurrency plan ([`crate::waits::Waits`]).

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_core::{MemoryCatalog, Step as CoreStep, ToolDefinition, Workflow as CoreWorkflow};
use wayline_registry::openapi::ApiSpec;

use crate::model::{
    ArazzoDocument, Components, Parameter, ParameterLocation, Reusable, Step, Workflow,
};
use crate::sources::{Source, Sources, source_reference};
use crate::waits::Waits;

/// The input that carries a step's request body.
pub(crate) const BODY: &str = "body";

/// What one step does when it runs.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Calls an operation through its tool.
    Operation {
        /// Each parameter the step sends: the tool input carrying it, and the parameter.
        parameters: Vec<(String, Parameter)>,
        /// The content type of the body, when the step sends one.
        content_type: Option<String>,
    },
    /// Runs a workflow of this document.
    Workflow(String),
    /// Runs a workflow of the Arazzo document a source description names.
    External {
        /// The source description.
        source: String,
        /// The workflow's id there.
        workflow: String,
    },
    /// Cannot run, and why (an AsyncAPI channel, an operation not found, a source not read).
    Unrunnable(String),
}

/// One workflow compiled.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Its index in the document.
    pub(crate) index: usize,
    /// The wayline workflow the engine prepares.
    pub(crate) workflow: CoreWorkflow,
    /// What each step does, by position.
    pub(crate) actions: Vec<Action>,
}

/// The parameter a Reusable Object gives: inline, or the component it names with its `value`
/// overriding the component's.
pub(crate) fn parameter(
    reusable: &Reusable<Parameter>,
    components: Option<&Components>,
) -> Option<Parameter> {
    match reusable {
        Reusable::Inline(parameter) => Some(parameter.clone()),
        Reusable::Reference(reference) => {
            let name = reference.reference.rsplit_once('.')?.1;
            let mut parameter = components?.parameters.get(name)?.clone();
            if let Some(value) = &reference.value {
                parameter.value = crate::model::Selectable::Value(value.clone());
            }
            Some(parameter)
        }
    }
}

/// The parameters a step sends: its workflow's, overridden by its own of the same name and
/// place.
pub(crate) fn step_parameters(
    inherited: &[Reusable<Parameter>],
    own: &[Reusable<Parameter>],
    components: Option<&Components>,
) -> Vec<Parameter> {
    let mut all: Vec<Parameter> = Vec::new();
    for parameter in inherited
        .iter()
        .chain(own)
        .filter_map(|reusable| parameter(reusable, components))
    {
        let same = |known: &Parameter| {
            known.location == parameter.location
                && if parameter.location == Some(ParameterLocation::Header) {
                    known.name.eq_ignore_ascii_case(&parameter.name)
                } else {
                    known.name == parameter.name
                }
        };
        match all.iter_mut().find(|known| same(known)) {
            Some(known) => *known = parameter,
            None => all.push(parameter),
        }
    }
    all
}

/// The inputs `workflow` sends as credentials: those a header parameter with a credential's
/// name (`Authorization`, `X-API-Key`…) or a cookie parameter reads, whatever the input is
/// called (`auth`), so that its value is masked from the run's start — in its recorded inputs,
/// bodies and outputs — and not only in the header.
pub(crate) fn credential_inputs(document: &ArazzoDocument, workflow: &Workflow) -> Vec<String> {
    let components = document.components.as_ref();
    let mut names = Vec::new();
    for step in &workflow.steps {
        for parameter in step_parameters(&workflow.parameters, &step.parameters, components) {
            let credential = match parameter.location {
                Some(ParameterLocation::Cookie) => true,
                Some(ParameterLocation::Header) => {
                    wayline_executor::is_credential_response_header(&parameter.name)
                }
                _ => false,
            };
            let crate::model::Selectable::Value(Value::String(text)) = &parameter.value else {
                continue;
            };
            if !credential {
                continue;
            }
            let Ok(template) = crate::expression::Template::parse(text) else {
                continue;
            };
            for expression in template.expressions() {
                if let crate::expression::Expression::Inputs(field) = expression
                    && !names.contains(&field.name)
                {
                    names.push(field.name.clone());
                }
            }
        }
    }
    names
}

/// Compiles every workflow of `document`; the catalog holds a tool per operation and way of
/// calling it (the parameters sent, where, and the body's type), shared by the steps that call
/// it so (one tool for a chain of steps calling one operation: what the engine prepares and the
/// knowledge counts is per tool). `servers` gives a base URL for a source by name (else the
/// description's first server).
pub(crate) fn compile(
    document: &ArazzoDocument,
    sources: &Sources,
    servers: &IndexMap<String, String>,
) -> (MemoryCatalog, IndexMap<String, Compiled>) {
    let components = document.components.as_ref();
    let mut tools: Vec<ToolDefinition> = Vec::new();
    // A tool's document without its id → its id.
    let mut shapes: HashMap<String, String> = HashMap::new();
    let mut compiled = IndexMap::new();
    for (index, workflow) in document.workflows.iter().enumerate() {
        let mut core = CoreWorkflow::new(
            workflow.workflow_id.clone(),
            workflow
                .summary
                .clone()
                .unwrap_or_else(|| workflow.workflow_id.clone()),
        );
        let mut actions = Vec::new();
        for step in &workflow.steps {
            let (mut tool, action, name) = step_tool(
                step,
                step_parameters(&workflow.parameters, &step.parameters, components),
                sources,
                servers,
            );
            let shape = serde_json::to_string(&tool).unwrap_or_default();
            let tool_id = match shapes.get(&shape) {
                Some(id) => id.clone(),
                None => {
                    let taken = |id: &str| tools.iter().any(|tool| tool.id == id);
                    let mut id = name.clone();
                    let mut count = 1;
                    while taken(&id) {
                        count += 1;
                        id = format!("{name}#{count}");
                    }
                    tool.id = id.clone();
                    shapes.insert(shape, id.clone());
                    tools.push(tool.clone());
                    id
                }
            };
            let mut core_step = CoreStep::new(step.step_id.clone(), tool_id);
            for input in tool.input_names() {
                core_step = core_step.map(input, Value::Null);
            }
            core_step.timeout_ms = step.timeout;
            core_step.description = step.description.clone().unwrap_or_default();
            core.steps.push(core_step);
            actions.push(action);
        }
        // A plan that deadlocks was reported by validation; the steps then keep their order.
        let plan = Waits::of(workflow, components).ok();
        for position in 0..workflow.steps.len() {
            let waits: Vec<usize> = match &plan {
                Some(plan) => plan.waits(position).iter().copied().collect(),
                None => position.checked_sub(1).into_iter().collect(),
            };
            for before in waits {
                core.edges.push(wayline_core::workflow::Edge::new(
                    workflow.steps[before].step_id.clone(),
                    workflow.steps[position].step_id.clone(),
                ));
            }
        }
        compiled.insert(
            workflow.workflow_id.clone(),
            Compiled {
                index,
                workflow: core,
                actions,
            },
        );
    }
    (MemoryCatalog::from_tools(tools), compiled)
}

/// The tool a step calls (its id still to give), what the step does, and the tool's name
/// (`SOURCE.OPERATION`).
fn step_tool(
    step: &Step,
    parameters: Vec<Parameter>,
    sources: &Sources,
    servers: &IndexMap<String, String>,
) -> (ToolDefinition, Action, String) {
    // Steps that call no operation share one tool each kind, which is never called.
    let unrunnable = |reason: String| {
        (
            ToolDefinition::new("", "http://unrunnable.invalid"),
            Action::Unrunnable(reason),
            "unrunnable".to_owned(),
        )
    };
    if let Some(workflow) = &step.workflow_id {
        let action = match source_reference(workflow) {
            Some((source, id)) => match sources.get(source) {
                Some(Source::Arazzo { .. }) => Action::External {
                    source: source.to_owned(),
                    workflow: id.to_owned(),
                },
                _ => {
                    return unrunnable(format!(
                        "it calls `{workflow}`, but source `{source}` is not an Arazzo document that was read"
                    ));
                }
            },
            None => Action::Workflow(workflow.clone()),
        };
        // Never called; not safe to repeat, as the workflow it stands for may not be: a run
        // interrupted while it ran does not run it again on resume without being told to.
        let mut stand_in = ToolDefinition::new("", "http://workflow.invalid");
        stand_in.idempotent = Some(false);
        return (stand_in, action, "workflow-call".to_owned());
    }
    if step.channel_path.is_some() || step.is_async() {
        return unrunnable(
            "it is an AsyncAPI step; wayline runs OpenAPI operations and workflows only".to_owned(),
        );
    }
    let resolved = match sources.operation(step) {
        Ok(Some(resolved)) => resolved,
        Ok(None) => return unrunnable(why_unresolved(step, sources)),
        Err(not_found) => return unrunnable(not_found.message),
    };
    let spec: &ApiSpec = match sources.get(resolved.source) {
        Some(Source::OpenApi { spec, .. }) => spec,
        _ => return unrunnable(format!("source `{}` is not OpenAPI", resolved.source)),
    };
    let Some(base_url) = servers
        .get(resolved.source)
        .cloned()
        .or_else(|| spec.base_url.clone())
    else {
        return unrunnable(format!(
            "source `{}` names no server; give one (--server {}=URL)",
            resolved.source, resolved.source
        ));
    };
    let operation = resolved.operation;
    let mut path = operation.path.clone();
    let mut path_params = Vec::new();
    let mut query_params = Vec::new();
    let mut headers = Map::new();
    let mut cookies = Vec::new();
    let mut carried = Vec::new();
    let query_names: Vec<&str> = parameters
        .iter()
        .filter(|parameter| parameter.location == Some(ParameterLocation::Query))
        .map(|parameter| parameter.name.as_str())
        .collect();
    for (index, parameter) in parameters.iter().enumerate() {
        let input = match parameter.location {
            Some(ParameterLocation::Query) => {
                query_params.push(parameter.name.clone());
                parameter.name.clone()
            }
            Some(ParameterLocation::Path) => {
                // A query parameter of the same name keeps the plain input name.
                let input = if query_names.contains(&parameter.name.as_str()) {
                    let input = format!("path_{index}");
                    path =
                        path.replace(&format!("{{{}}}", parameter.name), &format!("{{{input}}}"));
                    input
                } else {
                    parameter.name.clone()
                };
                path_params.push(input.clone());
                input
            }
            Some(ParameterLocation::Header) => {
                let input = format!("header_{index}");
                headers.insert(parameter.name.clone(), json!(format!("{{{{{input}}}}}")));
                input
            }
            Some(ParameterLocation::Cookie) => {
                let input = format!("cookie_{index}");
                cookies.push(format!("{}={{{{{input}}}}}", parameter.name));
                input
            }
            Some(ParameterLocation::Querystring) => {
                // The whole query string, as written (its `&` and `=` kept, what a URL cannot
                // hold percent-encoded): a placeholder after the path.
                let input = format!("querystring_{index}");
                path = format!("{path}?{{{input}}}");
                path_params.push(input.clone());
                input
            }
            _ => {
                return unrunnable(format!(
                    "parameter `{}` of an operation step needs `in` (path, query, header or cookie)",
                    parameter.name
                ));
            }
        };
        carried.push((input, parameter.clone()));
    }
    if !cookies.is_empty() {
        headers.insert("Cookie".to_owned(), json!(cookies.join("; ")));
    }
    let content_type = step.request_body.as_ref().map(|body| {
        body.content_type
            .clone()
            .or_else(|| {
                operation
                    .body
                    .as_ref()
                    .map(|body| body.content_type.clone())
            })
            .unwrap_or_else(|| "application/json".to_owned())
    });
    let mut request = json!({
        "path_params": path_params,
        "query_params": query_params,
        "headers": headers,
    });
    if let Some(content_type) = &content_type {
        request["body"] = json!(format!("{{{{{BODY}}}}}"));
        request["content_type"] = json!(content_type);
    }
    let document = json!({
        "id": "",
        "name": operation.id,
        "description": operation.summary,
        "base_url": base_url.trim_end_matches('/'),
        "method": operation.method,
        "path": path,
        "request": request,
    });
    match serde_json::from_value::<ToolDefinition>(document) {
        Ok(tool) => (
            tool,
            Action::Operation {
                parameters: carried,
                content_type,
            },
            format!("{}.{}", resolved.source, operation.id),
        ),
        Err(error) => unrunnable(format!("its request cannot be built: {error}")),
    }
}

/// Why a step's operation could not be looked up.
fn why_unresolved(step: &Step, sources: &Sources) -> String {
    let named = step
        .operation_id
        .as_deref()
        .and_then(source_reference)
        .filter(|(_, id)| !id.is_empty())
        .map(|(source, _)| source);
    let reasons: Vec<String> = sources
        .iter()
        .filter(|(name, _)| named.is_none_or(|named| named == *name))
        .filter_map(|(name, source)| match source {
            Source::NotRead { reason } => Some(format!("source `{name}` was not read: {reason}")),
            Source::Unsupported { kind } => Some(format!(
                "source `{name}` is {kind}, which wayline does not run"
            )),
            _ => None,
        })
        .collect();
    if reasons.is_empty() {
        "its operation is in no OpenAPI source description".to_owned()
    } else {
        reasons.join("; ")
    }
}

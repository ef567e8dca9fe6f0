//! An Arazzo workflow read back as a wayline workflow, where the mapping is exact: each step
//! calls one of the given tools by `operationId`, its parameters and payload fill that tool's
//! inputs, its values are literals, `$inputs.X` or `$steps.S.outputs.O` references. Anything
//! else (actions, criteria other than a 2xx status, sub-workflows, selectors, expressions a
//! wayline mapping cannot hold) is an error naming it. `x-wayline` extensions, as
//! [`crate::export`] writes them, give back what Arazzo has no field for.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_core::{Edge, InputSpec, Step, ToolCatalog, Workflow};

use crate::export::SUCCESS;
use crate::expression::{Expression, Part, Template};
use crate::model::{ArazzoDocument, ParameterLocation, Reusable, Selectable, StepTarget};

/// What cannot be read back as a wayline workflow, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {reason}")]
pub struct ImportError {
    /// The workflow or step.
    pub place: String,
    /// What cannot be mapped, and why.
    pub reason: String,
}

/// The workflow `id` of `document` (the only one when `id` is `None`) as a wayline workflow
/// calling `tools`.
pub fn import(
    document: &ArazzoDocument,
    id: Option<&str>,
    tools: &dyn ToolCatalog,
) -> Result<Workflow, ImportError> {
    let error = |place: &str, reason: String| ImportError {
        place: place.to_owned(),
        reason,
    };
    let arazzo = match (id, document.workflows.as_slice()) {
        (Some(id), workflows) => workflows
            .iter()
            .find(|workflow| workflow.workflow_id == id)
            .ok_or_else(|| error(id, "the document has no such workflow".to_owned()))?,
        (None, [only]) => only,
        (None, _) => {
            return Err(error(
                "document",
                "it has several workflows: name the one to import".to_owned(),
            ));
        }
    };
    let place = format!("workflow `{}`", arazzo.workflow_id);
    for (present, what) in [
        (!arazzo.success_actions.is_empty(), "successActions"),
        (!arazzo.failure_actions.is_empty(), "failureActions"),
        (!arazzo.parameters.is_empty(), "parameters"),
        (!arazzo.depends_on.is_empty(), "dependsOn"),
        (!arazzo.outputs.is_empty(), "outputs"),
    ] {
        if present {
            return Err(error(&place, format!("wayline workflows have no `{what}`")));
        }
    }
    let mut workflow = Workflow::new(
        arazzo.workflow_id.clone(),
        arazzo.summary.clone().unwrap_or_default(),
    );
    workflow.description = arazzo.description.clone().unwrap_or_default();
    let extension = arazzo.extensions.get("x-wayline");
    if let Some(status) = extension.and_then(|extension| extension.get("status")) {
        workflow.status = serde_json::from_value(status.clone())
            .map_err(|problem| error(&place, format!("x-wayline status: {problem}")))?;
    }
    // A workflow exported by wayline says which inputs it declared (its schema also lists those
    // it only reads); any other's schema declares them.
    match (
        extension,
        extension.and_then(|extension| extension.get("inputs")),
    ) {
        (_, Some(inputs)) => {
            workflow.inputs = serde_json::from_value(inputs.clone())
                .map_err(|problem| error(&place, format!("x-wayline inputs: {problem}")))?;
        }
        (Some(_), None) => {}
        (None, None) => workflow.inputs = inputs_of(arazzo.inputs.as_ref()),
    }
    for step in &arazzo.steps {
        let place = format!("step `{}`", step.step_id);
        let imported = import_step(arazzo, step, tools).map_err(|reason| error(&place, reason))?;
        for dependency in &step.depends_on {
            workflow
                .edges
                .push(Edge::new(dependency.clone(), step.step_id.clone()));
        }
        workflow.steps.push(imported);
    }
    Ok(workflow)
}

/// Declared inputs from a workflow's JSON Schema: each property's description and default,
/// and whether it is required (the schema's `required`, read by core's rule: see
/// [`wayline_core::inputs`]).
fn inputs_of(schema: Option<&Value>) -> IndexMap<String, InputSpec> {
    let Some(schema) = schema else {
        return IndexMap::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut inputs = IndexMap::new();
    for (name, property) in schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        // Written so that core's rule (`InputSpec::is_required`) says what the schema says:
        // an input without a default is required unless it is left out of `required`.
        let default = property.get("default");
        let listed = required.contains(&name.as_str());
        let spec = json!({
            "description": property.get("description").and_then(Value::as_str).unwrap_or_default(),
            "default": default,
            "required": (!listed && default.is_none()).then_some(false),
        });
        if let Ok(spec) = serde_json::from_value::<InputSpec>(spec) {
            inputs.insert(name.clone(), spec);
        }
    }
    inputs
}

fn import_step(
    workflow: &crate::model::Workflow,
    step: &crate::model::Step,
    tools: &dyn ToolCatalog,
) -> Result<Step, String> {
    let tool_id = match step.target() {
        Some(StepTarget::OperationId(id)) => id.rsplit('.').next().unwrap_or(id),
        Some(StepTarget::Workflow(id)) => {
            return Err(format!(
                "it calls the workflow `{id}`; wayline steps call tools"
            ));
        }
        _ => {
            return Err(
                "it names its operation by path or channel; name it by `operationId`".to_owned(),
            );
        }
    };
    let tool = tools
        .tool(tool_id)
        .ok_or_else(|| format!("it calls `{tool_id}`, which is not among the tools given"))?;
    if !step.on_success.is_empty() || !step.on_failure.is_empty() {
        return Err("wayline steps have no success or failure actions".to_owned());
    }
    let criteria_ok = step.success_criteria.is_empty()
        || (step.success_criteria.len() == 1
            && step.success_criteria[0].condition == SUCCESS
            && step.success_criteria[0].kind.is_none());
    if !criteria_ok {
        return Err(format!(
            "its success criteria are not a 2xx status (`{SUCCESS}`); write them as the step's `expect`"
        ));
    }
    let extension = step
        .extensions
        .get("x-wayline")
        .cloned()
        .unwrap_or(json!({}));
    let from_inputs: Vec<String> = extension
        .get("from_inputs")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut mapping: IndexMap<String, Value> = IndexMap::new();
    let reader = Reader { workflow };
    for parameter in &step.parameters {
        let Reusable::Inline(parameter) = parameter else {
            return Err(
                "a parameter is a component reference; wayline mappings are inline".to_owned(),
            );
        };
        let Selectable::Value(value) = &parameter.value else {
            return Err(format!("parameter `{}` is a selector", parameter.name));
        };
        match (parameter.location, &tool.request) {
            (Some(ParameterLocation::Header), Some(request)) => {
                let template = request.headers.get(&parameter.name).ok_or_else(|| {
                    format!("the header `{}` is not one its tool sends", parameter.name)
                })?;
                reader.unrender(&Value::String(template.clone()), value, &mut mapping)?;
            }
            (Some(ParameterLocation::Path | ParameterLocation::Query), _) => {
                mapping.insert(parameter.name.clone(), reader.value(value)?);
            }
            (location, _) => {
                return Err(format!(
                    "parameter `{}` goes {location:?}, which its tool does not take",
                    parameter.name
                ));
            }
        }
    }
    if let Some(body) = &step.request_body {
        if !body.replacements.is_empty() {
            return Err("its request body has replacements".to_owned());
        }
        let payload = body.payload.clone().unwrap_or(Value::Null);
        match tool
            .request
            .as_ref()
            .and_then(|request| request.body.as_ref())
        {
            Some(template) => reader.unrender(template, &payload, &mut mapping)?,
            None => {
                let Value::Object(fields) = payload else {
                    return Err("its payload is not a mapping of its tool's inputs".to_owned());
                };
                for (name, value) in fields {
                    mapping.insert(name, reader.value(&value)?);
                }
            }
        }
    }
    mapping.retain(|key, _| !from_inputs.contains(key));
    let mut written = match extension {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    written.remove("from_inputs");
    written.insert("id".into(), json!(step.step_id));
    written.insert("tool_id".into(), json!(tool.id));
    written.insert("input_mapping".into(), json!(mapping));
    written.insert(
        "description".into(),
        json!(step.description.clone().unwrap_or_default()),
    );
    serde_json::from_value(Value::Object(written))
        .map_err(|problem| format!("x-wayline: {problem}"))
}

/// Reads Arazzo values back as wayline mapping values.
struct Reader<'a> {
    workflow: &'a crate::model::Workflow,
}

impl Reader<'_> {
    /// A value as a mapping value: a literal, or a reference in wayline's spelling.
    fn value(&self, value: &Value) -> Result<Value, String> {
        let Value::String(text) = value else {
            return Ok(value.clone());
        };
        match Template::parse(text).map_err(|problem| format!("`{text}`: {problem}"))? {
            Template::Literal(_) => Ok(value.clone()),
            Template::Expression(expression) => self.reference(&expression).map(Value::String),
            Template::Embedded(_) => Err(format!(
                "`{text}` embeds expressions in text, which a wayline mapping value cannot"
            )),
        }
    }

    fn reference(&self, expression: &Expression) -> Result<String, String> {
        let dotted = |pointer: &Option<String>| {
            pointer
                .as_deref()
                .map(|pointer| {
                    pointer
                        .split('/')
                        .skip(1)
                        .map(|token| format!(".{}", token.replace("~1", "/").replace("~0", "~")))
                        .collect::<String>()
                })
                .unwrap_or_default()
        };
        match expression {
            Expression::Inputs(field) => {
                Ok(format!("$input.{}{}", field.name, dotted(&field.pointer)))
            }
            Expression::Steps {
                step,
                output: Some(output),
            } => {
                self.output_is_declared(step, &output.name)?;
                // The output's name is the path in the step's output (as `export` names it).
                let path = if output.name == "body" {
                    ""
                } else {
                    output.name.as_str()
                };
                let joined = format!("{path}{}", dotted(&output.pointer));
                Ok(format!("{step}.{}", joined.trim_start_matches('.')))
            }
            other => Err(format!(
                "`{other:?}` reads what a wayline mapping cannot (only `$inputs.X` and `$steps.S.outputs.O`)"
            )),
        }
    }

    /// A step output read by name must be one the step declares.
    fn output_is_declared(&self, step: &str, name: &str) -> Result<(), String> {
        let Some(source) = self
            .workflow
            .steps
            .iter()
            .find(|candidate| candidate.step_id == step)
        else {
            return Err(format!(
                "it reads the step `{step}`, which the workflow does not have"
            ));
        };
        if source.outputs.contains_key(name) {
            Ok(())
        } else {
            Err(format!("step `{step}` declares no output `{name}`"))
        }
    }

    /// The mapping values a rendered `template` (a tool's body or header) shows in `value`.
    fn unrender(
        &self,
        template: &Value,
        value: &Value,
        mapping: &mut IndexMap<String, Value>,
    ) -> Result<(), String> {
        match (template, value) {
            (Value::String(text), _) => {
                let key = wayline_core::template::optional_placeholder(text)
                    .or_else(|| wayline_core::template::whole_placeholder(text));
                if let Some(key) = key {
                    if !value.is_null() {
                        mapping.insert(key.to_owned(), self.value(value)?);
                    }
                    return Ok(());
                }
                let Value::String(rendered) = value else {
                    return Err(format!(
                        "`{value}` is not what its tool's template `{text}` renders"
                    ));
                };
                self.unrender_text(text, rendered, mapping)
            }
            (Value::Array(items), Value::Array(values)) if items.len() == values.len() => {
                for (item, value) in items.iter().zip(values) {
                    self.unrender(item, value, mapping)?;
                }
                Ok(())
            }
            (Value::Object(fields), Value::Object(values)) => {
                for (name, item) in fields {
                    let value = values.get(name).unwrap_or(&Value::Null);
                    self.unrender(item, value, mapping)?;
                }
                if let Some(extra) = values.keys().find(|name| !fields.contains_key(*name)) {
                    return Err(format!(
                        "its payload has `{extra}`, which its tool's body does not"
                    ));
                }
                Ok(())
            }
            _ if template == value => Ok(()),
            _ => Err(format!(
                "`{value}` is not what its tool's template `{template}` renders"
            )),
        }
    }

    /// The values of the `{{key}}`s of `template` in `rendered` (text around them must match).
    fn unrender_text(
        &self,
        template: &str,
        rendered: &str,
        mapping: &mut IndexMap<String, Value>,
    ) -> Result<(), String> {
        let mismatch =
            || format!("`{rendered}` is not what its tool's template `{template}` renders");
        let mut keys = Vec::new();
        wayline_core::template::collect_keys_in_str(template, &mut keys);
        if keys.is_empty() {
            return if template == rendered {
                Ok(())
            } else {
                Err(mismatch())
            };
        }
        // The template's text between placeholders, in order.
        let mut pieces: Vec<&str> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        let mut rest = template;
        while let Some(start) = rest.find("{{") {
            let Some(end) = rest[start..].find("}}") else {
                break;
            };
            pieces.push(&rest[..start]);
            names.push(&rest[start + 2..start + end]);
            rest = &rest[start + end + 2..];
        }
        pieces.push(rest);
        let mut at = rendered.strip_prefix(pieces[0]).ok_or_else(mismatch)?;
        for (index, name) in names.iter().enumerate() {
            let next = pieces[index + 1];
            let end = if next.is_empty() && index + 1 == names.len() {
                at.len()
            } else {
                at.find(next)
                    .filter(|_| !next.is_empty())
                    .ok_or_else(mismatch)?
            };
            let part = &at[..end];
            let value = match crate::expression::embedded(part)
                .map_err(|problem| problem.to_string())?
                .as_slice()
            {
                [Part::Expression(expression)] => Value::String(self.reference(expression)?),
                _ => Value::String(part.to_owned()),
            };
            mapping.insert((*name).to_owned(), value);
            at = &at[end + next.len()..];
        }
        if at.is_empty() {
            Ok(())
        } else {
            Err(mismatch())
        }
    }
}

//! A wayline workflow written as an Arazzo 1.1 document, with OpenAPI descriptions of the tools
//! its steps call: each tool an operation (its id the tool's), each step's mapping its
//! parameters and payload, each reference a runtime expression, explicit edges the steps'
//! `dependsOn`. What Arazzo has no field for (a step's name, severity, validations, `when`,
//! retry and polling, expectations; the workflow's status and input declarations) rides in
//! `x-wayline` extensions, so that [`crate::import`] gives the same workflow back.
//!
//! Tools that share a method and path cannot be operations of one OpenAPI document: they go to
//! a second (third, …) document, so a workflow exports to as few descriptions as it can.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use wayline_core::template;
use wayline_core::{
    AuthType, Reference, Step, StepKind, ToolCatalog, ToolDefinition, ToolKind, Workflow,
};

use crate::expression::starts_expression;
use crate::positions::escape;

/// An exported workflow: the Arazzo document and the OpenAPI descriptions it names, by the file
/// name its source description gives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Exported {
    /// The Arazzo document (JSON; write it as YAML or JSON).
    pub arazzo: Value,
    /// The OpenAPI descriptions, by file name (`TOOLS.openapi.json`).
    pub descriptions: IndexMap<String, Value>,
}

/// What cannot be written as Arazzo, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step `{step}`: {reason}")]
pub struct ExportError {
    /// The step.
    pub step: String,
    /// What cannot be mapped, and why.
    pub reason: String,
}

/// The source description names and file names: `NAME`, `NAME-2`, … for the layers of tools.
fn layer_name(base: &str, layer: usize) -> String {
    if layer == 0 {
        base.to_owned()
    } else {
        format!("{base}-{}", layer + 1)
    }
}

/// Writes `workflow` (whose tools `tools` holds) as an Arazzo document named after `name`
/// (`NAME.arazzo.yaml` beside `NAME-tools.openapi.json`, …).
pub fn export(
    workflow: &Workflow,
    tools: &dyn ToolCatalog,
    name: &str,
) -> Result<Exported, ExportError> {
    let step_ids: Vec<&str> = workflow.steps.iter().map(|step| step.id.as_str()).collect();
    let is_step = |id: &str| step_ids.contains(&id);
    // The tools, in first-use order, and each one's layer: tools sharing a method and path
    // cannot share a description.
    let mut layers: Vec<IndexMap<(String, String), &ToolDefinition>> = Vec::new();
    let mut layer_of: IndexMap<&str, usize> = IndexMap::new();
    for step in &workflow.steps {
        let tool = step_tool(step, tools)?;
        if layer_of.contains_key(tool.id.as_str()) {
            continue;
        }
        let key = (tool.method.to_lowercase(), tool.path.clone());
        let layer = layers
            .iter()
            .position(|layer| !layer.contains_key(&key))
            .unwrap_or(layers.len());
        if layer == layers.len() {
            layers.push(IndexMap::new());
        }
        layers[layer].insert(key, tool);
        layer_of.insert(&tool.id, layer);
    }
    let source_base = format!("{name}-tools");
    // The outputs each step must declare: every path later steps read from it, named by that
    // path (output names may hold dots), so a reference needs no pointer (runners differ in
    // whether they read one after an output name).
    // Each path's first segment is declared too: some runners read `outputs.a.b` as output
    // `a`, then property `b`.
    let mut read: IndexMap<&str, Vec<String>> = IndexMap::new();
    for step in &workflow.steps {
        for value in step.input_mapping.values() {
            if let Reference::Step { step: from, path } = Reference::parse(value, is_step) {
                let name = output_name(path);
                let first = name.split('.').next().unwrap_or_default().to_owned();
                let entry = read.entry(from).or_default();
                for name in [first, name] {
                    if !entry.contains(&name) {
                        entry.push(name);
                    }
                }
            }
        }
    }
    let mut inputs = wayline_core::inputs::schema(workflow);
    let mut steps = Vec::new();
    for step in &workflow.steps {
        let tool = step_tool(step, tools)?;
        // One description: operation ids are plain; several: the specification wants each
        // named with its source.
        let source =
            (layers.len() > 1).then(|| layer_name(&source_base, layer_of[tool.id.as_str()]));
        let converted = Converter {
            step,
            tool,
            is_step: &is_step,
        };
        steps.push(converted.step(
            source.as_deref(),
            workflow,
            read.get(step.id.as_str()),
            &mut inputs,
        )?);
    }
    let mut document = json!({
        "arazzo": "1.1.0",
        "info": {"title": if workflow.name.is_empty() { &workflow.id } else { &workflow.name }, "version": "1"},
        "sourceDescriptions": (0..layers.len()).map(|layer| json!({
            "name": layer_name(&source_base, layer),
            "url": format!("./{}.openapi.json", layer_name(&source_base, layer)),
            "type": "openapi",
        })).collect::<Vec<_>>(),
        "workflows": [{"workflowId": workflow.id, "steps": steps}],
    });
    let exported = &mut document["workflows"][0];
    if !workflow.name.is_empty() {
        exported["summary"] = json!(workflow.name);
    }
    if !workflow.description.is_empty() {
        exported["description"] = json!(workflow.description);
    }
    if inputs["properties"]
        .as_object()
        .is_some_and(|properties| !properties.is_empty())
    {
        exported["inputs"] = inputs;
    }
    let mut extension = Map::new();
    extension.insert("status".into(), json!(workflow.status));
    if !workflow.inputs.is_empty() {
        extension.insert("inputs".into(), json!(workflow.inputs));
    }
    exported["x-wayline"] = Value::Object(extension);
    let descriptions = layers
        .iter()
        .enumerate()
        .map(|(layer, tools)| {
            let name = layer_name(&source_base, layer);
            (
                format!("{name}.openapi.json"),
                openapi(&name, tools.values().copied()),
            )
        })
        .collect();
    Ok(Exported {
        arazzo: document,
        descriptions,
    })
}

/// The tool a step calls, if it is one Arazzo can call (an HTTP operation).
fn step_tool<'a>(
    step: &Step,
    tools: &'a dyn ToolCatalog,
) -> Result<&'a ToolDefinition, ExportError> {
    let error = |reason: String| ExportError {
        step: step.id.clone(),
        reason,
    };
    if step.kind != StepKind::Action {
        return Err(error(format!(
            "a `{}` step calls no operation; Arazzo steps call operations and workflows",
            step.kind.as_str()
        )));
    }
    let tool = tools.tool(&step.tool_id).ok_or_else(|| {
        error(format!(
            "its tool `{}` is not among the tools given",
            step.tool_id
        ))
    })?;
    if tool.kind != ToolKind::Http {
        return Err(error(format!(
            "its tool `{}` is a `{}` tool, not an HTTP operation",
            tool.id,
            format!("{:?}", tool.kind).to_lowercase()
        )));
    }
    Ok(tool)
}

struct Converter<'a> {
    step: &'a Step,
    tool: &'a ToolDefinition,
    is_step: &'a dyn Fn(&str) -> bool,
}

impl Converter<'_> {
    fn error(&self, reason: String) -> ExportError {
        ExportError {
            step: self.step.id.clone(),
            reason,
        }
    }

    /// A mapping value as an Arazzo value: a runtime expression for a reference, the value
    /// itself for a literal (`embedded`: as text inside a string, with braces).
    fn value(&self, value: &Value, embedded: bool) -> Result<Value, ExportError> {
        let expression = match Reference::parse(value, self.is_step) {
            // An input's name is the whole rest, dots included, in both languages.
            Reference::Input { name } => format!("$inputs.{name}"),
            Reference::Step { step, path } => self.step_expression(step, path)?,
            Reference::Malformed { reason } => {
                return Err(self.error(format!(
                    "a mapping value is a malformed reference: {reason}"
                )));
            }
            Reference::Literal => {
                if let Value::String(text) = value
                    && (starts_expression(text) || text.contains("{$"))
                {
                    return Err(self.error(format!(
                        "the literal `{text}` would read as a runtime expression in Arazzo, which has no way to escape it"
                    )));
                }
                return Ok(value.clone());
            }
        };
        Ok(Value::String(if embedded {
            format!("{{{expression}}}")
        } else {
            expression
        }))
    }

    /// `$steps.S.outputs.PATH` for a reference to step `S`'s output at `path` (the step
    /// declares an output of that name).
    fn step_expression(&self, step: &str, path: &str) -> Result<String, ExportError> {
        let name = output_name(path);
        if wayline_core::reference::segments(path).any(|segment| segment.starts_with('-')) {
            return Err(self.error(format!(
                "`{step}.{path}` counts from the end of a list, which a JSON Pointer cannot"
            )));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err(self.error(format!(
                "`{step}.{path}` cannot name an Arazzo output (letters, digits, `.`, `-`, `_`)"
            )));
        }
        Ok(format!("$steps.{step}.outputs.{name}"))
    }

    /// The step as an Arazzo step calling the tool's operation (in `source`, when the export
    /// has several).
    fn step(
        &self,
        source: Option<&str>,
        workflow: &Workflow,
        read: Option<&Vec<String>>,
        inputs: &mut Value,
    ) -> Result<Value, ExportError> {
        let step = self.step;
        let tool = self.tool;
        let mapping = &step.input_mapping;
        // Template variables: each input's Arazzo value, whole and embedded; a key the
        // mapping does not give is read from the workflow's inputs (a secret, say).
        let mut keys: Vec<&str> = Vec::new();
        if let Some(request) = &tool.request {
            for value in request.headers.values() {
                template::collect_keys_in_str(value, &mut keys);
            }
            if let Some(body) = &request.body {
                template::collect_keys(body, &mut keys);
            }
        }
        let mut whole = Map::new();
        let mut inline = Map::new();
        let mut from_inputs = Vec::new();
        for key in keys {
            let (as_whole, as_inline) = match mapping.get(key) {
                Some(value) => (self.value(value, false)?, self.value(value, true)?),
                None => {
                    from_inputs.push(key);
                    inputs["properties"].as_object_mut().map(|properties| {
                        properties
                            .entry(key.to_owned())
                            .or_insert_with(|| json!({}))
                    });
                    (
                        json!(format!("$inputs.{key}")),
                        json!(format!("{{$inputs.{key}}}")),
                    )
                }
            };
            whole.insert(key.to_owned(), as_whole);
            inline.insert(key.to_owned(), as_inline);
        }
        let mut parameters = Vec::new();
        let mut payload: Option<Value> = None;
        let mut used: Vec<&str> = Vec::new();
        let placeholders = path_placeholders(&tool.path);
        match &tool.request {
            Some(request) => {
                for (names, location) in [
                    (&request.path_params, "path"),
                    (&request.query_params, "query"),
                ] {
                    for name in names {
                        if let Some(value) = mapping.get(name) {
                            parameters.push(json!({"name": name, "in": location, "value": self.value(value, false)?}));
                            used.push(name);
                        }
                    }
                }
                for (header, value) in &request.headers {
                    parameters.push(json!({"name": header, "in": "header", "value": render(value, &whole, &inline)}));
                }
                if let Some(body) = &request.body {
                    payload = Some(render_value(body, &whole, &inline));
                }
                let mut templated = Vec::new();
                for value in request.headers.values() {
                    template::collect_keys_in_str(value, &mut templated);
                }
                if let Some(body) = &request.body {
                    template::collect_keys(body, &mut templated);
                }
                used.extend(templated);
            }
            None => {
                let mut body = Map::new();
                for (name, value) in mapping {
                    if placeholders.contains(&name.as_str()) {
                        parameters.push(
                            json!({"name": name, "in": "path", "value": self.value(value, false)?}),
                        );
                    } else if tool.method.eq_ignore_ascii_case("GET") {
                        parameters.push(json!({"name": name, "in": "query", "value": self.value(value, false)?}));
                    } else {
                        body.insert(name.clone(), self.value(value, false)?);
                    }
                    used.push(name);
                }
                if !body.is_empty() {
                    payload = Some(Value::Object(body));
                }
            }
        }
        if let Some(unused) = mapping.keys().find(|name| !used.contains(&name.as_str())) {
            return Err(self.error(format!(
                "it maps `{unused}`, which its tool `{}` does not send",
                tool.id
            )));
        }
        let operation = match source {
            Some(source) => format!("$sourceDescriptions.{source}.{}", tool.id),
            None => tool.id.clone(),
        };
        let mut exported = json!({"stepId": step.id, "operationId": operation});
        if !step.description.is_empty() {
            exported["description"] = json!(step.description);
        }
        let depends: Vec<&str> = workflow
            .edges
            .iter()
            .filter(|edge| edge.to_step_id == step.id)
            .map(|edge| edge.from_step_id.as_str())
            .collect();
        if !depends.is_empty() {
            exported["dependsOn"] = json!(depends);
        }
        if !parameters.is_empty() {
            exported["parameters"] = json!(parameters);
        }
        if let Some(payload) = payload {
            let content_type = tool
                .request
                .as_ref()
                .map_or("application/json", |request| request.content_type.as_str());
            exported["requestBody"] = json!({"contentType": content_type, "payload": payload});
        }
        exported["successCriteria"] = json!([{"condition": SUCCESS}]);
        let outputs = self.outputs(read);
        if !outputs.is_empty() {
            exported["outputs"] = Value::Object(outputs);
        }
        // What Arazzo has no field for, as wayline writes it.
        let mut rest = serde_json::to_value(step).unwrap_or_default();
        if let Value::Object(fields) = &mut rest {
            for carried in ["id", "tool_id", "input_mapping", "description"] {
                fields.remove(carried);
            }
            fields.retain(|name, value| !is_default(name, value));
            // Template keys the step does not map, read from the workflow's inputs: not part of
            // its mapping when it comes back.
            if !from_inputs.is_empty() {
                fields.insert("from_inputs".into(), json!(from_inputs));
            }
            if !fields.is_empty() {
                exported["x-wayline"] = rest;
            }
        }
        Ok(exported)
    }

    /// The step's outputs: each path later steps read from it, over the response body (a tool
    /// that extracts fields: the field's path, then the rest).
    fn outputs(&self, read: Option<&Vec<String>>) -> Map<String, Value> {
        let mut outputs = Map::new();
        for name in read.into_iter().flatten() {
            let path = if name == "body" { "" } else { name.as_str() };
            let value = match &self.tool.response_extract {
                Some(extract) => {
                    let mut segments = wayline_core::reference::segments(path);
                    let field = segments.next().unwrap_or_default();
                    let rest: Vec<&str> = segments.collect();
                    match extract.fields.get(field) {
                        Some(extraction) => response_path(extraction, &rest),
                        None => response_path(path, &[]),
                    }
                }
                None => response_path(path, &[]),
            };
            outputs.insert(name.clone(), value);
        }
        outputs
    }
}

/// The output name for a path read from a step: the path itself (`body` for all of it).
fn output_name(path: &str) -> String {
    let segments: Vec<&str> = wayline_core::reference::segments(path).collect();
    if segments.is_empty() {
        "body".to_owned()
    } else {
        segments.join(".")
    }
}

/// The success criterion of every exported step: a 2xx status, as wayline decides success.
pub(crate) const SUCCESS: &str = "$statusCode >= 200 && $statusCode < 300";

/// Fields of a serialized step that hold their default (left out of `x-wayline`).
fn is_default(name: &str, value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty() || (name == "severity" && text == "critical"),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

/// A response extraction path (dot path, JSON Pointer or JSONPath), and `rest` further into
/// what it selects, as an Arazzo output: `$response.body#/…`, or a selector for a JSONPath.
fn response_path(path: &str, rest: &[&str]) -> Value {
    if path.starts_with('$') {
        let mut selector = path.to_owned();
        for segment in rest {
            if segment.bytes().all(|byte| byte.is_ascii_digit()) {
                selector.push_str(&format!("[{segment}]"));
            } else {
                let quoted = segment.replace('\\', "\\\\").replace('\'', "\\'");
                selector.push_str(&format!("['{quoted}']"));
            }
        }
        return json!({"context": "$response.body", "selector": selector, "type": "jsonpath"});
    }
    let mut tokens: Vec<String> = if path.starts_with('/') {
        path.split('/').skip(1).map(str::to_owned).collect()
    } else {
        wayline_core::reference::segments(path)
            .map(escape)
            .collect()
    };
    tokens.extend(rest.iter().map(|segment| escape(segment)));
    if tokens.is_empty() {
        json!("$response.body")
    } else {
        json!(format!("$response.body#/{}", tokens.join("/")))
    }
}

/// The `{name}` placeholders of a path.
fn path_placeholders(path: &str) -> Vec<&str> {
    path.split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(name, _)| name))
        .collect()
}

/// A template string with each `{{key}}` as its Arazzo value: the value itself when the string
/// is one placeholder, `{$…}` (or the literal's text) inside other text.
fn render(text: &str, whole: &Map<String, Value>, inline: &Map<String, Value>) -> Value {
    if let Some(key) = template::whole_placeholder(text) {
        return whole.get(key).cloned().unwrap_or(Value::Null);
    }
    template::render_str(text, inline, template::Mode::Lenient).unwrap_or_else(|_| json!(text))
}

fn render_value(value: &Value, whole: &Map<String, Value>, inline: &Map<String, Value>) -> Value {
    match value {
        Value::String(text) => {
            // An optional member (`{{?key}}`) is sent when the key has a value.
            match template::optional_placeholder(text) {
                Some(key) => whole.get(key).cloned().unwrap_or(Value::Null),
                None => render(text, whole, inline),
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| render_value(item, whole, inline))
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, item)| (name.clone(), render_value(item, whole, inline)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// An OpenAPI 3.1 description of `tools`, each an operation named after it.
fn openapi<'a>(title: &str, tools: impl Iterator<Item = &'a ToolDefinition>) -> Value {
    let mut paths = Map::new();
    let mut schemes = Map::new();
    let mut first_server: Option<String> = None;
    for tool in tools {
        first_server.get_or_insert_with(|| tool.base_url.clone());
        let mut parameters = Vec::new();
        let placeholders = path_placeholders(&tool.path);
        let mut body = None;
        match &tool.request {
            Some(request) => {
                for name in &request.path_params {
                    parameters
                        .push(json!({"name": name, "in": "path", "required": true, "schema": {}}));
                }
                for name in &request.query_params {
                    parameters.push(json!({"name": name, "in": "query", "schema": {}}));
                }
                for header in request.headers.keys() {
                    parameters.push(
                        json!({"name": header, "in": "header", "schema": {"type": "string"}}),
                    );
                }
                if request.body.is_some() {
                    body = Some(request.content_type.clone());
                }
            }
            None => {
                for name in &placeholders {
                    parameters
                        .push(json!({"name": name, "in": "path", "required": true, "schema": {}}));
                }
                if tool.method.eq_ignore_ascii_case("GET") {
                    for name in tool
                        .parameters
                        .iter()
                        .filter(|name| !placeholders.contains(&name.as_str()))
                    {
                        parameters.push(json!({"name": name, "in": "query", "schema": {}}));
                    }
                } else {
                    body = Some("application/json".to_owned());
                }
            }
        }
        let mut operation = json!({
            "operationId": tool.id,
            "servers": [{"url": tool.base_url}],
            "responses": {"2XX": {"description": "success"}},
        });
        if !tool.name.is_empty() {
            operation["summary"] = json!(tool.name);
        }
        if !tool.description.is_empty() {
            operation["description"] = json!(tool.description);
        }
        if !parameters.is_empty() {
            operation["parameters"] = json!(parameters);
        }
        if let Some(content_type) = body {
            operation["requestBody"] = json!({"content": {content_type: {"schema": {}}}});
        }
        let auth = tool.auth.as_ref().map_or(tool.auth_type, |auth| auth.kind);
        let scheme = match auth {
            AuthType::None => None,
            AuthType::Bearer => Some(("bearer", json!({"type": "http", "scheme": "bearer"}))),
            AuthType::Basic => Some(("basic", json!({"type": "http", "scheme": "basic"}))),
            AuthType::ApiKey => {
                let header = tool
                    .auth
                    .as_ref()
                    .and_then(|auth| auth.header.clone())
                    .or_else(|| (!tool.auth_header.is_empty()).then(|| tool.auth_header.clone()))
                    .unwrap_or_else(|| "X-API-Key".to_owned());
                Some((
                    "apiKey",
                    json!({"type": "apiKey", "in": "header", "name": header}),
                ))
            }
        };
        if let Some((name, definition)) = scheme {
            let name = format!("{name}-{}", tool.id);
            operation["security"] = json!([{name.clone(): []}]);
            schemes.insert(name, definition);
        }
        paths
            .entry(tool.path.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(|item| item.insert(tool.method.to_lowercase(), operation));
    }
    let mut description = json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "paths": paths,
    });
    // Each operation names its server; the first also stands at the root, for readers that
    // look only there.
    if let Some(first) = first_server {
        description["servers"] = json!([{"url": first}]);
    }
    if !schemes.is_empty() {
        description["components"] = json!({"securitySchemes": schemes});
    }
    description
}

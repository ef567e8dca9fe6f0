//! wayline's own tools and saved workflows, served to agents as MCP tools (`wayline mcp
//! serve`). Each tool is listed with a JSON Schema of its inputs (from the tool's placeholders
//! and parameters, or the workflow's declared inputs); calling one runs it on the engine the
//! host built (with its run store, guard policy and knowledge recorder when it has them) and
//! answers the run's step outputs as `structuredContent`. A caller that sends a progress
//! token gets a progress notification as each step finishes.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use indexmap::IndexMap;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use wayline_core::observer::{RunEvent, RunObserver};
use wayline_core::{Run, RunStatus, Step, ToolDefinition, Workflow};
use wayline_executor::{CancelToken, Engine, EngineBuilder, RunOptions};

use crate::Error;

/// What one served name runs.
#[derive(Debug)]
struct Entry {
    /// As listed.
    tool: Tool,
    /// What a call runs.
    runs: Runs,
}

/// What a call of a served name runs.
enum Runs {
    /// A workflow of wayline's on the server's engine.
    Workflow {
        /// The workflow (a tool: a workflow of one step).
        workflow: Workflow,
        /// The saved version, for a saved workflow.
        version: Option<u32>,
        /// A tool served alone: every argument given becomes an input of its step, named or
        /// not (a code or MCP tool names none; a body tool sends what it is given).
        open: bool,
    },
    /// A document's workflow, on the document's engine (`engine`, an index of the server's
    /// engines).
    Document {
        document: Arc<dyn Document>,
        engine: usize,
    },
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Runs::Workflow { workflow, .. } => write!(f, "workflow {}", workflow.id),
            Runs::Document { engine, .. } => write!(f, "a document's workflow (engine {engine})"),
        }
    }
}

/// Workflows `mcp serve` offers besides wayline's own that run on an engine of their own: an
/// Arazzo document's, whose operations are that engine's tools. The host implements it over
/// its runner (the CLI over `wayline_arazzo::run::Runner`), so this crate reads no Arazzo.
pub trait Document: Send + Sync + 'static {
    /// Its workflows as MCP tools: each one's id, description and input schema.
    fn tools(&self) -> Vec<DocumentTool>;

    /// Runs workflow `id` with `inputs` on `engine` (`options` gives the run id and an
    /// observer of the run, which the run passes on): the engine's record and the workflow's
    /// outputs, or why it did not start.
    fn run(
        &self,
        engine: Engine,
        id: String,
        inputs: JsonObject,
        options: RunOptions,
    ) -> Pin<Box<dyn Future<Output = Result<DocumentRun, String>> + Send>>;
}

/// A [`Document`]'s workflow as `mcp serve` lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DocumentTool {
    /// Its name (the workflow's id).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its inputs (an object schema).
    pub input_schema: JsonObject,
}

impl DocumentTool {
    /// Workflow `name`, doing what `description` says, taking inputs `input_schema`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: JsonObject,
    ) -> Self {
        DocumentTool {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

/// A finished run of a [`Document`]'s workflow.
#[derive(Debug)]
#[non_exhaustive]
pub struct DocumentRun {
    /// The engine's record.
    pub run: Run,
    /// The workflow's outputs.
    pub outputs: JsonObject,
}

impl DocumentRun {
    /// A run's record and the workflow's outputs.
    pub fn new(run: Run, outputs: JsonObject) -> Self {
        DocumentRun { run, outputs }
    }
}

/// wayline's tools and workflows as an MCP server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WaylineServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The server's engine, then each document's.
    engines: Vec<Engine>,
    entries: BTreeMap<String, Entry>,
    runs: AtomicU64,
}

impl WaylineServer {
    /// Serves `tools` (each callable alone) and `workflows` (with their saved version, if
    /// any) on the engine `builder` makes. A tool and a workflow of one name is an error.
    pub fn new(
        builder: EngineBuilder,
        tools: Vec<ToolDefinition>,
        workflows: Vec<(Workflow, Option<u32>)>,
    ) -> Result<WaylineServer, Error> {
        WaylineServer::with_documents(builder, tools, workflows, Vec::new())
    }

    /// As [`new`](WaylineServer::new), and the workflows of `documents` besides, each run on
    /// the engine its builder makes. A name served twice is an error.
    pub fn with_documents(
        builder: EngineBuilder,
        tools: Vec<ToolDefinition>,
        workflows: Vec<(Workflow, Option<u32>)>,
        documents: Vec<(EngineBuilder, Arc<dyn Document>)>,
    ) -> Result<WaylineServer, Error> {
        let mut engines = vec![builder.build()];
        let mut entries = BTreeMap::new();
        for tool in tools {
            let entry = tool_entry(&tool);
            insert(&mut entries, tool.id.clone(), entry, "tool")?;
        }
        for (workflow, version) in workflows {
            let entry = Entry {
                tool: Tool::new(
                    workflow.id.clone(),
                    workflow_description(&workflow),
                    Arc::new(workflow_schema(&workflow)),
                ),
                runs: Runs::Workflow {
                    workflow: workflow.clone(),
                    version,
                    open: false,
                },
            };
            insert(&mut entries, workflow.id.clone(), entry, "workflow")?;
        }
        for (builder, document) in documents {
            let engine = engines.len();
            engines.push(builder.build());
            for served in document.tools() {
                let tool = Tool::new(
                    served.name.clone(),
                    served.description,
                    Arc::new(served.input_schema),
                );
                let runs = Runs::Document {
                    document: Arc::clone(&document),
                    engine,
                };
                let entry = Entry { tool, runs };
                insert(&mut entries, served.name, entry, "document's workflow")?;
            }
        }
        Ok(WaylineServer {
            inner: Arc::new(Inner {
                engines,
                entries,
                runs: AtomicU64::new(0),
            }),
        })
    }

    /// The names served.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.entries.keys().map(String::as_str)
    }

    /// Serves one client on standard input and output, until it disconnects.
    pub async fn serve_stdio(&self) -> Result<(), Error> {
        let serve_error = |error: String| Error::Serve {
            address: "stdio".into(),
            source: std::io::Error::other(error),
        };
        let running = self
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| serve_error(error.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|error| serve_error(error.to_string()))?;
        Ok(())
    }

    /// Serves streamable HTTP at `/mcp` on `options.listener`, each request carrying
    /// `Authorization: Bearer TOKEN` (the gateway's rules); runs until `shutdown` completes.
    pub async fn serve_http(
        &self,
        options: crate::HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let server = self.clone();
        crate::http::serve(move || Ok(server.clone()), options, shutdown).await
    }

    /// Runs `entry` with `arguments`, telling `progress` of each finished step; the run is
    /// cancelled when `cancelled` completes (the client cancelled its request).
    async fn run(
        &self,
        entry: &Entry,
        arguments: JsonObject,
        progress: Option<(ProgressToken, rmcp::Peer<RoleServer>)>,
        cancelled: impl Future<Output = ()>,
    ) -> CallToolResult {
        let n = self.inner.runs.fetch_add(1, Ordering::Relaxed) + 1;
        let run_id = format!("mcp-{}-{n}", Utc::now().format("%Y%m%dT%H%M%S%.3f"));
        let stop = CancelToken::new();
        let mut options = RunOptions::new()
            .run_id(run_id.clone())
            .cancel(stop.clone());
        // Steps are counted only for a caller that asked for progress.
        let forwarding = progress.map(|(token, peer)| {
            let (sender, steps) = mpsc::unbounded_channel::<String>();
            options = std::mem::take(&mut options).observer(Arc::new(FinishedSteps {
                run_id: run_id.clone(),
                sender,
            }));
            let total = match &entry.runs {
                Runs::Workflow { workflow, .. } => Some(workflow.steps.len()),
                Runs::Document { .. } => None,
            };
            tokio::spawn(forward_progress(steps, token, peer, total))
        });
        let running = match &entry.runs {
            Runs::Workflow {
                workflow,
                version,
                open,
            } => {
                let (workflow, options) =
                    workflow_call(workflow, *version, *open, arguments, options);
                match self.inner.engines[0].start(&workflow, options) {
                    Ok(handle) => tokio::spawn(async move {
                        handle
                            .finish()
                            .await
                            .map(|run| DocumentRun::new(run, JsonObject::new()))
                            .map_err(|error| error.to_string())
                    }),
                    Err(error) => tokio::spawn(std::future::ready(Err(error.to_string()))),
                }
            }
            Runs::Document { document, engine } => {
                let engine = self.inner.engines[*engine].clone();
                let id = entry.tool.name.to_string();
                tokio::spawn(document.run(engine, id, arguments, options))
            }
        };
        let ran = tokio::select! {
            ran = running => ran,
            () = cancelled => {
                // The run ends `cancelled`, its record complete; nobody waits for the answer.
                stop.cancel();
                return CallToolResult::error(vec![ContentBlock::text("the run was cancelled")]);
            }
        };
        if let Some(task) = forwarding {
            // The run's observer is gone with it: the task ends once it has sent what was queued.
            let _ = task.await;
        }
        match ran {
            Ok(Ok(ran)) => run_result(&ran),
            Ok(Err(reason)) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the run could not start: {reason}"
            ))]),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                "the run ended without a record: {error}"
            ))]),
        }
    }
}

/// The workflow a call of a served workflow or tool runs, and its options: the arguments are
/// its inputs; a tool served alone (`open`) takes every argument as an input of its step.
fn workflow_call(
    workflow: &Workflow,
    version: Option<u32>,
    open: bool,
    arguments: JsonObject,
    options: RunOptions,
) -> (Workflow, RunOptions) {
    let mut options = options.inputs(arguments.into_iter().collect::<IndexMap<String, Value>>());
    if let Some(version) = version {
        options = options.workflow_version(version);
    }
    let mut workflow = workflow.clone();
    if open && let Some(step) = workflow.steps.first_mut() {
        for name in options.inputs.keys() {
            if !step.input_mapping.contains_key(name) {
                step.input_mapping
                    .insert(name.clone(), Value::String(format!("$input.{name}")));
                workflow.inputs.insert(name.clone(), Default::default());
            }
        }
    }
    (workflow, options)
}

/// Sends the client a progress notification per finished step, until the run's observer is
/// gone or the client is.
async fn forward_progress(
    mut steps: mpsc::UnboundedReceiver<String>,
    token: ProgressToken,
    peer: rmcp::Peer<RoleServer>,
    total: Option<usize>,
) {
    let mut done = 0u32;
    while let Some(message) = steps.recv().await {
        done += 1;
        let mut note =
            ProgressNotificationParam::new(token.clone(), f64::from(done)).with_message(message);
        if let Some(total) = total {
            note = note.with_total(total as f64);
        }
        if peer.notify_progress(note).await.is_err() {
            break;
        }
    }
}

fn insert(
    entries: &mut BTreeMap<String, Entry>,
    name: String,
    entry: Entry,
    what: &str,
) -> Result<(), Error> {
    if entries.contains_key(&name) {
        return Err(Error::ToolClash {
            tool: name,
            first: "a tool".into(),
            second: format!("a {what}"),
        });
    }
    entries.insert(name, entry);
    Ok(())
}

/// A tool served alone: its inputs' schema, and a workflow of one step mapping each input.
fn tool_entry(tool: &ToolDefinition) -> Entry {
    let names = tool.input_names();
    let required = tool.required_inputs();
    let schema = match tool.input_schema() {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    let description = if tool.description.is_empty() {
        tool.name.clone()
    } else {
        tool.description.clone()
    };
    let mut listed = Tool::new(tool.id.clone(), description, Arc::new(schema));
    listed.title = Some(tool.name.clone());
    let mut step = Step::new(tool.id.clone(), tool.id.clone());
    let mut workflow = Workflow::new(format!("tool-{}", tool.id), tool.name.clone());
    for name in names {
        step.input_mapping
            .insert(name.to_owned(), Value::String(format!("$input.{name}")));
        let mut spec = wayline_core::workflow::InputSpec::default();
        spec.required = Some(required.contains(&name));
        workflow.inputs.insert(name.to_owned(), spec);
    }
    workflow.steps.push(step);
    Entry {
        tool: listed,
        runs: Runs::Workflow {
            workflow,
            version: None,
            open: true,
        },
    }
}

fn workflow_description(workflow: &Workflow) -> String {
    let steps: Vec<&str> = workflow.steps.iter().map(|step| step.id.as_str()).collect();
    let about = if workflow.description.is_empty() {
        workflow.name.clone()
    } else {
        workflow.description.clone()
    };
    format!("{about} (a wayline workflow: {})", steps.join(" → "))
}

/// The schema of a workflow's inputs (core's rule of which are required), every input typed:
/// its default's type, or any value (a workflow's inputs are not typed), so that clients
/// checking schemas strictly find a type.
fn workflow_schema(workflow: &Workflow) -> JsonObject {
    let Value::Object(mut schema) = wayline_core::inputs::schema(workflow) else {
        return JsonObject::new();
    };
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property
                && !property.contains_key("type")
            {
                match property.get("default") {
                    Some(default) => {
                        property.insert("type".into(), json!(json_type(default)));
                    }
                    None => property.extend(
                        wayline_core::inputs::any_value()
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                    ),
                }
            }
        }
    }
    schema
}

/// The JSON Schema type of `value`.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A finished run as a tool result: the workflow's outputs (a document's) or its steps' as
/// structured content; a run that did not succeed is a tool error saying which steps failed.
fn run_result(ran: &DocumentRun) -> CallToolResult {
    let run = &ran.run;
    // A document's workflow declares its outputs; a wayline workflow's are its steps'.
    let outputs: Map<String, Value> = if ran.outputs.is_empty() {
        run.step_results
            .iter()
            .map(|result| (result.step_id.clone(), result.output_data.clone()))
            .collect()
    } else {
        ran.outputs.clone()
    };
    let failures: Vec<Value> = run
        .step_results
        .iter()
        .filter_map(|result| {
            result
                .error
                .as_ref()
                .map(|error| json!({"step": result.step_id, "error": error}))
        })
        .collect();
    let value = json!({
        "run_id": run.id,
        "status": run.status,
        "outputs": outputs,
        "failures": failures,
    });
    let mut result = CallToolResult::structured(value.clone());
    if run.status != RunStatus::Success {
        result.is_error = Some(true);
        let said: Vec<String> = failures
            .iter()
            .map(|failure| format!("{}: {}", failure["step"], failure["error"]))
            .collect();
        result.content.insert(
            0,
            ContentBlock::text(format!(
                "the run {} did not succeed ({}): {}",
                run.id,
                run.status.as_str(),
                said.join("; ")
            )),
        );
    }
    result
}

/// An observer of one run that sends each of its finished steps (`STEP STATUS`); the steps of
/// the workflows it calls are not counted.
#[derive(Debug)]
struct FinishedSteps {
    run_id: String,
    sender: mpsc::UnboundedSender<String>,
}

impl RunObserver for FinishedSteps {
    fn on_event(&self, event: &RunEvent<'_>) {
        if let RunEvent::StepFinished { run_id, result } = event
            && *run_id == self.run_id
        {
            let _ = self
                .sender
                .send(format!("{} {}", result.step_id, result.status.as_str()));
        }
    }
}

impl ServerHandler for WaylineServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("wayline", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "wayline's tools and workflows: calling one runs it on wayline's engine and answers each step's output.".into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner
                .entries
                .values()
                .map(|entry| entry.tool.clone())
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(entry) = self.inner.entries.get(request.name.as_ref()) else {
            return Err(ErrorData::invalid_params(
                format!("no tool or workflow `{}` here", request.name),
                None,
            ));
        };
        let token = context.meta.get_progress_token();
        let progress = token.map(|token| (token, context.peer.clone()));
        let arguments = request.arguments.unwrap_or_default();
        Ok(CallToolResponse::Complete(
            self.run(entry, arguments, progress, async move {
                context.ct.cancelled().await;
            })
            .await,
        ))
    }
}

//! The engine's public face: [`Engine`] (prepare, run), its settings and plug-ins
//! ([`EngineBuilder`]) and the options of one run ([`RunOptions`]). A run itself is the
//! scheduler's (`scheduler.rs`); one step is `step`'s (`run/step/`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::Value;
use tracing::Instrument;
use wayline_core::code::CodeRunner;
use wayline_core::decide::Decider;
use wayline_core::mcp::McpClient;
use wayline_core::{
    RetryPolicy, Run, RunObserver, RunStore, SecretProvider, StepPolicy, ToolCatalog, ToolConfig,
    Transport, Workflow,
};

use crate::Error;
use crate::cancel::CancelToken;
use crate::run::context::{EngineInner, RunShared, StoreFailure};
use crate::run::flow::{Flow, FlowRun};
use crate::run::middleware::StepMiddleware;
use crate::run::prepare::{Defaults, PreparedWorkflow, prepare};
use crate::run::scheduler::Scheduler;
use crate::values::eval::ExpressionBudget;
use crate::values::redact::Redactor;

/// Runs workflows. Cheap to clone; share one per process.
///
/// Runs need a **Tokio runtime with time enabled** (`#[tokio::main]`, or a runtime built with
/// `enable_time()`/`enable_all()`), whatever the transport: the engine waits on Tokio's clock
/// for retries, polls and deadlines, and [`Engine::start`] spawns onto the current runtime. A
/// run started outside any runtime answers [`Error::NoRuntime`](crate::Error::NoRuntime); on
/// a runtime without time, Tokio panics at the first timer. Every run future is `Send`, so a
/// multi-threaded runtime may move it between threads.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use serde_json::json;
/// use wayline_core::{HttpResponse, MemoryCatalog, RunStatus, Step, ToolDefinition, Workflow};
/// use wayline_executor::testing::ScriptedTransport;
/// use wayline_executor::{Engine, RunOptions};
///
/// let catalog = MemoryCatalog::from_tools([ToolDefinition::new("geo", "http://api.test/geo")]);
/// let transport = ScriptedTransport::new()
///     .then_respond(HttpResponse::new(200, r#"{"lat": 59.9, "lon": 10.7}"#));
/// let engine = Engine::builder(Arc::new(catalog)).transport(Arc::new(transport)).build();
///
/// let mut workflow = Workflow::new("w", "Where");
/// workflow.steps.push(Step::new("where", "geo").map("city", "$input.city"));
/// let run = engine.run(&workflow, RunOptions::new().input("city", "Oslo")).await.unwrap();
/// assert_eq!(run.status, RunStatus::Success);
/// assert_eq!(run.step_results[0].output_data, json!({"lat": 59.9, "lon": 10.7}));
/// # });
/// ```
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<EngineInner>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("transport", &self.inner.transport)
            .field("max_parallel", &self.inner.max_parallel)
            .field("per_host_limit", &self.inner.per_host_limit)
            .finish_non_exhaustive()
    }
}

/// Settings and plug-ins of an [`Engine`].
pub struct EngineBuilder {
    catalog: Arc<dyn ToolCatalog>,
    transport: Option<Arc<dyn Transport>>,
    secrets: Arc<dyn SecretProvider>,
    observers: Vec<Arc<dyn RunObserver>>,
    middleware: Vec<Arc<dyn StepMiddleware>>,
    policies: Vec<Arc<dyn StepPolicy>>,
    run_store: Option<Arc<dyn RunStore>>,
    code_runner: Option<Arc<dyn CodeRunner>>,
    mcp_client: Option<Arc<dyn McpClient>>,
    decider: Option<Arc<dyn Decider>>,
    max_parallel: usize,
    per_host_limit: Option<usize>,
    defaults: Defaults,
    max_retry_after: Duration,
    max_executions: u32,
    expression_budget: ExpressionBudget,
    masked: Vec<String>,
    redactor: Redactor,
    store_failure: StoreFailure,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("max_parallel", &self.max_parallel)
            .field("per_host_limit", &self.per_host_limit)
            .finish_non_exhaustive()
    }
}

/// Steps running at once unless set (see [`EngineBuilder::max_parallel`]).
pub const DEFAULT_MAX_PARALLEL: usize = 8;

/// Step executions a flow run makes at most unless set (see [`EngineBuilder::max_executions`]).
pub const DEFAULT_MAX_EXECUTIONS: u32 = 10_000;

impl Engine {
    /// Starts building an engine that takes tools from `catalog`.
    pub fn builder(catalog: Arc<dyn ToolCatalog>) -> EngineBuilder {
        EngineBuilder {
            catalog,
            transport: None,
            secrets: Arc::new(wayline_core::MemorySecrets::new()),
            observers: Vec::new(),
            middleware: Vec::new(),
            policies: Vec::new(),
            run_store: None,
            code_runner: None,
            mcp_client: None,
            decider: None,
            max_parallel: DEFAULT_MAX_PARALLEL,
            per_host_limit: None,
            defaults: Defaults {
                retry: RetryPolicy::new(3),
                timeout: Duration::from_secs(30),
                code_steps: false,
                mcp_steps: false,
                decisions: false,
                check_schemas: false,
            },
            max_retry_after: Duration::from_secs(60),
            max_executions: DEFAULT_MAX_EXECUTIONS,
            expression_budget: ExpressionBudget::default(),
            masked: Vec::new(),
            redactor: Redactor::default(),
            store_failure: StoreFailure::default(),
        }
    }

    /// The redactor this engine teaches every secret its runs meet (see
    /// [`EngineBuilder::redactor`]): mask what you show of its runs through it.
    pub fn redactor(&self) -> &Redactor {
        &self.inner.redactor
    }

    /// Validates `workflow` and compiles everything in it once, for any number of runs. The
    /// error lists every problem.
    pub fn prepare(&self, workflow: &Workflow) -> Result<PreparedWorkflow, Error> {
        prepare(workflow, self.inner.catalog.as_ref(), self.inner.defaults)
    }

    /// [`Engine::prepare`] with the tools of `catalog` instead of the engine's own: for
    /// workflows whose tools are made as they are run (an Arazzo document's operations).
    pub fn prepare_with(
        &self,
        workflow: &Workflow,
        catalog: &dyn ToolCatalog,
    ) -> Result<PreparedWorkflow, Error> {
        prepare(workflow, catalog, self.inner.defaults)
    }

    /// Runs a prepared workflow as a [`Flow`] directs: the flow gives each execution's inputs
    /// (the steps' mappings and `when` are not read) and decides what follows each step, so a
    /// step can run more than once ([`crate::run::flow`]). The options' inputs are recorded as the
    /// run's. An `Err` means nothing ran, or the run store failed.
    pub async fn run_flow(
        &self,
        prepared: &PreparedWorkflow,
        flow: &mut dyn Flow,
        options: RunOptions,
    ) -> Result<Run, Error> {
        on_a_runtime()?;
        let run_id = options.run_id.unwrap_or_else(new_run_id);
        let span =
            tracing::info_span!("flow", run_id = %run_id, workflow_id = %prepared.workflow.id);
        async {
            let shared = self
                .shared(
                    prepared,
                    run_id,
                    options.inputs,
                    options.masked,
                    options.observers,
                )
                .await;
            let mut run = FlowRun::new(prepared, &shared, flow);
            run.record.workflow_version = options.workflow_version;
            run.run(options.cancel, options.deadline).await
        }
        .instrument(span)
        .await
    }

    /// Prepares and runs `workflow`. An `Err` means nothing ran (invalid workflow or inputs);
    /// every failure after the start is in the returned run record.
    pub async fn run(&self, workflow: &Workflow, options: RunOptions) -> Result<Run, Error> {
        let prepared = self.prepare(workflow)?;
        self.run_prepared(&prepared, options).await
    }

    /// Runs a prepared workflow.
    pub async fn run_prepared(
        &self,
        prepared: &PreparedWorkflow,
        options: RunOptions,
    ) -> Result<Run, Error> {
        on_a_runtime()?;
        let inputs = check_inputs(prepared, options.inputs)?;
        let run_id = options.run_id.unwrap_or_else(new_run_id);
        let span =
            tracing::info_span!("run", run_id = %run_id, workflow_id = %prepared.workflow.id);
        async {
            let shared = self
                .shared(prepared, run_id, inputs, options.masked, options.observers)
                .await;
            let mut scheduler = Scheduler::new(prepared, &shared);
            scheduler.record.workflow_version = options.workflow_version;
            scheduler.run(options.cancel, options.deadline).await
        }
        .instrument(span)
        .await
    }

    /// What every step of a run shares: its id, inputs, tool configs and redactor (masking
    /// the configs' secrets, the engine's masked values and the run's own).
    pub(crate) async fn shared<'e>(
        &'e self,
        prepared: &PreparedWorkflow,
        run_id: String,
        inputs: IndexMap<String, Value>,
        masked: Vec<String>,
        observers: Vec<Arc<dyn RunObserver>>,
    ) -> RunShared<'e> {
        let configs = self.fetch_configs(prepared).await;
        let redactor =
            Redactor::for_configs(configs.values().flat_map(|config| config.iter().flatten()));
        redactor.learn(self.inner.masked.iter().cloned().chain(masked));
        // The host's writers (an HTTP archive, a printed response) mask what this run masks.
        self.inner.redactor.learn_from(&redactor);
        RunShared {
            engine: &self.inner,
            run_id,
            workflow_id: prepared.workflow.id.clone(),
            inputs,
            configs,
            redactor,
            observers,
        }
    }

    pub(crate) async fn fetch_configs(
        &self,
        prepared: &PreparedWorkflow,
    ) -> HashMap<String, Result<Option<ToolConfig>, String>> {
        let mut configs = HashMap::new();
        for step in &prepared.steps {
            let Some(tool) = &step.tool else { continue };
            if configs.contains_key(&tool.id) {
                continue;
            }
            let config = self
                .inner
                .secrets
                .tool_config(&tool.id)
                .await
                .map_err(|error| error.to_string());
            configs.insert(tool.id.clone(), config);
        }
        crate::call::token::resolve(&mut configs).await;
        configs
    }
}

impl EngineBuilder {
    /// How requests are sent (default: `ReqwestTransport` when the `http` feature is on; else
    /// a transport that fails every request, saying to set one).
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Where tool configs and credentials come from (default: none).
    pub fn secrets(mut self, secrets: Arc<dyn SecretProvider>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Adds an observer of run events.
    pub fn observer(mut self, observer: Arc<dyn RunObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Adds a policy consulted before each step that calls a tool (see
    /// [`StepPolicy`](wayline_core::StepPolicy)): a block fails the step with the reason, a
    /// warning is kept in the step's warnings.
    pub fn policy(mut self, policy: Arc<dyn StepPolicy>) -> Self {
        self.policies.push(policy);
        self
    }

    /// Adds a hook run before and after each step.
    pub fn middleware(mut self, middleware: Arc<dyn StepMiddleware>) -> Self {
        self.middleware.push(middleware);
        self
    }

    /// Makes runs durable: each run is recorded in `store` when it starts, each step is marked
    /// running before its call and its result saved before its dependents start, and the final
    /// record is written at the end. A run that was interrupted can then be finished with
    /// [`Engine::resume`].
    pub fn run_store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.run_store = Some(store);
        self
    }

    /// What a run does when the run store fails to record one of its steps (default
    /// [`StoreFailure::FailStep`]).
    pub fn on_store_failure(mut self, failure: StoreFailure) -> Self {
        self.store_failure = failure;
        self
    }

    /// Runs code steps (tools of kind `code`) with `runner` — a sandbox, local or Bay
    /// (`wayline_sandbox::SandboxCodeRunner`). Without one, a workflow with a code step is
    /// refused when prepared.
    pub fn code_runner(mut self, runner: Arc<dyn CodeRunner>) -> Self {
        self.code_runner = Some(runner);
        self.defaults.code_steps = true;
        self
    }

    /// Calls the tools of MCP steps (tools of kind `mcp`) with `client`. Without one, a
    /// workflow with an MCP step is refused when prepared.
    pub fn mcp_client(mut self, client: Arc<dyn McpClient>) -> Self {
        self.mcp_client = Some(client);
        self.defaults.mcp_steps = true;
        self
    }

    /// Answers decision steps with `decider` — a language model
    /// (`wayline_planner::decide::ModelDecider`) or a [`ScriptedDecider`](wayline_core::ScriptedDecider).
    /// Without one, a workflow with a decision step is refused when prepared.
    pub fn decider(mut self, decider: Arc<dyn Decider>) -> Self {
        self.decider = Some(decider);
        self.defaults.decisions = true;
        self
    }

    /// Most steps running at once (default [`DEFAULT_MAX_PARALLEL`]; at least 1).
    pub fn max_parallel(mut self, count: usize) -> Self {
        self.max_parallel = count.max(1);
        self
    }

    /// Most steps running at once against one host (default: no limit; at least 1).
    pub fn per_host_limit(mut self, count: usize) -> Self {
        self.per_host_limit = Some(count.max(1));
        self
    }

    /// Retry policy of steps whose step and tool set none (default: 3 attempts, 200 ms doubling
    /// to 10 s).
    pub fn default_retry(mut self, policy: RetryPolicy) -> Self {
        self.defaults.retry = policy;
        self
    }

    /// Per-attempt timeout of steps whose step and tool set none (default 30 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.defaults.timeout = timeout;
        self
    }

    /// Most step executions a flow run makes (default [`DEFAULT_MAX_EXECUTIONS`]); past it
    /// the run fails saying so, so a `goto` that loops forever ends.
    pub fn max_executions(mut self, count: u32) -> Self {
        self.max_executions = count.max(1);
        self
    }

    /// Longest `Retry-After` honoured (default 60 s); a server asking for more fails the step.
    pub fn max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// What one evaluation of a CEL expression (`when`, `poll.until`, an output) may spend
    /// (default [`ExpressionBudget::default`]); one that needs more fails its step.
    pub fn expression_budget(mut self, budget: ExpressionBudget) -> Self {
        self.expression_budget = budget;
        self
    }

    /// Checks every response against its tool's response schema for the status, when the
    /// tool has one (an OpenAPI import embeds them); a step's `expect.schema` overrides it
    /// (`false` off, `true` required). Each violation fails the step, naming its JSON Pointer.
    pub fn check_response_schemas(mut self, check: bool) -> Self {
        self.defaults.check_schemas = check;
        self
    }

    /// Masks these values, too, wherever the tool configs' secrets are masked (run records,
    /// events, errors): values from an env file, say, that are not in a tool config.
    pub fn mask(mut self, values: impl IntoIterator<Item = String>) -> Self {
        self.masked.extend(values);
        self
    }

    /// The redactor the engine teaches every secret its runs meet — their tool configs'
    /// secrets, a token an `auth_token_command` printed, a value sent as a credential, a session
    /// cookie received — for the host's own writers of what users read (an HTTP archive of the
    /// exchanges, a printed response) to mask through. Default: one of the engine's own
    /// ([`Engine::redactor`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use wayline_executor::{Engine, Redactor};
    ///
    /// let redactor = Redactor::default();
    /// let engine = Engine::builder(Arc::new(wayline_core::MemoryCatalog::new()))
    ///     .redactor(redactor.clone())
    ///     .mask(["s3cret-value".to_owned()])
    ///     .build();
    /// assert_eq!(redactor.text("got s3cret-value"), "got ***");
    /// # let _ = engine;
    /// ```
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        self.redactor.learn(self.masked.iter().cloned());
        let transport = self.transport.unwrap_or_else(default_transport);
        Engine {
            inner: Arc::new(EngineInner {
                catalog: self.catalog,
                transport,
                secrets: self.secrets,
                observers: self.observers,
                middleware: self.middleware,
                policies: self.policies,
                run_store: self.run_store,
                code_runner: self.code_runner,
                mcp_client: self.mcp_client,
                decider: self.decider,
                max_parallel: self.max_parallel,
                per_host_limit: self.per_host_limit,
                defaults: self.defaults,
                max_retry_after: self.max_retry_after,
                max_executions: self.max_executions,
                expression_budget: self.expression_budget,
                masked: self.masked,
                redactor: self.redactor,
                store_failure: self.store_failure,
            }),
        }
    }
}

#[cfg(feature = "http")]
fn default_transport() -> Arc<dyn Transport> {
    match crate::ReqwestTransport::new() {
        Ok(transport) => Arc::new(transport),
        Err(error) => Arc::new(crate::call::unavailable::Unavailable(error.to_string())),
    }
}

#[cfg(not(feature = "http"))]
fn default_transport() -> Arc<dyn Transport> {
    Arc::new(crate::call::unavailable::Unavailable(
        "no transport: enable the `http` feature or set one with `EngineBuilder::transport`"
            .to_owned(),
    ))
}

/// Inputs and limits of one run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Run inputs (`$input.NAME`).
    pub inputs: IndexMap<String, Value>,
    /// The run's id (default: a random UUID).
    pub run_id: Option<String>,
    /// Time allowed for the whole run; when it passes the run is cancelled.
    pub deadline: Option<Duration>,
    /// A token that cancels the run.
    pub cancel: Option<CancelToken>,
    /// The saved workflow version being run, recorded in the run.
    pub workflow_version: Option<u32>,
    /// Values this run masks wherever the record or events would show them, besides the
    /// engine's (credentials passed as inputs, say).
    pub masked: Vec<String>,
    /// Observers of this run alone, told its events after the engine's own.
    pub observers: Vec<Arc<dyn RunObserver>>,
}

impl RunOptions {
    /// No inputs, no deadline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an input.
    pub fn input(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.inputs.insert(name.into(), value.into());
        self
    }

    /// Sets all inputs.
    pub fn inputs(mut self, inputs: IndexMap<String, Value>) -> Self {
        self.inputs = inputs;
        self
    }

    /// Sets the run id.
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = Some(id.into());
        self
    }

    /// Sets the deadline of the whole run.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the cancellation token.
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Names the saved workflow version this run runs.
    pub fn workflow_version(mut self, version: u32) -> Self {
        self.workflow_version = Some(version);
        self
    }

    /// Masks `values` in this run's record and events, as the tool configs' secrets are. A flow
    /// run masks them in the record's inputs too; a graph run keeps its inputs as given, since
    /// resuming it reads them from the record.
    pub fn mask(mut self, values: impl IntoIterator<Item = String>) -> Self {
        self.masked.extend(values);
        self
    }

    /// Adds an observer of this run alone: it is told the run's events (after the engine's
    /// observers), and no other run's.
    pub fn observer(mut self, observer: Arc<dyn RunObserver>) -> Self {
        self.observers.push(observer);
        self
    }
}

/// Fills declared defaults, and rejects missing inputs and (when the workflow declares its
/// inputs) unknown ones, before anything runs.
pub(crate) fn check_inputs(
    prepared: &PreparedWorkflow,
    mut inputs: IndexMap<String, Value>,
) -> Result<IndexMap<String, Value>, Error> {
    let workflow = &prepared.workflow;
    let mut problems = Vec::new();
    for (name, spec) in &workflow.inputs {
        if inputs.contains_key(name) {
            continue;
        }
        match &spec.default {
            Some(default) => {
                inputs.insert(name.clone(), default.clone());
            }
            None if spec.is_required() => problems.push(format!(
                "input `{name}` is required{}; pass it with --input {name}=VALUE",
                if spec.description.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", spec.description)
                }
            )),
            None => {}
        }
    }
    if !workflow.inputs.is_empty() {
        for name in inputs.keys() {
            if !workflow.inputs.contains_key(name) {
                let hint = wayline_core::document::nearest(
                    name,
                    workflow.inputs.keys().map(String::as_str),
                )
                .map(|known| format!(" (did you mean `{known}`?)"))
                .unwrap_or_default();
                problems.push(format!(
                    "input `{name}` is not declared by the workflow{hint}"
                ));
            }
        }
    }
    for name in &prepared.input_refs {
        let declared_optional = workflow.inputs.contains_key(name);
        if !inputs.contains_key(name) && !declared_optional {
            problems.push(format!(
                "input `{name}` is read by the workflow but not given; pass it with --input {name}=VALUE"
            ));
        }
    }
    if problems.is_empty() {
        Ok(inputs)
    } else {
        Err(Error::InvalidInputs {
            workflow_id: workflow.id.clone(),
            problems,
        })
    }
}

/// A random version-4 UUID.
/// A run sleeps on Tokio's clock (retries, polls, deadlines): polled outside a Tokio runtime
/// it would panic at its first timer, so it answers [`Error::NoRuntime`] before anything runs.
pub(crate) fn on_a_runtime() -> Result<(), Error> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|_| Error::NoRuntime)
}

pub(crate) fn new_run_id() -> String {
    let mut bytes = [0u8; 16];
    bytes.iter_mut().for_each(|byte| *byte = fastrand::u8(..));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

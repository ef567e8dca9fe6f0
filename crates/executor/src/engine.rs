//! The engine: settings and plug-ins ([`EngineBuilder`]), and the scheduler that runs a prepared
//! workflow.
//!
//! Scheduling is by readiness: a step starts as soon as its last dependency finished, while
//! fewer than `max_parallel` steps run (and fewer than the per-host limit on its host). When
//! several steps are ready, the one with the longest chain of steps after it goes first, then
//! the one declared first. Outputs, statuses and the record's order never depend on timing: a
//! step reads only the outputs of steps it depends on, all finished before it starts.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use serde_json::Value;
use tracing::Instrument;
use wayline_core::code::CodeRunner;
use wayline_core::decide::Decider;
use wayline_core::{
    RetryPolicy, Run, RunEvent, RunObserver, RunStatus, RunStore, SecretProvider, Severity,
    StepPolicy, StepResult, StepStatus, ToolCatalog, ToolConfig, Transport, Workflow,
};

use crate::Error;
use crate::cancel::CancelToken;
use crate::eval::{self, Scope};
use crate::middleware::StepMiddleware;
use crate::prepare::{Defaults, PreparedWorkflow, prepare};
use crate::redact::Redactor;
use crate::resolve::{self, Outputs, Unresolved};
use crate::step::{self, StepDone, StepJob};

/// Runs workflows. Cheap to clone; share one per process.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use serde_json::json;
/// use wayline_core::{HttpResponse, MemoryCatalog, RunStatus, Step, ToolDefinition, Workflow};
/// use wayline_executor::{Engine, RunOptions, ScriptedTransport};
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

pub(crate) struct EngineInner {
    catalog: Arc<dyn ToolCatalog>,
    pub(crate) transport: Arc<dyn Transport>,
    secrets: Arc<dyn SecretProvider>,
    observers: Vec<Arc<dyn RunObserver>>,
    pub(crate) middleware: Vec<Arc<dyn StepMiddleware>>,
    pub(crate) policies: Vec<Arc<dyn StepPolicy>>,
    pub(crate) run_store: Option<Arc<dyn RunStore>>,
    pub(crate) code_runner: Option<Arc<dyn CodeRunner>>,
    pub(crate) decider: Option<Arc<dyn Decider>>,
    max_parallel: usize,
    per_host_limit: Option<usize>,
    defaults: Defaults,
    pub(crate) max_retry_after: Duration,
}

impl EngineInner {
    pub(crate) fn emit(&self, event: &RunEvent<'_>) {
        for observer in &self.observers {
            observer.on_event(event);
        }
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
    decider: Option<Arc<dyn Decider>>,
    max_parallel: usize,
    per_host_limit: Option<usize>,
    defaults: Defaults,
    max_retry_after: Duration,
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
            decider: None,
            max_parallel: DEFAULT_MAX_PARALLEL,
            per_host_limit: None,
            defaults: Defaults {
                retry: RetryPolicy::new(3),
                timeout: Duration::from_secs(30),
                code_steps: false,
                decisions: false,
            },
            max_retry_after: Duration::from_secs(60),
        }
    }

    /// Validates `workflow` and compiles everything in it once, for any number of runs. The
    /// error lists every problem.
    pub fn prepare(&self, workflow: &Workflow) -> Result<PreparedWorkflow, Error> {
        prepare(workflow, self.inner.catalog.as_ref(), self.inner.defaults)
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
        let inputs = check_inputs(prepared, options.inputs)?;
        let run_id = options.run_id.unwrap_or_else(new_run_id);
        let span =
            tracing::info_span!("run", run_id = %run_id, workflow_id = %prepared.workflow.id);
        async {
            let shared = self.shared(prepared, run_id, inputs).await;
            let mut scheduler = Scheduler::new(prepared, &shared);
            scheduler.record.workflow_version = options.workflow_version;
            scheduler.run(options.cancel, options.deadline).await
        }
        .instrument(span)
        .await
    }

    /// What every step of a run shares: its id, inputs, tool configs and redactor.
    pub(crate) async fn shared<'e>(
        &'e self,
        prepared: &PreparedWorkflow,
        run_id: String,
        inputs: IndexMap<String, Value>,
    ) -> RunShared<'e> {
        let configs = self.fetch_configs(prepared).await;
        let redactor =
            Redactor::for_configs(configs.values().flat_map(|config| config.iter().flatten()));
        RunShared {
            engine: &self.inner,
            run_id,
            workflow_id: prepared.workflow.id.clone(),
            inputs,
            configs,
            redactor,
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
        configs
    }
}

impl EngineBuilder {
    /// How requests are sent (default: [`ReqwestTransport`](crate::ReqwestTransport) when the
    /// `http` feature is on).
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

    /// Runs code steps (tools of kind `code`) with `runner` — a sandbox, local or Bay
    /// (`wayline_sandbox::SandboxCodeRunner`). Without one, a workflow with a code step is
    /// refused when prepared.
    pub fn code_runner(mut self, runner: Arc<dyn CodeRunner>) -> Self {
        self.code_runner = Some(runner);
        self.defaults.code_steps = true;
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

    /// Longest `Retry-After` honoured (default 60 s); a server asking for more fails the step.
    pub fn max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
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
                decider: self.decider,
                max_parallel: self.max_parallel,
                per_host_limit: self.per_host_limit,
                defaults: self.defaults,
                max_retry_after: self.max_retry_after,
            }),
        }
    }
}

#[cfg(feature = "http")]
fn default_transport() -> Arc<dyn Transport> {
    match crate::ReqwestTransport::new() {
        Ok(transport) => Arc::new(transport),
        Err(error) => Arc::new(crate::mock::Unavailable(error.to_string())),
    }
}

#[cfg(not(feature = "http"))]
fn default_transport() -> Arc<dyn Transport> {
    Arc::new(crate::mock::Unavailable(
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
            None if spec.required != Some(false) => problems.push(format!(
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
fn new_run_id() -> String {
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

/// What every step of one run shares.
pub(crate) struct RunShared<'e> {
    pub(crate) engine: &'e EngineInner,
    pub(crate) run_id: String,
    pub(crate) workflow_id: String,
    pub(crate) inputs: IndexMap<String, Value>,
    configs: HashMap<String, Result<Option<ToolConfig>, String>>,
    pub(crate) redactor: Redactor,
}

impl fmt::Debug for RunShared<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunShared")
            .field("run_id", &self.run_id)
            .field("workflow_id", &self.workflow_id)
            .finish_non_exhaustive()
    }
}

impl RunShared<'_> {
    /// The tool's config, or why it could not be had.
    pub(crate) fn config(&self, tool_id: &str) -> Result<Option<&ToolConfig>, String> {
        match self.configs.get(tool_id) {
            Some(Ok(config)) => Ok(config.as_ref()),
            Some(Err(error)) => Err(error.clone()),
            None => Ok(None),
        }
    }
}

type StepFuture<'r> = Pin<Box<dyn Future<Output = (usize, StepDone)> + 'r>>;

/// One run's mutable state.
pub(crate) struct Scheduler<'r> {
    prepared: &'r PreparedWorkflow,
    shared: &'r RunShared<'r>,
    pub(crate) record: Run,
    /// True when continuing a stored run rather than starting one.
    resumed: bool,
    /// Position → index in `record.step_results`.
    slot: Vec<usize>,
    outputs: Vec<Option<Arc<Value>>>,
    /// Unfinished predecessors per step.
    waiting: Vec<usize>,
    ready: BinaryHeap<(u64, Reverse<usize>)>,
    hosts: Vec<Option<String>>,
    busy: HashMap<String, usize>,
}

struct ByPosition<'a>(&'a Scheduler<'a>);

impl Outputs for ByPosition<'_> {
    fn output(&self, id: &str) -> Option<&Value> {
        let position = *self.0.prepared.index.get(id)?;
        self.0.outputs[position].as_deref()
    }
}

impl<'r> Scheduler<'r> {
    pub(crate) fn new(prepared: &'r PreparedWorkflow, shared: &'r RunShared<'r>) -> Self {
        let count = prepared.steps.len();
        let mut record = Run::new(shared.run_id.clone(), prepared.workflow.id.clone());
        record.user_inputs = shared.inputs.clone();
        record.started_at = Some(Utc::now());
        let mut slot = vec![0; count];
        for (index, &position) in prepared.order.iter().enumerate() {
            slot[position] = index;
            record.step_results.push(StepResult::pending(
                prepared.workflow.steps[position].id.clone(),
            ));
        }
        Scheduler::with_record(prepared, shared, record, slot)
    }

    /// Continues `record`, a stored run of `prepared` whose step results are each final
    /// (success, failed, skipped) or `pending` (to run now). Successful outputs feed the steps
    /// still to run.
    pub(crate) fn resumed(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        mut record: Run,
    ) -> Self {
        let mut slot = Vec::with_capacity(prepared.steps.len());
        for step in &prepared.workflow.steps {
            let index = match record
                .step_results
                .iter()
                .position(|result| result.step_id == step.id)
            {
                Some(index) => index,
                None => {
                    record
                        .step_results
                        .push(StepResult::pending(step.id.clone()));
                    record.step_results.len() - 1
                }
            };
            slot.push(index);
        }
        let mut scheduler = Scheduler::with_record(prepared, shared, record, slot);
        scheduler.resumed = true;
        for position in 0..prepared.steps.len() {
            let result = &scheduler.record.step_results[scheduler.slot[position]];
            if result.status == StepStatus::Success {
                scheduler.outputs[position] = Some(Arc::new(result.output_data.clone()));
            }
            if result.status != StepStatus::Pending {
                for &next in &prepared.successors[position] {
                    scheduler.waiting[next] -= 1;
                }
            }
        }
        scheduler
    }

    fn with_record(
        prepared: &'r PreparedWorkflow,
        shared: &'r RunShared<'r>,
        record: Run,
        slot: Vec<usize>,
    ) -> Self {
        let count = prepared.steps.len();
        // One URL parse per tool, not per step.
        let mut host_of: HashMap<&str, Option<String>> = HashMap::new();
        let hosts = prepared
            .steps
            .iter()
            .map(|step| {
                let tool = step.tool.as_ref()?;
                host_of
                    .entry(tool.id.as_str())
                    .or_insert_with(|| {
                        let base = shared
                            .config(&tool.id)
                            .ok()
                            .flatten()
                            .and_then(|config| config.base_url.as_deref())
                            .unwrap_or(&tool.base_url);
                        url::Url::parse(base)
                            .ok()
                            .and_then(|url| url.host_str().map(str::to_owned))
                    })
                    .clone()
            })
            .collect();
        Scheduler {
            prepared,
            shared,
            record,
            resumed: false,
            slot,
            outputs: vec![None; count],
            waiting: prepared.predecessors.iter().map(Vec::len).collect(),
            ready: BinaryHeap::new(),
            hosts,
            busy: HashMap::new(),
        }
    }

    /// Runs to the end. An `Err` means the run store failed: at the start (nothing ran), or at
    /// the end (the error carries the run record that could not be saved).
    pub(crate) async fn run(
        mut self,
        cancel: Option<CancelToken>,
        deadline: Option<Duration>,
    ) -> Result<Run, Error> {
        let engine = self.shared.engine;
        if let Some(store) = &engine.run_store {
            let stored = if self.resumed {
                store.finish_run(&self.record).await
            } else {
                store.create_run(&self.record).await
            };
            stored.map_err(|error| Error::Store {
                run_id: self.record.id.clone(),
                error,
                run: None,
            })?;
        }
        engine.emit(&RunEvent::RunStarted { run: &self.record });
        // Collected first: settling a step below releases its dependents itself.
        let startable: Vec<usize> = (0..self.prepared.steps.len())
            .filter(|&position| {
                self.waiting[position] == 0
                    && self.record.step_results[self.slot[position]].status == StepStatus::Pending
            })
            .collect();
        for position in startable {
            match self.failed_dependency(position) {
                Some(reason) => self.settle(position, StepStatus::Skipped, reason),
                None => self.push_ready(position),
            }
        }
        let cancel = cancel.unwrap_or_default();
        let deadline_sleep = async {
            match deadline {
                Some(deadline) => tokio::time::sleep(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline_sleep);
        let mut in_flight: FuturesUnordered<StepFuture<'r>> = FuturesUnordered::new();
        let stopped = loop {
            while in_flight.len() < engine.max_parallel {
                let Some(position) = self.next_ready() else {
                    break;
                };
                if let Some(future) = self.start(position) {
                    in_flight.push(future);
                }
            }
            if in_flight.is_empty() {
                break None;
            }
            tokio::select! {
                Some((position, done)) = in_flight.next() => self.finish(position, done),
                () = cancel.cancelled() => break Some("the run was cancelled".to_owned()),
                () = &mut deadline_sleep => break Some(format!(
                    "the run deadline of {} ms passed",
                    deadline.map_or(0, |deadline| deadline.as_millis())
                )),
            }
        };
        drop(in_flight);
        if let Some(reason) = &stopped {
            self.stop(reason);
        }
        let status = if stopped.is_some() {
            RunStatus::Cancelled
        } else if self.prepared.order.iter().any(|&position| {
            self.prepared.workflow.steps[position].severity == Severity::Critical
                && self.record.step_results[self.slot[position]].status == StepStatus::Failed
        }) {
            RunStatus::Failed
        } else {
            RunStatus::Success
        };
        self.record.status = status;
        self.record.finished_at = Some(Utc::now());
        engine.emit(&RunEvent::RunFinished { run: &self.record });
        tracing::info!(status = ?self.record.status, "run finished");
        if let Some(store) = &engine.run_store
            && let Err(error) = store.finish_run(&self.record).await
        {
            return Err(Error::Store {
                run_id: self.record.id.clone(),
                error,
                run: Some(Box::new(self.record)),
            });
        }
        Ok(self.record)
    }

    fn push_ready(&mut self, position: usize) {
        self.ready
            .push((self.prepared.priority[position], Reverse(position)));
    }

    /// The best ready step whose host has room.
    fn next_ready(&mut self) -> Option<usize> {
        let Some(limit) = self.shared.engine.per_host_limit else {
            return self.ready.pop().map(|(_, Reverse(position))| position);
        };
        let mut held = Vec::new();
        let mut chosen = None;
        while let Some(entry) = self.ready.pop() {
            let position = entry.1.0;
            let full = self.hosts[position]
                .as_ref()
                .is_some_and(|host| self.busy.get(host).copied().unwrap_or(0) >= limit);
            if full {
                held.push(entry);
            } else {
                chosen = Some(position);
                break;
            }
        }
        self.ready.extend(held);
        chosen
    }

    /// Starts a step: evaluates `when`, resolves inputs, and returns the future that runs it
    /// (`None` when it finished at once: skipped, or failed before any call).
    fn start(&mut self, position: usize) -> Option<StepFuture<'r>> {
        let prepared: &'r PreparedWorkflow = self.prepared;
        let shared: &'r RunShared<'r> = self.shared;
        let step = &prepared.steps[position];
        let definition = &prepared.workflow.steps[position];
        let started_at = Utc::now();
        {
            let result = &mut self.record.step_results[self.slot[position]];
            result.status = StepStatus::Running;
            result.started_at = Some(started_at);
        }
        shared.engine.emit(&RunEvent::StepStarted {
            run_id: &shared.run_id,
            step_id: &definition.id,
        });
        let mut steps = HashMap::new();
        for (id, from) in &step.reads {
            if let Some(output) = &self.outputs[*from] {
                steps.insert(id.clone(), Arc::clone(output));
            }
        }
        // A decision's context is what the steps it depends on gave.
        if definition.kind == wayline_core::StepKind::Decision {
            for &from in &prepared.predecessors[position] {
                if let Some(output) = &self.outputs[from] {
                    steps
                        .entry(prepared.workflow.steps[from].id.clone())
                        .or_insert_with(|| Arc::clone(output));
                }
            }
        }
        if let Some(when) = &step.when {
            let scope = Scope {
                inputs: &shared.inputs,
                steps: &steps,
                response: None,
            };
            match eval::condition(when, scope) {
                Ok(true) => {}
                Ok(false) => {
                    self.settle(
                        position,
                        StepStatus::Skipped,
                        format!("`when` condition `{}` is false", when.source()),
                    );
                    return None;
                }
                Err(error) => {
                    self.settle(position, StepStatus::Failed, format!("`when`: {error}"));
                    return None;
                }
            }
        }
        let is_step = |id: &str| prepared.is_step(id);
        let inputs = match resolve::resolve(
            definition,
            &is_step,
            &shared.inputs,
            &ByPosition(self),
            Unresolved::Fail,
        ) {
            Ok(inputs) => inputs,
            Err(error) => {
                self.settle(position, StepStatus::Failed, error);
                return None;
            }
        };
        if let Some(host) = &self.hosts[position] {
            *self.busy.entry(host.clone()).or_default() += 1;
        }
        let job = StepJob {
            run: shared,
            step: definition,
            prepared: step,
            inputs,
            steps,
            started_at,
        };
        let span =
            tracing::info_span!("step", step_id = %definition.id, tool_id = %definition.tool_id);
        let store = shared.engine.run_store.as_deref();
        let running = store.map(|_| self.record.step_results[self.slot[position]].clone());
        let repeatable = crate::durable::safe_to_repeat(step, definition.kind);
        Some(Box::pin(
            async move {
                let done = match (store, running) {
                    (Some(store), Some(running)) => {
                        step::execute_durably(job, store, running, repeatable).await
                    }
                    _ => step::execute(job).await,
                };
                (position, done)
            }
            .instrument(span),
        ))
    }

    fn finish(&mut self, position: usize, done: StepDone) {
        if let Some(host) = &self.hosts[position]
            && let Some(count) = self.busy.get_mut(host)
        {
            *count = count.saturating_sub(1);
        }
        self.outputs[position] = done.output;
        let index = self.slot[position];
        self.record.step_results[index] = done.result;
        self.after(position);
    }

    /// Records a step that ends without running (skipped, or failed before its call).
    fn settle(&mut self, position: usize, status: StepStatus, reason: String) {
        let result = &mut self.record.step_results[self.slot[position]];
        result.status = status;
        result.error = Some(self.shared.redactor.text(&reason).into_owned());
        result.finished_at = Some(Utc::now());
        self.after(position);
    }

    /// Emits the step's result and releases or skips its dependents.
    fn after(&mut self, position: usize) {
        let shared = self.shared;
        let result = &self.record.step_results[self.slot[position]];
        shared.engine.emit(&RunEvent::StepFinished {
            run_id: &shared.run_id,
            result,
        });
        tracing::info!(step = %result.step_id, status = ?result.status, "step finished");
        let mut blocked = Vec::new();
        for &next in &self.prepared.successors[position] {
            self.waiting[next] -= 1;
            if self.waiting[next] == 0 {
                blocked.push(next);
            }
        }
        for next in blocked {
            match self.failed_dependency(next) {
                Some(reason) => self.settle(next, StepStatus::Skipped, reason),
                None => self.push_ready(next),
            }
        }
    }

    /// Why a step whose dependencies all finished cannot run, if one did not succeed.
    fn failed_dependency(&self, position: usize) -> Option<String> {
        self.prepared.predecessors[position]
            .iter()
            .find_map(|&from| {
                let result = &self.record.step_results[self.slot[from]];
                let verb = match result.status {
                    StepStatus::Success => return None,
                    StepStatus::Skipped => "was skipped",
                    _ => "failed",
                };
                Some(format!("dependency `{}` {verb}", result.step_id))
            })
    }

    /// Ends a stopped run: running steps fail, steps not started are skipped.
    fn stop(&mut self, reason: &str) {
        let now = Utc::now();
        let shared = self.shared;
        for result in &mut self.record.step_results {
            let (status, error) = match result.status {
                StepStatus::Running => (
                    StepStatus::Failed,
                    format!("stopped while running: {reason}"),
                ),
                StepStatus::Pending => (StepStatus::Skipped, format!("not started: {reason}")),
                _ => continue,
            };
            result.status = status;
            result.error = Some(error);
            result.finished_at = Some(now);
            shared.engine.emit(&RunEvent::StepFinished {
                run_id: &shared.run_id,
                result,
            });
        }
    }
}

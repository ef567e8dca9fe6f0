//! What commands build from their flags: the async runtime, the HTTP transport, tools and
//! their configs, an engine (with its code runner and, for decision steps, its decider),
//! stores, notifications, run inputs, and a run that Ctrl-C cancels. Every failure is printed
//! here and comes back as the [`Outcome`] it deserves.

pub(crate) mod arazzo;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::code::{CodeError, CodeOutput, CodeRequest, CodeRunner};
use wayline_core::document::Format;
use wayline_core::tool::ToolKind;
use wayline_core::{Run, ScriptedDecider, StepKind, ToolCatalog, Transport, Workflow};
use wayline_executor::{
    CancelToken, Engine, EngineBuilder, ReqwestTransport, ReqwestTransportBuilder, RunOptions,
};
use wayline_knowledge::{KnowledgeStore, PostgresKnowledge, SqliteKnowledge, YamlKnowledge};
use wayline_mcp::McpServers;
use wayline_planner::decide::ModelDecider;
use wayline_planner::llm::{LanguageModel, OpenAiConfig, OpenAiModel};
use wayline_registry::{ToolConfigs, ToolRegistry};
use wayline_sandbox::{
    BayClient, BayConfig, CodeRouter, LocalConfig, LocalProvider, SandboxCodeRunner,
    SandboxProvider,
};
use wayline_store::queue::RunQueue;
use wayline_store::{ConsoleNotifier, Location, Notifications, Stores, WebhookNotifier};

use crate::args::{
    KnowledgeArg, ModelArgs, NetworkArgs, NotifyArgs, StoreArg, ToolsArgs, parse_inputs,
};
use crate::report::{Outcome, engine_error, fail, outcome_of, print_errors, unreadable};

/// A runtime on this thread, for one command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Outcome> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| unreadable(format!("cannot start the async runtime: {error}")))
}

/// The HTTP transport.
pub(crate) fn transport() -> Result<ReqwestTransport, Outcome> {
    ReqwestTransport::new()
        .map_err(|error| unreadable(format!("cannot start the HTTP client: {error}")))
}

/// The HTTP transport for tool calls, with the trust, client certificate and proxy `network`
/// asks for; `--insecure` is said aloud on standard error.
pub(crate) fn tool_transport(network: &NetworkArgs) -> Result<ReqwestTransport, Outcome> {
    tool_transport_builder(network)?
        .build()
        .map_err(|error| unreadable(format!("cannot start the HTTP client: {error}")))
}

/// The settings [`tool_transport`] builds from, for a command that adds its own.
pub(crate) fn tool_transport_builder(
    network: &NetworkArgs,
) -> Result<ReqwestTransportBuilder, Outcome> {
    let read = |flag: &str, path: &Path| {
        wayline_durable::read::bytes(path, wayline_core::document::Limits::configured().max_bytes)
            .map_err(|error| {
                unreadable(format!(
                    "{flag} {}: cannot read it: {error}",
                    path.display()
                ))
            })
    };
    let mut builder = ReqwestTransport::builder();
    if let Some(path) = &network.cacert {
        builder = builder.root_certificates_pem(read("--cacert", path)?);
    }
    if network.insecure {
        eprintln!(
            "warning: --insecure: server certificates are not checked; anyone on the network path can read and change these calls"
        );
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let Some(path) = &network.cert {
        let mut pem = read("--cert", path)?;
        if let Some(key) = &network.key {
            pem.push(b'\n');
            pem.extend(read("--key", key)?);
        }
        builder = builder.client_identity_pem(pem);
    }
    if let Some(proxy) = &network.proxy {
        builder = builder.proxy(proxy.clone());
    }
    Ok(builder)
}

/// The variables `${VAR}` reads in tool and tool-configs files: the environment's, then the
/// env files' (`--env-file`, a later file winning).
#[derive(Debug, Default)]
pub(crate) struct Environment {
    files: IndexMap<String, String>,
}

impl Environment {
    /// The environment and these env files; a file that cannot be read, or is not an env file,
    /// stops the command (exit 2), naming it but none of its values.
    pub(crate) fn load(files: &[PathBuf]) -> Result<Environment, Outcome> {
        let mut values = IndexMap::new();
        for path in files {
            let lines = dotenvy::from_path_iter(path).map_err(|error| {
                unreadable(format!(
                    "--env-file {}: cannot read it: {}",
                    path.display(),
                    env_error(&error)
                ))
            })?;
            for (line, item) in lines.enumerate() {
                let (name, value) = item.map_err(|error| {
                    unreadable(format!(
                        "--env-file {}: entry {} is not NAME=value ({}); quote a value with spaces or `#`",
                        path.display(),
                        line + 1,
                        env_error(&error)
                    ))
                })?;
                values.insert(name, value);
            }
        }
        Ok(Environment { files: values })
    }

    /// The value of `${name}`.
    pub(crate) fn lookup(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .or_else(|| self.files.get(name).cloned())
    }

    /// The env files' values, to mask wherever secrets are.
    pub(crate) fn file_values(&self) -> Vec<String> {
        self.files.values().cloned().collect()
    }
}

/// Why an env file could not be read, without the text of the line (it may hold a secret).
fn env_error(error: &dotenvy::Error) -> String {
    match error {
        dotenvy::Error::LineParse(_, at) => format!("a syntax error at character {}", at + 1),
        dotenvy::Error::Io(error) => error.to_string(),
        dotenvy::Error::EnvVar(error) => error.to_string(),
        _ => "not an env file".to_owned(),
    }
}

/// Loads tools for a command that checks or lists them; problems are printed, and the outcome
/// is their kind's (a file with a problem is 1, one that cannot be read 2).
pub(crate) fn load_tools(paths: &[PathBuf]) -> Result<ToolRegistry, Outcome> {
    load(paths).map_err(|errors| outcome_of(&errors))
}

/// Loads the tools a command is about to call (`run`, `tools try`, `runs resume`, a validation
/// run, schedules, planning), `${VAR}` read from `env`; problems are printed. Tools that do
/// not load stop it from starting: always [`Outcome::Unreadable`], as `docs/cli.md` says.
pub(crate) fn load_tools_to_call(
    paths: &[PathBuf],
    env: &Environment,
) -> Result<ToolRegistry, Outcome> {
    load_with(paths, env).map_err(|_| Outcome::Unreadable)
}

fn load(paths: &[PathBuf]) -> Result<ToolRegistry, Vec<wayline_registry::Error>> {
    load_with(paths, &Environment::default())
}

fn load_with(
    paths: &[PathBuf],
    env: &Environment,
) -> Result<ToolRegistry, Vec<wayline_registry::Error>> {
    let report = ToolRegistry::load_with(paths, &|name: &str| env.lookup(name));
    if report.errors.is_empty() {
        Ok(report.registry)
    } else {
        print_errors(&report.errors);
        eprintln!("error: the tools above did not load; fix them (see `wayline tools check`)");
        Err(report.errors)
    }
}

/// The data directory a server command was given, or `~/.wayline/SUB`.
pub(crate) fn data_dir(given: Option<PathBuf>, sub: &str) -> Result<PathBuf, Outcome> {
    match given {
        Some(dir) => Ok(dir),
        None => wayline_store::default_location()
            .and_then(|db| db.parent().map(|home| home.join(sub)))
            .ok_or_else(|| {
                unreadable("no --data-dir given and no home directory known; pass --data-dir DIR")
            }),
    }
}

/// The tool-configs file at `path` (none: no configs) for tools about to be called, `${VAR}`
/// read from `env`; entries for tools `registry` does not have are warned about. A file that
/// does not load stops the call from starting ([`Outcome::Unreadable`]).
pub(crate) fn load_configs(
    path: Option<&Path>,
    registry: &ToolRegistry,
    env: &Environment,
) -> Result<ToolConfigs, Outcome> {
    let Some(path) = path else {
        return Ok(ToolConfigs::new());
    };
    let configs =
        ToolConfigs::load_with(path, &|name: &str| env.lookup(name)).map_err(|error| {
            print_errors(&[error]);
            Outcome::Unreadable
        })?;
    let known = registry.tool_ids();
    for problem in configs.unknown_tools(&known, &path.display().to_string()) {
        eprintln!("warning: {problem}");
    }
    Ok(configs)
}

/// An engine over these tools with the HTTP transport, the tool configs of `config`, and a
/// code runner when any tool is a code tool.
pub(crate) fn engine_builder(
    registry: Arc<ToolRegistry>,
    tools: &ToolsArgs,
    env: &Environment,
) -> Result<EngineBuilder, Outcome> {
    let parts = EngineParts::assemble(registry, tools, env)?;
    Ok(parts.builder(Arc::clone(&parts.transport)))
}

/// What every engine of a command shares, for commands that build several (`wayline test`
/// builds one per workflow, each with its own recorder of exchanges).
#[derive(Debug, Clone)]
pub(crate) struct EngineParts {
    registry: Arc<ToolRegistry>,
    /// The tool configs.
    pub(crate) configs: Arc<ToolConfigs>,
    /// The HTTP transport.
    pub(crate) transport: Arc<dyn Transport>,
    code: Option<Arc<dyn CodeRunner>>,
    mcp: Option<Arc<McpServers>>,
    /// Values masked besides the configs' secrets (the env files').
    pub(crate) masked: Vec<String>,
}

impl EngineParts {
    /// The parts for these tools and the tool configs of `config`.
    pub(crate) fn assemble(
        registry: Arc<ToolRegistry>,
        tools: &ToolsArgs,
        env: &Environment,
    ) -> Result<EngineParts, Outcome> {
        let configs = load_configs(tools.config.as_deref(), &registry, env)?;
        let code = code_runner(&registry, &configs)?;
        let mcp = mcp_client(&registry, &configs, tools.config.as_deref())?;
        let mut masked = env.file_values();
        masked.extend(
            configs
                .mcp_servers()
                .values()
                .flat_map(|server| server.secrets())
                .map(|secret| secret.expose().to_owned()),
        );
        Ok(EngineParts {
            registry,
            configs: Arc::new(configs),
            transport: Arc::new(tool_transport(&tools.network)?),
            code,
            mcp,
            masked,
        })
    }

    /// A builder over these parts, sending through `transport`.
    pub(crate) fn builder(&self, transport: Arc<dyn Transport>) -> EngineBuilder {
        let registry: Arc<dyn ToolCatalog> = self.registry.clone();
        let mut builder = Engine::builder(registry)
            .secrets(self.configs.clone())
            .transport(transport)
            .mask(self.masked.iter().cloned());
        if let Some(runner) = &self.code {
            builder = builder.code_runner(Arc::clone(runner));
        }
        if let Some(mcp) = &self.mcp {
            builder = builder.mcp_client(mcp.clone());
        }
        builder
    }
}

/// The MCP client for the `mcp` tools of `registry`, if there are any: over the servers the
/// tool-configs file defines, each started or reached on its first call. Every server a tool
/// names must be defined there.
fn mcp_client(
    registry: &ToolRegistry,
    configs: &ToolConfigs,
    path: Option<&Path>,
) -> Result<Option<Arc<McpServers>>, Outcome> {
    let mut missing = Vec::new();
    let mut any = false;
    for tool in registry.tools().filter(|tool| tool.kind == ToolKind::Mcp) {
        any = true;
        if let Some(mcp) = &tool.mcp
            && !configs.mcp_servers().contains_key(&mcp.server)
        {
            missing.push(format!("`{}` (tool `{}`)", mcp.server, tool.id));
        }
    }
    if !missing.is_empty() {
        let file = path.map_or_else(
            || "a tool-configs file (--config FILE)".to_owned(),
            |path| path.display().to_string(),
        );
        return Err(unreadable(format!(
            "MCP server {} is not defined; define it under `mcp_servers` in {file} (a `command` \
             for stdio, or a `url`)",
            missing.join(", ")
        )));
    }
    Ok(any.then(|| Arc::new(McpServers::new(configs.mcp_servers().clone()))))
}

/// A runner over a local provider whose data directory is removed with it.
#[derive(Debug)]
struct ScratchRunner {
    runner: SandboxCodeRunner,
    _dir: tempfile::TempDir,
}

#[async_trait::async_trait]
impl CodeRunner for ScratchRunner {
    async fn run(&self, request: CodeRequest) -> Result<CodeOutput, CodeError> {
        self.runner.run(request).await
    }
}

/// The code runner for the code tools of `registry`, if there are any: each runs in the
/// embedded local sandbox (a data directory of this command's own), unless its tool-configs
/// entry has a `base_url` — then in the Bay there, with `auth_token` as its API key.
fn code_runner(
    registry: &ToolRegistry,
    configs: &ToolConfigs,
) -> Result<Option<Arc<dyn CodeRunner>>, Outcome> {
    let code_tools: Vec<&str> = registry
        .tools()
        .filter(|tool| tool.kind == ToolKind::Code)
        .map(|tool| tool.id.as_str())
        .collect();
    if code_tools.is_empty() {
        return Ok(None);
    }
    let dir = tempfile::Builder::new()
        .prefix("wayline-sandbox-")
        .tempdir()
        .map_err(|error| unreadable(format!("cannot make the sandbox's directory: {error}")))?;
    let local = LocalProvider::open(LocalConfig::new(dir.path()))
        .map_err(|error| unreadable(format!("cannot start the local sandbox: {error}")))?;
    let local: Arc<dyn SandboxProvider> = Arc::new(local);
    let mut router = CodeRouter::new(Arc::new(ScratchRunner {
        runner: SandboxCodeRunner::new(local),
        _dir: dir,
    }));
    // One HTTP client for every Bay, made when the first one is needed.
    let mut http: Option<Arc<dyn Transport>> = None;
    for id in code_tools {
        let Some(config) = configs.get(id) else {
            continue;
        };
        let Some(endpoint) = config.base_url.as_deref().filter(|url| !url.is_empty()) else {
            continue;
        };
        let mut bay = BayConfig::new(endpoint);
        if let Some(token) = &config.auth_token {
            bay = bay.token(token.expose());
        }
        let http = match &http {
            Some(http) => Arc::clone(http),
            None => Arc::clone(http.insert(Arc::new(transport()?))),
        };
        let client: Arc<dyn SandboxProvider> = Arc::new(BayClient::new(bay, http));
        router = router.route(id, Arc::new(SandboxCodeRunner::new(client)));
    }
    Ok(Some(Arc::new(router)))
}

/// The server and model the flags and the environment name, or why there is none.
pub(crate) fn model_config(model: &ModelArgs) -> Result<OpenAiConfig, wayline_planner::Error> {
    OpenAiConfig::resolve(model.model_url.as_deref(), model.model.as_deref(), |name| {
        std::env::var(name).ok()
    })
}

/// The model the flags and the environment name; when there is none, why (printed).
pub(crate) fn language_model(model: &ModelArgs) -> Result<Arc<dyn LanguageModel>, Outcome> {
    let config = model_config(model).map_err(fail)?;
    Ok(Arc::new(OpenAiModel::new(config, Arc::new(transport()?))))
}

/// `builder` with a decider when any of `workflows` has a decision step: one asking the model
/// of `model`, or for a dry run one that is never asked. No model configured is an error (exit
/// 2) that says why one is needed.
pub(crate) fn with_decider<'w>(
    builder: EngineBuilder,
    workflows: impl IntoIterator<Item = &'w Workflow>,
    model: &ModelArgs,
    dry_run: bool,
) -> Result<EngineBuilder, Outcome> {
    let deciding = workflows.into_iter().find(|workflow| {
        workflow
            .steps
            .iter()
            .any(|step| step.kind == StepKind::Decision)
    });
    let Some(workflow) = deciding else {
        return Ok(builder);
    };
    if dry_run {
        return Ok(builder.decider(Arc::new(ScriptedDecider::default())));
    }
    let model = language_model(model).inspect_err(|_| {
        eprintln!(
            "(workflow `{}` has decision steps, which a language model answers)",
            workflow.id
        );
    })?;
    Ok(builder.decider(Arc::new(ModelDecider::new(model))))
}

/// As [`with_decider`], for commands whose workflows may change while they run (`schedule
/// run` fires the version active at each fire): with a model configured, the decider is
/// attached whatever the workflows are now.
pub(crate) fn with_decider_for_later<'w>(
    builder: EngineBuilder,
    workflows: impl IntoIterator<Item = &'w Workflow>,
    model: &ModelArgs,
) -> Result<EngineBuilder, Outcome> {
    if model_config(model).is_ok() {
        return Ok(builder.decider(Arc::new(ModelDecider::new(language_model(model)?))));
    }
    with_decider(builder, workflows, model, false)
}

/// Runs the future `start` makes with a token that Ctrl-C cancels.
///
/// Ctrl-C is watched on a thread of its own: on this one-thread runtime a watcher task could
/// not run while the run holds the thread (an expression's loops, which look at the token as
/// they go), nor before the future first waits. The handler is installed before the future
/// starts, so a Ctrl-C at any moment ends the run with a complete record; a second one ends
/// the process (exit 130).
pub(crate) fn cancellable<F: Future>(
    runtime: &tokio::runtime::Runtime,
    start: impl FnOnce(CancelToken) -> F,
) -> F::Output {
    let cancel = CancelToken::new();
    let watch = InterruptWatch::start(cancel.clone());
    let output = runtime.block_on(start(cancel));
    drop(watch);
    output
}

/// A thread that cancels a token at the next Ctrl-C, until dropped.
struct InterruptWatch {
    done: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InterruptWatch {
    /// Starts the thread and waits until its handler is installed. Without a thread or a
    /// handler, Ctrl-C ends the process as it would anyway.
    fn start(cancel: CancelToken) -> InterruptWatch {
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        let (installed, ready) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("wayline-ctrl-c".to_owned())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async move {
                    let mut finished = finished;
                    let listener = interrupts();
                    let _ = installed.send(());
                    let Ok(mut listener) = listener else {
                        return;
                    };
                    tokio::select! {
                        Some(()) = listener.recv() => cancel.cancel(),
                        _ = &mut finished => return,
                    }
                    // A second Ctrl-C ends the process at once, for a run that will not stop.
                    tokio::select! {
                        Some(()) = listener.recv() => std::process::exit(130),
                        _ = finished => {}
                    }
                });
            })
            .ok();
        if thread.is_some() {
            // An error means the thread ended without a handler: nothing to wait for.
            let _ = ready.recv();
        }
        InterruptWatch {
            done: Some(done),
            thread,
        }
    }
}

impl Drop for InterruptWatch {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Completes at the first Ctrl-C or SIGTERM, saying `stopping` on standard error; a second
/// one ends the process at once.
pub(crate) async fn shutdown(stopping: &str) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        eprintln!("{stopping}");
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            std::process::exit(130);
        });
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("{stopping}");
        tokio::spawn(async {
            let _ = tokio::signal::ctrl_c().await;
            std::process::exit(130);
        });
    }
}

/// Ctrl-C (SIGINT), its handler installed now.
#[cfg(unix)]
fn interrupts() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
}

/// Ctrl-C, its handler installed now.
#[cfg(windows)]
fn interrupts() -> std::io::Result<tokio::signal::windows::CtrlC> {
    tokio::signal::windows::ctrl_c()
}

/// Runs `workflow` as a task of `runtime` ([`Engine::start`]); Ctrl-C cancels the run (which
/// still ends with a complete record).
pub(crate) fn execute(
    runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    workflow: &Workflow,
    options: RunOptions,
) -> Result<Run, Outcome> {
    cancellable(runtime, |cancel| async move {
        engine
            .start(workflow, options.cancel(cancel))?
            .finish()
            .await
    })
    .map_err(engine_error)
}

/// The store `store` names, or the configured one (`WAYLINE_STORE`, else the default).
pub(crate) fn store_location(store: &StoreArg) -> Result<Location, Outcome> {
    match &store.store {
        Some(location) => Ok(location.clone()),
        None => Location::configured().ok_or_else(|| {
            unreadable(
                "no store given and no home directory known; pass --store STORE, or set WAYLINE_STORE or WAYLINE_HOME",
            )
        }),
    }
}

/// Opens the store `store` names, or the configured one, making it if it is not there.
pub(crate) fn open_store(store: &StoreArg) -> Result<Stores, Outcome> {
    wayline_store::open(&store_location(store)?).map_err(fail)
}

/// Opens the store `store` names, or the configured one, for a command that only reads:
/// The stores `store` names and their run queue; a store without one is refused with what to
/// use instead.
pub(crate) fn open_queue(store: &StoreArg) -> Result<(Stores, Arc<dyn RunQueue>), Outcome> {
    let stores = open_store(store)?;
    match stores.queue.clone() {
        Some(queue) => Ok((stores, queue)),
        None => Err(unreadable(format!(
            "{} has no run queue: workers share a PostgreSQL store; pass --store postgres://USER:PASSWORD@HOST/DATABASE (or set WAYLINE_STORE)",
            store_location(store)?
        ))),
    }
}

/// `None` (and nothing made) when there is no store there yet.
pub(crate) fn open_existing_store(store: &StoreArg) -> Result<Option<(Stores, Location)>, Outcome> {
    let location = store_location(store)?;
    if !location.exists() {
        return Ok(None);
    }
    Ok(Some((
        wayline_store::open(&location).map_err(fail)?,
        location,
    )))
}

/// Opens the knowledge store `knowledge` names, else beside the run store, else beside the
/// store `WAYLINE_STORE` names (where workers learn), else in the default directory.
pub(crate) fn open_knowledge(
    knowledge: &KnowledgeArg,
    run_store: Option<&Location>,
) -> Result<Arc<dyn KnowledgeStore>, Outcome> {
    let configured = Location::from_variable();
    let location = match (&knowledge.knowledge, run_store.or(configured.as_ref())) {
        (Some(location), _) => location.clone(),
        (None, Some(store)) => store.clone(),
        (None, _) => Location::Path(
            wayline_store::default_location()
                .and_then(|db| db.parent().map(Path::to_path_buf))
                .ok_or_else(|| {
                    unreadable("no knowledge store given and no home directory known; pass --knowledge STORE or set WAYLINE_HOME")
                })?,
        ),
    };
    let path = match location {
        Location::Postgres(url) => {
            return Ok(Arc::new(PostgresKnowledge::open(&url).map_err(fail)?));
        }
        Location::Path(path) => path,
        other => {
            return Err(unreadable(format!(
                "{other} is not a knowledge store this build knows"
            )));
        }
    };
    if path.extension().is_some_and(|extension| extension == "db") {
        Ok(Arc::new(SqliteKnowledge::open(&path).map_err(fail)?))
    } else {
        Ok(Arc::new(YamlKnowledge::new(path)))
    }
}

/// The notifications the flags ask for; `--notify-stdout` notices go to stderr when stdout
/// carries JSON.
pub(crate) fn notifications(
    notify: &NotifyArgs,
    json_on_stdout: bool,
) -> Result<Notifications, Outcome> {
    let mut notifications = Notifications::new().on_success(notify.notify_on_success);
    if !notify.webhooks.is_empty() {
        let transport: Arc<dyn Transport> = Arc::new(transport()?);
        for url in &notify.webhooks {
            if url::Url::parse(url).is_err() {
                return Err(unreadable(format!(
                    "--notify-webhook {}: not a URL (write e.g. https://hooks.example/wayline)",
                    wayline_store::origin(url)
                )));
            }
            notifications =
                notifications.to(Arc::new(WebhookNotifier::new(url, Arc::clone(&transport))));
        }
    }
    if notify.notify_stdout {
        notifications = notifications.to(Arc::new(if json_on_stdout {
            ConsoleNotifier::stderr()
        } else {
            ConsoleNotifier::stdout()
        }));
    }
    Ok(notifications)
}

/// Sends the notices `run` deserves; a notice that cannot be delivered is a warning.
pub(crate) async fn announce(notifications: &Notifications, run: &Run) {
    for failure in notifications.run_finished(run).await {
        eprintln!("warning: notification not delivered: {failure}");
    }
}

/// Refuses inputs `prepared` neither declares nor reads (a typo'd `--input` would otherwise be
/// sent nowhere, silently), naming the nearest known one.
pub(crate) fn refuse_unknown_inputs(
    prepared: &wayline_executor::PreparedWorkflow,
    inputs: &IndexMap<String, Value>,
) -> Result<(), Outcome> {
    let known = prepared.input_names();
    let unknown: Vec<String> = inputs
        .keys()
        .filter(|name| !known.contains(&name.as_str()))
        .map(|name| {
            let hint = wayline_core::document::nearest(name, known.iter().copied())
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
            format!("`{name}`{hint}")
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let reads = if known.is_empty() {
        "it reads no input".to_owned()
    } else {
        format!("it reads {}", known.join(", "))
    };
    Err(unreadable(format!(
        "workflow `{}` has no input {}; {reads}",
        prepared.workflow().id,
        unknown.join(", ")
    )))
}

/// The run inputs: the `--inputs` file if given, then each `--input` (which win).
pub(crate) fn run_inputs(
    file: Option<&Path>,
    flags: &[String],
) -> Result<IndexMap<String, Value>, Outcome> {
    let mut inputs = match file {
        Some(path) => read_inputs_file(path)?,
        None => IndexMap::new(),
    };
    parse_inputs(flags, &mut inputs).map_err(unreadable)?;
    Ok(inputs)
}

fn read_inputs_file(path: &Path) -> Result<IndexMap<String, Value>, Outcome> {
    let text =
        wayline_durable::read::text(path, wayline_core::document::Limits::configured().max_bytes)
            .map_err(|error| unreadable(format!("cannot read {}: {error}", path.display())))?;
    let format = Format::from_path(path).unwrap_or(Format::Yaml);
    wayline_core::document::parse(&text, format, &path.display().to_string()).map_err(fail)
}

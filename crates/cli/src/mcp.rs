//! `wayline mcp ...`: the guard as a gateway in front of MCP servers, and wayline's tools,
//! workflows and Arazzo documents served to agents.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use wayline_core::secret::CommandLine;
use wayline_core::{McpServer, Workflow, WorkflowStatus};
use wayline_executor::{Engine, EngineBuilder, RunOptions};
use wayline_guard::audit::AuditLog;
use wayline_guard::{Guard, GuardPolicy, Policy};
use wayline_knowledge::Recorder;
use wayline_mcp::{
    Access, Document, DocumentRun, DocumentTool, Gateway, GatewayConfig, HttpOptions, OAuthOptions,
    SessionChoice, WaylineServer,
};
use wayline_registry::ToolConfigs;
use wayline_store::Location;

use crate::args::ModeArg;
use crate::args::{LearnArgs, StoreArg, ToolsArgs};
use crate::assemble::arazzo::ArazzoFlags;
use crate::assemble::{
    Environment, engine_builder, load_tools_to_call, open_knowledge, open_store, runtime,
};
use crate::report::{Outcome, fail, unreadable};

/// `wayline mcp ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Serve MCP in front of other MCP servers, deciding every tool call with the guard:
    /// blocked calls answer the guard's guidance, allowed ones are forwarded and their results
    /// kept as evidence; adds workflow_state, workflow_advance and break_glass_request.
    Gateway(Box<GatewayArgs>),
    /// Serve wayline's tools (a tool directory) and the store's active workflows as MCP tools
    /// on stdio or streamable HTTP: a call runs on the engine and answers each step's output,
    /// with a progress notification per finished step.
    Serve(Box<ServeArgs>),
}

/// `wayline mcp serve` arguments. `--tools` may be left out when `--arazzo` gives what to
/// serve.
#[derive(Debug, clap::Args)]
#[command(mut_arg("tools", |arg| {
    arg.required(false).required_unless_present("arazzo")
}))]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    tools: ToolsArgs,
    /// Serve the active version of every workflow saved in this store, and keep the runs
    /// there.
    #[arg(long = "store", value_name = "STORE")]
    store: Option<Location>,
    /// Serve only the workflows, not each tool on its own.
    #[arg(long)]
    workflows_only: bool,
    /// Decide every step with the guard under this policy (one diagnostic session for the
    /// server's life; blocked steps fail).
    #[arg(long, value_name = "FILE")]
    guard_policy: Option<PathBuf>,
    #[command(flatten)]
    learn: LearnArgs,
    /// Serve the workflows of this Arazzo document too, each a tool with the document's inputs
    /// schema (the document is validated first; its operations are called over HTTP).
    #[arg(long, value_name = "FILE")]
    arazzo: Option<PathBuf>,
    /// The Arazzo document's source description read from a local file, `NAME=FILE`.
    #[arg(long = "source", value_name = "NAME=FILE", requires = "arazzo")]
    sources: Vec<String>,
    /// Let the Arazzo document's sources and `$ref`s be read from this directory too.
    #[arg(long = "allow-read", value_name = "DIR", requires = "arazzo")]
    allow_read: Vec<PathBuf>,
    /// Where the Arazzo document's source is served, `NAME=URL`.
    #[arg(long = "server", value_name = "NAME=URL", requires = "arazzo")]
    servers: Vec<String>,
    #[command(flatten)]
    http: HttpArgs,
}

/// `wayline mcp gateway` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct GatewayArgs {
    /// An upstream server: `NAME=COMMAND LINE` (started on stdio) or `NAME=URL` (streamable
    /// HTTP). Repeatable.
    #[arg(long = "upstream", value_name = "NAME=COMMAND|URL")]
    upstreams: Vec<String>,
    /// A tool-configs file whose `mcp_servers` are upstreams too (credentials go there).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Expose tools and prompts as `SERVER__NAME`.
    #[arg(long)]
    prefix: bool,
    /// The guard policy (default: ADR-005's).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// How decisions are enforced.
    #[arg(long, value_enum, default_value_t = ModeArg::Blocking)]
    mode: ModeArg,
    /// Where sessions (`sessions/NAME.json`) and the audit log (`audit.jsonl`) are kept
    /// (default: ~/.wayline/mcp).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// One named session shared by every client (found again after a restart); default: a
    /// session per client connection.
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// The audit log (default: DATA_DIR/audit.jsonl).
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    #[command(flatten)]
    http: HttpArgs,
}

/// How an MCP server of wayline's listens on HTTP, when it does.
#[derive(Debug, clap::Args)]
pub(crate) struct HttpArgs {
    /// Serve streamable HTTP at http://ADDRESS/mcp (a loopback address) instead of stdio;
    /// clients send `Authorization: Bearer` with the token in WAYLINE_MCP_TOKEN.
    #[arg(long, value_name = "ADDRESS")]
    http: Option<SocketAddr>,
    /// With --http: answer requests sent to this host name too (besides localhost and IP
    /// addresses; a proxy's name). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// With --http: let web pages at this origin call the server (`https://app.example`);
    /// requests from any other page are refused. Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// With --http: take OAuth access tokens this authorization server issued instead of
    /// WAYLINE_MCP_TOKEN: JWTs checked against the keys its metadata publishes, other tokens
    /// by introspection (RFC 7662) as --oauth-client-id. The server's metadata (RFC 9728)
    /// names it.
    #[arg(long = "oauth-issuer", value_name = "URL", requires = "http")]
    oauth_issuer: Option<String>,
    /// With --oauth-issuer: the client wayline introspects tokens as (its secret in
    /// WAYLINE_OAUTH_CLIENT_SECRET).
    #[arg(long = "oauth-client-id", value_name = "ID", requires = "oauth_issuer")]
    oauth_client_id: Option<String>,
    /// With --oauth-issuer: the URL clients reach this server at, which tokens must be issued
    /// for (their audience); default http://ADDRESS/mcp. Behind a proxy: the proxy's URL.
    #[arg(long = "oauth-resource", value_name = "URL", requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    /// With --oauth-client-id: the introspection endpoint, when the issuer's metadata does not
    /// name one.
    #[arg(
        long = "oauth-introspection",
        value_name = "URL",
        requires = "oauth_client_id"
    )]
    oauth_introspection: Option<String>,
    /// With --oauth-issuer: a scope every token must carry. Repeatable.
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scopes: Vec<String>,
}

impl HttpArgs {
    /// The address and access to serve HTTP with, when `--http` is given: a loopback address,
    /// and a token in the environment or an authorization server's.
    fn checked(&self) -> Result<Option<(SocketAddr, Access)>, Outcome> {
        let Some(address) = self.http else {
            return Ok(None);
        };
        if !address.ip().is_loopback() {
            return Err(unreadable(format!(
                "--http {address}: wayline's MCP servers serve loopback addresses only (127.0.0.1, ::1); put a proxy in front to serve further"
            )));
        }
        let from_env = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|value| !value.trim().is_empty())
        };
        let Some(issuer) = &self.oauth_issuer else {
            let token = from_env("WAYLINE_MCP_TOKEN").ok_or_else(|| {
                unreadable("--http needs a token: set WAYLINE_MCP_TOKEN to the bearer token clients will send (or take OAuth tokens: --oauth-issuer)")
            })?;
            return Ok(Some((address, Access::Token(token))));
        };
        // The resource is filled in once the address is bound, when not given.
        let resource = self.oauth_resource.clone().unwrap_or_default();
        let mut oauth = OAuthOptions::new(resource, issuer);
        if let Some(id) = &self.oauth_client_id {
            let secret = from_env("WAYLINE_OAUTH_CLIENT_SECRET").ok_or_else(|| {
                unreadable(format!(
                    "--oauth-client-id {id} needs the client's secret: set WAYLINE_OAUTH_CLIENT_SECRET"
                ))
            })?;
            oauth = oauth.introspect_as(id, secret);
        }
        if let Some(url) = &self.oauth_introspection {
            oauth = oauth.introspection_endpoint(url);
        }
        for scope in &self.oauth_scopes {
            oauth = oauth.require_scope(scope);
        }
        Ok(Some((address, Access::OAuth(oauth))))
    }

    /// Binds `address` and the options to serve on it; says on standard error where it
    /// serves and `what`.
    async fn listen(
        &self,
        address: SocketAddr,
        mut access: Access,
        what: &str,
    ) -> Result<HttpOptions, Outcome> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| unreadable(format!("cannot listen on {address}: {error}")))?;
        let bound = listener
            .local_addr()
            .map_err(|error| unreadable(error.to_string()))?;
        let url = format!("http://{bound}/mcp");
        match &mut access {
            Access::OAuth(oauth) => {
                if oauth.resource.is_empty() {
                    oauth.resource.clone_from(&url);
                }
                eprintln!(
                    "serving MCP at {url} ({what}; OAuth tokens from {} for {})",
                    oauth.issuer, oauth.resource
                );
            }
            _ => eprintln!("serving MCP at {url} ({what})"),
        }
        let mut options = HttpOptions::with_access(listener, access);
        options.allowed_hosts.clone_from(&self.allow_hosts);
        options.allowed_origins.clone_from(&self.allow_origins);
        Ok(options)
    }
}

pub(crate) fn mcp_command(command: McpCommand) -> Outcome {
    match command {
        McpCommand::Gateway(args) => match gateway(*args) {
            Ok(outcome) | Err(outcome) => outcome,
        },
        McpCommand::Serve(args) => match serve(*args) {
            Ok(outcome) | Err(outcome) => outcome,
        },
    }
}

/// `NAME=COMMAND` or `NAME=URL`.
fn upstream(text: &str) -> Result<(String, McpServer), Outcome> {
    let Some((name, target)) = text.split_once('=') else {
        return Err(unreadable(format!(
            "--upstream {text}: write NAME=COMMAND LINE or NAME=URL"
        )));
    };
    let server = if target.starts_with("http://") || target.starts_with("https://") {
        McpServer::url(target)
    } else {
        McpServer::command(CommandLine::Line(target.to_owned()))
    };
    if let Some(problem) = server.problem() {
        return Err(unreadable(format!("--upstream {name}: {problem}")));
    }
    Ok((name.trim().to_owned(), server))
}

fn gateway(args: GatewayArgs) -> Result<Outcome, Outcome> {
    let mut upstreams: BTreeMap<String, McpServer> = BTreeMap::new();
    if let Some(path) = &args.config {
        let configs = ToolConfigs::load(path).map_err(fail)?;
        upstreams.extend(configs.mcp_servers().clone());
    }
    for text in &args.upstreams {
        let (name, server) = upstream(text)?;
        upstreams.insert(name, server);
    }
    if upstreams.is_empty() {
        return Err(unreadable(
            "no upstream MCP server: give --upstream NAME=COMMAND (or NAME=URL), or --config FILE with mcp_servers",
        ));
    }
    let data_dir = crate::assemble::data_dir(args.data_dir, "mcp")?;
    std::fs::create_dir_all(&data_dir)
        .map_err(|error| unreadable(format!("cannot create {}: {error}", data_dir.display())))?;
    let policy = match &args.policy {
        Some(path) => Policy::load(path).map_err(fail)?,
        None => Policy::default_policy(),
    };
    let audit_path = args.audit.unwrap_or_else(|| data_dir.join("audit.jsonl"));
    let audit = AuditLog::file(&audit_path).map_err(fail)?;
    let guard = Guard::new(Arc::new(policy), args.mode.into()).audit(Arc::new(audit));
    let mut config = GatewayConfig::new(upstreams, guard, data_dir.join("sessions"));
    config.prefix = args.prefix;
    if let Some(name) = args.session {
        config.session = SessionChoice::Named(name);
    }
    let http = args.http.checked()?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let gateway = Gateway::connect(config).await.map_err(fail)?;
        match http {
            Some((address, access)) => {
                let what = format!(
                    "{} tools; sessions in {}; audit log {}",
                    gateway.tool_names().len(),
                    data_dir.join("sessions").display(),
                    audit_path.display()
                );
                let options = args.http.listen(address, access, &what).await?;
                let stop = crate::assemble::shutdown(
                    "stopping: sessions are written and clients' removed (again to stop at once)",
                );
                gateway.serve_http(options, stop).await.map_err(fail)?;
            }
            None => gateway.serve_stdio().await.map_err(fail)?,
        }
        Ok(Outcome::Ok)
    })
}

fn serve(args: ServeArgs) -> Result<Outcome, Outcome> {
    let http = args.http.checked()?;
    let env = Environment::load(&args.tools.env_files)?;
    let registry = Arc::new(load_tools_to_call(&args.tools.tools, &env)?);
    let mut builder = engine_builder(Arc::clone(&registry), &args.tools, &env)?;
    let runtime = runtime()?;
    let mut workflows = Vec::new();
    let mut run_store = None;
    if let Some(path) = &args.store {
        let stores = open_store(&StoreArg {
            store: Some(path.clone()),
        })?;
        builder = builder.run_store(stores.runs.clone());
        run_store = Some(stores.runs.clone());
        workflows = runtime.block_on(active_workflows(&stores)).map_err(fail)?;
    }
    // One guard session for the server's life, whichever engine runs a step.
    let guard_policy = match &args.guard_policy {
        Some(policy) => {
            let policy = Arc::new(Policy::load(policy).map_err(fail)?);
            let guard = Guard::new(policy, wayline_guard::Mode::Blocking);
            let session = guard.start("mcp-serve", chrono::Utc::now());
            Some(Arc::new(GuardPolicy::new(guard, session)))
        }
        None => None,
    };
    if let Some(policy) = &guard_policy {
        builder = builder.policy(Arc::clone(policy) as _);
    }
    let knowledge = match (&args.learn.sut, args.learn.learn) {
        (Some(sut), true) => Some((
            open_knowledge(&args.learn.store, args.store.as_ref())?,
            wayline_knowledge::sut_key(sut),
        )),
        (None, true) => return Err(unreadable("--learn needs --sut NAME")),
        _ => None,
    };
    let mut recorders = Vec::new();
    if let Some((store, sut)) = &knowledge {
        let recorder = Recorder::new(Arc::clone(store), sut.clone(), registry.clone());
        for (workflow, _) in &workflows {
            recorder.register(workflow);
        }
        builder = builder.observer(Arc::new(recorder.clone()));
        recorders.push(recorder);
    }
    let tools = if args.workflows_only {
        Vec::new()
    } else {
        registry.tools().cloned().collect()
    };
    let mut documents: Vec<(EngineBuilder, Arc<dyn Document>)> = Vec::new();
    if let Some(path) = &args.arazzo {
        let text = crate::args::arazzo_text(path).ok_or_else(|| {
            unreadable(format!(
                "--arazzo {}: not an Arazzo document (or not readable)",
                path.display()
            ))
        })?;
        let document = wayline_arazzo::load(&text, &path.display().to_string()).map_err(fail)?;
        let flags = ArazzoFlags {
            sources: &args.sources,
            allow_read: &args.allow_read,
            servers: &args.servers,
        };
        let runner = crate::assemble::arazzo::runner(document, path, &text, &flags)?;
        let mut engine =
            crate::assemble::arazzo::engine_builder(&runner, &args.tools.network, &env)?;
        // The document's runs are recorded, decided and learned from as the others are.
        if let Some(runs) = &run_store {
            engine = engine.run_store(Arc::clone(runs));
        }
        if let Some(policy) = &guard_policy {
            engine = engine.policy(Arc::clone(policy) as _);
        }
        if let Some((store, sut)) = &knowledge {
            let recorder = Recorder::new(Arc::clone(store), sut.clone(), runner.catalog().clone());
            for workflow in runner.compiled() {
                recorder.register(workflow);
            }
            engine = engine.observer(Arc::new(recorder.clone()));
            recorders.push(recorder);
        }
        documents.push((engine, Arc::new(ServedArazzo { runner })));
    }
    let server =
        WaylineServer::with_documents(builder, tools, workflows, documents).map_err(fail)?;
    let names = server.names().collect::<Vec<_>>().join(", ");
    runtime.block_on(async {
        match http {
            Some((address, access)) => {
                let what = format!("{} tools: {names}", server.names().count());
                let options = args.http.listen(address, access, &what).await?;
                let stop = crate::assemble::shutdown(
                    "stopping: runs in hand finish first (again to stop at once)",
                );
                server.serve_http(options, stop).await.map_err(fail)
            }
            None => {
                eprintln!(
                    "serving {} MCP tools on stdio: {names}",
                    server.names().count()
                );
                server.serve_stdio().await.map_err(fail)
            }
        }
    })?;
    for recorder in recorders {
        runtime.block_on(recorder.flush()).map_err(fail)?;
    }
    Ok(Outcome::Ok)
}

/// The active version of every saved workflow.
async fn active_workflows(
    stores: &wayline_store::Stores,
) -> Result<Vec<(Workflow, Option<u32>)>, wayline_core::StoreError> {
    let mut active = Vec::new();
    for latest in stores.workflows.list_workflows().await? {
        let versions = stores.workflows.workflow_versions(latest.id()).await?;
        if let Some(record) = versions
            .into_iter()
            .rev()
            .find(|record| record.state() == WorkflowStatus::Active)
        {
            active.push((record.workflow, Some(record.version)));
        }
    }
    Ok(active)
}

/// An Arazzo document's workflows, served by `mcp serve` as tools: each with the document's
/// inputs schema (its components beside it), run on the document's engine.
struct ServedArazzo {
    runner: wayline_arazzo::run::Runner,
}

impl Document for ServedArazzo {
    fn tools(&self) -> Vec<DocumentTool> {
        let document = self.runner.document();
        document
            .workflows
            .iter()
            .map(|workflow| {
                let id = &workflow.workflow_id;
                let about = workflow
                    .summary
                    .clone()
                    .or_else(|| workflow.description.clone())
                    .unwrap_or_else(|| id.clone());
                let description = format!(
                    "{about} (a workflow of the Arazzo document {})",
                    document.info.title
                );
                let schema = match self.runner.input_schema(id) {
                    Some(serde_json::Value::Object(schema)) => schema,
                    _ => serde_json::Map::new(),
                };
                DocumentTool::new(id.clone(), description, schema)
            })
            .collect()
    }

    fn run(
        &self,
        engine: Engine,
        id: String,
        inputs: serde_json::Map<String, serde_json::Value>,
        options: RunOptions,
    ) -> Pin<Box<dyn Future<Output = Result<DocumentRun, String>> + Send>> {
        let runner = self.runner.clone();
        Box::pin(async move {
            let ran = runner
                .run(&engine, &id, inputs, options)
                .await
                .map_err(|error| error.to_string())?;
            Ok(DocumentRun::new(ran.run, ran.outputs))
        })
    }
}

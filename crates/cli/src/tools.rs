//! `wayline tools check|list|try`: tool files loaded and checked, listed as a catalog, and one
//! tool called for real.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;
use wayline_core::{
    HttpRequest, HttpResponse, SecretProvider, ToolCatalog, Transport, TransportError,
};
use wayline_executor::{Engine, Redactor, ReqwestTransport, is_credential_response_header};
use wayline_registry::{ToolRegistry, catalog_entries, render_catalog};

use crate::args::{Common, parse_inputs};
use crate::assemble::{
    Environment, load_configs, load_tools, load_tools_to_call, runtime, tool_transport,
};
use crate::report::{
    Outcome, ProblemDoc, ReportFormat, fail, out, outcome_of, outln, print_errors, print_json,
    print_plan, unreadable,
};

/// `wayline tools ...`
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ToolsCommand {
    /// Load tool files and directories and report every problem.
    Check {
        /// Tool files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Call one tool: print the request (secrets redacted), send it, print the response and
    /// the extracted outputs.
    Try(Box<TryArgs>),
    /// List the tools: id, description, inputs (required ones starred) and outputs.
    List {
        /// Tool files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
}

/// `wayline tools try` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct TryArgs {
    /// The tool to call.
    pub(crate) tool_id: String,
    #[command(flatten)]
    pub(crate) common: Common,
    /// Output format (json: the request, the response and the step's result in one
    /// document).
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub(crate) format: ReportFormat,
}

pub(crate) fn tools_command(command: ToolsCommand) -> Outcome {
    match command {
        ToolsCommand::Check { paths, format } => tools_check(&paths, format),
        ToolsCommand::List { paths, format } => tools_list(&paths, format),
        ToolsCommand::Try(args) => try_command(*args),
    }
}

fn tools_check(paths: &[PathBuf], format: ReportFormat) -> Outcome {
    let report = ToolRegistry::load(paths);
    let outcome = outcome_of(&report.errors);
    match format {
        ReportFormat::Text => {
            print_errors(&report.errors);
            let problems = report.errors.len();
            outln!(
                "{} tool(s) loaded, {problems} problem{}",
                report.registry.len(),
                if problems == 1 { "" } else { "s" }
            );
        }
        ReportFormat::Json => {
            #[derive(Serialize)]
            struct CheckDoc<'a> {
                ok: bool,
                tools: Vec<&'a str>,
                errors: Vec<ProblemDoc>,
            }
            let tools = report
                .registry
                .tools()
                .map(|tool| tool.id.as_str())
                .collect();
            print_json(&CheckDoc {
                ok: report.errors.is_empty(),
                tools,
                errors: report.errors.iter().map(ProblemDoc::new).collect(),
            });
        }
    }
    outcome
}

fn tools_list(paths: &[PathBuf], format: ReportFormat) -> Outcome {
    let registry = match load_tools(paths) {
        Ok(registry) => registry,
        Err(outcome) => return outcome,
    };
    match format {
        ReportFormat::Text => out!("{}", render_catalog(&registry)),
        ReportFormat::Json => {
            #[derive(Serialize)]
            struct ListDoc {
                tools: Vec<wayline_registry::CatalogEntry>,
            }
            print_json(&ListDoc {
                tools: catalog_entries(&registry),
            });
        }
    }
    Outcome::Ok
}

/// A transport that remembers the last response, so `tools try` can show it whole.
#[derive(Debug)]
struct Remember {
    inner: ReqwestTransport,
    last: Mutex<Option<HttpResponse>>,
}

#[async_trait::async_trait]
impl Transport for Remember {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let response = self.inner.send(request).await?;
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(response.clone());
        Ok(response)
    }
}

fn try_command(args: TryArgs) -> Outcome {
    match try_tool(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn try_tool(args: TryArgs) -> Result<Outcome, Outcome> {
    let env = Environment::load(&args.common.tools.env_files)?;
    let registry = load_tools_to_call(&args.common.tools.tools, &env)?;
    if registry.tool(&args.tool_id).is_none() {
        let hint = wayline_core::document::nearest(&args.tool_id, registry.tool_ids())
            .map(|id| format!(" (did you mean `{id}`?)"))
            .unwrap_or_default();
        return Err(unreadable(format!(
            "no tool `{}` in the tools given{hint}",
            args.tool_id
        )));
    }
    let mut inputs = IndexMap::new();
    parse_inputs(&args.common.inputs, &mut inputs).map_err(unreadable)?;
    let configs = load_configs(args.common.tools.config.as_deref(), &registry, &env)?;
    // The raw response is printed whole: masked through the redactor the engine teaches what
    // the call met (the config's secrets, a token its command printed, what was sent as a
    // credential), as the record is.
    let redactor = Redactor::default();
    redactor.learn(env.file_values());
    let secrets: Arc<dyn SecretProvider> = Arc::new(configs);
    let workflow = Engine::tool_call_workflow(&args.tool_id, inputs.keys().map(String::as_str));
    let transport = Arc::new(Remember {
        inner: tool_transport(&args.common.tools.network)?,
        last: Mutex::new(None),
    });
    let engine = Engine::builder(Arc::new(registry))
        .secrets(secrets)
        .transport(transport.clone())
        .mask(env.file_values())
        .redactor(redactor.clone())
        .build();
    let runtime = runtime()?;
    let planned = runtime
        .block_on(engine.dry_run(&workflow, inputs.clone()))
        .map_err(fail)?;
    if args.common.dry_run {
        match args.format {
            ReportFormat::Json => print_json(&serde_json::json!({"request": planned})),
            ReportFormat::Text => {
                outln!("request:");
                print_plan(&planned);
            }
        }
        return Ok(Outcome::Ok);
    }
    let result = runtime
        .block_on(engine.call_tool(&args.tool_id, inputs))
        .map_err(fail)?;
    // The response as sent back, its headers and body masked like the record's.
    let response = transport
        .last
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|response| {
            // A credential a server hands out (a session cookie) is masked by name too.
            let headers: Vec<(String, String)> = response
                .headers
                .iter()
                .map(|(name, value)| {
                    let shown = if is_credential_response_header(name) {
                        "***".to_owned()
                    } else {
                        redactor.text(value).into_owned()
                    };
                    (name.clone(), shown)
                })
                .collect();
            let text = redactor.text(&response.text()).into_owned();
            (response.status, headers, text)
        });
    let outcome = if result.error.is_some() {
        Outcome::Failed
    } else {
        Outcome::Ok
    };
    if args.format == ReportFormat::Json {
        let response = response.map(|(status, headers, text)| {
            let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
            // A list, as HAR has them: a name can come more than once (`set-cookie`).
            let headers: Vec<Value> = headers
                .into_iter()
                .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
                .collect();
            serde_json::json!({"status": status, "headers": headers, "body": body})
        });
        print_json(&serde_json::json!({
            "request": planned,
            "response": response,
            "result": result,
        }));
        return Ok(outcome);
    }
    outln!("request:");
    print_plan(&planned);
    if let Some((status, headers, text)) = response {
        outln!("\nresponse: HTTP {status}");
        for (name, value) in &headers {
            outln!("  {name}: {value}");
        }
        let body = match serde_json::from_str::<Value>(&text) {
            Ok(json) => serde_json::to_string_pretty(&json).unwrap_or(text),
            Err(_) => text,
        };
        outln!("{body}");
    }
    match &result.error {
        Some(error) => outln!("\nerror: {error}"),
        None => {
            outln!("\noutput:");
            print_json(&result.output_data);
            for warning in &result.warnings {
                outln!("warning: {warning}");
            }
        }
    }
    Ok(outcome)
}

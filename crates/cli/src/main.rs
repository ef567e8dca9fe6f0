//! The `wayline` command: check, list and try tools; validate, draw and run workflows.
//!
//! Exit codes: 0 ok; 1 the thing checked failed (a problem in a tool or workflow file, an invalid
//! workflow); 2 bad usage or unreadable input (a missing file, an unknown flag). The contract is
//! written down in `docs/cli.md`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod explore;
mod guard;
mod import;
mod knowledge;
mod plan;
mod run;
mod runs;
mod sandbox;
mod schedule;
mod workflows;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;
use wayline_core::Workflow;
use wayline_graph::{ValidationReport, ViewFormat, render, validate};
use wayline_registry::{Error as RegistryError, ToolRegistry, catalog_entries, render_catalog};

#[derive(Debug, Parser)]
#[command(
    name = "wayline",
    version,
    about = "Graphs of API calls: check, validate, draw, run"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with tool definition files.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Validate a workflow: every problem, the complete edge set, the order and the levels.
    Validate {
        /// The workflow file (YAML or JSON).
        workflow: PathBuf,
        /// Tool files or directories (repeatable).
        #[arg(long = "tools", required = true, value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Draw a workflow's graph.
    Graph {
        /// The workflow file (YAML or JSON).
        workflow: PathBuf,
        /// Tool files or directories (repeatable).
        #[arg(long = "tools", required = true, value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// The view.
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
    /// Run a workflow: live progress on stderr, a summary (or the run record) on stdout.
    Run(run::RunArgs),
    /// Run history: list, show, and resume interrupted runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Saved workflows: save, show, approve, activate (after a validation run), list.
    #[command(subcommand)]
    Workflow(workflows::WorkflowCommand),
    /// Run saved workflows on intervals and cron schedules.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCommand),
    /// Learned knowledge: show it, check an operation for pitfalls, suggest patterns,
    /// export and import.
    #[command(subcommand)]
    Knowledge(knowledge::KnowledgeCommand),
    /// The guard: print a policy, decide a tool call in a diagnostic session, run a
    /// decision-table suite, verify an audit log.
    #[command(subcommand)]
    Guard(guard::GuardCommand),
    /// Explore an API toward a target: suggested steps, run or asked about, kept as a
    /// session and a reusable scenario.
    Explore(explore::ExploreArgs),
    /// Plan a workflow for a goal in plain words: from a learned pattern when one fits, else
    /// from a language model; the plan is validated (and repaired) and shown as a view.
    Plan(plan::PlanArgs),
    /// Import tools: one tool YAML per operation of an OpenAPI (or Swagger) spec.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Code sandboxes: serve the Bay API over the embedded local sandbox.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
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
    Try(run::TryArgs),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GraphFormat {
    Mermaid,
    Dot,
    Text,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    Failed,
    Unreadable,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(match outcome {
            Outcome::Ok => 0,
            Outcome::Failed => 1,
            Outcome::Unreadable => 2,
        })
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS // --help, --version
            };
        }
    };
    match cli.command {
        Command::Tools(ToolsCommand::Check { paths, format }) => tools_check(&paths, format),
        Command::Tools(ToolsCommand::List { paths, format }) => tools_list(&paths, format),
        Command::Tools(ToolsCommand::Try(args)) => run::try_command(args),
        Command::Run(args) => run::run_command(args),
        Command::Runs(command) => runs::runs_command(command),
        Command::Workflow(command) => workflows::workflow_command(command),
        Command::Schedule(command) => schedule::schedule_command(command),
        Command::Knowledge(command) => knowledge::knowledge_command(command),
        Command::Guard(command) => guard::guard_command(command),
        Command::Sandbox(command) => sandbox::sandbox_command(command),
        Command::Import(command) => import::import_command(command),
        Command::Explore(args) => explore::explore_command(args),
        Command::Plan(args) => plan::plan_command(args),
        Command::Validate {
            workflow,
            tools,
            format,
        } => validate_command(&workflow, &tools, format),
        Command::Graph {
            workflow,
            tools,
            format,
        } => graph_command(&workflow, &tools, format),
    }
    .into()
}

/// The outcome a set of registry errors implies: unreadable beats failed.
pub(crate) fn outcome_of(errors: &[RegistryError]) -> Outcome {
    if errors
        .iter()
        .any(|error| matches!(error, RegistryError::Io { .. }))
    {
        Outcome::Unreadable
    } else if errors.is_empty() {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}

pub(crate) fn print_errors(errors: &[RegistryError]) {
    for error in errors {
        eprintln!("error: {error}\n");
    }
}

#[derive(Default, Serialize)]
struct ProblemDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion: Option<String>,
    message: String,
}

impl ProblemDoc {
    fn new(error: &RegistryError) -> Self {
        match error {
            RegistryError::Document(doc) => ProblemDoc {
                file: Some(doc.origin.clone()),
                line: doc.line,
                column: doc.column,
                field: doc.field.clone(),
                suggestion: doc.suggestion.clone(),
                message: doc.message.clone(),
            },
            RegistryError::Io { path, .. } => ProblemDoc {
                file: Some(path.display().to_string()),
                message: error.to_string(),
                ..ProblemDoc::default()
            },
            other => ProblemDoc {
                message: other.to_string(),
                ..ProblemDoc::default()
            },
        }
    }
}

/// Writes `text` to `path` whole and durably ([`wayline_durable::write`]): a reader sees the
/// old file or the new one, and a crash leaves one of them.
pub(crate) fn write_atomically(path: &std::path::Path, text: &str) -> Result<(), Outcome> {
    wayline_durable::write(path, text.as_bytes()).map_err(|error| {
        eprintln!("error: {error}");
        Outcome::Unreadable
    })
}

pub(crate) fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("error: cannot write JSON: {error}"),
    }
}

fn tools_check(paths: &[PathBuf], format: ReportFormat) -> Outcome {
    let report = ToolRegistry::load(paths);
    let outcome = outcome_of(&report.errors);
    match format {
        ReportFormat::Text => {
            print_errors(&report.errors);
            let problems = report.errors.len();
            println!(
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
        ReportFormat::Text => print!("{}", render_catalog(&registry)),
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

/// Loads tools for a command that needs them all; problems are printed.
pub(crate) fn load_tools(paths: &[PathBuf]) -> Result<ToolRegistry, Outcome> {
    let report = ToolRegistry::load(paths);
    if report.errors.is_empty() {
        Ok(report.registry)
    } else {
        print_errors(&report.errors);
        eprintln!("error: the tools above did not load; fix them (see `wayline tools check`)");
        Err(outcome_of(&report.errors))
    }
}

/// Loads the tools and the workflow and validates it.
fn analyse(workflow: &Path, tools: &[PathBuf]) -> Result<(Workflow, ValidationReport), Outcome> {
    let registry = load_tools(tools)?;
    let workflow = wayline_registry::load_workflow_file(workflow).map_err(|error| {
        let outcome = outcome_of(std::slice::from_ref(&error));
        print_errors(&[error]);
        outcome
    })?;
    let report = validate(&workflow, &registry);
    Ok((workflow, report))
}

fn validate_command(workflow: &Path, tools: &[PathBuf], format: ReportFormat) -> Outcome {
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(outcome) => return outcome,
    };
    match format {
        ReportFormat::Json => print_json(&report),
        ReportFormat::Text => print_report(&workflow, &report),
    }
    if report.is_valid() {
        Outcome::Ok
    } else {
        Outcome::Failed
    }
}

fn print_report(workflow: &Workflow, report: &ValidationReport) {
    let edges = report.graph().edges();
    let inferred = edges.iter().filter(|edge| edge.inferred).count();
    if report.is_valid() {
        println!(
            "{}: valid ({} steps, {} edges, {inferred} inferred)",
            workflow.id,
            workflow.steps.len(),
            edges.len()
        );
    } else {
        let count = report.errors.len();
        println!(
            "{}: invalid, {count} problem{}",
            workflow.id,
            if count == 1 { "" } else { "s" }
        );
        for problem in &report.errors {
            println!("  {problem}");
        }
    }
    println!("order: {}", report.order().join(", "));
    let levels: Vec<String> = report
        .levels()
        .iter()
        .map(|level| format!("[{}]", level.join(", ")))
        .collect();
    println!("levels: {}", levels.join(" "));
}

fn graph_command(workflow: &Path, tools: &[PathBuf], format: GraphFormat) -> Outcome {
    let (workflow, report) = match analyse(workflow, tools) {
        Ok(analysed) => analysed,
        Err(outcome) => return outcome,
    };
    if !report.is_valid() {
        eprintln!(
            "warning: {} has {} problem(s); the drawing shows it as written (see `wayline validate`)",
            workflow.id,
            report.errors.len()
        );
    }
    let view = match format {
        GraphFormat::Mermaid => ViewFormat::Mermaid,
        GraphFormat::Dot => ViewFormat::Dot,
        GraphFormat::Text => ViewFormat::Text,
    };
    print!("{}", render(&workflow, &report, view));
    Outcome::Ok
}

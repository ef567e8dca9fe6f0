//! The `wayline` command: check, list and try tools (`tools`); validate, draw, run and test
//! workflows (`validate`, `graph`, `run`, `test`); keep them and their runs (`workflow`,
//! `runs`, `schedule`), run them on workers (`worker`, `workers`); learn and guard (`knowledge`,
//! `guard`); find or plan them (`explore`, `plan`); move them between formats (`import`,
//! `export`, `schema`); sandboxes (`sandbox`); and MCP (`mcp gateway`, `mcp serve`).
//!
//! Exit codes: 0 ok; 1 the thing checked failed (a problem in a tool or workflow file, an invalid
//! workflow); 2 bad usage or unreadable input (a missing file, an unknown flag). The contract is
//! written down in `docs/cli.md`.

use std::path::PathBuf;
use std::process::ExitCode;

// Shared by the commands, and using none of them: flag groups, what commands build from
// them, how results and errors are reported, and what `wayline test` found with its reports.
mod args;
mod assemble;
mod logging;
mod report;
mod test_results;

// One module per command.
mod completions;
mod explore;
mod export;
mod guard;
mod import;
mod knowledge;
mod mcp;
mod plan;
mod run;
mod runs;
mod sandbox;
mod schedule;
mod schema;
mod test;
mod tools;
mod validate;
mod worker;
mod workflows;

use clap::{ArgAction, CommandFactory, Parser, Subcommand};

use crate::report::ReportFormat;
use crate::validate::GraphFormat;

#[derive(Debug, Parser)]
#[command(
    name = "wayline",
    version,
    about = "Graphs of API calls: check, validate, draw, run"
)]
struct Cli {
    /// Trace what the libraries do, on stderr: `-v` info, `-vv` debug, `-vvv` trace
    /// (`RUST_LOG`, when set, decides instead).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with tool definition files.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Validate a workflow: every problem, the complete edge set, the order and the levels;
    /// or an Arazzo document: every problem of its structure, references and expressions.
    Validate {
        /// The workflow file (YAML or JSON), or an Arazzo document.
        workflow: PathBuf,
        /// Tool files or directories (repeatable; an Arazzo document needs none).
        #[arg(long = "tools", value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// For an Arazzo document: a local file for a source description, by name (a remote
        /// one is not fetched).
        #[arg(long = "source", value_name = "NAME=FILE")]
        sources: Vec<String>,
        /// Let source descriptions and `$ref`s be read from this directory too (by default only
        /// at or below the document's own directory). Repeatable.
        #[arg(long = "allow-read", value_name = "DIR")]
        allow_read: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
        format: ReportFormat,
    },
    /// Draw a workflow's graph.
    Graph {
        /// The workflow file (YAML or JSON), or an Arazzo document.
        workflow: PathBuf,
        /// Tool files or directories (repeatable; an Arazzo document needs none).
        #[arg(long = "tools", value_name = "DIR")]
        tools: Vec<PathBuf>,
        /// For an Arazzo document: the workflow to draw (default: all, one after another).
        #[arg(long = "workflow", value_name = "ID")]
        arazzo_workflow: Option<String>,
        /// The view.
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
    /// Run a workflow: live progress on stderr, a summary (or the run record) on stdout.
    Run(Box<run::RunArgs>),
    /// Test: run every workflow found (in parallel), each checked by its steps' `expect`; a
    /// line per workflow, a summary, and JUnit / TAP / JSON / GitHub reports and a HAR.
    Test(test::TestArgs),
    /// Run history: list, show, and resume interrupted runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Saved workflows: save, show, approve, activate (after a validation run), list.
    #[command(subcommand)]
    Workflow(workflows::WorkflowCommand),
    /// Work on the run queue of a shared PostgreSQL store, as one of a pool of workers:
    /// claimed runs are held on a lease, and a lost worker's runs are taken over.
    Worker(Box<worker::WorkerArgs>),
    /// The workers of a shared store and its queue: list them, or their metrics.
    #[command(subcommand)]
    Workers(worker::WorkersCommand),
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
    /// Import tools from an OpenAPI (or Swagger) spec, or a workflow from an Arazzo document.
    #[command(subcommand)]
    Import(import::ImportCommand),
    /// Export a workflow as an Arazzo document with OpenAPI descriptions of its tools.
    #[command(subcommand)]
    Export(export::ExportCommand),
    /// Code sandboxes: serve the Bay API over the embedded local sandbox.
    #[command(subcommand)]
    Sandbox(sandbox::SandboxCommand),
    /// The Model Context Protocol: the guard as a gateway in front of MCP servers, and
    /// wayline's tools and workflows served to agents.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// The JSON Schema of a file format (tool, workflow, configs, SUT, guard, sandbox,
    /// knowledge), for editors: `# yaml-language-server: $schema=…`.
    Schema(schema::SchemaArgs),
    /// A completion script for a shell, on stdout (`wayline completions bash >
    /// ~/.local/share/bash-completion/completions/wayline`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page: `wayline.1` on stdout, or a page per command written into a directory.
    Man {
        /// Write `wayline.1`, `wayline-run.1`, … into this directory (created when missing).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
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
    logging::init(cli.verbose);
    let given: Vec<String> = std::env::args().skip(1).collect();
    for warning in args::secrets_in_arguments(&given) {
        eprintln!("warning: {warning}");
    }
    match cli.command {
        Command::Completions { shell } => completions::completions_command(shell, Cli::command()),
        Command::Man { out } => completions::man_command(out.as_deref(), Cli::command()),
        Command::Tools(command) => tools::tools_command(command),
        Command::Run(args) => run::run_command(*args),
        Command::Test(args) => test::test_command(args),
        Command::Runs(command) => runs::runs_command(command),
        Command::Workflow(command) => workflows::workflow_command(command),
        Command::Schedule(command) => schedule::schedule_command(command),
        Command::Worker(args) => worker::worker_command(*args),
        Command::Workers(command) => worker::workers_command(command),
        Command::Knowledge(command) => knowledge::knowledge_command(command),
        Command::Guard(command) => guard::guard_command(command),
        Command::Sandbox(command) => sandbox::sandbox_command(command),
        Command::Mcp(command) => mcp::mcp_command(command),
        Command::Import(command) => import::import_command(command),
        Command::Export(command) => export::export_command(command),
        Command::Explore(args) => explore::explore_command(args),
        Command::Plan(args) => plan::plan_command(args),
        Command::Schema(args) => schema::schema_command(args),
        Command::Validate {
            workflow,
            tools,
            sources,
            allow_read,
            format,
        } => validate::validate_command(&workflow, &tools, &sources, &allow_read, format),
        Command::Graph {
            workflow,
            tools,
            arazzo_workflow,
            format,
        } => validate::graph_command(&workflow, &tools, arazzo_workflow.as_deref(), format),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands whose output is not a result to read back: servers (a worker too), and
    /// documents that are already in their one format (metrics: `workers list --format json`
    /// is their JSON).
    const NO_RESULT: [&str; 8] = [
        "wayline worker",
        "wayline workers metrics",
        "wayline sandbox serve",
        "wayline mcp gateway",
        "wayline mcp serve",
        "wayline schema",
        "wayline completions",
        "wayline man",
    ];

    fn leaves(command: &clap::Command, path: &str, found: &mut Vec<(String, clap::Command)>) {
        let path = format!("{path} {}", command.get_name()).trim().to_owned();
        let mut subcommands = command.get_subcommands().peekable();
        if subcommands.peek().is_none() {
            found.push((path, command.clone()));
            return;
        }
        for subcommand in subcommands {
            leaves(subcommand, &path, found);
        }
    }

    #[test]
    fn every_command_that_prints_a_result_takes_format_json() {
        let mut found = Vec::new();
        leaves(&Cli::command(), "", &mut found);
        assert!(found.len() > 30, "{}", found.len());
        let missing: Vec<&str> = found
            .iter()
            .filter(|(path, _)| !NO_RESULT.contains(&path.as_str()))
            .filter(|(_, command)| {
                let format = command
                    .get_arguments()
                    .find(|argument| argument.get_long() == Some("format"));
                !format.is_some_and(|format| {
                    format
                        .get_possible_values()
                        .iter()
                        .any(|value| value.get_name() == "json")
                })
            })
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(missing.is_empty(), "no --format json: {missing:?}");
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}

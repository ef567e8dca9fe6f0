//! What the examples share: the embedded demo API and one way to run a workflow and show it.

pub(crate) mod demo_api;

use std::process::ExitCode;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;
use wayline::core::document::Format;
use wayline::core::{MemorySecrets, RunStatus, Secret, ToolConfig, ToolDefinition, Workflow};
use wayline::executor::{Engine, Progress, RunOptions, summary};
use wayline::graph::{ViewFormat, render, validate};
use wayline::registry::{ToolRegistry, parse_tool, process_env};

/// One example: its tools (YAML, pointing at the real public APIs), its workflow, its default
/// inputs, and for each tool the demo API prefix that stands in for the real host.
pub(crate) struct Example {
    pub(crate) tools: &'static [&'static str],
    pub(crate) workflow: &'static str,
    pub(crate) inputs: &'static [(&'static str, &'static str)],
    pub(crate) demo_prefix: &'static [(&'static str, &'static str)],
}

impl Example {
    /// Runs the example: `--live` calls the real APIs, `--input NAME=VALUE` overrides inputs.
    pub(crate) fn main(&self) -> ExitCode {
        match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(self.run()),
            Err(error) => {
                eprintln!("cannot start the runtime: {error}");
                ExitCode::from(2)
            }
        }
    }

    async fn run(&self) -> ExitCode {
        let Some(options) = Options::from_args(self.inputs) else {
            return ExitCode::from(2);
        };
        let setup = match self.setup(options.live).await {
            Ok(setup) => setup,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::FAILURE;
            }
        };
        let Setup {
            registry,
            secrets,
            workflow,
            demo: _demo,
        } = setup;
        let inputs = options.inputs;
        println!(
            "{} against {}\n",
            workflow.name,
            if options.live {
                "the live public APIs"
            } else {
                "the embedded demo API (pass --live for the real ones)"
            }
        );

        let report = validate(&workflow, &registry);
        print!("{}", render(&workflow, &report, ViewFormat::Text));
        println!();
        let engine = Engine::builder(Arc::new(registry))
            .secrets(Arc::new(secrets))
            .observer(Arc::new(Progress::stderr()))
            .build();
        let run = match engine
            .run(&workflow, RunOptions::new().inputs(inputs))
            .await
        {
            Ok(run) => run,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::FAILURE;
            }
        };
        println!("\n{}", summary(&run));
        if let Some(last) = run.step_results.last() {
            println!("output of `{}`:", last.step_id);
            println!(
                "{}",
                serde_json::to_string_pretty(&last.output_data).unwrap_or_default()
            );
        }
        if run.status == RunStatus::Success {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// The command line every example accepts: `--live` and `--input=NAME=VALUE`.
pub(crate) struct Options {
    /// Call the real public APIs.
    pub(crate) live: bool,
    /// The run inputs.
    pub(crate) inputs: IndexMap<String, Value>,
}

impl Options {
    /// Parses the arguments over the example's default inputs; `None` (after printing the
    /// usage) when they do not parse.
    pub(crate) fn from_args(defaults: &[(&str, &str)]) -> Option<Options> {
        let mut live = false;
        let mut inputs: IndexMap<String, Value> = defaults
            .iter()
            .map(|(name, value)| ((*name).to_owned(), Value::String((*value).to_owned())))
            .collect();
        for arg in std::env::args().skip(1) {
            if arg == "--live" {
                live = true;
            } else if let Some((name, value)) = arg
                .strip_prefix("--input=")
                .and_then(|rest| rest.split_once('='))
            {
                inputs.insert(name.to_owned(), Value::String(value.to_owned()));
            } else {
                eprintln!("usage: [--live] [--input=NAME=VALUE]...");
                return None;
            }
        }
        Some(Options { live, inputs })
    }
}

/// An example's tools, credentials and workflow, and the demo API when not live (kept alive
/// as long as this is).
pub(crate) struct Setup {
    pub(crate) registry: ToolRegistry,
    pub(crate) secrets: MemorySecrets,
    pub(crate) workflow: Workflow,
    /// Held so the demo API keeps answering.
    pub(crate) demo: Option<wayline::executor::testing::MockServer>,
}

impl Example {
    /// Loads the tools and the workflow, and unless `live` starts the demo API and points every
    /// tool at it.
    pub(crate) async fn setup(&self, live: bool) -> Result<Setup, String> {
        let mut registry = ToolRegistry::new();
        for (index, yaml) in self.tools.iter().enumerate() {
            let origin = format!("embedded tool {}", index + 1);
            let tool: ToolDefinition = parse_tool(yaml, Format::Yaml, &origin, &process_env)
                .map_err(|error| error.to_string())?;
            registry
                .insert(tool, origin.into())
                .map_err(|error| error.to_string())?;
        }
        let workflow = Workflow::parse(self.workflow, Format::Yaml, "embedded workflow")
            .map_err(|error| error.to_string())?;
        // The demo API stands in for every host unless --live: each tool's config points its
        // base URL at the demo's prefix for that service.
        let demo = if live {
            None
        } else {
            Some(
                demo_api::start()
                    .await
                    .map_err(|error| format!("cannot start the demo API: {error}"))?,
            )
        };
        let mut secrets = MemorySecrets::new();
        for (tool_id, prefix) in self.demo_prefix {
            let mut config = ToolConfig::default();
            if let Some(server) = &demo {
                config.base_url = Some(server.url(prefix));
            }
            if let Some(token) = std::env::var("GITHUB_TOKEN")
                .ok()
                .filter(|_| live && tool_id.starts_with("github"))
            {
                config.auth_token = Some(Secret::new(token));
            }
            secrets.insert(*tool_id, config);
        }
        Ok(Setup {
            registry,
            secrets,
            workflow,
            demo,
        })
    }
}

//! Code in a sandbox, two ways: an agent-style session with the embedded local sandbox (files,
//! multi-round Python with variables kept, a traceback to fix, stop and resume), then a
//! workflow whose `code` steps the engine runs in fresh sandboxes.
//!
//! ```sh
//! cargo run --example code_steps     # needs python3; a temporary data directory, no network
//! ```
//!
//! What to put in your own `Cargo.toml` to use this file as it is:
//!
//! ```toml
//! [dependencies]
//! wayline = { version = "0.1", default-features = false, features = ["executor", "sandbox"] }
//! tokio = { version = "1", features = ["rt", "macros"] }
//! serde_json = "1"
//! tempfile = "3"
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::json;
use wayline::core::document::{Format, parse};
use wayline::core::{MemoryCatalog, RunStatus, ToolDefinition, Workflow};
use wayline::executor::{Engine, RunOptions, summary};
use wayline::sandbox::{
    CreateSandbox, LocalConfig, LocalProvider, Sandbox, SandboxCodeRunner, SandboxProvider,
};

const STATS: &str = "id: stats\nname: Stats\nkind: code\ncode:\n  source: |\n    import statistics\n    values = inputs['values']\n    result = {'mean': statistics.mean(values), 'max': max(values)}\n";
const VERDICT: &str = "id: verdict\nname: Verdict\nkind: code\ncode:\n  source: |\n    result = 'hot' if inputs['mean'] > 20 else 'mild'\n";
const FLOW: &str = "id: temperatures\nname: Temperatures\nsteps:\n\
  - {id: stats, tool_id: stats, kind: code, input_mapping: {values: $input.values}}\n\
  - {id: verdict, tool_id: verdict, kind: code, input_mapping: {mean: stats.mean}, outputs: {word: body}}\n";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !python {
        eprintln!("this example needs python3 (the local sandbox runs it); install it and retry");
        return ExitCode::FAILURE;
    }
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let local = LocalProvider::open(LocalConfig::new(dir.path()))?;
    println!("local sandbox, isolation: {}", local.isolation().describe());
    let provider: Arc<dyn SandboxProvider> = Arc::new(local);

    // 1. A session, as an agent would drive it.
    let sandbox = Sandbox::create(provider.clone(), &CreateSandbox::default().ttl(600)).await?;
    println!(
        "\ncreated {} ({:?})",
        sandbox.id(),
        sandbox.info().await?.status
    );
    sandbox
        .write_file(
            "solution.py",
            "def fib(n):\n    return n if n < 2 else fib(n-1) + fibb(n-2)\n",
        )
        .await?;
    let failed = sandbox
        .python("exec(open('solution.py').read())\nfib(10)")
        .await?;
    let last = failed.error.as_deref().and_then(|e| e.lines().last());
    println!("first try: success={} error={:?}", failed.success, last);
    sandbox
        .write_file(
            "solution.py",
            "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n",
        )
        .await?;
    let fixed = sandbox
        .python("exec(open('solution.py').read())\nfib(20)")
        .await?;
    println!("after the fix: {}", fixed.output);
    let kept = sandbox.python("fib(15)").await?;
    println!("the function is still defined: fib(15) = {}", kept.output);
    sandbox.stop().await?;
    let after_stop = sandbox.python("fib(15)").await?;
    println!(
        "after stop, variables are gone: {:?}; the file stays: {} bytes",
        after_stop.error.as_deref().and_then(|e| e.lines().last()),
        sandbox.read_file("solution.py").await?.len()
    );
    sandbox.delete().await?;

    // 2. A workflow of code steps.
    let tools = [STATS, VERDICT]
        .iter()
        .map(|yaml| parse::<ToolDefinition>(yaml, Format::Yaml, "tool.yaml"))
        .collect::<Result<Vec<_>, _>>()?;
    let workflow: Workflow = parse(FLOW, Format::Yaml, "workflow.yaml")?;
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .code_runner(Arc::new(SandboxCodeRunner::new(provider)))
        .build();
    let run = engine
        .run(
            &workflow,
            RunOptions::new().input("values", json!([18.5, 22.0, 24.5])),
        )
        .await?;
    println!("\n{}", summary(&run));
    println!("stats: {}", run.step_results[0].output_data);
    println!("verdict: {}", run.step_results[1].output_data);
    if run.status != RunStatus::Success {
        return Err("the workflow failed".into());
    }
    Ok(())
}

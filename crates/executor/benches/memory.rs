//! Peak memory of a 10,000-step run (a fan-out of 10,000 steps through the loopback server,
//! then a 10,000-step chain), read from `/proc/self/status` (Linux). Prints one line per run;
//! see `docs/benchmarks.md`.
//!
//! ```sh
//! cargo bench -p wayline-executor --bench memory
//! ```

use std::sync::Arc;

use wayline_core::{MemoryCatalog, RunStatus, Step, ToolDefinition, Workflow};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(MockServer::start_unrecorded(|_| {
            Reply::json(
                200,
                serde_json::json!({"n": 1, "name": "a small JSON body"}),
            )
        }))
        .unwrap();
    let catalog = MemoryCatalog::from_tools([ToolDefinition::new("echo", server.url(""))]);
    let engine = Engine::builder(Arc::new(catalog))
        .transport(Arc::new(ReqwestTransport::new().unwrap()))
        .max_parallel(50)
        .build();
    println!(
        "before any run: peak RSS {} KiB",
        peak_rss_kib().unwrap_or(0)
    );
    for (name, chained) in [("fan-out", false), ("chain", true)] {
        let mut workflow = Workflow::new(name, name);
        for index in 0..10_000 {
            let mut step = Step::new(format!("s{index}"), "echo");
            if chained && index > 0 {
                step = step.map("previous", format!("s{}.n", index - 1));
            }
            workflow.steps.push(step);
        }
        let started = std::time::Instant::now();
        let run = runtime
            .block_on(engine.run(&workflow, RunOptions::new()))
            .unwrap();
        assert_eq!(run.status, RunStatus::Success);
        let record = serde_json::to_vec(&run).unwrap().len();
        println!(
            "10,000-step {name}: {:?}, record {} KiB, peak RSS so far {} KiB",
            started.elapsed(),
            record / 1024,
            peak_rss_kib().unwrap_or(0)
        );
    }
}

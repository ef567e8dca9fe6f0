//! The engine's cost per step running an Arazzo document, against the same workflow in
//! wayline's own format on the same engine (numbers and commands in `docs/benchmarks.md`):
//! - `overhead/chain_300/*`: 300 steps, each sending the output of the one before, over the
//!   scripted transport (no sockets): the time per step is the engine's (and for Arazzo the
//!   rendering, criteria and outputs of each step).
//! - `overhead/fan_out_200/*`: 200 independent steps, scripted.

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use indexmap::IndexMap;
use serde_json::Map;
use wayline_arazzo::run::Runner;
use wayline_arazzo::sources::Sources;
use wayline_core::{HttpResponse, MemoryCatalog, RunStatus, Step, ToolDefinition, Workflow};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::{Engine, RunOptions};

const API: &str = "openapi: 3.1.0\ninfo: {title: Bench, version: '1'}\nservers: [{url: 'http://api.test'}]\npaths:\n  /echo:\n    get:\n      operationId: echo\n      parameters: [{name: previous, in: query, schema: {type: integer}}]\n      responses: {'200': {description: ok}}\n";

fn document(steps: usize, chained: bool) -> String {
    let mut text = "arazzo: 1.0.1\ninfo: {title: Bench, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: w\n    steps:\n".to_owned();
    for index in 0..steps {
        if chained && index > 0 {
            text.push_str(&format!(
                "      - {{stepId: s{index}, operationId: echo, parameters: [{{name: previous, in: query, value: $steps.s{}.outputs.n}}], outputs: {{n: $response.body#/n}}}}\n",
                index - 1
            ));
        } else {
            text.push_str(&format!(
                "      - {{stepId: s{index}, operationId: echo, outputs: {{n: $response.body#/n}}}}\n"
            ));
        }
    }
    text
}

fn workflow(steps: usize, chained: bool) -> Workflow {
    let mut workflow = Workflow::new("w", "w");
    for index in 0..steps {
        let mut step = Step::new(format!("s{index}"), "echo");
        if chained && index > 0 {
            step = step.map("previous", format!("s{}.n", index - 1));
        }
        workflow.steps.push(step);
    }
    workflow
}

fn overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), API).unwrap();
    let transport = Arc::new(
        ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, r#"{"n": 1}"#))),
    );
    let mut echo = ToolDefinition::new("echo", "http://api.test");
    echo.path = "/echo".to_owned();
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([echo])))
        .transport(transport)
        .max_parallel(50)
        .build();
    let mut group = c.benchmark_group("overhead");
    for (label, steps, chained) in [("chain_300", 300, true), ("fan_out_200", 200, false)] {
        let document =
            wayline_arazzo::load(&document(steps, chained), "bench.arazzo.yaml").unwrap();
        let sources = Sources::load(&document, dir.path(), &IndexMap::<String, PathBuf>::new());
        let runner = Runner::new(document, &sources, &IndexMap::new());
        group.bench_function(format!("{label}/arazzo"), |b| {
            b.iter(|| {
                let ran = runtime
                    .block_on(runner.run(&engine, "w", Map::new(), RunOptions::new()))
                    .unwrap();
                assert_eq!(ran.run.status, RunStatus::Success);
            });
        });
        let workflow = workflow(steps, chained);
        group.bench_function(format!("{label}/wayline"), |b| {
            b.iter(|| {
                let run = runtime
                    .block_on(engine.run(&workflow, RunOptions::new()))
                    .unwrap();
                assert_eq!(run.status, RunStatus::Success);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);

//! Engine benchmarks (numbers and commands in `docs/benchmarks.md`):
//! - `overhead/*`: 1,000-step chain and 1,000-wide fan-out against a loopback server that
//!   answers at once, and the same against the scripted transport (no sockets): the time per
//!   step is the engine's overhead.
//! - `makespan/200x20ms`: 200 independent steps, 20 ms server latency, `max_parallel` 50; the
//!   ideal is 4 waves × 20 ms = 80 ms.
//! - `prepare/chain_*` and `dry_run/chain_*`: validating and compiling, and previewing, chains
//!   of 10,000 and 40,000 steps each mapping the one before: linear in the steps.
//! - `expression/*`: a `when` of two nested loops over 999 input numbers (999,000 iterations,
//!   just inside the default budget of 1,000,000) in a one-step run, against the same expression
//!   run by the `cel` crate alone: what a whole budget takes, and what metering it costs.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use wayline_core::{
    HttpResponse, MemoryCatalog, RunStatus, Step, StepStatus, ToolDefinition, Workflow,
};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, PreparedWorkflow, ReqwestTransport, RunOptions};

fn chain(count: usize) -> Workflow {
    let mut workflow = Workflow::new("chain", "chain");
    for index in 0..count {
        let mut step = Step::new(format!("s{index}"), "echo");
        if index > 0 {
            step = step.map("previous", format!("s{}.n", index - 1));
        }
        workflow.steps.push(step);
    }
    workflow
}

fn fan_out(count: usize) -> Workflow {
    let mut workflow = Workflow::new("fan", "fan-out");
    for index in 0..count {
        workflow.steps.push(Step::new(format!("s{index}"), "echo"));
    }
    workflow
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn engine(
    base: &str,
    transport: Option<Arc<dyn wayline_core::Transport>>,
    max_parallel: usize,
) -> Engine {
    let catalog = MemoryCatalog::from_tools([ToolDefinition::new("echo", base)]);
    let transport = transport.unwrap_or_else(|| Arc::new(ReqwestTransport::new().unwrap()));
    Engine::builder(Arc::new(catalog))
        .transport(transport)
        .max_parallel(max_parallel)
        .build()
}

fn run_once(runtime: &tokio::runtime::Runtime, engine: &Engine, prepared: &PreparedWorkflow) {
    let run = runtime
        .block_on(engine.run_prepared(prepared, RunOptions::new()))
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
}

fn overhead(c: &mut Criterion) {
    let runtime = runtime();
    let server = runtime
        .block_on(MockServer::start_unrecorded(|_| {
            Reply::json(200, serde_json::json!({"n": 1}))
        }))
        .unwrap();
    let scripted: Arc<dyn wayline_core::Transport> = Arc::new(
        ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, r#"{"n": 1}"#))),
    );
    let mut group = c.benchmark_group("overhead");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    // The floor: 1,000 sequential GETs with the same transport and no engine at all.
    let transport = ReqwestTransport::new().unwrap();
    let url = server.url("/");
    group.bench_function("chain_1000/bare_transport", |b| {
        b.iter(|| {
            runtime.block_on(async {
                for _ in 0..1_000 {
                    let request = wayline_core::HttpRequest::new("GET", url.clone());
                    let response = wayline_core::Transport::send(&transport, request)
                        .await
                        .unwrap();
                    assert_eq!(response.status, 200);
                }
            });
        });
    });
    for (name, workflow) in [
        ("chain_1000", chain(1_000)),
        ("fan_out_1000", fan_out(1_000)),
    ] {
        let loopback = engine(&server.url(""), None, 50);
        let prepared = loopback.prepare(&workflow).unwrap();
        group.bench_function(format!("{name}/loopback"), |b| {
            b.iter(|| run_once(&runtime, &loopback, &prepared));
        });
        let in_memory = engine("http://api.test", Some(Arc::clone(&scripted)), 50);
        let prepared = in_memory.prepare(&workflow).unwrap();
        group.bench_function(format!("{name}/scripted"), |b| {
            b.iter(|| run_once(&runtime, &in_memory, &prepared));
        });
    }
    group.finish();
}

/// A server with its own runtime on its own thread, as a real remote service would be: its
/// timers and sockets do not wait behind the engine's tasks. Lives until the process ends.
fn server_thread(latency: Duration) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let server = MockServer::start_unrecorded(move |_| {
                Reply::json(200, serde_json::json!({"n": 1})).latency(latency)
            })
            .await
            .unwrap();
            sender.send(server.url("")).unwrap();
            std::future::pending::<()>().await;
        });
    });
    receiver.recv().unwrap()
}

fn makespan(c: &mut Criterion) {
    // The engine's side on one thread, the server on another: the two cores, one each.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server_url = server_thread(Duration::from_millis(20));
    let engine = engine(&server_url, None, 50);
    let prepared = engine.prepare(&fan_out(200)).unwrap();
    let mut group = c.benchmark_group("makespan");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    // What "20 ms latency" really is with this server: one request, alone.
    let single = ReqwestTransport::new().unwrap();
    let single_url = format!("{server_url}/");
    group.bench_function("one_request_20ms", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let request = wayline_core::HttpRequest::new("GET", single_url.clone());
                let response = wayline_core::Transport::send(&single, request)
                    .await
                    .unwrap();
                assert_eq!(response.status, 200);
            });
        });
    });
    // The floor on this machine: the same 200 requests, 50 at a time, with no engine.
    let transport = ReqwestTransport::new().unwrap();
    let url = format!("{server_url}/");
    group.bench_function("200x20ms_parallel50/bare_transport", |b| {
        b.iter(|| {
            runtime.block_on(async {
                use futures_util::StreamExt;
                futures_util::stream::iter(0..200)
                    .map(|_| {
                        let request = wayline_core::HttpRequest::new("GET", url.clone());
                        wayline_core::Transport::send(&transport, request)
                    })
                    .buffer_unordered(50)
                    .for_each(|response| async move {
                        assert_eq!(response.unwrap().status, 200);
                    })
                    .await;
            });
        });
    });
    group.bench_function("200x20ms_parallel50", |b| {
        b.iter(|| run_once(&runtime, &engine, &prepared));
    });
    group.finish();
}

fn prepare_and_dry_run(c: &mut Criterion) {
    let runtime = runtime();
    let engine = engine("http://127.0.0.1:9", None, 8);
    let mut group = c.benchmark_group("prepare");
    group.sample_size(10);
    for count in [10_000, 40_000] {
        let workflow = chain(count);
        group.bench_function(format!("chain_{count}"), |b| {
            b.iter(|| engine.prepare(&workflow).unwrap());
        });
    }
    group.finish();
    let mut group = c.benchmark_group("dry_run");
    group.sample_size(10);
    for count in [10_000, 40_000] {
        let workflow = chain(count);
        group.bench_function(format!("chain_{count}"), |b| {
            b.iter(|| {
                let planned = runtime
                    .block_on(engine.dry_run(&workflow, Default::default()))
                    .unwrap();
                assert_eq!(planned.len(), count);
            });
        });
    }
    group.finish();
}

/// 999 + 999 × 999 = 999,000 loop iterations, false.
const NESTED_LOOPS: &str = "inputs.items.map(x, inputs.items.filter(y, y == x).size()).size() == 0";

fn expression(c: &mut Criterion) {
    let runtime = runtime();
    let engine = engine("http://127.0.0.1:9", None, 8);
    let items: Vec<u32> = (0..999).collect();
    let mut workflow = chain(1);
    workflow.steps[0].when = Some(NESTED_LOOPS.to_owned());
    let prepared = engine.prepare(&workflow).unwrap();
    let mut group = c.benchmark_group("expression");
    group.sample_size(10);
    group.bench_function("nested_999/metered_run", |b| {
        b.iter(|| {
            let options = RunOptions::new().input("items", serde_json::json!(items));
            let run = runtime
                .block_on(engine.run_prepared(&prepared, options))
                .unwrap();
            assert_eq!(run.step_results[0].status, StepStatus::Skipped);
        });
    });
    let program = cel::Program::compile(NESTED_LOOPS).unwrap();
    let mut context = cel::Context::default();
    let mut inputs = std::collections::HashMap::new();
    inputs.insert("items".to_owned(), items.clone());
    context.add_variable("inputs", inputs).unwrap();
    group.bench_function("nested_999/cel_alone", |b| {
        b.iter(|| assert_eq!(program.execute(&context).unwrap(), cel::Value::Bool(false)));
    });
    group.finish();
}

criterion_group!(benches, overhead, makespan, prepare_and_dry_run, expression);
criterion_main!(benches);

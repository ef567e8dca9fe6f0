//! `wayline run` on an Arazzo document against the same workflow in wayline's own format
//! (numbers and commands in `docs/benchmarks.md`), each a child process of the built binary
//! against a loopback server on its own thread:
//! - `chain_300/*`: 300 steps, each sending the output of the one before; the server answers at
//!   once, so the time is the process, the loading, the engine and 300 round trips.
//! - `fan_out_200x20ms/*`: 200 independent steps, the server holding each answer 20 ms,
//!   `--max-parallel 50`: the ideal is 4 waves × 20 ms = 80 ms plus the process.
//! - `empty/*`: a one-step document and workflow, for the cost of starting the process and
//!   loading.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use wayline_executor::testing::{MockServer, Reply};

/// The API both formats call: `/echo?previous=N` answers `{"n": N + 1}`, `/slow` after 20 ms.
const API: &str = r#"openapi: 3.1.0
info: {title: Bench, version: '1'}
paths:
  /echo:
    get:
      operationId: echo
      parameters: [{name: previous, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}}
  /slow:
    get:
      operationId: slow
      responses: {'200': {description: ok}}
"#;

fn server(runtime: &tokio::runtime::Runtime) -> MockServer {
    runtime
        .block_on(MockServer::start_unrecorded(|request| {
            let previous: i64 = request
                .query("previous")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let reply = Reply::json(200, serde_json::json!({"n": previous + 1}));
            if request.path() == "/slow" {
                reply.latency(Duration::from_millis(20))
            } else {
                reply
            }
        }))
        .unwrap()
}

/// Writes the chain, the fan-out and the one-step document in both formats under `dir`.
fn write_documents(dir: &Path, base: &str) {
    std::fs::write(dir.join("api.yaml"), API).unwrap();
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("echo.yaml"),
        format!("id: echo\nname: Echo\nbase_url: {base}\npath: /echo\nrequest: {{query_params: [previous]}}\n"),
    )
    .unwrap();
    std::fs::write(
        tools.join("slow.yaml"),
        format!("id: slow\nname: Slow\nbase_url: {base}\npath: /slow\n"),
    )
    .unwrap();
    let header = "arazzo: 1.0.1\ninfo: {title: Bench, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: w\n    steps:\n";
    let mut chain_arazzo = header.to_owned();
    let mut chain_wayline = "id: w\nname: chain\nsteps:\n".to_owned();
    for index in 0..300 {
        let previous = if index == 0 {
            "0".to_owned()
        } else {
            format!("$steps.s{}.outputs.n", index - 1)
        };
        chain_arazzo.push_str(&format!(
            "      - {{stepId: s{index}, operationId: echo, parameters: [{{name: previous, in: query, value: '{previous}'}}], outputs: {{n: $response.body#/n}}}}\n"
        ));
        let mapping = if index == 0 {
            "{previous: 0}".to_owned()
        } else {
            format!("{{previous: s{}.n}}", index - 1)
        };
        chain_wayline.push_str(&format!(
            "  - {{id: s{index}, tool_id: echo, input_mapping: {mapping}}}\n"
        ));
    }
    std::fs::write(dir.join("chain.arazzo.yaml"), chain_arazzo).unwrap();
    std::fs::write(dir.join("chain.yaml"), chain_wayline).unwrap();
    let mut fan_arazzo = header.to_owned();
    let mut fan_wayline = "id: w\nname: fan\nsteps:\n".to_owned();
    for index in 0..200 {
        fan_arazzo.push_str(&format!(
            "      - {{stepId: s{index}, operationId: slow}}\n"
        ));
        fan_wayline.push_str(&format!("  - {{id: s{index}, tool_id: slow}}\n"));
    }
    std::fs::write(dir.join("fan.arazzo.yaml"), fan_arazzo).unwrap();
    std::fs::write(dir.join("fan.yaml"), fan_wayline).unwrap();
    std::fs::write(
        dir.join("one.arazzo.yaml"),
        format!("{header}      - {{stepId: s0, operationId: echo}}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("one.yaml"),
        "id: w\nname: one\nsteps:\n  - {id: s0, tool_id: echo}\n",
    )
    .unwrap();
}

/// Runs `wayline run` with `args`; it must succeed.
fn wayline(args: &[String]) {
    let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn both(dir: &Path, name: &str, base: &str, extra: &[&str]) -> (Vec<String>, Vec<String>) {
    let path = |file: String| -> String { dir.join(file).to_string_lossy().into_owned() };
    let mut arazzo = vec![
        "run".to_owned(),
        path(format!("{name}.arazzo.yaml")),
        "--server".to_owned(),
        format!("api={base}"),
    ];
    let mut own = vec![
        "run".to_owned(),
        path(format!("{name}.yaml")),
        "--tools".to_owned(),
        path("tools".to_owned()),
    ];
    for flag in extra {
        arazzo.push((*flag).to_owned());
        own.push((*flag).to_owned());
    }
    (arazzo, own)
}

fn cli(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = server(&runtime);
    let scratch = tempfile::tempdir().unwrap();
    let dir: PathBuf = scratch.path().to_owned();
    let base = server.url("");
    write_documents(&dir, &base);
    let mut group = c.benchmark_group("wayline_run");
    group.sample_size(20);
    for (name, extra) in [
        ("one", &[][..]),
        ("chain", &[][..]),
        ("fan", &["--max-parallel", "50"][..]),
    ] {
        let label = match name {
            "one" => "empty",
            "chain" => "chain_300",
            _ => "fan_out_200x20ms",
        };
        let (arazzo, own) = both(&dir, name, &base, extra);
        group.bench_function(format!("{label}/arazzo"), |b| b.iter(|| wayline(&arazzo)));
        group.bench_function(format!("{label}/wayline"), |b| b.iter(|| wayline(&own)));
    }
    group.finish();
}

criterion_group!(benches, cli);
criterion_main!(benches);

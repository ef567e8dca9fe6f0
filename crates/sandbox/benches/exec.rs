//! Python exec through the local provider and through the loopback server (goal: a warm round trip
//! under 5 ms median locally), and a cold start to the first result (goal: under 300 ms; Bay's is
//! 2–5 s with a cached image). Numbers and the command in `docs/benchmarks.md`.
//!
//! `cargo bench -p wayline-sandbox --bench exec`

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use wayline_executor::ReqwestTransport;
use wayline_sandbox::local::IsolationMode;
use wayline_sandbox::server::{BayServer, ServeOptions};
use wayline_sandbox::{
    BayClient, BayConfig, CreateSandbox, LocalConfig, LocalProvider, PythonExec, SandboxProvider,
};

fn exec(c: &mut Criterion) {
    if !wayline_testkit::python3_available("the sandbox benchmarks") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local =
        LocalProvider::open(LocalConfig::new(dir.path()).isolation(IsolationMode::None)).unwrap();
    let server = runtime
        .block_on(BayServer::loopback(
            Arc::new(local.clone()),
            ServeOptions::default().token("bench"),
        ))
        .unwrap();
    let client = BayClient::new(
        BayConfig::new(server.url()).token("bench"),
        Arc::new(ReqwestTransport::new().unwrap()),
    );
    let targets: [(&str, Arc<dyn SandboxProvider>); 2] = [
        ("local", Arc::new(local.clone())),
        ("loopback_http", Arc::new(client)),
    ];
    let code = PythonExec::new("x = 40 + 2\nx");
    let mut group = c.benchmark_group("python_exec");
    group.measurement_time(Duration::from_secs(5));
    for (name, provider) in &targets {
        let id = runtime
            .block_on(provider.create(&CreateSandbox::default()))
            .unwrap()
            .id;
        // Warm: the session is started by a first exec, then measured.
        let first = runtime.block_on(provider.python_exec(&id, &code)).unwrap();
        assert_eq!(first.output, "42");
        group.bench_function(format!("warm_{name}"), |b| {
            b.iter(|| runtime.block_on(provider.python_exec(&id, &code)).unwrap());
        });
    }
    group.sample_size(20);
    for (name, provider) in &targets {
        // Cold: create, the first exec (which starts Python), delete.
        group.bench_function(format!("cold_start_to_first_result_{name}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let id = provider.create(&CreateSandbox::default()).await.unwrap().id;
                    let result = provider.python_exec(&id, &code).await.unwrap();
                    assert_eq!(result.output, "42");
                    provider.delete(&id).await.unwrap();
                });
            });
        });
    }
    group.finish();
}

criterion_group!(benches, exec);
criterion_main!(benches);

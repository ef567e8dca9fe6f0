//! The cost of durability (numbers and command in `docs/benchmarks.md`): the 1,000-step chain
//! of the `engine` benchmark against a loopback server, without a run store and with each
//! store — PostgreSQL too, on a throwaway cluster that syncs its commits as a production server
//! does, when PostgreSQL is installed. The configurations take turns, 7 rounds (the file store:
//! one run); the median is printed, per run and per step.
//!
//! `cargo bench -p wayline-executor --bench durability [-- NAME]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use wayline_core::{MemoryCatalog, RunStatus, RunStore, Step, ToolDefinition, Workflow};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, ReqwestTransport, RunOptions};
use wayline_store::{Durability, FileStore, MemoryStore, PostgresStore, SqliteStore};

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

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(MockServer::start_unrecorded(|_| {
            Reply::json(200, serde_json::json!({"n": 1}))
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cluster = wayline_testkit::postgres::start_durable("the PostgreSQL store's configurations");
    let mut stores: Vec<(&str, Option<Arc<dyn RunStore>>)> = vec![
        ("no store", None),
        ("memory store", Some(Arc::new(MemoryStore::new()))),
        (
            "sqlite, synchronous=NORMAL (process-safe, the default)",
            Some(Arc::new(
                SqliteStore::open_with(dir.path().join("normal.db"), Durability::Process).unwrap(),
            )),
        ),
        (
            "sqlite, synchronous=FULL (power-safe)",
            Some(Arc::new(
                SqliteStore::open_with(dir.path().join("full.db"), Durability::Power).unwrap(),
            )),
        ),
        (
            "file store",
            Some(Arc::new(FileStore::open(dir.path().join("files")).unwrap())),
        ),
    ];
    if let Some(cluster) = &cluster {
        let url = cluster.url("postgres");
        stores.push((
            "postgres on loopback, synchronous_commit=on (the server's default)",
            Some(Arc::new(
                runtime.block_on(PostgresStore::connect(&url)).unwrap(),
            )),
        ));
        cluster.psql("postgres", "CREATE DATABASE relaxed");
        cluster.psql(
            "postgres",
            "ALTER DATABASE relaxed SET synchronous_commit = off",
        );
        stores.push((
            "postgres on loopback, synchronous_commit=off (a crash of the server loses the last commits)",
            Some(Arc::new(
                runtime
                    .block_on(PostgresStore::connect(&cluster.url("relaxed")))
                    .unwrap(),
            )),
        ));
    }
    let workflow = chain(1_000);
    // `cargo bench ... -- NAME` runs only the configurations whose name contains NAME.
    let only = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    let configurations: Vec<_> = stores
        .into_iter()
        .filter(|(name, _)| {
            only.as_ref()
                .is_none_or(|only| name.contains(only.as_str()))
        })
        .map(|(name, store)| {
            let catalog = MemoryCatalog::from_tools([ToolDefinition::new("echo", server.url(""))]);
            let mut builder = Engine::builder(Arc::new(catalog))
                .transport(Arc::new(ReqwestTransport::new().unwrap()));
            if let Some(store) = store {
                builder = builder.run_store(store);
            }
            let engine = builder.build();
            let prepared = engine.prepare(&workflow).unwrap();
            (name, engine, prepared)
        })
        .collect();
    // Round robin, so a noisy moment on the machine hits every configuration alike.
    let rounds = 7;
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); configurations.len()];
    for _ in 0..rounds {
        for (index, (name, engine, prepared)) in configurations.iter().enumerate() {
            // The file store rewrites the run file on every save: one round is enough to see it.
            if name.contains("file") && !times[index].is_empty() {
                continue;
            }
            let started = Instant::now();
            let run = runtime
                .block_on(engine.run_prepared(prepared, RunOptions::new()))
                .unwrap();
            assert_eq!(run.status, RunStatus::Success);
            times[index].push(started.elapsed());
        }
    }
    for ((name, _, _), mut times) in configurations.iter().zip(times) {
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "chain_1000, {name}: {:.1} ms per run, {:.0} µs per step (median of {})",
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / 1_000.0,
            times.len()
        );
    }
}

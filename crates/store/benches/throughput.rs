//! Step results saved per second (numbers and command in `docs/benchmarks.md`):
//! 10,000 results from 100 concurrent writers (100 runs × 100 steps) into SQLite with each
//! durability, and 2,000 (20 runs × 100 steps) into the file store, which rewrites a run's
//! file on every save.
//!
//! `cargo bench -p wayline-store --bench throughput`

use std::sync::Arc;
use std::time::Instant;

use wayline_core::{Run, RunStore, StepResult, StepStatus};
use wayline_store::{Durability, FileStore, SqliteStore};

async fn saves_per_second(store: Arc<dyn RunStore>, runs: usize, steps: usize) -> f64 {
    for run in 0..runs {
        store
            .create_run(&Run::new(format!("r{run}"), "w"))
            .await
            .unwrap();
    }
    let started = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for run in 0..runs {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            for step in 0..steps {
                let mut result = StepResult::pending(format!("s{step}"));
                result.status = StepStatus::Success;
                result.output_data =
                    serde_json::json!({"n": step, "city": "Lisbon", "temperature": 18.5});
                store.save_step(&format!("r{run}"), &result).await.unwrap();
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    let elapsed = started.elapsed();
    (runs * steps) as f64 / elapsed.as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for (name, durability) in [
            ("sqlite, synchronous=FULL (power-safe)", Durability::Power),
            (
                "sqlite, synchronous=NORMAL (process-safe)",
                Durability::Process,
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open_with(dir.path().join("bench.db"), durability).unwrap();
            let rate = saves_per_second(Arc::new(store), 100, 100).await;
            println!("{name}: {rate:.0} step results/s (10,000 from 100 concurrent runs)");
        }
        for (name, durability) in [
            ("sqlite, synchronous=FULL, one writer", Durability::Power),
            (
                "sqlite, synchronous=NORMAL, one writer",
                Durability::Process,
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open_with(dir.path().join("bench.db"), durability).unwrap();
            let rate = saves_per_second(Arc::new(store), 1, 2_000).await;
            println!("{name}: {rate:.0} step results/s (2,000 saved one after another)");
        }
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        let rate = saves_per_second(Arc::new(store), 20, 100).await;
        println!("file store: {rate:.0} step results/s (2,000 from 20 concurrent runs)");
    });
}

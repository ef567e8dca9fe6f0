use std::sync::Arc;

use wayline_store::{FileStore, MemoryStore, SqliteStore, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conforms() {
    let store = Arc::new(MemoryStore::new());
    conformance::workflow_store(store.clone()).await;
    conformance::run_store(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(dir.path().join("store")).unwrap());
    conformance::workflow_store(store.clone()).await;
    conformance::run_store(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("nested/wayline.db")).unwrap());
    conformance::workflow_store(store.clone()).await;
    conformance::run_store(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_safe_sqlite_store_conforms() {
    // Every write through the writer thread (the process-safe default also commits inline).
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open_with(dir.path().join("full.db"), wayline_store::Durability::Power)
            .unwrap(),
    );
    conformance::workflow_store(store.clone()).await;
    conformance::run_store(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_sqlite_store_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wayline.db");
    let run = {
        let store = SqliteStore::open(&path).unwrap();
        let mut run = wayline_core::Run::new("r1", "w");
        run.step_results
            .push(wayline_core::StepResult::pending("a"));
        wayline_core::RunStore::create_run(&store, &run)
            .await
            .unwrap();
        run
    };
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        wayline_core::RunStore::run(&store, "r1").await.unwrap(),
        Some(run)
    );
}

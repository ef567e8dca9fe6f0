use std::sync::Arc;

use wayline_core::RunStore;
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

#[tokio::test]
async fn a_write_lock_held_by_another_process_never_blocks_the_async_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let store = SqliteStore::open(&path).unwrap();
    let mut run = wayline_core::Run::new("r1", "w");
    run.step_results
        .push(wayline_core::StepResult::pending("a"));
    store.create_run(&run).await.unwrap();

    // Another connection (another process, as far as SQLite can tell) takes the write lock
    // and keeps it until this runtime's other task says so.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        other.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();

    // On this single-threaded runtime, the release can only be sent if the save does not
    // occupy the thread while it waits for the lock (it would fail after SQLite's busy
    // timeout instead).
    let mut step = wayline_core::StepResult::pending("a");
    step.status = wayline_core::StepStatus::Success;
    let (saved, ()) = tokio::join!(store.save_step("r1", &step), async {
        tokio::task::yield_now().await;
        release_tx.send(()).unwrap();
    });
    saved.unwrap();
    holder.join().unwrap();
    let stored = store.run("r1").await.unwrap().unwrap();
    assert_eq!(
        stored.step_results[0].status,
        wayline_core::StepStatus::Success
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms() {
    let Some(cluster) = wayline_testkit::postgres::start("the PostgreSQL store conformance test")
    else {
        return;
    };
    let store = Arc::new(wayline_store::PostgresStore::open(&cluster.url("postgres")).unwrap());
    conformance::workflow_store(store.clone()).await;
    conformance::run_store(store).await;
    // The queue, on a database of its own (the run store's suite leaves runs behind).
    cluster.psql("postgres", "CREATE DATABASE queue");
    let store = Arc::new(wayline_store::PostgresStore::open(&cluster.url("queue")).unwrap());
    conformance::run_queue(store.clone(), store.clone(), store).await;
}

/// A fire record older than the time kept is pruned by whoever fires next; the schedule's
/// counts stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_prunes_old_fire_records_and_keeps_the_counts() {
    use wayline_core::{Workflow, WorkflowStatus, WorkflowStore, store::StoredWorkflow};
    use wayline_store::queue::RunQueue;
    use wayline_store::schedule::{Missed, Schedule, Trigger};

    let Some(cluster) = wayline_testkit::postgres::start("the PostgreSQL fire pruning test") else {
        return;
    };
    let store = wayline_store::PostgresStore::open(&cluster.url("postgres")).unwrap();
    let mut ticker = StoredWorkflow::new(Workflow::new("ticker", "Ticker"), 1, "sha256:t");
    ticker.workflow.status = WorkflowStatus::Active;
    store.insert_workflow(&ticker).await.unwrap();
    let mut trigger = Trigger::new("ticker", Schedule::every("1s").unwrap());
    trigger.missed = Missed::CatchUp;
    store.sync_schedules(&[trigger]).await.unwrap();
    let fire_after = async |wait_ms: u64| {
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
        store.fire_schedules().await.unwrap().len()
    };
    let first = fire_after(1_200).await;
    assert!(first >= 1);
    cluster.psql(
        "postgres",
        "UPDATE wayline_schedule_fires SET fired_at = now() - interval '31 days'",
    );
    let second = fire_after(1_100).await;
    assert!(second >= 1);
    let kept: usize = cluster
        .psql("postgres", "SELECT COUNT(*) FROM wayline_schedule_fires")
        .parse()
        .unwrap();
    assert_eq!(kept, second, "the aged records are gone, the new ones kept");
    let schedules = store.schedules().await.unwrap();
    assert_eq!(
        (schedules[0].fired, schedules[0].skipped),
        ((first + second) as u64, 0)
    );
}

/// A store that takes a second run of the same id instead of refusing it.
#[derive(Debug, Default)]
struct Forgetful(MemoryStore);

#[async_trait::async_trait]
impl RunStore for Forgetful {
    async fn create_run(&self, run: &wayline_core::Run) -> Result<(), wayline_core::StoreError> {
        match self.0.create_run(run).await {
            Err(error) if error.kind() == wayline_core::StoreErrorKind::Conflict => Ok(()),
            other => other,
        }
    }
    async fn save_step(
        &self,
        run_id: &str,
        result: &wayline_core::StepResult,
    ) -> Result<(), wayline_core::StoreError> {
        self.0.save_step(run_id, result).await
    }
    async fn finish_run(&self, run: &wayline_core::Run) -> Result<(), wayline_core::StoreError> {
        self.0.finish_run(run).await
    }
    async fn run(&self, id: &str) -> Result<Option<wayline_core::Run>, wayline_core::StoreError> {
        self.0.run(id).await
    }
    async fn list_runs(
        &self,
        query: &wayline_core::RunQuery,
    ) -> Result<wayline_core::RunPage, wayline_core::StoreError> {
        self.0.list_runs(query).await
    }
}

#[tokio::test]
async fn a_broken_store_fails_the_suite_with_the_rule_it_broke() {
    let failed = tokio::spawn(conformance::run_store(Arc::new(Forgetful::default())))
        .await
        .unwrap_err();
    let panic = failed.into_panic();
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains("create_run of an existing id is refused (Conflict)"),
        "{message}"
    );
}

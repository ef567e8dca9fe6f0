use std::sync::Arc;

use wayline_core::store::{RunQuery, StoreErrorKind};
use wayline_core::{Run, RunStore, WorkflowStore};
use wayline_store::{FileStore, SqliteStore};

#[tokio::test]
async fn a_damaged_run_file_is_reported_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    store.create_run(&Run::new("good", "w")).await.unwrap();
    store.create_run(&Run::new("cut", "w")).await.unwrap();
    let path = dir.path().join("runs/cut.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();

    let error = store.run("cut").await.unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(error.message().contains("runs/cut.json"), "{error}");
    assert!(error.message().contains("line"), "{error}");
    let listing = store.list_runs(&RunQuery::new()).await.unwrap_err();
    assert_eq!(listing.kind(), StoreErrorKind::Corrupt, "{listing}");
    // Writing to it is refused too, and leaves the damaged file for a person to look at.
    let write = store
        .save_step("cut", &wayline_core::StepResult::pending("a"))
        .await
        .unwrap_err();
    assert_eq!(write.kind(), StoreErrorKind::Corrupt);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text[..text.len() / 2]
    );
    assert!(store.run("good").await.unwrap().is_some());
}

#[tokio::test]
async fn stray_temporary_files_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    store.create_run(&Run::new("r", "w")).await.unwrap();
    // What a writer killed between write and rename leaves behind.
    std::fs::write(
        dir.path().join("runs/.r.json.123-0.tmp"),
        "{\"id\": \"r\", ",
    )
    .unwrap();
    let page = store.list_runs(&RunQuery::new()).await.unwrap();
    assert_eq!(page.runs.len(), 1);
}

#[tokio::test]
async fn a_damaged_workflow_version_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("workflows/w")).unwrap();
    std::fs::write(dir.path().join("workflows/w/v1.json"), "[1, 2").unwrap();
    let error = store.workflow("w", None).await.unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(error.message().contains("workflows/w/v1.json"), "{error}");
    assert_eq!(
        store.list_workflows().await.unwrap_err().kind(),
        StoreErrorKind::Corrupt
    );
}

#[tokio::test]
async fn a_damaged_sqlite_row_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wayline.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let mut run = Run::new("r", "w");
    run.step_results
        .push(wayline_core::StepResult::pending("a"));
    store.create_run(&run).await.unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute(
            "UPDATE step_results SET result = '{\"step_id\": 3' WHERE run_id = 'r'",
            [],
        )
        .unwrap();
    drop(connection);
    let error = store.run("r").await.unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    assert!(error.message().contains("step `a` of run `r`"), "{error}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wayline.db");
    std::fs::write(
        &path,
        "this is not a SQLite database, just text that is long enough",
    )
    .unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Unavailable);
    assert!(error.message().contains("wayline.db"), "{error}");
}

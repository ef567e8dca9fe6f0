//! Every knowledge store passes the conformance suite.

use std::sync::Arc;

use wayline_knowledge::learn::{AttemptSeen, RunObservation};
use wayline_knowledge::{
    KnowledgeStore, MemoryKnowledge, SqliteKnowledge, YamlKnowledge, conformance,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conforms() {
    conformance::knowledge_store(Arc::new(MemoryKnowledge::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_directory_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::knowledge_store(Arc::new(YamlKnowledge::new(dir.path()))).await;
    // The directory layout: `knowledge/<sut>/` with the three files.
    for file in ["patterns.yaml", "pitfalls.yaml", "stats.yaml"] {
        assert!(
            dir.path().join("knowledge/tidbx").join(file).is_file(),
            "{file}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::knowledge_store(Arc::new(
        SqliteKnowledge::open(dir.path().join("wayline.db")).unwrap(),
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_conforms_and_concurrent_writers_lose_nothing() {
    let Some(cluster) = wayline_testkit::postgres::start("the PostgreSQL knowledge store test")
    else {
        return;
    };
    let url = cluster.url("postgres");
    conformance::knowledge_store(Arc::new(
        wayline_knowledge::PostgresKnowledge::open(&url).unwrap(),
    ))
    .await;
    // Eight stores (eight hosts, as far as the server can tell), all learning about a SUT
    // nobody wrote before.
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let store = wayline_knowledge::PostgresKnowledge::open(&url).unwrap();
            tokio::spawn(async move {
                for _ in 0..10 {
                    let mut seen = RunObservation::default();
                    seen.attempts
                        .push(AttemptSeen::new("GetCluster", true, 5.0));
                    store
                        .update("fresh", Box::new(move |knowledge| knowledge.learn(&seen)))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let store = wayline_knowledge::PostgresKnowledge::open(&url).unwrap();
    let knowledge = store.load("fresh").await.unwrap();
    assert_eq!(knowledge.stats.operations["GetCluster"].successes, 80);
}

/// Set in a child process: the YAML directory it records into.
const CHILD_DIR: &str = "WAYLINE_KNOWLEDGE_CHILD_DIR";
const RECORDS_PER_PROCESS: u64 = 40;

/// In a child process (see below): records one attempt at a time, `RECORDS_PER_PROCESS`
/// times. Run normally it does nothing.
#[test]
fn child_process_recorder() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = YamlKnowledge::new(dir);
    runtime.block_on(async {
        for _ in 0..RECORDS_PER_PROCESS {
            let mut seen = RunObservation::default();
            seen.attempts
                .push(AttemptSeen::new("GetCluster", true, 5.0));
            store
                .update("tidbx", Box::new(move |knowledge| knowledge.learn(&seen)))
                .await
                .unwrap();
        }
    });
}

#[test]
fn two_processes_recording_into_one_yaml_directory_lose_no_count() {
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "stores::child_process_recorder", "--nocapture"])
                .env(CHILD_DIR, dir.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let knowledge = runtime
        .block_on(YamlKnowledge::new(dir.path()).load("tidbx"))
        .unwrap();
    let stats = &knowledge.stats.operations["GetCluster"];
    assert_eq!(
        stats.total_attempts,
        2 * RECORDS_PER_PROCESS,
        "no count lost"
    );
    assert_eq!(stats.successes, 2 * RECORDS_PER_PROCESS);
}

#[tokio::test]
async fn a_damaged_file_is_reported_with_its_line_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let sut = dir.path().join("knowledge/tidbx");
    std::fs::create_dir_all(&sut).unwrap();
    let damaged = "pitfalls:\n  - id: p1\n    name: n\n    trigger: {operation_id: [unclosed\n";
    std::fs::write(sut.join("pitfalls.yaml"), damaged).unwrap();
    let store = YamlKnowledge::new(dir.path());
    let error = store.load("tidbx").await.unwrap_err();
    assert_eq!(error.kind(), wayline_core::store::StoreErrorKind::Corrupt);
    let message = error.to_string();
    assert!(
        message.contains("pitfalls.yaml:4:"),
        "file and line: {message}"
    );
    // An update refuses rather than replacing what it cannot read.
    let refused = store
        .update("tidbx", Box::new(|knowledge| knowledge.pitfalls.clear()))
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), wayline_core::store::StoreErrorKind::Corrupt);
    assert_eq!(
        std::fs::read_to_string(sut.join("pitfalls.yaml")).unwrap(),
        damaged
    );
    // An unknown top-level key is refused too, not dropped.
    std::fs::write(sut.join("pitfalls.yaml"), "pitfals: []\n").unwrap();
    let error = store.load("tidbx").await.unwrap_err().to_string();
    assert!(error.contains("pitfals"), "{error}");
}

#[test]
fn a_database_from_a_newer_wayline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wayline.db");
    drop(SqliteKnowledge::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute("UPDATE wayline_knowledge_schema SET version = 99", [])
        .unwrap();
    drop(connection);
    let error = SqliteKnowledge::open(&path).unwrap_err().to_string();
    assert!(error.contains("schema version 99"), "{error}");
    assert!(error.contains("use a newer wayline"), "{error}");
}

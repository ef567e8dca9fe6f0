//! Every knowledge store passes the conformance suite.

use std::sync::Arc;

use wayline_knowledge::{MemoryKnowledge, SqliteKnowledge, YamlKnowledge, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_conforms() {
    conformance::knowledge_store(Arc::new(MemoryKnowledge::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yaml_directory_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::knowledge_store(Arc::new(YamlKnowledge::new(dir.path()))).await;
    // The seed's layout.
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

//! The [`WorkflowStore`] contract.

use std::sync::Arc;

use wayline_core::store::{StoreErrorKind, StoredWorkflow};
use wayline_core::{Step, Workflow, WorkflowStatus, WorkflowStore};

pub(super) fn version(id: &str, number: u32) -> StoredWorkflow {
    let mut workflow = Workflow::new(id, format!("{id} v{number}"));
    workflow.steps.push(
        Step::new("first", "tool_a")
            .map("query", "$input.q")
            .map("n", number.to_string()),
    );
    workflow
        .steps
        .push(Step::new("second", "tool_b").map("x", "first.items.0"));
    StoredWorkflow::new(workflow, number, format!("sha256:{id}{number}"))
}

/// Checks the [`WorkflowStore`] contract on an empty store.
pub async fn workflow_store(store: Arc<dyn WorkflowStore>) {
    assert_eq!(
        store
            .workflow("w", None)
            .await
            .expect("workflow of an unknown id answers None, not an error"),
        None,
        "empty store"
    );
    assert!(
        store
            .workflow_versions("w")
            .await
            .expect("workflow_versions of an unknown id succeeds")
            .is_empty(),
        "an unknown workflow has no versions"
    );
    assert!(
        store
            .list_workflows()
            .await
            .expect("list_workflows on an empty store succeeds")
            .is_empty(),
        "an empty store lists no workflows"
    );

    let first = version("w", 1);
    store
        .insert_workflow(&first)
        .await
        .expect("insert_workflow of a new version succeeds");
    assert_eq!(
        store
            .workflow("w", Some(1))
            .await
            .expect("workflow of a stored version succeeds")
            .as_ref(),
        Some(&first),
        "a version reads back as written"
    );
    let again = store
        .insert_workflow(&first)
        .await
        .expect_err("insert_workflow of an existing id and version is refused (Conflict)");
    assert_eq!(
        again.kind(),
        StoreErrorKind::Conflict,
        "an existing id and version is a Conflict: {again}"
    );

    let second = version("w", 2);
    store
        .insert_workflow(&second)
        .await
        .expect("insert_workflow of the next version succeeds");
    assert_eq!(
        store
            .workflow("w", None)
            .await
            .expect("workflow of the latest version succeeds")
            .as_ref(),
        Some(&second),
        "no version number reads the latest version"
    );
    assert_eq!(
        store
            .workflow_versions("w")
            .await
            .expect("workflow_versions succeeds"),
        vec![first.clone(), second.clone()],
        "versions oldest first"
    );
    assert_eq!(
        store
            .workflow("w", Some(9))
            .await
            .expect("workflow of a missing version answers None, not an error"),
        None,
        "a missing version reads as None"
    );

    // Optimistic concurrency.
    let mut approved = first.clone();
    approved.workflow.status = WorkflowStatus::Approved;
    let stored = store
        .update_workflow(&approved)
        .await
        .expect("update_workflow at the stored revision succeeds");
    assert_eq!(
        stored.revision,
        first.revision + 1,
        "an update bumps the revision"
    );
    assert_eq!(
        store
            .workflow("w", Some(1))
            .await
            .expect("workflow of a stored version succeeds")
            .as_ref(),
        Some(&stored),
        "update_workflow returns the stored copy"
    );
    let stale = store
        .update_workflow(&approved)
        .await
        .expect_err("update_workflow at a stale revision is refused (Conflict)");
    assert_eq!(
        stale.kind(),
        StoreErrorKind::Conflict,
        "a stale revision is a Conflict: {stale}"
    );
    assert_eq!(
        store
            .workflow("w", Some(1))
            .await
            .expect("workflow of a stored version succeeds")
            .as_ref(),
        Some(&stored),
        "a refused update writes nothing"
    );
    let missing = store
        .update_workflow(&version("w", 7))
        .await
        .expect_err("update_workflow of a missing version is refused (NotFound)");
    assert_eq!(
        missing.kind(),
        StoreErrorKind::NotFound,
        "updating a missing version is NotFound: {missing}"
    );

    // Racing updates of one revision: exactly one wins.
    let mut racers = tokio::task::JoinSet::new();
    for index in 0..8 {
        let store = Arc::clone(&store);
        let mut update = stored.clone();
        update.workflow.description = format!("racer {index}");
        racers.spawn(async move { store.update_workflow(&update).await });
    }
    let mut winners = 0;
    while let Some(outcome) = racers.join_next().await {
        match outcome.expect("an update_workflow task panicked: see the panic above") {
            Ok(_) => winners += 1,
            Err(error) => assert_eq!(
                error.kind(),
                StoreErrorKind::Conflict,
                "a racing update that loses is a Conflict: {error}"
            ),
        }
    }
    assert_eq!(winners, 1, "racing updates of one revision: one must win");

    store
        .insert_workflow(&version("a-first", 1))
        .await
        .expect("insert_workflow of a new workflow succeeds");
    let listed: Vec<(String, u32)> = store
        .list_workflows()
        .await
        .expect("list_workflows succeeds")
        .into_iter()
        .map(|record| (record.id().to_owned(), record.version))
        .collect();
    assert_eq!(
        listed,
        [("a-first".to_owned(), 1), ("w".to_owned(), 2)],
        "latest version of each workflow, by id"
    );

    let bad = store
        .insert_workflow(&version("../escape", 1))
        .await
        .expect_err("insert_workflow with an invalid id is refused (Invalid)");
    assert_eq!(
        bad.kind(),
        StoreErrorKind::Invalid,
        "an invalid id is Invalid: {bad}"
    );
}

use std::sync::Arc;

use wayline_core::store::{StoreErrorKind, StoredWorkflow};
use wayline_core::{Run, RunStatus, Step, Workflow, WorkflowStatus, WorkflowStore};
use wayline_store::{Lifecycle, MemoryStore};

fn workflow() -> Workflow {
    let mut workflow = Workflow::new("briefing", "Briefing");
    workflow
        .steps
        .push(Step::new("geo", "geocode").map("q", "$input.city"));
    workflow
        .steps
        .push(Step::new("weather", "forecast").map("lat", "geo.lat"));
    workflow
}

fn validation_run(id: &str, version: u32, status: RunStatus) -> Run {
    let mut run = Run::new(id, "briefing");
    run.workflow_version = Some(version);
    run.status = status;
    run
}

#[tokio::test]
async fn approve_then_edit_returns_to_draft() {
    let lifecycle = Lifecycle::new(Arc::new(MemoryStore::new()));
    let first = lifecycle.save(&workflow()).await.unwrap();
    assert_eq!(first.record.state(), WorkflowStatus::Draft);
    let approved = lifecycle.approve("briefing", None, "ada").await.unwrap();
    let approval = approved.approval.clone().unwrap();
    assert_eq!(approval.by, "ada");
    assert_eq!(approval.graph_hash, approved.graph_hash);

    // Saving the same graph again changes nothing.
    let same = lifecycle.save(&workflow()).await.unwrap();
    assert!(!same.created);
    assert_eq!(same.record.state(), WorkflowStatus::Approved);

    // A change to the graph: a new version, back in draft; the approved one is kept.
    let mut edited = workflow();
    edited.steps[1] = Step::new("weather", "forecast").map("lat", "geo.latitude");
    let second = lifecycle.save(&edited).await.unwrap();
    assert!(second.created);
    assert_eq!(second.record.version, 2);
    assert_eq!(second.record.state(), WorkflowStatus::Draft);
    assert!(second.record.approval.is_none());
    let kept = lifecycle.get("briefing", Some(1)).await.unwrap();
    assert_eq!(kept.state(), WorkflowStatus::Approved);
    assert_eq!(lifecycle.get("briefing", None).await.unwrap().version, 2);
}

#[tokio::test]
async fn activation_needs_a_green_validation_run_of_the_approved_version() {
    let lifecycle = Lifecycle::new(Arc::new(MemoryStore::new()));
    lifecycle.save(&workflow()).await.unwrap();

    // Not approved yet: no validation, no activation.
    let early = lifecycle
        .record_validation(&validation_run("v0", 1, RunStatus::Success))
        .await
        .unwrap_err();
    assert_eq!(early.kind(), StoreErrorKind::Conflict, "{early}");
    let refused = lifecycle.activate("briefing", 1).await.unwrap_err();
    assert_eq!(refused.kind(), StoreErrorKind::Conflict);
    assert!(
        refused.message().contains("green validation run"),
        "{refused}"
    );

    lifecycle.approve("briefing", None, "ada").await.unwrap();
    let red = lifecycle
        .record_validation(&validation_run("v1", 1, RunStatus::Failed))
        .await
        .unwrap_err();
    assert!(red.message().contains("did not succeed"), "{red}");
    assert!(lifecycle.activate("briefing", 1).await.is_err());
    let unsaved = lifecycle
        .record_validation(&Run::new("v2", "briefing"))
        .await
        .unwrap_err();
    assert_eq!(unsaved.kind(), StoreErrorKind::Invalid);

    let validated = lifecycle
        .record_validation(&validation_run("v3", 1, RunStatus::Success))
        .await
        .unwrap();
    assert_eq!(validated.state(), WorkflowStatus::Validated);
    assert_eq!(validated.validation_run_id.as_deref(), Some("v3"));
    let active = lifecycle.activate("briefing", 1).await.unwrap();
    assert_eq!(active.state(), WorkflowStatus::Active);
    assert_eq!(lifecycle.active("briefing").await.unwrap().version, 1);

    // Version 2 goes through the same gate; activating it archives version 1.
    let mut edited = workflow();
    edited.steps.push(Step::new("extra", "forecast"));
    lifecycle.save(&edited).await.unwrap();
    assert_eq!(lifecycle.active("briefing").await.unwrap().version, 1);
    lifecycle
        .approve("briefing", Some(2), "grace")
        .await
        .unwrap();
    lifecycle
        .record_validation(&validation_run("v4", 2, RunStatus::Success))
        .await
        .unwrap();
    lifecycle.activate("briefing", 2).await.unwrap();
    assert_eq!(lifecycle.active("briefing").await.unwrap().version, 2);
    assert_eq!(
        lifecycle.get("briefing", Some(1)).await.unwrap().state(),
        WorkflowStatus::Archived
    );
    // An archived version cannot be approved again.
    let archived = lifecycle
        .approve("briefing", Some(1), "ada")
        .await
        .unwrap_err();
    assert!(archived.message().contains("archived"), "{archived}");
}

#[tokio::test]
async fn unknown_workflows_and_blank_approvers_are_refused() {
    let lifecycle = Lifecycle::new(Arc::new(MemoryStore::new()));
    let missing = lifecycle.approve("nope", None, "ada").await.unwrap_err();
    assert_eq!(missing.kind(), StoreErrorKind::NotFound);
    lifecycle.save(&workflow()).await.unwrap();
    let blank = lifecycle.approve("briefing", None, "  ").await.unwrap_err();
    assert_eq!(blank.kind(), StoreErrorKind::Invalid);
    let none_active = lifecycle.active("briefing").await.unwrap_err();
    assert!(
        none_active.message().contains("no active version"),
        "{none_active}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_saves_of_one_workflow_agree_on_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(wayline_store::FileStore::open(dir.path()).unwrap());
    let mut savers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let lifecycle = Lifecycle::new(store.clone());
        savers.spawn(async move { lifecycle.save(&workflow()).await });
    }
    let mut created = 0;
    while let Some(saved) = savers.join_next().await {
        let saved = saved.unwrap().unwrap();
        assert_eq!(saved.record.version, 1);
        created += usize::from(saved.created);
    }
    assert_eq!(created, 1, "exactly one save created the version");
}

#[tokio::test]
async fn activating_again_finishes_an_interrupted_activation() {
    let store = Arc::new(MemoryStore::new());
    let lifecycle = Lifecycle::new(store.clone());
    for (version, run) in [(1, "v1"), (2, "v2")] {
        let mut edited = workflow();
        edited.name = format!("Briefing {version}");
        edited.steps[1] = Step::new("weather", "forecast").map("lat", format!("geo.lat{version}"));
        lifecycle.save(&edited).await.unwrap();
        lifecycle
            .approve("briefing", Some(version), "ada")
            .await
            .unwrap();
        lifecycle
            .record_validation(&validation_run(run, version, RunStatus::Success))
            .await
            .unwrap();
    }
    lifecycle.activate("briefing", 2).await.unwrap();
    // A rollback to version 1 that died after activating it, before archiving version 2.
    let mut first = lifecycle.get("briefing", Some(1)).await.unwrap();
    first.workflow.status = WorkflowStatus::Active;
    store.update_workflow(&first).await.unwrap();
    assert_eq!(lifecycle.active("briefing").await.unwrap().version, 2);

    let again = lifecycle.activate("briefing", 1).await.unwrap();
    assert_eq!(again.state(), WorkflowStatus::Active);
    assert_eq!(lifecycle.active("briefing").await.unwrap().version, 1);
    assert_eq!(
        lifecycle.get("briefing", Some(2)).await.unwrap().state(),
        WorkflowStatus::Archived
    );
}

#[tokio::test]
async fn saving_an_archived_graph_again_starts_a_new_version() {
    let lifecycle = Lifecycle::new(Arc::new(MemoryStore::new()));
    lifecycle.save(&workflow()).await.unwrap();
    lifecycle.archive("briefing", 1).await.unwrap();
    let again = lifecycle.save(&workflow()).await.unwrap();
    assert!(again.created);
    assert_eq!(again.record.version, 2);
    assert_eq!(again.record.state(), WorkflowStatus::Draft);
}

#[tokio::test]
async fn a_workflow_out_of_version_numbers_is_refused_not_wrapped() {
    let store = Arc::new(MemoryStore::new());
    let last = StoredWorkflow::new(workflow(), u32::MAX, "not-the-hash");
    store.insert_workflow(&last).await.unwrap();
    let error = Lifecycle::new(store).save(&workflow()).await.unwrap_err();
    assert_eq!(error.kind(), StoreErrorKind::Invalid);
    assert!(error.message().contains("every version number"), "{error}");
}

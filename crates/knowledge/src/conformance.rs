//! The [`KnowledgeStore`] contract as a test any implementation can run:
//! `wayline_knowledge::conformance::knowledge_store(Arc::new(MyStore::new())).await`. It panics
//! with a message naming the broken rule.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;
use wayline_core::store::StoreErrorKind;

use crate::model::{
    CommonError, ErrorPattern, Extra, Knowledge, OperationStats, Pattern, PatternStep, Pitfall,
    PitfallTrigger, RequestTemplate, Resolution, TransitionStats,
};
use crate::store::KnowledgeStore;

/// Knowledge with every field set, wayline's and unknown ones included.
pub fn sample() -> Knowledge {
    let at: DateTime<Utc> = "2026-03-04T05:06:07Z".parse().expect("a valid time");
    let mut extra = Extra::new();
    extra.insert(
        "team_note".into(),
        json!({"owner": "ops", "tags": ["a", "b"]}),
    );
    let mut knowledge = Knowledge::new();
    knowledge.patterns.push(Pattern {
        id: "pattern_1".into(),
        name: "create_cluster_and_poll".into(),
        description: Some("Create a cluster and poll".into()),
        steps: vec![PatternStep {
            operation_id: "CreateCluster".into(),
            request_template: Some(RequestTemplate {
                method: Some("POST".into()),
                path: Some("/clusters".into()),
                body_keys: vec!["displayName".into()],
                ..RequestTemplate::default()
            }),
            max_retries: Some(120),
            delay_after: Some(30),
            note: Some("first".into()),
            ..PatternStep::default()
        }],
        success_count: 15,
        failure_count: 2,
        last_used: Some(at),
        avg_duration_seconds: Some(180.5),
        strength: Some(0.75),
        extra: extra.clone(),
        ..Pattern::default()
    });
    knowledge.pitfalls.push(Pitfall {
        id: "pitfall_1".into(),
        name: "update_without_nodegroup_id".into(),
        description: None,
        trigger: PitfallTrigger {
            operation_id: "UpdateCluster".into(),
            missing_variable: Some("nodegroup_1".into()),
            ..PitfallTrigger::default()
        },
        error_pattern: ErrorPattern {
            status_code: Some(400),
            message_contains: "NodeGroupId is required".into(),
            ..ErrorPattern::default()
        },
        resolution: Some(Resolution {
            description: "Save nodegroup_1 first".into(),
            fix_steps: vec!["Save it".into()],
            ..Resolution::default()
        }),
        occurrence_count: 5,
        last_occurred: Some(at),
        contradiction_count: Some(1),
        seen_variables: vec!["cluster_id".into()],
        strength: None,
        extra,
    });
    knowledge.stats.operations.insert(
        "UpdateCluster".into(),
        OperationStats {
            total_attempts: 15,
            successes: 12,
            failures: 3,
            success_rate: 0.8,
            avg_duration_ms: 800.25,
            common_errors: vec![CommonError {
                error: "NodeGroupId is required".into(),
                count: 2,
                status_code: Some(400),
                ..CommonError::default()
            }],
            last_used: Some(at),
            ..OperationStats::default()
        },
    );
    knowledge
        .stats
        .state_transitions
        .entry("cluster".into())
        .or_default()
        .insert(
            "CREATING_to_ACTIVE".into(),
            TransitionStats {
                avg_poll_attempts: 45.0,
                avg_duration_seconds: 1350.0,
                samples: Some(3),
                ..TransitionStats::default()
            },
        );
    knowledge
}

/// Checks the [`KnowledgeStore`] contract on an empty store.
pub async fn knowledge_store(store: Arc<dyn KnowledgeStore>) {
    assert!(
        store
            .suts()
            .await
            .expect("suts of a new store succeeds")
            .is_empty(),
        "a new store is empty"
    );
    assert!(
        store
            .load("never")
            .await
            .expect("load of a SUT never written succeeds")
            .is_empty(),
        "a SUT never written loads as empty knowledge"
    );
    let bad = store
        .load("../escape")
        .await
        .expect_err("load with an invalid SUT name is refused (Invalid)");
    assert_eq!(
        bad.kind(),
        StoreErrorKind::Invalid,
        "an invalid SUT name is Invalid: {bad}"
    );
    let bad = store
        .update("a/b", Box::new(|_| {}))
        .await
        .expect_err("update with an invalid SUT name is refused (Invalid)");
    assert_eq!(
        bad.kind(),
        StoreErrorKind::Invalid,
        "an invalid SUT name is Invalid: {bad}"
    );

    // Everything written is read back, field by field.
    let written = store
        .update("tidbx", Box::new(|knowledge| *knowledge = sample()))
        .await
        .expect("update of a new SUT succeeds");
    assert_eq!(written, sample(), "update returns the knowledge it stored");
    assert_eq!(
        store
            .load("tidbx")
            .await
            .expect("load of a written SUT succeeds"),
        sample(),
        "read back equal"
    );
    assert_eq!(
        store.suts().await.expect("suts succeeds"),
        ["tidbx"],
        "suts lists the SUT written"
    );

    // Concurrent updates lose no count.
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            store
                .update(
                    "tidbx",
                    Box::new(|knowledge| {
                        knowledge
                            .stats
                            .operations
                            .entry("UpdateCluster".into())
                            .or_default()
                            .total_attempts += 1;
                    }),
                )
                .await
                .expect("update of one SUT by writers at once succeeds");
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("an update task panicked: see the panic above");
    }
    let counted = store
        .load("tidbx")
        .await
        .expect("load of a written SUT succeeds");
    assert_eq!(
        counted.stats.operations["UpdateCluster"].total_attempts,
        15 + 20,
        "no update lost"
    );

    // SUTs are separate.
    store
        .update(
            "serverless",
            Box::new(|knowledge| knowledge.patterns.push(sample().patterns[0].clone())),
        )
        .await
        .expect("update of a second SUT succeeds");
    assert_eq!(
        store.suts().await.expect("suts succeeds"),
        ["serverless", "tidbx"],
        "suts lists every SUT written, sorted"
    );
    assert_eq!(
        store
            .load("serverless")
            .await
            .expect("load of a written SUT succeeds")
            .patterns
            .len(),
        1,
        "a SUT holds what was written to it"
    );
    assert!(
        store
            .load("serverless")
            .await
            .expect("load of a written SUT succeeds")
            .pitfalls
            .is_empty(),
        "SUTs are separate: one holds nothing written to another"
    );
}

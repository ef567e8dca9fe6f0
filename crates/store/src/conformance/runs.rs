//! The [`RunStore`] contract.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use wayline_core::store::{RunQuery, StoreErrorKind};
use wayline_core::{RequestSummary, Run, RunStatus, RunStore, StepResult, StepStatus};

pub(super) fn run(id: &str, workflow: &str, started_at: DateTime<Utc>, status: RunStatus) -> Run {
    let mut run = Run::new(id, workflow);
    run.workflow_version = Some(1);
    run.status = status;
    run.started_at = Some(started_at);
    run.user_inputs.insert("q".into(), json!("Oslo"));
    for step in ["first", "second", "third"] {
        run.step_results.push(StepResult::pending(step));
    }
    run
}

pub(super) fn finished_step(step_id: &str, started_at: DateTime<Utc>) -> StepResult {
    let mut result = StepResult::pending(step_id);
    result.status = StepStatus::Success;
    result.output_data = json!({"items": [1, 2, {"deep": "ü ✓"}], "count": 3});
    result.warnings = vec!["a warning".into()];
    result.started_at = Some(started_at);
    result.finished_at = Some(started_at + Duration::milliseconds(12));
    result.attempts = 2;
    result.duration_ms = Some(12);
    result.request = Some(RequestSummary::new("GET", "http://api.test/x?q=1"));
    result.response_status = Some(200);
    result
}

/// Checks the [`RunStore`] contract on an empty store.
pub async fn run_store(store: Arc<dyn RunStore>) {
    let t0: DateTime<Utc> = "2026-03-04T05:06:07.123456789Z"
        .parse()
        .expect("a valid time");
    assert_eq!(
        store
            .run("missing")
            .await
            .expect("run of an unknown id answers None, not an error"),
        None,
        "an unknown run reads as None"
    );
    let missing = store
        .save_step("missing", &StepResult::pending("x"))
        .await
        .expect_err("save_step to an unknown run is refused (NotFound)");
    assert_eq!(
        missing.kind(),
        StoreErrorKind::NotFound,
        "save_step to an unknown run is NotFound: {missing}"
    );
    let missing = store
        .finish_run(&run("missing", "w", t0, RunStatus::Failed))
        .await
        .expect_err("finish_run of an unknown run is refused (NotFound)");
    assert_eq!(
        missing.kind(),
        StoreErrorKind::NotFound,
        "finish_run of an unknown run is NotFound: {missing}"
    );

    let mut record = run("r1", "w", t0, RunStatus::Running);
    store
        .create_run(&record)
        .await
        .expect("create_run of a new run succeeds");
    assert_eq!(
        store
            .run("r1")
            .await
            .expect("run of a stored run succeeds")
            .as_ref(),
        Some(&record),
        "a created run reads back as written"
    );
    let again = store
        .create_run(&record)
        .await
        .expect_err("create_run of an existing id is refused (Conflict)");
    assert_eq!(
        again.kind(),
        StoreErrorKind::Conflict,
        "an existing run id is a Conflict: {again}"
    );
    let bad = store
        .create_run(&run("a/b", "w", t0, RunStatus::Running))
        .await
        .expect_err("create_run with an invalid id is refused (Invalid)");
    assert_eq!(
        bad.kind(),
        StoreErrorKind::Invalid,
        "an invalid run id is Invalid: {bad}"
    );

    // A step result replaces the pending one in place; an unknown step is appended.
    let second = finished_step("second", t0);
    store
        .save_step("r1", &second)
        .await
        .expect("save_step of a pending step of a running run succeeds");
    record.step_results[1] = second;
    let extra = finished_step("extra", t0);
    store
        .save_step("r1", &extra)
        .await
        .expect("save_step of a new step of a running run succeeds");
    record.step_results.push(extra);
    assert_eq!(
        store
            .run("r1")
            .await
            .expect("run of a stored run succeeds")
            .as_ref(),
        Some(&record),
        "step results are saved field by field, in place"
    );
    record.status = RunStatus::Success;
    record.finished_at = Some(t0 + Duration::seconds(1));
    store
        .finish_run(&record)
        .await
        .expect("finish_run of a stored run succeeds");
    assert_eq!(
        store
            .run("r1")
            .await
            .expect("run of a stored run succeeds")
            .as_ref(),
        Some(&record),
        "finish_run replaces the whole record"
    );
    // A late step result (from a step cancelled mid-save) cannot change an ended run.
    let late = store
        .save_step("r1", &StepResult::pending("second"))
        .await
        .expect_err("save_step to an ended run is refused (Conflict)");
    assert_eq!(
        late.kind(),
        StoreErrorKind::Conflict,
        "save_step to an ended run is a Conflict: {late}"
    );
    assert_eq!(
        store
            .run("r1")
            .await
            .expect("run of a stored run succeeds")
            .as_ref(),
        Some(&record),
        "a refused save_step writes nothing"
    );

    // Many runs, and many steps of one run, saved at once: nothing lost.
    let mut writers = tokio::task::JoinSet::new();
    for index in 0..20 {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let id = format!("par-{index}");
            let mut run = run(&id, "par", t0, RunStatus::Running);
            run.step_results.clear();
            store
                .create_run(&run)
                .await
                .expect("create_run of many runs at once succeeds");
            let mut steps = tokio::task::JoinSet::new();
            for step in 0..10 {
                let store = Arc::clone(&store);
                let id = id.clone();
                steps.spawn(async move {
                    let result = finished_step(&format!("s{step}"), t0);
                    store
                        .save_step(&id, &result)
                        .await
                        .expect("save_step of many steps of one run at once succeeds");
                });
            }
            while let Some(done) = steps.join_next().await {
                done.expect("a save_step task panicked: see the panic above");
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("a writer task panicked: see the panic above");
    }
    for index in 0..20 {
        let run = store
            .run(&format!("par-{index}"))
            .await
            .expect("run of a run created alongside others succeeds")
            .expect("runs created at once are all kept");
        let steps: BTreeSet<_> = run.step_results.iter().map(|r| r.step_id.clone()).collect();
        assert_eq!(
            steps.len(),
            10,
            "run par-{index} lost step results: {steps:?}"
        );
    }

    // History: newest first, paged, filtered.
    let statuses = [RunStatus::Success, RunStatus::Failed];
    for index in 0..7i64 {
        let workflow = if index % 2 == 0 { "even" } else { "odd" };
        let at = t0 + Duration::minutes(index);
        let history = run(
            &format!("h{index}"),
            workflow,
            at,
            statuses[usize::from(index % 3 == 0)],
        );
        store
            .create_run(&history)
            .await
            .expect("create_run of a new run succeeds");
    }
    let mut seen = Vec::new();
    let mut query = RunQuery::new().workflow("even").limit(3);
    loop {
        let page = store
            .list_runs(&query)
            .await
            .expect("list_runs of a workflow, paged, succeeds");
        assert!(page.runs.len() <= 3, "a page holds at most `limit` runs");
        seen.extend(page.runs.iter().map(|summary| summary.id.clone()));
        match page.next_cursor {
            Some(cursor) => query = query.after(cursor),
            None => break,
        }
    }
    assert_eq!(seen, ["h6", "h4", "h2", "h0"], "paged history of `even`");
    let failed = store
        .list_runs(&RunQuery::new().status(RunStatus::Failed).limit(100))
        .await
        .expect("list_runs of a status succeeds");
    let ids: Vec<_> = failed
        .runs
        .iter()
        .map(|summary| summary.id.as_str())
        .collect();
    assert_eq!(ids, ["h6", "h3", "h0"], "failed runs");
    let everything = store
        .list_runs(&RunQuery::new().workflow("even").limit(usize::MAX))
        .await
        .expect("list_runs with the largest limit succeeds");
    assert_eq!(
        everything.runs.len(),
        4,
        "the largest limit means all of them"
    );
    assert_eq!(everything.next_cursor, None, "the last page has no cursor");
    let window = store
        .list_runs(&RunQuery::new().workflow("odd").started_between(
            Some(t0 + Duration::minutes(2)),
            Some(t0 + Duration::minutes(5)),
        ))
        .await
        .expect("list_runs of a start time window succeeds");
    let ids: Vec<_> = window
        .runs
        .iter()
        .map(|summary| summary.id.as_str())
        .collect();
    assert_eq!(ids, ["h3"], "runs of `odd` started in [t0+2m, t0+5m)");
    let summary = &window.runs[0];
    assert_eq!(
        (
            summary.workflow_version,
            summary.steps,
            summary.failed_steps
        ),
        (Some(1), 3, 0),
        "a summary has the run's workflow version, steps and failed steps"
    );
    let bad = store
        .list_runs(&RunQuery::new().after("not a cursor"))
        .await
        .expect_err("list_runs after a malformed cursor is refused (Invalid)");
    assert_eq!(
        bad.kind(),
        StoreErrorKind::Invalid,
        "a malformed cursor is Invalid: {bad}"
    );
}

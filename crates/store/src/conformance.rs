//! The conformance suite every [`WorkflowStore`] and [`RunStore`] passes: call
//! [`workflow_store`] and [`run_store`] from a test with a fresh, empty store, and
//! [`run_queue`] for a store with a [`RunQueue`](crate::queue::RunQueue). They panic with a
//! message naming the broken rule.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use wayline_store::{MemoryStore, conformance};
//!
//! let store = Arc::new(MemoryStore::new());
//! conformance::workflow_store(store.clone()).await;
//! conformance::run_store(store).await;
//! # });
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use wayline_core::store::{RunQuery, StoreErrorKind, StoredWorkflow};
use wayline_core::{
    RequestSummary, Run, RunStatus, RunStore, Step, StepResult, StepStatus, Workflow,
    WorkflowStatus, WorkflowStore,
};

fn version(id: &str, number: u32) -> StoredWorkflow {
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
        store.workflow("w", None).await.unwrap(),
        None,
        "empty store"
    );
    assert!(store.workflow_versions("w").await.unwrap().is_empty());
    assert!(store.list_workflows().await.unwrap().is_empty());

    let first = version("w", 1);
    store.insert_workflow(&first).await.unwrap();
    assert_eq!(
        store.workflow("w", Some(1)).await.unwrap().as_ref(),
        Some(&first),
        "a version reads back as written"
    );
    let again = store.insert_workflow(&first).await.unwrap_err();
    assert_eq!(again.kind(), StoreErrorKind::Conflict, "{again}");

    let second = version("w", 2);
    store.insert_workflow(&second).await.unwrap();
    assert_eq!(
        store.workflow("w", None).await.unwrap().as_ref(),
        Some(&second)
    );
    assert_eq!(
        store.workflow_versions("w").await.unwrap(),
        vec![first.clone(), second.clone()],
        "versions oldest first"
    );
    assert_eq!(store.workflow("w", Some(9)).await.unwrap(), None);

    // Optimistic concurrency.
    let mut approved = first.clone();
    approved.workflow.status = WorkflowStatus::Approved;
    let stored = store.update_workflow(&approved).await.unwrap();
    assert_eq!(
        stored.revision,
        first.revision + 1,
        "an update bumps the revision"
    );
    assert_eq!(
        store.workflow("w", Some(1)).await.unwrap().as_ref(),
        Some(&stored)
    );
    let stale = store.update_workflow(&approved).await.unwrap_err();
    assert_eq!(stale.kind(), StoreErrorKind::Conflict, "{stale}");
    assert_eq!(
        store.workflow("w", Some(1)).await.unwrap().as_ref(),
        Some(&stored),
        "a refused update writes nothing"
    );
    let missing = store.update_workflow(&version("w", 7)).await.unwrap_err();
    assert_eq!(missing.kind(), StoreErrorKind::NotFound, "{missing}");

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
        match outcome.unwrap() {
            Ok(_) => winners += 1,
            Err(error) => assert_eq!(error.kind(), StoreErrorKind::Conflict, "{error}"),
        }
    }
    assert_eq!(winners, 1, "racing updates of one revision: one must win");

    store.insert_workflow(&version("a-first", 1)).await.unwrap();
    let listed: Vec<(String, u32)> = store
        .list_workflows()
        .await
        .unwrap()
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
        .unwrap_err();
    assert_eq!(bad.kind(), StoreErrorKind::Invalid, "{bad}");
}

fn run(id: &str, workflow: &str, started_at: DateTime<Utc>, status: RunStatus) -> Run {
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

fn finished_step(step_id: &str, started_at: DateTime<Utc>) -> StepResult {
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
    let t0: DateTime<Utc> = "2026-03-04T05:06:07.123456789Z".parse().unwrap();
    assert_eq!(store.run("missing").await.unwrap(), None);
    let missing = store
        .save_step("missing", &StepResult::pending("x"))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), StoreErrorKind::NotFound, "{missing}");
    let missing = store
        .finish_run(&run("missing", "w", t0, RunStatus::Failed))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), StoreErrorKind::NotFound, "{missing}");

    let mut record = run("r1", "w", t0, RunStatus::Running);
    store.create_run(&record).await.unwrap();
    assert_eq!(store.run("r1").await.unwrap().as_ref(), Some(&record));
    let again = store.create_run(&record).await.unwrap_err();
    assert_eq!(again.kind(), StoreErrorKind::Conflict, "{again}");
    let bad = store
        .create_run(&run("a/b", "w", t0, RunStatus::Running))
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), StoreErrorKind::Invalid, "{bad}");

    // A step result replaces the pending one in place; an unknown step is appended.
    let second = finished_step("second", t0);
    store.save_step("r1", &second).await.unwrap();
    record.step_results[1] = second;
    let extra = finished_step("extra", t0);
    store.save_step("r1", &extra).await.unwrap();
    record.step_results.push(extra);
    assert_eq!(
        store.run("r1").await.unwrap().as_ref(),
        Some(&record),
        "step results are saved field by field, in place"
    );
    record.status = RunStatus::Success;
    record.finished_at = Some(t0 + Duration::seconds(1));
    store.finish_run(&record).await.unwrap();
    assert_eq!(store.run("r1").await.unwrap().as_ref(), Some(&record));
    // A late step result (from a step cancelled mid-save) cannot change an ended run.
    let late = store
        .save_step("r1", &StepResult::pending("second"))
        .await
        .unwrap_err();
    assert_eq!(late.kind(), StoreErrorKind::Conflict, "{late}");
    assert_eq!(store.run("r1").await.unwrap().as_ref(), Some(&record));

    // Many runs, and many steps of one run, saved at once: nothing lost.
    let mut writers = tokio::task::JoinSet::new();
    for index in 0..20 {
        let store = Arc::clone(&store);
        writers.spawn(async move {
            let id = format!("par-{index}");
            let mut run = run(&id, "par", t0, RunStatus::Running);
            run.step_results.clear();
            store.create_run(&run).await.unwrap();
            let mut steps = tokio::task::JoinSet::new();
            for step in 0..10 {
                let store = Arc::clone(&store);
                let id = id.clone();
                steps.spawn(async move {
                    let result = finished_step(&format!("s{step}"), t0);
                    store.save_step(&id, &result).await.unwrap();
                });
            }
            while let Some(done) = steps.join_next().await {
                done.unwrap();
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.unwrap();
    }
    for index in 0..20 {
        let run = store.run(&format!("par-{index}")).await.unwrap().unwrap();
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
        store.create_run(&history).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut query = RunQuery::new().workflow("even").limit(3);
    loop {
        let page = store.list_runs(&query).await.unwrap();
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
        .unwrap();
    let ids: Vec<_> = failed
        .runs
        .iter()
        .map(|summary| summary.id.as_str())
        .collect();
    assert_eq!(ids, ["h6", "h3", "h0"], "failed runs");
    let everything = store
        .list_runs(&RunQuery::new().workflow("even").limit(usize::MAX))
        .await
        .unwrap();
    assert_eq!(
        everything.runs.len(),
        4,
        "the largest limit means all of them"
    );
    assert_eq!(everything.next_cursor, None);
    let window = store
        .list_runs(&RunQuery::new().workflow("odd").started_between(
            Some(t0 + Duration::minutes(2)),
            Some(t0 + Duration::minutes(5)),
        ))
        .await
        .unwrap();
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
        (Some(1), 3, 0)
    );
    let bad = store
        .list_runs(&RunQuery::new().after("not a cursor"))
        .await
        .unwrap_err();
    assert_eq!(bad.kind(), StoreErrorKind::Invalid, "{bad}");
}

fn heartbeat(name: &str, pid: u32) -> crate::queue::Heartbeat {
    crate::queue::Heartbeat {
        name: name.into(),
        host: "test-host".into(),
        pid,
        concurrency: 4,
        lease: std::time::Duration::from_secs(60),
        stopping: false,
    }
}

/// Checks the [`RunQueue`](crate::queue::RunQueue) contract on an empty queue; `runs` is the
/// run store of the same location. Leases are the store's clock, so this waits (for real) a
/// few tens of milliseconds for one to run out.
pub async fn run_queue(
    queue: Arc<dyn crate::queue::RunQueue>,
    runs: Arc<dyn RunStore>,
    workflows: Arc<dyn WorkflowStore>,
) {
    use crate::queue::{Cancellation, InFlight, QueueState, Release, Submission};
    use std::time::Duration as Wait;

    let hour = Wait::from_secs(3600);
    // Submitting: an id of one's own, or a new one; a taken id is refused.
    let first = queue
        .submit(
            &Submission::new("w", 3)
                .run_id("q1")
                .input("city", "Oslo")
                .in_flight(InFlight::Retry),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            first.state,
            first.workflow_version,
            first.in_flight,
            first.attempts
        ),
        (QueueState::Queued, 3, InFlight::Retry, 0)
    );
    assert_eq!(first.inputs["city"], json!("Oslo"));
    let taken = queue
        .submit(&Submission::new("w", 3).run_id("q1"))
        .await
        .unwrap_err();
    assert_eq!(taken.kind(), StoreErrorKind::Conflict, "{taken}");
    runs.create_run(&run("direct", "w", Utc::now(), RunStatus::Running))
        .await
        .unwrap();
    let taken = queue
        .submit(&Submission::new("w", 3).run_id("direct"))
        .await
        .unwrap_err();
    assert_eq!(
        taken.kind(),
        StoreErrorKind::Conflict,
        "a run id used outside the queue is taken too: {taken}"
    );
    let second = queue.submit(&Submission::new("w", 3)).await.unwrap();
    assert!(!second.run_id.is_empty(), "a new id when none is given");
    queue
        .submit(&Submission::new("w", 3).run_id("q3"))
        .await
        .unwrap();
    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.queued, stats.running), (3, 0));

    // Workers: a live name is not taken twice.
    queue.register(&heartbeat("w1", 1)).await.unwrap();
    queue.register(&heartbeat("w1", 1)).await.unwrap();
    let twice = queue.register(&heartbeat("w1", 2)).await.unwrap_err();
    assert_eq!(twice.kind(), StoreErrorKind::Conflict, "{twice}");
    queue.register(&heartbeat("w2", 2)).await.unwrap();

    // Claims: oldest first, each run once, never one the worker says it still holds.
    let claimed = queue.claim("w1", hour, 1, &[]).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].entry.run_id, "q1", "oldest first");
    assert_eq!(claimed[0].entry.state, QueueState::Running);
    assert_eq!(claimed[0].lease.attempt, 1);
    let held = claimed[0].lease.clone();
    let more = queue
        .claim("w2", hour, 10, &["q3".to_owned()])
        .await
        .unwrap();
    let ids: Vec<_> = more.iter().map(|c| c.entry.run_id.clone()).collect();
    assert_eq!(
        ids,
        std::slice::from_ref(&second.run_id),
        "q1 is held, q3 excluded"
    );
    let w2_lease = more[0].lease.clone();
    let q3 = queue.claim("w2", hour, 10, &[]).await.unwrap();
    assert_eq!(q3.len(), 1);
    assert!(queue.claim("w2", hour, 10, &[]).await.unwrap().is_empty());
    assert_eq!(queue.stats().await.unwrap().running, 3);

    // Fenced writes: only the holder records the run.
    let mine = queue.fenced_runs("w1");
    let theirs = queue.fenced_runs("w2");
    let mut record = run("q1", "w", Utc::now(), RunStatus::Running);
    let refused = theirs.create_run(&record).await.unwrap_err();
    assert_eq!(refused.kind(), StoreErrorKind::Conflict, "{refused}");
    mine.create_run(&record).await.unwrap();
    let step = finished_step("first", Utc::now());
    let refused = theirs.save_step("q1", &step).await.unwrap_err();
    assert_eq!(refused.kind(), StoreErrorKind::Conflict, "{refused}");
    mine.save_step("q1", &step).await.unwrap();
    mine.save_step("direct", &step)
        .await
        .expect("a run outside the queue is not fenced");

    // Renewal, and cancellation of a running run from anywhere.
    let beat = heartbeat("w1", 1);
    let renewed = queue
        .renew(&beat, std::slice::from_ref(&held))
        .await
        .unwrap();
    assert!(renewed.lost.is_empty() && renewed.cancel.is_empty());
    assert_eq!(queue.cancel("q1").await.unwrap(), Cancellation::Requested);
    let renewed = queue
        .renew(&beat, std::slice::from_ref(&held))
        .await
        .unwrap();
    assert_eq!(renewed.cancel, ["q1"]);
    record.status = RunStatus::Cancelled;
    mine.finish_run(&record).await.unwrap();
    assert!(queue.release(&held, Release::Done).await.unwrap());
    assert!(
        !queue.release(&held, Release::Done).await.unwrap(),
        "a lease is released once"
    );
    assert_eq!(queue.cancel("q1").await.unwrap(), Cancellation::Ended);
    let done = queue.entry("q1").await.unwrap().unwrap();
    assert_eq!(done.state, QueueState::Done);
    assert!(done.finished_at.is_some());

    // A lease that runs out is taken over; the old holder's writes and renewals fail.
    let short = queue
        .submit(&Submission::new("w", 3).run_id("q4"))
        .await
        .unwrap();
    let lost = queue
        .claim("w1", Wait::from_millis(1), 1, &[])
        .await
        .unwrap();
    assert_eq!(lost[0].entry.run_id, short.run_id);
    mine.create_run(&run("q4", "w", Utc::now(), RunStatus::Running))
        .await
        .unwrap();
    tokio::time::sleep(Wait::from_millis(30)).await;
    let taken = queue.claim("w2", hour, 1, &[]).await.unwrap();
    assert_eq!(taken[0].entry.run_id, "q4");
    assert_eq!((taken[0].lease.attempt, taken[0].entry.attempts), (2, 2));
    let renewed = queue.renew(&beat, &[lost[0].lease.clone()]).await.unwrap();
    assert_eq!(renewed.lost, ["q4"]);
    let refused = mine.save_step("q4", &step).await.unwrap_err();
    assert_eq!(refused.kind(), StoreErrorKind::Conflict, "{refused}");
    assert!(!queue.release(&lost[0].lease, Release::Done).await.unwrap());
    theirs.save_step("q4", &step).await.unwrap();

    // Requeued on shutdown: claimable again at once; blocked: waits for a person.
    assert!(
        queue
            .release(&taken[0].lease, Release::Requeue)
            .await
            .unwrap()
    );
    let again = queue.claim("w1", hour, 1, &[]).await.unwrap();
    assert_eq!(
        (again[0].entry.run_id.as_str(), again[0].lease.attempt),
        ("q4", 3)
    );
    assert!(
        queue
            .release(
                &again[0].lease,
                Release::Blocked("step `pay` may have run".into())
            )
            .await
            .unwrap()
    );
    let blocked = queue.entry("q4").await.unwrap().unwrap();
    assert_eq!(blocked.state, QueueState::Blocked);
    assert_eq!(blocked.note.as_deref(), Some("step `pay` may have run"));
    assert!(queue.claim("w1", hour, 10, &[]).await.unwrap().is_empty());
    assert!(
        !queue.requeue("q1", InFlight::Retry).await.unwrap(),
        "only a blocked run is queued again"
    );
    assert!(queue.requeue("q4", InFlight::Skip).await.unwrap());
    let requeued = queue.claim("w1", hour, 10, &[]).await.unwrap();
    assert_eq!(
        (
            requeued[0].entry.run_id.as_str(),
            requeued[0].entry.in_flight
        ),
        ("q4", InFlight::Skip)
    );
    assert!(
        queue
            .release(&requeued[0].lease, Release::Blocked("again".into()))
            .await
            .unwrap()
    );

    // Cancelling a waiting run ends it at once, with a cancelled record.
    assert_eq!(queue.cancel("q4").await.unwrap(), Cancellation::Cancelled);
    assert_eq!(
        runs.run("q4").await.unwrap().unwrap().status,
        RunStatus::Cancelled
    );
    let waiting = queue
        .submit(&Submission::new("w", 3).run_id("q5").input("n", 1))
        .await
        .unwrap();
    assert_eq!(
        queue.cancel(&waiting.run_id).await.unwrap(),
        Cancellation::Cancelled
    );
    let record = runs.run("q5").await.unwrap().unwrap();
    assert_eq!(
        (
            record.status,
            record.workflow_version,
            &record.user_inputs["n"]
        ),
        (RunStatus::Cancelled, Some(3), &json!(1))
    );
    assert_eq!(
        queue.entry("q5").await.unwrap().unwrap().state,
        QueueState::Cancelled
    );
    let unknown = queue.cancel("nope").await.unwrap_err();
    assert_eq!(unknown.kind(), StoreErrorKind::NotFound, "{unknown}");

    // What the queue and its workers look like.
    let listed: Vec<_> = queue
        .entries(Some(QueueState::Running), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.run_id)
        .collect();
    assert_eq!(listed, [second.run_id.clone(), "q3".to_owned()]);
    let workers = queue.workers().await.unwrap();
    let w1 = workers.iter().find(|w| w.name == "w1").unwrap();
    let w2 = workers.iter().find(|w| w.name == "w2").unwrap();
    assert!(w1.alive && w2.alive);
    assert_eq!(w1.finished, 1, "w1 finished q1");
    assert!(w1.runs.is_empty());
    assert_eq!(w2.runs.len(), 2, "w2 holds two runs: {:?}", w2.runs);
    let mut stopping = heartbeat("w2", 2);
    stopping.stopping = true;
    queue.renew(&stopping, &[w2_lease]).await.unwrap();
    let workers = queue.workers().await.unwrap();
    assert!(!workers.iter().find(|w| w.name == "w2").unwrap().alive);
    let page = runs.list_runs(&RunQuery::new().worker("w1")).await.unwrap();
    let ids: Vec<_> = page.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["q4", "q1"], "runs by the worker that last held them");
    assert_eq!(page.runs[0].worker.as_deref(), Some("w1"));

    shared_schedules(&*queue, &*workflows).await;
}

/// Shared schedules: syncing is idempotent, each due time fires once however many callers
/// race, and missed due times are skipped or caught up as each schedule says.
async fn shared_schedules(queue: &dyn crate::queue::RunQueue, workflows: &dyn WorkflowStore) {
    use crate::schedule::{Missed, Schedule, Trigger};

    let mut active = version("ticker", 1);
    active.workflow.status = WorkflowStatus::Active;
    workflows.insert_workflow(&active).await.unwrap();
    let every_second = |id: &str, missed: Missed| {
        let mut trigger = Trigger::new("ticker", Schedule::every("1s").unwrap());
        trigger.id = id.into();
        trigger.missed = missed;
        trigger.inputs.insert("q".into(), json!(id));
        trigger
    };
    let mut nightly = Trigger::new("no-active", Schedule::cron("0 3 * * *").unwrap());
    nightly.id = "nightly".into();
    let mut catcher = every_second("catcher", Missed::CatchUp);
    catcher.in_flight = crate::queue::InFlight::Retry;
    let set = [every_second("skipper", Missed::Skip), catcher, nightly];
    let synced = queue.sync_schedules(&set).await.unwrap();
    assert_eq!(synced.added, ["skipper", "catcher", "nightly"]);
    let again = queue.sync_schedules(&set).await.unwrap();
    assert_eq!(
        (again.added.len(), again.kept.len()),
        (0, 3),
        "syncing the same set changes nothing"
    );
    assert!(
        queue.fire_schedules().await.unwrap().is_empty(),
        "nothing due yet"
    );
    // Two due times pass with nobody firing; then four callers race.
    tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
    let racers: Vec<_> = (0..4).map(|_| queue.fire_schedules()).collect();
    let fires: Vec<_> = futures_util::future::join_all(racers)
        .await
        .into_iter()
        .flat_map(Result::unwrap)
        .collect();
    let of = |id: &str| {
        fires
            .iter()
            .filter(|fire| fire.schedule_id == id)
            .collect::<Vec<_>>()
    };
    // At least two due times passed (more on a slow machine).
    let caught: Vec<_> = of("catcher");
    let due = caught.len();
    assert!(due >= 2, "catch_up fires each missed due time: {fires:?}");
    assert!(caught.iter().all(|fire| fire.run_id.is_some()));
    assert!(
        caught
            .windows(2)
            .all(|pair| pair[0].due_at < pair[1].due_at)
    );
    let skipped: Vec<_> = of("skipper");
    assert_eq!(skipped.len(), due, "{fires:?}");
    assert!(
        skipped[..due - 1].iter().all(|fire| fire.run_id.is_none())
            && skipped[due - 1].run_id.is_some(),
        "skip fires only the latest due time: {skipped:?}"
    );
    let run_id = caught[due - 1].run_id.clone().unwrap();
    assert!(run_id.starts_with("catcher-"), "{run_id}");
    let entry = queue.entry(&run_id).await.unwrap().unwrap();
    assert_eq!(
        (
            entry.workflow_id.as_str(),
            entry.workflow_version,
            &entry.inputs["q"],
            entry.in_flight
        ),
        (
            "ticker",
            1,
            &json!("catcher"),
            crate::queue::InFlight::Retry
        ),
        "a run a schedule queues has the schedule's in-flight policy"
    );
    let skipper_run = skipped[due - 1].run_id.as_deref().unwrap();
    assert_eq!(
        queue.entry(skipper_run).await.unwrap().unwrap().in_flight,
        crate::queue::InFlight::Ask
    );
    let stored = queue.schedules().await.unwrap();
    let catcher = stored.iter().find(|s| s.trigger.id == "catcher").unwrap();
    assert_eq!((catcher.fired, catcher.skipped), (due as u64, 0));
    assert_eq!(catcher.trigger.in_flight, crate::queue::InFlight::Retry);
    assert!(catcher.next_due.unwrap() > caught[due - 1].due_at);
    let skipper = stored.iter().find(|s| s.trigger.id == "skipper").unwrap();
    assert_eq!((skipper.fired, skipper.skipped), (1, due as u64 - 1));
    assert!(
        stored
            .iter()
            .any(|s| s.trigger.id == "nightly" && s.next_due.is_some())
    );
    // A sync without a schedule removes it; with a changed one starts it again.
    let mut changed = every_second("catcher", Missed::Skip);
    changed.schedule = Schedule::every("1h").unwrap();
    let synced = queue.sync_schedules(&[changed]).await.unwrap();
    assert_eq!(
        (synced.changed, synced.removed.len()),
        (vec!["catcher".to_owned()], 2)
    );
}

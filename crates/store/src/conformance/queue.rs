//! The [`RunQueue`](crate::queue::RunQueue) contract, and the schedules workers share.

use std::sync::Arc;

use chrono::Utc;
use serde_json::json;
use wayline_core::store::{RunQuery, StoreErrorKind};
use wayline_core::{RunStatus, RunStore, WorkflowStatus, WorkflowStore};

use super::runs::{finished_step, run};
use super::workflows::version;

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
        .expect("submit with a new run id succeeds");
    assert_eq!(
        (
            first.state,
            first.workflow_version,
            first.in_flight,
            first.attempts
        ),
        (QueueState::Queued, 3, InFlight::Retry, 0),
        "a submitted run waits, unattempted, with its version and in-flight policy"
    );
    assert_eq!(
        first.inputs["city"],
        json!("Oslo"),
        "a submitted run keeps its inputs"
    );
    let taken = queue
        .submit(&Submission::new("w", 3).run_id("q1"))
        .await
        .expect_err("submit with a queued run id is refused (Conflict)");
    assert_eq!(
        taken.kind(),
        StoreErrorKind::Conflict,
        "a queued run id is taken: {taken}"
    );
    runs.create_run(&run("direct", "w", Utc::now(), RunStatus::Running))
        .await
        .expect("create_run of a run outside the queue succeeds");
    let taken = queue
        .submit(&Submission::new("w", 3).run_id("direct"))
        .await
        .expect_err("submit with a run id used outside the queue is refused (Conflict)");
    assert_eq!(
        taken.kind(),
        StoreErrorKind::Conflict,
        "a run id used outside the queue is taken too: {taken}"
    );
    let second = queue
        .submit(&Submission::new("w", 3))
        .await
        .expect("submit without a run id succeeds");
    assert!(!second.run_id.is_empty(), "a new id when none is given");
    queue
        .submit(&Submission::new("w", 3).run_id("q3"))
        .await
        .expect("submit with a new run id succeeds");
    let stats = queue.stats().await.expect("stats succeeds");
    assert_eq!(
        (stats.queued, stats.running),
        (3, 0),
        "stats counts three queued runs, none running"
    );

    // Workers: a live name is not taken twice.
    queue
        .register(&heartbeat("w1", 1))
        .await
        .expect("register of a new worker name succeeds");
    queue
        .register(&heartbeat("w1", 1))
        .await
        .expect("register again by the same worker succeeds");
    let twice = queue
        .register(&heartbeat("w1", 2))
        .await
        .expect_err("register of a live worker's name by another process is refused (Conflict)");
    assert_eq!(
        twice.kind(),
        StoreErrorKind::Conflict,
        "a live worker's name is taken: {twice}"
    );
    queue
        .register(&heartbeat("w2", 2))
        .await
        .expect("register of a new worker name succeeds");

    // Claims: oldest first, each run once, never one the worker says it still holds.
    let claimed = queue
        .claim("w1", hour, 1, &[])
        .await
        .expect("claim of queued runs succeeds");
    assert_eq!(claimed.len(), 1, "claim takes at most `limit` runs");
    assert_eq!(claimed[0].entry.run_id, "q1", "oldest first");
    assert_eq!(
        claimed[0].entry.state,
        QueueState::Running,
        "a claimed run is running"
    );
    assert_eq!(claimed[0].lease.attempt, 1, "a first claim is attempt 1");
    let held = claimed[0].lease.clone();
    let more = queue
        .claim("w2", hour, 10, &["q3".to_owned()])
        .await
        .expect("claim with runs the worker still holds succeeds");
    let ids: Vec<_> = more.iter().map(|c| c.entry.run_id.clone()).collect();
    assert_eq!(
        ids,
        std::slice::from_ref(&second.run_id),
        "q1 is held, q3 excluded"
    );
    let w2_lease = more[0].lease.clone();
    let q3 = queue
        .claim("w2", hour, 10, &[])
        .await
        .expect("claim of queued runs succeeds");
    assert_eq!(q3.len(), 1, "a run no longer held back is claimed");
    assert!(
        queue
            .claim("w2", hour, 10, &[])
            .await
            .expect("claim of an empty queue succeeds")
            .is_empty(),
        "each run is claimed once"
    );
    assert_eq!(
        queue.stats().await.expect("stats succeeds").running,
        3,
        "stats counts the three claimed runs as running"
    );

    // Fenced writes: only the holder records the run.
    let mine = queue.fenced_runs("w1");
    let theirs = queue.fenced_runs("w2");
    let mut record = run("q1", "w", Utc::now(), RunStatus::Running);
    let refused = theirs
        .create_run(&record)
        .await
        .expect_err("fenced create_run by a worker not holding the run is refused (Conflict)");
    assert_eq!(
        refused.kind(),
        StoreErrorKind::Conflict,
        "a write by a worker not holding the run is a Conflict: {refused}"
    );
    mine.create_run(&record)
        .await
        .expect("fenced create_run by the holder succeeds");
    let step = finished_step("first", Utc::now());
    let refused = theirs
        .save_step("q1", &step)
        .await
        .expect_err("fenced save_step by a worker not holding the run is refused (Conflict)");
    assert_eq!(
        refused.kind(),
        StoreErrorKind::Conflict,
        "a write by a worker not holding the run is a Conflict: {refused}"
    );
    mine.save_step("q1", &step)
        .await
        .expect("fenced save_step by the holder succeeds");
    mine.save_step("direct", &step)
        .await
        .expect("a run outside the queue is not fenced");

    // Renewal, and cancellation of a running run from anywhere.
    let beat = heartbeat("w1", 1);
    let renewed = queue
        .renew(&beat, std::slice::from_ref(&held))
        .await
        .expect("renew of a held lease succeeds");
    assert!(
        renewed.lost.is_empty() && renewed.cancel.is_empty(),
        "a held lease is neither lost nor asked to cancel"
    );
    assert_eq!(
        queue
            .cancel("q1")
            .await
            .expect("cancel of a running run succeeds"),
        Cancellation::Requested,
        "cancelling a running run asks its holder to stop"
    );
    let renewed = queue
        .renew(&beat, std::slice::from_ref(&held))
        .await
        .expect("renew of a held lease succeeds");
    assert_eq!(
        renewed.cancel,
        ["q1"],
        "renew tells the holder of a cancel request"
    );
    record.status = RunStatus::Cancelled;
    mine.finish_run(&record)
        .await
        .expect("fenced finish_run by the holder succeeds");
    assert!(
        queue
            .release(&held, Release::Done)
            .await
            .expect("release of a held lease succeeds"),
        "a held lease is released"
    );
    assert!(
        !queue
            .release(&held, Release::Done)
            .await
            .expect("release of a released lease answers false, not an error"),
        "a lease is released once"
    );
    assert_eq!(
        queue
            .cancel("q1")
            .await
            .expect("cancel of an ended run succeeds"),
        Cancellation::Ended,
        "cancelling an ended run says it has ended"
    );
    let done = queue
        .entry("q1")
        .await
        .expect("entry of a queued run succeeds")
        .expect("a run released as done keeps its queue entry");
    assert_eq!(
        done.state,
        QueueState::Done,
        "a run released as done is done"
    );
    assert!(done.finished_at.is_some(), "a done run has an end time");

    // A lease that runs out is taken over; the old holder's writes and renewals fail.
    let short = queue
        .submit(&Submission::new("w", 3).run_id("q4"))
        .await
        .expect("submit with a new run id succeeds");
    let lost = queue
        .claim("w1", Wait::from_millis(1), 1, &[])
        .await
        .expect("claim with a short lease succeeds");
    assert_eq!(
        lost[0].entry.run_id, short.run_id,
        "the only queued run is claimed"
    );
    mine.create_run(&run("q4", "w", Utc::now(), RunStatus::Running))
        .await
        .expect("fenced create_run by the holder succeeds");
    tokio::time::sleep(Wait::from_millis(30)).await;
    let taken = queue
        .claim("w2", hour, 1, &[])
        .await
        .expect("claim of a run whose lease ran out succeeds");
    assert_eq!(
        taken[0].entry.run_id, "q4",
        "a run whose lease ran out is taken over"
    );
    assert_eq!(
        (taken[0].lease.attempt, taken[0].entry.attempts),
        (2, 2),
        "a takeover is the next attempt"
    );
    let renewed = queue
        .renew(&beat, &[lost[0].lease.clone()])
        .await
        .expect("renew of a lost lease answers, not an error");
    assert_eq!(
        renewed.lost,
        ["q4"],
        "renew tells the old holder its lease is lost"
    );
    let refused = mine
        .save_step("q4", &step)
        .await
        .expect_err("fenced save_step by a worker whose lease ran out is refused (Conflict)");
    assert_eq!(
        refused.kind(),
        StoreErrorKind::Conflict,
        "a write by the old holder is a Conflict: {refused}"
    );
    assert!(
        !queue
            .release(&lost[0].lease, Release::Done)
            .await
            .expect("release of a lost lease answers false, not an error"),
        "releasing a lost lease changes nothing"
    );
    theirs
        .save_step("q4", &step)
        .await
        .expect("fenced save_step by the new holder succeeds");

    // Requeued on shutdown: claimable again at once; blocked: waits for a person.
    assert!(
        queue
            .release(&taken[0].lease, Release::Requeue)
            .await
            .expect("release of a held lease to requeue its run succeeds"),
        "a held lease is released"
    );
    let again = queue
        .claim("w1", hour, 1, &[])
        .await
        .expect("claim of a requeued run succeeds");
    assert_eq!(
        (again[0].entry.run_id.as_str(), again[0].lease.attempt),
        ("q4", 3),
        "a requeued run is claimable at once, as the next attempt"
    );
    assert!(
        queue
            .release(
                &again[0].lease,
                Release::Blocked("step `pay` may have run".into())
            )
            .await
            .expect("release of a held lease as blocked succeeds"),
        "a held lease is released"
    );
    let blocked = queue
        .entry("q4")
        .await
        .expect("entry of a queued run succeeds")
        .expect("a run released as blocked keeps its queue entry");
    assert_eq!(
        blocked.state,
        QueueState::Blocked,
        "a run released as blocked is blocked"
    );
    assert_eq!(
        blocked.note.as_deref(),
        Some("step `pay` may have run"),
        "a blocked run keeps the reason it is blocked"
    );
    assert!(
        queue
            .claim("w1", hour, 10, &[])
            .await
            .expect("claim of a queue with only a blocked run succeeds")
            .is_empty(),
        "a blocked run waits for a person, not a worker"
    );
    assert!(
        !queue
            .requeue("q1", InFlight::Retry)
            .await
            .expect("requeue of a run not blocked answers false, not an error"),
        "only a blocked run is queued again"
    );
    assert!(
        queue
            .requeue("q4", InFlight::Skip)
            .await
            .expect("requeue of a blocked run succeeds"),
        "a blocked run is queued again"
    );
    let requeued = queue
        .claim("w1", hour, 10, &[])
        .await
        .expect("claim of a requeued run succeeds");
    assert_eq!(
        (
            requeued[0].entry.run_id.as_str(),
            requeued[0].entry.in_flight
        ),
        ("q4", InFlight::Skip),
        "a requeued run has the in-flight policy it was requeued with"
    );
    assert!(
        queue
            .release(&requeued[0].lease, Release::Blocked("again".into()))
            .await
            .expect("release of a held lease as blocked succeeds"),
        "a held lease is released"
    );

    // Cancelling a waiting run ends it at once, with a cancelled record.
    assert_eq!(
        queue
            .cancel("q4")
            .await
            .expect("cancel of a blocked run succeeds"),
        Cancellation::Cancelled,
        "cancelling a blocked run ends it at once"
    );
    assert_eq!(
        runs.run("q4")
            .await
            .expect("run of a cancelled run succeeds")
            .expect("a cancelled blocked run keeps its run record")
            .status,
        RunStatus::Cancelled,
        "a blocked run cancelled has a cancelled record"
    );
    let waiting = queue
        .submit(&Submission::new("w", 3).run_id("q5").input("n", 1))
        .await
        .expect("submit with a new run id succeeds");
    assert_eq!(
        queue
            .cancel(&waiting.run_id)
            .await
            .expect("cancel of a queued run succeeds"),
        Cancellation::Cancelled,
        "cancelling a queued run ends it at once"
    );
    let record = runs
        .run("q5")
        .await
        .expect("run of a cancelled run succeeds")
        .expect("a queued run cancelled before it started has a run record");
    assert_eq!(
        (
            record.status,
            record.workflow_version,
            &record.user_inputs["n"]
        ),
        (RunStatus::Cancelled, Some(3), &json!(1)),
        "a queued run cancelled has a cancelled record with its version and inputs"
    );
    assert_eq!(
        queue
            .entry("q5")
            .await
            .expect("entry of a queued run succeeds")
            .expect("a cancelled run keeps its queue entry")
            .state,
        QueueState::Cancelled,
        "a cancelled run's entry is cancelled"
    );
    let unknown = queue
        .cancel("nope")
        .await
        .expect_err("cancel of an unknown run is refused (NotFound)");
    assert_eq!(
        unknown.kind(),
        StoreErrorKind::NotFound,
        "cancelling an unknown run is NotFound: {unknown}"
    );

    // What the queue and its workers look like.
    let listed: Vec<_> = queue
        .entries(Some(QueueState::Running), 10)
        .await
        .expect("entries in a state succeeds")
        .into_iter()
        .map(|entry| entry.run_id)
        .collect();
    assert_eq!(
        listed,
        [second.run_id.clone(), "q3".to_owned()],
        "entries in a state, oldest first"
    );
    let workers = queue.workers().await.expect("workers succeeds");
    let w1 = workers
        .iter()
        .find(|w| w.name == "w1")
        .expect("workers lists a registered worker");
    let w2 = workers
        .iter()
        .find(|w| w.name == "w2")
        .expect("workers lists a registered worker");
    assert!(
        w1.alive && w2.alive,
        "workers heard from within their lease are alive"
    );
    assert_eq!(w1.finished, 1, "w1 finished q1");
    assert!(
        w1.runs.is_empty(),
        "a worker that released its runs holds none"
    );
    assert_eq!(w2.runs.len(), 2, "w2 holds two runs: {:?}", w2.runs);
    let mut stopping = heartbeat("w2", 2);
    stopping.stopping = true;
    queue
        .renew(&stopping, &[w2_lease])
        .await
        .expect("renew by a stopping worker succeeds");
    let workers = queue.workers().await.expect("workers succeeds");
    assert!(
        !workers
            .iter()
            .find(|w| w.name == "w2")
            .expect("workers lists a registered worker")
            .alive,
        "a worker that said it is stopping is not alive"
    );
    let page = runs
        .list_runs(&RunQuery::new().worker("w1"))
        .await
        .expect("list_runs of a worker succeeds");
    let ids: Vec<_> = page.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["q4", "q1"], "runs by the worker that last held them");
    assert_eq!(
        page.runs[0].worker.as_deref(),
        Some("w1"),
        "a summary names the worker that last held the run"
    );

    shared_schedules(&*queue, &*workflows).await;
}

/// Shared schedules: syncing is idempotent, each due time fires once however many callers
/// race, and missed due times are skipped or caught up as each schedule says.
async fn shared_schedules(queue: &dyn crate::queue::RunQueue, workflows: &dyn WorkflowStore) {
    use crate::schedule::{Missed, Schedule, Trigger};

    let mut active = version("ticker", 1);
    active.workflow.status = WorkflowStatus::Active;
    workflows
        .insert_workflow(&active)
        .await
        .expect("insert_workflow of a new workflow succeeds");
    let every_second = |id: &str, missed: Missed| {
        let mut trigger = Trigger::new("ticker", Schedule::every("1s").expect("a valid interval"));
        trigger.id = id.into();
        trigger.missed = missed;
        trigger.inputs.insert("q".into(), json!(id));
        trigger
    };
    let mut nightly = Trigger::new(
        "no-active",
        Schedule::cron("0 3 * * *").expect("a valid cron expression"),
    );
    nightly.id = "nightly".into();
    let mut catcher = every_second("catcher", Missed::CatchUp);
    catcher.in_flight = crate::queue::InFlight::Retry;
    let set = [every_second("skipper", Missed::Skip), catcher, nightly];
    let synced = queue
        .sync_schedules(&set)
        .await
        .expect("sync_schedules of new schedules succeeds");
    assert_eq!(
        synced.added,
        ["skipper", "catcher", "nightly"],
        "a first sync adds every schedule"
    );
    let again = queue
        .sync_schedules(&set)
        .await
        .expect("sync_schedules of the same set succeeds");
    assert_eq!(
        (again.added.len(), again.kept.len()),
        (0, 3),
        "syncing the same set changes nothing"
    );
    assert!(
        queue
            .fire_schedules()
            .await
            .expect("fire_schedules with nothing due succeeds")
            .is_empty(),
        "nothing due yet"
    );
    // Two due times pass with nobody firing; then four callers race.
    tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
    let racers: Vec<_> = (0..4).map(|_| queue.fire_schedules()).collect();
    let fires: Vec<_> = futures_util::future::join_all(racers)
        .await
        .into_iter()
        .flat_map(|fired| fired.expect("fire_schedules by racing callers succeeds"))
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
    assert!(
        caught.iter().all(|fire| fire.run_id.is_some()),
        "catch_up queues a run for each missed due time: {caught:?}"
    );
    assert!(
        caught
            .windows(2)
            .all(|pair| pair[0].due_at < pair[1].due_at),
        "each due time fires once, however many callers race: {caught:?}"
    );
    let skipped: Vec<_> = of("skipper");
    assert_eq!(
        skipped.len(),
        due,
        "skip records every missed due time: {fires:?}"
    );
    assert!(
        skipped[..due - 1].iter().all(|fire| fire.run_id.is_none())
            && skipped[due - 1].run_id.is_some(),
        "skip fires only the latest due time: {skipped:?}"
    );
    let run_id = caught[due - 1]
        .run_id
        .clone()
        .expect("catch_up queues a run for each missed due time");
    assert!(
        run_id.starts_with("catcher-"),
        "a scheduled run's id starts with the schedule's id: {run_id}"
    );
    let entry = queue
        .entry(&run_id)
        .await
        .expect("entry of a scheduled run succeeds")
        .expect("a run a schedule queues has a queue entry");
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
    let skipper_run = skipped[due - 1]
        .run_id
        .as_deref()
        .expect("skip queues a run for the latest due time");
    assert_eq!(
        queue
            .entry(skipper_run)
            .await
            .expect("entry of a scheduled run succeeds")
            .expect("a run a schedule queues has a queue entry")
            .in_flight,
        crate::queue::InFlight::Ask,
        "a run a schedule queues has the schedule's in-flight policy (ask by default)"
    );
    let stored = queue.schedules().await.expect("schedules succeeds");
    let catcher = stored
        .iter()
        .find(|s| s.trigger.id == "catcher")
        .expect("schedules lists every synced schedule");
    assert_eq!(
        (catcher.fired, catcher.skipped),
        (due as u64, 0),
        "catch_up counts every missed due time as fired"
    );
    assert_eq!(
        catcher.trigger.in_flight,
        crate::queue::InFlight::Retry,
        "a stored schedule keeps its in-flight policy"
    );
    assert!(
        catcher
            .next_due
            .expect("a schedule without an end has a next due time")
            > caught[due - 1].due_at,
        "the next due time is after the last one fired"
    );
    let skipper = stored
        .iter()
        .find(|s| s.trigger.id == "skipper")
        .expect("schedules lists every synced schedule");
    assert_eq!(
        (skipper.fired, skipper.skipped),
        (1, due as u64 - 1),
        "skip counts all but the latest missed due time as skipped"
    );
    assert!(
        stored
            .iter()
            .any(|s| s.trigger.id == "nightly" && s.next_due.is_some()),
        "a schedule whose workflow has no active version still has a next due time"
    );
    // A sync without a schedule removes it; with a changed one starts it again.
    let mut changed = every_second("catcher", Missed::Skip);
    changed.schedule = Schedule::every("1h").expect("a valid interval");
    let synced = queue
        .sync_schedules(&[changed])
        .await
        .expect("sync_schedules of a changed set succeeds");
    assert_eq!(
        (synced.changed, synced.removed.len()),
        (vec!["catcher".to_owned()], 2),
        "a sync starts a changed schedule again and removes those not in the set"
    );
}

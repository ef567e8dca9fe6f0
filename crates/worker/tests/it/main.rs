//! Integration tests of `wayline-worker` (one binary), on a throwaway PostgreSQL cluster and a
//! loopback mock API: workers sharing a queue, a run taken over from a lost worker, cancelling
//! from another host, shutdown handing runs back, and the database restarting mid-run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use wayline_core::store::StoredWorkflow;
use wayline_core::tool::ToolDefinition;
use wayline_core::{MemoryCatalog, RunStatus, RunStore, Step, StepStatus, Workflow, WorkflowStore};
use wayline_executor::Engine;
use wayline_executor::testing::{MockServer, Reply};
use wayline_store::PostgresStore;
use wayline_store::queue::{Cancellation, QueueState, RunQueue, Submission};
use wayline_worker::{Worker, WorkerOptions};

/// Calls by `run/step` (the run's input `n` and the step's path).
type Calls = Arc<Mutex<HashMap<String, usize>>>;

/// Steps `a`, `b`, `c` (GET `/a?n=…`, …); while `hold` is set, `/b` answers only after a
/// minute.
async fn api(hold: Arc<AtomicBool>) -> (MockServer, Calls) {
    let calls: Calls = Arc::default();
    let seen = Arc::clone(&calls);
    let server = MockServer::start(move |request| {
        // `n` is in the query of a GET, in the body of a POST.
        let n = request.query("n").or_else(|| {
            request
                .json()
                .and_then(|body| body["n"].as_str().map(str::to_owned))
        });
        let key = format!("{}{}", n.unwrap_or_default(), request.path());
        *seen.lock().unwrap().entry(key).or_default() += 1;
        let reply = Reply::json(200, json!({"ok": true}));
        if request.path() == "/b" && hold.load(Ordering::SeqCst) {
            reply.delay(Duration::from_secs(60))
        } else {
            reply
        }
    })
    .await
    .unwrap();
    (server, calls)
}

fn engine(server: &MockServer) -> wayline_executor::EngineBuilder {
    let tools = ["a", "b", "c"].map(|name| {
        let mut tool = ToolDefinition::new(format!("get_{name}"), server.url(""));
        tool.path = format!("/{name}");
        tool.parameters = vec!["n".into()];
        tool
    });
    Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
}

/// The store, with workflow `chain` version 1 (a → b → c, each sending the input `n`).
async fn store(cluster: &wayline_testkit::postgres::Cluster) -> Arc<PostgresStore> {
    let store = Arc::new(PostgresStore::open(&cluster.url("postgres")).unwrap());
    let mut workflow = Workflow::new("chain", "Chain");
    workflow
        .steps
        .push(Step::new("a", "get_a").map("n", "$input.n"));
    workflow.steps.push(
        Step::new("b", "get_b")
            .map("n", "$input.n")
            .map("after", "a.ok"),
    );
    workflow.steps.push(
        Step::new("c", "get_c")
            .map("n", "$input.n")
            .map("after", "b.ok"),
    );
    store
        .insert_workflow(&StoredWorkflow::new(workflow, 1, "sha256:chain"))
        .await
        .unwrap();
    store
}

fn options(name: &str) -> WorkerOptions {
    WorkerOptions::new(name)
        .concurrency(4)
        .lease(Duration::from_millis(900))
        .poll(Duration::from_millis(50))
        .grace(Duration::from_millis(300))
}

/// Waits (real time: the store's clock runs the leases) until `done` says so.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..300 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_share_the_queue_and_each_step_runs_once() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker pool test") else {
        return;
    };
    let store = store(&cluster).await;
    let (server, calls) = api(Arc::default()).await;
    for n in 0..24 {
        store
            .submit(
                &Submission::new("chain", 1)
                    .run_id(format!("r{n}"))
                    .input("n", n),
            )
            .await
            .unwrap();
    }
    let stop = Arc::new(tokio::sync::Notify::new());
    let workers: Vec<_> = ["w1", "w2"]
        .into_iter()
        .map(|name| {
            let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
            let engine = engine(&server);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let worker = Worker::new(store.clone(), store, engine, options(name));
                runtime
                    .block_on(worker.run(async move { stop.notified().await }))
                    .unwrap()
            })
        })
        .collect();
    until("every run is done", async || {
        store.stats().await.unwrap().queued + store.stats().await.unwrap().running == 0
    })
    .await;
    stop.notify_waiters();
    let reports: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let finished: u64 = reports.iter().map(|r| r.metrics.finished).sum();
    assert_eq!(finished, 24);
    assert!(
        reports.iter().all(|r| r.metrics.finished > 0),
        "both workers took runs: {reports:?}"
    );
    for n in 0..24 {
        let run = store.run(&format!("r{n}")).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Success, "r{n}");
        for step in ["a", "b", "c"] {
            assert_eq!(
                calls.lock().unwrap()[&format!("{n}/{step}")],
                1,
                "r{n} {step}"
            );
        }
    }
    let workers = store.workers().await.unwrap();
    assert_eq!(workers.len(), 2);
    assert!(workers.iter().all(|worker| !worker.alive), "both stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_workers_run_is_taken_over_without_repeating_finished_steps() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker takeover test") else {
        return;
    };
    let store = store(&cluster).await;
    let hold = Arc::new(AtomicBool::new(true));
    let (server, calls) = api(Arc::clone(&hold)).await;
    store
        .submit(&Submission::new("chain", 1).run_id("t1").input("n", 7))
        .await
        .unwrap();
    // The first worker reaches `b`, which hangs; then it is gone (its future dropped: no
    // renewal, no release, as with a killed process).
    let lost = Worker::new(
        store.clone(),
        store.clone(),
        engine(&server),
        options("lost"),
    );
    let watch = Arc::clone(&calls);
    tokio::select! {
        _ = lost.run(std::future::pending()) => panic!("the worker ended by itself"),
        () = until("step b is in flight", async || watch.lock().unwrap().contains_key("7/b")) => {}
    }
    drop(lost);
    hold.store(false, Ordering::SeqCst);
    let stored = store.run("t1").await.unwrap().unwrap();
    assert_eq!(stored.step_results[0].status, StepStatus::Success);
    let successor = Worker::new(
        store.clone(),
        store.clone(),
        engine(&server),
        options("next"),
    );
    let done = Arc::clone(&store);
    let report = successor
        .run(async move {
            until("t1 is done", async || {
                done.entry("t1").await.unwrap().unwrap().state == QueueState::Done
            })
            .await;
        })
        .await
        .unwrap();
    assert_eq!((report.metrics.claimed, report.metrics.taken_over), (1, 1));
    let run = store.run("t1").await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls["7/a"], 1, "a finished before the worker was lost");
    assert_eq!(
        calls["7/b"], 2,
        "b was in flight (a GET: safe to send again)"
    );
    assert_eq!(calls["7/c"], 1);
    let entry = store.entry("t1").await.unwrap().unwrap();
    assert_eq!((entry.worker.as_deref(), entry.attempts), (Some("next"), 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_run_is_cancelled_from_elsewhere_and_shutdown_hands_runs_back() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker cancel test") else {
        return;
    };
    let store = store(&cluster).await;
    let hold = Arc::new(AtomicBool::new(true));
    let (server, calls) = api(Arc::clone(&hold)).await;
    for id in ["x1", "x2"] {
        store
            .submit(&Submission::new("chain", 1).run_id(id).input("n", id))
            .await
            .unwrap();
    }
    let worker = Worker::new(store.clone(), store.clone(), engine(&server), options("w"));
    let other_host = Arc::clone(&store);
    let watch = Arc::clone(&calls);
    let report = worker
        .run(async move {
            until("both runs are inside b", async || {
                let calls = watch.lock().unwrap();
                calls.contains_key("x1/b") && calls.contains_key("x2/b")
            })
            .await;
            assert_eq!(
                other_host.cancel("x1").await.unwrap(),
                Cancellation::Requested
            );
            until("x1 is cancelled", async || {
                other_host.entry("x1").await.unwrap().unwrap().state == QueueState::Done
            })
            .await;
            // Shutting down now: x2 is still inside b, past the grace time.
        })
        .await
        .unwrap();
    assert_eq!(report.metrics.cancel_requests, 1);
    let cancelled = store.run("x1").await.unwrap().unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert_eq!(report.metrics.requeued, 1);
    let handed_back = store.entry("x2").await.unwrap().unwrap();
    assert_eq!(handed_back.state, QueueState::Queued);
    // Another worker finishes it, without calling `a` again.
    hold.store(false, Ordering::SeqCst);
    let next = Worker::new(store.clone(), store.clone(), engine(&server), options("w2"));
    let done = Arc::clone(&store);
    next.run(async move {
        until("x2 is done", async || {
            done.entry("x2").await.unwrap().unwrap().state == QueueState::Done
        })
        .await;
    })
    .await
    .unwrap();
    assert_eq!(
        store.run("x2").await.unwrap().unwrap().status,
        RunStatus::Success
    );
    assert_eq!(calls.lock().unwrap()["x2/a"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsafe_step_in_flight_blocks_the_run_until_a_person_requeues_it() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker in-flight policy test") else {
        return;
    };
    let store = Arc::new(PostgresStore::open(&cluster.url("postgres")).unwrap());
    let hold = Arc::new(AtomicBool::new(true));
    let (server, calls) = api(Arc::clone(&hold)).await;
    // `b` is a POST without an idempotency key: not safe to send twice.
    let mut workflow = Workflow::new("pay", "Pay");
    workflow
        .steps
        .push(Step::new("a", "get_a").map("n", "$input.n"));
    workflow.steps.push(
        Step::new("b", "post_b")
            .map("n", "$input.n")
            .map("after", "a.ok"),
    );
    store
        .insert_workflow(&StoredWorkflow::new(workflow, 1, "sha256:pay"))
        .await
        .unwrap();
    let engine = || {
        let mut get = ToolDefinition::new("get_a", server.url(""));
        get.path = "/a".into();
        let mut post = ToolDefinition::new("post_b", server.url(""));
        post.path = "/b".into();
        post.method = "POST".into();
        Engine::builder(Arc::new(MemoryCatalog::from_tools([get, post])))
    };
    store
        .submit(&Submission::new("pay", 1).run_id("p1").input("n", "p1"))
        .await
        .unwrap();
    let lost = Worker::new(store.clone(), store.clone(), engine(), options("first"));
    let watch = Arc::clone(&calls);
    tokio::select! {
        _ = lost.run(std::future::pending()) => panic!("the worker ended by itself"),
        () = until("the POST is in flight", async || watch.lock().unwrap().contains_key("p1/b")) => {}
    }
    drop(lost);
    hold.store(false, Ordering::SeqCst);
    // The next worker does not send the POST again: the run waits for a person.
    let next = Worker::new(store.clone(), store.clone(), engine(), options("second"));
    let seen = Arc::clone(&store);
    let report = next
        .run(async move {
            until("p1 is blocked", async || {
                seen.entry("p1").await.unwrap().unwrap().state == QueueState::Blocked
            })
            .await;
        })
        .await
        .unwrap();
    assert_eq!(report.metrics.blocked, 1);
    let blocked = store.entry("p1").await.unwrap().unwrap();
    let note = blocked.note.unwrap();
    assert!(
        note.contains("`b`") && note.contains("runs requeue p1"),
        "{note}"
    );
    assert_eq!(calls.lock().unwrap()["p1/b"], 1);
    // Checked, and it did not take effect: send it again.
    assert!(
        store
            .requeue("p1", wayline_store::queue::InFlight::Retry)
            .await
            .unwrap()
    );
    let last = Worker::new(store.clone(), store.clone(), engine(), options("third"));
    let seen = Arc::clone(&store);
    last.run(async move {
        until("p1 is done", async || {
            seen.entry("p1").await.unwrap().unwrap().state == QueueState::Done
        })
        .await;
    })
    .await
    .unwrap();
    assert_eq!(
        store.run("p1").await.unwrap().unwrap().status,
        RunStatus::Success
    );
    let calls = calls.lock().unwrap().clone();
    assert_eq!((calls["p1/a"], calls["p1/b"]), (1, 2));
}

/// As [`api`], with `/b` and `/c` answering after `b` and `c`.
async fn slow_api(b: Duration, c: Duration) -> (MockServer, Calls) {
    let calls: Calls = Arc::default();
    let seen = Arc::clone(&calls);
    let server = MockServer::start(move |request| {
        let key = format!(
            "{}{}",
            request.query("n").unwrap_or_default(),
            request.path()
        );
        *seen.lock().unwrap().entry(key).or_default() += 1;
        let reply = Reply::json(200, json!({"ok": true}));
        match request.path() {
            "/b" => reply.delay(b),
            "/c" => reply.delay(c),
            _ => reply,
        }
    })
    .await
    .unwrap();
    (server, calls)
}

/// An outage during one run: worker `w` (with `lease`) works on the queue; once every call in
/// `in_flight` was made, the database stops (every connection cut) for `length` and starts
/// again; the worker stops when run `run_id` is done.
struct Outage<'t> {
    cluster: &'t Arc<wayline_testkit::postgres::Cluster>,
    store: &'t Arc<PostgresStore>,
    calls: &'t Calls,
    lease: Duration,
    in_flight: &'t [&'t str],
    length: Duration,
    run_id: &'t str,
}

impl Outage<'_> {
    async fn work_through(&self, server: &MockServer) -> wayline_worker::Report {
        let (store, cluster) = (self.store, self.cluster);
        let worker = Worker::new(
            store.clone(),
            store.clone(),
            engine(server),
            options("w").lease(self.lease),
        );
        let restart = async {
            until("the calls are in flight", async || {
                let calls = self.calls.lock().unwrap();
                self.in_flight.iter().all(|call| calls.contains_key(*call))
            })
            .await;
            let server = Arc::clone(cluster);
            tokio::task::spawn_blocking(move || server.stop())
                .await
                .unwrap();
            tokio::time::sleep(self.length).await;
            let server = Arc::clone(cluster);
            tokio::task::spawn_blocking(move || server.start_again())
                .await
                .unwrap();
            until("the run is done", async || {
                matches!(store.entry(self.run_id).await, Ok(Some(entry)) if entry.state == QueueState::Done)
            })
            .await;
        };
        worker.run(restart).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_mid_run_pauses_the_run_instead_of_failing_it() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker outage test") else {
        return;
    };
    let cluster = Arc::new(cluster);
    let store = store(&cluster).await;
    // `a`, then `b` and `c` at once: `b` answers into the outage, `c` well after it.
    let (server, calls) = slow_api(Duration::from_millis(700), Duration::from_secs(5)).await;
    let mut fork = Workflow::new("fork", "Fork");
    fork.steps
        .push(Step::new("a", "get_a").map("n", "$input.n"));
    for id in ["b", "c"] {
        fork.steps.push(
            Step::new(id, format!("get_{id}"))
                .map("n", "$input.n")
                .map("after", "a.ok"),
        );
    }
    store
        .insert_workflow(&StoredWorkflow::new(fork, 1, "sha256:fork"))
        .await
        .unwrap();
    store
        .submit(&Submission::new("fork", 1).run_id("o1").input("n", 3))
        .await
        .unwrap();
    // The result of `b` meets the outage; the server is back before `c` answers.
    let outage = Outage {
        cluster: &cluster,
        store: &store,
        calls: &calls,
        lease: Duration::from_secs(10),
        in_flight: &["3/b", "3/c"],
        length: Duration::from_secs(1),
        run_id: "o1",
    };
    let report = outage.work_through(&server).await;
    let run = store.run("o1").await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert!(
        run.step_results
            .iter()
            .all(|result| result.status == StepStatus::Success)
    );
    let calls = calls.lock().unwrap().clone();
    assert_eq!(
        (calls["3/a"], calls["3/b"], calls["3/c"]),
        (1, 2, 1),
        "only `b`, whose result the outage lost, ran again"
    );
    assert!(report.metrics.store_errors >= 1, "{report:?}");
    assert_eq!(store.entry("o1").await.unwrap().unwrap().attempts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_by_an_outage_goes_back_to_the_queue_when_the_database_is_back() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker release test") else {
        return;
    };
    let cluster = Arc::new(cluster);
    let store = store(&cluster).await;
    let (server, calls) = slow_api(Duration::from_secs(1), Duration::ZERO).await;
    store
        .submit(&Submission::new("chain", 1).run_id("q1").input("n", 5))
        .await
        .unwrap();
    // The result of `b` and the release of the stopped run both meet the outage; the worker
    // tries the release again until the server is back. The lease is long: a run left to it
    // would not be done before `until` gives up.
    let outage = Outage {
        cluster: &cluster,
        store: &store,
        calls: &calls,
        lease: Duration::from_secs(60),
        in_flight: &["5/b"],
        length: Duration::from_secs(2),
        run_id: "q1",
    };
    let report = outage.work_through(&server).await;
    assert_eq!(
        store.run("q1").await.unwrap().unwrap().status,
        RunStatus::Success
    );
    let calls = calls.lock().unwrap().clone();
    assert_eq!((calls["5/a"], calls["5/b"], calls["5/c"]), (1, 2, 1));
    assert_eq!(
        (report.metrics.requeued, report.metrics.finished),
        (1, 1),
        "{report:?}"
    );
    assert_eq!(store.entry("q1").await.unwrap().unwrap().attempts, 2);
}

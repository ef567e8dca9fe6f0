//! `wayline worker` processes sharing a throwaway PostgreSQL store: failover when workers are
//! SIGKILLed mid-run, and the queue commands.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use wayline_core::RunStatus;
use wayline_executor::testing::{MockServer, Reply};
use wayline_store::queue::{InFlight, QueueState, RunQueue, Submission};
use wayline_store::{PostgresStore, RunStore};
use wayline_testkit::postgres::Cluster;

/// Steps in the failover workflow: odd ones GET (safe to repeat), even ones POST with an
/// idempotency key (safe to repeat only because the key is sent again).
const STEPS: usize = 20;

/// One call the mock API saw.
#[derive(Debug, Clone)]
struct Call {
    at: Instant,
    run: String,
    step: String,
    worker: String,
    key: Option<String>,
}

type Calls = Arc<Mutex<Vec<Call>>>;

/// The API: every step answers after a short latency (so that kills land inside calls),
/// recording who called it.
async fn api() -> (MockServer, Calls) {
    let calls: Calls = Arc::default();
    let log = Arc::clone(&calls);
    let server = MockServer::start_unrecorded(move |request| {
        log.lock().unwrap().push(Call {
            at: Instant::now(),
            run: request.query("n").unwrap_or_default(),
            step: request.path().trim_start_matches('/').to_owned(),
            worker: request.header("x-worker").unwrap_or_default().to_owned(),
            key: request.header("idempotency-key").map(str::to_owned),
        });
        Reply::json(200, json!({"ok": true})).delay(Duration::from_millis(3))
    })
    .await
    .unwrap();
    (server, calls)
}

/// Tool files for the steps, and the workflow chaining them.
fn write_files(dir: &Path, server: &MockServer) -> (String, String) {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let mut workflow = String::from("id: chain20\nname: Twenty steps\nsteps:\n");
    for index in 1..=STEPS {
        let post = index % 2 == 0;
        let extra = if post {
            "method: POST\nidempotency_key: Idempotency-Key\n"
        } else {
            "method: GET\n"
        };
        std::fs::write(
            tools.join(format!("s{index}.yaml")),
            format!(
                "id: s{index}\nname: s{index}\nbase_url: {}\npath: /s{index}\n{extra}request:\n  query_params: [n]\n  headers: {{X-Worker: \"${{WORKER_TAG}}\"}}\n",
                server.url("")
            ),
        )
        .unwrap();
        let after = if index == 1 {
            String::new()
        } else {
            format!(", after: s{}.ok", index - 1)
        };
        workflow.push_str(&format!(
            "  - {{id: s{index}, tool_id: s{index}, input_mapping: {{n: $input.n{after}}}}}\n"
        ));
    }
    let file = dir.join("chain20.yaml");
    std::fs::write(&file, workflow).unwrap();
    (tools.display().to_string(), file.display().to_string())
}

/// Starts worker `name`; its stderr goes to `logs/NAME.log` (a pipe nobody reads would fill
/// and stop it).
fn worker(logs: &Path, name: &str, tools: &str, url: &str, concurrency: usize) -> Child {
    let log = std::fs::File::create(logs.join(format!("{name}.log"))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "worker",
            "--tools",
            tools,
            "--store",
            url,
            "--name",
            name,
            "--concurrency",
            &concurrency.to_string(),
            "--lease",
            "2s",
            "--poll",
            "50ms",
            "--grace",
            "5s",
        ])
        .env("WORKER_TAG", name)
        .env("RUST_LOG", "warn,wayline_worker=info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// A small deterministic generator, seeded from the clock (the seed is printed to reproduce
/// a failure).
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

fn wayline_ok(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "wayline {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Saves and submits through the binary once, then the rest through the library.
async fn submit_runs(cluster: &Cluster, workflow: &str, runs: usize) -> Arc<PostgresStore> {
    let url = cluster.url("postgres");
    wayline_ok(&["workflow", "save", workflow, "--store", &url]);
    let first = wayline_ok(&[
        "runs",
        "submit",
        "chain20",
        "--version",
        "1",
        "--input",
        "n=r0",
        "--run-id",
        "r0",
        "--in-flight",
        "ask",
        "--store",
        &url,
    ]);
    assert_eq!(first.trim(), "r0");
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    for index in 1..runs {
        store
            .submit(
                &Submission::new("chain20", 1)
                    .run_id(format!("r{index}"))
                    .input("n", format!("r{index}")),
            )
            .await
            .unwrap();
    }
    store
}

/// Three workers, 300 runs of 20 steps; three times, one worker is SIGKILLed at a random
/// moment and a fresh one takes its place. Every run finishes; no step is called again unless
/// its first call was in flight in a worker that was then killed; a POST is never sent twice
/// without the same idempotency key. A soak test (about 10 s on 2 cores, more on a slow
/// PostgreSQL): `.ci/run` runs it in a step of its own (`cargo test --workspace --tests --
/// --ignored soak`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "soak: .ci/run runs it in its own step"]
async fn soak_killed_workers_runs_finish_elsewhere_without_repeating_finished_steps() {
    let Some(cluster) = wayline_testkit::postgres::start("the worker failover test") else {
        return;
    };
    let (server, calls) = api().await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = write_files(dir.path(), &server);
    let url = cluster.url("postgres");
    let runs = 300;
    let store = submit_runs(&cluster, &workflow, runs).await;
    let concurrency = 8;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("failover test seed: {seed}");
    let mut random = Random(seed);
    let mut workers: Vec<(String, Child)> = (1..=3)
        .map(|n| {
            let name = format!("w{n}");
            let child = worker(dir.path(), &name, &tools, &url, concurrency);
            (name, child)
        })
        .collect();
    let mut killed: HashMap<String, Instant> = HashMap::new();
    for round in 0..3 {
        // A random moment while runs are still going.
        let wait = 300 + random.below(1200);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let victim = random.below(workers.len() as u64) as usize;
        let (name, mut child) = workers.remove(victim);
        child.kill().unwrap();
        child.wait().unwrap();
        killed.insert(name.clone(), Instant::now());
        let stats = store.stats().await.unwrap();
        eprintln!("round {round}: killed {name} after {wait} ms ({stats:?})");
        let fresh = format!("w{}", 4 + round);
        let child = worker(dir.path(), &fresh, &tools, &url, concurrency);
        workers.push((fresh, child));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stats = store.stats().await.unwrap();
        if stats.queued + stats.running + stats.blocked == 0 {
            break;
        }
        if Instant::now() > deadline {
            for (name, _) in &workers {
                let log = std::fs::read_to_string(dir.path().join(format!("{name}.log")));
                eprintln!("--- {name}:\n{}", log.unwrap_or_default());
            }
            panic!("the runs did not finish: {stats:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The survivors stop gracefully; each says how many leases it lost (a slow renewal on a
    // loaded machine may lose one, which is allowed: the run goes on elsewhere).
    let mut lost_leases: HashSet<String> = HashSet::new();
    for (name, mut child) in workers {
        let pid = child.id().to_string();
        Command::new("kill").args(["-INT", &pid]).status().unwrap();
        let status = child.wait().unwrap();
        let stderr = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
        assert!(status.success(), "{name}: {stderr}");
        if !stderr.contains(" 0 lost to other workers") {
            lost_leases.insert(name);
        }
    }
    // Every run finished, and succeeded.
    for index in 0..runs {
        let id = format!("r{index}");
        let run = store.run(&id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Success, "{id}");
        assert_eq!(
            store.entry(&id).await.unwrap().unwrap().state,
            QueueState::Done
        );
    }
    let calls = calls.lock().unwrap().clone();
    // The last call each worker made for each run.
    let mut last_call: HashMap<(String, String), Instant> = HashMap::new();
    for call in &calls {
        let last = last_call
            .entry((call.run.clone(), call.worker.clone()))
            .or_insert(call.at);
        *last = (*last).max(call.at);
    }
    let mut by_step: HashMap<(String, String), Vec<Call>> = HashMap::new();
    for call in calls {
        by_step
            .entry((call.run.clone(), call.step.clone()))
            .or_default()
            .push(call);
    }
    assert_eq!(
        by_step.len(),
        runs * STEPS,
        "every step of every run was called"
    );
    let mut repeated = 0;
    for ((run, step), calls) in &by_step {
        let post = step.trim_start_matches('s').parse::<usize>().unwrap() % 2 == 0;
        if post {
            let keys: HashSet<_> = calls.iter().map(|call| call.key.clone()).collect();
            assert_eq!(
                keys.len(),
                1,
                "{run} {step}: one key for every send: {keys:?}"
            );
            assert!(
                keys.iter().all(Option::is_some),
                "{run} {step}: a POST sent without its idempotency key"
            );
        }
        if calls.len() == 1 {
            continue;
        }
        repeated += 1;
        // Every call but the last came from a worker that stopped working on the run right
        // after it (it called nothing later for this run: the step had not finished, or the
        // worker would have gone on to the next one), killed later or having lost its lease.
        for earlier in &calls[..calls.len() - 1] {
            let by = &earlier.worker;
            assert_eq!(
                last_call[&(run.clone(), by.clone())],
                earlier.at,
                "{run} {step}: {by} went on with the run after this call, so the step had finished; yet it was called again: {calls:?}"
            );
            match killed.get(by) {
                // A request sent just before the kill may reach the API a moment after it.
                Some(killed_at) => assert!(
                    earlier.at < *killed_at + Duration::from_millis(500),
                    "{run} {step}: {by} called it after it was killed"
                ),
                None => assert!(
                    lost_leases.contains(by),
                    "{run} {step} was called again although {by}, which called it first, was neither killed nor lost its lease: {calls:?}"
                ),
            }
        }
    }
    let most = killed.len() * concurrency + lost_leases.len() * concurrency * 3;
    assert!(
        repeated <= most,
        "{repeated} steps were called more than once; at most one in-flight step per run held by a lost worker ({most})"
    );
    eprintln!(
        "failover: {runs} runs, {} kills, {repeated} in-flight steps sent again, workers that lost a lease: {lost_leases:?}",
        killed.len()
    );
}

/// Three workers and a schedule firing every second for 20 s: exactly 20 runs, whichever
/// worker fires each due time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_fire_a_shared_schedule_once_per_due_time() {
    let Some(cluster) = wayline_testkit::postgres::start("the shared schedule test") else {
        return;
    };
    let (server, calls) = api().await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, _) = write_files(dir.path(), &server);
    let url = cluster.url("postgres");
    let workflow = dir.path().join("tick.yaml");
    std::fs::write(
        &workflow,
        "id: tick\nname: Tick\nsteps:\n  - {id: s1, tool_id: s1, input_mapping: {n: $input.n}}\n",
    )
    .unwrap();
    let workflow = workflow.display().to_string();
    wayline_ok(&["workflow", "save", &workflow, "--store", &url]);
    wayline_ok(&[
        "workflow", "approve", "tick", "--by", "ada", "--store", &url,
    ]);
    let tag = [("WORKER_TAG", "activation")];
    let activated = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "workflow",
            "activate",
            "tick",
            "--tools",
            &tools,
            "--store",
            &url,
            "--input",
            "n=activation",
        ])
        .envs(tag)
        .output()
        .unwrap();
    assert!(activated.status.success(), "{activated:?}");
    let workers: Vec<(String, Child)> = (1..=3)
        .map(|n| {
            let name = format!("s{n}");
            let child = worker(dir.path(), &name, &tools, &url, 4);
            (name, child)
        })
        .collect();
    let until = chrono::Utc::now() + chrono::Duration::milliseconds(20_500);
    let schedules = dir.path().join("schedules.yaml");
    std::fs::write(
        &schedules,
        format!(
            "- {{id: tick, workflow_id: tick, every: 1s, until: \"{}\", inputs: {{n: tick}}, in_flight: retry}}\n",
            until.to_rfc3339()
        ),
    )
    .unwrap();
    let synced = wayline_ok(&[
        "schedule",
        "sync",
        &schedules.display().to_string(),
        "--store",
        &url,
    ]);
    assert_eq!(synced.trim(), "added: tick");
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let schedules = store.schedules().await.unwrap();
        let stats = store.stats().await.unwrap();
        if schedules[0].next_due.is_none() && stats.queued + stats.running == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the schedule did not end: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for (name, mut child) in workers {
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
        assert!(status.success(), "{name}: {log}");
    }
    let listed = wayline_ok(&["schedule", "list", "--store", &url]);
    assert!(listed.contains("(20 fired, 0 skipped)"), "{listed}");
    let listed: serde_json::Value = serde_json::from_str(&wayline_ok(&[
        "schedule", "list", "--store", &url, "--format", "json",
    ]))
    .unwrap();
    assert_eq!(listed[0]["in_flight"], "retry", "{listed:#}");
    let entries = store.entries(None, 1000).await.unwrap();
    let fired: Vec<_> = entries
        .iter()
        .filter(|entry| entry.run_id.starts_with("tick-"))
        .collect();
    assert_eq!(fired.len(), 20, "exactly 20 runs: {fired:#?}");
    for entry in &fired {
        assert_eq!(entry.state, QueueState::Done);
        assert_eq!(entry.in_flight, InFlight::Retry, "the schedule's policy");
        let run = store.run(&entry.run_id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Success, "{}", entry.run_id);
    }
    let scheduled_calls = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|call| call.run == "tick")
        .count();
    assert_eq!(scheduled_calls, 20, "one call per fire");

    // With the workers stopped: a queued run is the workers', not `runs resume`'s; it is
    // cancelled from here and ends with a cancelled record.
    let extra = wayline_ok(&["runs", "submit", "tick", "--input", "n=x", "--store", &url]);
    let extra = extra.trim();
    let resumed = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["runs", "resume", extra, "--tools", &tools, "--store", &url])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(2), "{resumed:?}");
    assert!(
        String::from_utf8_lossy(&resumed.stderr).contains("is in the run queue (queued)"),
        "{resumed:?}"
    );
    let queued = wayline_ok(&["runs", "queue", "--state", "queued", "--store", &url]);
    assert!(queued.starts_with(extra), "{queued}");
    let cancelled = wayline_ok(&["runs", "cancel", extra, "--store", &url, "--format", "json"]);
    let cancelled: serde_json::Value = serde_json::from_str(&cancelled).unwrap();
    assert_eq!(cancelled["cancellation"], "cancelled");
    let shown = wayline_ok(&["runs", "show", extra, "--store", &url, "--format", "json"]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["status"], "cancelled");
    let workers = wayline_ok(&["workers", "list", "--store", &url, "--format", "json"]);
    let workers: serde_json::Value = serde_json::from_str(&workers).unwrap();
    assert_eq!(workers["workers"].as_array().unwrap().len(), 3);
    assert!(
        workers["workers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["alive"] == false)
    );
}

/// A store's password appears in no message, whatever fails.
#[test]
fn a_postgres_password_is_never_printed() {
    let url = "postgres://ops:hunter2-secret@127.0.0.1:1/wayline";
    for args in [
        vec!["runs", "list", "--store", url],
        vec!["workers", "list", "--store", url, "--format", "json"],
        vec!["runs", "submit", "w", "--store", url],
        vec!["schedule", "list", "--store", url],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(&args)
            .output()
            .unwrap();
        let everything = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.status.success(), "{args:?}: {everything}");
        assert!(!everything.contains("hunter2"), "{args:?}: {everything}");
        assert!(
            everything.contains("postgres://ops:***@127.0.0.1:1/wayline"),
            "{args:?}: {everything}"
        );
        // Given as an argument, where `ps` shows it: the command says where it belongs.
        assert!(
            everything.contains("put the URL in WAYLINE_STORE instead"),
            "{args:?}: {everything}"
        );
    }
    // Nor where the store is not PostgreSQL at all: the queue commands say what to use.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("w.db").display().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["workers", "list", "--store", &local])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("has no run queue"),
        "{output:?}"
    );
}

/// A worker started with `--learn --sut` records what its runs teach in the knowledge kept in
/// the store's own database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learning_worker_records_its_runs_in_the_stores_knowledge() {
    let Some(cluster) = wayline_testkit::postgres::start("the learning worker test") else {
        return;
    };
    let (server, _) = api().await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = write_files(dir.path(), &server);
    let url = cluster.url("postgres");
    let store = submit_runs(&cluster, &workflow, 6).await;
    let log = dir.path().join("learner.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "worker", "--tools", &tools, "--store", &url, "--name", "learner", "--poll", "50ms",
            "--learn", "--sut", "demo",
        ])
        .env("WORKER_TAG", "learner")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        let stats = store.stats().await.unwrap();
        if stats.queued + stats.running == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(child.wait().unwrap().success());
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("learned: what the runs taught is recorded in the knowledge of `demo`"),
        "{said}"
    );
    let shown: serde_json::Value = serde_json::from_str(&wayline_ok(&[
        "knowledge",
        "show",
        "--sut",
        "demo",
        "--knowledge",
        &url,
        "--format",
        "json",
    ]))
    .unwrap();
    let operations = &shown["stats"]["operations"];
    for index in 1..=STEPS {
        assert_eq!(
            operations[format!("s{index}")]["successes"],
            6,
            "s{index}: {operations:#}"
        );
    }
    assert!(
        !shown["patterns"].as_array().unwrap().is_empty(),
        "the saved workflow's steps make a pattern: {shown:#}"
    );
    // Without `--knowledge`, the knowledge commands look beside the store `WAYLINE_STORE`
    // names, where the workers sharing it learn.
    let home = tempfile::tempdir().unwrap();
    let beside = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["knowledge", "show", "--sut", "demo", "--format", "json"])
        .env("WAYLINE_STORE", &url)
        .env("WAYLINE_HOME", home.path())
        .output()
        .unwrap();
    assert!(beside.status.success(), "{beside:?}");
    let beside: serde_json::Value = serde_json::from_slice(&beside.stdout).unwrap();
    assert_eq!(beside, shown);
}

//! Workers sharing a PostgreSQL store (numbers and command in `docs/benchmarks.md`), with real
//! `wayline worker` processes and a throwaway cluster that syncs its commits as a production
//! server does:
//!
//! - throughput: queued runs of a 10-step chain against a loopback API, drained by 1, 2 and 4
//!   workers (8 runs at once each); runs and steps per second — 400 runs against an API that
//!   answers at once (what the store and the machine can do), and 200 against one that takes
//!   20 ms a call (runs waiting on their API, where more workers add capacity);
//! - takeover: a worker holding 8 runs, each inside a slow step, is SIGKILLed; how long until
//!   another worker sends that step again (goal: under the lease time plus one second).
//!
//! `cargo bench -p wayline-cli --bench workers`

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use wayline_executor::testing::{MockServer, Reply};
use wayline_store::PostgresStore;
use wayline_store::queue::{RunQueue, Submission};
use wayline_testkit::postgres::Cluster;

const STEPS: usize = 10;
const CONCURRENCY: usize = 8;
const LEASE: &str = "2s";

/// Calls of the slow step: who sent it, and when.
type SlowCalls = Arc<Mutex<Vec<(String, Instant)>>>;

fn write_files(dir: &Path, server: &MockServer) -> String {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for name in ["step", "slow", "wait"] {
        std::fs::write(
            tools.join(format!("{name}.yaml")),
            format!(
                "id: {name}\nname: {name}\nbase_url: {}\npath: /{name}\nrequest:\n  query_params: [n]\n  headers: {{X-Worker: \"${{WORKER_TAG}}\"}}\n",
                server.url("")
            ),
        )
        .unwrap();
    }
    for (workflow, tool) in [("chain", "step"), ("waits", "wait")] {
        let mut chain = format!("id: {workflow}\nname: {workflow}\nsteps:\n");
        for index in 0..STEPS {
            let after = if index == 0 {
                String::new()
            } else {
                format!(", after: s{}.ok", index - 1)
            };
            chain.push_str(&format!(
                "  - {{id: s{index}, tool_id: {tool}, input_mapping: {{n: $input.n{after}}}}}\n"
            ));
        }
        std::fs::write(dir.join(format!("{workflow}.yaml")), chain).unwrap();
    }
    std::fs::write(
        dir.join("stall.yaml"),
        "id: stall\nname: Stall\nsteps:\n  - {id: a, tool_id: step, input_mapping: {n: $input.n}}\n  - {id: b, tool_id: slow, input_mapping: {n: $input.n, after: a.ok}}\n",
    )
    .unwrap();
    tools.display().to_string()
}

fn wayline(args: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "wayline {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn worker(name: &str, tools: &str, url: &str) -> Child {
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
            &CONCURRENCY.to_string(),
            "--lease",
            LEASE,
            "--poll",
            "100ms",
        ])
        .env("WORKER_TAG", name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

/// A database of its own with the workflows saved, for one measurement.
fn database(cluster: &Cluster, name: &str, dir: &Path) -> String {
    cluster.psql("postgres", &format!("CREATE DATABASE {name}"));
    let url = cluster.url(name);
    for workflow in ["chain.yaml", "waits.yaml", "stall.yaml"] {
        let file = dir.join(workflow).display().to_string();
        wayline(&["workflow", "save", &file, "--store", &url]);
    }
    url
}

fn throughput(
    runtime: &tokio::runtime::Runtime,
    cluster: &Cluster,
    dir: &Path,
    tools: &str,
    workflow: &str,
    runs: usize,
) {
    for workers in [1, 2, 4] {
        let url = database(cluster, &format!("{workflow}_{workers}"), dir);
        let store = Arc::new(PostgresStore::open(&url).unwrap());
        runtime.block_on(async {
            for index in 0..runs {
                store
                    .submit(&Submission::new(workflow, 1).input("n", index))
                    .await
                    .unwrap();
            }
        });
        let started = Instant::now();
        let children: Vec<Child> = (0..workers)
            .map(|index| worker(&format!("w{index}"), tools, &url))
            .collect();
        runtime.block_on(async {
            loop {
                let stats = store.stats().await.unwrap();
                if stats.queued + stats.running == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let elapsed = started.elapsed().as_secs_f64();
        children.into_iter().for_each(stop);
        println!(
            "throughput ({workflow}), {workers} worker(s) x {CONCURRENCY}: {runs} runs of {STEPS} steps in {elapsed:.2} s: {:.0} runs/s, {:.0} steps/s",
            runs as f64 / elapsed,
            (runs * STEPS) as f64 / elapsed
        );
    }
}

fn takeover(
    runtime: &tokio::runtime::Runtime,
    cluster: &Cluster,
    dir: &Path,
    tools: &str,
    slow: &SlowCalls,
) {
    for round in 0..3 {
        let url = database(cluster, &format!("takeover_{round}"), dir);
        let store = Arc::new(PostgresStore::open(&url).unwrap());
        slow.lock().unwrap().clear();
        // The victim starts alone and takes all 8 runs; the successor starts once they are
        // all inside the slow step.
        let victim_name = format!("victim{round}");
        let victim = worker(&victim_name, tools, &url);
        runtime.block_on(async {
            for index in 0..CONCURRENCY {
                store
                    .submit(&Submission::new("stall", 1).input("n", index))
                    .await
                    .unwrap();
            }
        });
        let until = Instant::now() + Duration::from_secs(30);
        while slow.lock().unwrap().len() < CONCURRENCY {
            assert!(Instant::now() < until, "the victim never took the runs");
            std::thread::sleep(Duration::from_millis(10));
        }
        let successor_name = format!("successor{round}");
        let successor = worker(&successor_name, tools, &url);
        std::thread::sleep(Duration::from_millis(300));
        let mut victim = victim;
        let killed = Instant::now();
        victim.kill().unwrap();
        let _ = victim.wait();
        let until = Instant::now() + Duration::from_secs(30);
        let continued: Vec<Duration> = loop {
            let times: Vec<Duration> = slow
                .lock()
                .unwrap()
                .iter()
                .filter(|(by, _)| *by == successor_name)
                .map(|(_, at)| at.duration_since(killed))
                .collect();
            if times.len() == CONCURRENCY {
                break times;
            }
            assert!(Instant::now() < until, "the runs were not taken over");
            std::thread::sleep(Duration::from_millis(5));
        };
        stop(successor);
        let first = continued.iter().min().unwrap();
        let last = continued.iter().max().unwrap();
        println!(
            "takeover, round {round}: lease {LEASE}; the {CONCURRENCY} runs continued on the other worker {:.2} s to {:.2} s after the kill",
            first.as_secs_f64(),
            last.as_secs_f64()
        );
    }
}

fn main() {
    let Some(cluster) = wayline_testkit::postgres::start_durable("the worker benchmarks") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let slow: SlowCalls = Arc::default();
    let seen = Arc::clone(&slow);
    let server = runtime
        .block_on(MockServer::start_unrecorded(move |request| {
            let reply = Reply::json(200, json!({"ok": true}));
            if request.path() == "/wait" {
                return reply.delay(Duration::from_millis(20));
            }
            if request.path() == "/slow" {
                let by = request.header("x-worker").unwrap_or_default().to_owned();
                seen.lock().unwrap().push((by, Instant::now()));
                // Long enough that the victim is killed inside it; the successor's call
                // answers at once.
                if request
                    .header("x-worker")
                    .is_some_and(|by| by.starts_with("victim"))
                {
                    return reply.delay(Duration::from_secs(600));
                }
            }
            reply
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tools = write_files(dir.path(), &server);
    let only = std::env::args().skip(1).find(|arg| !arg.starts_with('-'));
    if only
        .as_deref()
        .is_none_or(|only| "throughput".contains(only))
    {
        throughput(&runtime, &cluster, dir.path(), &tools, "chain", 400);
        throughput(&runtime, &cluster, dir.path(), &tools, "waits", 200);
    }
    if only.as_deref().is_none_or(|only| "takeover".contains(only)) {
        takeover(&runtime, &cluster, dir.path(), &tools, &slow);
    }
}

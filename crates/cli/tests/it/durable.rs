//! Durable runs through the binary: a run killed mid-way (SIGKILL) and resumed, a run
//! interrupted with Ctrl-C (SIGINT).

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wayline_executor::testing::{MockServer, Reply};

/// Requests seen by path.
pub(crate) type Calls = Arc<Mutex<HashMap<String, usize>>>;

/// Four GET tools in a chain (and a webhook receiver at `/hook`); with `hang`, `/c` hangs on its first call (the moment the test
/// kills the run).
pub(crate) async fn api(hang: bool) -> (MockServer, Calls) {
    let calls = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let first_c = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let server = MockServer::start(move |request| {
        let path = request.path().to_owned();
        *counter.lock().unwrap().entry(path.clone()).or_default() += 1;
        if path == "/hook" {
            return Reply::status(204);
        }
        if !["/a", "/b", "/c", "/d"].contains(&path.as_str()) {
            return Reply::status(404);
        }
        let reply = Reply::json(200, json!({"n": path.len(), "from": path}));
        if hang && path == "/c" && first_c.fetch_add(1, Ordering::SeqCst) == 0 {
            reply.delay(Duration::from_secs(60))
        } else {
            reply
        }
    })
    .await
    .unwrap();
    (server, calls)
}

pub(crate) fn setup(server: &MockServer, dir: &tempfile::TempDir) -> (String, String) {
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for name in ["a", "b", "c", "d"] {
        std::fs::write(
            tools.join(format!("{name}.yaml")),
            format!(
                "id: get_{name}\nname: {name}\ndescription: step {name}\nbase_url: {}\nmethod: GET\npath: /{name}\n",
                server.url("")
            ),
        )
        .unwrap();
    }
    let workflow = dir.path().join("chain.yaml");
    std::fs::write(
        &workflow,
        "id: chain\nname: Chain\nsteps:\n  - {id: a, tool_id: get_a}\n  - {id: b, tool_id: get_b, input_mapping: {x: a.n}}\n  - {id: c, tool_id: get_c, input_mapping: {y: b.n}}\n  - {id: d, tool_id: get_d, input_mapping: {z: c.n}}\n",
    )
    .unwrap();
    (tools.display().to_string(), workflow.display().to_string())
}

/// The parts of a run record that do not depend on timing.
fn timeless(run: &Value) -> Value {
    let steps: Vec<Value> = run["step_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            json!([
                step["step_id"],
                step["status"],
                step["output_data"],
                step["error"],
                step["request"]
            ])
        })
        .collect();
    json!({"id": run["id"], "workflow_id": run["workflow_id"], "status": run["status"],
           "version": run["workflow_version"], "inputs": run["user_inputs"], "steps": steps})
}

pub(crate) async fn wayline(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Waits (real time: the run is another process) until the run is blocked inside step `c`.
async fn until_inside_c(calls: &Calls) {
    let mut waited = Duration::ZERO;
    while calls.lock().unwrap().get("/c").is_none() {
        assert!(
            waited < Duration::from_secs(30),
            "the run never reached step c"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_resumes_without_repeating_finished_steps() {
    for store_name in ["wayline.db", "files"] {
        let (server, calls) = api(true).await;
        let dir = tempfile::tempdir().unwrap();
        let (tools, workflow) = setup(&server, &dir);
        let store = dir.path().join(store_name).display().to_string();

        let mut child = Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args([
                "run", &workflow, "--tools", &tools, "--store", &store, "--run-id", "crash-1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        until_inside_c(&calls).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let resumed = wayline(
            [
                "runs", "resume", "crash-1", "--tools", &tools, "--store", &store, "--format",
                "json",
            ]
            .map(String::from)
            .to_vec(),
        )
        .await;
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        assert_eq!(resumed.status.code(), Some(0), "{store_name}: {stderr}");
        let run: Value = serde_json::from_slice(&resumed.stdout).unwrap();
        {
            let calls = calls.lock().unwrap();
            assert_eq!(
                (calls["/a"], calls["/b"]),
                (1, 1),
                "{store_name}: finished steps ran once"
            );
            assert_eq!(
                (calls["/c"], calls["/d"]),
                (2, 1),
                "{store_name}: c was in flight (a GET)"
            );
        }

        // The same workflow, uninterrupted, gives the same record apart from timings.
        let (clean_server, _) = api(false).await;
        let clean_dir = tempfile::tempdir().unwrap();
        let (clean_tools, clean_workflow) = setup(&clean_server, &clean_dir);
        let clean_store = clean_dir.path().join(store_name).display().to_string();
        let clean = wayline(
            [
                "run",
                &clean_workflow,
                "--tools",
                &clean_tools,
                "--store",
                &clean_store,
                "--run-id",
                "crash-1",
                "--format",
                "json",
            ]
            .map(String::from)
            .to_vec(),
        )
        .await;
        assert_eq!(clean.status.code(), Some(0));
        let clean: Value = serde_json::from_slice(&clean.stdout).unwrap();
        let port = |server: &MockServer| server.addr().port().to_string();
        let normalise = |run: &Value, server: &MockServer| {
            serde_json::from_str::<Value>(&timeless(run).to_string().replace(&port(server), "PORT"))
                .unwrap()
        };
        assert_eq!(
            normalise(&run, &server),
            normalise(&clean, &clean_server),
            "{store_name}"
        );

        // History shows the run once, finished.
        let listed = wayline(
            ["runs", "list", "--store", &store, "--format", "json"]
                .map(String::from)
                .to_vec(),
        )
        .await;
        let page: Value = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(page["runs"].as_array().unwrap().len(), 1);
        assert_eq!(page["runs"][0]["status"], "success");
        assert_eq!(page["runs"][0]["workflow_version"], 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_run_and_leaves_a_complete_record() {
    let (server, calls) = api(true).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = setup(&server, &dir);
    let store = dir.path().join("wayline.db").display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "run", &workflow, "--tools", &tools, "--store", &store, "--run-id", "stopped",
            "--format", "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    until_inside_c(&calls).await;
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "a cancelled run: {stderr}");
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["status"], "cancelled", "{printed}");
    let statuses: Vec<&Value> = printed["step_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| &step["status"])
        .collect();
    assert_eq!(
        statuses[..2],
        [&json!("success"), &json!("success")],
        "{printed}"
    );

    let shown = wayline(
        [
            "runs", "show", "stopped", "--store", &store, "--format", "json",
        ]
        .map(String::from)
        .to_vec(),
    )
    .await;
    assert_eq!(
        shown.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let stored: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(timeless(&stored), timeless(&printed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_show_and_resume_report_unknown_runs_and_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("wayline.db").display().to_string();
    let shown = wayline(
        ["runs", "show", "nope", "--store", &store]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(shown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&shown.stderr).contains("no run `nope`"));
    let listed = wayline(
        ["runs", "list", "--store", &store]
            .map(String::from)
            .to_vec(),
    )
    .await;
    assert_eq!(listed.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        format!("no runs: there is no store at {store} yet\n"),
        "said, and no store made to say it"
    );
    assert!(!std::path::Path::new(&store).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_file_store_without_losing_anything() {
    let (server, calls) = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, _) = setup(&server, &dir);
    let mut yaml = String::from("id: fan\nname: Fan\nsteps:\n");
    for index in 0..12 {
        yaml.push_str(&format!("  - {{id: p{index}, tool_id: get_a}}\n"));
    }
    yaml.push_str("  - {id: join, tool_id: get_b, input_mapping: {x: p0.n, y: p11.n}}\n");
    let workflow = dir.path().join("fan.yaml");
    std::fs::write(&workflow, yaml).unwrap();
    let workflow = workflow.display().to_string();
    let store = dir.path().join("shared-store").display().to_string();

    let runs = ["one", "two"].map(|id| {
        wayline(
            [
                "run",
                &workflow,
                "--tools",
                &tools,
                "--store",
                &store,
                "--run-id",
                id,
                "--max-parallel",
                "6",
            ]
            .map(String::from)
            .to_vec(),
        )
    });
    let [first, second] = runs;
    let (first, second) = tokio::join!(first, second);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(calls.lock().unwrap()["/a"], 24);

    for id in ["one", "two"] {
        let shown = wayline(
            ["runs", "show", id, "--store", &store, "--format", "json"]
                .map(String::from)
                .to_vec(),
        )
        .await;
        let run: Value = serde_json::from_slice(&shown.stdout).unwrap();
        let steps = run["step_results"].as_array().unwrap();
        assert_eq!(steps.len(), 13, "run {id}");
        assert!(
            steps.iter().all(|step| step["status"] == "success"),
            "run {id}: {run}"
        );
        assert_eq!(
            run["workflow_version"], 1,
            "both processes saved the same version"
        );
    }
    let versions = std::fs::read_dir(dir.path().join("shared-store/workflows/fan"))
        .unwrap()
        .count();
    assert_eq!(versions, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_store_lives_in_wayline_home_and_history_filters_by_time() {
    let (server, _) = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = setup(&server, &dir);
    let home = dir.path().join("home");
    let with_home = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        let home = home.clone();
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_wayline"))
                .args(&args)
                .env("WAYLINE_HOME", &home)
                .output()
                .unwrap()
        })
    };
    let saved = with_home(&["workflow", "save", &workflow]).await.unwrap();
    assert_eq!(
        saved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    assert!(
        home.join("wayline.db").exists(),
        "the default store is $WAYLINE_HOME/wayline.db"
    );
    let ran = with_home(&[
        "run",
        "--workflow-id",
        "chain",
        "--workflow-version",
        "1",
        "--tools",
        &tools,
    ])
    .await
    .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    let count = |output: &std::process::Output| {
        let page: Value = serde_json::from_slice(&output.stdout).unwrap();
        page["runs"].as_array().unwrap().len()
    };
    let all = with_home(&["runs", "list", "--format", "json"])
        .await
        .unwrap();
    assert_eq!(count(&all), 1);
    let future = with_home(&[
        "runs",
        "list",
        "--since",
        "2999-01-01T00:00:00Z",
        "--format",
        "json",
    ])
    .await
    .unwrap();
    assert_eq!(count(&future), 0);
    let past = with_home(&[
        "runs",
        "list",
        "--until",
        "2000-01-01T00:00:00Z",
        "--format",
        "json",
    ])
    .await
    .unwrap();
    assert_eq!(count(&past), 0);
    let bad = with_home(&["runs", "list", "--since", "yesterday"])
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("RFC 3339"));
}

/// The four-step chain of [`api`] as an Arazzo document, each step sending the one before's
/// output; its OpenAPI description beside it.
fn arazzo_chain(dir: &tempfile::TempDir) -> String {
    let api = "openapi: 3.1.0\ninfo: {title: Chain, version: '1'}\npaths:\n  /a: {get: {operationId: a, responses: {'200': {description: ok}}}}\n  /b: {get: {operationId: b, parameters: [{name: x, in: query, schema: {type: integer}}], responses: {'200': {description: ok}}}}\n  /c: {get: {operationId: c, parameters: [{name: y, in: query, schema: {type: integer}}], responses: {'200': {description: ok}}}}\n  /d: {get: {operationId: d, parameters: [{name: z, in: query, schema: {type: integer}}], responses: {'200': {description: ok}}}}\n";
    std::fs::write(dir.path().join("chain.openapi.yaml"), api).unwrap();
    let document = "arazzo: 1.0.1\ninfo: {title: Chain, version: '1'}\nsourceDescriptions: [{name: api, url: ./chain.openapi.yaml}]\nworkflows:\n  - workflowId: chain\n    steps:\n      - {stepId: a, operationId: a, outputs: {n: $response.body#/n}}\n      - {stepId: b, operationId: b, parameters: [{name: x, in: query, value: $steps.a.outputs.n}], outputs: {n: $response.body#/n}}\n      - {stepId: c, operationId: c, parameters: [{name: y, in: query, value: $steps.b.outputs.n}], outputs: {n: $response.body#/n}}\n      - {stepId: d, operationId: d, parameters: [{name: z, in: query, value: $steps.c.outputs.n}], outputs: {n: $response.body#/n}}\n    outputs: {last: $steps.d.outputs.n, from: $steps.a.outputs.n}\n";
    let path = dir.path().join("chain.arazzo.yaml");
    std::fs::write(&path, document).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_arazzo_run_resumes_without_repeating_finished_steps() {
    let (server, calls) = api(true).await;
    let dir = tempfile::tempdir().unwrap();
    let document = arazzo_chain(&dir);
    let store = dir.path().join("wayline.db").display().to_string();
    let source = format!("api={}", server.url(""));
    let mut child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "run", &document, "--server", &source, "--store", &store, "--run-id", "crash-2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    until_inside_c(&calls).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let resumed = wayline(
        [
            "run", &document, "--server", &source, "--store", &store, "--resume", "crash-2",
            "--format", "json",
        ]
        .map(String::from)
        .to_vec(),
    )
    .await;
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    {
        let calls = calls.lock().unwrap();
        assert_eq!(
            (calls["/a"], calls["/b"]),
            (1, 1),
            "finished steps ran once"
        );
        assert_eq!(
            (calls["/c"], calls["/d"]),
            (2, 1),
            "c was in flight (a GET)"
        );
    }
    // The outputs read what steps finished before the kill gave.
    assert_eq!(report["outputs"], serde_json::json!({"last": 2, "from": 2}));
    assert_eq!(report["run"]["id"], "crash-2");

    // A wayline workflow's run resumes with `runs resume`, not `run --resume`.
    let (tools, workflow) = setup(&server, &dir);
    let refused = wayline(
        [
            "run", &workflow, "--tools", &tools, "--store", &store, "--resume", "crash-2",
        ]
        .map(String::from)
        .to_vec(),
    )
    .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("wayline runs resume"));
}

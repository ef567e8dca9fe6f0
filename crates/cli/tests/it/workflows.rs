//! `wayline workflow ...` and `run --workflow-id`: the lifecycle through the binary.

use serde_json::Value;

use crate::durable::{api, setup, wayline};

fn strings(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

fn out(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn err(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_approve_activate_edit_and_run_the_active_version() {
    let (server, calls) = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = setup(&server, &dir);
    let store = dir.path().join("store").display().to_string();

    let saved = wayline(strings(&["workflow", "save", &workflow, "--store", &store])).await;
    assert_eq!(saved.status.code(), Some(0), "{}", err(&saved));
    assert_eq!(out(&saved), "chain\n");
    assert!(
        err(&saved).contains("saved: chain version 1 (draft)"),
        "{}",
        err(&saved)
    );

    // A draft cannot be activated.
    let early = wayline(strings(&[
        "workflow", "activate", "chain", "--tools", &tools, "--store", &store,
    ]))
    .await;
    assert_eq!(early.status.code(), Some(2));
    assert!(err(&early).contains("approve it first"), "{}", err(&early));

    let approved = wayline(strings(&[
        "workflow", "approve", "chain", "--by", "ada", "--store", &store, "--format", "json",
    ]))
    .await;
    assert_eq!(approved.status.code(), Some(0), "{}", err(&approved));
    let acted: Value = serde_json::from_slice(&approved.stdout).unwrap();
    assert_eq!(acted["id"], "chain");
    assert_eq!(acted["version"], 1);
    assert_eq!(acted["state"], "approved");
    assert_eq!(acted["approved_by"], "ada");
    let shown = wayline(strings(&["workflow", "show", "chain", "--store", &store])).await;
    let text = out(&shown);
    assert!(text.starts_with("chain version 1 (approved)\n"), "{text}");
    assert!(text.contains("approved by ada at "), "{text}");
    assert!(text.contains("graph sha256:"), "{text}");

    let before = calls.lock().unwrap().values().sum::<usize>();
    let active = wayline(strings(&[
        "workflow", "activate", "chain", "--tools", &tools, "--store", &store,
    ]))
    .await;
    assert_eq!(active.status.code(), Some(0), "{}", err(&active));
    assert!(
        out(&active).starts_with("active: chain version 1 (validation run "),
        "{}",
        out(&active)
    );
    assert_eq!(
        calls.lock().unwrap().values().sum::<usize>(),
        before + 4,
        "the validation run ran"
    );
    let again = wayline(strings(&[
        "workflow", "activate", "chain", "--tools", &tools, "--store", &store,
    ]))
    .await;
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    assert_eq!(out(&again), "active: chain version 1 (it already was)\n");
    let again = wayline(strings(&[
        "workflow", "activate", "chain", "--tools", &tools, "--store", &store, "--format", "json",
    ]))
    .await;
    let acted: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (acted["state"].as_str(), acted["active"].as_bool()),
        (Some("active"), Some(true))
    );
    assert_eq!(
        calls.lock().unwrap().values().sum::<usize>(),
        before + 4,
        "no second validation run"
    );

    let json = wayline(strings(&[
        "workflow", "show", "chain", "--store", &store, "--format", "json",
    ]))
    .await;
    let document: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(document["state"], "active");
    assert_eq!(document["version"], 1);
    assert_eq!(document["approval"]["by"], "ada");
    assert_eq!(document["edges"].as_array().unwrap().len(), 3);
    assert_eq!(document["edges"][0]["inferred"], true);

    // An edit makes version 2, a draft; runs by id still use the active version 1.
    let edited = std::fs::read_to_string(&workflow)
        .unwrap()
        .replace("{z: c.n}", "{z: c.from}");
    std::fs::write(&workflow, edited).unwrap();
    let resaved = wayline(strings(&[
        "workflow", "save", &workflow, "--store", &store, "--format", "json",
    ]))
    .await;
    assert!(
        err(&resaved).contains("saved: chain version 2 (draft)"),
        "{}",
        err(&resaved)
    );
    let acted: Value = serde_json::from_slice(&resaved.stdout).unwrap();
    assert_eq!(
        (
            acted["version"].as_u64(),
            acted["state"].as_str(),
            acted["created"].as_bool()
        ),
        (Some(2), Some("draft"), Some(true))
    );
    let listed = wayline(strings(&["workflow", "list", "--store", &store])).await;
    assert!(
        out(&listed).starts_with("chain  v2 draft  (v1 active)"),
        "{}",
        out(&listed)
    );

    let run = wayline(strings(&[
        "run",
        "--workflow-id",
        "chain",
        "--tools",
        &tools,
        "--store",
        &store,
        "--format",
        "json",
        "--notify-stdout",
        "--notify-on-success",
    ]))
    .await;
    assert_eq!(run.status.code(), Some(0), "{}", err(&run));
    // With JSON on stdout, the notice goes to stderr and stdout stays one JSON document.
    assert!(err(&run).contains("notice: run "), "{}", err(&run));
    let record: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(record["workflow_version"], 1);
    let history = wayline(strings(&[
        "runs",
        "list",
        "--workflow",
        "chain",
        "--store",
        &store,
        "--format",
        "json",
    ]))
    .await;
    let page: Value = serde_json::from_slice(&history.stdout).unwrap();
    assert_eq!(
        page["runs"].as_array().unwrap().len(),
        2,
        "validation run and this run"
    );

    // Version 2 runs when asked for by number.
    let v2 = wayline(strings(&[
        "run",
        "--workflow-id",
        "chain",
        "--workflow-version",
        "2",
        "--tools",
        &tools,
        "--store",
        &store,
        "--format",
        "json",
    ]))
    .await;
    let record: Value = serde_json::from_slice(&v2.stdout).unwrap();
    assert_eq!(record["workflow_version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_red_validation_run_leaves_the_workflow_approved() {
    let (server, _) = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = setup(&server, &dir);
    // Point step d at a path the server does not know: the validation run fails.
    let broken = dir.path().join("tools/d.yaml");
    let text = std::fs::read_to_string(&broken)
        .unwrap()
        .replace("path: /d", "path: /missing");
    std::fs::write(&broken, text).unwrap();
    let store = dir.path().join("wayline.db").display().to_string();
    wayline(strings(&["workflow", "save", &workflow, "--store", &store])).await;
    wayline(strings(&[
        "workflow", "approve", "chain", "--by", "ada", "--store", &store,
    ]))
    .await;
    let red = wayline(strings(&[
        "workflow", "activate", "chain", "--tools", &tools, "--store", &store,
    ]))
    .await;
    assert_eq!(red.status.code(), Some(1), "{}", err(&red));
    assert!(
        err(&red).contains("did not succeed; the workflow stays approved"),
        "{}",
        err(&red)
    );
    let by_id = wayline(strings(&[
        "run",
        "--workflow-id",
        "chain",
        "--tools",
        &tools,
        "--store",
        &store,
    ]))
    .await;
    assert_eq!(by_id.status.code(), Some(2));
    assert!(err(&by_id).contains("no active version"), "{}", err(&by_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_runs_the_active_version_and_failures_are_notified() {
    let (server, calls) = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, workflow) = setup(&server, &dir);
    let store = dir.path().join("wayline.db").display().to_string();
    for args in [
        vec!["workflow", "save", &workflow, "--store", &store],
        vec![
            "workflow", "approve", "chain", "--by", "ada", "--store", &store,
        ],
        vec![
            "workflow", "activate", "chain", "--tools", &tools, "--store", &store,
        ],
    ] {
        let output = wayline(strings(&args)).await;
        assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    }
    let schedules = dir.path().join("schedules.yaml");
    std::fs::write(&schedules, "- {workflow_id: chain, every: 1s}\n").unwrap();
    let schedules = schedules.display().to_string();
    // Real time: the scheduler runs in another process. Two runs, one second apart.
    let ran = wayline(strings(&[
        "schedule",
        "run",
        &schedules,
        "--tools",
        &tools,
        "--store",
        &store,
        "--max-runs",
        "2",
    ]))
    .await;
    assert_eq!(ran.status.code(), Some(0), "{}", err(&ran));
    let lines: Vec<String> = out(&ran).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().all(|line| line.ends_with(" chain v1 success")),
        "{lines:?}"
    );
    assert_eq!(
        calls.lock().unwrap()["/a"],
        3,
        "validation run and two scheduled runs"
    );

    // A failing run notifies the webhook (and stdout).
    let broken = dir.path().join("tools/d.yaml");
    let text = std::fs::read_to_string(&broken)
        .unwrap()
        .replace("path: /d", "path: /missing");
    std::fs::write(&broken, text).unwrap();
    let hook = server.url("/hook");
    let failed = wayline(strings(&[
        "run",
        "--workflow-id",
        "chain",
        "--tools",
        &tools,
        "--store",
        &store,
        "--notify-webhook",
        &hook,
        "--notify-stdout",
    ]))
    .await;
    assert_eq!(failed.status.code(), Some(1));
    let notice = out(&failed);
    assert!(notice.contains("notice: run "), "{notice}");
    assert!(
        notice.contains(" of workflow chain v1 failed: step d: "),
        "{notice}"
    );
    let posted: Vec<Value> = server
        .requests()
        .iter()
        .filter(|request| request.path() == "/hook")
        .map(|request| request.json().unwrap())
        .collect();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0]["kind"], "run_failed");
    assert_eq!(posted[0]["failed_steps"][0]["step_id"], "d");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_schedules_file_is_refused_with_the_entry_named() {
    let dir = tempfile::tempdir().unwrap();
    let schedules = dir.path().join("schedules.yaml");
    std::fs::write(&schedules, "- {workflow_id: chain, every: 15}\n").unwrap();
    let store = dir.path().join("wayline.db").display().to_string();
    let tools = wayline_testkit::testdata("tools").display().to_string();
    let refused = wayline(strings(&[
        "schedule",
        "run",
        &schedules.display().to_string(),
        "--tools",
        &tools,
        "--store",
        &store,
    ]))
    .await;
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        err(&refused).contains("trigger 1 (`chain`): `15`: the unit must be s, m, h or d"),
        "{}",
        err(&refused)
    );
    std::fs::write(&schedules, "- {workflow_id: chain, every: 5m}\n").unwrap();
    let unknown = wayline(strings(&[
        "schedule",
        "run",
        &schedules.display().to_string(),
        "--tools",
        &tools,
        "--store",
        &store,
    ]))
    .await;
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        err(&unknown).contains("workflow `chain` is not in the store"),
        "{}",
        err(&unknown)
    );
}

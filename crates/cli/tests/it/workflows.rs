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
        "workflow", "approve", "chain", "--by", "ada", "--store", &store,
    ]))
    .await;
    assert_eq!(approved.status.code(), Some(0), "{}", err(&approved));
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
    let resaved = wayline(strings(&["workflow", "save", &workflow, "--store", &store])).await;
    assert!(
        err(&resaved).contains("saved: chain version 2 (draft)"),
        "{}",
        err(&resaved)
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
    ]))
    .await;
    assert_eq!(run.status.code(), Some(0), "{}", err(&run));
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
        "--version",
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

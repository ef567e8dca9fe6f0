//! `wayline run --learn` and `wayline knowledge ...`: a failing update teaches a pitfall that
//! `knowledge check` reports before the call is repeated; the fixed run teaches its resolution
//! and a pattern; export and import share it.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};
use wayline_executor::testing::{MockServer, Reply};

use crate::durable::wayline;

const UPDATE: &str = "ClusterService_UpdateCluster";

async fn api() -> MockServer {
    let polls: Mutex<HashMap<String, u32>> = Mutex::new(HashMap::new());
    MockServer::start(move |request| {
        let path = request.path().to_owned();
        match request.method.as_str() {
            "POST" => Reply::json(200, json!({"clusterId": "c-1", "state": "CREATING"})),
            "GET" => {
                let mut polls = polls.lock().unwrap();
                let count = polls.entry(path).or_default();
                *count += 1;
                let state = if count.is_multiple_of(2) {
                    "ACTIVE"
                } else {
                    "CREATING"
                };
                Reply::json(200, json!({"state": state, "nodeGroupId": "ng-7"}))
            }
            _ => match request
                .json()
                .and_then(|body| body.get("nodegroup_id").cloned())
            {
                Some(Value::String(_)) => Reply::json(200, json!({"state": "MODIFYING"})),
                _ => Reply::json(400, json!({"message": "NodeGroupId is required"})),
            },
        }
    })
    .await
    .unwrap()
}

fn write_files(server: &MockServer, dir: &std::path::Path) -> String {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    for (id, method, path) in [
        ("ClusterService_CreateCluster", "POST", "/clusters"),
        ("ClusterService_GetCluster", "GET", "/clusters/{cluster_id}"),
        (UPDATE, "PATCH", "/clusters/{cluster_id}"),
    ] {
        std::fs::write(
            tools.join(format!("{id}.yaml")),
            format!(
                "id: {id}\nname: {id}\nbase_url: {}\nmethod: {method}\npath: {path}\n",
                server.url("")
            ),
        )
        .unwrap();
    }
    for (name, outputs, inputs) in [
        (
            "broken",
            "{state: '$.state'}",
            "{cluster_id: create.clusterId, after: poll.state}",
        ),
        (
            "fixed",
            "{state: '$.state', nodegroup_id: '$.nodeGroupId'}",
            "{cluster_id: create.clusterId, nodegroup_id: poll.nodegroup_id}",
        ),
    ] {
        std::fs::write(
            dir.join(format!("{name}.yaml")),
            format!(
                "id: scale\nname: Create a cluster and scale it\nsteps:\n  - {{id: create, tool_id: ClusterService_CreateCluster}}\n  - id: poll\n    tool_id: ClusterService_GetCluster\n    input_mapping: {{cluster_id: create.clusterId}}\n    poll: {{until: \"body.state == 'ACTIVE'\", max_attempts: 5, interval_ms: 10}}\n    outputs: {outputs}\n  - {{id: update, tool_id: {UPDATE}, input_mapping: {inputs}}}\n"
            ),
        )
        .unwrap();
    }
    tools.display().to_string()
}

fn out(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn err(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_teach_and_knowledge_check_warns_before_the_call_is_repeated() {
    let server = api().await;
    let dir = tempfile::tempdir().unwrap();
    let tools = write_files(&server, dir.path());
    let store = dir.path().join("home").display().to_string();
    let flow = |name: &str| {
        dir.path()
            .join(format!("{name}.yaml"))
            .display()
            .to_string()
    };
    let run = |name: String| {
        let (tools, store) = (tools.clone(), store.clone());
        async move {
            wayline(args(&[
                "run",
                &name,
                "--tools",
                &tools,
                "--learn",
                "--sut",
                "tidbx",
                "--knowledge",
                &store,
            ]))
            .await
        }
    };
    let check = |vars: &[&str]| {
        let mut parts = args(&[
            "knowledge",
            "check",
            "--sut",
            "tidbx",
            "--operation",
            UPDATE,
            "--state",
            "cluster=ACTIVE",
            "--knowledge",
            &store,
        ]);
        for var in vars {
            parts.push("--var".into());
            parts.push((*var).to_owned());
        }
        wayline(parts)
    };

    let broken = run(flow("broken")).await;
    assert_eq!(broken.status.code(), Some(1), "{}", err(&broken));
    assert!(
        err(&broken).contains("learned: the run is recorded in the knowledge of `tidbx`"),
        "{}",
        err(&broken)
    );
    assert!(
        dir.path()
            .join("home/knowledge/tidbx/pitfalls.yaml")
            .is_file(),
        "pitfalls in `knowledge/<sut>/pitfalls.yaml`"
    );

    let warned = check(&["cluster_id=c-1"]).await;
    assert_eq!(warned.status.code(), Some(1), "{}", err(&warned));
    let text = out(&warned);
    assert!(
        text.contains("fails with HTTP 400: NodeGroupId is required"),
        "{text}"
    );
    assert!(
        text.contains("because: variable `NodeGroupId` is not set\n"),
        "{text}"
    );
    assert!(text.contains("resolution: not known yet"), "{text}");

    let fixed = run(flow("fixed")).await;
    assert_eq!(fixed.status.code(), Some(0), "{}", err(&fixed));
    let warned = check(&["cluster_id=c-1"]).await;
    assert_eq!(warned.status.code(), Some(1));
    assert!(
        out(&warned).contains(&format!(
            "resolution: Save `nodegroup_id` before calling {UPDATE}"
        )),
        "{}",
        out(&warned)
    );
    let clear = check(&["cluster_id=c-1", "nodegroup_id=ng-7"]).await;
    assert_eq!(clear.status.code(), Some(0), "{}", out(&clear));

    let shown = wayline(args(&[
        "knowledge",
        "show",
        "--sut",
        "tidbx",
        "--knowledge",
        &store,
        "--format",
        "json",
    ]))
    .await;
    let document: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(document["patterns"].as_array().unwrap().len(), 1);
    assert_eq!(document["pitfalls"][0]["occurrence_count"], 1);
    assert_eq!(document["stats"]["operations"][UPDATE]["total_attempts"], 2);
    assert_eq!(
        document["stats"]["state_transitions"]["cluster"]["CREATING_to_ACTIVE"]["avg_poll_attempts"],
        2.0
    );

    // One success is not enough support by default.
    let suggest = |support: &'static str| {
        wayline(args(&[
            "knowledge",
            "suggest",
            "create a cluster and scale it",
            "--sut",
            "tidbx",
            "--knowledge",
            &store,
            "--min-support",
            support,
        ]))
    };
    assert_eq!(suggest("2").await.status.code(), Some(1));
    let suggested = suggest("1").await;
    assert_eq!(suggested.status.code(), Some(0), "{}", err(&suggested));
    assert!(
        out(&suggested).starts_with("create_cluster_and_poll_and_update_cluster  confidence 0.67"),
        "{}",
        out(&suggested)
    );

    // Export, then import twice into another SUT: entries combine instead of repeating.
    let exported = wayline(args(&[
        "knowledge",
        "export",
        "--sut",
        "tidbx",
        "--knowledge",
        &store,
    ]))
    .await;
    assert_eq!(exported.status.code(), Some(0), "{}", err(&exported));
    let file = dir.path().join("export.yaml");
    std::fs::write(&file, &exported.stdout).unwrap();
    for format in ["text", "json"] {
        let imported = wayline(args(&[
            "knowledge",
            "import",
            &file.display().to_string(),
            "--sut",
            "shared",
            "--knowledge",
            &store,
            "--format",
            format,
        ]))
        .await;
        assert_eq!(imported.status.code(), Some(0), "{}", err(&imported));
        if format == "json" {
            let counts: Value = serde_json::from_slice(&imported.stdout).unwrap();
            assert_eq!(counts["sut"], "shared");
            assert_eq!(counts["imported"]["patterns"], 1);
            assert_eq!(counts["now"]["pitfalls"], 1, "the same entries combine");
        }
    }
    let shared = wayline(args(&[
        "knowledge",
        "show",
        "--sut",
        "shared",
        "--knowledge",
        &store,
        "--format",
        "json",
    ]))
    .await;
    let document: Value = serde_json::from_slice(&shared.stdout).unwrap();
    assert_eq!(document["patterns"].as_array().unwrap().len(), 1);
    assert_eq!(document["patterns"][0]["success_count"], 2);
    assert_eq!(document["pitfalls"].as_array().unwrap().len(), 1);
    assert_eq!(document["pitfalls"][0]["occurrence_count"], 2);
    assert!(
        document["pitfalls"][0].get("seen_variables").is_none(),
        "not shared"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_shares_the_run_stores_sqlite_file() {
    let server = api().await;
    let dir = tempfile::tempdir().unwrap();
    let tools = write_files(&server, dir.path());
    let db = dir.path().join("wayline.db").display().to_string();
    let flow = dir.path().join("fixed.yaml").display().to_string();
    let run = wayline(args(&[
        "run", &flow, "--tools", &tools, "--store", &db, "--learn", "--sut", "tidbx",
    ]))
    .await;
    assert_eq!(run.status.code(), Some(0), "{}", err(&run));
    let history = wayline(args(&["runs", "list", "--store", &db, "--format", "json"])).await;
    let page: Value = serde_json::from_slice(&history.stdout).unwrap();
    assert_eq!(page["runs"].as_array().unwrap().len(), 1);
    let shown = wayline(args(&[
        "knowledge",
        "show",
        "--sut",
        "tidbx",
        "--knowledge",
        &db,
        "--format",
        "json",
    ]))
    .await;
    assert_eq!(shown.status.code(), Some(0), "{}", err(&shown));
    let document: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(document["patterns"][0]["success_count"], 1);
    assert!(
        !dir.path().join("knowledge").exists(),
        "nothing written beside it"
    );
}

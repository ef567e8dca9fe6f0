//! `wayline run` and `wayline tools try` against a loopback server started by the test.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};
use wayline_executor::testing::{MockServer, Reply};
use wayline_testkit::testdata;

use crate::text;

/// A server standing in for the testdata tools' API; `/v1/forecast` fails when `fail` is set.
async fn api(fail: bool) -> MockServer {
    MockServer::start(move |request| match request.path() {
        "/json" => Reply::json(200, json!({"lat": 38.7, "lon": -9.1, "countryCode": "PT", "city": "Lisbon"})),
        "/v1/forecast" if fail => Reply::text(500, "forecast is down"),
        "/v1/forecast" => Reply::json(200, json!({"current": {"temperature_2m": 18.5, "wind_speed_10m": 7}})),
        "/graphql" => Reply::json(200, json!({"data": {"country": {"name": "Portugal", "capital": "Lisbon", "currency": "EUR"}}})),
        "/token" => Reply::json(200, json!({"access_token": "at-1", "echo": request.header("authorization")})),
        _ => Reply::status(404),
    })
    .await
    .unwrap()
}

/// A tool-configs file pointing every testdata tool at `server`.
fn config_for(server: &MockServer, dir: &tempfile::TempDir) -> PathBuf {
    let url = server.url("");
    let text = format!(
        "ip_locate: {{base_url: \"{url}\"}}\nforecast: {{base_url: \"{url}\"}}\ncountry: {{base_url: \"{url}\"}}\n\
         token: {{base_url: \"{url}\", auth_username: client, auth_token: \"${{WAYLINE_TEST_SECRET}}\"}}\n"
    );
    let path = dir.path().join("configs.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn wayline(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(&args)
            .env("WAYLINE_TEST_SECRET", "s3cret-value-42")
            .output()
            .expect("the wayline binary runs")
    })
    .await
    .unwrap()
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_owned()).collect()
}

fn tools_dir() -> String {
    testdata("tools").display().to_string()
}

fn geo_workflow() -> String {
    testdata("workflows/geo.json").display().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn run_succeeds_with_progress_and_a_summary() {
    let server = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(&server, &dir);
    let output = wayline(args(&[
        "run",
        &geo_workflow(),
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("succeeded: 3 ok, 0 failed, 0 skipped"),
        "{stdout}"
    );
    // Not a terminal: plain progress lines on stderr.
    let stderr = text(&output.stderr);
    assert!(stderr.contains("  start   step_1"), "{stderr}");
    assert!(stderr.contains("  ok      step_2 HTTP 200"), "{stderr}");
    assert_eq!(server.hits(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_json_prints_the_record_and_exits_1_when_the_run_fails() {
    let server = api(true).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(&server, &dir);
    let output = wayline(args(&[
        "run",
        &geo_workflow(),
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(record["workflow_id"], "geo");
    assert_eq!(record["status"], "failed");
    let steps = record["step_results"].as_array().unwrap();
    let ids: Vec<&str> = steps
        .iter()
        .map(|s| s["step_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["step_1", "step_2", "step_3"]);
    assert_eq!(steps[1]["status"], "failed");
    assert_eq!(steps[1]["error"], "HTTP 500: forecast is down");
    assert_eq!(steps[1]["response_status"], 500);
    assert_eq!(steps[1]["request"]["method"], "GET");
    assert_eq!(
        steps[2]["status"], "success",
        "step_3 does not depend on step_2"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn run_rejects_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("w.yaml");
    std::fs::write(
        &workflow,
        "id: w\nname: W\ninputs: {city: {}}\nsteps:\n  - {id: a, tool_id: ip_locate, input_mapping: {q: $input.city}}\n",
    )
    .unwrap();
    let output = wayline(args(&[
        "run",
        workflow.to_str().unwrap(),
        "--tools",
        &tools_dir(),
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("input `city` is required"),
        "{}",
        text(&output.stderr)
    );
    let output = wayline(args(&[
        "run",
        workflow.to_str().unwrap(),
        "--tools",
        &tools_dir(),
        "--input",
        "novalue",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("write NAME=TEXT or NAME:=JSON"));
    // A workflow that declares no inputs still refuses one it does not read.
    let reading = dir.path().join("r.yaml");
    std::fs::write(
        &reading,
        "id: r\nname: R\nsteps:\n  - {id: a, tool_id: ip_locate, input_mapping: {q: $input.country}}\n",
    )
    .unwrap();
    let output = wayline(args(&[
        "run",
        reading.to_str().unwrap(),
        "--tools",
        &tools_dir(),
        "--input",
        "country=PT",
        "--input",
        "cuntry=PT",
        "--dry-run",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains(
            "workflow `r` has no input `cuntry` (did you mean `country`?); it reads country"
        ),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_prints_requests_with_placeholders_and_sends_nothing() {
    let server = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(&server, &dir);
    let output = wayline(args(&[
        "run",
        &geo_workflow(),
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
        "--dry-run",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(
            "/v1/forecast?latitude=<step_1.lat>&longitude=<step_1.lon>&current=temperature_2m"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("GET {}/json", server.url(""))),
        "{stdout}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_try_prints_request_response_and_outputs_without_secrets() {
    let server = api(false).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(&server, &dir);
    let output = wayline(args(&[
        "tools",
        "try",
        "token",
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("POST {}/token", server.url(""))),
        "{stdout}"
    );
    assert!(stdout.contains("Authorization: ***"), "{stdout}");
    assert!(
        stdout.contains("body: \"grant_type=client_credentials\""),
        "{stdout}"
    );
    assert!(stdout.contains("response: HTTP 200"), "{stdout}");
    assert!(stdout.contains("\"access_token\": \"at-1\""), "{stdout}");
    // The server echoed the basic-auth header; its credentials are not printed.
    assert!(!stdout.contains("s3cret-value-42"), "{stdout}");
    let sent = server.requests();
    assert!(
        sent[0]
            .header("authorization")
            .unwrap()
            .starts_with("Basic ")
    );

    let output = wayline(args(&[
        "tools",
        "try",
        "token",
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
        "--dry-run",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(server.hits(), 1, "a dry run sends nothing");

    // As JSON, with what the libraries trace (-vv) on stderr: the same facts, masked.
    let output = wayline(args(&[
        "-vv",
        "tools",
        "try",
        "token",
        "--tools",
        &tools_dir(),
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["request"][0]["request"]["method"], "POST");
    assert_eq!(document["response"]["status"], 200);
    assert_eq!(document["response"]["body"]["access_token"], "at-1");
    assert_eq!(document["result"]["status"], "success");
    let traced = text(&output.stderr);
    assert!(
        traced.contains("attempt") && traced.contains(&format!("POST {}/token", server.url(""))),
        "{traced}"
    );
    for shown in [text(&output.stdout), traced] {
        assert!(!shown.contains("s3cret-value-42"), "{shown}");
    }
    let output = wayline(args(&["tools", "try", "tokn", "--tools", &tools_dir()])).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("did you mean `token`"));
}

/// Twenty `run --store NEW.db --learn` processes at once on a database none of them has made
/// yet: every run starts and is recorded (the switch to WAL and the schema wait for each other
/// instead of failing with "database is locked").
#[tokio::test(flavor = "multi_thread")]
async fn parallel_runs_share_a_brand_new_database() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("t.yaml"),
        "id: t\nname: T\nbase_url: http://127.0.0.1:9\npath: /x\n",
    )
    .unwrap();
    let workflow = dir.path().join("w.yaml");
    std::fs::write(
        &workflow,
        "id: w\nname: W\nsteps:\n  - {id: calc, tool_id: t, kind: transform, outputs: {n: '1 + 1'}}\n",
    )
    .unwrap();
    for round in 0..3 {
        let store = dir.path().join(format!("new-{round}.db"));
        let children: Vec<_> = (0..20)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
                    .args([
                        "run",
                        workflow.to_str().unwrap(),
                        "--tools",
                        tools.to_str().unwrap(),
                        "--store",
                        store.to_str().unwrap(),
                        "--learn",
                        "--sut",
                        "demo",
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: {}",
                text(&output.stderr)
            );
        }
        let listed = wayline(args(&[
            "runs",
            "list",
            "--store",
            store.to_str().unwrap(),
            "--limit",
            "100",
            "--format",
            "json",
        ]))
        .await;
        let page: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(page["runs"].as_array().unwrap().len(), 20, "round {round}");
    }
}

/// The live display in a 60-column terminal, as a VT100 emulator (pyte) shows it at the end:
/// a retry whose reason is far longer than a line leaves no stale copy of the running line.
#[tokio::test(flavor = "multi_thread")]
async fn the_live_display_stays_intact_in_a_narrow_terminal() {
    let ready = std::process::Command::new("python3")
        .args(["-c", "import pyte"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !ready {
        eprintln!("skipped: the terminal test needs python3 with pyte (.ci/run installs it)");
        return;
    }
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&calls);
    let server = MockServer::start(move |request| match request.path() {
        "/json" => {
            // The first call of each run fails with a long error, and asks for a retry in a
            // second.
            if seen
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                .is_multiple_of(2)
            {
                Reply::text(503, format!("upstream unavailable: {}", "x".repeat(180)))
                    .header("Retry-After", "1")
            } else {
                Reply::json(200, json!({"lat": 1.0, "lon": 2.0, "countryCode": "PT"}))
            }
        }
        "/graphql" => Reply::json(
            200,
            json!({"data": {"country": {"name": "Portugal", "capital": "Lisbon", "currency": "EUR"}}}),
        ),
        _ => Reply::json(
            200,
            json!({"current": {"temperature_2m": 18.5, "wind_speed_10m": 7}}),
        ),
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let configs = config_for(&server, &dir);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/pty_screen.py");
    let mut command = vec![
        "python3".to_owned(),
        script.display().to_string(),
        "60".into(),
        "30".into(),
        env!("CARGO_BIN_EXE_wayline").into(),
    ];
    command.extend(args(&[
        "run",
        &geo_workflow(),
        "--tools",
        &tools_dir(),
        "--config",
        configs.to_str().unwrap(),
    ]));
    let in_terminal = |term: &'static str| {
        let command = command.clone();
        tokio::task::spawn_blocking(move || {
            let output = std::process::Command::new(&command[0])
                .args(&command[1..])
                .env("WAYLINE_TEST_SECRET", "s3cret-value-42")
                .env("PTY_TERM", term)
                .output()
                .unwrap();
            serde_json::from_slice::<Value>(&output.stdout)
                .unwrap_or_else(|_| panic!("{}", text(&output.stderr)))
        })
    };
    // A dumb terminal gets plain lines: no cursor movement at all.
    let dumb = in_terminal("dumb").await.unwrap();
    assert!(!dumb["raw"].as_str().unwrap().contains('\x1b'), "{dumb:#}");
    let screen = in_terminal("xterm").await.unwrap();
    assert_eq!(screen["exit"], 0, "{screen:#}");
    let lines: Vec<&str> = screen["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        lines.iter().all(|line| !line.starts_with("  ...")),
        "a running line was left behind:\n{}",
        lines.join("\n")
    );
    let raw = screen["raw"].as_str().unwrap();
    assert!(
        raw.contains("retry in"),
        "the retry was shown while it waited: {raw:?}"
    );
    // The progress (on stderr) ends with its `run succeeded` line; the summary (stdout) follows.
    let end = lines
        .iter()
        .position(|line| line.starts_with("run succeeded"))
        .unwrap_or_else(|| panic!("{}", lines.join("\n")));
    for step in ["step_1", "step_2", "step_3"] {
        let finished = lines[..end]
            .iter()
            .filter(|line| line.starts_with(&format!("  ok      {step}")))
            .count();
        assert_eq!(finished, 1, "{step}:\n{}", lines.join("\n"));
    }
    assert!(lines.iter().all(|line| line.chars().count() <= 60));
}

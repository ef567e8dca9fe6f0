//! `kind: mcp` steps through `wayline run`, against a real MCP server from the npm registry:
//! `@modelcontextprotocol/server-everything`, started on stdio as the tool-configs file
//! defines it. `.ci/run` installs it into `.ci/node`; elsewhere set `WAYLINE_MCP_EVERYTHING`
//! to its executable. Without it (or without Node.js) the tests say so in one line and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{code, path, script_json, stdout_json, wayline};

/// The `mcp-server-everything` executable, if it can run here.
pub(crate) fn everything() -> Option<PathBuf> {
    wayline_testkit::mcp_server_everything("the MCP tests of the CLI")
}

const WEATHER: &str = "id: weather\nname: Weather\nkind: mcp\nmcp: {server: everything, tool: get-structured-content}\nidempotent: true\n";
const ECHO: &str =
    "id: echo\nname: Echo\nkind: mcp\nmcp: {server: everything, tool: echo}\nidempotent: true\n";
const SLOW: &str = "id: slow\nname: Slow\nkind: mcp\nmcp: {server: everything, tool: trigger-long-running-operation}\n";

/// A tools directory, a tool-configs file starting `command` as server `everything`, and the
/// workflow `flow.yaml`.
fn files(command: &str, flow: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    for (name, text) in [("weather", WEATHER), ("echo", ECHO), ("slow", SLOW)] {
        std::fs::write(tools.join(format!("{name}.yaml")), text).unwrap();
    }
    std::fs::write(
        dir.path().join("configs.yaml"),
        format!("mcp_servers:\n  everything:\n    command: {command}\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("flow.yaml"), flow).unwrap();
    dir
}

#[test]
fn a_workflow_of_two_mcp_steps_runs_against_server_everything() {
    let Some(server) = everything() else { return };
    let flow = "id: report\nname: Report\ninputs: {city: {required: true}}\nsteps:\n  - {id: weather, tool_id: weather, input_mapping: {location: $input.city}}\n  - {id: say, tool_id: echo, input_mapping: {message: weather.conditions}}\n";
    let dir = files(&format!("[{}, stdio]", server.display()), flow);
    let out = wayline(&[
        "run",
        path(&dir.path().join("flow.yaml")),
        "--tools",
        path(&dir.path().join("tools")),
        "--config",
        path(&dir.path().join("configs.yaml")),
        "--input",
        "city=Chicago",
        "--format",
        "json",
    ]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let record = stdout_json(&out);
    assert_eq!(record["status"], "success");
    let weather = &record["step_results"][0]["output_data"];
    assert!(weather["temperature"].is_number(), "{weather}");
    let conditions = weather["conditions"].as_str().unwrap();
    let said = &record["step_results"][1]["output_data"];
    assert_eq!(said["text"], format!("Echo: {conditions}"));
}

#[test]
fn a_run_fails_cleanly_when_the_server_exits_mid_run() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    // A wrapper that writes the server's process id, then becomes the server.
    let wrapper = dir.path().join("server.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' stdio\n",
            pid_file.display(),
            server.display()
        ),
    )
    .unwrap();
    let flow = "id: slow\nname: Slow\nsteps:\n  - {id: wait, tool_id: slow, input_mapping: {duration: 60, steps: 60}}\n  - {id: after, tool_id: echo, input_mapping: {message: wait.text}}\n";
    let files = files(&format!("[sh, '{}']", wrapper.display()), flow);
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "run",
            path(&files.path().join("flow.yaml")),
            "--tools",
            path(&files.path().join("tools")),
            "--config",
            path(&files.path().join("configs.yaml")),
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server is killed once started, in the handshake or the minute-long call.
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<u32>()
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_secs(2));
    let killed = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the run waited for the dead server"
    );
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let record = stdout_json(&out);
    assert_eq!(record["status"], "failed");
    let wait = &record["step_results"][0];
    assert_eq!(wait["status"], "failed");
    let error = wait["error"].as_str().unwrap();
    assert!(error.contains("MCP server `everything`"), "{error}");
    assert!(
        error.contains("closed") || error.contains("unavailable"),
        "{error}"
    );
    assert_eq!(record["step_results"][1]["status"], "skipped");
}

/// Whether the official Python MCP SDK is importable.
pub(crate) fn python_mcp() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        eprintln!("skipped: the Python MCP SDK is not installed (.ci/run installs mcp 2.3.0)");
    }
    found
}

/// A policy for server-everything's tools: reads (by their annotations) pass while gathering;
/// two reads of symptoms move the session to resolving, where writes pass.
const POLICY: &str = "name: everything\ninitial_state: gathering\nstates:\n  gathering:\n    description: Finding out what is wrong\n    allowed_tools: [echo, get-*]\n    required_evidence:\n      - {type: symptoms, min_count: 2}\n    next_states: [resolving]\n    guidance_message: Read before you change anything.\n  resolving:\n    description: Fixing it\n    allowed_classes: [read, write, destructive]\n    next_states: [gathering]\nevidence:\n  echo: symptoms\n  get-structured-content: symptoms\npanic:\n  rapid_fire_count: 100\n  min_evidence_for_write: 0\n  early_states: []\n  forced_state: gathering\n";

/// Runs the Python agent script against `wayline mcp gateway` (stdio) in `scenario`.
fn agent(dir: &Path, server: &Path, scenario: &str) -> serde_json::Value {
    let policy = dir.join("policy.yaml");
    let data = dir.join("data");
    let approve = serde_json::json!([
        "--session",
        data.join("sessions/incident.json"),
        "--approver",
        "alice",
        "--policy",
        policy,
        "--audit",
        data.join("audit.jsonl"),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_gateway.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_wayline"))
        .args(["mcp", "gateway", "--upstream"])
        .arg(format!("everything={} stdio", server.display()))
        .args(["--policy", path(&policy), "--data-dir", path(&data)])
        .args(["--session", "incident"])
        .env("SCENARIO", scenario)
        .env("APPROVE_ARGS", approve.to_string())
        .output()
        .unwrap();
    script_json(&out)
}

#[test]
fn the_gateway_gates_a_real_server_by_phase_for_a_real_client() {
    let Some(server) = everything() else { return };
    if !python_mcp() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.yaml"), POLICY).unwrap();
    let seen = agent(dir.path(), &server, "first");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool.as_str().unwrap())
        .collect();
    for tool in [
        "echo",
        "toggle-simulated-logging",
        "workflow_state",
        "workflow_advance",
        "break_glass_request",
    ] {
        assert!(tools.contains(&tool), "{tool} not in {tools:?}");
    }
    // Gathering: the write (by its annotations) is blocked with the guidance; the read passes.
    let blocked = &seen["write_blocked"];
    assert_eq!(blocked["is_error"], true);
    let guidance = blocked["text"].as_str().unwrap();
    assert!(guidance.contains("Blocked by the guard"), "{guidance}");
    assert!(
        guidance.contains("not allowed in the gathering state"),
        "{guidance}"
    );
    assert!(
        guidance.contains("Read before you change anything."),
        "{guidance}"
    );
    assert_eq!(seen["read"]["text"], "Echo: hi");
    assert_eq!(seen["state_before"]["structured"]["state"], "gathering");
    assert_eq!(
        seen["state_before"]["structured"]["missing"][0],
        "symptoms evidence: 1 of 2"
    );
    assert_eq!(seen["advance_refused"]["is_error"], true);
    // Break-glass: asked by the agent, approved from the CLI, one call, then used up.
    assert_eq!(
        seen["asked"]["structured"]["status"],
        "waiting for approval"
    );
    assert_eq!(seen["before_approval"]["is_error"], true);
    assert_eq!(seen["approval"]["code"], 0, "{}", seen["approval"]);
    assert_eq!(
        seen["under_grant"]["is_error"], false,
        "{}",
        seen["under_grant"]
    );
    assert_eq!(seen["used_up"]["is_error"], true);
    // Evidence from reads moved the session on; there, the write passes.
    assert_eq!(seen["state_after"]["structured"]["state"], "resolving");
    assert_eq!(
        seen["write_in_resolving"]["is_error"], false,
        "{}",
        seen["write_in_resolving"]
    );

    // A restarted gateway goes on in the same session.
    let again = agent(dir.path(), &server, "restart");
    assert_eq!(again["state"]["structured"]["state"], "resolving");
    assert_eq!(
        again["state"]["structured"]["evidence"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(again["write"]["is_error"], false);

    // The audit log verifies; a tampered entry is found.
    let log = dir.path().join("data/audit.jsonl");
    let verified = wayline(&["guard", "audit", "verify", path(&log)]);
    assert_eq!(
        code(&verified),
        0,
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("break_glass_granted") && text.contains("break_glass_call"));
    std::fs::write(
        &log,
        text.replacen("\"decision\":\"block\"", "\"decision\":\"allow\"", 1),
    )
    .unwrap();
    let tampered = wayline(&["guard", "audit", "verify", path(&log)]);
    assert_eq!(code(&tampered), 1);
    assert!(String::from_utf8_lossy(&tampered.stdout).contains("broken at line"));
}

/// `wayline mcp gateway --prefix --http` in front of server-everything, with `args`; answers
/// the process and the URL it says it listens at.
fn http_gateway(server: &Path, args: &[&str]) -> (std::process::Child, String) {
    let mut gateway = Command::new(env!("CARGO_BIN_EXE_wayline"));
    gateway
        .args([
            "mcp",
            "gateway",
            "--prefix",
            "--http",
            "127.0.0.1:0",
            "--upstream",
        ])
        .arg(format!("everything={} stdio", server.display()))
        .args(args);
    listening(gateway)
}

/// Starts `server` (a wayline MCP server given `--http`) with the test's token; answers the
/// process and the URL its first line says it listens at.
pub(crate) fn listening(mut server: Command) -> (std::process::Child, String) {
    let mut server = server
        .env("WAYLINE_MCP_TOKEN", "t0ken-for-the-test")
        .env("WAYLINE_CANARY", "canary-not-for-upstreams")
        // Not the test's stdout: a server left behind by a failed test would hold it open.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stderr = server.stderr.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (server, url)
}

/// Stops `gateway` as a service manager would (SIGTERM), and waits for it to end; it is
/// killed if it has not within 20 s.
pub(crate) fn stop(mut gateway: std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &gateway.id().to_string()])
        .status();
    let asked = Instant::now();
    while asked.elapsed() < Duration::from_secs(20) {
        if gateway.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
    panic!("the gateway did not stop within 20 s of SIGTERM");
}

/// A policy that lets every call through (conformance, not phases, is under test).
const OPEN_POLICY: &str = "name: open\ninitial_state: working\nstates:\n  working:\n    description: Anything goes\n    allowed_classes: [read, write, destructive]\n    next_states: []\nevidence:\n  echo: symptoms\npanic:\n  rapid_fire_count: 1000\n  min_evidence_for_write: 0\n  early_states: []\n  forced_state: working\n";

/// Issue 32: a client on the newest revision (no handshake; every request its own) and one on
/// the handshake's both use everything the gateway passes through, over stdio and over HTTP:
/// tools, resources and their templates, prompts and completion, progress arriving before the
/// result, and an upstream's sampling request reaching the client.
#[test]
fn the_gateway_passes_everything_through_on_every_revision() {
    let Some(server) = everything() else { return };
    if !python_mcp() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("open.yaml");
    std::fs::write(&policy, OPEN_POLICY).unwrap();
    let data = dir.path().join("data");
    let gateway_args = ["--policy", path(&policy), "--data-dir", path(&data)];
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    // Two clients nobody on the project wrote: the official Python SDK, and the official
    // TypeScript SDK's client (v2) when Node.js and the package are here.
    let typescript = wayline_testkit::mcp_ts_client("the TypeScript client's conformance runs");
    let clients = [Some("python"), typescript.as_ref().map(|_| "typescript")];
    let runs = clients.into_iter().flatten().flat_map(|client| {
        ["stdio", "http"].into_iter().flat_map(move |transport| {
            ["legacy", "2026-07-28"]
                .into_iter()
                .map(move |mode| (client, transport, mode))
        })
    });
    for (client, transport, mode) in runs {
        let mut driver = match (client, &typescript) {
            ("typescript", Some(package)) => {
                let mut node = Command::new("node");
                node.arg(tests.join("mcp_conformance.mjs"))
                    .env("MCP_TS_CLIENT", package);
                node
            }
            _ => {
                let mut python = Command::new("python3");
                python.arg(tests.join("mcp_conformance.py"));
                python
            }
        };
        driver.env("MODE", mode);
        let mut http = None;
        if transport == "stdio" {
            driver
                .args(["stdio", env!("CARGO_BIN_EXE_wayline"), "mcp", "gateway"])
                .arg("--upstream")
                .arg(format!("everything={} stdio", server.display()))
                .args(gateway_args);
        } else {
            let (gateway, url) = http_gateway(&server, &gateway_args);
            driver
                .args(["http", &url])
                .env("PREFIX", "everything__")
                .env("WAYLINE_MCP_TOKEN", "t0ken-for-the-test");
            http = Some(gateway);
        }
        let out = driver.output().unwrap();
        if let Some(gateway) = http {
            stop(gateway);
        }
        let context = format!("{client}, {transport}, {mode}");
        assert!(
            out.status.success(),
            "{context}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen = stdout_json(&out);
        let expected = if mode == "legacy" { "2025-11-25" } else { mode };
        assert_eq!(seen["protocol"], expected, "{context}");
        assert_eq!(
            seen["echo"],
            serde_json::json!(["Echo: hello"]),
            "{context}: {seen}"
        );
        assert!(
            seen["resources"].as_u64().unwrap() >= 5,
            "{context}: {seen}"
        );
        assert_eq!(
            seen["templates"],
            serde_json::json!([
                "demo://resource/dynamic/blob/{resourceId}",
                "demo://resource/dynamic/text/{resourceId}"
            ]),
            "{context}"
        );
        assert!(
            seen["prompt"][0].as_str().unwrap().contains("Lisbon"),
            "{context}: {seen}"
        );
        assert_eq!(
            seen["completion"],
            serde_json::json!(["Engineering"]),
            "{context}: {seen}"
        );
        let progress: Vec<f64> = seen["progress_before_result"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(serde_json::Value::as_f64)
            .collect();
        if client == "python" {
            assert_eq!(progress, [1.0, 2.0, 3.0], "{context}: {seen}");
        } else {
            // The TypeScript client drops notifications it reads together with the result
            // (see mcp_serve_runs_a_saved_workflow_for_a_real_client_with_progress): all
            // three came before the result on the wire, and it handled the first of them.
            let wire: Vec<f64> = seen["wire_progress"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(serde_json::Value::as_f64)
                .collect();
            assert_eq!(wire, [1.0, 2.0, 3.0], "{context}: {seen}");
            assert!(wire.starts_with(&progress), "{context}: {seen}");
        }
        assert_eq!(seen["sampled_error"], false, "{context}: {seen}");
        // Every request of a client worked in one guard session, so the evidence of its
        // first call was there at its last: its connection's, or, on the newest revision
        // over HTTP (no connection), its client's.
        assert_eq!(seen["evidence"], 1, "{context}: {seen}");
        let session = seen["session"].as_str().unwrap();
        let expected = if transport == "http" && mode != "legacy" {
            "client-"
        } else {
            "conn-"
        };
        assert!(session.starts_with(expected), "{context}: {session}");
        if mode != "legacy" && client == "python" {
            let forged = seen["forged_state"].as_str().unwrap();
            assert!(
                forged.contains("no call of this tool waits under this requestState"),
                "{context}: {forged}"
            );
        }
        // The upstream's log message reached a client on a connection (on 2026-07-28 only a
        // request in flight that asked for messages can be sent one: not asserted, the message
        // may come after the call that caused it ended).
        if client == "python" && mode == "legacy" {
            assert!(seen["logs"].as_u64().unwrap() >= 1, "{context}: {seen}");
        }
        // The client's model answered the upstream's sampling request (which quotes the
        // prompt it was given).
        let sampled = seen["sampled"].as_str().unwrap();
        assert!(
            sampled.contains("\"text\": \"sampled: ") && sampled.contains("what is wrong?"),
            "{context}: {seen}"
        );
    }
    // No session file of a client or a request is left behind.
    let left: Vec<PathBuf> = walk(&data.join("sessions"))
        .into_iter()
        .filter(|file| file.extension().is_some_and(|ext| ext == "json"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_gateway_serves_streamable_http_behind_a_bearer_token() {
    let Some(server) = everything() else { return };
    if !python_mcp() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut gateway, url) = http_gateway(&server, &["--data-dir", path(dir.path())]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_http.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&url)
        .env("WAYLINE_MCP_TOKEN", "t0ken-for-the-test")
        .output()
        .unwrap();
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = stdout_json(&out);
    assert_eq!(seen["echo"][0], "Echo: over http");
    assert_eq!(seen["state"], "gathering");
    assert_eq!(seen["blocked"], true);
    assert_eq!(seen["without_token"], 401);
    // A web page, or a page that rebound its DNS name to loopback, is refused even with the
    // token (issue 31, item 19); a stdio upstream gets a minimal environment, not the
    // gateway's token nor anything else of its environment (item 13).
    assert_eq!(seen["from_a_page"], 403, "{seen}");
    assert_eq!(seen["rebound_host"], 403, "{seen}");
    let env = seen["env"].as_str().unwrap();
    assert!(env.contains("\"PATH\""), "{env}");
    assert!(!env.contains("t0ken-for-the-test"), "{env}");
    assert!(!env.contains("canary-not-for-upstreams"), "{env}");
    let tools = seen["tools"].as_array().unwrap();
    assert!(
        tools.contains(&serde_json::json!("everything__echo")),
        "{tools:?}"
    );
    // Resources and prompts pass through (prompts prefixed like tools).
    assert!(seen["resources"].as_array().unwrap().len() >= 5, "{seen}");
    assert!(
        seen["resource_text"].as_str().unwrap().starts_with('#'),
        "{seen}"
    );
    let prompts = seen["prompts"].as_array().unwrap();
    assert!(
        prompts.contains(&serde_json::json!("everything__args-prompt")),
        "{prompts:?}"
    );
    assert!(
        seen["prompt"][0].as_str().unwrap().contains("Lisbon"),
        "{seen}"
    );
    // The token is in no file the gateway wrote.
    for entry in walk(dir.path()) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(!text.contains("t0ken-for-the-test"), "{}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_gateway_refuses_what_it_cannot_serve() {
    let no_upstream = wayline(&["mcp", "gateway"]);
    assert_eq!(code(&no_upstream), 2);
    assert!(String::from_utf8_lossy(&no_upstream.stderr).contains("no upstream MCP server"));
    let public = wayline(&[
        "mcp",
        "gateway",
        "--upstream",
        "x=true",
        "--http",
        "0.0.0.0:8080",
    ]);
    assert_eq!(code(&public), 2);
    assert!(String::from_utf8_lossy(&public.stderr).contains("loopback addresses only"));
    let dir = tempfile::tempdir().unwrap();
    let gone = wayline(&[
        "mcp",
        "gateway",
        "--upstream",
        "gone=/no/such/server",
        "--data-dir",
        path(dir.path()),
    ]);
    assert_eq!(code(&gone), 2);
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert!(
        stderr.contains("MCP server `gone` is unavailable: cannot start `/no/such/server`"),
        "{stderr}"
    );
}

/// What a client calls: a workflow and its inputs (JSON), then `also` (`[NAME, ARGUMENTS]`),
/// on revision `mode`; the Python SDK's (`tests/mcp_serve.py`), or the TypeScript SDK's
/// (`tests/mcp_serve.mjs`) when `typescript` is its package.
struct Calls<'a> {
    typescript: Option<&'a Path>,
    mode: &'a str,
    workflow: &'a str,
    inputs: &'a str,
    also: Option<&'a str>,
}

/// The run of workflow `report` for Chicago, on revision `mode`, then `also`.
fn report_for_chicago<'a>(mode: &'a str, also: Option<&'a str>) -> Calls<'a> {
    Calls {
        typescript: None,
        mode,
        workflow: "report",
        inputs: r#"{"city": "Chicago"}"#,
        also,
    }
}

/// `wayline mcp serve ARGS` driven by the Python SDK as `calls` says. Answers what the
/// client saw.
fn serve_client(args: &[&str], calls: &Calls<'_>) -> serde_json::Value {
    let mut server = vec![env!("CARGO_BIN_EXE_wayline"), "mcp", "serve"];
    server.extend(args);
    serve_client_of(&server, calls)
}

/// As [`serve_client`], of the server `target` (a command line, or the URL one listens at).
fn serve_client_of(target: &[&str], calls: &Calls<'_>) -> serde_json::Value {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut client = match calls.typescript {
        Some(package) => {
            let mut node = Command::new("node");
            node.arg(tests.join("mcp_serve.mjs"))
                .env("MCP_TS_CLIENT", package);
            node
        }
        None => {
            let mut python = Command::new("python3");
            python.arg(tests.join("mcp_serve.py"));
            python
        }
    };
    client
        .args(target)
        .env("WAYLINE_MCP_TOKEN", "t0ken-for-the-test")
        .env("MODE", calls.mode)
        .env("WORKFLOW", calls.workflow)
        .env("INPUTS", calls.inputs);
    if let Some(also) = calls.also {
        client.env("ALSO", also);
    }
    let out = client.output().unwrap();
    script_json(&out)
}

#[test]
fn mcp_serve_runs_a_saved_workflow_for_a_real_client_with_progress() {
    let Some(server) = everything() else { return };
    if !python_mcp() {
        return;
    }
    let flow = "id: report\nname: Report\ninputs: {city: {required: true, description: The city}}\nsteps:\n  - {id: weather, tool_id: weather, input_mapping: {location: $input.city}}\n  - {id: say, tool_id: echo, input_mapping: {message: weather.conditions}}\n";
    let dir = files(&format!("[{}, stdio]", server.display()), flow);
    let at = |name: &str| dir.path().join(name).display().to_string();
    let store = at("store.db");
    let (tools, configs) = (at("tools"), at("configs.yaml"));
    for args in [
        vec!["workflow", "save", &at("flow.yaml"), "--store", &store],
        vec![
            "workflow", "approve", "report", "--by", "alice", "--store", &store,
        ],
        vec![
            "workflow",
            "activate",
            "report",
            "--tools",
            &tools,
            "--config",
            &configs,
            "--input",
            "city=Chicago",
            "--store",
            &store,
        ],
    ] {
        let out = wayline(&args);
        assert_eq!(
            code(&out),
            0,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Clients on the handshake revisions and on the newest (no handshake, every request
    // carrying its own protocol metadata) see the same ...
    // ... over stdio and over streamable HTTP (`--http`, the gateway's rules: loopback only).
    let public = wayline(&["mcp", "serve", "--tools", &tools, "--http", "0.0.0.0:8080"]);
    assert_eq!(code(&public), 2);
    assert!(String::from_utf8_lossy(&public.stderr).contains("loopback addresses only"));
    // ... with the Python SDK's client and the TypeScript SDK's (when installed).
    let served = ["--tools", &tools, "--config", &configs, "--store", &store];
    let also = Some(r#"["echo", {"message": "direct"}]"#);
    let typescript = wayline_testkit::mcp_ts_client("the TypeScript client's mcp serve runs");
    let clients = [Some(None), typescript.as_deref().map(Some)];
    let runs = clients.into_iter().flatten().flat_map(|client| {
        [
            ("stdio", "legacy"),
            ("stdio", "2026-07-28"),
            ("http", "legacy"),
            ("http", "2026-07-28"),
        ]
        .map(|(transport, mode)| (client, transport, mode))
    });
    for (client, transport, mode) in runs {
        let calls = Calls {
            typescript: client,
            ..report_for_chicago(mode, also)
        };
        let seen = if transport == "stdio" {
            serve_client(&served, &calls)
        } else {
            let mut server = Command::new(env!("CARGO_BIN_EXE_wayline"));
            server
                .args(["mcp", "serve", "--http", "127.0.0.1:0"])
                .args(served);
            let (server, url) = listening(server);
            let seen = serve_client_of(&[&url], &calls);
            stop(server);
            seen
        };
        // Listed: the tools on their own and the active workflow, with its inputs' schema.
        let listed = seen["tools"].as_object().unwrap();
        for name in ["report", "weather", "echo"] {
            assert!(listed.contains_key(name), "{name}: {listed:?}");
        }
        assert_eq!(listed["report"]["required"], serde_json::json!(["city"]));
        assert_eq!(
            listed["report"]["properties"]["city"]["description"],
            "The city"
        );
        // Every input is typed, so clients that check schemas strictly find a type.
        for (name, schema) in listed {
            for (input, property) in schema["properties"].as_object().unwrap() {
                assert!(
                    property["type"].is_string() || property["anyOf"].is_array(),
                    "{name}.{input}: {property}"
                );
            }
        }
        assert_eq!(
            listed["report"]["properties"]["city"]["anyOf"][0],
            serde_json::json!({"type": "string"})
        );
        let expected = if mode == "legacy" { "2025-11-25" } else { mode };
        assert_eq!(seen["protocol"], expected);
        // The workflow ran; its steps' outputs came back; a notification per step.
        assert_eq!(seen["is_error"], false, "{seen}");
        let outputs = &seen["structured"]["outputs"];
        let conditions = outputs["weather"]["conditions"].as_str().unwrap();
        assert_eq!(outputs["say"]["text"], format!("Echo: {conditions}"));
        let delivered = seen["progress"].as_array().unwrap();
        let progress = if client.is_none() {
            delivered
        } else {
            // The TypeScript client (2.3.1) runs its notification handlers on a later
            // microtask than it settles a result, so notifications read together with the
            // result come after the call ended and are dropped (the client says "unknown
            // token"): which ones depends on how the bytes were read. What wayline controls
            // is the order on the wire, which the script records before the client handles it.
            let wire = seen["wire_progress"].as_array().unwrap();
            assert!(wire.starts_with(delivered), "{transport} {mode}: {seen}");
            wire
        };
        assert_eq!(progress.len(), 2, "{transport} {mode}: {seen}");
        assert_eq!(progress[0]["message"], "weather success");
        assert_eq!(progress[0]["total"].as_f64(), Some(2.0));
        assert_eq!(progress[1]["done"].as_f64(), Some(2.0));
        // A tool on its own takes the arguments it is given.
        assert_eq!(seen["also"]["outputs"]["echo"]["text"], "Echo: direct");
        // The run is in the store.
        let run_id = seen["structured"]["run_id"].as_str().unwrap();
        let shown = wayline(&[
            "runs", "show", run_id, "--store", &store, "--format", "json",
        ]);
        assert_eq!(
            code(&shown),
            0,
            "{}",
            String::from_utf8_lossy(&shown.stderr)
        );
        assert_eq!(stdout_json(&shown)["status"], "success");
    }

    // With a guard policy, every step is decided: one that blocks `echo` fails the run, and
    // the agent reads why.
    let policy = at("policy.yaml");
    let blocking = POLICY.replace(
        "allowed_tools: [echo, get-*]",
        "allowed_tools: [weather]\n    blocked_tools: [echo]",
    );
    std::fs::write(&policy, blocking).unwrap();
    let seen = serve_client(
        &[
            "--tools",
            &tools,
            "--config",
            &configs,
            "--store",
            &store,
            "--workflows-only",
            "--guard-policy",
            &policy,
        ],
        &report_for_chicago("legacy", None),
    );
    assert_eq!(
        seen["tools"].as_object().unwrap().len(),
        1,
        "workflows only: {seen}"
    );
    assert_eq!(seen["is_error"], true, "{seen}");
    let failure = &seen["structured"]["failures"][0];
    assert_eq!(failure["step"], "say", "{seen}");
    assert!(
        failure["error"].as_str().unwrap().contains("blocked"),
        "{failure}"
    );
    let said = seen["text"][0].as_str().unwrap();
    let run_id = seen["structured"]["run_id"].as_str().unwrap();
    assert!(
        said.starts_with(&format!("the run {run_id} did not succeed (failed): ")),
        "{said}"
    );
}

/// Issue 32: an Arazzo document's workflows are offered by `mcp serve` as tools, each with the
/// document's inputs schema, and a call runs the workflow against the document's API and
/// answers its outputs, on both revisions.
#[test]
fn mcp_serve_offers_an_arazzo_documents_workflows() {
    if !python_mcp() {
        return;
    }
    let Some(dir) = wayline_testkit::fixture("arazzo/examples/1.0.0") else {
        return;
    };
    let runtime = crate::server_runtime();
    let api = crate::arazzo::pet_store(&runtime);
    let scratch = tempfile::tempdir().unwrap();
    let document = crate::arazzo::corrected_pet_coupons(&dir, scratch.path());
    let server = format!("pet-coupons={}", api.url(""));
    let args = ["--arazzo", path(&document), "--server", &server];
    for mode in ["legacy", "2026-07-28"] {
        let calls = Calls {
            typescript: None,
            mode,
            workflow: "apply-coupon",
            inputs: r#"{"my_pet_tags": ["puppy"]}"#,
            also: None,
        };
        let seen = serve_client(&args, &calls);
        let listed = seen["tools"].as_object().unwrap();
        let mut names: Vec<&String> = listed.keys().collect();
        names.sort();
        assert_eq!(
            names,
            ["apply-coupon", "buy-available-pet", "place-order"],
            "{seen}"
        );
        assert_eq!(
            listed["apply-coupon"]["properties"]["my_pet_tags"]["type"], "array",
            "{seen}"
        );
        assert_eq!(seen["is_error"], false, "{mode}: {seen}");
        assert_eq!(
            seen["structured"]["outputs"]["apply_coupon_pet_order_id"], 7,
            "{seen}"
        );
        assert_eq!(seen["structured"]["status"], "success");
    }
    // The document is validated first: the published one (a plain mistake) is refused.
    let refused = wayline(&[
        "mcp",
        "serve",
        "--arazzo",
        path(&dir.join("pet-coupons.arazzo.yaml")),
        "--server",
        &server,
    ]);
    assert_eq!(code(&refused), 1);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("needs the path parameter `petId`"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// A client that stops waiting (the Python SDK's timeout sends `notifications/cancelled`)
/// cancels the run it started: the store has it `cancelled`, complete, and the server goes on
/// answering.
#[test]
fn mcp_serve_cancels_the_run_of_a_call_the_client_gave_up_on() {
    use wayline_executor::testing::{MockServer, Reply};
    if !python_mcp() {
        return;
    }
    let runtime = crate::server_runtime();
    let api = runtime
        .block_on(MockServer::start(|request| {
            let reply = Reply::json(200, serde_json::json!({"path": request.path()}));
            if request.path() == "/slow" {
                // Far longer than the test: only a cancel ends this call.
                reply.delay(Duration::from_secs(600))
            } else {
                reply
            }
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    for name in ["slow", "fast"] {
        std::fs::write(
            tools.join(format!("{name}.yaml")),
            format!(
                "id: {name}\nname: {name}\nbase_url: {}\npath: /{name}\n",
                api.url("")
            ),
        )
        .unwrap();
    }
    let store = dir.path().join("store.db");
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_serve.py"))
        .args([env!("CARGO_BIN_EXE_wayline"), "mcp", "serve"])
        .args(["--tools", path(&tools), "--store", path(&store)])
        .env("MODE", "legacy")
        .env("WORKFLOW", "slow")
        .env("INPUTS", "{}")
        .env("GIVE_UP_AFTER", "0.5")
        .env("ALSO", r#"["fast", {}]"#)
        .output()
        .unwrap();
    let seen = script_json(&out);
    assert!(seen["gave_up"].is_string(), "{seen}");
    assert_eq!(seen["also"]["status"], "success", "{seen}");
    let listed = wayline(&["runs", "list", "--store", path(&store), "--format", "json"]);
    let page = stdout_json(&listed);
    let slow = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["workflow_id"] == "tool-slow")
        .unwrap_or_else(|| panic!("no run of slow: {page}"));
    assert_eq!(slow["status"], "cancelled", "{page}");
    assert!(slow["finished_at"].is_string(), "{page}");
}

//! `kind: mcp` steps through `wayline run`, against a real MCP server from the npm registry:
//! `@modelcontextprotocol/server-everything`, started on stdio as the tool-configs file
//! defines it. `.ci/run` installs it into `.ci/node`; elsewhere set `WAYLINE_MCP_EVERYTHING`
//! to its executable. Without it (or without Node.js) the tests say so in one line and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{code, path, stdout_json, wayline};

/// The `mcp-server-everything` executable, if it can run here.
pub(crate) fn everything() -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/node/node_modules/.bin/mcp-server-everything");
    let found = std::env::var_os("WAYLINE_MCP_EVERYTHING")
        .map(PathBuf::from)
        .or_else(|| installed.is_file().then_some(installed));
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    match found {
        Some(found) if node => Some(found),
        _ => {
            eprintln!(
                "skipped: @modelcontextprotocol/server-everything or Node.js is not installed here \
                 (.ci/run installs them; or set WAYLINE_MCP_EVERYTHING)"
            );
            None
        }
    }
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

//! `wayline run` with code steps (in the embedded sandbox, or in a Bay named by the
//! tool-configs file), and `wayline sandbox serve` answering Bay's API over HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use serde_json::Value;
use wayline_executor::ReqwestTransport;
use wayline_sandbox::{BayClient, BayConfig, SandboxProvider};

use super::{path, wayline};

fn python_available() -> bool {
    wayline_testkit::python3_available("a test of code steps")
}

const TOOL: &str = "id: stats\nname: Stats\ndescription: Sums numbers in a sandbox\nkind: code\ncode:\n  source: |\n    result = {'total': sum(inputs['values']), 'home': __import__('os').environ['HOME']}\n";
const FLOW: &str = "id: sums\nname: Sums\ninputs: {values: {required: true}}\nsteps:\n  - {id: stats, tool_id: stats, kind: code, input_mapping: {values: $input.values}}\n";

fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("tools/stats.yaml"), TOOL).unwrap();
    std::fs::write(dir.path().join("flow.yaml"), FLOW).unwrap();
    dir
}

#[test]
fn run_gives_code_steps_the_embedded_sandbox() {
    if !python_available() {
        return;
    }
    let dir = files();
    let tools = dir.path().join("tools");
    let out = wayline(&[
        "run",
        path(&dir.path().join("flow.yaml")),
        "--tools",
        path(&tools),
        "--input",
        "values:=[1, 2, 39]",
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = &run["step_results"][0]["output_data"];
    assert_eq!(output["total"], 42);
    // The code ran in a workspace of the command's own embedded sandbox (seen as `/workspace`
    // when bubblewrap runs here, as `.ci/run` makes it).
    let home = output["home"].as_str().unwrap();
    assert!(
        home.contains("wayline-sandbox-") || home == "/workspace",
        "{home}"
    );
    let check = wayline(&["tools", "check", path(&tools)]);
    assert_eq!(check.status.code(), Some(0));
}

/// `wayline sandbox serve` on a free port; its URL is read from its first line.
struct Served {
    child: Child,
    url: String,
    /// That first line.
    line: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(data: &std::path::Path, token: &str) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["sandbox", "serve", "--port", "0", "--isolation", "none"])
        .args(["--data-dir", path(data)])
        .env("BAY_API_KEY", token)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let served = Served::read(child);
    assert!(
        served.line.contains("auth: Bearer token"),
        "{}",
        served.line
    );
    assert!(
        !served.line.contains(token),
        "the token is not printed: {}",
        served.line
    );
    served
}

impl Served {
    /// The server `child` started, where its first line on stderr says it listens.
    fn read(mut child: Child) -> Served {
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        Served { child, url, line }
    }
}

#[test]
fn serve_answers_bays_api_and_runs_the_code_steps_routed_to_it() {
    let dir = files();
    let served = serve(&dir.path().join("data"), "sk-serve-test");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = BayClient::new(
        BayConfig::new(&served.url).token("sk-serve-test"),
        Arc::new(ReqwestTransport::new().unwrap()),
    );
    let created = runtime
        .block_on(client.create(&Default::default()))
        .unwrap();
    assert!(created.id.starts_with("sandbox-"));
    let listed = runtime.block_on(client.list(&Default::default())).unwrap();
    assert_eq!(listed.items.len(), 1);
    let wrong = BayClient::new(
        BayConfig::new(&served.url).token("nope"),
        Arc::new(ReqwestTransport::new().unwrap()),
    );
    let refused = runtime.block_on(wrong.get(&created.id)).unwrap_err();
    assert_eq!(refused.code, wayline_sandbox::ErrorCode::Unauthorized);
    if !python_available() {
        return;
    }
    // The tool-configs file sends the code tool to this server.
    let config = dir.path().join("configs.yaml");
    std::fs::write(
        &config,
        format!(
            "stats:\n  base_url: {}\n  auth_token: ${{SERVE_TOKEN}}\n",
            served.url
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["run", path(&dir.path().join("flow.yaml"))])
        .args(["--tools", path(&dir.path().join("tools"))])
        .args(["--config", path(&config), "--input", "values:=[5, 5]"])
        .args(["--format", "json"])
        .env("SERVE_TOKEN", "sk-serve-test")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["step_results"][0]["output_data"]["total"], 10);
    // It ran in a workspace of the server's data directory, not in an embedded sandbox.
    let home = run["step_results"][0]["output_data"]["home"]
        .as_str()
        .unwrap();
    let data = dir.path().join("data").canonicalize().unwrap();
    assert!(
        std::path::Path::new(home).starts_with(&data),
        "{home} is not under {}",
        data.display()
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-serve-test"));
    // The step's sandbox was made there, and deleted: only the first one is left.
    let listed = runtime.block_on(client.list(&Default::default())).unwrap();
    assert_eq!(listed.items.len(), 1);
}

/// Issue 31, item 3: under bubblewrap, code runs without the privileges of whoever serves it —
/// as root, as the host's `nobody`; as a normal user (here `nobody` through `runuser`), as that
/// user — and never sees another sandbox's files or a mode-600 file of root's.
#[cfg(unix)]
#[test]
fn sandboxed_code_runs_without_privileges_whoever_serves_it() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::fs::metadata("/proc/self")
        .is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0);
    let bwrap = Command::new("bwrap")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !root || !bwrap || !python_available() {
        eprintln!("skipped: needs root (to serve as root and as nobody) and bubblewrap");
        return;
    }
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "root-only-secret").unwrap();
    std::fs::set_permissions(secret.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    for as_nobody in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let data = dir.path().join("data");
        let mut command = if as_nobody {
            // A copy nobody can reach: the checkout may sit in a directory only root can enter.
            let binary = dir.path().join("wayline");
            std::fs::copy(env!("CARGO_BIN_EXE_wayline"), &binary).unwrap();
            std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
            let mut command = Command::new("runuser");
            command.args(["-u", "nobody", "--", path(&binary)]);
            command
        } else {
            Command::new(env!("CARGO_BIN_EXE_wayline"))
        };
        let child = command
            .args([
                "sandbox",
                "serve",
                "--port",
                "0",
                "--isolation",
                "bubblewrap",
                "--no-auth",
            ])
            .args(["--data-dir", path(&data)])
            .env("HOME", dir.path())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let served = Served::read(child);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = BayClient::new(
            BayConfig::new(&served.url),
            Arc::new(ReqwestTransport::new().unwrap()),
        );
        let first = runtime
            .block_on(client.create(&Default::default()))
            .unwrap()
            .id;
        runtime
            .block_on(client.write_file(&first, "mine.txt", "first-sandbox-secret"))
            .unwrap();
        let second = runtime
            .block_on(client.create(&Default::default()))
            .unwrap()
            .id;
        let seen = runtime
            .block_on(client.shell_exec(
                &second,
                &wayline_sandbox::ShellExec::new(format!(
                    "id -u; cat {} /etc/shadow 2>/dev/null; ls -A {} | wc -l; echo end",
                    secret.path().display(),
                    data.display()
                )),
            ))
            .unwrap();
        let lines: Vec<&str> = seen.output.lines().collect();
        assert_eq!(
            lines,
            ["65534", "0", "end"],
            "as nobody: {as_nobody}: {}",
            seen.output
        );
        // Its own files it may change.
        let own = runtime
            .block_on(client.shell_exec(
                &first,
                &wayline_sandbox::ShellExec::new("echo more >> mine.txt && cat mine.txt"),
            ))
            .unwrap();
        assert_eq!(own.output, "first-sandbox-secretmore", "{own:?}");
        drop(served);
    }
}

/// Issue 31, item 18: a token given on the command line works, with a warning that every user
/// of the machine can read it, naming where it belongs.
#[test]
fn a_token_on_the_command_line_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["sandbox", "serve", "--port", "0", "--isolation", "none"])
        .args(["--token", "sk-on-the-command-line", "--data-dir"])
        .arg(dir.path().join("data"))
        .env_remove("BAY_API_KEY")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let warning = lines.next().unwrap().unwrap();
    let serving = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(warning.starts_with("warning: `--token`"), "{warning}");
    assert!(warning.contains("BAY_API_KEY"), "{warning}");
    assert!(serving.contains("auth: Bearer token"), "{serving}");
}

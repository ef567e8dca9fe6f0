//! `wayline explore --auto` against the loopback simulation of the fixture API: the target is
//! reached, the JSON summary is the documented one, and the emitted workflow runs green with
//! `wayline run`.

use serde_json::Value;
use wayline_explorer::testing::{self as simulation, calls};
use wayline_testkit::fixture;

use super::{path, server_runtime};

#[test]
fn explore_reaches_the_target_and_its_workflow_runs_green() {
    let Some(spec) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let runtime = server_runtime();
    let (base, sim) = runtime.block_on(simulation::start());
    let dir = tempfile::tempdir().unwrap();
    let sut = dir.path().join("sut.yaml");
    std::fs::write(
        &sut,
        format!(
            "name: sim\nconnection: {{host: '{base}', base_path: /v1beta1}}\n\
             preset_variables: {{displayName: e2e, region: {{name: regions/x}}}}\n\
             execution:\n  mode: auto\n  auto_mode: {{polling: {{max_retries: 5, delay_seconds: 0}}}}\n"
        ),
    )
    .unwrap();
    let workflow = dir.path().join("flow.yaml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["explore", "--sut", path(&sut), "--spec", path(&spec)])
        .args([
            "--target",
            "create a cluster, create a branch on it, delete both",
            "--auto",
        ])
        .args(["--session-dir", path(&dir.path().join("sessions"))])
        .args(["--knowledge", path(&dir.path().join("knowledge"))])
        .args(["--emit-workflow", path(&workflow), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["confirmed_steps"], 6);
    assert_eq!(summary["interventions"], 0);
    assert!(summary["session_id"].as_str().unwrap().starts_with("ses_"));
    assert!(std::path::Path::new(summary["output"].as_str().unwrap()).exists());
    // The knowledge learned is on disk, one directory per SUT: `knowledge/<sut>/patterns.yaml`.
    assert!(
        dir.path()
            .join("knowledge/knowledge/sim/patterns.yaml")
            .exists()
    );

    // The emitted workflow validates and runs green against the same API.
    let tools = dir.path().join("tools");
    let imported = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["import", "openapi", path(&spec), "--out", path(&tools)])
        .args(["--base-url", &format!("{base}/v1beta1")])
        .output()
        .unwrap();
    assert_eq!(imported.status.code(), Some(0));
    let before = calls(&sim, "POST", "/clusters");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "run",
            path(&workflow),
            "--tools",
            path(&tools),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let record: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(record["status"], "success");
    assert_eq!(calls(&sim, "POST", "/clusters"), before + 1);
}

/// The SUT file for the simulation at `base` (auto mode, instant polls unless `delay`).
fn sut_file(dir: &std::path::Path, base: &str, delay: u32) -> std::path::PathBuf {
    let sut = dir.join("sut.yaml");
    std::fs::write(
        &sut,
        format!(
            "name: sim\nconnection: {{host: '{base}', base_path: /v1beta1}}\n\
             preset_variables: {{displayName: e2e, region: {{name: regions/x}}}}\n\
             execution:\n  mode: auto\n  auto_mode: {{confidence_threshold: 0.9, polling: {{max_retries: 30, delay_seconds: {delay}}}}}\n"
        ),
    )
    .unwrap();
    sut
}

#[test]
fn questions_are_asked_at_the_terminal_and_a_killed_session_resumes() {
    use std::io::Write;

    let Some(spec) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let runtime = server_runtime();
    let (base, sim) = runtime.block_on(simulation::start());
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    // With a high threshold every step is a choice; the terminal answers `0` (the first).
    let sut = sut_file(dir.path(), &base, 0);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["explore", "--sut", path(&sut), "--spec", path(&spec)])
        .args([
            "--target",
            "create a cluster",
            "--session-dir",
            path(&sessions),
        ])
        .args([
            "--knowledge",
            path(&dir.path().join("k")),
            "--format",
            "json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"0\n0\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("ClusterService_CreateCluster"),
        "the question shows the step: {stderr}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["interventions"], 1);

    // Killed while it waits for the cluster (polls a second apart), then resumed.
    let slow = sut_file(dir.path(), &base, 1);
    let before = calls(&sim, "POST", "/clusters");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "explore",
            "--sut",
            path(&slow),
            "--spec",
            path(&spec),
            "--auto",
        ])
        .args([
            "--target",
            "create a cluster, delete it",
            "--session-dir",
            path(&sessions),
        ])
        .args([
            "--knowledge",
            path(&dir.path().join("k2")),
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the create is confirmed (the session file says so), then kill.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let id = loop {
        let found = std::fs::read_dir(&sessions).unwrap().find_map(|entry| {
            let path = entry.unwrap().path();
            // Session files only: not the temporary file a save is being written to.
            let name = path.file_name()?.to_str()?;
            if name.starts_with('.') || !name.ends_with(".yaml") {
                return None;
            }
            let text = std::fs::read_to_string(&path).ok()?;
            // `- order: 0` is the first confirmed step (a pending one has no order).
            (text.contains("create a cluster, delete it") && text.contains("- order: 0"))
                .then(|| path.file_stem().unwrap().to_string_lossy().into_owned())
        });
        if let Some(id) = found {
            break id;
        }
        assert!(std::time::Instant::now() < deadline, "the create never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "explore",
            "--sut",
            path(&sut_file(dir.path(), &base, 0)),
            "--spec",
            path(&spec),
        ])
        .args(["--auto", "--resume", &id, "--session-dir", path(&sessions)])
        .args([
            "--knowledge",
            path(&dir.path().join("k2")),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let summary: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(summary["status"], "completed");
    assert_eq!(
        calls(&sim, "POST", "/clusters"),
        before + 1,
        "the create was not repeated"
    );
    assert_eq!(calls(&sim, "DELETE", "/clusters/{id}"), 1);
}

#[test]
fn a_sut_named_as_the_fixture_names_it_learns_into_both_stores() {
    let (Some(spec), Some(shipped)) = (
        fixture("tidbcloud/tidbx-openapi.json"),
        fixture("tidbcloud/tidbx-sut.yaml"),
    ) else {
        return;
    };
    // The name as shipped: spaces, parentheses and a slash.
    let shipped = std::fs::read_to_string(shipped).unwrap();
    let name = shipped
        .lines()
        .find_map(|line| line.strip_prefix("name: "))
        .unwrap()
        .trim()
        .to_owned();
    assert!(name.contains(' ') && name.contains('/'), "{name}");
    let runtime = server_runtime();
    let (base, _sim) = runtime.block_on(simulation::start());
    let dir = tempfile::tempdir().unwrap();
    let sut = dir.path().join("sut.yaml");
    std::fs::write(
        &sut,
        format!(
            "name: '{name}'\nconnection: {{host: '{base}', base_path: /v1beta1}}\n\
             preset_variables: {{displayName: e2e, region: {{name: regions/x}}}}\n\
             execution:\n  mode: auto\n  auto_mode: {{polling: {{max_retries: 5, delay_seconds: 0}}}}\n"
        ),
    )
    .unwrap();
    for store in ["knowledge", "knowledge.db"] {
        let store = dir.path().join(store);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(["explore", "--sut", path(&sut), "--spec", path(&spec)])
            .args(["--target", "create a cluster, then delete it", "--auto"])
            .args(["--session-dir", path(&dir.path().join("sessions"))])
            .args(["--knowledge", path(&store)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let shown = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args([
                "knowledge",
                "show",
                "--sut",
                &name,
                "--knowledge",
                path(&store),
            ])
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert_eq!(shown.status.code(), Some(0));
        let learned: Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert_eq!(
            learned["patterns"].as_array().map(Vec::len),
            Some(1),
            "{}: {learned}",
            store.display()
        );
    }
    assert!(
        dir.path()
            .join("knowledge/knowledge/TiDB-Cloud-TiDBX-Starter-Essential/patterns.yaml")
            .exists()
    );
}

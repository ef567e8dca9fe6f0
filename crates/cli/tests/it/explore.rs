//! `wayline explore --auto` against the loopback simulation of the fixture API: the target is
//! reached, the JSON summary is the documented one, and the emitted workflow runs green with
//! `wayline run`.

use serde_json::Value;
use wayline_planner::testing::{self as simulation, calls};
use wayline_testkit::fixture;

use super::path;

#[test]
fn explore_reaches_the_target_and_its_workflow_runs_green() {
    let Some(spec) = fixture("tidbcloud/tidbx-openapi.json") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
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
    // The knowledge learned is on disk in the seed's layout.
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

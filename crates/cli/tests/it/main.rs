//! Integration tests of the `wayline` binary: exit codes, JSON documents, diagnostics.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use wayline_testkit::{fixture, testdata};

mod arazzo;
mod command_line;
mod durable;
mod explore;
mod fuzz;
mod guard;
mod hardening;
mod import;
mod json_server;
mod knowledge;
mod mcp;
mod oauth;
mod plan;
mod run;
mod sandbox;
mod schema;
mod services;
mod test_command;
mod workers;
mod workflows;

fn wayline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(args)
        .output()
        .expect("the wayline binary runs")
}

/// A runtime for a loopback server a test starts (the simulation, the fake model) while the
/// `wayline` binary runs as a child process.
pub(crate) fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Output bytes as text, for assertions and their messages.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

/// What a helper script printed (JSON), once it succeeded; its stderr when it did not.
fn script_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(output)
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn tools_check_accepts_every_fixture_tool() {
    let Some(tools) = fixture("structure-ai-bot/tools") else {
        return;
    };
    let output = wayline(&["tools", "check", path(&tools)]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "31 tool(s) loaded, 0 problems\n"
    );
}

#[test]
fn tools_check_reports_every_malformed_file_with_its_line() {
    let dir = testdata("malformed");
    let output = wayline(&["tools", "check", path(&dir)]);
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for located in [
        "syntax.yaml:3:11:",
        "unknown_field.yaml:4:1:",
        "wrong_type.yaml:4:13:",
        "missing_id.yaml:1:1:",
        "list.yaml:1:1:",
        "defined twice",
    ] {
        assert!(stderr.contains(located), "missing {located} in:\n{stderr}");
    }
    assert!(
        stderr.contains("did you mean `response_extract`?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("| ^"),
        "a caret under the offending line:\n{stderr}"
    );

    let json = wayline(&["tools", "check", path(&dir), "--format", "json"]);
    let doc = stdout_json(&json);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["errors"].as_array().unwrap().len(), 6);
    let unknown = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == "response_extarct")
        .unwrap();
    assert_eq!(
        (unknown["line"].as_u64(), unknown["suggestion"].as_str()),
        (Some(4), Some("response_extract"))
    );
}

#[test]
fn each_malformed_file_alone_exits_1() {
    for file in [
        "syntax.yaml",
        "unknown_field.yaml",
        "wrong_type.yaml",
        "missing_id.yaml",
        "list.yaml",
    ] {
        let output = wayline(&[
            "tools",
            "check",
            path(&testdata(&format!("malformed/{file}"))),
        ]);
        assert_eq!(code(&output), 1, "{file}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("{file}:")), "{file}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A tool file that does not load is a problem of the file for `tools check` and `validate`
/// (exit 1), and stops a command that would call the tools from starting (exit 2), as the CLI
/// contract says.
#[test]
fn tools_that_do_not_load_stop_a_run_with_exit_2() {
    let broken = testdata("malformed/unknown_field.yaml");
    let workflow = testdata("workflows/geo.json");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let broken_tools = path(&broken);
    let checked = wayline(&["validate", path(&workflow), "--tools", broken_tools]);
    assert_eq!(code(&checked), 1);
    for args in [
        vec!["run", path(&workflow), "--tools", broken_tools],
        vec!["tools", "try", "ip_locate", "--tools", broken_tools],
        vec![
            "runs",
            "resume",
            "r1",
            "--tools",
            broken_tools,
            "--store",
            path(&store),
        ],
        vec![
            "plan",
            "find me",
            "--tools",
            broken_tools,
            "--model-url",
            "http://127.0.0.1:9/v1",
        ],
    ] {
        let output = wayline(&args);
        assert_eq!(code(&output), 2, "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("did not load"), "{args:?}: {stderr}");
    }
}

#[test]
fn tools_list_prints_the_catalog_as_text_and_json() {
    let tools = testdata("tools");
    let text = wayline(&["tools", "list", path(&tools)]);
    assert_eq!(code(&text), 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("country — Country details by ISO code (GraphQL)\n  POST http://127.0.0.1:8080/graphql\n  inputs: code*  outputs: name, capital, currency\n"), "{text}");

    let doc = stdout_json(&wayline(&[
        "tools",
        "list",
        path(&tools),
        "--format",
        "json",
    ]));
    let ids: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "country",
            "forecast",
            "ip_locate",
            "post_report",
            "rates",
            "token"
        ]
    );
    assert_eq!(
        doc["tools"][0]["inputs"][0],
        serde_json::json!({"name": "code", "required": true})
    );
}

#[test]
fn validate_prints_the_json_document() {
    let output = wayline(&[
        "validate",
        path(&testdata("workflows/geo.json")),
        "--tools",
        path(&testdata("tools")),
        "--format",
        "json",
    ]);
    assert_eq!(code(&output), 0);
    assert_eq!(
        stdout_json(&output),
        serde_json::json!({
            "valid": true,
            "errors": [],
            "warnings": [],
            "edges": [
                {"from": "step_1", "to": "step_2", "inferred": false},
                {"from": "step_1", "to": "step_3", "inferred": true}
            ],
            "order": ["step_1", "step_2", "step_3"],
            "levels": [["step_1"], ["step_2", "step_3"]]
        })
    );
}

#[test]
fn validate_exits_1_with_every_problem() {
    let output = wayline(&[
        "validate",
        path(&testdata("workflows/invalid/many_problems.yaml")),
        "--tools",
        path(&testdata("tools")),
        "--format",
        "json",
    ]);
    assert_eq!(code(&output), 1);
    let doc = stdout_json(&output);
    assert_eq!(doc["valid"], false);
    let kinds: Vec<&str> = doc["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "duplicate_step_id",
            "unknown_tool",
            "missing_required_input",
            "unknown_output_field",
            "invalid_reference",
            "invalid_expression"
        ]
    );
}

#[test]
fn validate_rejects_a_workflow_with_a_typo_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("typo.yaml");
    std::fs::write(
        &workflow,
        "id: w\nname: W\nsteps:\n  - id: a\n    tool_id: ip_locate\n    input_mappings: {}\n",
    )
    .unwrap();
    let output = wayline(&[
        "validate",
        path(&workflow),
        "--tools",
        path(&testdata("tools")),
    ]);
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("typo.yaml:6:5:"), "{stderr}");
    assert!(stderr.contains("did you mean `input_mapping`?"), "{stderr}");
}

#[test]
fn unreadable_input_and_bad_usage_exit_2() {
    let tools = testdata("tools");
    let missing = wayline(&["validate", "no-such-workflow.yaml", "--tools", path(&tools)]);
    assert_eq!(code(&missing), 2);
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no-such-workflow.yaml: cannot read")
    );
    assert_eq!(
        code(&wayline(&["validate", "x.yaml"])),
        2,
        "--tools is required"
    );
    assert_eq!(code(&wayline(&["frobnicate"])), 2);
    assert_eq!(code(&wayline(&["tools", "check", "no/such/dir"])), 2);
    assert_eq!(code(&wayline(&["--help"])), 0);
}

#[test]
fn graph_draws_every_format() {
    let workflow = testdata("workflows/briefing.yaml");
    let tools = testdata("tools");
    for (format, marker) in [
        ("mermaid", "flowchart TD"),
        ("dot", "digraph \"briefing\""),
        ("text", "level 0"),
        ("json", "\"levels\": ["),
    ] {
        let output = wayline(&[
            "graph",
            path(&workflow),
            "--tools",
            path(&tools),
            "--format",
            format,
        ]);
        assert_eq!(code(&output), 0, "{format}");
        assert!(
            String::from_utf8_lossy(&output.stdout).starts_with(marker)
                || String::from_utf8_lossy(&output.stdout).contains(marker),
            "{format}"
        );
    }
}

#[test]
fn every_fixture_workflow_validates_from_the_command_line() {
    let Some(dir) = fixture("structure-ai-bot") else {
        return;
    };
    for entry in std::fs::read_dir(dir.join("workflows")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_some_and(|ext| ext == "json") {
            let output = wayline(&["validate", path(&file), "--tools", path(&dir.join("tools"))]);
            assert_eq!(
                code(&output),
                0,
                "{}: {}",
                file.display(),
                String::from_utf8_lossy(&output.stdout)
            );
        }
    }
    for entry in std::fs::read_dir(dir.join("workflows/invalid")).unwrap() {
        let file = entry.unwrap().path();
        let output = wayline(&["validate", path(&file), "--tools", path(&dir.join("tools"))]);
        assert_eq!(code(&output), 1, "{}", file.display());
    }
}

/// Every command that prints, with a standard output nobody reads (`wayline … | head -1` once
/// `head` has gone): it ends quietly with exit 0, never a panic (exit 101).
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let tools = testdata("tools");
    let workflow = testdata("workflows/geo.json");
    let suite = testdata("guard/suite.yaml");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let (tools, workflow, suite, store) =
        (path(&tools), path(&workflow), path(&suite), path(&store));
    let commands: [&[&str]; 10] = [
        &["tools", "check", tools],
        &["tools", "list", tools],
        &["validate", workflow, "--tools", tools],
        &["graph", workflow, "--tools", tools, "--format", "mermaid"],
        &["run", workflow, "--tools", tools, "--dry-run"],
        &["guard", "policy", "--default"],
        &["guard", "verify", suite],
        &["runs", "list", "--store", store],
        &["workflow", "list", "--store", store],
        &["--help"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(code(&output), 101, "{args:?}");
    }
}

#[test]
fn validate_json_is_json_even_when_the_file_does_not_parse_and_warns_on_suspect_literals() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "id: w\nname: W\nstepz: []\n").unwrap();
    let tools = testdata("tools");
    let output = wayline(&[
        "validate",
        path(&broken),
        "--tools",
        path(&tools),
        "--format",
        "json",
    ]);
    assert_eq!(code(&output), 1);
    let report = stdout_json(&output);
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"][0]["kind"], "invalid_document");
    assert_eq!(report["errors"][0]["line"], 3);
    assert_eq!(report["errors"][0]["suggestion"], "steps");

    let typo = dir.path().join("typo.yaml");
    std::fs::write(
        &typo,
        "id: typo\nname: T\nsteps:\n  - {id: geo, tool_id: ip_locate}\n  - {id: weather, tool_id: forecast, input_mapping: {latitude: geoo.lat, longitude: geo.lon, current: $imput.currency}}\n",
    )
    .unwrap();
    let output = wayline(&[
        "validate",
        path(&typo),
        "--tools",
        path(&tools),
        "--format",
        "json",
    ]);
    assert_eq!(code(&output), 0, "warnings do not invalidate");
    let report = stdout_json(&output);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|warning| warning["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("did you mean `geo`?"));
    assert!(warnings[1].contains("did you mean `$input`?"));
}

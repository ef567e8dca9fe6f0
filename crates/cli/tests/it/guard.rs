//! `wayline guard ...`: the default policy, the committed suite, decisions in a session file,
//! and audit verification.

use wayline_testkit::testdata;

use crate::{code, path, stdout_json, wayline};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_default_policy_prints_and_the_committed_suite_passes() {
    let as_json = stdout_json(&wayline(&["guard", "policy", "--format", "json"]));
    assert!(
        as_json["states"].is_array() || as_json["states"].is_object(),
        "{as_json}"
    );
    let printed = wayline(&["guard", "policy", "--default"]);
    assert_eq!(code(&printed), 0);
    let text = stdout(&printed);
    assert!(text.starts_with("name: adr-005\n"), "{text}");
    assert!(wayline_guard::Policy::from_yaml(&text, "printed").is_ok());

    let suite = testdata("guard/suite.yaml");
    let verified = wayline(&["guard", "verify", path(&suite)]);
    assert_eq!(code(&verified), 0, "{}", stdout(&verified));
    assert!(
        stdout(&verified).contains(" passed, 0 failed"),
        "{}",
        stdout(&verified)
    );

    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(
        &wrong,
        "cases:\n  - {name: writes are fine, state: gathering, tool: oc_write_apply, expect: allow}\n",
    )
    .unwrap();
    let failed = wayline(&["guard", "verify", path(&wrong), "--format", "json"]);
    assert_eq!(code(&failed), 1);
    let results: serde_json::Value = serde_json::from_slice(&failed.stdout).unwrap();
    assert_eq!(results[0]["got"], "block");
    assert_eq!(results[0]["passed"], false);
}

#[test]
fn check_decides_in_a_session_file_and_the_audit_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("incident.yaml");
    let log = dir.path().join("audit.jsonl");
    let check = |tool: &str| {
        wayline(&[
            "guard",
            "check",
            "--session",
            path(&session),
            "--tool",
            tool,
            "--audit",
            path(&log),
            "--domain",
            "payments",
        ])
    };
    let read = check("oc_read_logs");
    assert_eq!(code(&read), 0, "{}", stdout(&read));
    assert!(stdout(&read).starts_with("allow\n"), "{}", stdout(&read));
    let write = check("oc_write_scale");
    assert_eq!(code(&write), 1);
    let text = stdout(&write);
    assert!(text.starts_with("block: bypassing_diagnostics"), "{text}");
    assert!(
        text.contains("Trying to apply fixes before understanding the problem"),
        "{text}"
    );

    let saved: serde_json::Value =
        serde_norway::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(saved["id"], "incident");
    assert_eq!(saved["history"].as_array().unwrap().len(), 2);
    assert_eq!(saved["history"][1]["decision"], "block");

    let intact = wayline(&["guard", "audit", "verify", path(&log)]);
    assert_eq!(code(&intact), 0);
    let text = stdout(&intact);
    assert!(
        text.starts_with("intact: 2 entries, each linked to the one before\nhead: "),
        "{text}"
    );
    assert_eq!(text.lines().nth(1).unwrap().len(), "head: ".len() + 64);
    let edited =
        std::fs::read_to_string(&log)
            .unwrap()
            .replacen("oc_read_logs", "oc_read_describe", 1);
    std::fs::write(&log, edited).unwrap();
    let broken = stdout_json(&wayline(&[
        "guard",
        "audit",
        "verify",
        path(&log),
        "--format",
        "json",
    ]));
    assert_eq!(broken["result"], "broken");
    assert_eq!(broken["line"], 1);
    assert!(broken["reason"].is_string(), "{broken}");
    let broken = wayline(&["guard", "audit", "verify", path(&log)]);
    assert_eq!(code(&broken), 1);
    assert!(
        stdout(&broken).starts_with("broken at line 1: "),
        "{}",
        stdout(&broken)
    );

    // A session file that is not a session is refused with its line.
    std::fs::write(&session, "id: x\nstate: gathering\nbogus: 1\n").unwrap();
    let refused = check("oc_read_logs");
    assert_eq!(code(&refused), 2);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("incident.yaml:"));
}

#[test]
fn evidence_and_advance_move_a_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.json");
    let evidence = |kind: &str, text: &str| {
        wayline(&[
            "guard",
            "evidence",
            "--session",
            path(&session),
            "--type",
            kind,
            "--description",
            text,
        ])
    };
    let first = evidence("symptoms", "pods crash-looping");
    assert_eq!(code(&first), 0);
    assert!(
        stdout(&first).contains("still needed: symptoms evidence: 1 of 2"),
        "{}",
        stdout(&first)
    );
    let early = wayline(&[
        "guard",
        "advance",
        "--session",
        path(&session),
        "--to",
        "analyzing",
    ]);
    assert_eq!(code(&early), 1);
    assert!(
        stdout(&early).starts_with("not yet: symptoms evidence: 1 of 2"),
        "{}",
        stdout(&early)
    );
    let back = wayline(&[
        "guard",
        "advance",
        "--session",
        path(&session),
        "--to",
        "resolving",
        "--format",
        "json",
    ]);
    assert_eq!(code(&back), 1, "gathering does not lead to resolving");
    let refused = stdout_json(&back);
    assert_eq!(
        (refused["moved"].as_bool(), refused["state"].as_str()),
        (Some(false), Some("gathering"))
    );
    assert!(
        !refused["missing"].as_array().unwrap().is_empty(),
        "{refused}"
    );
    let second = stdout_json(&wayline(&[
        "guard",
        "evidence",
        "--session",
        path(&session),
        "--type",
        "symptoms",
        "--description",
        "started after the 14:02 deploy",
        "--format",
        "json",
    ]));
    assert_eq!(second["recorded"], "symptoms");
    assert_eq!(second["from"], "gathering");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(saved["evidence"][0]["type"], "symptoms");
}

/// Twenty `guard check` processes on one session file at once: every call is in its history
/// (the session is locked from read to write), and the file is never half-written.
#[test]
fn concurrent_checks_on_one_session_lose_no_call() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("incident.yaml");
    let session_path = path(&session).to_owned();
    let children: Vec<_> = (0..20)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
                .args([
                    "guard",
                    "check",
                    "--session",
                    &session_path,
                    "--tool",
                    "oc_read_logs",
                ])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&session).unwrap();
    let saved: wayline_guard::Session = serde_norway::from_str(&text).unwrap();
    assert_eq!(saved.history.len(), 20, "{text}");
}

/// A damaged audit log is never skipped in silence: the decision is refused (exit 1) and the
/// lost entry named; evidence recorded in a session exits 1 too; `audit verify --head` finds a
/// log cut back before a head kept elsewhere.
#[test]
fn an_audit_log_that_cannot_be_extended_fails_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("incident.yaml");
    let log = dir.path().join("audit.jsonl");
    let (session, log) = (path(&session).to_owned(), path(&log).to_owned());
    let check = |mode: &str| {
        wayline(&[
            "guard",
            "check",
            "--session",
            &session,
            "--tool",
            "oc_read_logs",
            "--audit",
            &log,
            "--mode",
            mode,
        ])
    };
    assert_eq!(code(&check("blocking")), 0);
    assert_eq!(code(&check("blocking")), 0);
    let verified = wayline(&["guard", "audit", "verify", &log]);
    let head = stdout(&verified)
        .lines()
        .find_map(|line| line.strip_prefix("head: ").map(str::to_owned))
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let first_line = text.lines().next().unwrap().to_owned();
    std::fs::write(&log, format!("{first_line}\n{{\"seq\": 2, \"cut sh")).unwrap();

    let refused = check("blocking");
    assert_eq!(code(&refused), 1);
    assert!(
        stdout(&refused).starts_with("block"),
        "{}",
        stdout(&refused)
    );
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(stderr.contains("not in the audit log"), "{stderr}");
    let reported = check("audit");
    assert_eq!(code(&reported), 0, "audit mode never blocks");
    assert!(String::from_utf8_lossy(&reported.stderr).contains("warning: not in the audit log"));
    let evidence = wayline(&[
        "guard",
        "evidence",
        "--session",
        &session,
        "--type",
        "symptoms",
        "--description",
        "pods restarting",
        "--audit",
        &log,
    ]);
    assert_eq!(code(&evidence), 1);

    std::fs::write(&log, format!("{first_line}\n")).unwrap();
    let cut = wayline(&["guard", "audit", "verify", &log, "--head", &head]);
    assert_eq!(code(&cut), 1, "{}", stdout(&cut));
    assert!(
        stdout(&cut).contains("ends without the entry"),
        "{}",
        stdout(&cut)
    );
}

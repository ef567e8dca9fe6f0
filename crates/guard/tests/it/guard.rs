//! Sessions on a fixed clock: transitions, panic interventions, break-glass, the audit chain,
//! and the committed decision-table suite.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use wayline_guard::audit::{self, AuditLog, Verification};
use wayline_guard::{
    Ask, BreakGlassRequest, Guard, GuardVerdict, Hints, Mode, PanicKind, Policy, Scope, ToolCall,
    ToolClass, suite,
};

fn t0() -> DateTime<Utc> {
    "2026-01-01T04:00:00Z".parse().unwrap()
}

fn guard(mode: Mode) -> Guard {
    Guard::new(Arc::new(Policy::default_policy()), mode)
}

#[test]
fn evidence_moves_a_session_on_and_advance_says_what_is_missing() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s1", t0());
    // Too early and too little.
    let missing = guard.advance(&mut session, "analyzing", t0()).unwrap_err();
    assert_eq!(
        missing,
        [
            "symptoms evidence: 0 of 2",
            "affected_resources evidence: 0 of 1",
            "30 s in the gathering state (0 s so far)"
        ]
    );
    assert!(
        guard.advance(&mut session, "resolving", t0()).unwrap_err()[0]
            .contains("leads to analyzing")
    );

    // Results of diagnostic tools are evidence; the requirements met, the session moves on.
    let at = t0() + Duration::seconds(40);
    assert_eq!(
        guard
            .record_result(
                &mut session,
                "oc_diagnostic_pod_health",
                true,
                "pods crash-looping",
                at
            )
            .as_deref(),
        Some("symptoms")
    );
    assert_eq!(
        guard.record_result(&mut session, "oc_read_logs", false, "timeout", at),
        None,
        "a failure is no evidence"
    );
    guard.record_result(&mut session, "oc_read_logs", true, "OOMKilled", at);
    assert_eq!(
        session.state, "gathering",
        "affected resources still missing"
    );
    guard.record_result(&mut session, "oc_read_get_pods", true, "payments-7f9", at);
    assert_eq!(session.state, "analyzing");
    assert_eq!(session.transitions[0].reason, "requirements met");

    assert!(guard.advance(&mut session, "hypothesizing", at).is_err());
    // Back is always allowed where the policy leads back; forward again needs new evidence,
    // gathered in the state.
    guard.advance(&mut session, "gathering", at).unwrap();
    assert_eq!(session.state, "gathering");
    let refused = guard
        .advance(&mut session, "analyzing", at + Duration::seconds(31))
        .unwrap_err();
    assert_eq!(refused[0], "symptoms evidence: 0 of 2");
}

/// Every answer to a request to move is in the audit log, the refusals too; asking for the
/// state the session is in (the guard may have moved there on its own) is no error.
#[test]
fn every_advance_is_audited_and_the_current_state_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("audit.jsonl");
    let guard = guard(Mode::Blocking).audit(Arc::new(AuditLog::file(&log_path).unwrap()));
    let mut session = guard.start("s-advance", t0());
    assert!(guard.advance(&mut session, "analyzing", t0()).is_err());
    assert!(guard.advance(&mut session, "resolving", t0()).is_err());
    guard.advance(&mut session, "gathering", t0()).unwrap();
    assert_eq!(session.state, "gathering");
    assert!(session.transitions.is_empty(), "nothing moved");

    let entries: Vec<serde_json::Value> = std::fs::read_to_string(&log_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["advance_refused", "advance_refused", "advance_unchanged"]
    );
    assert_eq!(entries[0]["detail"]["to"], "analyzing");
    assert_eq!(
        entries[0]["detail"]["reasons"][0],
        "symptoms evidence: 0 of 2"
    );
    assert!(
        entries[1]["detail"]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("leads to analyzing")
    );
}

#[test]
fn panic_signals_block_with_a_calming_message_and_send_the_session_back() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s2", t0());
    session.state = "hypothesizing".into();
    for index in 0..3 {
        session.record_evidence("symptoms", format!("s{index}"), None, t0());
    }
    let decision = guard.decide(&mut session, ToolCall::new("oc_delete_pod"), t0());
    let GuardVerdict::Block {
        reason,
        calming_message,
        recommended_actions,
        forced_state,
        ..
    } = &decision
    else {
        panic!("{decision:?}");
    };
    assert!(
        reason.contains("blocked in the hypothesizing state"),
        "{reason}"
    );
    assert!(calming_message.is_none(), "no panic yet: a plain refusal");
    assert!(!recommended_actions.is_empty());
    assert_eq!(*forced_state, None);

    // Two destructive calls within 30 s: rapid fire, a calming intervention, back to analyzing.
    let later = t0() + Duration::seconds(10);
    let decision = guard.decide(&mut session, ToolCall::new("oc_delete_pod"), later);
    let GuardVerdict::Block {
        calming_message,
        forced_state,
        signals,
        recommended_actions,
        ..
    } = &decision
    else {
        panic!("{decision:?}");
    };
    let rapid = signals
        .iter()
        .find(|s| s.kind == PanicKind::RapidFireCommands)
        .unwrap();
    // The agent is told how long to wait: until the newest of the two has left the 30 s window.
    assert!(
        rapid.description.ends_with("wait 31 s before the next one"),
        "{}",
        rapid.description
    );
    assert_eq!(rapid.evidence["retry_after_seconds"], 31);
    assert!(
        calming_message
            .as_deref()
            .unwrap()
            .contains("Moving too quickly between operations")
    );
    assert_eq!(
        recommended_actions[0],
        "Take a deep breath - let's approach this methodically"
    );
    assert_eq!(forced_state.as_deref(), Some("analyzing"));
    assert_eq!(session.state, "analyzing");
    assert_eq!(
        session.transitions.last().unwrap().reason,
        "panic intervention"
    );
    assert_eq!(session.history.len(), 2);

    // Forty seconds later the window has passed.
    let calm = later + Duration::seconds(40);
    session.state = "resolving".into();
    for kind in ["confirmed_root_cause", "solution_plan", "rollback_plan"] {
        session.record_evidence(kind, kind, None, calm);
    }
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_write_restart"), calm)
            .name(),
        "allow"
    );
}

#[test]
fn modes_change_enforcement_not_the_decision() {
    for (mode, expected) in [
        (Mode::Blocking, "block"),
        (Mode::Guidance, "warn"),
        (Mode::Audit, "allow"),
    ] {
        let guard = guard(mode);
        let mut session = guard.start("s3", t0());
        let decision = guard.decide(&mut session, ToolCall::new("oc_write_scale"), t0());
        assert_eq!(decision.name(), expected, "{mode:?}");
        assert_eq!(session.history[0].decision, expected);
        if mode == Mode::Audit {
            let GuardVerdict::Allow { notes } = &decision else {
                unreachable!()
            };
            assert_eq!(notes, &["audit mode: would block"]);
            assert_eq!(session.state, "gathering");
        }
    }
}

#[test]
fn break_glass_needs_a_second_person_works_in_scope_expires_and_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::file(&log_path).unwrap());
    let guard = guard(Mode::Blocking).audit(log);
    let mut session = guard.start("incident-7", t0());
    let scope = Scope::Tools(vec!["oc_write_scale".into()]);

    let own = BreakGlassRequest::new("payments down, scale now", "ada", "ada", scope.clone(), 15);
    let refused = guard.break_glass(&mut session, own, t0()).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("cannot approve their own request"),
        "{refused}"
    );
    let too_long = BreakGlassRequest::new(
        "payments down, scale now",
        "ada",
        "grace",
        scope.clone(),
        600,
    );
    assert!(
        guard
            .break_glass(&mut session, too_long, t0())
            .unwrap_err()
            .to_string()
            .contains("1 to 60 minutes")
    );

    let request = BreakGlassRequest::new("payments down, scale now", "ada", "grace", scope, 15);
    let grant = guard.break_glass(&mut session, request, t0()).unwrap();
    assert_eq!(grant.expires_at, t0() + Duration::minutes(15));
    assert_eq!(grant.review_by, grant.expires_at + Duration::hours(48));

    let inside = t0() + Duration::minutes(5);
    let decision = guard.decide(&mut session, ToolCall::new("oc_write_scale"), inside);
    let GuardVerdict::Allow { notes } = &decision else {
        panic!("{decision:?}")
    };
    assert!(notes[0].contains("under break-glass grant"), "{notes:?}");
    // Outside its scope, nothing changes.
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_write_apply"), inside)
            .name(),
        "block"
    );
    // It expires by itself.
    let after = t0() + Duration::minutes(15);
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_write_scale"), after)
            .name(),
        "block"
    );

    // Every call under it is in the log, and the chain verifies.
    let text = std::fs::read_to_string(&log_path).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "break_glass_refused",
            "break_glass_refused",
            "break_glass_granted",
            "break_glass_call",
            "decision",
            "decision"
        ]
    );
    let Verification::Intact { entries: 6, head } = audit::verify(&log_path).unwrap() else {
        panic!("the chain of six entries verifies");
    };
    assert_eq!(head.len(), 64);

    // An edited entry, a removed one, a reordering: each is found.
    let lines: Vec<&str> = text.lines().collect();
    let edited = text.replacen("oc_write_scale", "oc_read_logs", 1);
    assert!(
        matches!(audit::verify_text(&edited), Verification::Broken { reason, .. } if reason.contains("edited"))
    );
    let removed = [lines[0], lines[2]].join("\n");
    assert!(matches!(
        audit::verify_text(&removed),
        Verification::Broken { line: 2, .. }
    ));
    let swapped = [lines[1], lines[0]].join("\n");
    assert!(matches!(
        audit::verify_text(&swapped),
        Verification::Broken { line: 1, .. }
    ));

    // What is not a regular file is refused at once, never read for ever.
    for path in [
        log_path.parent().unwrap(),
        std::path::Path::new("/dev/zero"),
    ] {
        let error = audit::verify(path).unwrap_err().to_string();
        assert!(error.contains("not a document"), "{error}");
    }

    // A log reopened continues the chain.
    let reopened = AuditLog::file(&log_path).unwrap();
    reopened
        .record("incident-7", "decision", serde_json::json!({}), after)
        .unwrap();
    assert!(matches!(
        audit::verify(&log_path).unwrap(),
        Verification::Intact { entries: 7, .. }
    ));
    // Cutting the last entries leaves a valid chain with another head: only the head tells.
    let cut: String = text
        .lines()
        .take(3)
        .map(|line| format!("{line}\n"))
        .collect();
    let Verification::Intact { head: shorter, .. } = audit::verify_text(&cut) else {
        panic!("a cut chain still links");
    };
    assert_ne!(shorter, head);
    // A duplicated key (the last one wins when parsed) is caught.
    let duplicated = lines[3].replacen("{\"tool\":", "{\"tool\":\"oc_read_logs\",\"tool\":", 1);
    assert_ne!(duplicated, lines[3], "the test edits the line");
    assert!(matches!(
        audit::verify_text(&[lines[0], lines[1], lines[2], duplicated.as_str()].join("\n")),
        Verification::Broken { line: 4, .. }
    ));
}

#[test]
fn a_state_grant_decides_calls_as_if_in_that_state() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s4", t0());
    for index in 0..3 {
        session.record_evidence("symptoms", format!("s{index}"), None, t0());
    }
    let request = BreakGlassRequest::new(
        "outage: skip to remediation",
        "ada",
        "grace",
        Scope::State("resolving".into()),
        30,
    );
    guard.break_glass(&mut session, request, t0()).unwrap();
    let decision = guard.decide(&mut session, ToolCall::new("oc_write_scale"), t0());
    assert_eq!(decision.name(), "allow", "{decision:?}");
    assert_eq!(session.history[0].state, "resolving");
    assert_eq!(
        session.state, "gathering",
        "the session itself does not move"
    );
}

#[test]
fn the_committed_decision_table_passes() {
    let path = wayline_testkit::testdata("guard/suite.yaml");
    let (suite, policy) = suite::load(&path).unwrap();
    let results = suite::run(&suite, &Arc::new(policy));
    assert!(results.len() >= 60, "every state x class x mode");
    let failed: Vec<_> = results.iter().filter(|result| !result.passed).collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A memory that knows one incident.
#[derive(Debug)]
struct OneIncident;

impl wayline_core::IncidentMemory for OneIncident {
    fn similar_incidents(&self, symptoms: &str, _: usize) -> Vec<wayline_core::Incident> {
        if symptoms.contains("OOMKilled") {
            vec![wayline_core::Incident::new(
                "INC-12",
                "payments pods OOMKilled",
                Some("raised the memory limit to 1Gi".into()),
                0.8,
            )]
        } else {
            Vec::new()
        }
    }
}

#[test]
fn suggestions_bring_similar_incidents_evidence_gaps_and_next_tools() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s5", t0());
    guard.record_result(
        &mut session,
        "oc_read_logs",
        true,
        "payments pods OOMKilled",
        t0(),
    );
    let suggestions = guard.suggest(&session, Some(&OneIncident), t0());
    let kinds: Vec<&str> = suggestions.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["pattern_match", "evidence_gap", "next_tools"]);
    assert_eq!(
        suggestions[0].actions,
        ["Review how INC-12 was resolved: raised the memory limit to 1Gi"]
    );
    assert!(
        suggestions[1].actions[0].starts_with("Gather symptoms evidence (1 of 2) with "),
        "{:?}",
        suggestions[1].actions
    );
    assert!(
        suggestions[1].actions[1].contains("affected_resources"),
        "{:?}",
        suggestions[1].actions
    );
    assert!(
        suggestions[2]
            .actions
            .iter()
            .any(|a| a.contains("30 s in the gathering state"))
    );
    // Without a memory, no pattern match.
    assert_eq!(guard.suggest(&session, None, t0())[0].kind, "evidence_gap");
}

#[test]
fn evidence_counts_in_the_state_it_was_gathered_for() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s6", t0());
    let at = t0() + Duration::seconds(40);
    gather_enough(&guard, &mut session, at);
    assert_eq!(session.state, "analyzing");
    guard.advance(&mut session, "gathering", at).unwrap();
    // Back in gathering, the old evidence does not carry the session forward again.
    let later = at + Duration::seconds(40);
    guard.record_result(
        &mut session,
        "oc_diagnostic_events",
        true,
        "evictions",
        later,
    );
    assert_eq!(session.state, "gathering");
    assert!(guard.missing(&session, later)[0].starts_with("symptoms evidence: 1 of 2"));
}

#[test]
fn time_alone_completes_a_state_at_the_next_call() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s7", t0());
    gather_enough(&guard, &mut session, t0() + Duration::seconds(5));
    assert_eq!(session.state, "gathering", "30 s have not passed");
    guard.decide(
        &mut session,
        ToolCall::new("memory_search_incidents"),
        t0() + Duration::seconds(31),
    );
    assert_eq!(session.state, "analyzing");
    assert_eq!(session.history[0].state, "analyzing");
}

#[test]
fn grants_only_open_and_forged_ones_are_ignored() {
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s8", t0());
    session.state = "testing".into();
    // In testing, `oc_exec` is named: a warning (escalating permissions, medium).
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_exec"), t0())
            .name(),
        "warn"
    );
    // A grant to resolving (where `oc_exec` is not allowed) does not make it stricter.
    let request = BreakGlassRequest::new(
        "skip to remediation",
        "ada",
        "grace",
        Scope::State("resolving".into()),
        30,
    );
    guard.break_glass(&mut session, request, t0()).unwrap();
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_exec"), t0())
            .name(),
        "warn"
    );
    assert_eq!(session.state, "testing");

    // A grant written into the session by hand, approved by its own requester, is ignored.
    let mut forged = session.grants[0].clone();
    forged.request.approver = "ADA ".into();
    forged.request.scope = Scope::Tools(vec!["oc_write_*".into()]);
    session.grants = vec![forged];
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("oc_write_scale"), t0())
            .name(),
        "block"
    );
    // And so is one longer than it was granted for.
    let request = BreakGlassRequest::new(
        "scale the payments pods",
        "ada",
        "grace",
        Scope::Tools(vec!["oc_write_*".into()]),
        5,
    );
    let mut stretched = request.grant(guard.policy(), "bg-x", t0()).unwrap();
    stretched.expires_at = t0() + Duration::days(3650);
    session.grants = vec![stretched];
    assert_eq!(
        guard
            .decide(
                &mut session,
                ToolCall::new("oc_write_scale"),
                t0() + Duration::hours(1)
            )
            .name(),
        "block"
    );

    // Names that differ only in case or spacing are one person, accents included.
    let own = BreakGlassRequest::new(
        "skip to remediation",
        "Ádá  Lovelace",
        "ádá lovelace",
        Scope::State("resolving".into()),
        5,
    );
    assert!(own.grant(guard.policy(), "bg-y", t0()).is_err());
}

#[test]
fn a_suite_with_impossible_times_fails_its_case_without_crashing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.yaml");
    std::fs::write(
        &path,
        "cases:\n  - {name: far, state: gathering, tool: oc_read_logs, expect: allow, seconds_in_state: 9223372036854775807}\n  - {name: old, state: gathering, tool: oc_read_logs, expect: allow, history: [{tool: x, seconds_ago: 9223372036854775807}]}\n",
    )
    .unwrap();
    let (suite, policy) = suite::load(&path).unwrap();
    let results = suite::run(&suite, &Arc::new(policy));
    assert!(results.iter().all(|result| !result.passed));
    assert!(results[0].problem.as_deref().unwrap().contains("too large"));
}

/// Two symptoms and an affected resource, from tool results at `at`.
fn gather_enough(guard: &Guard, session: &mut wayline_guard::Session, at: DateTime<Utc>) {
    for (tool, summary) in [
        ("oc_diagnostic_pod_health", "crash loop"),
        ("oc_read_logs", "OOMKilled"),
        ("oc_read_get_pods", "payments-7f9"),
    ] {
        guard.record_result(session, tool, true, summary, at);
    }
}

/// A log whose last line is cut short cannot be extended: a decision is then refused in
/// blocking and guidance modes (nothing runs unaudited), kept with a note in audit mode, and
/// the log remembers every entry it lost.
#[test]
fn a_decision_that_cannot_be_audited_is_never_silent() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::file(&log_path).unwrap());
    let blocking = guard(Mode::Blocking).audit(log.clone());
    let mut session = blocking.start("incident-9", t0());
    assert_eq!(
        blocking
            .decide(&mut session, ToolCall::new("oc_read_logs"), t0())
            .name(),
        "allow"
    );
    assert!(log.failures().is_empty());
    let text = std::fs::read_to_string(&log_path).unwrap();
    std::fs::write(&log_path, &text[..text.len() / 2]).unwrap();

    for mode in [Mode::Blocking, Mode::Guidance] {
        let guard = guard(mode).audit(log.clone());
        let decision = guard.decide(&mut session, ToolCall::new("oc_read_logs"), t0());
        let GuardVerdict::Block { reason, .. } = &decision else {
            panic!("{mode:?}: {decision:?}");
        };
        assert!(reason.contains("audit log"), "{reason}");
        assert_eq!(session.history.last().unwrap().decision, "block");
    }
    let audit_mode = guard(Mode::Audit).audit(log.clone());
    let GuardVerdict::Allow { notes } =
        audit_mode.decide(&mut session, ToolCall::new("oc_read_logs"), t0())
    else {
        panic!("audit mode never blocks");
    };
    assert!(
        notes.iter().any(|note| note.contains("was not written")),
        "{notes:?}"
    );
    let failures = log.failures();
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(
        failures[0].contains("last entry is unreadable"),
        "{failures:?}"
    );
}

/// A head hash kept elsewhere shows what the chain alone cannot: entries cut from its end.
#[test]
fn an_anchor_finds_a_log_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("audit.jsonl");
    let log = AuditLog::file(&log_path).unwrap();
    let mut heads = Vec::new();
    for seconds in 0..3 {
        let entry = log
            .record(
                "s",
                "decision",
                serde_json::json!({}),
                t0() + Duration::seconds(seconds),
            )
            .unwrap();
        heads.push(entry.hash);
    }
    assert!(matches!(
        audit::verify_from_anchor(&log_path, &heads[2]).unwrap(),
        Verification::Intact { entries: 3, .. }
    ));
    let text = std::fs::read_to_string(&log_path).unwrap();
    let cut: String = text
        .lines()
        .take(2)
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&log_path, cut).unwrap();
    assert!(matches!(
        audit::verify(&log_path).unwrap(),
        Verification::Intact { entries: 2, .. }
    ));
    let Verification::Broken { line, reason } =
        audit::verify_from_anchor(&log_path, &heads[2]).unwrap()
    else {
        panic!("the anchor is gone");
    };
    assert_eq!(line, 3);
    assert!(reason.contains(&heads[2]), "{reason}");
    // An older anchor still passes: the log grew after it was taken.
    assert!(matches!(
        audit::verify_from_anchor(&log_path, &heads[0]).unwrap(),
        Verification::Intact { .. }
    ));
}

#[test]
fn an_agent_asks_a_person_approves_and_a_one_call_grant_lets_one_call_through() {
    let sink = Arc::new(audit::MemorySink::default());
    let guard = guard(Mode::Blocking).audit(Arc::new(AuditLog::new(Box::new(Arc::clone(&sink)))));
    let mut session = guard.start("s9", t0());
    let mut ask = Ask::new(
        "the pod is crash-looping and customers are down",
        "agent:claude",
        Scope::Tools(vec!["oc_write_restart".into()]),
        10,
    );
    ask.calls = Some(1);
    let too_long = Ask::new(
        "the pod is crash-looping",
        "agent:claude",
        Scope::State("resolving".into()),
        600,
    );
    assert!(
        guard
            .request_break_glass(&mut session, too_long, t0())
            .is_err()
    );
    let pending = guard.request_break_glass(&mut session, ask, t0()).unwrap();
    assert_eq!(session.requests.len(), 1);
    // Asking opens nothing; the asker cannot approve; a second person can.
    let call = || ToolCall::new("oc_write_restart");
    assert_eq!(guard.decide(&mut session, call(), t0()).name(), "block");
    let own = guard.approve(&mut session, &pending.id, "Agent:Claude", t0());
    assert!(
        own.unwrap_err()
            .to_string()
            .contains("cannot approve their own")
    );
    assert!(
        guard
            .approve(&mut session, "req-nope", "alice", t0())
            .is_err()
    );
    let grant = guard
        .approve(&mut session, &pending.id, "alice", t0())
        .unwrap();
    assert!(session.requests.is_empty());
    assert_eq!(grant.request.calls, Some(1));
    let at = t0() + Duration::seconds(5);
    assert_eq!(guard.decide(&mut session, call(), at).name(), "allow");
    // Used up: the next call is blocked again, though the grant has minutes left.
    let later = t0() + Duration::seconds(60);
    assert_eq!(guard.decide(&mut session, call(), later).name(), "block");
    assert_eq!(session.grants[0].used, 1);
    let kinds: Vec<String> = sink.entries().into_iter().map(|entry| entry.kind).collect();
    for kind in [
        "break_glass_refused",
        "break_glass_requested",
        "break_glass_granted",
        "break_glass_call",
    ] {
        assert!(
            kinds.iter().any(|seen| seen == kind),
            "{kind} not in {kinds:?}"
        );
    }
}

#[test]
fn annotations_classify_only_what_no_pattern_names() {
    let policy = Policy::default_policy();
    let read_only = Hints::new(Some(true), Some(false));
    let additive = Hints::new(Some(false), Some(false));
    let unsaid = Hints::new(Some(false), None);
    assert_eq!(policy.classify_hinted("echo", read_only), ToolClass::Read);
    assert_eq!(policy.classify_hinted("toggle", additive), ToolClass::Write);
    assert_eq!(
        policy.classify_hinted("drop", unsaid),
        ToolClass::Destructive
    );
    assert_eq!(
        policy.classify_hinted("nothing", Hints::default()),
        ToolClass::Write
    );
    // A hint never overrides a pattern: a restart that calls itself read-only is destructive.
    assert_eq!(
        policy.classify_hinted("oc_write_restart", read_only),
        ToolClass::Destructive
    );
    // In gathering, a read-only tool by hints passes; the same name with no hints does not.
    let guard = guard(Mode::Blocking);
    let mut session = guard.start("s10", t0());
    let echo = ToolCall::new("echo").hints(read_only);
    assert_eq!(guard.decide(&mut session, echo, t0()).name(), "allow");
    assert_eq!(
        guard
            .decide(&mut session, ToolCall::new("echo"), t0())
            .name(),
        "block"
    );
}

/// Two writers of one log (two processes, or two logs opened on one file) interleave without
/// breaking the chain: a sink reads the tail again whenever the file is not as it left it.
#[test]
fn two_writers_of_one_log_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("audit.jsonl");
    let (first, second) = (
        AuditLog::file(&log_path).unwrap(),
        AuditLog::file(&log_path).unwrap(),
    );
    for seconds in 0..6 {
        let log = if seconds % 3 == 0 { &second } else { &first };
        let entry = log
            .record(
                "s",
                "decision",
                serde_json::json!({"n": seconds}),
                t0() + Duration::seconds(seconds),
            )
            .unwrap();
        assert_eq!(entry.seq, u64::try_from(seconds).unwrap() + 1);
    }
    assert!(matches!(
        audit::verify(&log_path).unwrap(),
        Verification::Intact { entries: 6, .. }
    ));
}

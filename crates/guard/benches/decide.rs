//! One decision with a 100-pattern policy (the default policy has 113) and a 1,000-call history (goal: under 10 µs
//! median). Numbers and the command in `docs/benchmarks.md`.
//!
//! `cargo bench -p wayline-guard --bench decide`

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use wayline_guard::{Guard, Mode, Policy, Session, ToolCall};

/// The default policy: 113 patterns across its states, classes and evidence rules.
fn policy() -> Policy {
    let policy = Policy::default_policy();
    let file = policy.file();
    let patterns = file
        .states
        .values()
        .map(|state| state.allowed_tools.len() + state.blocked_tools.len())
        .sum::<usize>()
        + file.classes.values().map(Vec::len).sum::<usize>()
        + file.evidence.len();
    assert!(patterns >= 100, "{patterns} patterns");
    policy
}

/// A session started at `start` with 1,000 `oc_read_logs` calls, one a second, cycling
/// through `domains`.
fn session_with_history(guard: &Guard, start: DateTime<Utc>, domains: &[&str]) -> Session {
    let mut session = guard.start("bench", start);
    for index in 0..1_000usize {
        let call = ToolCall::new("oc_read_logs").domain(domains[index % domains.len()]);
        let at = start + Duration::seconds(i64::try_from(index).unwrap_or(0));
        guard.decide(&mut session, call, at);
    }
    session
}

/// A copy of `session` with room to grow: a clone's vectors are exactly full, a live session's
/// have room (amortised growth), which is what is measured.
fn roomy(session: &Session) -> Session {
    let mut session = session.clone();
    session.history.reserve(session.history.len());
    session.signals.reserve(session.signals.len());
    session
}

fn decide(c: &mut Criterion) {
    let guard = Guard::new(Arc::new(policy()), Mode::Blocking);
    let start: DateTime<Utc> = "2026-01-01T04:00:00Z".parse().unwrap();
    let now = start + Duration::seconds(1_000);
    // An hour of reading logs in one namespace, then a restart; and the same spread over four
    // namespaces (every call raised a domain-jumping signal, and the restart raises two).
    for (name, domains) in [
        ("decide_100_patterns_1000_calls", &["payments"][..]),
        (
            "decide_100_patterns_1000_calls_four_namespaces",
            &["payments", "checkout", "search", "auth"][..],
        ),
    ] {
        let session = session_with_history(&guard, start, domains);
        c.bench_function(name, |b| {
            // `_ref`: the session is cloned before and dropped after the timed part; only the
            // decision is measured.
            b.iter_batched_ref(
                || roomy(&session),
                |session| {
                    guard.decide(
                        session,
                        ToolCall::new("oc_write_restart").domain("payments"),
                        now,
                    )
                },
                BatchSize::LargeInput,
            )
        });
    }
}

/// The worst case for pattern matching: a tool no pattern names (so every class pattern and
/// every pattern of the state is tried), in a state with 100 patterns of its own.
fn decide_unmatched(c: &mut Criterion) {
    let padding: Vec<String> = (0..85).map(|n| format!("\"team_{n}_*\"")).collect();
    let yaml = wayline_guard::DEFAULT_POLICY.replacen(
        "allowed_tools: [\"oc_read_*\"",
        &format!("allowed_tools: [{}, \"oc_read_*\"", padding.join(", ")),
        1,
    );
    let policy = Policy::from_yaml(&yaml, "padded").unwrap();
    let gathering = policy.state("gathering").unwrap();
    assert_eq!(
        gathering.allowed_tools.len() + gathering.blocked_tools.len(),
        100
    );
    let guard = Guard::new(Arc::new(policy), Mode::Blocking);
    let start: DateTime<Utc> = "2026-01-01T04:00:00Z".parse().unwrap();
    let session = session_with_history(&guard, start, &["payments"]);
    let now = start + Duration::seconds(1_000);
    c.bench_function("decide_unmatched_tool_100_pattern_state_1000_calls", |b| {
        b.iter_batched_ref(
            || roomy(&session),
            |session| guard.decide(session, ToolCall::new("custom_frobnicator_rollout"), now),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, decide, decide_unmatched);
criterion_main!(benches);

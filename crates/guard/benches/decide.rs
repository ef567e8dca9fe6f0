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
                || {
                    // A clone's vectors are exactly full; a live session's have room
                    // (amortised growth), which is what is measured.
                    let mut session = session.clone();
                    session.history.reserve(session.history.len());
                    session.signals.reserve(session.signals.len());
                    session
                },
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

criterion_group!(benches, decide);
criterion_main!(benches);

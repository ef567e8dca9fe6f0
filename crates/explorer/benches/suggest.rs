//! One suggestion over a spec of 1,000 operations and a knowledge base of 10,000 entries
//! (goal: under 5 ms median). Numbers and the command in `docs/benchmarks.md`.
//!
//! `cargo bench -p wayline-explorer --bench suggest`

use std::hint::black_box;
use std::path::Path;

use chrono::{DateTime, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, json};
use wayline_explorer::dataflow::infer;
use wayline_explorer::state::ExploreState;
use wayline_explorer::suggest::Suggester;
use wayline_knowledge::model::{PatternsFile, PitfallsFile};
use wayline_knowledge::{Knowledge, Queries};
use wayline_registry::openapi::ApiSpec;

/// 250 resources × list/create/get/delete = 1,000 operations; each item path needs the
/// resource's id, which its create returns.
fn spec() -> ApiSpec {
    let mut paths = Map::new();
    for index in 0..250 {
        let name = format!("thing{index}");
        let item = json!({"type": "object", "properties": {
            format!("{name}Id"): {"type": "string"}, "state": {"type": "string", "enum": ["CREATING", "ACTIVE"]}}});
        let ok = |schema: serde_json::Value| json!({"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}});
        paths.insert(
            format!("/{name}s"),
            json!({
                "get": {"operationId": format!("List{name}s"), "responses": ok(json!({"type": "object", "properties": {"items": {"type": "array", "items": item}}}))},
                "post": {"operationId": format!("Create{name}"), "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"displayName": {"type": "string"}}}}}}, "responses": ok(item.clone())},
            }),
        );
        paths.insert(
            format!("/{name}s/{{{name}Id}}"),
            json!({
                "parameters": [{"name": format!("{name}Id"), "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"operationId": format!("Get{name}"), "responses": ok(item.clone())},
                "delete": {"operationId": format!("Delete{name}"), "responses": {"200": {"description": "gone"}}},
            }),
        );
    }
    let text = json!({"openapi": "3.0.3", "info": {"title": "bench", "version": "1"},
        "servers": [{"url": "https://api.example.com"}], "paths": paths})
    .to_string();
    ApiSpec::parse(&text, Path::new("bench.json")).expect("the generated spec imports")
}

/// 2,000 patterns, 3,000 pitfalls and 5,000 operation statistics.
fn knowledge(now: DateTime<Utc>) -> Knowledge {
    let at = now.to_rfc3339();
    let patterns: Vec<_> = (0..2_000)
        .map(|index| {
            let thing = index % 250;
            json!({"id": format!("p{index}"), "name": format!("make_thing{thing}_{index}"),
                "trigger": {"intent_keywords": ["create", format!("thing{thing}"), format!("extra{index}")]},
                "steps": [{"operation_id": format!("Creatething{thing}")}, {"operation_id": format!("Getthing{thing}")}],
                "success_count": 3, "failure_count": 1, "last_used": at})
        })
        .collect();
    let pitfalls: Vec<_> = (0..3_000)
        .map(|index| {
            json!({"id": format!("f{index}"), "name": format!("pitfall_{index}"),
                "trigger": {"operation_id": format!("Deletething{}", index % 250), "missing_variable": format!("var{index}")},
                "error_pattern": {"status_code": 400, "message_contains": "missing"},
                "occurrence_count": 2, "last_occurred": at})
        })
        .collect();
    let mut knowledge = Knowledge::new();
    knowledge.patterns = serde_json::from_value::<PatternsFile>(json!({"patterns": patterns}))
        .expect("patterns")
        .patterns;
    knowledge.pitfalls = serde_json::from_value::<PitfallsFile>(json!({"pitfalls": pitfalls}))
        .expect("pitfalls")
        .pitfalls;
    let stats: serde_json::Value = (0..5_000)
        .map(|index| {
            (
                format!("Operation{index}"),
                json!({"total_attempts": 10, "successes": 8, "failures": 2, "success_rate": 0.8, "avg_duration_ms": 120.0, "common_errors": []}),
            )
        })
        .collect::<Map<_, _>>()
        .into();
    knowledge.stats.operations = serde_json::from_value(stats).expect("operation statistics");
    knowledge
}

fn suggest(c: &mut Criterion) {
    let spec = spec();
    assert_eq!(spec.operations.len(), 1_000);
    let flow = infer(&spec);
    let now: DateTime<Utc> = "2026-11-23T12:00:00Z".parse().expect("a time");
    let knowledge = knowledge(now);
    assert_eq!(
        knowledge.patterns.len() + knowledge.pitfalls.len() + knowledge.stats.operations.len(),
        10_000
    );
    let target = "create a thing137, then delete it";
    let mut state = ExploreState::default();
    state.variables.insert("displayName".into(), json!("bench"));
    let mut group = c.benchmark_group("suggest");
    group.bench_function("next_step_1000_operations_10000_knowledge_entries", |b| {
        let suggester = Suggester::new(
            &spec,
            &flow,
            target,
            Some(Queries::at(&knowledge, now).min_support(1)),
        );
        b.iter(|| black_box(suggester.next(black_box(&state), &[], &[])));
    });
    group.bench_function("read_target_and_next_step", |b| {
        b.iter(|| {
            let suggester = Suggester::new(
                &spec,
                &flow,
                black_box(target),
                Some(Queries::at(&knowledge, now).min_support(1)),
            );
            black_box(suggester.next(&state, &[], &[]))
        });
    });
    group.finish();
    let suggester = Suggester::new(
        &spec,
        &flow,
        target,
        Some(Queries::at(&knowledge, now).min_support(1)),
    );
    let first = suggester.next(&state, &[], &[]).expect("a suggestion");
    assert_eq!(first.operation, "Creatething137");
}

criterion_group!(benches, suggest);
criterion_main!(benches);

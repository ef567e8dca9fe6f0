//! Knowledge queries against 10,000 patterns and 10,000 pitfalls (goal: under 1 ms a query),
//! and the recorder's cost per step (goal: under 20 µs). Numbers and the command in
//! `docs/benchmarks.md`.
//!
//! `cargo bench -p wayline-knowledge --bench knowledge`

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use wayline_core::{
    MemoryCatalog, Run, RunEvent, RunObserver, StepResult, StepStatus, ToolDefinition,
};
use wayline_knowledge::model::{Pattern, PatternStep, Pitfall, Precondition};
use wayline_knowledge::{Knowledge, MemoryKnowledge, Queries, Recorder, ResourceStates};

const RESOURCES: [&str; 10] = [
    "cluster", "branch", "backup", "export", "import", "user", "role", "endpoint", "network", "key",
];
const VERBS: [&str; 5] = ["Create", "Get", "Update", "Delete", "List"];

/// 10,000 patterns over 1,000 operations and 10,000 pitfalls over the same operations. (The
/// model types are `non_exhaustive`: built by assignment.)
fn large() -> Knowledge {
    let mut knowledge = Knowledge::new();
    for index in 0..10_000usize {
        let resource = RESOURCES[index % RESOURCES.len()];
        let operation = |verb: &str| format!("{resource}Service_{verb}{resource}{}", index % 100);

        let mut pattern = Pattern::default();
        pattern.id = format!("pattern_{index}");
        pattern.name = format!("pattern {index}");
        pattern.trigger.intent_keywords = vec![
            VERBS[index % VERBS.len()].to_lowercase(),
            resource.to_owned(),
            format!("tag{}", index % 500),
        ];
        if index % 2 == 0 {
            let mut precondition = Precondition::default();
            precondition.resource_not_exists = Some(resource.to_owned());
            pattern.trigger.precondition = Some(precondition);
        }
        for step in 0..3 {
            let mut template = PatternStep::default();
            template.operation_id = operation(VERBS[(index + step) % VERBS.len()]);
            pattern.steps.push(template);
        }
        pattern.success_count = (index % 20) as u64;
        pattern.failure_count = (index % 3) as u64;
        knowledge.patterns.push(pattern);

        let mut pitfall = Pitfall::default();
        pitfall.id = format!("pitfall_{index}");
        pitfall.name = format!("pitfall {index}");
        pitfall.trigger.operation_id = operation(VERBS[index % VERBS.len()]);
        if index % 2 == 0 {
            pitfall.trigger.missing_variable = Some(format!("var_{}", index % 50));
        } else {
            pitfall
                .trigger
                .resource_state
                .insert(resource.to_owned(), "MODIFYING".to_owned());
        }
        pitfall.error_pattern.status_code = Some(400);
        pitfall.error_pattern.message_contains = format!("field {index} is required");
        pitfall.occurrence_count = 1 + (index % 7) as u64;
        knowledge.pitfalls.push(pitfall);
    }
    knowledge
}

fn queries(c: &mut Criterion) {
    let knowledge = large();
    let queries = Queries::new(&knowledge);
    let state: ResourceStates = [("cluster".to_owned(), "MODIFYING".to_owned())]
        .into_iter()
        .collect();
    let variables: Vec<String> = (0..20).map(|n| format!("var_{n}")).collect();
    let none = ResourceStates::new();
    let mut group = c.benchmark_group("queries_10k");
    group.bench_function("find_matching_pattern", |b| {
        b.iter(|| queries.find_matching_pattern("create a backup tag42 please", &none))
    });
    group.bench_function("check_pitfalls", |b| {
        b.iter(|| queries.check_pitfalls("clusterService_Getcluster10", &state, &variables))
    });
    group.finish();
}

/// The events of one run of 100 steps, one attempt each, fed to a recorder, then its flush
/// (the update rules and a memory-store write): the recording cost of a run, per step.
fn recording(c: &mut Criterion) {
    const STEPS: usize = 100;
    let tools: Vec<ToolDefinition> = (0..STEPS)
        .map(|step| ToolDefinition::new(format!("op_{step}"), "http://api.test"))
        .collect();
    let catalog = Arc::new(MemoryCatalog::from_tools(tools));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut run = Run::new("r1", "w");
    for step in 0..STEPS {
        run.step_results
            .push(StepResult::pending(format!("s{step}")));
    }
    let finished: Vec<StepResult> = (0..STEPS)
        .map(|step| {
            let mut result = StepResult::pending(format!("s{step}"));
            result.status = StepStatus::Success;
            // Distinct output names: every step adds a variable, so the variables each later
            // step records grow with the run (the costly case).
            result.output_data = json!({format!("id_{step}"): step, "state": "ACTIVE"});
            result.response_status = Some(200);
            result
        })
        .collect();
    let step_ids: Vec<String> = (0..STEPS).map(|step| format!("s{step}")).collect();
    let tool_ids: Vec<String> = (0..STEPS).map(|step| format!("op_{step}")).collect();
    let mut group = c.benchmark_group("recorder");
    group.throughput(criterion::Throughput::Elements(STEPS as u64));
    group.bench_function("100_step_run_events_and_flush", |b| {
        let store = Arc::new(MemoryKnowledge::new());
        let recorder = Recorder::new(store, "bench", catalog.clone());
        b.iter(|| {
            recorder.on_event(&RunEvent::RunStarted { run: &run });
            for step in 0..STEPS {
                recorder.on_event(&RunEvent::StepStarted {
                    run_id: "r1",
                    step_id: &step_ids[step],
                });
                recorder.on_event(&RunEvent::Attempt {
                    run_id: "r1",
                    step_id: &step_ids[step],
                    tool_id: &tool_ids[step],
                    attempt: 1,
                    status: Some(200),
                    error: None,
                    duration: Duration::from_millis(12),
                });
                recorder.on_event(&RunEvent::StepFinished {
                    run_id: "r1",
                    result: &finished[step],
                });
            }
            recorder.on_event(&RunEvent::RunFinished { run: &run });
            runtime.block_on(recorder.flush()).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, queries, recording);
criterion_main!(benches);

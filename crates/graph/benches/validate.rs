//! Validate and order generated workflows of 1k, 10k and 100k steps, about 3 edges per step.
//!
//! `cargo bench -p wayline-graph --bench validate`; numbers in docs/benchmarks.md.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use wayline_core::{Edge, MemoryCatalog, Step, ToolDefinition, Workflow};
use wayline_graph::validate;

/// A DAG of `steps` steps: each step after the first few reads up to two earlier steps' outputs
/// through mappings (inferred edges) and has one explicit edge from another earlier step.
fn workflow(steps: usize) -> Workflow {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut workflow = Workflow::new("bench", "bench");
    for index in 0..steps {
        let mut step = Step::new(format!("step_{index}"), "t");
        if index > 0 {
            for k in 0..2 {
                let from = next(index);
                step.input_mapping
                    .insert(format!("in{k}"), format!("step_{from}.items.{k}.id").into());
            }
            let from = next(index);
            workflow
                .edges
                .push(Edge::new(format!("step_{from}"), format!("step_{index}")));
        }
        step.input_mapping.insert("literal".into(), "3.5".into());
        workflow.steps.push(step);
    }
    workflow
}

fn bench(c: &mut Criterion) {
    let catalog = MemoryCatalog::from_tools([ToolDefinition::new("t", "http://127.0.0.1")]);
    let mut group = c.benchmark_group("validate_and_order");
    for steps in [1_000, 10_000, 100_000] {
        let workflow = workflow(steps);
        if steps >= 100_000 {
            group.sample_size(10);
        }
        group.bench_with_input(
            BenchmarkId::from_parameter(steps),
            &workflow,
            |b, workflow| {
                b.iter(|| {
                    let report = validate(black_box(workflow), &catalog);
                    assert!(report.is_valid());
                    black_box(report.order_indexes().len())
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

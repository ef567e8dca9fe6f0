//! What reading a YAML document costs: `document::parse` (the limits read from the parser's
//! events first, then serde_norway) beside serde_norway alone, on a 1.7 MB description-like
//! document and on 1,000 small tool-like ones.
//!
//! `cargo bench -p wayline-core --bench document`; numbers in docs/benchmarks.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use wayline_core::document::{Format, parse};

/// A description-like document: 2,000 paths, each with parameters, a body and responses.
fn large() -> String {
    let mut text = String::from("openapi: 3.1.0\ninfo: {title: Large, version: '1'}\npaths:\n");
    for index in 0..2_000 {
        text.push_str(&format!(
            "  /items/{index}/{{id}}:\n    get:\n      operationId: get_{index}\n      \
             parameters:\n        - {{name: id, in: path, required: true, schema: {{type: string}}}}\n        \
             - {{name: page, in: query, schema: {{type: integer, default: 1}}}}\n      \
             responses:\n        '200':\n          description: \"the item, with \\\"quotes\\\"\"\n          \
             content:\n            application/json:\n              schema:\n                \
             type: object\n                properties: {{id: {{type: string}}, tags: {{type: array, items: {{type: string}}}}}}\n"
        ));
    }
    text
}

fn small(index: usize) -> String {
    format!(
        "id: tool_{index}\nname: Tool {index}\nbase_url: https://api.example.com\nmethod: POST\n\
         path: /items/{{item_id}}\nrequest:\n  path_params: [item_id]\n  headers:\n    \
         Authorization: \"Bearer {{{{token}}}}\"\n  body: {{query: \"{{ item(id: 1) {{ name }} }}\"}}\n"
    )
}

fn bench(c: &mut Criterion) {
    let large = large();
    assert!(parse::<Value>(&large, Format::Yaml, "large.yaml").is_ok());
    let mut group = c.benchmark_group("yaml_1_7_mb");
    group.sample_size(20);
    group.bench_function("document_parse", |b| {
        b.iter(|| {
            black_box(parse::<Value>(
                black_box(&large),
                Format::Yaml,
                "large.yaml",
            ))
        })
    });
    group.bench_function("serde_norway_alone", |b| {
        b.iter(|| black_box(serde_norway::from_str::<Value>(black_box(&large))))
    });
    group.finish();
    let smalls: Vec<String> = (0..1_000).map(small).collect();
    let mut group = c.benchmark_group("yaml_1000_small");
    group.bench_function("document_parse", |b| {
        b.iter(|| {
            for text in &smalls {
                black_box(parse::<Value>(black_box(text), Format::Yaml, "t.yaml").ok());
            }
        })
    });
    group.bench_function("serde_norway_alone", |b| {
        b.iter(|| {
            for text in &smalls {
                black_box(serde_norway::from_str::<Value>(black_box(text)).ok());
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

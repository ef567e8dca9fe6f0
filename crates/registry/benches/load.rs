//! Load 1,000 tool files from a directory (legacy and config forms mixed).
//!
//! `cargo bench -p wayline-registry --bench load`; numbers in docs/benchmarks.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use wayline_registry::ToolRegistry;

fn write_tools(dir: &std::path::Path, count: usize) {
    for index in 0..count {
        let text = if index % 2 == 0 {
            format!(
                "id: legacy_{index}\nname: Legacy {index}\ndescription: A legacy tool\n\
                 base_url: https://api.example.com\nmethod: GET\npath: /items/{{item_id}}\n\
                 auth_type: bearer\nparameters:\n  - item_id\n  - page\n"
            )
        } else {
            format!(
                "id: config_{index}\nname: Config {index}\ndescription: A GraphQL tool\n\
                 base_url: https://api.example.com\nmethod: POST\nauth:\n  type: api_key\n  header: X-Api-Key\n\
                 request:\n  headers:\n    Authorization: \"Bearer {{{{token}}}}\"\n  body:\n\
                 \x20   query: \"{{ item(id: \\\"{{{{id}}}}\\\") {{ name tags }} }}\"\n\
                 response_extract:\n  strict: false\n  fields:\n    name: data.item.name\n    tags: data.item.tags\n"
            )
        };
        std::fs::write(dir.join(format!("tool_{index:04}.yaml")), text).expect("write a tool file");
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_tools(dir.path(), 1_000);
    let report = ToolRegistry::load([dir.path()]);
    assert!(report.errors.is_empty(), "{:?}", report.errors.first());
    assert_eq!(report.registry.len(), 1_000);
    c.bench_function("load_1000_tool_files", |b| {
        b.iter(|| black_box(ToolRegistry::load([black_box(dir.path())])))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

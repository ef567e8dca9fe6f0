//! OpenAPI import: the tidbx fixture spec (Swagger 2.0, 20 operations, 79 definitions) and a
//! generated OpenAPI 3.0 spec of 1,000 operations (250 resources × list/create/get/delete,
//! each with `$ref`s to its own schema and a shared state enum). Parsing, `$ref` inlining and
//! making the tools are timed; numbers in `docs/benchmarks.md`.
//!
//! `cargo bench -p wayline-registry --bench openapi`

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use wayline_registry::openapi::ApiSpec;

/// An OpenAPI 3.0 document with `resources × 4` operations.
fn generated_spec(resources: usize) -> String {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert(
        "State".into(),
        json!({"type": "string", "enum": ["CREATING", "ACTIVE", "DELETING"]}),
    );
    for index in 0..resources {
        let name = format!("Thing{index}");
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        schemas.insert(
            name.clone(),
            json!({"type": "object", "required": ["displayName"], "properties": {
                "id": {"type": "string", "readOnly": true},
                "displayName": {"type": "string"},
                "size": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "state": {"readOnly": true, "allOf": [{"$ref": "#/components/schemas/State"}]},
            }}),
        );
        let ok = |schema: Value| json!({"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}});
        paths.insert(
            format!("/things{index}"),
            json!({
                "get": {"operationId": format!("List{name}s"), "parameters": [
                    {"name": "pageSize", "in": "query", "schema": {"type": "integer"}},
                    {"name": "pageToken", "in": "query", "schema": {"type": "string"}}],
                    "responses": ok(json!({"type": "object", "properties": {"items": {"type": "array", "items": reference}}}))},
                "post": {"operationId": format!("Create{name}"),
                    "requestBody": {"required": true, "content": {"application/json": {"schema": reference}}},
                    "responses": ok(reference.clone())},
            }),
        );
        paths.insert(
            format!("/things{index}/{{thingId}}"),
            json!({
                "parameters": [{"name": "thingId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"operationId": format!("Get{name}"), "responses": ok(reference.clone())},
                "delete": {"operationId": format!("Delete{name}"), "responses": {"200": {"description": "gone"}}},
            }),
        );
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Generated", "version": "1"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": paths,
        "components": {"schemas": schemas},
    })
    .to_string()
}

fn import(c: &mut Criterion) {
    let mut group = c.benchmark_group("openapi_import");
    let fixture = wayline_testkit::fixture("tidbcloud/tidbx-openapi.json")
        .map(|path| std::fs::read_to_string(path).expect("the fixture reads"));
    if let Some(text) = &fixture {
        group.bench_function("tidbx_fixture_20_operations", |b| {
            b.iter(|| {
                let spec = ApiSpec::parse(black_box(text), Path::new("tidbx-openapi.json"))
                    .expect("the fixture imports");
                black_box(spec.tools(None))
            });
        });
    }
    let generated = generated_spec(250);
    let spec = ApiSpec::parse(&generated, Path::new("generated.json")).expect("it imports");
    assert_eq!(spec.operations.len(), 1_000);
    group.sample_size(20);
    group.bench_function("generated_1000_operations", |b| {
        b.iter(|| {
            let spec = ApiSpec::parse(black_box(&generated), Path::new("generated.json"))
                .expect("it imports");
            black_box(spec.tools(None))
        });
    });
    group.finish();
}

criterion_group!(benches, import);
criterion_main!(benches);

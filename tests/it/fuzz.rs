//! Structure-aware fuzzing of every parser a user's input reaches: tool files, workflows, SUT
//! configs, guard policies, OpenAPI specs, CEL expressions, templates, Arazzo documents and
//! their runtime expressions and conditions. Each target feeds
//! documents built from the format's own field names and values (and byte mutations of them
//! and of the repository's example files) to the parser, and fails on a panic; an `Err` is a
//! fine answer. A regression input found once is kept in `regressions()` below.
//!
//! CI runs a short budget (64 cases a target). A longer run:
//!
//! ```sh
//! WAYLINE_FUZZ_CASES=20000 cargo test --release --test it fuzz
//! ```

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use wayline::core::document::Format;
use wayline::core::template::{self, Mode};
use wayline::core::{Expression, Workflow};
use wayline::explorer::SutConfig;
use wayline::guard::Policy;
use wayline::registry::openapi::ApiSpec;
use wayline::registry::parse_tool;
use wayline_testkit::{fixture, testdata};

/// Cases a target runs: `WAYLINE_FUZZ_CASES`, else 64.
fn cases() -> u32 {
    std::env::var("WAYLINE_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(64)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

const TOOL_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "base_url",
    "path",
    "method",
    "auth",
    "auth_type",
    "auth_header",
    "parameters",
    "request",
    "response_extract",
    "kind",
    "timeout_ms",
    "retry",
    "idempotent",
    "destructive",
    "idempotency_key",
    "tags",
    "command",
    "code",
    "type",
    "header",
    "query_params",
    "path_params",
    "headers",
    "body",
    "content_type",
    "program",
    "args",
    "source",
    "language",
    "max_attempts",
];
const WORKFLOW_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "steps",
    "edges",
    "inputs",
    "status",
    "tool_id",
    "input_mapping",
    "when",
    "poll",
    "retry",
    "timeout_ms",
    "outputs",
    "kind",
    "severity",
    "validations",
    "from_step_id",
    "to_step_id",
    "until",
    "max_attempts",
    "interval_ms",
    "decision_prompt",
    "choices",
    "default",
    "required",
];
const SUT_FIELDS: &[&str] = &[
    "name",
    "connection",
    "host",
    "base_path",
    "auth",
    "type",
    "username_env",
    "password_env",
    "key_env",
    "header",
    "specs",
    "openapi",
    "preset_variables",
    "cli_tools",
    "description",
    "explore_hints",
    "common_operations",
    "execution",
    "mode",
    "auto_mode",
    "confidence_threshold",
    "checkpoint_operations",
    "polling",
    "max_retries",
    "delay_seconds",
];
const POLICY_FIELDS: &[&str] = &[
    "name",
    "initial_state",
    "states",
    "allowed_tools",
    "blocked_tools",
    "allowed_classes",
    "next",
    "evidence",
    "requires",
    "min_seconds",
    "guidance_message",
    "classes",
    "read",
    "write",
    "destructive",
    "privileged",
    "evidence_rules",
    "panic",
    "rapid_fire_count",
    "rapid_fire_window_seconds",
    "min_evidence_for_write",
    "early_states",
    "break_glass",
    "max_minutes",
    "review_within_hours",
    "forced_state",
];
const OPENAPI_FIELDS: &[&str] = &[
    "openapi",
    "swagger",
    "info",
    "title",
    "version",
    "paths",
    "get",
    "post",
    "put",
    "delete",
    "patch",
    "operationId",
    "parameters",
    "name",
    "in",
    "required",
    "schema",
    "$ref",
    "requestBody",
    "content",
    "application/json",
    "responses",
    "200",
    "201",
    "properties",
    "type",
    "enum",
    "items",
    "allOf",
    "components",
    "schemas",
    "definitions",
    "servers",
    "url",
    "host",
    "basePath",
    "securitySchemes",
    "security",
];

/// A scalar a user might write, awkward ones included.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|n| json!(n)),
        "[a-z_]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("${HOME}"),
            Just("${UNSET_VAR}"),
            Just("${X:-fallback}"),
            Just("{{key}}"),
            Just("{{"),
            Just("$input.city"),
            Just("$steps.a.outputs.x"),
            Just("a.b.0.c"),
            Just("steps.a.ok == true"),
            Just("body.items[0"),
            Just("GET"),
            Just("http://127.0.0.1:1/x"),
            Just("/clusters/{clusterId}"),
            Just("#/components/schemas/A"),
            Just("\u{0}"),
            Just("é\u{202e}"),
        ]
        .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

/// A document over `fields`: mappings whose keys are mostly the format's own.
fn document(fields: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        8 => proptest::sample::select(fields).prop_map(str::to_owned),
        1 => "[a-zA-Z_$]{1,10}",
    ];
    scalar().prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..7)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A byte-level edit of a text.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, u8),
    Remove(usize),
    Replace(usize, u8),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let byte = prop_oneof![
        proptest::sample::select(b"{}[]:,-'\"#&*!|>%@`\\\n \t".to_vec()),
        any::<u8>()
    ];
    proptest::collection::vec(
        prop_oneof![
            (any::<usize>(), byte.clone()).prop_map(|(at, b)| Edit::Insert(at, b)),
            any::<usize>().prop_map(Edit::Remove),
            (any::<usize>(), byte).prop_map(|(at, b)| Edit::Replace(at, b)),
        ],
        0..6,
    )
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for edit in edits {
        let len = bytes.len().max(1);
        match *edit {
            Edit::Insert(at, byte) => bytes.insert(at % (bytes.len() + 1), byte),
            Edit::Remove(at) if !bytes.is_empty() => {
                bytes.remove(at % len);
            }
            Edit::Replace(at, byte) if !bytes.is_empty() => bytes[at % len] = byte,
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The texts a target mutates: the repository's examples of the format, and generated ones.
fn texts(seeds: Vec<String>, fields: &'static [&'static str]) -> impl Strategy<Value = String> {
    let generated = (document(fields), any::<bool>()).prop_map(|(value, as_json)| {
        if as_json {
            value.to_string()
        } else {
            serde_norway::to_string(&value).unwrap_or_default()
        }
    });
    let seeded = proptest::sample::select(seeds);
    (prop_oneof![generated, seeded], edits()).prop_map(|(text, edits)| mutate(&text, &edits))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(testdata(relative)).unwrap_or_default()
}

fn run(strategy: impl Strategy<Value = String>, target: impl Fn(&str)) {
    runner()
        .run(&strategy, |text| {
            target(&text);
            Ok(())
        })
        .unwrap();
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn fuzz_tool_files() {
    let seeds = [
        "tools/ip_locate.yaml",
        "tools/post_report.yaml",
        "tools/rates.json",
    ]
    .map(read)
    .to_vec();
    run(texts(seeds, TOOL_FIELDS), |text| {
        let _ = parse_tool(text, Format::Yaml, "fuzz.yaml", &no_env);
        let _ = parse_tool(text, Format::Json, "fuzz.json", &no_env);
    });
}

#[test]
fn fuzz_workflows() {
    let seeds = vec![read("workflows/briefing.yaml"), read("workflows/geo.json")];
    run(texts(seeds, WORKFLOW_FIELDS), |text| {
        for format in [Format::Yaml, Format::Json] {
            if let Ok(workflow) = Workflow::parse(text, format, "fuzz") {
                // A workflow that parses is validated and drawn too.
                let report =
                    wayline::graph::validate(&workflow, &wayline::core::MemoryCatalog::new());
                let _ =
                    wayline::graph::render(&workflow, &report, wayline::graph::ViewFormat::Text);
            }
        }
    });
}

#[test]
fn fuzz_sut_configs() {
    let seed = "name: demo\nconnection: {host: api.test, base_path: /v1, auth: {type: bearer, key_env: TOKEN}}\nspecs: {openapi: spec.json}\nexecution: {mode: auto, auto_mode: {confidence_threshold: 0.8, checkpoint_operations: ['.*Delete.*']}}\n";
    run(texts(vec![seed.to_owned()], SUT_FIELDS), |text| {
        let _ = SutConfig::parse(text, "sut.yaml", &no_env);
    });
}

#[test]
fn fuzz_policies() {
    let seeds = vec![wayline::guard::DEFAULT_POLICY.to_owned()];
    run(texts(seeds, POLICY_FIELDS), |text| {
        let _ = Policy::from_yaml(text, "policy.yaml");
    });
}

#[test]
fn fuzz_openapi_specs() {
    let seeds = vec![read("openapi/tidbx-operations.json")];
    run(texts(seeds, OPENAPI_FIELDS), |text| {
        if let Ok(spec) = ApiSpec::parse(text, Path::new("spec.json")) {
            let _ = spec.imported_tools(None);
        }
    });
}

/// A CEL expression from the grammar's pieces, nested.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("steps.a.ok".to_owned()),
        Just("inputs.city".to_owned()),
        Just("body.items".to_owned()),
        Just("status".to_owned()),
        Just("headers['x']".to_owned()),
        Just("'text'".to_owned()),
        Just("\"quoted ' \\\"\"".to_owned()),
        any::<i32>().prop_map(|n| n.to_string()),
        Just("null".to_owned()),
        Just("[1, 2, 3]".to_owned()),
        "[a-z]{1,6}",
    ];
    leaf.prop_recursive(6, 64, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                proptest::sample::select(vec!["==", "!=", "&&", "||", "+", "<", "in"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            (
                inner.clone(),
                proptest::sample::select(vec!["map", "filter", "all", "exists"]),
                inner.clone()
            )
                .prop_map(|(list, name, body)| format!("{list}.{name}(x, {body})")),
            inner.clone().prop_map(|e| format!("size({e})")),
            inner.clone().prop_map(|e| format!("has({e}.field)")),
            inner.clone().prop_map(|e| format!("!({e})")),
            (inner.clone(), inner.clone(), inner).prop_map(|(c, a, b)| format!("{c} ? {a} : {b}")),
        ]
    })
}

#[test]
fn fuzz_cel_expressions() {
    let strategy = (expression(), edits()).prop_map(|(text, edits)| mutate(&text, &edits));
    runner()
        .run(&strategy, |text| {
            if let Ok(compiled) = Expression::compile(&text) {
                let _ = (compiled.step_refs(), compiled.input_refs());
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn fuzz_templates() {
    let strategy =
        (document(TOOL_FIELDS), edits(), "[a-z{} ]{0,24}").prop_map(|(value, edits, key)| {
            let text = mutate(&format!("{{{{{key}}}}} and {value}"), &edits);
            (text, value)
        });
    runner()
        .run(&strategy, |(text, value)| {
            let mut vars = Map::new();
            vars.insert("key".into(), value.clone());
            vars.insert("list".into(), json!([1, "a", null]));
            for mode in [Mode::Strict, Mode::Lenient] {
                let _ = template::render_str(&text, &vars, mode);
                let _ = template::render(&json!({"body": text, "value": value}), &vars, mode);
            }
            Ok(())
        })
        .unwrap();
}

const ARAZZO_FIELDS: &[&str] = &[
    "arazzo",
    "$self",
    "info",
    "title",
    "version",
    "sourceDescriptions",
    "name",
    "url",
    "type",
    "workflows",
    "workflowId",
    "inputs",
    "dependsOn",
    "steps",
    "stepId",
    "operationId",
    "operationPath",
    "channelPath",
    "action",
    "correlationId",
    "parameters",
    "in",
    "value",
    "reference",
    "requestBody",
    "payload",
    "replacements",
    "target",
    "successCriteria",
    "condition",
    "context",
    "selector",
    "onSuccess",
    "onFailure",
    "successActions",
    "failureActions",
    "retryAfter",
    "retryLimit",
    "criteria",
    "outputs",
    "components",
    "x-note",
];

/// A minimal Arazzo document, and the specification's examples when the fixtures are there.
fn arazzo_seeds() -> Vec<String> {
    let mut seeds = vec![
        "arazzo: 1.1.0\ninfo: {title: T, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: w\n    steps:\n      - stepId: a\n        operationId: getA\n        successCriteria: [{condition: $statusCode == 200}]\n        onSuccess: [{name: s, type: goto, stepId: b}]\n        outputs: {id: $response.body#/id}\n      - {stepId: b, operationId: getB, parameters: [{name: id, in: path, value: $steps.a.outputs.id}]}\n".to_owned(),
    ];
    if let Some(dir) = fixture("arazzo/examples/1.0.0") {
        for name in [
            "pet-coupons.arazzo.yaml",
            "bnpl-arazzo.yaml",
            "oauth.arazzo.yaml",
        ] {
            seeds.extend(std::fs::read_to_string(dir.join(name)));
        }
    }
    seeds
}

#[test]
fn fuzz_arazzo_documents() {
    // The seed's description, so that mutated documents also run (against a scripted API that
    // answers everything, on a paused clock: retries and deadlines cost nothing).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("api.yaml"),
        "openapi: 3.1.0\ninfo: {title: A, version: '1'}\nservers: [{url: 'http://api.test'}]\npaths:\n  /a: {get: {operationId: getA, responses: {'200': {description: ok}}}}\n  /b/{id}: {get: {operationId: getB, parameters: [{name: id, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}}\n",
    )
    .unwrap();
    // The examples' descriptions beside it (copied for the test, as the documents name them).
    if let Some(examples) = fixture("arazzo/examples/1.0.0") {
        for name in [
            "pet-coupons.openapi.yaml",
            "oauth.openapi.yaml",
            "bnpl-openapi.yaml",
        ] {
            std::fs::copy(examples.join(name), dir.path().join(name)).unwrap();
        }
    }
    let local: indexmap::IndexMap<String, std::path::PathBuf> =
        [("BnplApi".to_owned(), dir.path().join("bnpl-openapi.yaml"))].into();
    let servers: indexmap::IndexMap<String, String> = ["pet-coupons", "BnplApi", "api"]
        .map(|name| (name.to_owned(), "http://api.test".to_owned()))
        .into();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let engine = wayline::executor::Engine::builder(std::sync::Arc::new(
        wayline::core::MemoryCatalog::new(),
    ))
    .transport(std::sync::Arc::new(
        wayline::executor::testing::ScriptedTransport::new()
            .with_fallback(|_| Ok(wayline::core::HttpResponse::new(200, r#"{"id": 1}"#))),
    ))
    .max_executions(200)
    .build();
    run(texts(arazzo_seeds(), ARAZZO_FIELDS), |text| {
        let _ = wayline::arazzo::Positions::of(text);
        if let Ok(document) = wayline::arazzo::load(text, "doc.arazzo.yaml") {
            let _ = wayline::arazzo::validate(&document);
            for workflow in &document.workflows {
                if let Ok(plan) =
                    wayline::arazzo::waits::Waits::of(workflow, document.components.as_ref())
                {
                    let _ = wayline::arazzo::view::render(
                        workflow,
                        &plan,
                        wayline::arazzo::view::View::Text,
                    );
                }
            }
            let sources = wayline::arazzo::sources::Sources::load(&document, dir.path(), &local);
            let ids: Vec<String> = document
                .workflows
                .iter()
                .map(|workflow| workflow.workflow_id.clone())
                .collect();
            let runner = wayline::arazzo::run::Runner::new(document, &sources, &servers);
            for id in ids {
                let options = wayline::executor::RunOptions::new()
                    .deadline(std::time::Duration::from_secs(3600));
                let _ = runtime.block_on(runner.run(&engine, &id, Map::new(), options));
            }
        }
    });
}

/// An Arazzo runtime expression or condition from the grammar's pieces.
fn arazzo_expression() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("$statusCode".to_owned()),
        Just("$response.body#/items/0/id".to_owned()),
        Just("$response.body.state".to_owned()),
        Just("$request.header.X-Key".to_owned()),
        Just("$inputs.user.name".to_owned()),
        Just("$steps.a.outputs.b#/c".to_owned()),
        Just("$workflows.w.steps.s.outputs".to_owned()),
        Just("$sourceDescriptions.api.url".to_owned()),
        Just("{$inputs.x}".to_owned()),
        Just("'it''s'".to_owned()),
        Just("==".to_owned()),
        Just("&&".to_owned()),
        Just("!".to_owned()),
        Just("[0]".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("null".to_owned()),
        any::<i32>().prop_map(|n| n.to_string()),
        any::<String>(),
    ];
    proptest::collection::vec(piece, 1..8).prop_map(|pieces| pieces.join(" "))
}

#[test]
fn fuzz_arazzo_expressions_and_conditions() {
    use wayline::arazzo::condition::Condition;
    use wayline::arazzo::expression::{Expression, Template};
    use wayline::arazzo::runtime::{Exchange, Values};

    let mut values = Values::default();
    values.status = Some(200);
    values.response = Some(Exchange::new(
        vec![("X-Key".to_owned(), "k".to_owned())],
        Some(json!({"items": [{"id": 1}], "state": "READY"})),
    ));
    let strategy = (arazzo_expression(), edits()).prop_map(|(text, edits)| mutate(&text, &edits));
    runner()
        .run(&strategy, |text| {
            let _ = Expression::parse(&text);
            let _ = Template::parse(&text);
            let _ = values.render(&text);
            if let Ok(condition) = Condition::parse(&text) {
                let _ = condition.evaluate(&values);
            }
            Ok(())
        })
        .unwrap();
}

/// Inputs that once broke a parser, kept as fixed cases.
#[test]
fn regressions() {
    let deep_yaml = format!("x: {}1{}\n", "{a: ".repeat(20_000), "}".repeat(20_000));
    assert!(Workflow::parse(&deep_yaml, Format::Yaml, "deep.yaml").is_err());
    assert!(wayline::arazzo::load(&deep_yaml, "deep.arazzo.yaml").is_err());
    let _ = wayline::arazzo::Positions::of(&deep_yaml);
    let deep_block = (0..1_000).fold(String::new(), |text, depth| {
        format!("{text}{}- \n", "  ".repeat(depth))
    });
    let _ = wayline::arazzo::Positions::of(&deep_block);
    let chain = format!("body{}", ".a".repeat(20_000));
    assert!(Expression::compile(&chain).is_err());
    let mut nested = "x".to_owned();
    for depth in 0..7 {
        nested = format!("[1, 2].map(v{depth}, {nested})");
    }
    assert!(Expression::compile(&nested).is_err());
    let long_id = format!(
        "id: w\nname: W\nsteps:\n  - {{id: {}, tool_id: t}}\n",
        "s".repeat(70_000)
    );
    let workflow = Workflow::parse(&long_id, Format::Yaml, "long.yaml").unwrap();
    let report = wayline::graph::validate(&workflow, &wayline::core::MemoryCatalog::new());
    let _ = wayline::graph::render(&workflow, &report, wayline::graph::ViewFormat::Text);
}

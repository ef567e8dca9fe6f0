//! `expect`: a step's checks of its response — status (codes, classes, lists, an expected 4xx
//! as a success), headers, body values, duration, CEL assertions — each recorded, the failures
//! named in the step's error with what was expected and what came.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use wayline_core::{MemorySecrets, RunStatus, Secret, StepStatus, ToolConfig};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Error, RunOptions};

use crate::support::{engine, tool, workflow};

const USER: &str = "id: user\nname: User\nbase_url: x\npath: /users/{id}\n";

fn one_step(expect: &str) -> wayline_core::Workflow {
    workflow(&format!(
        "id: w\nname: W\ninputs: {{name: {{required: false}}}}\nsteps:\n  - id: get\n    tool_id: user\n    input_mapping: {{id: u1}}\n    expect:\n{expect}"
    ))
}

fn indent(yaml: &str) -> String {
    yaml.lines().map(|line| format!("      {line}\n")).collect()
}

async fn run_against(reply: Reply, expect: &str) -> (wayline_core::Run, MockServer) {
    let server = MockServer::start(move |_| reply.clone()).await.unwrap();
    let engine = engine([tool(USER, &server.url(""))]).build();
    let run = engine
        .run(
            &one_step(&indent(expect)),
            RunOptions::new().input("name", json!("Ada")),
        )
        .await
        .unwrap();
    (run, server)
}

#[tokio::test(start_paused = true)]
async fn an_expected_404_is_a_success_and_keeps_the_body() {
    let (run, server) = run_against(
        Reply::json(404, json!({"detail": "no such user"})),
        "status: 4xx\nbody: {detail: {contains: no such}}",
    )
    .await;
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    let step = &run.step_results[0];
    assert_eq!(step.output_data, json!({"detail": "no such user"}));
    assert_eq!(server.hits(), 1);
    let checks: Vec<(&str, &str, bool)> = step
        .assertions
        .iter()
        .map(|a| (a.subject.as_str(), a.check.as_str(), a.passed))
        .collect();
    assert_eq!(
        checks,
        [("status", "in", true), ("body detail", "contains", true)]
    );
    assert_eq!(step.assertions[0].expected.as_deref(), Some("4xx"));
    assert_eq!(step.assertions[0].actual.as_deref(), Some("404"));
}

#[tokio::test(start_paused = true)]
async fn an_unexpected_status_fails_naming_both() {
    let (run, _server) =
        run_against(Reply::json(200, json!({"id": 1})), "status: [201, 202]").await;
    assert_eq!(run.status, RunStatus::Failed);
    let step = &run.step_results[0];
    assert_eq!(
        step.error.as_deref(),
        Some(r#"expectation failed: status in: expected 201 or 202, got 200 (body: {"id": 1})"#)
            .map(|text| text.replace(r#"{"id": 1}"#, r#"{"id":1}"#))
            .as_deref()
    );
    assert!(!step.assertions[0].passed);
}

#[tokio::test(start_paused = true)]
async fn a_transient_status_is_retried_unless_it_is_the_one_expected() {
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    let server = MockServer::start(move |_| match seen.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::status(503),
        _ => Reply::json(200, json!({"ok": true})),
    })
    .await
    .unwrap();
    let engine = engine([tool(USER, &server.url(""))]).build();
    let run = engine
        .run(&one_step(&indent("status: 200")), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(run.step_results[0].attempts, 2, "the 503 was retried");

    let (run, server) = run_against(Reply::status(503), "status: 503").await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(server.hits(), 1, "an expected 503 is not retried");
}

#[tokio::test(start_paused = true)]
async fn headers_body_duration_and_cel_are_checked_and_each_failure_named() {
    let reply = Reply::json(
        200,
        json!({"id": 7, "name": "Ada", "tags": ["a", "b"], "price": 12.5, "email": "ada@example.org"}),
    )
    .header("X-Rate-Remaining", "42")
    .delay(Duration::from_millis(300));
    let passing = "status: 2xx\nheaders: {content-type: {contains: json}, x-rate-remaining: {gt: 10}}\nbody:\n  $.id: {exists: true, type: integer}\n  name: Ada\n  /tags: {length: 2, contains: b}\n  price: {gt: 10, lte: 100}\n  email: {matches: '^[^@]+@example\\.org$'}\n  missing: {exists: false}\nmax_duration_ms: 1000\nassert: [\"body.id == 7\", \"inputs.name == body.name\"]";
    let (run, _server) = run_against(reply.clone(), passing).await;
    assert_eq!(run.status, RunStatus::Success, "{:#?}", run.step_results[0]);
    let step = &run.step_results[0];
    assert_eq!(step.assertions.len(), 15);
    assert!(
        step.assertions.iter().all(|a| a.passed),
        "{:#?}",
        step.assertions
    );

    let failing = "headers: {content-type: text/plain}\nbody:\n  name: Bob\n  tags: {length: 3}\n  price: {lt: 10}\nmax_duration_ms: 100\nassert: body.id == 8";
    let (run, _server) = run_against(reply, failing).await;
    assert_eq!(run.status, RunStatus::Failed);
    let step = &run.step_results[0];
    let error = step.error.as_deref().unwrap();
    for part in [
        r#"header content-type equals: expected "text/plain", got "application/json""#,
        r#"body name equals: expected "Bob", got "Ada""#,
        "body tags length: expected 3, got 2",
        "body price lt: expected 10.0, got 12.5",
        "duration_ms at most: expected 100, got 300",
        "assert `body.id == 8` holds",
    ] {
        assert!(error.contains(part), "{part} not in {error}");
    }
    // The response is kept for the record.
    assert_eq!(step.output_data["name"], json!("Ada"));
}

#[tokio::test(start_paused = true)]
async fn assertions_read_earlier_steps_and_show_no_secret() {
    let server = MockServer::start(|request| {
        // An API that echoes the credential it was given.
        let token = request
            .header("authorization")
            .unwrap_or_default()
            .to_owned();
        Reply::json(200, json!({"seen": token, "n": 3}))
    })
    .await
    .unwrap();
    let tools = [
        tool(&format!("{USER}auth_type: bearer\n"), &server.url("")),
        tool(
            "id: count\nname: Count\nbase_url: x\npath: /count\n",
            &server.url(""),
        ),
    ];
    let mut config = ToolConfig::default();
    config.auth_token = Some(Secret::new("s3cret-token-value"));
    let mut secrets = MemorySecrets::new();
    secrets.insert("user", config);
    let engine = engine(tools).secrets(std::sync::Arc::new(secrets)).build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - id: first\n    tool_id: count\n  - id: get\n    tool_id: user\n    input_mapping: {id: u1}\n    expect:\n      body: {seen: nobody}\n      assert: body.n == steps.first.n + 1\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let step = &run.step_results[1];
    assert_eq!(step.status, StepStatus::Failed);
    let record = serde_json::to_string(&run).unwrap();
    assert!(!record.contains("s3cret-token-value"), "{record}");
    assert!(
        step.assertions[0]
            .actual
            .as_deref()
            .unwrap()
            .contains("***")
    );
    assert!(
        step.error
            .as_deref()
            .unwrap()
            .contains("assert `body.n == steps.first.n + 1` holds")
    );
    // The assertion read `steps.first`, so `first` ran before.
    assert_eq!(run.step_results[0].step_id, "first");
}

#[tokio::test]
async fn mistakes_in_expect_are_found_before_anything_runs() {
    let engine = engine([tool(USER, "http://127.0.0.1:9")]).build();
    for (expect, problem) in [
        ("body: {x: {matches: '('}}", "invalid regular expression"),
        ("body: {'$[': 1}", "`expect.body` path `$[`"),
        ("assert: 'body.id =='", "expect.assert[0]"),
    ] {
        let error = engine
            .run(&one_step(&indent(expect)), RunOptions::new())
            .await
            .unwrap_err();
        let Error::InvalidWorkflow { problems, .. } = error else {
            panic!("{error}")
        };
        assert!(
            problems.iter().any(|found| found.contains(problem)),
            "{problem}: {problems:?}"
        );
    }
    let transform = workflow(
        "id: w\nname: W\nsteps:\n  - id: t\n    kind: transform\n    outputs: {x: '1'}\n    expect: {status: 200}\n",
    );
    let error = engine.run(&transform, RunOptions::new()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("a transform or decision step makes none"),
        "{error}"
    );
}

const SCHEMA_TOOL: &str = "id: user\nname: User\nbase_url: x\npath: /users/{id}\nresponse_schemas:\n  '200': {type: object, required: [id], properties: {id: {type: integer}}}\n";

#[tokio::test(start_paused = true)]
async fn responses_are_checked_against_the_tools_schemas_when_asked() {
    let server = MockServer::start(|_| Reply::json(200, json!({"id": "7"})))
        .await
        .unwrap();
    let flow = |expect: &str| {
        workflow(&format!(
            "id: w\nname: W\nsteps:\n  - id: get\n    tool_id: user\n    input_mapping: {{id: u1}}\n{expect}"
        ))
    };
    let plain = flow("");
    // Off by default: the response passes.
    let plain_engine = engine([tool(SCHEMA_TOOL, &server.url(""))]).build();
    let run = plain_engine.run(&plain, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    // The engine's setting checks every response.
    let checking = engine([tool(SCHEMA_TOOL, &server.url(""))])
        .check_response_schemas(true)
        .build();
    let run = checking.run(&plain, RunOptions::new()).await.unwrap();
    let step = &run.step_results[0];
    assert_eq!(step.status, StepStatus::Failed);
    assert_eq!(step.assertions[0].subject, "body /id");
    assert!(
        step.error
            .as_deref()
            .unwrap()
            .contains("(at /properties/id/type)"),
        "{step:?}"
    );
    // A step turns it off, or asks for it alone.
    let run = checking
        .run(&flow("    expect: {schema: false}\n"), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let run = plain_engine
        .run(&flow("    expect: {schema: true}\n"), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    // Required, with no schema for the status: a failure that says so.
    let missing = MockServer::start(|_| Reply::json(202, json!({})))
        .await
        .unwrap();
    let elsewhere = engine([tool(SCHEMA_TOOL, &missing.url(""))]).build();
    let run = elsewhere
        .run(&flow("    expect: {schema: true}\n"), RunOptions::new())
        .await
        .unwrap();
    let error = run.step_results[0].error.clone().unwrap();
    assert!(error.contains("a response schema for 202"), "{error}");
}

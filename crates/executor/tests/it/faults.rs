//! Failure handling against a fault-injecting loopback server: every outcome and attempt count
//! is asserted. Time is tokio's paused clock: waits cost no real time, and elapsed virtual time
//! shows the engine waited as long as it should.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use wayline_core::{RunStatus, StepStatus};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{ExpressionBudget, RunOptions};

use crate::support::{Events, engine, tool, workflow};

const GET_TOOL: &str = "id: thing\nname: Thing\nbase_url: x\npath: /thing\n";
const ONE_STEP: &str = "id: w\nname: W\nsteps:\n  - {id: get, tool_id: thing}\n";

/// A server answering the n-th request (0-based) with `replies(n)`.
async fn server(replies: impl Fn(usize) -> Reply + Send + Sync + 'static) -> MockServer {
    let count = AtomicUsize::new(0);
    MockServer::start(move |_| replies(count.fetch_add(1, Ordering::SeqCst)))
        .await
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn status_503_then_200_is_retried_with_backoff() {
    let server = server(|n| match n {
        0 | 1 => Reply::status(503),
        _ => Reply::json(200, json!({"ok": true})),
    })
    .await;
    let events = Arc::new(Events::default());
    let engine = engine([tool(GET_TOOL, &server.url(""))])
        .observer(events.clone())
        .build();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let result = &run.step_results[0];
    assert_eq!(result.attempts, 3);
    assert_eq!(result.output_data, json!({"ok": true}));
    assert_eq!(server.hits(), 3);
    let delays = events.retry_delays_ms();
    assert_eq!(delays.len(), 2);
    assert!((100..=200).contains(&delays[0]), "{delays:?}");
    assert!((200..=400).contains(&delays[1]), "{delays:?}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_in_seconds_is_honoured() {
    let server = server(|n| match n {
        0 => Reply::status(429).header("Retry-After", "7"),
        _ => Reply::json(200, json!({"ok": true})),
    })
    .await;
    let events = Arc::new(Events::default());
    let engine = engine([tool(GET_TOOL, &server.url(""))])
        .observer(events.clone())
        .build();
    let started = Instant::now();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(run.step_results[0].attempts, 2);
    assert_eq!(events.retry_delays_ms(), [7_000]);
    assert!(started.elapsed() >= Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn retry_after_as_an_http_date_is_honoured() {
    // The date is real wall-clock time; HTTP dates have whole seconds, so the wait is 2–3 s.
    let at = chrono::Utc::now() + chrono::Duration::seconds(3);
    let date = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let server = server(move |n| match n {
        0 => Reply::status(503).header("Retry-After", date.clone()),
        _ => Reply::json(200, json!({"ok": true})),
    })
    .await;
    let events = Arc::new(Events::default());
    let engine = engine([tool(GET_TOOL, &server.url(""))])
        .observer(events.clone())
        .build();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let delays = events.retry_delays_ms();
    assert_eq!(delays.len(), 1);
    assert!((2_000..=3_000).contains(&delays[0]), "{delays:?}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_beyond_the_limit_fails_at_once() {
    let server = server(|_| Reply::status(429).header("Retry-After", "3600")).await;
    let engine = engine([tool(GET_TOOL, &server.url(""))]).build();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    let result = &run.step_results[0];
    assert_eq!(result.status, StepStatus::Failed);
    assert_eq!(server.hits(), 1);
    let error = result.error.as_deref().unwrap();
    assert!(
        error.contains("retry after 3600 s, more than the 60 s"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_fail_with_the_last_status() {
    let server = server(|_| Reply::text(502, "bad gateway")).await;
    let engine = engine([tool(GET_TOOL, &server.url(""))]).build();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let result = &run.step_results[0];
    assert_eq!(result.attempts, 3);
    assert_eq!(server.hits(), 3);
    assert_eq!(
        result.error.as_deref(),
        Some("HTTP 502: bad gateway (after 3 attempts)")
    );
    assert_eq!(result.response_status, Some(502));
}

#[tokio::test(start_paused = true)]
async fn connection_reset_is_retried() {
    let server = server(|n| match n {
        0 => Reply::Reset,
        _ => Reply::json(200, json!({"ok": true})),
    })
    .await;
    let engine = engine([tool(GET_TOOL, &server.url(""))]).build();
    let run = engine
        .run(&workflow(ONE_STEP), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    assert_eq!(run.step_results[0].attempts, 2);
    assert_eq!(server.hits(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_response_slower_than_the_step_timeout_times_out() {
    let server = server(|_| Reply::json(200, json!({})).delay(Duration::from_secs(10))).await;
    let engine = engine([tool(GET_TOOL, &server.url(""))]).build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: get, tool_id: thing, timeout_ms: 1000, retry: {max_attempts: 2, initial_backoff_ms: 10}}\n",
    );
    let started = Instant::now();
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let result = &run.step_results[0];
    assert_eq!(result.status, StepStatus::Failed);
    assert_eq!(result.attempts, 2);
    assert_eq!(server.hits(), 2);
    let error = result.error.as_deref().unwrap();
    assert!(
        error.starts_with("HTTP request failed: timed out"),
        "{error}"
    );
    assert!(error.ends_with("(after 2 attempts)"), "{error}");
    // Two 1 s attempts and a short backoff, not the server's 10 s.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn invalid_json_is_kept_as_text_or_fails_strict_extraction() {
    let server = server(|_| Reply::text(200, "{not json")).await;
    let plain = tool(GET_TOOL, &server.url(""));
    let strict = tool(
        "id: strict\nname: S\nbase_url: x\npath: /thing\nrequest: {}\nresponse_extract: {fields: {id: id}}\n",
        &server.url(""),
    );
    let engine = engine([plain, strict]).build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: plain, tool_id: thing}\n  - {id: strict, tool_id: strict}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let plain = &run.step_results[0];
    assert_eq!(plain.status, StepStatus::Success);
    assert_eq!(
        plain.output_data,
        json!({"status_code": 200, "body": "{not json"})
    );
    let strict = &run.step_results[1];
    assert_eq!(strict.status, StepStatus::Failed);
    assert_eq!(strict.attempts, 1);
    let error = strict.error.as_deref().unwrap();
    assert!(
        error.contains("the response is not JSON (content type text/plain)"),
        "{error}"
    );
}

const POST_TOOL: &str = "id: create\nname: Create\nbase_url: x\npath: /things\nmethod: POST\n";

#[tokio::test(start_paused = true)]
async fn a_post_of_a_non_idempotent_tool_is_not_retried() {
    for status in [500, 503] {
        let server = server(move |_| Reply::status(status)).await;
        let engine = engine([tool(POST_TOOL, &server.url(""))]).build();
        let flow = workflow("id: w\nname: W\nsteps:\n  - {id: post, tool_id: create}\n");
        let run = engine.run(&flow, RunOptions::new()).await.unwrap();
        assert_eq!(run.step_results[0].status, StepStatus::Failed);
        assert_eq!(run.step_results[0].attempts, 1, "status {status}");
        assert_eq!(server.hits(), 1, "status {status}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_post_with_an_idempotency_key_is_retried_with_the_same_key() {
    let server = server(|n| match n {
        0 | 1 => Reply::status(503),
        _ => Reply::json(201, json!({"id": 1})),
    })
    .await;
    let yaml = format!("{POST_TOOL}idempotency_key: Idempotency-Key\n");
    let engine = engine([tool(&yaml, &server.url(""))]).build();
    let flow = workflow("id: w\nname: W\nsteps:\n  - {id: post, tool_id: create}\n");
    let run = engine
        .run(&flow, RunOptions::new().run_id("run-1"))
        .await
        .unwrap();
    assert_eq!(run.step_results[0].status, StepStatus::Success);
    let keys: Vec<_> = server
        .requests()
        .iter()
        .map(|request| request.header("idempotency-key").unwrap().to_owned())
        .collect();
    assert_eq!(keys, ["wayline-run-1-post"; 3]);
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_post_is_retried() {
    let server = server(|n| match n {
        0 => Reply::Close,
        _ => Reply::json(200, json!({})),
    })
    .await;
    let yaml = format!("{POST_TOOL}idempotent: true\n");
    let engine = engine([tool(&yaml, &server.url(""))]).build();
    let flow = workflow("id: w\nname: W\nsteps:\n  - {id: post, tool_id: create}\n");
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.step_results[0].status, StepStatus::Success);
    assert_eq!(server.hits(), 2);
}

#[tokio::test(start_paused = true)]
async fn connect_errors_are_retried_even_for_post() {
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let engine = engine([tool(POST_TOOL, &format!("http://127.0.0.1:{port}"))]).build();
    let flow = workflow("id: w\nname: W\nsteps:\n  - {id: post, tool_id: create}\n");
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let result = &run.step_results[0];
    assert_eq!(result.status, StepStatus::Failed);
    assert_eq!(result.attempts, 3);
    assert!(
        result
            .error
            .as_deref()
            .unwrap()
            .starts_with("HTTP request failed: connect error"),
        "{:?}",
        result.error
    );
}

#[tokio::test(start_paused = true)]
async fn a_condition_past_the_evaluation_budget_fails_its_step_and_the_run_ends() {
    // Two nested loops over 200 items need 40,200 iterations, past a budget of 10,000.
    let items: Vec<usize> = (0..200).collect();
    let server = server(move |_| Reply::json(200, json!({"items": items}))).await;
    let budget = ExpressionBudget {
        iterations: 10_000,
        ..ExpressionBudget::default()
    };
    let engine = engine([tool(GET_TOOL, &server.url(""))])
        .expression_budget(budget)
        .build();
    let condition = "steps.get.items.map(x, steps.get.items.map(y, x + y)).size() > 0";
    let run = engine
        .run(
            &workflow(&format!(
                "id: w\nname: W\nsteps:\n  - {{id: get, tool_id: thing}}\n  - {{id: again, tool_id: thing, when: '{condition}'}}\n"
            )),
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let again = &run.step_results[1];
    assert_eq!(again.status, StepStatus::Failed);
    assert_eq!(
        again.error.as_deref(),
        Some(format!(
            "`when`: `{condition}` failed: needs more than 10000 loop iterations (the budget of \
             one evaluation); filter or index the data before looping over it, or loop over less \
             of it"
        ))
        .as_deref()
    );
    assert_eq!(
        server.hits(),
        1,
        "the step whose condition failed sent nothing"
    );
}

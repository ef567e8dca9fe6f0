//! `poll`: repeat a call until a CEL condition over the response holds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use wayline_core::{RunStatus, StepStatus};
use wayline_executor::RunOptions;
use wayline_executor::testing::{MockServer, Reply};

use crate::support::{engine, tool, workflow};

const CLUSTER: &str = "id: cluster\nname: Cluster\nbase_url: x\npath: /clusters/{id}\n";

/// A cluster that turns `ACTIVE` on the `ready_at`-th GET (1-based).
async fn cluster(ready_at: usize) -> MockServer {
    let count = AtomicUsize::new(0);
    MockServer::start(move |_| {
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        let state = if n >= ready_at { "ACTIVE" } else { "CREATING" };
        Reply::json(200, json!({"clusterId": "c-1", "state": state}))
    })
    .await
    .unwrap()
}

fn flow(max_attempts: u32) -> wayline_core::Workflow {
    workflow(&format!(
        "id: w\nname: W\nsteps:\n  - id: wait\n    tool_id: cluster\n    input_mapping: {{id: c-1}}\n    poll: {{until: \"body.state == 'ACTIVE'\", max_attempts: {max_attempts}, interval_ms: 500}}\n    outputs: {{cluster_id: body.clusterId, state: '$.state'}}\n"
    ))
}

#[tokio::test(start_paused = true)]
async fn polls_until_the_condition_holds() {
    let server = cluster(4).await;
    let engine = engine([tool(CLUSTER, &server.url(""))]).build();
    let started = Instant::now();
    let run = engine.run(&flow(10), RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let result = &run.step_results[0];
    assert_eq!(result.attempts, 4);
    assert_eq!(server.hits(), 4);
    assert_eq!(
        result.output_data,
        json!({"cluster_id": "c-1", "state": "ACTIVE"})
    );
    // Three pauses of 500 ms between four polls.
    assert!(started.elapsed() >= Duration::from_millis(1_500));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.path() == "/clusters/c-1")
    );
}

#[tokio::test(start_paused = true)]
async fn gives_up_after_max_attempts_with_a_clear_error() {
    let server = cluster(usize::MAX).await;
    let engine = engine([tool(CLUSTER, &server.url(""))]).build();
    let run = engine.run(&flow(5), RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let result = &run.step_results[0];
    assert_eq!(result.status, StepStatus::Failed);
    assert_eq!(result.attempts, 5);
    assert_eq!(server.hits(), 5);
    assert_eq!(
        result.error.as_deref(),
        Some("poll: `body.state == 'ACTIVE'` still false after 5 polls (last status 200)")
    );
}

#[tokio::test(start_paused = true)]
async fn transient_errors_while_polling_are_retried_not_counted_as_polls() {
    let count = AtomicUsize::new(0);
    let server = MockServer::start(move |_| match count.fetch_add(1, Ordering::SeqCst) {
        1 => Reply::status(503),
        0 => Reply::json(200, json!({"state": "CREATING"})),
        _ => Reply::json(200, json!({"state": "ACTIVE", "clusterId": "c-1"})),
    })
    .await
    .unwrap();
    let engine = engine([tool(CLUSTER, &server.url(""))]).build();
    let run = engine.run(&flow(2), RunOptions::new()).await.unwrap();
    assert_eq!(
        run.status,
        RunStatus::Success,
        "{:?}",
        run.step_results[0].error
    );
    assert_eq!(run.step_results[0].attempts, 3);
}

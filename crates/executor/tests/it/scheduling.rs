//! Scheduling: readiness not levels, `max_parallel`, the per-host limit, determinism,
//! cancellation and the run deadline. Latency is simulated with the paused clock.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use wayline_core::{RunStatus, StepStatus, Workflow};
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{CancelToken, RunOptions};

use crate::support::{Events, engine, tool, workflow};

/// A server answering `/ms/N` after N milliseconds with `{"ms": N}`.
async fn latency_server() -> MockServer {
    MockServer::start(|request| {
        let ms: u64 = request
            .path()
            .trim_start_matches("/ms/")
            .parse()
            .unwrap_or(0);
        Reply::json(200, json!({"ms": ms})).delay(Duration::from_millis(ms))
    })
    .await
    .unwrap()
}

const SLEEP: &str = "id: sleep\nname: Sleep\nbase_url: x\npath: /ms/{ms}\n";

fn fan_out(count: usize, ms: u64) -> Workflow {
    let steps: String = (0..count)
        .map(|i| format!("  - {{id: s{i}, tool_id: sleep, input_mapping: {{ms: {ms}}}}}\n"))
        .collect();
    workflow(&format!("id: w\nname: W\nsteps:\n{steps}"))
}

#[tokio::test(start_paused = true)]
async fn a_step_starts_when_its_own_dependencies_finish_not_its_level() {
    let server = latency_server().await;
    let events = Arc::new(Events::default());
    let engine = engine([tool(SLEEP, &server.url(""))])
        .observer(events.clone())
        .build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: slow, tool_id: sleep, input_mapping: {ms: 1000}}\n\
         - {id: fast, tool_id: sleep, input_mapping: {ms: 10}}\n\
         - {id: after_fast, tool_id: sleep, input_mapping: {ms: fast.ms}}\n",
    );
    let started = Instant::now();
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let lines = events.lines();
    let position = |line: &str| lines.iter().position(|l| l == line).unwrap();
    assert!(
        position("start after_fast") < position("finish slow Success"),
        "{lines:#?}"
    );
    assert!(started.elapsed() < Duration::from_millis(1_100));
}

#[tokio::test(start_paused = true)]
async fn max_parallel_bounds_the_steps_in_flight() {
    let server = latency_server().await;
    let events = Arc::new(Events::default());
    let engine = engine([tool(SLEEP, &server.url(""))])
        .observer(events.clone())
        .max_parallel(3)
        .build();
    let started = Instant::now();
    let run = engine
        .run(&fan_out(10, 100), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    let mut in_flight = 0i32;
    let mut most = 0;
    for line in events.lines() {
        if line.starts_with("start ") {
            in_flight += 1;
        } else if line.starts_with("finish ") {
            in_flight -= 1;
        }
        most = most.max(in_flight);
    }
    assert_eq!(most, 3);
    // Four waves of 100 ms.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(400) && elapsed < Duration::from_millis(500),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_per_host_limit_holds_per_host() {
    let first = latency_server().await;
    let second = latency_server().await;
    let mut other = tool(SLEEP, &second.url(""));
    other.id = "sleep2".into();
    // Both servers are 127.0.0.1: give the second a distinct host name that still resolves.
    other.base_url = second.url("").replace("127.0.0.1", "localhost");
    let engine = engine([tool(SLEEP, &first.url("")), other])
        .per_host_limit(2)
        .max_parallel(16)
        .build();
    let steps: String = (0..8)
        .map(|i| {
            let tool = if i % 2 == 0 { "sleep" } else { "sleep2" };
            format!("  - {{id: s{i}, tool_id: {tool}, input_mapping: {{ms: 100}}}}\n")
        })
        .collect();
    let flow = workflow(&format!("id: w\nname: W\nsteps:\n{steps}"));
    let started = Instant::now();
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    // Four steps per host, two at a time: two waves of 100 ms.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(300),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn results_do_not_depend_on_timing() {
    let server = latency_server().await;
    let engine = engine([tool(SLEEP, &server.url(""))]).build();
    // The same graph with latencies reversed between the two runs.
    let flow = |a: u64, b: u64| {
        workflow(&format!(
            "id: w\nname: W\nsteps:\n\
             - {{id: a, tool_id: sleep, input_mapping: {{ms: {a}}}}}\n\
             - {{id: b, tool_id: sleep, input_mapping: {{ms: {b}}}}}\n\
             - id: sum\n  kind: transform\n  outputs: {{total: 'steps.a.ms + steps.b.ms'}}\n"
        ))
    };
    let first = engine.run(&flow(10, 300), RunOptions::new()).await.unwrap();
    let second = engine.run(&flow(300, 10), RunOptions::new()).await.unwrap();
    let shape = |run: &wayline_core::Run| {
        run.step_results
            .iter()
            .map(|r| (r.step_id.clone(), r.status, r.output_data["total"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&first), shape(&second));
    assert_eq!(first.step_results[2].output_data, json!({"total": 310}));
}

fn chain_after_a_hang() -> Workflow {
    workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: quick, tool_id: sleep, input_mapping: {ms: 10}}\n\
         - {id: hang, tool_id: sleep, input_mapping: {ms: 3600000}, timeout_ms: 7200000}\n\
         - {id: after, tool_id: sleep, input_mapping: {ms: hang.ms}}\n",
    )
}

fn assert_stopped(run: &wayline_core::Run, status: RunStatus, reason: &str) {
    assert_eq!(run.status, status);
    let by_id = |id: &str| run.step_results.iter().find(|r| r.step_id == id).unwrap();
    assert_eq!(by_id("quick").status, StepStatus::Success);
    let hang = by_id("hang");
    assert_eq!(hang.status, StepStatus::Cancelled, "stopped, not failed");
    assert_eq!(
        hang.error.as_deref(),
        Some(format!("stopped while running: {reason}").as_str())
    );
    let after = by_id("after");
    assert_eq!(after.status, StepStatus::Skipped);
    assert_eq!(
        after.error.as_deref(),
        Some(format!("not started: {reason}").as_str())
    );
    assert!(run.finished_at.is_some());
    assert!(run.step_results.iter().all(|r| r.finished_at.is_some()));
}

#[tokio::test(start_paused = true)]
async fn cancellation_leaves_a_consistent_record() {
    let server = latency_server().await;
    let engine = engine([tool(SLEEP, &server.url(""))]).build();
    let token = CancelToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let run = engine
        .run(&chain_after_a_hang(), RunOptions::new().cancel(token))
        .await
        .unwrap();
    assert_stopped(&run, RunStatus::Cancelled, "the run was cancelled");
    assert!(started.elapsed() < Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn the_run_deadline_stops_in_flight_work() {
    let server = latency_server().await;
    let engine = engine([tool(SLEEP, &server.url(""))]).build();
    let run = engine
        .run(
            &chain_after_a_hang(),
            RunOptions::new().deadline(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    assert_stopped(
        &run,
        RunStatus::TimedOut,
        "the run deadline of 2000 ms passed",
    );
}

/// Cancels its token when step `step` starts: the moment the step's own work begins.
#[derive(Debug)]
struct CancelAtStart {
    step: &'static str,
    token: CancelToken,
}

impl wayline_core::RunObserver for CancelAtStart {
    fn on_event(&self, event: &wayline_core::RunEvent<'_>) {
        if let wayline_core::RunEvent::StepStarted { step_id, .. } = event
            && *step_id == self.step
        {
            self.token.cancel();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_an_expression_ends_it_part_way() {
    // 40,000 iterations, well within the default budget: only the stop can end it early.
    let condition = "inputs.items.map(x, inputs.items.map(y, x + y)).size() > 0";
    let flow = workflow(&format!(
        "id: w\nname: W\nsteps:\n  - {{id: s, tool_id: sleep, input_mapping: {{ms: 1}}, when: '{condition}'}}\n"
    ));
    let items: Vec<u32> = (0..200).collect();
    let server = latency_server().await;
    let token = CancelToken::new();
    let engine = engine([tool(SLEEP, &server.url(""))])
        .observer(Arc::new(CancelAtStart {
            step: "s",
            token: token.clone(),
        }))
        .build();
    let run = engine
        .run(
            &flow,
            RunOptions::new().cancel(token).input("items", json!(items)),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Cancelled);
    let step = &run.step_results[0];
    assert_eq!(step.status, StepStatus::Failed);
    assert_eq!(
        step.error.as_deref(),
        Some(format!("`when`: `{condition}` failed: stopped: the run was cancelled").as_str())
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_run_stopped_before_it_starts_starts_no_step() {
    let server = latency_server().await;
    let engine = engine([tool(SLEEP, &server.url(""))]).build();
    let token = CancelToken::new();
    token.cancel();
    for (options, status, reason) in [
        (
            RunOptions::new().deadline(Duration::ZERO),
            RunStatus::TimedOut,
            "the run deadline of 0 ms passed",
        ),
        (
            RunOptions::new().cancel(token),
            RunStatus::Cancelled,
            "the run was cancelled",
        ),
    ] {
        let run = engine.run(&fan_out(3, 1), options).await.unwrap();
        assert_eq!(run.status, status, "{reason}");
        for step in &run.step_results {
            assert_eq!(step.status, StepStatus::Skipped, "{reason}");
            assert!(step.started_at.is_none(), "{reason}");
            assert!(
                step.error.as_deref().unwrap_or_default().contains(reason),
                "{step:?}"
            );
        }
    }
    assert_eq!(server.hits(), 0);
}

//! Runs started with `Engine::start`: spawned on a multi-threaded runtime, followed through
//! their handles (events from the first, of their own run only), cancelled, finished.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Semaphore;
use wayline_core::{
    HttpRequest, HttpResponse, MemoryCatalog, OwnedRunEvent, RunStatus, StepStatus, ToolDefinition,
    Transport, TransportError, Workflow,
};
use wayline_executor::{Engine, Error, RunOptions};

use crate::support::{Events, workflow};

/// Answers `{"ok": true}` once the test lets a call through (one permit per call).
#[derive(Debug)]
struct Gate {
    permits: Arc<Semaphore>,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl Transport for Gate {
    async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the gate is never closed");
        permit.forget();
        Ok(HttpResponse::new(200, r#"{"ok": true}"#))
    }
}

fn two_steps() -> Workflow {
    workflow(
        "id: w\nname: Two\nsteps:\n\
         - {id: first, tool_id: ok}\n\
         - {id: second, tool_id: ok, input_mapping: {after: first.ok}}\n",
    )
}

fn gated_engine(permits: &Arc<Semaphore>, events: &Arc<Events>) -> (Engine, Arc<Gate>) {
    let gate = Arc::new(Gate {
        permits: Arc::clone(permits),
        calls: AtomicUsize::new(0),
    });
    let catalog = MemoryCatalog::from_tools([ToolDefinition::new("ok", "http://api.test/ok")]);
    let engine = Engine::builder(Arc::new(catalog))
        .transport(gate.clone())
        .observer(events.clone())
        .build();
    (engine, gate)
}

fn kind(event: &OwnedRunEvent) -> &'static str {
    match event {
        OwnedRunEvent::RunStarted { .. } => "run_started",
        OwnedRunEvent::StepStarted { .. } => "step_started",
        OwnedRunEvent::Attempt { .. } => "attempt",
        OwnedRunEvent::StepFinished { .. } => "step_finished",
        OwnedRunEvent::RunFinished { .. } => "run_finished",
        _ => "other",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_runs_are_followed_cancelled_and_finished_through_their_handles() {
    let permits = Arc::new(Semaphore::new(0));
    let events = Arc::new(Events::default());
    let (engine, gate) = gated_engine(&permits, &events);
    let workflow = Arc::new(engine.prepare(&two_steps()).unwrap());
    let handles: Vec<_> = (0..20)
        .map(|n| {
            engine
                .start_prepared(
                    Arc::clone(&workflow),
                    RunOptions::new().run_id(format!("r{n}")),
                )
                .unwrap()
        })
        .collect();
    // Every run's first call is in flight and waits at the gate.
    while gate.calls.load(Ordering::SeqCst) < 20 {
        tokio::task::yield_now().await;
    }
    for handle in handles.iter().step_by(4) {
        handle.cancel();
    }
    permits.add_permits(1_000);
    let followers: Vec<_> = handles
        .iter()
        .map(|handle| {
            let mut events = handle.events();
            let id = handle.id().to_owned();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while let Some(event) = events.next().await {
                    assert_eq!(event.run_id(), Some(id.as_str()), "{event:?}");
                    seen.push(kind(&event));
                }
                seen
            })
        })
        .collect();
    for (n, (handle, follower)) in handles.into_iter().zip(followers).enumerate() {
        let run = handle.finish().await.unwrap();
        let seen = follower.await.unwrap();
        assert_eq!(seen.first(), Some(&"run_started"), "run {n}: {seen:?}");
        assert_eq!(seen.last(), Some(&"run_finished"), "run {n}: {seen:?}");
        assert!(run.finished_at.is_some());
        assert!(
            run.step_results
                .iter()
                .all(|result| result.status != StepStatus::Running)
        );
        if n % 4 == 0 {
            assert_eq!(run.status, RunStatus::Cancelled, "run {n}");
        } else {
            assert_eq!(run.status, RunStatus::Success, "run {n}");
            assert_eq!(
                seen.iter().filter(|kind| **kind == "step_finished").count(),
                2
            );
        }
    }
    // The engine's own observer saw every run.
    assert_eq!(
        events
            .lines()
            .iter()
            .filter(|line| line.starts_with("run finished"))
            .count(),
        20
    );
}

#[tokio::test]
async fn a_follower_who_comes_after_the_end_reads_every_event_and_they_serialise() {
    let permits = Arc::new(Semaphore::new(10));
    let (engine, _gate) = gated_engine(&permits, &Arc::new(Events::default()));
    let handle = engine.start(&two_steps(), RunOptions::new()).unwrap();
    let mut late = handle.events();
    let run = handle.finish().await.unwrap();
    let mut kinds = Vec::new();
    while let Some(event) = late.next().await {
        let json = serde_json::to_value(&*event).unwrap();
        let back: OwnedRunEvent = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, *event);
        kinds.push(json["event"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        kinds,
        [
            "run_started",
            "step_started",
            "attempt",
            "step_finished",
            "step_started",
            "attempt",
            "step_finished",
            "run_finished"
        ]
    );
    assert_eq!(run.status, RunStatus::Success);
}

#[tokio::test]
async fn a_per_run_observer_hears_its_run_alone() {
    let permits = Arc::new(Semaphore::new(10));
    let (engine, _gate) = gated_engine(&permits, &Arc::new(Events::default()));
    let mine = Arc::new(Events::default());
    let observed = engine
        .start(&two_steps(), RunOptions::new().observer(mine.clone()))
        .unwrap();
    let other = engine.start(&two_steps(), RunOptions::new()).unwrap();
    observed.finish().await.unwrap();
    other.finish().await.unwrap();
    let lines = mine.lines();
    assert_eq!(
        lines
            .iter()
            .filter(|line| line.starts_with("run started"))
            .count(),
        1
    );
    assert_eq!(
        lines
            .iter()
            .filter(|line| line.starts_with("run finished"))
            .count(),
        1
    );
}

#[test]
fn starting_outside_a_runtime_or_with_bad_inputs_starts_nothing() {
    let permits = Arc::new(Semaphore::new(10));
    let (engine, gate) = gated_engine(&permits, &Arc::new(Events::default()));
    let error = engine.start(&two_steps(), RunOptions::new()).unwrap_err();
    assert!(matches!(error, Error::NoRuntime), "{error}");
    assert!(error.to_string().contains("Tokio runtime"), "{error}");
    // Polled by another executor, a run says so at once rather than panicking at a timer.
    let both = two_steps();
    let mut run = std::pin::pin!(engine.run(&both, RunOptions::new()));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match run.as_mut().poll(&mut context) {
        std::task::Poll::Ready(Err(Error::NoRuntime)) => {}
        other => panic!("{other:?}"),
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let needs_input = workflow(
        "id: w\nname: W\ninputs: {city: {description: Where}}\nsteps:\n- {id: s, tool_id: ok}\n",
    );
    let error = runtime
        .block_on(async { engine.start(&needs_input, RunOptions::new()) })
        .unwrap_err();
    assert!(matches!(error, Error::InvalidInputs { .. }), "{error}");
    assert_eq!(gate.calls.load(Ordering::SeqCst), 0);
}

//! Durable runs: the run store sees each step as running before its call and finished before
//! its dependents start; interrupted runs resume.

use std::sync::{Arc, Mutex};

use serde_json::json;
use wayline_core::{
    HttpRequest, HttpResponse, MemoryCatalog, Run, RunStatus, RunStore, StepResult, StepStatus,
    ToolDefinition, Transport, TransportError, Workflow,
};
use wayline_executor::{
    Engine, EngineBuilder, Error, ResumeOptions, RunOptions, StoreFailure, UnknownSteps,
};
use wayline_store::MemoryStore;

use crate::support::{Flaky, workflow};

/// Answers `{"n": <path length>}` and writes down, at each call, what the store says of the
/// run's steps.
#[derive(Debug)]
struct Spy {
    store: Arc<MemoryStore>,
    seen: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl Transport for Spy {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let path = url::Url::parse(&request.url).unwrap().path().to_owned();
        let run = self.store.run("r1").await.unwrap().unwrap();
        let states: Vec<String> = run
            .step_results
            .iter()
            .map(|result| {
                format!(
                    "{}={}",
                    result.step_id,
                    json!(result.status).as_str().unwrap()
                )
            })
            .collect();
        self.seen
            .lock()
            .unwrap()
            .push(format!("{} {path} [{}]", request.method, states.join(" ")));
        Ok(HttpResponse::new(200, json!({"n": path.len()}).to_string()))
    }
}

fn chain() -> Workflow {
    workflow(
        r"
id: chain
name: Chain
steps:
  - {id: a, tool_id: get_a}
  - {id: b, tool_id: post_b, input_mapping: {x: a.n}}
  - {id: c, tool_id: get_c, input_mapping: {y: b.n}}
",
    )
}

fn tools() -> Vec<ToolDefinition> {
    let mut post = ToolDefinition::new("post_b", "http://api.test/b");
    post.method = "POST".into();
    vec![
        ToolDefinition::new("get_a", "http://api.test/a"),
        post,
        ToolDefinition::new("get_c", "http://api.test/c"),
    ]
}

/// An engine of [`tools`] calling a [`Spy`] of `store`, recording runs in `runs`.
fn spied(store: &Arc<MemoryStore>, runs: Arc<dyn RunStore>) -> (EngineBuilder, Arc<Spy>) {
    let spy = Arc::new(Spy {
        store: Arc::clone(store),
        seen: Mutex::new(Vec::new()),
    });
    let builder = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools())))
        .transport(spy.clone())
        .run_store(runs);
    (builder, spy)
}

fn engine(store: &Arc<MemoryStore>) -> (Engine, Arc<Spy>) {
    let (builder, spy) = spied(store, store.clone());
    (builder.build(), spy)
}

#[tokio::test]
async fn steps_are_stored_as_running_and_finished_and_the_run_at_the_end() {
    let store = Arc::new(MemoryStore::new());
    let (engine, spy) = engine(&store);
    let run = engine
        .run(&chain(), RunOptions::new().run_id("r1").workflow_version(4))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(run.workflow_version, Some(4));
    assert_eq!(
        *spy.seen.lock().unwrap(),
        [
            // A GET is safe to repeat: its mark is written while it runs, not before.
            "GET /a [a=pending b=pending c=pending]",
            // A POST is not: it is marked running before it is sent.
            "POST /b [a=success b=running c=pending]",
            "GET /c [a=success b=success c=pending]",
        ]
    );
    assert_eq!(store.run("r1").await.unwrap(), Some(run));
}

/// The stored state of a run killed while `b` was in flight.
fn interrupted(store_run: &mut Run) {
    store_run.step_results[0].status = StepStatus::Success;
    store_run.step_results[0].output_data = json!({"n": 2});
    store_run.step_results[1].status = StepStatus::Running;
    store_run.step_results[1].started_at = Some(chrono::Utc::now());
}

async fn store_interrupted(store: &MemoryStore, post_tool_idempotent: bool) -> Engine {
    let mut run = Run::new("r1", "chain");
    run.user_inputs.insert("unused".into(), json!(1));
    for id in ["a", "b", "c"] {
        run.step_results.push(StepResult::pending(id));
    }
    interrupted(&mut run);
    store.create_run(&run).await.unwrap();
    let mut tools = tools();
    tools[1].idempotent = Some(post_tool_idempotent);
    Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(Arc::new(Spy {
            store: Arc::new(MemoryStore::new()),
            seen: Mutex::new(Vec::new()),
        }))
        .build()
}

#[tokio::test]
async fn a_resumed_run_keeps_finished_steps_and_repeats_only_safe_in_flight_ones() {
    let store = Arc::new(MemoryStore::new());
    // `b` is an idempotent POST: safe to repeat.
    store_interrupted(&store, true).await;
    let mut tools = tools();
    tools[1].idempotent = Some(true);
    let spy = Arc::new(Spy {
        store: Arc::clone(&store),
        seen: Mutex::new(Vec::new()),
    });
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(spy.clone())
        .run_store(store.clone())
        .build();
    let prepared = engine.prepare(&chain()).unwrap();
    let run = engine
        .resume(&prepared, "r1", ResumeOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        *spy.seen.lock().unwrap(),
        [
            // An idempotent POST is safe to repeat: resumed as pending, marked while it runs.
            "POST /b [a=success b=pending c=pending]",
            "GET /c [a=success b=success c=pending]",
        ],
        "`a` is not called again"
    );
    assert_eq!(
        run.user_inputs["unused"],
        json!(1),
        "the run keeps its inputs"
    );
    assert_eq!(store.run("r1").await.unwrap(), Some(run.clone()));

    // A finished run is not resumed.
    let again = engine
        .resume(&prepared, "r1", ResumeOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(again, Error::Resume { .. }), "{again}");
    assert!(
        again.to_string().contains("already ended (success)"),
        "{again}"
    );
}

#[tokio::test]
async fn an_unsafe_step_in_flight_waits_for_a_decision() {
    let store = Arc::new(MemoryStore::new());
    store_interrupted(&store, false).await;
    let (engine, spy) = engine(&store);
    let prepared = engine.prepare(&chain()).unwrap();

    let error = engine
        .resume(&prepared, "r1", ResumeOptions::new())
        .await
        .unwrap_err();
    let Error::UnknownOutcome { steps, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(steps, &["b"]);
    assert!(spy.seen.lock().unwrap().is_empty(), "nothing was called");
    let stored = store.run("r1").await.unwrap().unwrap();
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(stored.step_results[1].status, StepStatus::UnknownOutcome);

    // Skip it: its dependent is skipped, the run fails (it did not complete: `b` may not
    // have taken effect, and it keeps its unknown outcome).
    let skipped = engine
        .resume(
            &prepared,
            "r1",
            ResumeOptions::new().unknown(UnknownSteps::Skip),
        )
        .await
        .unwrap();
    assert!(spy.seen.lock().unwrap().is_empty());
    assert_eq!(skipped.status, RunStatus::Failed);
    assert_eq!(wayline_core::RunSummary::of(&skipped).failed_steps, 1);
    let statuses: Vec<_> = skipped.step_results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            StepStatus::Success,
            StepStatus::UnknownOutcome,
            StepStatus::Skipped
        ]
    );
    assert!(
        skipped.step_results[1]
            .error
            .as_deref()
            .unwrap()
            .contains("unknown")
    );
    assert_eq!(
        skipped.step_results[2].error.as_deref(),
        Some("dependency `b` has an unknown outcome")
    );

    // Killed again after the skip was saved, before the run ended: a second resume keeps the
    // decision instead of sending the POST it skipped.
    let mut killed_again = skipped.clone();
    killed_again.status = RunStatus::Running;
    killed_again.finished_at = None;
    killed_again.step_results[2] = StepResult::pending("c");
    store.finish_run(&killed_again).await.unwrap();
    let again = engine
        .resume(&prepared, "r1", ResumeOptions::new())
        .await
        .unwrap();
    assert!(spy.seen.lock().unwrap().is_empty(), "the POST is not sent");
    assert_eq!(again.step_results[1].status, StepStatus::UnknownOutcome);
    assert_eq!(again.step_results[2].status, StepStatus::Skipped);
}

#[tokio::test]
async fn a_get_declared_unsafe_is_not_repeated_on_resume() {
    for (idempotent, destructive) in [(Some(false), None), (None, Some(true))] {
        let store = Arc::new(MemoryStore::new());
        let mut run = Run::new("r1", "chain");
        for id in ["a", "b", "c"] {
            run.step_results.push(StepResult::pending(id));
        }
        run.step_results[0].status = StepStatus::Running;
        run.step_results[0].started_at = Some(chrono::Utc::now());
        store.create_run(&run).await.unwrap();
        let mut tools = tools();
        tools[0].idempotent = idempotent;
        tools[0].destructive = destructive;
        let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
            .transport(Arc::new(Spy {
                store: Arc::clone(&store),
                seen: Mutex::new(Vec::new()),
            }))
            .run_store(store.clone())
            .build();
        let prepared = engine.prepare(&chain()).unwrap();
        let error = engine
            .resume(&prepared, "r1", ResumeOptions::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, Error::UnknownOutcome { steps, .. } if steps == &["a"]),
            "idempotent {idempotent:?}, destructive {destructive:?}: {error}"
        );
    }
}

#[tokio::test]
async fn retry_unknown_repeats_the_unsafe_step() {
    let store = Arc::new(MemoryStore::new());
    store_interrupted(&store, false).await;
    let (engine, spy) = engine(&store);
    let prepared = engine.prepare(&chain()).unwrap();
    let run = engine
        .resume(
            &prepared,
            "r1",
            ResumeOptions::new().unknown(UnknownSteps::Retry),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(spy.seen.lock().unwrap().len(), 2, "b and c");
}

#[tokio::test]
async fn resume_needs_a_store_and_a_stored_run_of_this_workflow() {
    let store = Arc::new(MemoryStore::new());
    let without_store = store_interrupted(&store, true).await;
    let prepared = without_store.prepare(&chain()).unwrap();
    let error = without_store
        .resume(&prepared, "r1", ResumeOptions::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no run store"), "{error}");

    let (engine, _) = engine(&store);
    let missing = engine
        .resume(&prepared, "nope", ResumeOptions::new())
        .await
        .unwrap_err();
    assert!(
        missing.to_string().contains("not in the run store"),
        "{missing}"
    );
    let mut other = chain();
    other.id = "other".into();
    let other = engine.prepare(&other).unwrap();
    let wrong = engine
        .resume(&other, "r1", ResumeOptions::new())
        .await
        .unwrap_err();
    assert!(
        wrong.to_string().contains("ran workflow `chain`"),
        "{wrong}"
    );
}

#[tokio::test]
async fn a_failing_store_fails_the_step_instead_of_losing_it() {
    /// Creates runs, refuses step results.
    #[derive(Debug)]
    struct Broken(Arc<MemoryStore>);
    #[async_trait::async_trait]
    impl RunStore for Broken {
        async fn create_run(&self, run: &Run) -> Result<(), wayline_core::StoreError> {
            self.0.create_run(run).await
        }
        async fn save_step(&self, _: &str, _: &StepResult) -> Result<(), wayline_core::StoreError> {
            Err(wayline_core::StoreError::new(
                wayline_core::StoreErrorKind::Unavailable,
                "disk full",
            ))
        }
        async fn finish_run(&self, run: &Run) -> Result<(), wayline_core::StoreError> {
            self.0.finish_run(run).await
        }
        async fn run(&self, id: &str) -> Result<Option<Run>, wayline_core::StoreError> {
            self.0.run(id).await
        }
        async fn list_runs(
            &self,
            query: &wayline_core::RunQuery,
        ) -> Result<wayline_core::RunPage, wayline_core::StoreError> {
            self.0.list_runs(query).await
        }
    }
    // The POST is not safe to repeat: without its `running` mark it is not called at all. The
    // GET is called, and fails because its result cannot be saved.
    for (first, called, reason) in [
        (
            "post_b",
            0,
            "not started: the run store could not record it: disk full",
        ),
        (
            "get_a",
            1,
            "it ran, but the run store could not save its result: disk full",
        ),
    ] {
        let store = Arc::new(MemoryStore::new());
        let (builder, spy) = spied(&store, Arc::new(Broken(Arc::clone(&store))));
        let engine = builder.build();
        let mut single = Workflow::new("one", "One");
        single.steps.push(wayline_core::Step::new("only", first));
        let run = engine
            .run(&single, RunOptions::new().run_id("r1"))
            .await
            .unwrap();
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(spy.seen.lock().unwrap().len(), called, "{first}");
        assert_eq!(run.step_results[0].error.as_deref(), Some(reason));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_runs_in_parallel_lose_no_step_result_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(wayline_store::SqliteStore::open(dir.path().join("runs.db")).unwrap());
    let transport = wayline_executor::testing::ScriptedTransport::new()
        .with_fallback(|_| Ok(HttpResponse::new(200, r#"{"n": 1}"#)));
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([ToolDefinition::new(
        "echo",
        "http://api.test/echo",
    )])))
    .transport(Arc::new(transport))
    .run_store(store.clone())
    .build();
    let mut fan = Workflow::new("fan", "Fan");
    for index in 0..10 {
        fan.steps
            .push(wayline_core::Step::new(format!("s{index}"), "echo"));
    }
    fan.steps.push(
        wayline_core::Step::new("join", "echo")
            .map("a", "s0.n")
            .map("b", "s9.n"),
    );
    let prepared = engine.prepare(&fan).unwrap();
    let runs = futures_util::future::join_all((0..50).map(|index| {
        engine.run_prepared(&prepared, RunOptions::new().run_id(format!("run-{index}")))
    }))
    .await;
    for run in runs {
        let run = run.unwrap();
        assert_eq!(run.status, RunStatus::Success);
        let stored = store.run(&run.id).await.unwrap().unwrap();
        assert_eq!(stored.step_results.len(), 11);
        assert!(
            stored
                .step_results
                .iter()
                .all(|r| r.status == StepStatus::Success)
        );
        assert_eq!(stored, run);
    }
}

/// What a run of `chain` did on a store that refuses the writes `refuse` once each.
struct OnFlakyStore {
    store: Arc<MemoryStore>,
    engine: Engine,
    spy: Arc<Spy>,
    ran: Result<Run, Error>,
}

impl OnFlakyStore {
    async fn run(refuse: &[(&str, StepStatus)], failure: StoreFailure) -> Self {
        let store = Arc::new(MemoryStore::new());
        let flaky = Arc::new(Flaky::new(Arc::clone(&store), refuse));
        let (builder, spy) = spied(&store, flaky);
        let engine = builder.on_store_failure(failure).build();
        let ran = engine.run(&chain(), RunOptions::new().run_id("r1")).await;
        OnFlakyStore {
            store,
            engine,
            spy,
            ran,
        }
    }

    /// The calls made so far, method and path.
    fn calls(&self) -> Vec<String> {
        let seen = self.spy.seen.lock().unwrap();
        seen.iter()
            .map(|call| call.split(" [").next().unwrap().to_owned())
            .collect()
    }

    /// What the store holds of the run.
    async fn stored(&self) -> (RunStatus, Vec<StepStatus>) {
        let run = self.store.run("r1").await.unwrap().unwrap();
        let steps = run
            .step_results
            .iter()
            .map(|result| result.status)
            .collect();
        (run.status, steps)
    }

    async fn resume(&self, unknown: UnknownSteps) -> Result<Run, Error> {
        let prepared = self.engine.prepare(&chain()).unwrap();
        let options = ResumeOptions::new().unknown(unknown);
        self.engine.resume(&prepared, "r1", options).await
    }
}

#[tokio::test]
async fn a_store_down_for_a_moment_interrupts_the_run_and_a_resume_finishes_it() {
    use StepStatus::{Pending, Running, Success};
    // By default the step fails and so does the run, though the store is back at once.
    let run = OnFlakyStore::run(&[("a", Success)], StoreFailure::FailStep).await;
    assert_eq!(run.ran.as_ref().unwrap().status, RunStatus::Failed);
    assert_eq!(run.stored().await.0, RunStatus::Failed);

    // Interrupting: the result of `a` (a GET) is not saved, so nothing more starts and nothing
    // more is written; the stored run stays `running`, and a resume runs `a` again (safe) and
    // goes on.
    let run = OnFlakyStore::run(&[("a", Success)], StoreFailure::Interrupt).await;
    let error = run.ran.as_ref().unwrap_err();
    let Error::Store {
        run: Some(so_far), ..
    } = error
    else {
        panic!("not an interrupted run: {error}");
    };
    assert!(error.to_string().contains("connection refused"), "{error}");
    assert_eq!(so_far.status, RunStatus::Running);
    assert_eq!(run.calls(), ["GET /a"]);
    assert_eq!(
        run.stored().await,
        (RunStatus::Running, vec![Running, Pending, Pending])
    );
    let resumed = run.resume(UnknownSteps::Stop).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(run.calls(), ["GET /a", "GET /a", "POST /b", "GET /c"]);

    // The result of `b` (a POST, not safe to repeat) is not saved: it stays `running` in the
    // store, and the resume asks a person, as after a crash, before it is sent again.
    let run = OnFlakyStore::run(&[("b", Success)], StoreFailure::Interrupt).await;
    assert!(run.ran.is_err());
    assert_eq!(run.calls(), ["GET /a", "POST /b"]);
    assert_eq!(run.stored().await.1, [Success, Running, Pending]);
    let asked = run.resume(UnknownSteps::Stop).await.unwrap_err();
    assert!(
        matches!(&asked, Error::UnknownOutcome { steps, .. } if steps == &["b"]),
        "{asked}"
    );
    let resumed = run.resume(UnknownSteps::Retry).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(run.calls(), ["GET /a", "POST /b", "POST /b", "GET /c"]);

    // Its `running` mark is not saved: it is not sent, and a resume sends it once.
    let run = OnFlakyStore::run(&[("b", Running)], StoreFailure::Interrupt).await;
    assert!(run.ran.is_err());
    assert_eq!(run.calls(), ["GET /a"]);
    let resumed = run.resume(UnknownSteps::Stop).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Success);
    assert_eq!(run.calls(), ["GET /a", "POST /b", "GET /c"]);
}

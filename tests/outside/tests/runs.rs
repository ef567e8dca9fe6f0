//! The acceptance of issue 34, as a crate outside the workspace sees it: 100 runs handed to
//! `tokio::spawn` on a multi-threaded runtime, each followed through its handle, some
//! cancelled, every record complete — in the host's own store too.

use std::sync::Arc;

use outside_host::{GatedApi, MapStore};
use wayline::core::{
    MemoryCatalog, OwnedRunEvent, RunStatus, RunStore, StepStatus, ToolDefinition, Workflow,
};
use wayline::executor::{Engine, Error, RunOptions};

fn catalog() -> MemoryCatalog {
    MemoryCatalog::from_tools([
        ToolDefinition::new("item", "http://api.test/items"),
        ToolDefinition::new("owner", "http://api.test/owners"),
    ])
}

/// Two steps, the second reading the first's output.
fn workflow() -> Workflow {
    let yaml = "id: lookup\nname: Lookup\nsteps:\n\
                - {id: item, tool_id: item}\n\
                - {id: owner, tool_id: owner, input_mapping: {path: item.data.path}}\n";
    Workflow::parse(yaml, wayline::core::document::Format::Yaml, "lookup.yaml").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_spawned_runs_are_followed_cancelled_and_recorded() {
    let api = Arc::new(GatedApi::closed());
    let store = Arc::new(MapStore::default());
    let engine = Engine::builder(Arc::new(catalog()))
        .transport(api.clone())
        .run_store(store.clone())
        .build();
    let prepared = Arc::new(engine.prepare(&workflow()).unwrap());

    // Spawned by the host, as an axum handler would: each task starts a run and follows it.
    let mut tasks = Vec::new();
    let (handles_tx, mut handles_rx) = tokio::sync::mpsc::unbounded_channel();
    for n in 0..100 {
        let engine = engine.clone();
        let prepared = Arc::clone(&prepared);
        let handles_tx = handles_tx.clone();
        tasks.push(tokio::spawn(async move {
            let handle = engine
                .start_prepared(prepared, RunOptions::new().run_id(format!("run-{n}")))
                .unwrap();
            let mut events = handle.events();
            handles_tx.send((n, handle.cancel_token())).unwrap();
            let mut seen = Vec::new();
            while let Some(event) = events.next().await {
                assert_eq!(event.run_id(), Some(handle.id()));
                seen.push(serde_json::to_value(&*event).unwrap()["event"].clone());
                if let OwnedRunEvent::RunFinished { status, .. } = &*event {
                    assert!(*status != RunStatus::Running);
                }
            }
            (n, seen, handle.finish().await)
        }));
    }
    // Every run's first call waits at the API; a third of them are cancelled there.
    let mut cancels = Vec::new();
    for _ in 0..100 {
        cancels.push(handles_rx.recv().await.unwrap());
    }
    while api.calls() < 100 {
        tokio::task::yield_now().await;
    }
    for (n, cancel) in &cancels {
        if n % 3 == 0 {
            cancel.cancel();
        }
    }
    api.open(1_000);

    for task in tasks {
        let (n, seen, finished) = task.await.unwrap();
        let run = finished.unwrap();
        assert_eq!(seen.first().unwrap(), "run_started", "run {n}");
        assert_eq!(seen.last().unwrap(), "run_finished", "run {n}");
        assert!(run.finished_at.is_some(), "run {n}");
        for step in &run.step_results {
            assert!(
                !matches!(step.status, StepStatus::Pending | StepStatus::Running),
                "run {n}: {step:?}"
            );
            assert!(step.finished_at.is_some(), "run {n}: {step:?}");
        }
        let expected = if n % 3 == 0 {
            RunStatus::Cancelled
        } else {
            RunStatus::Success
        };
        assert_eq!(run.status, expected, "run {n}");
        if expected == RunStatus::Success {
            // The second call carried what the first answered.
            assert_eq!(
                run.step_results[1].output_data["data"]["path"],
                "api.test/owners?path=api.test%2Fitems"
            );
        }
        // The host's store has the same complete record.
        assert_eq!(
            store.run(&run.id).await.unwrap().as_ref(),
            Some(&run),
            "run {n}"
        );
    }
}

#[test]
fn outside_a_runtime_start_says_so_instead_of_panicking() {
    let engine = Engine::builder(Arc::new(catalog()))
        .transport(Arc::new(GatedApi::closed()))
        .build();
    let error = engine.start(&workflow(), RunOptions::new()).unwrap_err();
    assert!(matches!(error, Error::NoRuntime), "{error}");
}

#[test]
fn errors_compose_with_the_question_mark() {
    fn load() -> Result<usize, Box<dyn std::error::Error + Send + Sync>> {
        let tools = wayline::registry::ToolRegistry::load(["no/such/tools"]).into_result()?;
        let engine = Engine::builder(Arc::new(tools)).build();
        let mut workflow = Workflow::new("w", "W");
        workflow
            .steps
            .push(wayline::core::Step::new("s", "missing"));
        engine.prepare(&workflow)?;
        Ok(0)
    }
    let error = load().unwrap_err();
    assert!(error.to_string().contains("no/such/tools"), "{error}");
}

#[tokio::test]
async fn a_build_without_response_schemas_refuses_to_check_them_and_says_which_feature() {
    let mut tool = ToolDefinition::new("item", "http://api.test/items");
    tool.response_schemas
        .insert("200".to_owned(), serde_json::json!({"type": "object"}));
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .transport(Arc::new(GatedApi::closed()))
        .check_response_schemas(true)
        .build();
    let mut workflow = Workflow::new("w", "W");
    workflow.steps.push(wayline::core::Step::new("s", "item"));
    let error = engine.prepare(&workflow).unwrap_err();
    assert!(error.to_string().contains("`response-schemas`"), "{error}");
}

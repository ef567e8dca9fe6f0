//! Flow runs: control decided after each step — continue, end, goto, retry — and steps that run
//! more than once, each execution in the record. A scripted flow answers from a list per step;
//! the transport answers from the path (`/status/N` answers N), the clock is paused.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::json;
use tokio::time::Instant;
use wayline_core::{HttpResponse, MemoryCatalog, RunStatus, StepStatus, ToolDefinition, Workflow};
use wayline_executor::flow::{Call, Finished, Flow, Next, Settled, Starting};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::{Engine, RunOptions};

use crate::support::{Events, workflow};

/// Steps `a`, `b`, `c`, `d` in a chain, each calling `call` with a `status` input (no retries
/// by the engine; the flow judges the status).
fn chain() -> Workflow {
    let steps: String = ["a", "b", "c", "d"]
        .iter()
        .map(|id| {
            format!(
                "  - {{id: {id}, tool_id: call, input_mapping: {{status: null}}, retry: {{max_attempts: 1}}}}\n"
            )
        })
        .collect();
    workflow(&format!(
        "id: w\nname: W\nsteps:\n{steps}edges:\n  - {{from_step_id: a, to_step_id: b}}\n  - {{from_step_id: b, to_step_id: c}}\n  - {{from_step_id: c, to_step_id: d}}\n"
    ))
}

fn engine(events: Arc<Events>) -> (Engine, ScriptedTransport) {
    let transport = ScriptedTransport::new().with_fallback(|request| {
        let status = request
            .url
            .rsplit('/')
            .next()
            .and_then(|status| status.parse().ok())
            .unwrap_or(200);
        let mut response = HttpResponse::new(status, format!(r#"{{"status": {status}}}"#));
        response
            .headers
            .push(("x-trace".to_owned(), "seen".to_owned()));
        Ok(response)
    });
    let mut tool = ToolDefinition::new("call", "http://api.test");
    tool.path = "/status/{status}".to_owned();
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .transport(Arc::new(transport.clone()))
        .observer(events)
        .build();
    (engine, transport)
}

/// Answers from a script: per step, the statuses to ask for, and where control goes after each
/// execution (once the list runs out: on after a success, the end after a failure). A status of
/// 400 or more fails.
#[derive(Default)]
struct Script {
    statuses: HashMap<&'static str, VecDeque<u16>>,
    nexts: HashMap<&'static str, VecDeque<Next>>,
    judged: Vec<String>,
}

impl Script {
    fn status(mut self, step: &'static str, statuses: &[u16]) -> Self {
        self.statuses
            .insert(step, statuses.iter().copied().collect());
        self
    }

    fn then(mut self, step: &'static str, nexts: Vec<Next>) -> Self {
        self.nexts.insert(step, nexts.into());
        self
    }
}

impl Flow for Script {
    fn call(&mut self, starting: Starting<'_>) -> Result<Call, String> {
        let step_id = starting.step_id;
        let status = self
            .statuses
            .get_mut(step_id)
            .and_then(VecDeque::pop_front)
            .unwrap_or(200);
        if status == 0 {
            return Err(format!("no input for `{step_id}`"));
        }
        if status == 1 {
            return Ok(Call::Own(Box::pin(async { Ok(json!({"own": true})) })));
        }
        Ok(Call::Tool(IndexMap::from([(
            "status".to_owned(),
            json!(status),
        )])))
    }

    fn settle(&mut self, finished: Finished<'_>) -> Settled {
        let seen = finished.reply.map(|reply| {
            (
                reply.status,
                reply.header("x-trace").unwrap_or("").to_owned(),
            )
        });
        self.judged.push(format!(
            "{}#{} {:?}",
            finished.step_id, finished.execution, seen
        ));
        if finished.result.output_data == json!({"own": true}) {
            return Settled::success(finished.result.output_data.clone());
        }
        let verdict = match finished.reply {
            Some(reply) if reply.status < 400 => Settled::success(json!({"status": reply.status})),
            Some(reply) => Settled::failure(format!("status {}", reply.status)),
            None => Settled::failure(finished.result.error.clone().unwrap_or_default()),
        };
        match self
            .nexts
            .get_mut(finished.step_id)
            .and_then(VecDeque::pop_front)
        {
            Some(next) => verdict.then(next),
            None => verdict,
        }
    }
}

fn entries(run: &wayline_core::Run) -> Vec<String> {
    run.step_results
        .iter()
        .map(|result| format!("{} {}", result.step_id, result.status.as_str()))
        .collect()
}

async fn run_script(script: &mut Script) -> (wayline_core::Run, Arc<Events>) {
    let events = Arc::new(Events::default());
    let (engine, _) = engine(Arc::clone(&events));
    let prepared = engine.prepare(&chain()).unwrap();
    let run = engine
        .run_flow(&prepared, script, RunOptions::new().input("goal", "x"))
        .await
        .unwrap();
    (run, events)
}

#[tokio::test(start_paused = true)]
async fn a_flow_that_continues_runs_each_step_once_in_order() {
    let mut script = Script::default();
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        ["a success", "b success", "c success", "d success"]
    );
    assert_eq!(run.user_inputs["goal"], "x");
    // The flow saw each response, headers and all.
    assert_eq!(script.judged[0], r#"a#1 Some((200, "seen"))"#);
    assert_eq!(run.step_results[0].output_data, json!({"status": 200}));
}

#[tokio::test(start_paused = true)]
async fn goto_back_runs_the_target_and_what_follows_again_each_time_in_the_record() {
    let mut script = Script::default().then(
        "c",
        vec![Next::Goto("b".to_owned()), Next::Goto("b".to_owned())],
    );
    let (run, events) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        [
            "a success",
            "b success",
            "c success",
            "d success",
            "b#2 success",
            "c#2 success",
            "b#3 success",
            "c#3 success"
        ]
    );
    let starts: Vec<String> = events
        .lines()
        .into_iter()
        .filter(|line| line.starts_with("start "))
        .collect();
    assert_eq!(
        starts,
        [
            "start a",
            "start b",
            "start c",
            "start b#2",
            "start c#2",
            "start b#3",
            "start c#3",
            "start d"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn goto_forward_passes_over_the_steps_between() {
    let mut script = Script::default().then("a", vec![Next::Goto("d".to_owned())]);
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        ["a success", "b skipped", "c skipped", "d success"]
    );
    assert_eq!(
        run.step_results[1].error.as_deref(),
        Some("passed over: step `a` went to `d`")
    );
}

#[tokio::test(start_paused = true)]
async fn end_after_a_success_ends_the_run_green_and_after_a_failure_red() {
    let mut script = Script::default().then("b", vec![Next::End]);
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        ["a success", "b success", "c skipped", "d skipped"]
    );
    assert_eq!(
        run.step_results[2].error.as_deref(),
        Some("not run: the run ended before it")
    );

    let mut script = Script::default().status("b", &[500]);
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(
        entries(&run),
        ["a success", "b failed", "c skipped", "d skipped"]
    );
    assert_eq!(run.step_results[1].error.as_deref(), Some("status 500"));
}

#[tokio::test(start_paused = true)]
async fn retry_waits_then_runs_the_step_again_until_the_flow_stops_it() {
    let wait = Duration::from_secs(5);
    let mut script = Script::default()
        .status("b", &[503, 503, 200])
        .then("b", vec![Next::Retry(wait), Next::Retry(wait)]);
    let started = Instant::now();
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(started.elapsed(), wait * 2);
    assert_eq!(
        entries(&run),
        [
            "a success",
            "b failed",
            "c success",
            "d success",
            "b#2 failed",
            "b#3 success"
        ]
    );
    // The failed executions keep their reasons.
    assert_eq!(run.step_results[1].error.as_deref(), Some("status 503"));
}

#[tokio::test(start_paused = true)]
async fn a_step_the_flow_gives_no_inputs_fails_without_a_call_and_is_judged() {
    let mut script = Script::default()
        .status("c", &[0])
        .then("c", vec![Next::Goto("d".to_owned())]);
    let (run, _) = run_script(&mut script).await;
    // The flow judged the failure and moved on: the run recovers.
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        ["a success", "b success", "c failed", "d success"]
    );
    assert_eq!(
        run.step_results[2].error.as_deref(),
        Some("no input for `c`")
    );
    assert_eq!(run.step_results[2].attempts, 0);
    assert!(script.judged.contains(&"c#1 None".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn a_goto_to_no_step_fails_the_run_saying_so() {
    let mut script = Script::default().then("a", vec![Next::Goto("nowhere".to_owned())]);
    let (run, _) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(
        entries(&run),
        ["a success", "b skipped", "c skipped", "d skipped"]
    );
}

#[tokio::test(start_paused = true)]
async fn steps_that_wait_for_nothing_run_together() {
    let events = Arc::new(Events::default());
    let transport = ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, "{}")));
    let tool = ToolDefinition::new("call", "http://api.test");
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .transport(Arc::new(transport))
        .observer(Arc::clone(&events) as Arc<dyn wayline_core::RunObserver>)
        .build();
    let workflow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: a, tool_id: call}\n  - {id: b, tool_id: call}\n  - {id: c, tool_id: call}\nedges:\n  - {from_step_id: a, to_step_id: c}\n  - {from_step_id: b, to_step_id: c}\n",
    );
    let prepared = engine.prepare(&workflow).unwrap();
    let mut script = Script::default();
    engine
        .run_flow(&prepared, &mut script, RunOptions::new())
        .await
        .unwrap();
    let order: Vec<String> = events
        .lines()
        .into_iter()
        .filter(|line| line.starts_with("start ") || line.starts_with("finish "))
        .collect();
    assert_eq!(
        order[..2],
        ["start a".to_owned(), "start b".to_owned()],
        "{order:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_the_flow_runs_itself_is_judged_and_recorded_like_a_call() {
    let mut script = Script::default().status("b", &[1]);
    let (run, events) = run_script(&mut script).await;
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(run.step_results[1].output_data, json!({"own": true}));
    assert_eq!(run.step_results[1].attempts, 0);
    assert!(
        !events
            .lines()
            .iter()
            .any(|line| line.starts_with("attempt b "))
    );
}

/// Answers `/status/N` with N, but never answers the `hang_on`-th call of `/status/201`; counts
/// the calls per path.
#[derive(Debug, Default)]
struct Stalling {
    hang_on: usize,
    calls: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl wayline_core::Transport for Stalling {
    async fn send(
        &self,
        request: wayline_core::HttpRequest,
    ) -> Result<HttpResponse, wayline_core::TransportError> {
        let path = request.url.trim_start_matches("http://api.test").to_owned();
        let seen = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(path.clone());
            calls.iter().filter(|call| **call == path).count()
        };
        if path == "/status/201" && seen == self.hang_on {
            std::future::pending::<()>().await;
        }
        let status: u16 = path.rsplit('/').next().unwrap().parse().unwrap();
        Ok(HttpResponse::new(
            status,
            format!(r#"{{"status": {status}}}"#),
        ))
    }
}

/// A script that also writes down what it restored.
struct Restoring(Script, Vec<String>);

impl Flow for Restoring {
    fn call(&mut self, starting: Starting<'_>) -> Result<Call, String> {
        self.0.call(starting)
    }

    fn settle(&mut self, finished: Finished<'_>) -> Settled {
        self.0.settle(finished)
    }

    fn restore(&mut self, finished: Finished<'_>) {
        self.1.push(format!(
            "{}#{} {:?}",
            finished.step_id, finished.execution, finished.result.jump
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_flow_run_resumes_on_its_path_without_repeating_a_finished_execution() {
    let store = Arc::new(wayline_store::MemoryStore::new());
    let transport = Arc::new(Stalling {
        hang_on: 2,
        ..Stalling::default()
    });
    let mut tool = ToolDefinition::new("call", "http://api.test");
    tool.path = "/status/{status}".to_owned();
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .transport(transport.clone())
        .run_store(store.clone())
        .build();
    let prepared = engine.prepare(&chain()).unwrap();
    // `c` (status 201) goes back to `b` once; its second execution never gets an answer, and
    // the process "dies" (the run is dropped) while it waits.
    let mut script = Script::default()
        .status("c", &[201, 201, 201])
        .then("c", vec![Next::Goto("b".to_owned())]);
    // (Within the step's own timeout of 30 s.)
    let interrupted = tokio::time::timeout(
        Duration::from_secs(10),
        engine.run_flow(&prepared, &mut script, RunOptions::new().run_id("r1")),
    )
    .await;
    assert!(interrupted.is_err(), "the run should hang");
    let stored = wayline_core::RunStore::run(store.as_ref(), "r1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(
        entries(&stored),
        [
            "a success",
            "b success",
            "c success",
            "d pending",
            "b#2 success",
            "c#2 running"
        ]
    );
    assert_eq!(
        stored.step_results[2].jump,
        Some(wayline_core::Jump::Step {
            step: "b".to_owned()
        })
    );

    // Resumed with a script that no longer jumps: `c#2` (a GET, safe to repeat) runs again,
    // then `d`; nothing that finished is called again.
    let before = transport.calls.lock().unwrap().len();
    let mut resumed = Restoring(Script::default().status("c", &[201]), Vec::new());
    let run = engine
        .resume_flow(
            &prepared,
            &mut resumed,
            "r1",
            wayline_executor::ResumeOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        entries(&run),
        [
            "a success",
            "b success",
            "c success",
            "d success",
            "b#2 success",
            "c#2 success"
        ]
    );
    assert_eq!(
        transport.calls.lock().unwrap()[before..],
        ["/status/201".to_owned(), "/status/200".to_owned()]
    );
    // The flow took in what had finished, in the order it finished, with the jumps taken.
    assert_eq!(
        resumed.1,
        [
            "a#1 None",
            "b#1 None",
            "c#1 Some(Step { step: \"b\" })",
            "b#2 None"
        ]
    );
    // A run that ended is not resumed.
    let again = engine
        .resume_flow(
            &prepared,
            &mut resumed,
            "r1",
            wayline_executor::ResumeOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(
        again.to_string().contains("it has already ended (success)"),
        "{again}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_goto_that_loops_forever_ends_at_the_engines_limit_saying_why() {
    let engine_with_limit = {
        let mut tool = ToolDefinition::new("call", "http://api.test");
        tool.path = "/status/{status}".to_owned();
        Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
            .transport(Arc::new(
                ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, "{}"))),
            ))
            .max_executions(20)
            .build()
    };
    let prepared = engine_with_limit.prepare(&chain()).unwrap();
    let mut script = Script::default().then("c", vec![Next::Goto("b".to_owned()); 100]);
    let run = engine_with_limit
        .run_flow(&prepared, &mut script, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let started = run
        .step_results
        .iter()
        .filter(|result| result.started_at.is_some())
        .count();
    assert_eq!(started, 20);
    let last = run.step_results.last().unwrap();
    assert_eq!(last.status, StepStatus::Skipped);
    assert!(
        last.error
            .as_deref()
            .unwrap()
            .contains("the run made 20 step executions, the most this engine allows"),
        "{last:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_flow_run_the_store_fails_stops_and_resumes_from_what_was_saved() {
    let store = Arc::new(wayline_store::MemoryStore::new());
    let transport = Arc::new(Stalling::default());
    let mut tool = ToolDefinition::new("call", "http://api.test");
    tool.path = "/status/{status}".to_owned();
    // The judged result of `b` (work the flow does itself) is not saved.
    let flaky = crate::support::Flaky::new(Arc::clone(&store), &[("b", StepStatus::Success)]);
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools([tool])))
        .transport(transport.clone())
        .run_store(Arc::new(flaky))
        .on_store_failure(wayline_executor::StoreFailure::Interrupt)
        .build();
    let prepared = engine.prepare(&chain()).unwrap();
    let mut script = Script::default().status("b", &[1]);
    let error = engine
        .run_flow(&prepared, &mut script, RunOptions::new().run_id("r1"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, wayline_executor::Error::Store { run: Some(_), .. }),
        "{error}"
    );
    assert_eq!(*transport.calls.lock().unwrap(), ["/status/200"]);
    let stored = wayline_core::RunStore::run(store.as_ref(), "r1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(
        entries(&stored),
        ["a success", "b running", "c pending", "d pending"]
    );
    // `b` is a GET's step, safe to run again; `a` is not called again.
    let mut resumed = Restoring(Script::default(), Vec::new());
    let run = engine
        .resume_flow(
            &prepared,
            &mut resumed,
            "r1",
            wayline_executor::ResumeOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(resumed.1, ["a#1 None"]);
    assert_eq!(transport.calls.lock().unwrap().len(), 4);
}

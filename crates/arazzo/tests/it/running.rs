//! Running documents written for one rule each: the actions (end, goto, retry with its limit
//! and delays, `Retry-After`), each kind of criterion, the expression forms steps read, workflows
//! that call workflows and `dependsOn`, and which steps run at the same time. The API is a
//! scripted transport; the clock is paused, so delays are exact and cost nothing.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use wayline_arazzo::run::{Runner, WorkflowRun};
use wayline_arazzo::sources::Sources;
use wayline_core::{HttpRequest, HttpResponse, MemoryCatalog, RunStatus};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::{Engine, RunOptions};

use crate::entries;

/// An API of a few operations, each a path whose last segment is what it answers.
const API: &str = r#"
openapi: 3.1.0
info: {title: Test API, version: '1'}
servers: [{url: 'http://api.test'}]
paths:
  /items:
    get:
      operationId: listItems
      parameters: [{name: kind, in: query, schema: {type: string}}, {name: X-Trace, in: header, schema: {type: string}}]
      responses: {'200': {description: ok}}
    post:
      operationId: createItem
      requestBody: {content: {application/json: {schema: {type: object}}}}
      responses: {'201': {description: created}}
  /items/{id}:
    get:
      operationId: getItem
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: ok}}
  /status:
    get:
      operationId: getStatus
      responses: {'200': {description: ok}}
  /slow/{name}:
    get:
      operationId: slow
      parameters: [{name: name, in: path, required: true, schema: {type: string}}]
      responses: {'200': {description: ok}}
"#;

/// A document calling [`API`]: `arazzo`, `info` and `sourceDescriptions` added to `workflows`.
fn document(workflows: &str) -> (wayline_arazzo::ArazzoDocument, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), API).unwrap();
    let text = format!(
        "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\nsourceDescriptions: [{{name: api, url: ./api.yaml, type: openapi}}]\n{workflows}"
    );
    let document = wayline_arazzo::load(&text, "t.arazzo.yaml").unwrap();
    let problems: Vec<String> = wayline_arazzo::validate(&document)
        .into_iter()
        .filter(|problem| problem.is_error())
        .map(|problem| problem.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    (document, dir)
}

type Answer = Box<dyn Fn(&HttpRequest) -> HttpResponse + Send + Sync>;

/// The requests sent, in order, as `METHOD path?query`.
#[derive(Clone, Debug, Default)]
struct Sent(Arc<Mutex<Vec<String>>>);

impl Sent {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn run(
    workflows: &str,
    workflow: &str,
    inputs: Value,
    answer: Answer,
) -> (WorkflowRun, Sent) {
    let (document, dir) = document(workflows);
    let sources = Sources::load(&document, dir.path(), &IndexMap::<String, PathBuf>::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let sent = Sent::default();
    let log = sent.clone();
    let transport = ScriptedTransport::new().with_fallback(move |request| {
        let target = request.url.trim_start_matches("http://api.test");
        log.0
            .lock()
            .unwrap()
            .push(format!("{} {target}", request.method));
        Ok(answer(request))
    });
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(transport))
        .build();
    let Value::Object(inputs) = inputs else {
        panic!("inputs are an object")
    };
    let ran = runner
        .run(&engine, workflow, inputs, RunOptions::new())
        .await
        .unwrap();
    (ran, sent)
}

fn json_reply(status: u16, body: Value) -> HttpResponse {
    let mut response = HttpResponse::new(status, body.to_string());
    response
        .headers
        .push(("Content-Type".to_owned(), "application/json".to_owned()));
    response
}

fn outputs(ran: &WorkflowRun) -> Value {
    Value::Object(ran.outputs.clone())
}

#[tokio::test(start_paused = true)]
async fn retry_waits_retry_after_or_the_header_and_gives_up_at_its_limit() {
    let workflows = "workflows:
  - workflowId: w
    steps:
      - stepId: poll
        operationId: getStatus
        successCriteria: [{condition: $response.body.ready == true}]
        onFailure:
          - {name: again, type: retry, retryAfter: 2, retryLimit: 3}
";
    // Not ready twice (the second asks for 7 s with Retry-After), then ready.
    let calls = Arc::new(Mutex::new(0));
    let count = Arc::clone(&calls);
    let started = Instant::now();
    let (ran, sent) = run(
        workflows,
        "w",
        json!({}),
        Box::new(move |_| {
            let mut calls = count.lock().unwrap();
            *calls += 1;
            match *calls {
                1 => json_reply(200, json!({"ready": false})),
                2 => {
                    let mut reply = json_reply(200, json!({"ready": false}));
                    reply
                        .headers
                        .push(("Retry-After".to_owned(), "7".to_owned()));
                    reply
                }
                _ => json_reply(200, json!({"ready": true})),
            }
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success);
    assert_eq!(sent.lines().len(), 3);
    assert_eq!(started.elapsed(), Duration::from_secs(2 + 7));
    assert_eq!(
        entries(&ran),
        ["poll failed", "poll#2 failed", "poll#3 success"]
    );

    // Never ready: the first call and three retries, then the workflow fails saying why.
    let started = Instant::now();
    let (ran, sent) = run(
        workflows,
        "w",
        json!({}),
        Box::new(|_| json_reply(200, json!({"ready": false}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert_eq!(sent.lines().len(), 4);
    assert_eq!(started.elapsed(), Duration::from_secs(6));
    assert_eq!(
        ran.run.step_results[3].error.as_deref(),
        Some(
            "success criterion `$response.body.ready == true` does not hold; action `again`: gave up after 3 retries"
        )
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_without_a_limit_retries_once_and_without_a_delay_at_once() {
    let workflows = "workflows:
  - workflowId: w
    steps:
      - stepId: poll
        operationId: getStatus
        onFailure: [{name: again, type: retry}]
";
    let started = Instant::now();
    let (ran, sent) = run(
        workflows,
        "w",
        json!({}),
        Box::new(|_| json_reply(503, json!({}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert_eq!(sent.lines().len(), 2);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn goto_loops_until_a_criterion_and_end_stops_early() {
    // Page through items: `more` goes back to `page` while the body says there is more (each
    // page asks for the one its previous execution was told is next); the `stop` success
    // action ends the workflow before `never` runs.
    let workflows = "workflows:
  - workflowId: w
    steps:
      - stepId: page
        operationId: listItems
        parameters: [{name: kind, in: query, value: 'page-{$steps.page.outputs.next}'}]
        outputs: {more: $response.body.more, next: $response.body.next}
      - stepId: count
        operationId: getStatus
        onSuccess:
          - {name: more, type: goto, stepId: page, criteria: [{condition: $steps.page.outputs.more == true}]}
          - {name: stop, type: end}
      - stepId: never
        operationId: getStatus
";
    let pages = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&pages);
    let (ran, sent) = run(
        workflows,
        "w",
        json!({}),
        Box::new(move |request| {
            if request.url.contains("/items") {
                let mut pages = seen.lock().unwrap();
                *pages += 1;
                json_reply(200, json!({"more": *pages < 3, "next": *pages}))
            } else {
                json_reply(200, json!({}))
            }
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success);
    assert_eq!(
        sent.lines(),
        [
            "GET /items?kind=page-null",
            "GET /status",
            "GET /items?kind=page-1",
            "GET /status",
            "GET /items?kind=page-2",
            "GET /status"
        ]
    );
    assert_eq!(
        entries(&ran),
        [
            "page success",
            "count success",
            "never skipped",
            "page#2 success",
            "count#2 success",
            "page#3 success",
            "count#3 success"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failure_goto_recovers_and_the_workflow_succeeds() {
    let workflows = "workflows:
  - workflowId: w
    steps:
      - stepId: fetch
        operationId: getItem
        parameters: [{name: id, in: path, value: $inputs.id}]
        successCriteria: [{condition: $statusCode == 200}]
        onFailure: [{name: create-it, type: goto, stepId: create, criteria: [{condition: $statusCode == 404}]}]
        outputs: {name: $response.body.name}
      - stepId: done
        operationId: getStatus
        onSuccess: [{name: finish, type: end}]
      - stepId: create
        operationId: createItem
        requestBody: {payload: {id: $inputs.id, name: new}}
        successCriteria: [{condition: $statusCode == 201}]
        outputs: {name: $request.body#/name, sent: $request.body}
    outputs:
      created: $steps.create.outputs.name
      sent: $steps.create.outputs.sent
";
    let (ran, sent) = run(
        workflows,
        "w",
        json!({"id": "a1"}),
        Box::new(|request| match request.method.as_str() {
            "POST" => json_reply(201, json!({})),
            _ => json_reply(404, json!({"error": "missing"})),
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /items/a1", "POST /items"]);
    assert_eq!(
        entries(&ran),
        ["fetch failed", "done skipped", "create success"]
    );
    assert_eq!(
        outputs(&ran),
        json!({"created": "new", "sent": {"id": "a1", "name": "new"}})
    );
}

#[tokio::test(start_paused = true)]
async fn each_kind_of_criterion_and_what_cannot_be_evaluated() {
    let step = |criterion: &str| {
        format!(
            "workflows:
  - workflowId: w
    steps:
      - stepId: list
        operationId: listItems
        parameters: [{{name: X-Trace, in: header, value: t-42}}]
        successCriteria: [{criterion}]
"
        )
    };
    let answer = || -> Answer {
        Box::new(|request| {
            let mut reply = json_reply(200, json!({"items": [{"id": 1, "kind": "book"}]}));
            let trace = request
                .headers
                .iter()
                .find(|header| header.name.eq_ignore_ascii_case("x-trace"))
                .map(|header| header.value.clone())
                .unwrap_or_default();
            reply.headers.push(("X-Echo".to_owned(), trace));
            reply
        })
    };
    let cases = [
        // String comparisons ignore case, as the specification says.
        (
            "{condition: \"$statusCode == 200 && $response.body.items[0].kind == 'BOOK'\"}",
            true,
        ),
        ("{condition: $request.header.X-Trace == 't-42'}", true),
        (
            "{context: $response.header.X-Echo, condition: '^t-\\d+$', type: regex}",
            true,
        ),
        (
            "{context: $response.header.X-Echo, condition: '^x', type: regex}",
            false,
        ),
        (
            "{context: $response.body, condition: \"$.items[?@.kind == 'book']\", type: jsonpath}",
            true,
        ),
        (
            "{context: $response.body, condition: \"$.items[?@.kind == 'film']\", type: jsonpath}",
            false,
        ),
    ];
    for (criterion, holds) in cases {
        let (ran, _) = run(&step(criterion), "w", json!({}), answer()).await;
        let expected = if holds {
            RunStatus::Success
        } else {
            RunStatus::Failed
        };
        assert_eq!(
            ran.run.status, expected,
            "{criterion}: {:?}",
            ran.run.step_results[0].error
        );
    }
    // XPath over a JSON body cannot be evaluated: the step fails saying so, never passes in
    // silence.
    let (ran, _) = run(
        &step("{context: $response.body, condition: /items, type: xpath}"),
        "w",
        json!({}),
        answer(),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert!(
        ran.run.step_results[0]
            .error
            .as_deref()
            .unwrap()
            .contains("the context `$response.body` of an XPath criterion is not an XML document"),
        "{:?}",
        ran.run.step_results[0].error
    );
    // Over an XML body it is: a criterion, and a selector of the 1.1 kind.
    let xml = || -> Answer {
        Box::new(|_| {
            let mut reply = HttpResponse::new(
                200,
                "<items><item kind='book'>Dune</item><item kind='film'>Alien</item></items>",
            );
            reply
                .headers
                .push(("Content-Type".to_owned(), "application/xml".to_owned()));
            reply
        })
    };
    let xpath_step = "workflows:
  - workflowId: w
    steps:
      - stepId: list
        operationId: listItems
        successCriteria:
          - {context: $response.body, condition: \"count(/items/item[@kind = 'book']) = 1\", type: xpath}
        outputs:
          book: {context: $response.body, selector: \"/items/item[@kind = 'book']\", type: xpath}
          all: {context: $response.body, selector: /items/item/text(), type: xpath}
    outputs: {book: $steps.list.outputs.book, all: $steps.list.outputs.all}
";
    let (ran, _) = run(xpath_step, "w", json!({}), xml()).await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        outputs(&ran),
        json!({"book": "Dune", "all": ["Dune", "Alien"]})
    );
}

#[tokio::test(start_paused = true)]
async fn expressions_read_inputs_outputs_requests_responses_and_the_url() {
    let workflows = "workflows:
  - workflowId: w
    inputs: {type: object, properties: {kind: {type: string, default: tool}}}
    steps:
      - stepId: list
        operationId: listItems
        parameters:
          - {name: kind, in: query, value: $inputs.kind}
          - {name: X-Trace, in: header, value: 'trace-{$inputs.kind}'}
        outputs:
          first: $response.body#/items/0/id
          all: $response.body
          type: $response.header.content-type
          status: $statusCode
          url: $url
          method: $method
          query: $request.query.kind
          trace: $request.header.X-Trace
      - stepId: get
        operationId: getItem
        parameters: [{name: id, in: path, value: $steps.list.outputs.first}]
        outputs:
          path: $request.path.id
          source: $sourceDescriptions.api.url
    outputs:
      every: $steps.list.outputs
      path: $steps.get.outputs.path
      source: $steps.get.outputs.source
";
    let (ran, sent) = run(
        workflows,
        "w",
        json!({}),
        Box::new(|_| json_reply(200, json!({"items": [{"id": "x9"}]}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /items?kind=tool", "GET /items/x9"]);
    assert_eq!(
        outputs(&ran),
        json!({
            "every": {
                "first": "x9",
                "all": {"items": [{"id": "x9"}]},
                "type": "application/json",
                "status": 200,
                "url": "http://api.test/items?kind=tool",
                "method": "GET",
                "query": "tool",
                "trace": "trace-tool"
            },
            "path": "x9",
            "source": "./api.yaml"
        })
    );
}

#[tokio::test(start_paused = true)]
async fn depends_on_runs_first_and_its_values_are_read() {
    let workflows = "workflows:
  - workflowId: login
    steps:
      - stepId: token
        operationId: getStatus
        outputs: {token: $response.body.token}
    outputs: {token: $steps.token.outputs.token}
  - workflowId: use
    dependsOn: [login]
    steps:
      - stepId: list
        operationId: listItems
        parameters: [{name: X-Trace, in: header, value: $workflows.login.outputs.token}]
        outputs: {trace: $request.header.X-Trace}
    outputs: {trace: $steps.list.outputs.trace}
";
    let (ran, sent) = run(
        workflows,
        "use",
        json!({}),
        Box::new(|_| json_reply(200, json!({"token": "tk-1"}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /status", "GET /items"]);
    assert_eq!(ran.dependencies.len(), 1);
    assert_eq!(outputs(&ran), json!({"trace": "tk-1"}));

    // A dependency that fails stops the workflow before any of its steps.
    let (ran, sent) = run(
        workflows,
        "use",
        json!({}),
        Box::new(|_| json_reply(500, json!({}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert_eq!(sent.lines(), ["GET /status"]);
    assert_eq!(entries(&ran), ["list skipped"]);
    assert_eq!(
        ran.run.step_results[0].error.as_deref(),
        Some("not run: workflow `login`, which it depends on, failed")
    );
}

#[tokio::test(start_paused = true)]
async fn a_workflow_step_passes_parameters_and_reads_the_outputs_and_a_failed_call_fails_it() {
    let workflows = "workflows:
  - workflowId: outer
    steps:
      - stepId: call
        workflowId: inner
        parameters: [{name: id, value: $inputs.id}]
        outputs: {name: $outputs.name}
      - stepId: after
        operationId: getItem
        parameters: [{name: id, in: path, value: $steps.call.outputs.name}]
    outputs:
      name: $steps.call.outputs.name
      inner: $workflows.inner.outputs.name
      deep: $workflows.inner.steps.get.outputs.name
  - workflowId: inner
    inputs: {type: object, required: [id], properties: {id: {type: string}}}
    steps:
      - stepId: get
        operationId: getItem
        parameters: [{name: id, in: path, value: $inputs.id}]
        successCriteria: [{condition: $statusCode == 200}]
        outputs: {name: $response.body.name}
    outputs: {name: $steps.get.outputs.name}
";
    let (ran, sent) = run(
        workflows,
        "outer",
        json!({"id": "i1"}),
        Box::new(|request| {
            let id = request
                .url
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            json_reply(200, json!({"name": format!("name-of-{id}")}))
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /items/i1", "GET /items/name-of-i1"]);
    assert_eq!(
        outputs(&ran),
        json!({"name": "name-of-i1", "inner": "name-of-i1", "deep": "name-of-i1"})
    );
    assert_eq!(ran.calls[0].run.id, format!("{}.call", ran.run.id));

    // The inner workflow fails: the calling step fails, and (by default) so does the outer.
    let (ran, _) = run(
        workflows,
        "outer",
        json!({"id": "i1"}),
        Box::new(|_| json_reply(404, json!({}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Failed);
    assert_eq!(entries(&ran), ["call failed", "after skipped"]);
    assert_eq!(
        ran.run.step_results[0].error.as_deref(),
        Some(format!("workflow `inner` failed (run {}.call)", ran.run.id).as_str())
    );
}

#[tokio::test(start_paused = true)]
async fn steps_with_no_order_between_them_run_together_and_a_control_point_keeps_order() {
    // `a` and `b` read nothing of each other: they run at once. `gate` may end the workflow,
    // so it waits for both, and `c` waits for it.
    let workflows = "workflows:
  - workflowId: w
    steps:
      - {stepId: a, operationId: slow, parameters: [{name: name, in: path, value: a}]}
      - {stepId: b, operationId: slow, parameters: [{name: name, in: path, value: b}]}
      - stepId: gate
        operationId: slow
        parameters: [{name: name, in: path, value: gate}]
        onSuccess: [{name: stop, type: end, criteria: [{condition: $statusCode == 204}]}]
      - {stepId: c, operationId: slow, parameters: [{name: name, in: path, value: c}]}
";
    let (document, dir) = document(workflows);
    let sources = Sources::load(&document, dir.path(), &IndexMap::new());
    let server = wayline_executor::testing::MockServer::start(|_| {
        wayline_executor::testing::Reply::json(200, json!({})).delay(Duration::from_millis(20))
    })
    .await
    .unwrap();
    let mut servers = IndexMap::new();
    servers.insert("api".to_owned(), server.url(""));
    let runner_at = Runner::new(document, &sources, &servers);
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(wayline_executor::ReqwestTransport::new().unwrap()))
        .build();
    let started = Instant::now();
    let ran = runner_at
        .run(&engine, "w", Map::new(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(ran.run.status, RunStatus::Success);
    // a and b together (20 ms), then gate, then c: three rounds, not four.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(60) && elapsed < Duration::from_millis(80),
        "{elapsed:?}"
    );
    let started_at = |id: &str| {
        ran.run
            .step_results
            .iter()
            .find(|result| result.step_id == id)
            .and_then(|result| result.started_at)
            .unwrap()
    };
    assert!(started_at("gate") >= started_at("a").max(started_at("b")));
    assert!(started_at("c") >= started_at("gate"));
}

#[tokio::test(start_paused = true)]
async fn goto_a_workflow_passes_control_and_a_retry_can_run_a_step_first() {
    let workflows = "workflows:
  - workflowId: start
    steps:
      - stepId: check
        operationId: getStatus
        onSuccess:
          - name: hand-over
            type: goto
            workflowId: finish
            parameters: [{name: id, value: $response.body.id}]
      - stepId: skipped
        operationId: listItems
  - workflowId: finish
    inputs: {type: object, properties: {id: {type: string}}}
    steps:
      - stepId: get
        operationId: getItem
        parameters: [{name: id, in: path, value: $inputs.id}]
  - workflowId: retrying
    steps:
      - stepId: first
        operationId: getStatus
        successCriteria: [{condition: $statusCode == 200}]
        onSuccess: [{name: done, type: end}]
        onFailure: [{name: renew, type: retry, stepId: renew-token, retryLimit: 2}]
      - stepId: renew-token
        operationId: listItems
";
    let (ran, sent) = run(
        workflows,
        "start",
        json!({}),
        Box::new(|_| json_reply(200, json!({"id": "z1"}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /status", "GET /items/z1"]);
    assert_eq!(entries(&ran), ["check success", "skipped skipped"]);
    assert_eq!(ran.calls[0].workflow_id, "finish");

    // `first` is refused until `renew-token` has been called: the retry runs `renew-token`
    // first, then `first` again, which ends the workflow.
    let renewed = Arc::new(Mutex::new(false));
    let (ran, sent) = run(
        workflows,
        "retrying",
        json!({}),
        Box::new(move |request| {
            let mut renewed = renewed.lock().unwrap();
            if request.url.ends_with("/items") {
                *renewed = true;
                return json_reply(200, json!({}));
            }
            json_reply(if *renewed { 200 } else { 401 }, json!({}))
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET /status", "GET /items", "GET /status"]);
    assert_eq!(
        entries(&ran),
        ["first failed", "renew-token success", "first#2 success"]
    );
}

/// Blocks every call of a tool whose method is `POST`, as a guard would block writes.
#[derive(Debug)]
struct NoWrites;

impl wayline_core::StepPolicy for NoWrites {
    fn check(&self, step: &wayline_core::StepRequest<'_>) -> wayline_core::Verdict {
        match step.tool {
            Some(tool) if tool.method.eq_ignore_ascii_case("POST") => {
                wayline_core::Verdict::Block(format!("`{}` writes", step.tool_id))
            }
            _ => wayline_core::Verdict::Allow,
        }
    }
}

/// Keeps the events' step and tool ids, as the knowledge recorder reads them.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<String>>);

impl wayline_core::RunObserver for Seen {
    fn on_event(&self, event: &wayline_core::RunEvent<'_>) {
        if let wayline_core::RunEvent::Attempt {
            step_id,
            tool_id,
            status,
            ..
        } = event
        {
            self.0
                .lock()
                .unwrap()
                .push(format!("{step_id} {tool_id} {status:?}"));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_engines_policies_and_observers_see_every_step_of_a_document() {
    let workflows = "workflows:
  - workflowId: w
    steps:
      - stepId: read
        operationId: listItems
      - stepId: write
        operationId: createItem
        requestBody: {payload: {name: x}}
        onFailure: [{name: blocked, type: goto, stepId: read-again}]
      - stepId: read-again
        operationId: listItems
";
    let (document, dir) = document(workflows);
    let sources = Sources::load(&document, dir.path(), &IndexMap::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let sent = Sent::default();
    let log = sent.clone();
    let transport = ScriptedTransport::new().with_fallback(move |request| {
        log.0.lock().unwrap().push(request.method.clone());
        Ok(json_reply(200, json!([])))
    });
    let seen = Arc::new(Seen::default());
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(transport))
        .policy(Arc::new(NoWrites))
        .observer(Arc::clone(&seen) as Arc<dyn wayline_core::RunObserver>)
        .build();
    let ran = runner
        .run(&engine, "w", Map::new(), RunOptions::new())
        .await
        .unwrap();
    // The write was blocked before it was sent; the document's failure action took over.
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(sent.lines(), ["GET", "GET"]);
    assert_eq!(
        ran.run.step_results[1].error.as_deref(),
        Some("blocked by policy: `api.createItem` writes")
    );
    // Observers (the knowledge recorder among them) see each call under its operation's tool.
    assert_eq!(
        *seen.0.lock().unwrap(),
        [
            "read api.listItems Some(200)",
            "read-again api.listItems Some(200)"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_runs_a_workflow_of_another_arazzo_document_with_that_documents_sources() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("auth")).unwrap();
    // The other document, in its own directory, with its own description of the API.
    std::fs::write(dir.path().join("auth/api.yaml"), API).unwrap();
    std::fs::write(
        dir.path().join("auth/login.arazzo.yaml"),
        "arazzo: 1.1.0\ninfo: {title: O, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: login\n    steps: [{stepId: s, operationId: getStatus, outputs: {token: $response.body.token}}]\n    outputs: {token: $steps.s.outputs.token}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("api.yaml"), API).unwrap();
    let text = |called: &str| {
        format!(
            "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\nsourceDescriptions:\n  - {{name: api, url: ./api.yaml}}\n  - {{name: auth, url: ./auth/login.arazzo.yaml, type: arazzo}}\nworkflows:\n  - workflowId: w\n    steps:\n      - {{stepId: login, workflowId: '$sourceDescriptions.auth.{called}', outputs: {{token: $outputs.token}}}}\n      - {{stepId: list, operationId: $sourceDescriptions.api.listItems, parameters: [{{name: X-Trace, in: header, value: $steps.login.outputs.token}}]}}\n    outputs: {{token: $steps.login.outputs.token}}\n"
        )
    };
    let runner = |called: &str| {
        let document = wayline_arazzo::load(&text(called), "t.arazzo.yaml").unwrap();
        let sources = Sources::load(&document, dir.path(), &IndexMap::new());
        Runner::new(document, &sources, &IndexMap::new())
    };
    let sent = Sent::default();
    let log = sent.clone();
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(ScriptedTransport::new().with_fallback(
            move |request| {
                log.0.lock().unwrap().push(request.url.clone());
                Ok(json_reply(200, json!({"token": "tk-9"})))
            },
        )))
        .build();
    let ran = runner("login")
        .run(&engine, "w", Map::new(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        sent.lines(),
        ["http://api.test/status", "http://api.test/items"]
    );
    assert_eq!(ran.calls[0].workflow_id, "login");
    assert_eq!(outputs(&ran), json!({"token": "tk-9"}));

    // A workflow the other document does not have: refused before anything runs.
    let error = runner("logn")
        .run(&engine, "w", Map::new(), RunOptions::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "workflow `w` cannot run:\n  step `login`: no workflow `logn` in the document (did you mean `login`?)"
    );
}

/// Answers as `answer` does, but never answers the first call whose URL contains `hang`.
#[derive(Debug)]
struct Hanging {
    hang: &'static str,
    hung: Mutex<bool>,
    sent: Sent,
}

#[async_trait::async_trait]
impl wayline_core::Transport for Hanging {
    async fn send(
        &self,
        request: HttpRequest,
    ) -> Result<HttpResponse, wayline_core::TransportError> {
        let target = request.url.trim_start_matches("http://api.test").to_owned();
        let trace = request
            .headers
            .iter()
            .find(|header| header.name.eq_ignore_ascii_case("x-trace"))
            .map(|header| format!(" X-Trace={}", header.value))
            .unwrap_or_default();
        self.sent
            .0
            .lock()
            .unwrap()
            .push(format!("{} {target}{trace}", request.method));
        let first = {
            let mut hung = self.hung.lock().unwrap();
            let first = target.contains(self.hang) && !*hung;
            *hung |= first;
            first
        };
        if first {
            std::future::pending::<()>().await;
        }
        Ok(json_reply(200, json!({"token": "tk-1", "n": 3})))
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_run_resumes_reading_the_outputs_of_the_steps_that_finished() {
    let workflows = "workflows:
  - workflowId: w
    inputs: {type: object, properties: {password: {type: string}}}
    steps:
      - stepId: login
        operationId: getStatus
        outputs: {token: $response.body.token}
      - stepId: list
        operationId: listItems
        parameters: [{name: X-Trace, in: header, value: $steps.login.outputs.token}]
        outputs: {n: $response.body.n}
    outputs: {n: $steps.list.outputs.n, token: $steps.login.outputs.token}
";
    let (document, dir) = document(workflows);
    let sources = Sources::load(&document, dir.path(), &IndexMap::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let store = Arc::new(wayline_store::MemoryStore::new());
    let sent = Sent::default();
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(Hanging {
            hang: "/items",
            hung: Mutex::new(false),
            sent: sent.clone(),
        }))
        .run_store(store.clone())
        .build();
    let inputs = || {
        let Value::Object(inputs) = json!({"password": "pw-123456"}) else {
            unreachable!()
        };
        inputs
    };
    // The process "dies" while `list` waits for its answer.
    let interrupted = tokio::time::timeout(
        Duration::from_secs(10),
        runner.run(&engine, "w", inputs(), RunOptions::new().run_id("r1")),
    )
    .await;
    assert!(interrupted.is_err(), "the run should hang");
    assert_eq!(sent.lines(), ["GET /status", "GET /items X-Trace=tk-1"]);
    let stored = wayline_core::RunStore::run(store.as_ref(), "r1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.user_inputs["password"], "***");

    let ran = runner
        .resume(&engine, "w", "r1", inputs(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    // `login` was not called again; `list` read its output from the record.
    assert_eq!(
        sent.lines(),
        [
            "GET /status",
            "GET /items X-Trace=tk-1",
            "GET /items X-Trace=tk-1"
        ]
    );
    assert_eq!(outputs(&ran), json!({"n": 3, "token": "tk-1"}));

    // A run that ended is not resumed; nor is one of a workflow that has `dependsOn`.
    let error = runner
        .resume(&engine, "w", "r1", inputs(), RunOptions::new())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("it has already ended"),
        "{error}"
    );
    let (dependent, dir) = self::document(
        "workflows:
  - {workflowId: first, steps: [{stepId: s, operationId: getStatus}]}
  - {workflowId: then, dependsOn: [first], steps: [{stepId: s, operationId: getStatus}]}
",
    );
    let sources = Sources::load(&dependent, dir.path(), &IndexMap::new());
    let error = Runner::new(dependent, &sources, &IndexMap::new())
        .resume(&engine, "then", "r2", Map::new(), RunOptions::new())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("it depends on other workflows (`dependsOn`)"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_querystring_parameter_is_the_whole_query_string() {
    let workflows = "workflows:
  - workflowId: w
    inputs: {type: object, properties: {category: {type: string}}}
    steps:
      - stepId: search
        operationId: getStatus
        parameters:
          - {name: fullQuery, in: querystring, value: 'category={$inputs.category}&inStock=true'}
        outputs: {asked: $request.query.category}
    outputs: {asked: $steps.search.outputs.asked}
";
    let (ran, sent) = run(
        workflows,
        "w",
        json!({"category": "old books"}),
        Box::new(|_| json_reply(200, json!({}))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    assert_eq!(
        sent.lines(),
        ["GET /status?category=old%20books&inStock=true"]
    );
    assert_eq!(outputs(&ran), json!({"asked": "old books"}));
}

#[tokio::test(start_paused = true)]
async fn a_retry_can_run_a_workflow_first_and_a_goto_can_pass_control_to_another_document() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), API).unwrap();
    std::fs::write(
        dir.path().join("other.arazzo.yaml"),
        "arazzo: 1.1.0\ninfo: {title: O, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: audit\n    steps: [{stepId: s, operationId: getItem, parameters: [{name: id, in: path, value: $inputs.id}]}]\n",
    )
    .unwrap();
    let text = "arazzo: 1.1.0\ninfo: {title: T, version: '1'}\nsourceDescriptions:\n  - {name: api, url: ./api.yaml}\n  - {name: other, url: ./other.arazzo.yaml, type: arazzo}\nworkflows:\n  - workflowId: renew\n    steps: [{stepId: r, operationId: listItems}]\n  - workflowId: w\n    steps:\n      - stepId: first\n        operationId: getStatus\n        successCriteria: [{condition: $statusCode == 200}]\n        onSuccess: [{name: hand-over, type: goto, workflowId: $sourceDescriptions.other.audit, parameters: [{name: id, value: done}]}]\n        onFailure: [{name: again, type: retry, workflowId: renew, retryAfter: 3, retryLimit: 2}]\n";
    let document = wayline_arazzo::load(text, "t.arazzo.yaml").unwrap();
    let sources = Sources::load(&document, dir.path(), &IndexMap::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let sent = Sent::default();
    let log = sent.clone();
    let renewed = Arc::new(Mutex::new(false));
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(ScriptedTransport::new().with_fallback(
            move |request| {
                let target = request.url.trim_start_matches("http://api.test").to_owned();
                log.0.lock().unwrap().push(target.clone());
                let mut renewed = renewed.lock().unwrap();
                if target == "/items" {
                    *renewed = true;
                }
                let status = if target == "/status" && !*renewed {
                    401
                } else {
                    200
                };
                Ok(json_reply(status, json!({})))
            },
        )))
        .build();
    let started = Instant::now();
    let ran = runner
        .run(&engine, "w", Map::new(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    // Refused, then (after the 3 s wait) the renew workflow, then the step again, which
    // hands control to the other document's audit workflow.
    assert_eq!(
        sent.lines(),
        ["/status", "/items", "/status", "/items/done"]
    );
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(
        entries(&ran),
        ["first failed", "first#2 success", "first#3 success"]
    );
    assert_eq!(ran.run.step_results[1].output_data["ran_first"], "renew");
    let called: Vec<&str> = ran
        .calls
        .iter()
        .map(|run| run.workflow_id.as_str())
        .collect();
    assert_eq!(called, ["renew", "audit"]);
}

/// Issue 31, item 1: input components that refer to each other twice per level (600 bytes
/// that once expanded to 19 GB) are checked as they are written, never expanded.
#[tokio::test(start_paused = true)]
async fn input_components_referring_to_each_other_are_never_expanded() {
    let workflows = "workflows:
  - workflowId: w
    inputs: {$ref: '#/components/inputs/a'}
    steps:
      - stepId: read
        operationId: listItems
        parameters: [{name: kind, in: query, value: $inputs.kind}]
components:
  inputs:
    a:
      type: object
      properties:
        x: {$ref: '#/components/inputs/b'}
        y: {$ref: '#/components/inputs/b'}
        kind: {$ref: '#/components/inputs/kind'}
    b:
      type: object
      properties:
        x: {$ref: '#/components/inputs/a'}
        y: {$ref: '#/components/inputs/a'}
    kind: {type: string, default: all}
";
    let started = std::time::Instant::now();
    let (ran, sent) = run(
        workflows,
        "w",
        json!({"x": {"y": {"x": {}}}}),
        Box::new(|_| json_reply(200, json!([]))),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    // The default a referenced property gives is filled in.
    assert_eq!(sent.lines(), ["GET /items?kind=all"]);
    assert!(started.elapsed() < Duration::from_secs(30));

    // And what breaks the recursive schema deep inside is still found.
    let (document, dir) = document(workflows);
    let sources = Sources::load(&document, dir.path(), &IndexMap::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let engine = Engine::builder(Arc::new(MemoryCatalog::new())).build();
    let Value::Object(inputs) = json!({"x": {"y": {"x": {"y": 5}}}}) else {
        unreachable!()
    };
    let refused = runner
        .run(&engine, "w", inputs, RunOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("/x/y/x/y: 5 is not of type \"object\""),
        "{refused}"
    );
}

/// Issue 31, item 20: an input under a plain name (`auth`) sent as the `Authorization` header
/// is a credential: masked from the run's start in its recorded inputs, and in the bodies and
/// outputs that echo it, not only in the header.
#[tokio::test(start_paused = true)]
async fn an_input_sent_as_a_credential_is_masked_everywhere() {
    let workflows = "workflows:
  - workflowId: w
    inputs: {type: object, properties: {auth: {type: string}, kind: {type: string}}}
    steps:
      - stepId: read
        operationId: listItems
        parameters:
          - {name: Authorization, in: header, value: $inputs.auth}
          - {name: kind, in: query, value: $inputs.kind}
        outputs: {echoed: $response.body}
    outputs: {echoed: $steps.read.outputs.echoed}
";
    let (ran, _) = run(
        workflows,
        "w",
        json!({"auth": "tok-8b1c5e90", "kind": "all"}),
        Box::new(|request| {
            let sent = request
                .headers
                .iter()
                .find(|header| header.name.eq_ignore_ascii_case("authorization"))
                .map(|header| header.value.clone())
                .unwrap_or_default();
            json_reply(200, json!({"authorization": sent}))
        }),
    )
    .await;
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
    let recorded = serde_json::to_string(&ran.run).unwrap();
    assert!(!recorded.contains("tok-8b1c5e90"), "{recorded}");
    assert_eq!(ran.run.user_inputs["auth"], "***");
    assert_eq!(ran.run.user_inputs["kind"], "all", "other inputs are kept");
    let outputs = serde_json::to_string(&ran.outputs).unwrap();
    assert!(!outputs.contains("tok-8b1c5e90"), "{outputs}");
}

/// A deadline too far ahead to be a point in time is no deadline (it once panicked).
#[tokio::test]
async fn a_deadline_past_the_end_of_time_is_none() {
    let (document, dir) = document(
        "workflows:
  - workflowId: w
    steps: [{stepId: s, operationId: getStatus}]
",
    );
    let sources = Sources::load(&document, dir.path(), &IndexMap::<String, PathBuf>::new());
    let runner = Runner::new(document, &sources, &IndexMap::new());
    let engine = Engine::builder(Arc::new(MemoryCatalog::new()))
        .transport(Arc::new(
            ScriptedTransport::new().with_fallback(|_| Ok(json_reply(200, json!({})))),
        ))
        .build();
    let ran = runner
        .run(
            &engine,
            "w",
            Map::new(),
            RunOptions::new().deadline(Duration::MAX),
        )
        .await
        .unwrap();
    assert_eq!(ran.run.status, RunStatus::Success, "{:#?}", ran.run);
}

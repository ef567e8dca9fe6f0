//! Run semantics: failure propagation, severity, validations, `when`, transforms, hooks, the
//! record's order, and secrets kept out of records.

use std::sync::Arc;

use serde_json::{Value, json};
use wayline_core::{
    HttpRequest, HttpResponse, MemoryCatalog, MemorySecrets, RunStatus, Secret, StepResult,
    StepStatus, ToolConfig, ToolDefinition,
};
use wayline_executor::testing::ScriptedTransport;
use wayline_executor::testing::{MockServer, Reply};
use wayline_executor::{Engine, Error, RunOptions, StepContext, StepMiddleware};

use crate::support::{Events, engine, tool, workflow};

/// An engine whose transport answers by path: `/fail` → 500, `/echo` → the query as JSON,
/// anything else → `{"path": ...}`.
fn scripted(tool_ids: &[&str]) -> Engine {
    let tools = tool_ids.iter().map(|id| {
        let mut tool = ToolDefinition::new(*id, "http://api.test");
        tool.path = format!("/{id}");
        tool
    });
    let transport = ScriptedTransport::new().with_fallback(|request: &HttpRequest| {
        let url = url::Url::parse(&request.url).unwrap();
        Ok(match url.path() {
            "/fail" => HttpResponse::new(500, "boom"),
            "/echo" => {
                let query: serde_json::Map<String, Value> = url
                    .query_pairs()
                    .map(|(key, value)| (key.into_owned(), Value::String(value.into_owned())))
                    .collect();
                HttpResponse::new(200, Value::Object(query).to_string())
            }
            path => HttpResponse::new(200, json!({"path": path, "items": [1, 2, 3]}).to_string()),
        })
    });
    Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(Arc::new(transport))
        .build()
}

fn result<'r>(run: &'r wayline_core::Run, id: &str) -> &'r StepResult {
    run.step_results.iter().find(|r| r.step_id == id).unwrap()
}

#[tokio::test]
async fn a_failure_skips_dependents_transitively_with_the_reason() {
    let engine = scripted(&["ok", "fail"]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: a, tool_id: fail}\n\
         - {id: b, tool_id: ok, input_mapping: {x: a.path}}\n\
         - {id: c, tool_id: ok, input_mapping: {x: b.path}}\n\
         - {id: d, tool_id: ok}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(result(&run, "a").status, StepStatus::Failed);
    assert_eq!(result(&run, "a").error.as_deref(), Some("HTTP 500: boom"));
    assert_eq!(result(&run, "b").status, StepStatus::Skipped);
    assert_eq!(
        result(&run, "b").error.as_deref(),
        Some("dependency `a` failed")
    );
    assert_eq!(
        result(&run, "c").error.as_deref(),
        Some("dependency `b` was skipped")
    );
    assert_eq!(result(&run, "d").status, StepStatus::Success);
    assert!(run.step_results.iter().all(|r| r.finished_at.is_some()));
}

#[tokio::test]
async fn a_non_critical_failure_does_not_fail_the_run() {
    let engine = scripted(&["ok", "fail"]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: a, tool_id: fail, severity: non_critical}\n\
         - {id: b, tool_id: ok, input_mapping: {x: a.path}}\n\
         - {id: c, tool_id: ok}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(result(&run, "a").status, StepStatus::Failed);
    assert_eq!(result(&run, "b").status, StepStatus::Skipped);
}

#[tokio::test]
async fn validations_fail_or_warn_on_inputs_and_outputs() {
    let engine = scripted(&["ok", "echo"]);
    let flow = workflow(
        r#"id: w
name: W
steps:
  - id: in
    tool_id: echo
    input_mapping: {name: ""}
    validations:
      - {field: name, check: not_empty, target: input}
  - id: out
    tool_id: ok
    validations:
      - {field: items, check: min_length, value: 5}
      - {field: path, check: regex, value: "^/o"}
  - id: warn
    tool_id: ok
    validations:
      - {field: items, check: min_length, value: 5, critical: false, message: "few items"}
"#,
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let input = result(&run, "in");
    assert_eq!(input.status, StepStatus::Failed);
    assert_eq!(
        input.error.as_deref(),
        Some("input validation failed: 'name' is empty")
    );
    assert_eq!(input.attempts, 0, "no call is made when inputs fail");
    let output = result(&run, "out");
    assert_eq!(output.status, StepStatus::Failed);
    assert_eq!(
        output.error.as_deref(),
        Some("output validation failed: 'items' length 3 < 5")
    );
    assert_eq!(output.output_data["path"], "/ok", "the output is kept");
    let warn = result(&run, "warn");
    assert_eq!(warn.status, StepStatus::Success);
    assert_eq!(warn.warnings, ["few items"]);
}

#[tokio::test]
async fn bad_validations_and_expressions_stop_the_run_before_it_starts() {
    let engine = scripted(&["ok"]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - id: a\n    tool_id: ok\n    validations: [{field: x, check: regex, value: '('}]\n    outputs: {x: '$.a['}\n",
    );
    let error = engine.run(&flow, RunOptions::new()).await.unwrap_err();
    let Error::InvalidWorkflow { problems, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(error.to_string().contains("invalid regex"), "{error}");
}

#[tokio::test]
async fn missing_inputs_stop_the_run_before_it_starts() {
    let engine = scripted(&["echo"]);
    let flow = workflow(
        "id: w\nname: W\ninputs: {city: {description: where}, units: {default: metric}}\nsteps:\n  - {id: a, tool_id: echo, input_mapping: {q: $input.city, u: $input.units}}\n",
    );
    let error = engine.run(&flow, RunOptions::new()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("input `city` is required (where)"),
        "{error}"
    );
    let error = engine
        .run(
            &flow,
            RunOptions::new().input("city", "Oslo").input("cty", "x"),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("did you mean `city`"), "{error}");
    let run = engine
        .run(&flow, RunOptions::new().input("city", "Oslo"))
        .await
        .unwrap();
    assert_eq!(
        run.step_results[0].output_data,
        json!({"q": "Oslo", "u": "metric"})
    );
    assert_eq!(run.user_inputs["units"], "metric");
}

#[tokio::test]
async fn when_false_skips_and_transforms_compute_outputs() {
    let engine = scripted(&["ok"]);
    let flow = workflow(
        r#"id: w
name: W
steps:
  - {id: a, tool_id: ok}
  - id: total
    kind: transform
    outputs:
      count: "size(steps.a.items)"
      doubled: "steps.a.items.map(x, x * 2)"
      greeting: "'hello ' + inputs.who"
  - {id: never, tool_id: ok, when: "steps.total.count > 10"}
  - {id: after_never, tool_id: ok, input_mapping: {x: never.path}}
"#,
    );
    let run = engine
        .run(&flow, RunOptions::new().input("who", "Ada"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success);
    assert_eq!(
        result(&run, "total").output_data,
        json!({"count": 3, "doubled": [2, 4, 6], "greeting": "hello Ada"})
    );
    let never = result(&run, "never");
    assert_eq!(never.status, StepStatus::Skipped);
    assert_eq!(
        never.error.as_deref(),
        Some("`when` condition `steps.total.count > 10` is false")
    );
    assert_eq!(result(&run, "after_never").status, StepStatus::Skipped);
}

#[tokio::test]
async fn the_record_lists_steps_in_topological_order() {
    let engine = scripted(&["ok"]);
    let flow = workflow(
        "id: w\nname: W\nsteps:\n\
         - {id: c, tool_id: ok, input_mapping: {x: b.path}}\n\
         - {id: b, tool_id: ok, input_mapping: {x: a.path}}\n\
         - {id: a, tool_id: ok}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let order: Vec<_> = run
        .step_results
        .iter()
        .map(|r| r.step_id.as_str())
        .collect();
    assert_eq!(order, ["a", "b", "c"]);
}

#[derive(Debug)]
struct Guard;

#[async_trait::async_trait]
impl StepMiddleware for Guard {
    async fn before_step(&self, step: &StepContext<'_>) -> Result<(), String> {
        if step.step.id == "blocked" {
            return Err("not on Fridays".to_owned());
        }
        Ok(())
    }

    async fn after_step(&self, _step: &StepContext<'_>, result: &mut StepResult) {
        result.warnings.push("audited".to_owned());
    }
}

#[tokio::test]
async fn middleware_can_block_a_step_and_annotate_results() {
    let transport =
        Arc::new(ScriptedTransport::new().with_fallback(|_| Ok(HttpResponse::new(200, "{}"))));
    let catalog = MemoryCatalog::from_tools([ToolDefinition::new("ok", "http://api.test")]);
    let engine = Engine::builder(Arc::new(catalog))
        .transport(transport.clone())
        .middleware(Arc::new(Guard))
        .build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: blocked, tool_id: ok}\n  - {id: fine, tool_id: ok}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    let blocked = result(&run, "blocked");
    assert_eq!(blocked.status, StepStatus::Failed);
    assert_eq!(
        blocked.error.as_deref(),
        Some("blocked before it ran: not on Fridays")
    );
    assert_eq!(result(&run, "fine").warnings, ["audited"]);
    assert_eq!(transport.requests().len(), 1);
}

const TOKEN: &str = "tok-5ecret-0123456789";

#[tokio::test]
async fn no_secret_reaches_the_record_events_or_errors() {
    // The server echoes the request's headers back, and fails loudly naming the token.
    let server = MockServer::start(|request| {
        let headers: serde_json::Map<String, Value> = request
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        match request.path() {
            "/echo" => Reply::json(200, json!({"headers": headers})),
            _ => Reply::text(401, format!("token {TOKEN} is expired")),
        }
    })
    .await
    .unwrap();
    let echo = tool(
        "id: echo\nname: E\nbase_url: x\npath: /echo\nauth: {type: bearer}\nrequest: {query_params: [q]}\n",
        &server.url(""),
    );
    let deny = tool(
        "id: deny\nname: D\nbase_url: x\npath: /deny\nauth: {type: api_key, header: X-Key}\n",
        &server.url(""),
    );
    let mut secrets = MemorySecrets::new();
    for id in ["echo", "deny"] {
        let mut config = ToolConfig::default();
        config.auth_token = Some(Secret::new(TOKEN));
        secrets.insert(id, config);
    }
    let events = Arc::new(Events::default());
    let engine = engine([echo, deny])
        .secrets(Arc::new(secrets))
        .observer(events.clone())
        .build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: echo, tool_id: echo, input_mapping: {q: $input.q}}\n  - {id: deny, tool_id: deny}\n",
    );
    let run = engine
        .run(&flow, RunOptions::new().input("q", "x"))
        .await
        .unwrap();
    // The token was really sent…
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    // …and appears nowhere in what wayline keeps or shows.
    let record = serde_json::to_string(&run).unwrap();
    assert!(!record.contains(TOKEN), "{record}");
    assert!(!format!("{run:?}").contains(TOKEN));
    assert!(!events.lines().join("\n").contains(TOKEN));
    let echo = result(&run, "echo");
    assert_eq!(echo.output_data["headers"]["authorization"], "Bearer ***");
    assert_eq!(
        echo.request.as_ref().unwrap().headers["Authorization"],
        "***"
    );
    assert_eq!(
        result(&run, "deny").error.as_deref(),
        Some("HTTP 401: token *** is expired")
    );
}

/// A redirect to another origin (here another port) takes no credential with it — not the API
/// key, not the tool config's secret header — and no `Referer`; one on the same origin keeps
/// them. The run record names where the request went.
#[tokio::test]
async fn credentials_never_follow_a_redirect_to_another_origin() {
    let elsewhere = MockServer::start(|_| Reply::json(200, json!({"landed": true})))
        .await
        .unwrap();
    let target = elsewhere.url("/landing?from=redirect");
    let origin = MockServer::start(move |request| match request.path() {
        "/away" => Reply::status(302).header("location", target.clone()),
        "/here" => Reply::status(307).header("location", "/final"),
        _ => Reply::json(200, json!({"final": true})),
    })
    .await
    .unwrap();
    let away = tool(
        "id: away\nname: A\nbase_url: x\npath: /away\nauth: {type: api_key, header: X-Api-Key}\n",
        &origin.url(""),
    );
    let here = tool(
        "id: here\nname: H\nbase_url: x\npath: /here\nauth: {type: api_key, header: X-Api-Key}\n",
        &origin.url(""),
    );
    let mut secrets = MemorySecrets::new();
    for id in ["away", "here"] {
        let mut config = ToolConfig::default();
        config.auth_token = Some(Secret::new(TOKEN));
        config
            .headers
            .insert("X-Tenant-Secret".into(), Secret::new("tenant-s3cret"));
        secrets.insert(id, config);
    }
    let engine = engine([away, here]).secrets(Arc::new(secrets)).build();
    let flow = workflow(
        "id: w\nname: W\nsteps:\n  - {id: away, tool_id: away}\n  - {id: here, tool_id: here}\n",
    );
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:?}");

    let landed = &elsewhere.requests()[0];
    assert_eq!(landed.header("x-api-key"), None);
    assert_eq!(landed.header("x-tenant-secret"), None);
    assert_eq!(landed.header("referer"), None);
    let first = &origin.requests()[0];
    assert_eq!(first.header("x-api-key"), Some(TOKEN));
    assert_eq!(first.header("x-tenant-secret"), Some("tenant-s3cret"));
    let record = result(&run, "away").request.as_ref().unwrap();
    assert_eq!(record.redirects, [elsewhere.url("/landing?from=redirect")]);

    // Same origin: the credentials go on.
    let same = origin
        .requests()
        .into_iter()
        .find(|request| request.path() == "/final")
        .unwrap();
    assert_eq!(same.header("x-api-key"), Some(TOKEN));
    assert_eq!(same.header("referer"), None);
    let record = result(&run, "here").request.as_ref().unwrap();
    assert_eq!(record.redirects, [origin.url("/final")]);
    assert!(
        !serde_json::to_string(&run)
            .unwrap()
            .contains("tenant-s3cret")
    );
}

/// A server that reflects a Basic `user:password` (base64) or a token with `"` in its JSON
/// escaped form puts neither in the record.
#[tokio::test]
async fn encoded_secrets_are_masked_in_the_record() {
    const PASSWORD: &str = r#"pa"ss\word-77"#;
    let server = MockServer::start(|request| {
        let authorization = request.header("authorization").unwrap_or("").to_owned();
        Reply::json(200, json!({"seen": authorization, "token": PASSWORD}))
    })
    .await
    .unwrap();
    let basic = tool(
        "id: basic\nname: B\nbase_url: x\npath: /b\nauth: {type: basic}\n",
        &server.url(""),
    );
    let mut secrets = MemorySecrets::new();
    let mut config = ToolConfig::default();
    config.auth_username = Some(Secret::new("ada-admin"));
    config.auth_token = Some(Secret::new(PASSWORD));
    secrets.insert("basic", config);
    let engine = engine([basic]).secrets(Arc::new(secrets)).build();
    let flow = workflow("id: w\nname: W\nsteps:\n  - {id: b, tool_id: basic}\n");
    let run = engine.run(&flow, RunOptions::new()).await.unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:?}");
    let record = serde_json::to_string(&run).unwrap();
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("ada-admin:{PASSWORD}"));
    assert!(
        server.requests()[0]
            .header("authorization")
            .is_some_and(|value| value.contains(&encoded)),
        "the credential was sent"
    );
    for leak in [encoded.as_str(), r#"pa\"ss\\word-77"#, "ss\\word-77"] {
        assert!(!record.contains(leak), "{leak} in {record}");
    }
}

/// Issue 31, items 20 and 22: a value sent as a credential (here an input under a plain name,
/// sent as `X-API-Key`) and a session cookie a server sets are masked everywhere once they have
/// crossed the wire — the echoing body, the outputs, the recorded inputs — and the engine's
/// redactor, which a host's own writers use, learns them too.
#[tokio::test]
async fn what_crosses_the_wire_as_a_credential_is_masked_everywhere() {
    let tools = [
        tool(
            "id: login\nname: Login\nbase_url: x\nmethod: POST\npath: /login\n",
            "http://api.test",
        ),
        tool(
            "id: whoami\nname: Who\nbase_url: x\nmethod: GET\npath: /whoami\n\
             request: {headers: {X-API-Key: '{{key}}', Cookie: 'session={{session}}'}}\n",
            "http://api.test",
        ),
    ];
    let transport = ScriptedTransport::new().with_fallback(|request: &HttpRequest| {
        let url = url::Url::parse(&request.url).unwrap();
        Ok(match url.path() {
            "/login" => {
                let mut reply =
                    HttpResponse::new(200, json!({"session": "sess-7731aa"}).to_string());
                reply.headers.push((
                    "set-cookie".into(),
                    "session=sess-7731aa; Path=/; HttpOnly".into(),
                ));
                reply
            }
            _ => {
                // Echoes what it was sent.
                let echoed: Vec<String> = request
                    .headers
                    .iter()
                    .map(|header| header.value.clone())
                    .collect();
                HttpResponse::new(200, json!({"you_sent": echoed}).to_string())
            }
        })
    });
    let redactor = wayline_executor::Redactor::default();
    let engine = Engine::builder(Arc::new(MemoryCatalog::from_tools(tools)))
        .transport(Arc::new(transport))
        .redactor(redactor.clone())
        .build();
    let workflow = workflow(
        "id: w\nname: W\ninputs: {key: {}}\nsteps:\n  - {id: login, tool_id: login}\n\
         \x20 - id: me\n    tool_id: whoami\n    input_mapping: {key: $input.key, session: login.session}\n",
    );
    let run = engine
        .run(&workflow, RunOptions::new().input("key", "plain-key-5521"))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Success, "{run:#?}");
    let recorded = serde_json::to_string(&run).unwrap();
    assert!(!recorded.contains("plain-key-5521"), "{recorded}");
    assert!(!recorded.contains("sess-7731aa"), "{recorded}");
    assert!(recorded.contains("***"), "{recorded}");
    assert_eq!(
        redactor.text("plain-key-5521 sess-7731aa"),
        "*** ***",
        "the engine's redactor learned both"
    );
}

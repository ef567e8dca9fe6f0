//! `wayline plan` against a loopback fake model server: invalid answers (an unknown tool, a
//! cycle, a dangling reference) are repaired from the validation report, answers in prose or
//! code fences are read, a model that never answers validly stops after `--max-repairs` with
//! exit 1, and a fitting learned pattern is the plan without a call to the server. And
//! `wayline run` answering a decision step with the model.

use std::path::Path;

use wayline_planner::testing::ModelServer;

use super::{code, path, server_runtime, stdout_json, wayline};

const GEOCODE: &str = "id: geocode\nname: Geocode\ndescription: A city's coordinates\nbase_url: https://geo.example.com\npath: /search/{name}\n";
const FORECAST: &str = "id: forecast\nname: Forecast\ndescription: The weather at a coordinate\nbase_url: https://weather.example.com\npath: /{latitude}/{longitude}\n";

const VALID: &str = r#"{"id": "w", "name": "Weather", "inputs": {"city": {}}, "steps": [
  {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "$input.city"}},
  {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "locate.lat", "longitude": "locate.lon"}}]}"#;

const UNKNOWN_TOOL: &str = r#"{"id": "w", "name": "W", "steps": [{"id": "a", "tool_id": "geocoder", "input_mapping": {"name": "$input.city"}}]}"#;

const CYCLE: &str = r#"{"id": "w", "name": "W", "inputs": {"city": {}}, "steps": [
  {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "forecast.city"}},
  {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "locate.lat", "longitude": "locate.lon"}}]}"#;

const DANGLING: &str = r#"{"id": "w", "name": "W", "inputs": {"city": {}}, "steps": [
  {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "$input.city"}},
  {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "geocode.lat", "longitude": "locate.lon"}}]}"#;

fn tools(dir: &Path) -> String {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("geocode.yaml"), GEOCODE).unwrap();
    std::fs::write(tools.join("forecast.yaml"), FORECAST).unwrap();
    path(&tools).to_owned()
}

/// `wayline plan "the weather for a city" --tools TOOLS`, asking `model`, with `extra` flags.
fn plan(model: &ModelServer, tools: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["plan", "the weather for a city", "--tools", tools];
    args.extend(["--model-url", model.url(), "--model", "fake"]);
    args.extend(extra);
    wayline(&args)
}

/// The last user message of a request the server received.
fn last_message(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn invalid_answers_are_repaired_and_answers_in_prose_or_fences_are_read() {
    let runtime = server_runtime();
    let model = runtime.block_on(ModelServer::start([
        format!("Here you go:\n```json\n{CYCLE}\n```"),
        DANGLING.to_owned(),
        UNKNOWN_TOOL.to_owned(),
        format!("I fixed it.\n{VALID}\nThe forecast needs the coordinates."),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let out = dir.path().join("weather.yaml");
    let output = plan(
        &model,
        &tools,
        &["--input", "city", "--out", path(&out), "--max-repairs", "3"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(code(&output), 0, "{stderr}");
    // The view is printed; the workflow is written and valid.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("locate") && stdout.contains("forecast"),
        "{stdout}"
    );
    assert!(
        stderr.contains("planned by the model (4 answer(s)"),
        "{stderr}"
    );
    let validated = wayline(&["validate", path(&out), "--tools", &tools]);
    assert_eq!(
        code(&validated),
        0,
        "{}",
        String::from_utf8_lossy(&validated.stdout)
    );
    // Each repair request carried the previous answer's problems.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        last_message(&requests[1]).contains("cycle"),
        "{}",
        last_message(&requests[1])
    );
    assert!(
        last_message(&requests[2]).contains("geocode.lat"),
        "{}",
        last_message(&requests[2])
    );
    assert!(
        last_message(&requests[3]).contains("geocoder"),
        "{}",
        last_message(&requests[3])
    );
    assert_eq!(requests[0]["model"], "fake");

    // The plan is not written over without --force, and the model is not asked for it.
    let again = plan(&model, &tools, &["--out", path(&out)]);
    assert_eq!(code(&again), 2);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("--force"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(model.requests().len(), 4);
}

#[test]
fn a_model_that_never_answers_validly_stops_after_max_repairs_with_exit_1() {
    let runtime = server_runtime();
    let model = runtime.block_on(ModelServer::start([
        UNKNOWN_TOOL,
        UNKNOWN_TOOL,
        UNKNOWN_TOOL,
        UNKNOWN_TOOL,
    ]));
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let out = dir.path().join("never.yaml");
    let output = plan(
        &model,
        &tools,
        &[
            "--out",
            path(&out),
            "--max-repairs",
            "1",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        code(&output),
        1,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document = stdout_json(&output);
    assert_eq!(document["valid"], false);
    assert_eq!(document["answers"], 2);
    assert!(
        document["problems"][0]
            .as_str()
            .unwrap()
            .contains("geocoder"),
        "{document}"
    );
    assert_eq!(model.requests().len(), 2);
    assert!(!out.exists(), "nothing is written without a valid plan");
}

#[test]
fn a_fitting_learned_pattern_is_the_plan_and_the_model_server_sees_no_call() {
    let runtime = server_runtime();
    let model = runtime.block_on(ModelServer::start([VALID]));
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let knowledge = dir.path().join("store");
    let patterns = knowledge.join("knowledge/demo");
    std::fs::create_dir_all(&patterns).unwrap();
    std::fs::write(
        patterns.join("patterns.yaml"),
        "patterns:\n  - id: p1\n    name: city_weather\n    trigger: {intent_keywords: [weather, city]}\n    steps:\n      - operation_id: geocode\n        save: [{key: latitude, eval: body.lat}, {key: longitude, eval: body.lon}]\n      - operation_id: forecast\n    success_count: 9\n    failure_count: 0\n",
    )
    .unwrap();
    let output = plan(
        &model,
        &tools,
        &[
            "--input",
            "name",
            "--sut",
            "demo",
            "--knowledge",
            path(&knowledge),
            "--format",
            "json",
        ],
    );
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document = stdout_json(&output);
    assert_eq!(document["source"]["kind"], "knowledge", "{document}");
    assert_eq!(document["source"]["pattern_id"], "p1");
    assert_eq!(document["answers"], 0);
    let steps = &document["workflow"]["steps"];
    assert_eq!(steps[1]["input_mapping"]["latitude"], "geocode.latitude");
    assert_eq!(steps[0]["input_mapping"]["name"], "$input.name");
    assert!(model.requests().is_empty(), "{:?}", model.requests());

    // No model configured at all: the pattern still plans, and nothing is said to be wrong.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["plan", "the weather for a city", "--tools", &tools])
        .args(["--sut", "demo", "--knowledge", path(&knowledge)])
        .env_remove("WAYLINE_LLM_URL")
        .env_remove("WAYLINE_LLM_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(code(&output), 0, "{stderr}");
    assert!(stderr.contains("no model was asked"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn no_model_configured_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["plan", "the weather", "--tools", &tools])
        .env_remove("WAYLINE_LLM_URL")
        .env_remove("WAYLINE_LLM_MODEL")
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--model-url"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

const DECIDING: &str = r#"
id: triage
name: Triage
inputs:
  errors: {default: 42}
steps:
  - id: pick
    kind: decision
    decision_prompt: "Are this many errors an incident?"
    choices: [incident, noise]
    input_mapping: {errors: $input.errors}
  - id: page
    kind: transform
    when: "steps.pick.choice == 'incident'"
    outputs: {action: "'page the on-call'"}
  - id: ignore
    kind: transform
    when: "steps.pick.choice == 'noise'"
    outputs: {action: "'do nothing'"}
edges:
  - {from_step_id: pick, to_step_id: page}
  - {from_step_id: pick, to_step_id: ignore}
"#;

#[test]
fn run_answers_a_decision_step_with_the_model_and_refuses_an_answer_outside_the_choices() {
    let runtime = server_runtime();
    let model = runtime.block_on(ModelServer::start([
        r#"{"choice": "noise", "reason": "42 errors is a normal day"}"#,
        r#"{"choice": "panic", "reason": "!"}"#,
    ]));
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let flow = dir.path().join("triage.yaml");
    std::fs::write(&flow, DECIDING).unwrap();
    let run = |_: u32| {
        wayline(&[
            "run",
            path(&flow),
            "--tools",
            &tools,
            "--model-url",
            model.url(),
            "--model",
            "fake",
            "--format",
            "json",
        ])
    };
    let output = run(1);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let record = stdout_json(&output);
    let result = |id: &str| {
        record["step_results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|result| result["step_id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(result("pick")["output_data"]["choice"], "noise");
    assert_eq!(
        result("pick")["output_data"]["reason"],
        "42 errors is a normal day"
    );
    assert_eq!(result("ignore")["status"], "success");
    assert_eq!(result("page")["status"], "skipped");
    // The question was scoped: the prompt, the choices (in the schema too) and the inputs.
    let asked = &model.requests()[0];
    let question = last_message(asked);
    assert!(
        question.contains("Are this many errors an incident?"),
        "{question}"
    );
    assert!(question.contains("- incident\n- noise"), "{question}");
    assert!(question.contains("42"), "{question}");
    assert_eq!(
        asked["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"],
        serde_json::json!(["incident", "noise"]),
        "{asked}"
    );

    let output = run(2);
    assert_eq!(code(&output), 1);
    let record = stdout_json(&output);
    let pick = record["step_results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["step_id"] == "pick")
        .unwrap();
    assert_eq!(pick["status"], "failed");
    assert!(
        pick["error"].as_str().unwrap().contains("`panic`"),
        "{pick}"
    );
}

#[test]
fn a_saved_workflow_with_a_decision_step_activates_with_a_model_and_not_without() {
    let runtime = server_runtime();
    let model = runtime.block_on(ModelServer::start([
        r#"{"choice": "incident", "reason": "42 is too many"}"#,
    ]));
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let flow = dir.path().join("triage.yaml");
    std::fs::write(&flow, DECIDING).unwrap();
    let store = dir.path().join("store");
    let store = path(&store);
    for args in [
        vec!["workflow", "save", path(&flow), "--store", store],
        vec![
            "workflow", "approve", "triage", "--by", "ada", "--store", store,
        ],
    ] {
        let output = wayline(&args);
        assert_eq!(
            code(&output),
            0,
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // Without a model the validation run cannot start, and says what to pass.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "workflow", "activate", "triage", "--tools", &tools, "--store", store,
        ])
        .env_remove("WAYLINE_LLM_URL")
        .env_remove("WAYLINE_LLM_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(code(&refused), 2, "{stderr}");
    assert!(
        stderr.contains("--model-url") && stderr.contains("decision steps"),
        "{stderr}"
    );
    let activated = wayline(&[
        "workflow",
        "activate",
        "triage",
        "--tools",
        &tools,
        "--store",
        store,
        "--model-url",
        model.url(),
        "--model",
        "fake",
    ]);
    assert_eq!(
        code(&activated),
        0,
        "{}",
        String::from_utf8_lossy(&activated.stderr)
    );
    assert_eq!(model.requests().len(), 1);
}

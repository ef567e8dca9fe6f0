//! `wayline test` over `testdata/api-tests` against a loopback users API: passing workflows,
//! every kind of failed expectation, an expected 404, a file that does not load; the line per
//! workflow, the summary, the exit code, and each report read back by a parser of its format
//! (JUnit XML, TAP, JSON, GitHub annotations, HAR 1.2).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wayline_executor::testing::{MockServer, Reply};
use wayline_testkit::testdata;

use crate::text;

const TOKEN: &str = "tok-users-9f8e7d";

/// The users API: two users, 404 for an unknown one, 422 for a nameless create, and a slow
/// answer for `/users/slow`.
async fn users_api() -> MockServer {
    MockServer::start(|request| {
        // As a proxy, it is sent the absolute form (`http://host/users`): the path is the same.
        let path = match request.path().split_once("://") {
            Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]).to_owned(),
            None => request.path().to_owned(),
        };
        match (request.method.as_str(), path.as_str()) {
            ("GET", "/users") => Reply::json(
                200,
                json!([{"id": 1, "name": "Ada"}, {"id": 2, "name": "Alan"}]),
            ),
            ("GET", "/users/1") => Reply::json(
                200,
                json!({"id": 1, "name": "Ada", "email": "ada@example.org"}),
            ),
            // Alan's record breaks the tool's schema: a string id, no name.
            ("GET", "/users/2") => Reply::json(200, json!({"id": "2", "name": null})),
            ("GET", "/users/slow") => {
                Reply::json(200, json!({"id": 3})).latency(Duration::from_millis(200))
            }
            ("GET", _) => Reply::json(404, json!({"detail": "user not found"})),
            ("POST", "/users") => {
                let name = request
                    .json()
                    .and_then(|body| body["name"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                if name.is_empty() {
                    Reply::json(422, json!({"detail": "name is required"}))
                } else {
                    // An API that echoes the caller's credential: it must not reach a report.
                    let seen = request
                        .header("authorization")
                        .unwrap_or_default()
                        .to_owned();
                    Reply::json(201, json!({"id": 3, "name": name, "seen": seen}))
                }
            }
            _ => Reply::status(405),
        }
    })
    .await
    .unwrap()
}

fn configs(server: &MockServer, dir: &tempfile::TempDir) -> PathBuf {
    let url = server.url("");
    let text = format!(
        "list_users: {{base_url: \"{url}\"}}\nget_user: {{base_url: \"{url}\"}}\ncreate_user: {{base_url: \"{url}\", auth_token: {TOKEN}}}\n"
    );
    let path = dir.path().join("configs.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn wayline(args: Vec<String>, stdin: Option<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wayline"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the wayline binary runs");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            std::io::Write::write_all(&mut input, text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

/// Jenkins' JUnit schema, as the npm package `junit-processor` ships it (`.ci/run` installs
/// it into `.ci/node`, and `xmllint`), when both are here; says so when they are not.
fn jenkins_junit_schema() -> Option<PathBuf> {
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.ci/node/node_modules/junit-processor/schemas/jenkins-junit.xsd");
    let xmllint = Command::new("xmllint").arg("--version").output().is_ok();
    if schema.is_file() && xmllint {
        Some(schema)
    } else {
        eprintln!(
            "skipped: checking the JUnit report against Jenkins' schema needs xmllint and the npm package junit-processor in .ci/node (.ci/run installs both)"
        );
        None
    }
}

fn base_args(config: &std::path::Path) -> Vec<String> {
    vec![
        "test".into(),
        "--tools".into(),
        testdata("api-tests/tools").display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_directory_of_workflows_is_tested_and_reported_in_every_format() {
    let server = users_api().await;
    let dir = tempfile::tempdir().unwrap();
    let config = configs(&server, &dir);
    let report = |name: &str| dir.path().join(name);
    let mut args = base_args(&config);
    args.push(testdata("api-tests/workflows").display().to_string());
    for (kind, file) in [
        ("junit", "junit.xml"),
        ("tap", "report.tap"),
        ("json", "report.json"),
    ] {
        args.push("--report".into());
        args.push(format!("{kind}={}", report(file).display()));
    }
    args.extend(["--report".into(), "github".into(), "--har".into()]);
    args.push(report("exchanges.har").display().to_string());
    let output = wayline(args, None).await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&output.stderr)
    );

    // A line per workflow, and the summary.
    let line = |start: &str, holding: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with(start) && line.contains(holding))
            .unwrap_or_else(|| panic!("no line {start:?} … {holding:?} in\n{stdout}"))
            .to_owned()
    };
    line("PASS  ", "users.yaml (users, 3 steps");
    line("PASS  ", "not_found.yaml (not_found, 2 steps");
    line("FAIL  ", "failing.yaml (failing, 11 steps");
    assert!(line("ERROR ", "broken.yaml").contains("unknown field `stepz`"));
    assert!(
        stdout.contains("5 workflows: 2 passed, 2 failed, 1 errored"),
        "{stdout}"
    );

    // JUnit: a suite per workflow, a case per step, each failed expectation in its failure.
    let xml = std::fs::read_to_string(report("junit.xml")).unwrap();
    let document = roxmltree::Document::parse(&xml).expect("the JUnit report is well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (
            root.attribute("tests"),
            root.attribute("failures"),
            root.attribute("errors")
        ),
        (Some("18"), Some("12"), Some("1"))
    );
    let suites: Vec<_> = root
        .children()
        .filter(|node| node.has_tag_name("testsuite"))
        .collect();
    let names: Vec<&str> = suites
        .iter()
        .filter_map(|suite| suite.attribute("name"))
        .collect();
    assert_eq!(
        names,
        ["broken", "failing", "schema", "not_found", "users"],
        "in the order found"
    );
    let failing = suites[1];
    for case in failing
        .children()
        .filter(|node| node.has_tag_name("testcase"))
    {
        let failure = case
            .children()
            .find(|node| node.has_tag_name("failure"))
            .unwrap_or_else(|| panic!("step {:?} has no failure", case.attribute("name")));
        assert!(
            failure
                .attribute("message")
                .unwrap()
                .starts_with("expectation failed:")
        );
        assert_eq!(failure.attribute("type"), Some("expectation"));
    }
    let failure_of = |step: &str| {
        let case = failing
            .children()
            .find(|node| node.attribute("name") == Some(step))
            .unwrap();
        case.children()
            .find(|node| node.has_tag_name("failure"))
            .and_then(|node| node.text())
            .unwrap()
            .to_owned()
    };
    for (step, says) in [
        ("status", "FAILED status in: expected 201, got 200"),
        (
            "header",
            "FAILED header content-type equals: expected \"text/html\"",
        ),
        (
            "equals",
            "FAILED body name equals: expected \"Bob\", got \"Ada\"",
        ),
        (
            "contains",
            "FAILED body email contains: expected \"@elsewhere\"",
        ),
        ("matches", "FAILED body email matches: expected \"^x\""),
        (
            "exists",
            "FAILED body $.phone exists: expected true, got nothing",
        ),
        ("type", "FAILED body id type: expected string, got integer"),
        ("length", "FAILED body $ length: expected 5, got 2"),
        ("compare", "FAILED body id gt: expected 10.0, got 1"),
        ("duration", "FAILED duration_ms at most: expected 50, got"),
        ("cel", "FAILED assert `body.name == 'Bob'` holds"),
    ] {
        assert!(
            failure_of(step).contains(says),
            "{step}: {}",
            failure_of(step)
        );
    }
    assert!(failure_of("status").contains("status in: expected 201, got 200"));
    let broken = suites[0];
    assert!(broken.descendants().any(|node| node.has_tag_name("error")));
    // Valid against Jenkins' JUnit schema, as xmllint reads it.
    if let Some(schema) = jenkins_junit_schema() {
        let checked = Command::new("xmllint")
            .args(["--noout", "--schema"])
            .arg(&schema)
            .arg(report("junit.xml"))
            .output()
            .unwrap();
        assert!(checked.status.success(), "{}", text(&checked.stderr));
    }

    // The schema violations, each at its JSON Pointer.
    let schema = suites[2];
    let violations = schema
        .descendants()
        .find(|node| node.has_tag_name("failure"))
        .and_then(|node| node.text())
        .unwrap();
    assert!(
        violations.contains("FAILED body /id schema"),
        "{violations}"
    );
    assert!(
        violations.contains("FAILED body /name schema"),
        "{violations}"
    );
    assert!(
        violations.contains("(at /properties/id/type)"),
        "{violations}"
    );

    // TAP: a test point per workflow.
    let tap = std::fs::read_to_string(report("report.tap")).unwrap();
    assert!(tap.starts_with("TAP version 13\n1..5\n"), "{tap}");
    assert_eq!(
        tap.lines()
            .filter(|line| line.starts_with("not ok"))
            .count(),
        3
    );

    // JSON: the counts and each run record.
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report("report.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["passed"], 2);
    let users = json["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == "users")
        .unwrap();
    assert_eq!(
        users["run"]["step_results"][1]["assertions"][0]["subject"],
        "status"
    );

    // GitHub annotations, at the failed step's line.
    let annotations: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("::error "))
        .collect();
    assert_eq!(annotations.len(), 13, "{stdout}");
    assert!(
        annotations
            .iter()
            .any(|line| line.contains("failing.yaml,line=5,title=wayline%3A failing step status")),
        "{annotations:#?}"
    );

    // HAR 1.2: every exchange, parsed by a HAR library; no credential anywhere.
    let har_text = std::fs::read_to_string(report("exchanges.har")).unwrap();
    let archive = har::from_str(&har_text).expect("the HAR parses");
    assert!(matches!(archive.log, har::Spec::V1_2(_)), "HAR 1.2");
    let har: Value = serde_json::from_str(&har_text).unwrap();
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 11 + 1 + 2 + 3, "one per request");
    let create = entries
        .iter()
        .find(|entry| entry["request"]["method"] == "POST" && entry["response"]["status"] == 201)
        .unwrap();
    assert_eq!(create["request"]["postData"]["text"], r#"{"name":"Grace"}"#);
    for text in [&har_text, &xml, &tap, &stdout] {
        assert!(!text.contains(TOKEN), "a credential leaked");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn filters_stdin_fail_fast_and_exit_codes() {
    let server = users_api().await;
    let dir = tempfile::tempdir().unwrap();
    let config = configs(&server, &dir);
    let workflows = testdata("api-tests/workflows").display().to_string();

    // Only what passes: exit 0.
    let mut args = base_args(&config);
    args.extend([
        workflows.clone(),
        "--filter".into(),
        "users".into(),
        "--format".into(),
        "json".into(),
    ]);
    let output = wayline(args, None).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["summary"]["workflows"], 1);

    // A workflow on standard input, with an input given on the command line.
    let mut args = base_args(&config);
    args.extend(["-".into(), "--input".into(), "id=999".into()]);
    let stdin = "id: piped\nname: Piped\ninputs: {id: {}}\nsteps:\n  - id: get\n    tool_id: get_user\n    input_mapping: {id: $input.id}\n    expect: {status: 404}\n";
    let output = wayline(args, Some(stdin.into())).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(text(&output.stdout).contains("PASS  - (piped"));

    // --fail-fast, one at a time: after the first failure the rest are skipped.
    let mut args = base_args(&config);
    args.extend([
        workflows.clone(),
        "--fail-fast".into(),
        "--jobs".into(),
        "1".into(),
    ]);
    let output = wayline(args, None).await;
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.starts_with("ERROR "),
        "the first found did not load: {stdout}"
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|line| line.starts_with("SKIP "))
            .count(),
        4,
        "{stdout}"
    );

    // Usage mistakes: exit 2.
    for bad in [
        vec!["nowhere/at/all.yaml".to_owned()],
        vec![workflows.clone(), "--report".into(), "junit".into()],
        vec![
            workflows.clone(),
            "--filter".into(),
            "no such workflow".into(),
        ],
        vec![workflows, "--jobs".into(), "0".into()],
    ] {
        let mut args = base_args(&config);
        args.extend(bad.clone());
        let output = wayline(args, None).await;
        assert_eq!(
            output.status.code(),
            Some(2),
            "{bad:?}: {}",
            text(&output.stderr)
        );
    }
}

/// Bay's published OpenAPI spec, imported as tools, checks every answer of `wayline sandbox
/// serve`'s server (sandboxes, exec, files, history, cargos, GC, the skill lifecycle) against
/// the schema of its status.
#[test]
fn the_sandbox_server_answers_as_bays_published_schemas_say() {
    let Some(spec) = wayline_testkit::fixture("bay/openapi.json") else {
        return;
    };
    let runtime = crate::server_runtime();
    let dir = tempfile::tempdir().unwrap();
    let provider = wayline_sandbox::LocalProvider::open(
        wayline_sandbox::LocalConfig::new(dir.path().join("data"))
            .isolation(wayline_sandbox::local::IsolationMode::None),
    )
    .unwrap();
    let server = runtime
        .block_on(wayline_sandbox::server::BayServer::loopback(
            std::sync::Arc::new(provider),
            wayline_sandbox::server::ServeOptions::default().anonymous(),
        ))
        .unwrap();
    let tools = dir.path().join("tools");
    let imported = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["import", "openapi"])
        .arg(&spec)
        .arg("--out")
        .arg(&tools)
        .args(["--base-url", &server.url()])
        .output()
        .unwrap();
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let output = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .arg("test")
        .arg(testdata("bay"))
        .arg("--tools")
        .arg(&tools)
        .args(["--check-schema", "--format", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}\n{}", text(&output.stdout), text(&output.stderr)));
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    for workflow in report["workflows"].as_array().unwrap() {
        let checked = workflow["run"]["step_results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|step| step["assertions"].as_array().cloned().unwrap_or_default())
            .filter(|assertion| assertion["check"] == "schema")
            .count();
        assert!(
            checked >= 10,
            "{}: only {checked} answers checked",
            workflow["id"]
        );
    }
}

/// `--env-file` fills `${VAR}` in the tool configs (a later file wins), `auth_token_command`
/// fetches a token; neither value reaches a report or the terminal.
#[tokio::test(flavor = "multi_thread")]
async fn env_files_and_token_commands_feed_configs_and_stay_masked() {
    let server = users_api().await;
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.env");
    std::fs::write(
        &first,
        format!(
            "# the API\nUSERS_URL={}\nAPI_TOKEN=tok-first-file-000\n",
            server.url("")
        ),
    )
    .unwrap();
    let second = dir.path().join("second.env");
    std::fs::write(&second, "API_TOKEN=\"tok-second-file-111\"\n").unwrap();
    let configs = dir.path().join("configs.yaml");
    std::fs::write(
        &configs,
        "get_user: {base_url: \"${USERS_URL}\"}\ncreate_user: {base_url: \"${USERS_URL}\", auth_token: \"${API_TOKEN}\"}\nlist_users: {base_url: \"${USERS_URL}\"}\n",
    )
    .unwrap();
    let workflow = dir.path().join("create.yaml");
    std::fs::write(
        &workflow,
        "id: create\nname: Create\nsteps:\n  - id: make\n    tool_id: create_user\n    input_mapping: {name: Grace}\n    expect: {status: 201}\n",
    )
    .unwrap();
    let har = dir.path().join("run.har");
    let args: Vec<String> = vec![
        "test".into(),
        workflow.display().to_string(),
        "--tools".into(),
        testdata("api-tests/tools").display().to_string(),
        "--config".into(),
        configs.display().to_string(),
        "--env-file".into(),
        first.display().to_string(),
        "--env-file".into(),
        second.display().to_string(),
        "--format".into(),
        "json".into(),
        "--har".into(),
        har.display().to_string(),
    ];
    let output = wayline(args, None).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let sent: Vec<String> = server
        .requests()
        .iter()
        .filter_map(|request| request.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(sent, ["Bearer tok-second-file-111"], "the later file wins");
    let archive = std::fs::read_to_string(&har).unwrap();
    for shown in [text(&output.stdout), text(&output.stderr), archive] {
        assert!(!shown.contains("tok-second-file-111"), "{shown}");
        assert!(!shown.contains("tok-first-file-000"), "{shown}");
    }

    // A token command instead: run once, its token sent, never shown.
    std::fs::write(
        &configs,
        format!(
            "create_user: {{base_url: \"{}\", auth_token_command: \"sh -c 'printf tok-from-command-222'\"}}\n",
            server.url("")
        ),
    )
    .unwrap();
    let args: Vec<String> = vec![
        "test".into(),
        workflow.display().to_string(),
        "--tools".into(),
        testdata("api-tests/tools").display().to_string(),
        "--config".into(),
        configs.display().to_string(),
        "--format".into(),
        "json".into(),
    ];
    let output = wayline(args, None).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        server
            .requests()
            .iter()
            .any(|request| request.header("authorization") == Some("Bearer tok-from-command-222"))
    );
    assert!(!text(&output.stdout).contains("tok-from-command-222"));

    // An env file that is not one: exit 2, naming the file but no value.
    std::fs::write(&second, "API_TOKEN 'unterminated-secret-333\n").unwrap();
    let args: Vec<String> = vec![
        "test".into(),
        workflow.display().to_string(),
        "--tools".into(),
        testdata("api-tests/tools").display().to_string(),
        "--env-file".into(),
        second.display().to_string(),
    ];
    let output = wayline(args, None).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("second.env"), "{stderr}");
    assert!(!stderr.contains("unterminated-secret-333"), "{stderr}");
}

/// `--proxy` carries every call; `--insecure` is said aloud; a CA file that is not one stops
/// the command before anything is sent.
#[tokio::test(flavor = "multi_thread")]
async fn network_flags_reach_the_transport() {
    // The proxy answers for the host it is asked about (a name that resolves nowhere).
    let proxy = users_api().await;
    let dir = tempfile::tempdir().unwrap();
    let configs = dir.path().join("configs.yaml");
    std::fs::write(
        &configs,
        "get_user: {base_url: \"http://users.example.invalid\"}\n",
    )
    .unwrap();
    let workflow = dir.path().join("get.yaml");
    std::fs::write(
        &workflow,
        "id: get\nname: Get\nsteps:\n  - id: ada\n    tool_id: get_user\n    input_mapping: {id: 1}\n    expect: {body: {name: Ada}}\n",
    )
    .unwrap();
    let base = |extra: &[&str]| {
        let mut args: Vec<String> = vec![
            "test".into(),
            workflow.display().to_string(),
            "--tools".into(),
            testdata("api-tests/tools").display().to_string(),
            "--config".into(),
            configs.display().to_string(),
        ];
        args.extend(extra.iter().map(|part| (*part).to_owned()));
        args
    };
    let output = wayline(base(&["--proxy", &proxy.url(""), "--insecure"]), None).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("warning: --insecure"));
    assert_eq!(
        proxy.requests()[0].path(),
        "http://users.example.invalid/users/1"
    );
    let not_pem = dir.path().join("ca.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    let output = wayline(base(&["--cacert", &not_pem.display().to_string()]), None).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("no PEM certificate"),
        "{}",
        text(&output.stderr)
    );
    let output = wayline(base(&["--key", "k.pem"]), None).await;
    assert_eq!(output.status.code(), Some(2), "--key needs --cert");
}

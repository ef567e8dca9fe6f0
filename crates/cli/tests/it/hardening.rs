//! Hostile input, through the binary as a user runs it (issue 31): each reproduction is made
//! here, and the command runs with its memory limited (RLIMIT_DATA) and a time limit, so a
//! regression fails fast instead of exhausting the machine.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::{code, text};

/// `wayline args` in `dir`, its data segment limited to `megabytes` (bash's `ulimit -d`) and
/// killed after `seconds`. Panics on a timeout, naming the command.
pub(crate) fn bounded(dir: &Path, args: &[&str], megabytes: u64, seconds: u64) -> Output {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -d {}; exec \"$0\" \"$@\"",
            megabytes * 1024
        ))
        .arg(env!("CARGO_BIN_EXE_wayline"))
        .args(args)
        .current_dir(dir)
        .env("WAYLINE_CANARY", CANARY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(seconds) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`wayline {}` ran for more than {seconds} s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A value in every bounded command's environment: output holding it has echoed the process
/// environment.
pub(crate) const CANARY: &str = "canary-1d8f3b6e";

/// An OpenAPI description of one operation, on a port where nothing listens.
pub(crate) const UNREACHABLE_API: &str = "openapi: 3.1.0
info: {title: T, version: '1'}
servers: [{url: 'http://127.0.0.1:9'}]
paths:
  /items:
    get:
      operationId: listItems
      parameters: [{name: status, in: query, schema: {type: string}}]
      responses: {'200': {description: ok}}
";

/// Item 1: input components referring to each other twice per level (600 bytes) once made
/// `run` use 19 GB; `validate` passed them. Both now answer at once in little memory.
#[test]
fn input_components_referring_to_each_other_twice_per_level() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), UNREACHABLE_API).unwrap();
    std::fs::write(
        dir.path().join("bomb.arazzo.yaml"),
        "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: w
    inputs: {$ref: '#/components/inputs/a'}
    steps: [{stepId: s, operationId: listItems}]
components:
  inputs:
    a: {type: object, properties: {x: {$ref: '#/components/inputs/b'}, y: {$ref: '#/components/inputs/b'}}}
    b: {type: object, properties: {x: {$ref: '#/components/inputs/a'}, y: {$ref: '#/components/inputs/a'}}}
",
    )
    .unwrap();
    let validated = bounded(dir.path(), &["validate", "bomb.arazzo.yaml"], 512, 60);
    assert_eq!(code(&validated), 0, "{}", text(&validated.stderr));
    let ran = bounded(
        dir.path(),
        &[
            "run",
            "bomb.arazzo.yaml",
            "--input",
            "x:={\"y\": {}}",
            "--format",
            "json",
        ],
        512,
        60,
    );
    // The call itself fails (nothing listens): what matters is that the inputs were checked.
    assert_eq!(code(&ran), 1, "{}", text(&ran.stderr));
    let stdout = text(&ran.stdout);
    assert!(stdout.contains("\"step_id\": \"s\""), "{stdout}");
}

/// Items 2 and 10: source descriptions that lead outside the document's directory, to the
/// kernel's files or to what never ends, are refused (by `validate` and `run` alike, in text
/// and JSON), quickly, and nothing of them is shown.
#[test]
fn sources_outside_the_document_or_not_regular_files_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("api.yaml"), UNREACHABLE_API).unwrap();
    std::fs::write(dir.path().join("outside.yaml"), UNREACHABLE_API).unwrap();
    let fifo = docs.join("fifo.yaml");
    let has_fifo = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|status| status.success());
    let mut urls = vec![
        "file:///proc/self/environ",
        "../../../../../../../../proc/self/environ",
        "../outside.yaml",
        "file:///dev/zero",
    ];
    if has_fifo {
        urls.push("./fifo.yaml");
    }
    for url in urls {
        std::fs::write(
            docs.join("w.arazzo.yaml"),
            format!(
                "arazzo: 1.1.0
info: {{title: T, version: '1'}}
sourceDescriptions: [{{name: api, url: '{url}', type: openapi}}]
workflows:
  - workflowId: w
    steps: [{{stepId: s, operationId: listItems}}]
"
            ),
        )
        .unwrap();
        for args in [
            vec!["validate", "docs/w.arazzo.yaml"],
            vec!["validate", "docs/w.arazzo.yaml", "--format", "json"],
            vec!["run", "docs/w.arazzo.yaml"],
            vec!["run", "docs/w.arazzo.yaml", "--format", "json"],
        ] {
            let output = bounded(dir.path(), &args, 512, 30);
            let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
            assert_ne!(code(&output), 0, "{url}: {args:?} ran: {stdout}{stderr}");
            assert!(
                stdout.contains("refused_source")
                    || stderr.contains("refused_source")
                    || stdout.contains("is not read"),
                "{url}: {args:?}: {stdout}{stderr}"
            );
            assert!(
                !stdout.contains(CANARY) && !stderr.contains(CANARY),
                "{url}: {stdout}{stderr}"
            );
        }
    }
    // Named on the command line, a file outside is the user's choice; allowed, so is its
    // directory.
    std::fs::write(
        docs.join("w.arazzo.yaml"),
        "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: '../outside.yaml', type: openapi}]
workflows:
  - workflowId: w
    steps: [{stepId: s, operationId: listItems}]
",
    )
    .unwrap();
    for extra in [["--source", "api=outside.yaml"], ["--allow-read", "."]] {
        let mut args = vec!["validate", "docs/w.arazzo.yaml"];
        args.extend(extra);
        let output = bounded(dir.path(), &args, 512, 30);
        assert_eq!(
            code(&output),
            0,
            "{args:?}: {}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    }
}

/// Item 2: `import openapi` follows no `$ref` out of the spec's directory, and quotes nothing
/// of a file a `$ref` reaches that does not parse.
#[test]
fn import_openapi_keeps_refs_beside_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    for (reference, expected) in [
        ("../../../../../../../../proc/self/environ#/x", "outside"),
        ("./broken.yaml#/x", "broken.yaml"),
    ] {
        std::fs::write(dir.path().join("broken.yaml"), format!("x: [{CANARY}\n")).unwrap();
        std::fs::write(
            dir.path().join("openapi.json"),
            format!(
                r#"{{"openapi": "3.0.0", "info": {{"title": "t", "version": "1"}}, "paths": {{"/a": {{"get": {{"operationId": "a", "responses": {{"200": {{"description": "x", "content": {{"application/json": {{"schema": {{"$ref": "{reference}"}}}}}}}}}}}}}}}}}}"#
            ),
        )
        .unwrap();
        for format in ["text", "json"] {
            let output = bounded(
                dir.path(),
                &[
                    "import",
                    "openapi",
                    "openapi.json",
                    "--out",
                    "tools",
                    "--format",
                    format,
                ],
                512,
                30,
            );
            let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
            assert_eq!(code(&output), 2, "{reference}: {stdout}{stderr}");
            assert!(
                stderr.contains(expected) || stdout.contains(expected),
                "{stdout}{stderr}"
            );
            assert!(
                !stdout.contains(CANARY) && !stderr.contains(CANARY),
                "{stdout}{stderr}"
            );
        }
    }
}

/// An API on loopback that echoes the request's `Authorization` in its body and sets a session
/// cookie.
fn echoing_api(runtime: &tokio::runtime::Runtime) -> wayline_executor::testing::MockServer {
    use wayline_executor::testing::{MockServer, Reply};
    runtime
        .block_on(MockServer::start(|request| {
            let sent = request.header("authorization").unwrap_or("").to_owned();
            Reply::json(200, serde_json::json!({"you_sent": sent}))
                .header("Set-Cookie", "session=sess-0a9c77f2; Path=/; HttpOnly")
        }))
        .unwrap()
}

/// Items 11 and 22: a token from `auth_token_command`, echoed by the API, is masked in the HTTP
/// archive `wayline test --har` writes as in every other report; a session cookie is masked in
/// what `tools try` prints, in text and JSON.
#[test]
fn tokens_from_commands_and_session_cookies_are_masked_in_every_report() {
    let runtime = crate::server_runtime();
    let server = echoing_api(&runtime);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/me.yaml"),
        format!(
            "id: me\nname: Me\nbase_url: {}\nmethod: GET\npath: /me\nauth: {{type: bearer}}\n",
            server.url("")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("configs.yaml"),
        "me: {auth_token_command: \"printf tok-from-cmd-4e1d\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("w.yaml"),
        "id: w\nname: W\nsteps:\n  - {id: me, tool_id: me, expect: {status: 200}}\n",
    )
    .unwrap();
    let tested = bounded(
        dir.path(),
        &[
            "test",
            "w.yaml",
            "--tools",
            "tools",
            "--config",
            "configs.yaml",
            "--har",
            "x.har",
            "--report",
            "json=r.json",
            "--report",
            "junit=j.xml",
        ],
        512,
        60,
    );
    assert_eq!(
        code(&tested),
        0,
        "{}{}",
        text(&tested.stdout),
        text(&tested.stderr)
    );
    for report in ["x.har", "r.json", "j.xml"] {
        let written = std::fs::read_to_string(dir.path().join(report)).unwrap();
        assert!(
            !written.contains("tok-from-cmd-4e1d"),
            "{report}: {written}"
        );
        assert!(!written.contains("sess-0a9c77f2"), "{report}: {written}");
    }
    for format in ["text", "json"] {
        let tried = bounded(
            dir.path(),
            &[
                "tools",
                "try",
                "me",
                "--tools",
                "tools",
                "--config",
                "configs.yaml",
                "--format",
                format,
            ],
            512,
            60,
        );
        let shown = text(&tried.stdout);
        assert_eq!(code(&tried), 0, "{shown}{}", text(&tried.stderr));
        assert!(shown.contains("you_sent"), "{shown}");
        assert!(!shown.contains("tok-from-cmd-4e1d"), "{format}: {shown}");
        assert!(!shown.contains("sess-0a9c77f2"), "{format}: {shown}");
    }
}

/// Item 17: a large JSON response costs one parsed copy, not four (27 MB took 1.18 GB for one
/// Arazzo step, 1.78 GB with a `$..*` criterion). An 8 MB answer in each shape, under a data
/// limit of 300 MB that the copies before passed.
#[test]
fn a_large_response_is_parsed_once() {
    use wayline_executor::testing::{MockServer, Reply};
    let items: Vec<serde_json::Value> = (0..60_000)
        .map(|i| serde_json::json!({"id": i, "name": format!("item-{i}"), "tags": ["a", "b", "c"], "price": i, "nested": {"x": i, "y": "zzzzzzzzzzzzzzzzzzzz"}}))
        .collect();
    let body = serde_json::json!({"data": items});
    let runtime = crate::server_runtime();
    let server = runtime
        .block_on(MockServer::start(move |_| Reply::json(200, body.clone())))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("api.yaml"),
        format!(
            "openapi: 3.1.0\ninfo: {{title: T, version: '1'}}\nservers: [{{url: '{}'}}]\n\
             paths:\n  /big:\n    get:\n      operationId: big\n      responses: {{'200': {{description: ok}}}}\n",
            server.url("")
        ),
    )
    .unwrap();
    for (name, criterion) in [
        ("status", "{condition: $statusCode == 200}"),
        (
            "jsonpath",
            "{context: $response.body, condition: '$..*', type: jsonpath}",
        ),
    ] {
        std::fs::write(
            dir.path().join(format!("{name}.arazzo.yaml")),
            format!(
                "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\n\
                 sourceDescriptions: [{{name: api, url: ./api.yaml}}]\n\
                 workflows:\n  - workflowId: w\n    steps:\n      - stepId: s\n        operationId: big\n        successCriteria: [{criterion}]\n"
            ),
        )
        .unwrap();
        let file = format!("{name}.arazzo.yaml");
        let ran = bounded(dir.path(), &["run", &file], 300, 120);
        assert_eq!(
            code(&ran),
            0,
            "{name}: {}{}",
            text(&ran.stdout),
            text(&ran.stderr)
        );
    }
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/big.yaml"),
        format!(
            "id: big\nname: Big\nbase_url: {}\nmethod: GET\npath: /big\n",
            server.url("")
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("w.yaml"),
        "id: w\nname: W\nsteps:\n  - {id: s, tool_id: big}\n",
    )
    .unwrap();
    let ran = bounded(dir.path(), &["run", "w.yaml", "--tools", "tools"], 300, 120);
    assert_eq!(code(&ran), 0, "{}{}", text(&ran.stdout), text(&ran.stderr));
}

/// Item 9: XPath over a deeply nested answer is refused at once (200,000 levels took 38 s), and
/// a slow evaluation ends with the run's deadline (it used to run on and report success).
#[test]
fn xpath_evaluations_are_bounded_and_end_with_the_run() {
    use wayline_executor::testing::{MockServer, Reply};
    let deep = format!("{}{}", "<a>".repeat(200_000), "</a>".repeat(200_000));
    let wide = format!(
        "<r>{}</r>",
        (0..20_000)
            .map(|i| format!("<i>{i}</i>"))
            .collect::<String>()
    );
    let runtime = crate::server_runtime();
    let server = runtime
        .block_on(MockServer::start(move |request| {
            let body = if request.path() == "/deep" {
                deep.clone()
            } else {
                wide.clone()
            };
            Reply::text(200, body).header("Content-Type", "application/xml")
        }))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("api.yaml"),
        format!(
            "openapi: 3.1.0\ninfo: {{title: T, version: '1'}}\nservers: [{{url: '{}'}}]\npaths:\n\
             \x20 /deep:\n    get:\n      operationId: deep\n      responses: {{'200': {{description: ok}}}}\n\
             \x20 /wide:\n    get:\n      operationId: wide\n      responses: {{'200': {{description: ok}}}}\n",
            server.url("")
        ),
    )
    .unwrap();
    for (name, operation, condition) in [
        ("deep", "deep", "/a"),
        // Every element compared with every other: 400 million comparisons.
        ("slow", "wide", "count(//i[. = //i]) > 0"),
    ] {
        std::fs::write(
            dir.path().join(format!("{name}.arazzo.yaml")),
            format!(
                "arazzo: 1.1.0\ninfo: {{title: T, version: '1'}}\n\
                 sourceDescriptions: [{{name: api, url: ./api.yaml}}]\n\
                 workflows:\n  - workflowId: w\n    steps:\n      - stepId: s\n        operationId: {operation}\n\
                 \x20       successCriteria: [{{context: $response.body, condition: '{condition}', type: xpath}}]\n"
            ),
        )
        .unwrap();
        let file = format!("{name}.arazzo.yaml");
        let started = Instant::now();
        let ran = bounded(
            dir.path(),
            &["run", &file, "--deadline-ms", "1500"],
            512,
            60,
        );
        let (stdout, stderr) = (text(&ran.stdout), text(&ran.stderr));
        assert_ne!(code(&ran), 0, "{name}: {stdout}{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{name}: {:?}",
            started.elapsed()
        );
        let said = format!("{stdout}{stderr}");
        if name == "slow" {
            assert_eq!(code(&ran), 124, "the run ends timed out: {said}");
        }
        assert!(
            said.contains("deeper than 256")
                || said.contains("given up")
                || said.contains("not evaluated")
                || said.contains("deadline"),
            "{name}: {said}"
        );
    }
}

/// Item 4: `sandbox serve` requires a token unless told otherwise, and never serves anyone
/// without one beyond loopback.
#[test]
fn the_sandbox_server_needs_a_token_or_a_choice() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let without = bounded(
        dir.path(),
        &[
            "sandbox",
            "serve",
            "--port",
            "0",
            "--isolation",
            "none",
            "--data-dir",
            data,
        ],
        512,
        30,
    );
    assert_eq!(code(&without), 2, "{}", text(&without.stderr));
    assert!(
        text(&without.stderr).contains("BAY_API_KEY"),
        "{}",
        text(&without.stderr)
    );
    let everywhere = bounded(
        dir.path(),
        &[
            "sandbox",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--isolation",
            "none",
            "--no-auth",
            "--data-dir",
            data,
        ],
        512,
        30,
    );
    assert_eq!(code(&everywhere), 2, "{}", text(&everywhere.stderr));
    assert!(
        text(&everywhere.stderr).contains("loopback"),
        "{}",
        text(&everywhere.stderr)
    );
}

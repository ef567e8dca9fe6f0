//! `wayline explore --auto` against a real REST server nobody on the project wrote:
//! json-server 0.17.4 (npm; CRUD over a JSON file, numeric ids), started on loopback with an
//! OpenAPI description the test writes. Each target is checked by the requests json-server
//! logged and the data it holds afterwards; a rerun with the same knowledge asks no more
//! questions than the first run.
//!
//! `.ci/run` installs json-server into `.ci/node`; elsewhere set `WAYLINE_JSON_SERVER` to its
//! executable. Without it (or without Node.js) the test says so in one line and passes.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::path;

/// The json-server executable, if it can run here.
fn json_server() -> Option<PathBuf> {
    wayline_testkit::node_tool(
        "json-server",
        "WAYLINE_JSON_SERVER",
        "the json-server tests",
    )
}

/// A json-server on loopback over a fresh database with an empty `posts` collection.
struct Server {
    child: Child,
    base: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(executable: &Path) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.json");
        std::fs::write(&db, r#"{"posts": []}"#).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = dir.path().join("requests.log");
        let child = Command::new(executable)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg(&db)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Real time: json-server is another process, and Node takes a moment to start.
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "json-server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        }
    }

    /// The requests json-server logged, as `METHOD /path STATUS`, once there are at least
    /// `expected` (it logs a request as its answer goes out, so the last line may come a moment
    /// after the client has it) or 5 seconds have passed.
    fn requests(&self, expected: usize) -> Vec<String> {
        let started = Instant::now();
        loop {
            let seen = self.logged();
            if seen.len() >= expected || started.elapsed() > Duration::from_secs(5) {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn logged(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .map(super::services::strip_colours)
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let (method, target, status) = (words.next()?, words.next()?, words.next()?);
                ["GET", "POST", "PUT", "PATCH", "DELETE"]
                    .contains(&method)
                    .then(|| format!("{method} {target} {status}"))
            })
            .collect()
    }

    /// The posts json-server holds.
    fn posts(&self) -> Value {
        let runtime = super::server_runtime();
        let transport = wayline_executor::ReqwestTransport::new().unwrap();
        let request = wayline_core::HttpRequest::new("GET", format!("{}/posts", self.base));
        let response = runtime
            .block_on(wayline_core::Transport::send(&transport, request))
            .unwrap();
        serde_json::from_slice(&response.body).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The OpenAPI description of json-server's `posts`, written by the test: what json-server
/// does, as a user would describe it.
fn spec(base: &str) -> Value {
    let post = json!({
        "type": "object",
        "required": ["title"],
        "properties": {
            "id": {"type": "integer", "readOnly": true},
            "title": {"type": "string"},
            "body": {"type": "string"}
        }
    });
    let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}]);
    let body = json!({"required": true, "content": {"application/json": {"schema": post}}});
    let one = |status: &str| json!({status: {"description": "the post", "content": {"application/json": {"schema": post}}}});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "json-server posts", "version": "0.17.4"},
        "servers": [{"url": base}],
        "paths": {
            "/posts": {
                "get": {"operationId": "listPosts", "summary": "List posts", "responses": {"200": {"description": "the posts", "content": {"application/json": {"schema": {"type": "array", "items": post}}}}}},
                "post": {"operationId": "createPost", "summary": "Create a post", "requestBody": body, "responses": one("201")}
            },
            "/posts/{id}": {
                "get": {"operationId": "getPost", "summary": "Read a post", "parameters": id, "responses": one("200")},
                "put": {"operationId": "replacePost", "summary": "Update a post", "parameters": id, "requestBody": body, "responses": one("200")},
                "delete": {"operationId": "deletePost", "summary": "Delete a post", "parameters": id, "responses": {"200": {"description": "deleted"}}}
            }
        }
    })
}

/// Explores `target` with `--auto`; the JSON summary.
fn explore(server: &Server, dir: &Path, target: &str) -> Value {
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, spec(&server.base).to_string()).unwrap();
    let sut = dir.join("sut.yaml");
    std::fs::write(
        &sut,
        format!(
            "name: json-server posts\nconnection: {{host: '{}'}}\n\
             preset_variables: {{title: hello from wayline, body: first words}}\n\
             execution:\n  mode: auto\n",
            server.base
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["explore", "--sut", path(&sut), "--spec", path(&spec_path)])
        .args(["--target", target, "--auto", "--format", "json"])
        .args(["--session-dir", path(&dir.join("sessions"))])
        .args(["--knowledge", path(&dir.join("knowledge"))])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{target}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn explore_completes_crud_targets_on_json_server() {
    let Some(executable) = json_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], usize); 4] = [
        (
            "create a post and read it back",
            &["POST /posts 201", "GET /posts/1 200"],
            1,
        ),
        (
            "create a post, update it, then delete it",
            &["POST /posts 201", "PUT /posts/1 200", "DELETE /posts/1 200"],
            0,
        ),
        (
            "create a post, list posts, then delete it",
            &["POST /posts 201", "GET /posts 200", "DELETE /posts/1 200"],
            0,
        ),
        (
            "create a post, update it, then read it",
            &["POST /posts 201", "PUT /posts/1 200", "GET /posts/1 200"],
            1,
        ),
    ];
    for (target, requests, left) in cases {
        let mut questions = Vec::new();
        for run in 0..2 {
            let server = Server::start(&executable);
            let summary = explore(&server, dir.path(), target);
            assert_eq!(
                summary["status"], "completed",
                "{target} (run {run}): {summary}"
            );
            assert_eq!(
                server.requests(requests.len()),
                requests,
                "{target} (run {run})"
            );
            let posts = server.posts();
            assert_eq!(
                posts.as_array().map(Vec::len),
                Some(left),
                "{target}: {posts}"
            );
            if left == 1 {
                assert_eq!(posts[0]["title"], "hello from wayline", "{posts}");
                assert_eq!(posts[0]["id"], 1, "{posts}");
            }
            questions.push(summary["interventions"].as_u64().unwrap());
        }
        assert!(
            questions[1] <= questions[0],
            "{target}: the rerun asked {questions:?}"
        );
    }
}

#[test]
fn what_explore_learned_plans_the_goal_and_the_plan_runs_on_json_server() {
    let Some(executable) = json_server() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let goal = "create a post and read it back";
    let server = Server::start(&executable);
    let summary = explore(&server, dir.path(), goal);
    assert_eq!(summary["status"], "completed", "{summary}");
    // The tools a user imports from the same spec.
    let tools = dir.path().join("tools");
    let imported = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["import", "openapi", path(&dir.path().join("spec.json"))])
        .args(["--out", path(&tools)])
        .output()
        .unwrap();
    assert_eq!(imported.status.code(), Some(0));
    // The goal the session reached plans from knowledge, with no model.
    let plan = dir.path().join("plan.yaml");
    let planned = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "plan",
            goal,
            "--tools",
            path(&tools),
            "--sut",
            "json-server posts",
        ])
        .args(["--knowledge", path(&dir.path().join("knowledge"))])
        .args(["--out", path(&plan), "--format", "json"])
        .env_remove("WAYLINE_LLM_URL")
        .env_remove("WAYLINE_LLM_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&planned.stderr);
    assert_eq!(planned.status.code(), Some(0), "{stderr}");
    let document: Value = serde_json::from_slice(&planned.stdout).unwrap();
    assert_eq!(document["source"]["kind"], "knowledge", "{document}");
    let steps = &document["workflow"]["steps"];
    assert_eq!(
        steps[1]["input_mapping"]["id"], "create_post.post_1",
        "{document}"
    );
    // And it runs against a fresh json-server: the read gets the post the create made.
    let fresh = Server::start(&executable);
    let tools_there = dir.path().join("tools-fresh");
    std::fs::write(
        dir.path().join("spec-fresh.json"),
        spec(&fresh.base).to_string(),
    )
    .unwrap();
    let imported = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args([
            "import",
            "openapi",
            path(&dir.path().join("spec-fresh.json")),
        ])
        .args(["--out", path(&tools_there)])
        .output()
        .unwrap();
    assert_eq!(imported.status.code(), Some(0));
    let run = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .args(["run", path(&plan), "--tools", path(&tools_there)])
        .args(["--input", "title=planned", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(fresh.requests(2), ["POST /posts 201", "GET /posts/1 200"]);
    assert_eq!(fresh.posts()[0]["title"], "planned");
}

//! `wayline explore --auto` on real, stateful REST services nobody on the project wrote, each
//! installed by `.ci/run` from a package registry and started on loopback by its test, with
//! the OpenAPI description the service itself serves. Targets are worded as a user words them,
//! and every outcome is checked against the service's own state (its data, read by the test
//! directly, and its request log), never against wayline's report. `docs/testing.md` says
//! what each service exercises.

mod jupyter;
mod kinto;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::path;

/// A service process on loopback, stopped when dropped; its output goes to `log`.
pub(super) struct Service {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub(super) origin: String,
    pub(super) log: PathBuf,
    pub(super) dir: tempfile::TempDir,
}

/// A port free on loopback now.
pub(super) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Service {
    /// Starts `command` (its output into `dir/service.log`) and waits until `port` takes
    /// connections.
    pub(super) fn start(
        mut command: Command,
        port: u16,
        dir: tempfile::TempDir,
        name: &str,
    ) -> Service {
        let log = dir.path().join("service.log");
        let output = std::fs::File::create(&log).unwrap();
        let child = command
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .unwrap_or_else(|error| panic!("{name} did not start: {error}"));
        let mut service = Service {
            child,
            origin: format!("http://127.0.0.1:{port}"),
            log,
            dir,
        };
        // Real time: the service is another process.
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = service.child.try_wait() {
                panic!("{name} exited ({status}): {}", service.logged());
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "{name} did not listen within 90 s: {}",
                service.logged()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        service
    }

    /// What the service wrote so far, without terminal colours.
    pub(super) fn logged(&self) -> String {
        strip_colours(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    /// A path in the service's directory.
    pub(super) fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `text` without ANSI colour codes (json-server and Kinto colour their logs even into a
/// file).
pub(super) fn strip_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(character) = chars.next() {
        if character == '\u{1b}' {
            for code in chars.by_ref() {
                if code.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(character);
        }
    }
    out
}

/// One HTTP call the test makes itself, to read the service's state: the status and the
/// body (JSON, or the text as a JSON string).
pub(super) fn call(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, Value) {
    let runtime = super::server_runtime();
    let transport = wayline_executor::ReqwestTransport::new().unwrap();
    let mut request = wayline_core::HttpRequest::new(method, url);
    for (name, value) in headers {
        request
            .headers
            .push(wayline_core::Header::new(*name, *value));
    }
    if let Some(body) = body {
        request.headers.push(wayline_core::Header::new(
            "Content-Type",
            "application/json",
        ));
        request.body = Some(serde_json::to_vec(body).unwrap());
    }
    let response = runtime
        .block_on(wayline_core::Transport::send(&transport, request))
        .unwrap_or_else(|error| panic!("{method} {url}: {error}"));
    let body = serde_json::from_slice(&response.body)
        .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&response.body).into_owned()));
    (response.status, body)
}

/// What one `wayline explore` run did: its exit code, its JSON summary and its session file.
pub(super) struct Explored {
    pub(super) code: i32,
    pub(super) summary: Value,
    pub(super) session: Value,
    pub(super) stderr: String,
}

impl Explored {
    /// The questions the run asked.
    pub(super) fn questions(&self) -> u64 {
        self.summary["interventions"].as_u64().unwrap_or(0)
    }
}

/// Runs `wayline explore --auto --format json` for `target` with the SUT file `sut` and the
/// spec `spec`, keeping sessions and knowledge in `dir`; `extra` arguments after.
pub(super) fn explore(
    dir: &Path,
    sut: &Path,
    spec: &Path,
    target: &str,
    extra: &[&str],
) -> Explored {
    explore_with(dir, sut, spec, target, extra, &[])
}

/// As [`explore`], with `envs` set for the command (the SUT's credential variables).
pub(super) fn explore_with(
    dir: &Path,
    sut: &Path,
    spec: &Path,
    target: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> Explored {
    let out = Command::new(env!("CARGO_BIN_EXE_wayline"))
        .envs(envs.iter().copied())
        .args(["explore", "--sut", path(sut), "--spec", path(spec)])
        .args(["--target", target, "--auto", "--format", "json"])
        .args(["--session-dir", path(&dir.join("sessions"))])
        .args(["--knowledge", path(&dir.join("knowledge"))])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|error| panic!("{target}: no JSON summary ({error}): {stderr}"));
    let session = summary["session_id"]
        .as_str()
        .map(|id| dir.join("sessions").join(format!("{id}.yaml")))
        .and_then(|file| std::fs::read_to_string(file).ok())
        .and_then(|text| serde_norway::from_str(&text).ok())
        .unwrap_or(Value::Null);
    Explored {
        code: out.status.code().unwrap_or(-1),
        summary,
        session,
        stderr,
    }
}

/// The operations of the spec at `spec` the explorer takes for collection-wide writes, by id.
pub(super) fn collection_wide_writes(spec: &Path) -> Vec<String> {
    let spec = wayline_registry::openapi::ApiSpec::load(spec).unwrap();
    spec.operations
        .iter()
        .filter(|operation| wayline_explorer::extent::collection_wide(&spec, operation).is_some())
        .map(|operation| operation.id.clone())
        .collect()
}

//! One persistent Python process per local sandbox session, speaking JSON lines with the
//! driver in `driver.py`: variables persist between executions, the value of a last expression
//! is shown as a REPL shows it, errors carry the traceback, and a timeout kills the process
//! (the session's variables are lost, as when Bay's kernel is restarted).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::error::{ErrorCode, SandboxError};
use crate::local::output::{MAX_OUTPUT_BYTES, MAX_REPLY_BYTES};

/// The driver's source, run with `python3 -u -c`.
const DRIVER: &str = include_str!("driver.py");

/// What one execution gave.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Executed {
    /// True when nothing was raised.
    pub success: bool,
    /// Printed output and the last expression's value, stripped.
    pub output: String,
    /// The traceback, when something was raised.
    pub error: Option<String>,
    /// The session's execution counter.
    pub execution_count: u64,
    /// The last expression's value as a REPL shows it (empty when none).
    pub text: String,
}

/// A running Python session.
#[derive(Debug)]
pub struct PythonSession {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// True from sending a request until its reply is read: an exchange cut short (its
    /// future dropped) leaves a reply in the pipe, and the session out of step.
    pending: bool,
}

impl PythonSession {
    /// The arguments that make `python3` run the driver.
    pub fn driver_args() -> [&'static str; 3] {
        ["-u", "-c", DRIVER]
    }

    /// Starts the driver with `command`: `python3` (or a launcher running it) with
    /// [`driver_args`](Self::driver_args), its directory and environment set.
    pub async fn start(mut command: Command) -> Result<PythonSession, SandboxError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let python = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command.spawn().map_err(|error| {
            SandboxError::new(
                ErrorCode::ShipError,
                format!("cannot start `{python}` for the sandbox's Python session: {error}"),
            )
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SandboxError::new(
                ErrorCode::InternalError,
                "the Python session has no pipes",
            ));
        };
        Ok(PythonSession {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            pending: false,
        })
    }

    /// Runs `code`. On timeout the process is killed and a `timeout` error says so; the
    /// session must then be started again.
    pub async fn exec(&mut self, code: &str, timeout: Duration) -> Result<Executed, SandboxError> {
        let started = Instant::now();
        let mut request =
            serde_json::json!({ "code": code, "max_output": MAX_OUTPUT_BYTES }).to_string();
        request.push('\n');
        if self.pending {
            return Err(self.gone("an earlier execution was cut short"));
        }
        self.pending = true;
        let exchange = async {
            self.stdin.write_all(request.as_bytes()).await?;
            self.stdin.flush().await?;
            // The driver keeps its fields within the cap; a reply past what that allows is a
            // driver gone wrong, and is not read further.
            let mut line = String::new();
            let read = (&mut self.stdout)
                .take(MAX_REPLY_BYTES)
                .read_line(&mut line)
                .await?;
            if read as u64 >= MAX_REPLY_BYTES && !line.ends_with('\n') {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "its reply was longer than any the driver sends",
                ));
            }
            Ok::<_, std::io::Error>((read, line))
        };
        let answered = tokio::time::timeout(timeout, exchange).await;
        if matches!(answered, Ok(Ok((read, _))) if read > 0) {
            self.pending = false;
        }
        match answered {
            Err(_) => {
                self.kill().await;
                Err(SandboxError::new(
                    ErrorCode::Timeout,
                    format!(
                        "Code execution timed out after {} seconds",
                        timeout.as_secs_f64().ceil()
                    ),
                )
                .detail(
                    "elapsed_ms",
                    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                ))
            }
            Ok(Err(error)) => Err(self.gone(&error.to_string())),
            Ok(Ok((0, _))) => Err(self.gone("it closed its output")),
            Ok(Ok((_, line))) => serde_json::from_str(&line).map_err(|error| {
                SandboxError::new(
                    ErrorCode::ShipError,
                    format!("the Python session answered something unreadable: {error}"),
                )
            }),
        }
    }

    fn gone(&mut self, why: &str) -> SandboxError {
        let status = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .map(|status| format!(" ({status})"))
            .unwrap_or_default();
        SandboxError::new(
            ErrorCode::ShipError,
            format!("the Python session ended{status}: {why}; run again to start a new one"),
        )
    }

    /// True while the process runs and is ready for a request (no exchange was cut short).
    pub fn alive(&mut self) -> bool {
        !self.pending && matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends the process and the processes it started.
    pub async fn stop(mut self) {
        self.kill().await;
    }

    async fn kill(&mut self) {
        crate::local::isolation::kill_group(self.child.id()).await;
        let _ = self.child.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The session, or `None` (after a one-line notice) on a machine without `python3`: the
    /// README's test command must pass with only the Rust toolchain; `.ci/run` installs it.
    async fn session(dir: &Path) -> Option<PythonSession> {
        if !wayline_testkit::python3_available("a test of Python sessions") {
            return None;
        }
        let command = crate::local::isolation::Isolation::None.command(
            "python3",
            &PythonSession::driver_args(),
            dir,
            ".",
            &[("WAYLINE_TEST".into(), "v-123".into())],
        );
        Some(PythonSession::start(command).await.unwrap())
    }

    #[tokio::test]
    async fn variables_persist_values_show_and_errors_carry_the_traceback() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut python) = session(dir.path()).await else {
            return;
        };
        let second = Duration::from_secs(10);
        let first = python
            .exec("x = 41\nprint('hi')\nx + 1", second)
            .await
            .unwrap();
        assert_eq!(
            (first.success, first.output.as_str(), first.text.as_str()),
            (true, "hi\n42", "42")
        );
        let again = python.exec("x", second).await.unwrap();
        assert_eq!(again.output, "41", "variables persist");
        assert_eq!(again.execution_count, 2);
        let failed = python
            .exec("def f(v):\n    return 1/v\nf(0)", second)
            .await
            .unwrap();
        assert!(!failed.success);
        let error = failed.error.unwrap();
        assert!(
            error.starts_with("Traceback (most recent call last):"),
            "{error}"
        );
        assert!(
            error.contains("return 1/v"),
            "the user's lines are shown: {error}"
        );
        assert!(
            error.ends_with("ZeroDivisionError: division by zero"),
            "{error}"
        );
        assert!(!error.contains("driver"), "no driver frames: {error}");
        let env = python
            .exec("import os; os.environ['WAYLINE_TEST'], os.getcwd()", second)
            .await
            .unwrap();
        assert!(env.output.contains("v-123"), "{}", env.output);
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert!(env.output.contains(cwd.to_str().unwrap()), "{}", env.output);
        let syntax = python.exec("1 +", second).await.unwrap();
        let error = syntax.error.unwrap_or_default();
        assert!(
            error.contains("line 1") && error.ends_with("SyntaxError: invalid syntax"),
            "{error}"
        );
        assert!(
            !error.contains("ast.py"),
            "no frames of the parser: {error}"
        );
        python.stop().await;
    }

    #[tokio::test]
    async fn a_timeout_kills_the_session_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let Some(mut python) = session(dir.path()).await else {
            return;
        };
        let error = python
            .exec("import time\ntime.sleep(30)", Duration::from_millis(300))
            .await
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Timeout);
        assert_eq!(error.message, "Code execution timed out after 1 seconds");
        // Give the kill a moment to land, then the session is gone.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!python.alive());
        let after = python.exec("1", Duration::from_secs(1)).await.unwrap_err();
        assert_eq!(after.code, ErrorCode::ShipError);
        assert!(
            after.message.contains("start a new one"),
            "{}",
            after.message
        );
    }
}

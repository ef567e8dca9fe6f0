//! Shell commands in a local sandbox's workspace, as Bay's Ship runs them: `bash -lc` in the
//! working directory, stdout as the output (stripped), stderr as the error when it is not
//! empty, the exit code, and a timeout that kills the command (`exit_code: -1`, "Command timed
//! out").

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::error::{ErrorCode, SandboxError};

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ran {
    /// True when it exited 0.
    pub success: bool,
    /// Standard output, stripped of surrounding whitespace.
    pub output: String,
    /// Standard error when not empty (stripped), or the timeout message.
    pub error: Option<String>,
    /// The exit code; `-1` after a timeout or a signal.
    pub exit_code: i32,
    /// Wall time.
    pub elapsed: Duration,
}

use crate::local::output::{self, MAX_OUTPUT_BYTES};

/// Runs `command`: `bash -lc <command>` (or a launcher running it), its directory and
/// environment set, in a process group of its own whose id `on_start` is told at once (the
/// caller ends the group, background jobs and all, when the session ends).
pub async fn run(
    mut command: Command,
    timeout: Duration,
    on_start: impl FnOnce(u32),
) -> Result<Ran, SandboxError> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| {
            SandboxError::new(
                ErrorCode::ShipError,
                format!("cannot start bash for the command: {error}"),
            )
        })?;
    let pid = child.id();
    if let Some(group) = pid {
        on_start(group);
    }
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(SandboxError::new(
            ErrorCode::InternalError,
            "the command has no pipes",
        ));
    };
    let read = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        // Keep the first MAX_OUTPUT_BYTES of each stream and drain the rest (counted), so a
        // chatty command never blocks on a full pipe.
        let (a, b) = tokio::join!(
            keep_and_drain(&mut stdout, &mut out),
            keep_and_drain(&mut stderr, &mut err)
        );
        let (out_dropped, err_dropped) = (a?, b?);
        let status = child.wait().await?;
        Ok::<_, std::io::Error>(((out, out_dropped), (err, err_dropped), status))
    };
    let finished = tokio::time::timeout(timeout, read).await;
    if finished.is_err() {
        // The command and everything it started (a background job, a pipeline) end now.
        crate::local::isolation::kill_group(pid).await;
    }
    match finished {
        Err(_) => Ok(Ran {
            success: false,
            output: String::new(),
            error: Some("Command timed out".into()),
            exit_code: -1,
            elapsed: started.elapsed(),
        }),
        Ok(Err(error)) => Err(SandboxError::new(
            ErrorCode::ShipError,
            format!("the command could not be run to the end: {error}"),
        )),
        Ok(Ok(((out, out_dropped), (err, err_dropped), status))) => {
            let exit_code = status.code().unwrap_or(-1);
            let stderr = output::text(&err, err_dropped);
            Ok(Ran {
                success: exit_code == 0,
                output: output::text(&out, out_dropped),
                error: (!stderr.is_empty()).then_some(stderr),
                exit_code,
                elapsed: started.elapsed(),
            })
        }
    }
}

/// Keeps the first [`MAX_OUTPUT_BYTES`] of `stream` in `kept` and drains the rest, answering
/// how many bytes were drained.
async fn keep_and_drain(
    stream: &mut (impl tokio::io::AsyncRead + Unpin),
    kept: &mut Vec<u8>,
) -> std::io::Result<u64> {
    (&mut *stream)
        .take(MAX_OUTPUT_BYTES as u64)
        .read_to_end(kept)
        .await?;
    tokio::io::copy(stream, &mut tokio::io::sink()).await
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::local::isolation::Isolation;

    /// `bash -lc script` in `relative` inside `workspace`.
    async fn run(
        script: &str,
        cwd: &Path,
        home: &Path,
        env: &[(String, String)],
        timeout: Duration,
    ) -> Result<Ran, SandboxError> {
        let relative = cwd.strip_prefix(home).unwrap().to_str().unwrap();
        let relative = if relative.is_empty() { "." } else { relative };
        let command = Isolation::None.command("bash", &["-lc", script], home, relative, env);
        super::run(command, timeout, |_| {}).await
    }

    #[tokio::test]
    async fn commands_run_in_the_workspace_with_exit_codes_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let env = [("BAY_TEST_ENV_VAR".to_owned(), "test-value-12345".to_owned())];
        let second = Duration::from_secs(10);
        let ran = run(
            "echo hello; pwd; echo $BAY_TEST_ENV_VAR",
            &dir.path().join("sub"),
            dir.path(),
            &env,
            second,
        )
        .await
        .unwrap();
        assert!(ran.success);
        let lines: Vec<&str> = ran.output.lines().collect();
        assert_eq!(lines[0], "hello");
        assert!(lines[1].ends_with("/sub"), "{}", lines[1]);
        assert_eq!(lines[2], "test-value-12345");
        let failed = run(
            "echo oops >&2; exit 3",
            dir.path(),
            dir.path(),
            &env,
            second,
        )
        .await
        .unwrap();
        assert_eq!(
            (failed.success, failed.exit_code, failed.error.as_deref()),
            (false, 3, Some("oops"))
        );
        let piped = run(
            "printf 'b\\na\\n' | sort | head -1",
            dir.path(),
            dir.path(),
            &env,
            second,
        )
        .await
        .unwrap();
        assert_eq!(piped.output, "a");
    }

    #[tokio::test]
    async fn a_flood_of_output_is_cut_not_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            "head -c 6000000 /dev/zero | tr '\\0' x; echo",
            dir.path(),
            dir.path(),
            &[],
            Duration::from_secs(20),
        )
        .await
        .unwrap();
        assert!(ran.success);
        // The first 4 MiB, and a line saying what was left out (1,805,697 bytes: the rest of
        // the 6,000,001).
        assert_eq!(
            ran.output,
            format!(
                "{}{}",
                "x".repeat(MAX_OUTPUT_BYTES),
                output::cut_note(1_805_697)
            )
        );
    }

    #[tokio::test]
    async fn a_command_that_outlives_its_timeout_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run(
            "sleep 30",
            dir.path(),
            dir.path(),
            &[],
            Duration::from_millis(200),
        )
        .await
        .unwrap();
        assert_eq!((ran.success, ran.exit_code), (false, -1));
        assert_eq!(ran.error.as_deref(), Some("Command timed out"));
        assert!(ran.elapsed < Duration::from_secs(5));
    }
}

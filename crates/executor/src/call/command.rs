//! `cli` steps: a subprocess, started without a shell, with templated arguments.
//!
//! The result is shaped like an HTTP response so the rest of the engine treats both alike: the
//! exit code is the `status` (0 on success), stdout the body (parsed as JSON when it is JSON).

use std::process::Stdio;
use std::time::Duration;

use indexmap::IndexMap;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use wayline_core::template::{self, Mode};
use wayline_core::{CommandConfig, HttpResponse, TransportError, TransportErrorKind};

use crate::values::redact::cut;

/// The arguments, environment and directory of a command with `inputs` filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) working_dir: Option<String>,
}

/// Renders the command's templates; a missing input is an error naming it.
pub(crate) fn invocation(
    command: &CommandConfig,
    inputs: &IndexMap<String, Value>,
) -> Result<Invocation, String> {
    let render = |what: &str, text: &str| {
        template::render_str(text, inputs, Mode::Strict)
            .map(|value| crate::values::text(&value))
            .map_err(|error| format!("{what}: {error}"))
    };
    let args = command
        .args
        .iter()
        .enumerate()
        .map(|(index, arg)| render(&format!("argument {}", index + 1), arg))
        .collect::<Result<_, _>>()?;
    let env = command
        .env
        .iter()
        .map(|(name, value)| Ok((name.clone(), render(&format!("variable {name}"), value)?)))
        .collect::<Result<_, String>>()?;
    let working_dir = command
        .working_dir
        .as_deref()
        .map(|dir| render("working_dir", dir))
        .transpose()?;
    Ok(Invocation {
        program: command.program.clone(),
        args,
        env,
        working_dir,
    })
}

/// Runs the command to completion within `timeout`. Exit code 0 gives a response with status 0
/// and stdout as the body; a non-zero exit, a start failure, output beyond `max_output` bytes
/// are errors of kind `Other`, running out of time one of kind `Timeout` (the process is killed).
pub(crate) async fn run(
    invocation: &Invocation,
    max_output: u64,
    timeout: Duration,
) -> Result<HttpResponse, TransportError> {
    let program = &invocation.program;
    let fail = |message: String| TransportError::new(TransportErrorKind::Other, message);
    let mut command = Command::new(program);
    command
        .args(&invocation.args)
        .envs(invocation.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &invocation.working_dir {
        command.current_dir(dir);
    }
    let child = command
        .spawn()
        .map_err(|error| fail(format!("cannot start `{program}`: {error}")))?;
    let work = finish(child, max_output, ["stdout", "stderr"], "max_output_bytes");
    // Dropping `work` on timeout drops the child, which kills it (`kill_on_drop`).
    let (status, stdout, stderr) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| {
            TransportError::new(
                TransportErrorKind::Timeout,
                format!(
                    "`{program}` did not finish within {} ms and was killed",
                    timeout.as_millis()
                ),
            )
        })?
        .map_err(|error| fail(format!("`{program}`: {error}")))?;
    if !status.success() {
        let code = status
            .code()
            .map_or_else(|| "a signal".to_owned(), |code| format!("status {code}"));
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(fail(format!(
            "`{program}` exited with {code}: {}",
            cut(stderr.trim(), 1_000)
        )));
    }
    Ok(HttpResponse::new(0, stdout))
}

/// Waits for `child` (its standard output and error piped), reading each stream up to `max`
/// bytes: its exit status, standard output and standard error. More output than `max` is an
/// error naming the stream (`names`) and the `limit`; the caller drops the child then (which
/// kills it, with `kill_on_drop`).
pub(crate) async fn finish(
    mut child: tokio::process::Child,
    max: u64,
    names: [&str; 2],
    limit: &str,
) -> Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>), String> {
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("its output cannot be read".to_owned());
    };
    let (stdout, stderr) = tokio::try_join!(
        read_capped(stdout, max, names[0], limit),
        read_capped(stderr, max, names[1], limit)
    )?;
    let status = child
        .wait()
        .await
        .map_err(|error| format!("waiting for it: {error}"))?;
    Ok((status, stdout, stderr))
}

/// What `stream` gives, at most `max` bytes: more is an error naming the stream and the
/// limit (its reader stops there, so a command printing without end costs no more than `max`).
async fn read_capped(
    stream: impl AsyncRead + Unpin,
    max: u64,
    name: &str,
    limit: &str,
) -> Result<Vec<u8>, String> {
    let mut buffer = Vec::new();
    stream
        .take(max.saturating_add(1))
        .read_to_end(&mut buffer)
        .await
        .map_err(|error| format!("reading {name}: {error}"))?;
    if buffer.len() as u64 > max {
        return Err(format!("{name} is larger than {limit} ({max})"));
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn command(yaml: &str) -> CommandConfig {
        wayline_core::document::parse(yaml, wayline_core::document::Format::Yaml, "c.yaml").unwrap()
    }

    #[test]
    fn templates_fill_args_env_and_dir() {
        let command = command(
            "program: echo\nargs: [\"-n\", \"{{word}}\", \"n={{n}}\"]\nenv: {X: \"{{word}}\"}\nworking_dir: \"{{dir}}\"\n",
        );
        let inputs = serde_json::from_value(json!({"word": "hi", "n": 3, "dir": "/tmp"})).unwrap();
        let invocation = invocation(&command, &inputs).unwrap();
        assert_eq!(invocation.args, ["-n", "hi", "n=3"]);
        assert_eq!(invocation.env, [("X".to_owned(), "hi".to_owned())]);
        assert_eq!(invocation.working_dir.as_deref(), Some("/tmp"));
        let error = super::invocation(&command, &IndexMap::new()).unwrap_err();
        assert_eq!(error, "argument 2: missing template key `word`");
    }
}

//! `auth_token_command`: a tool config's token from a command (a secret manager's CLI), run
//! without a shell when the run fetches its configs — once per run for each distinct command,
//! whatever number of tools share it — its output trimmed into `auth_token`. The token is a
//! secret like any other: the run's redactor masks it, and no error shows the command's output.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use wayline_core::{CommandLine, Secret, ToolConfig};

use crate::call::command::finish;
use crate::values::redact::cut;

/// How long a token command may take.
pub(crate) const TOKEN_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The program and arguments of `command`.
fn words(command: &CommandLine) -> Result<Vec<String>, String> {
    let words = match command {
        CommandLine::Line(line) => shlex::split(line).ok_or_else(|| {
            "`auth_token_command` is not a command line (an unclosed quote?)".to_owned()
        })?,
        CommandLine::Words(words) => words.clone(),
        _ => Vec::new(),
    };
    if words.first().is_none_or(String::is_empty) {
        return Err("`auth_token_command` names no program".to_owned());
    }
    Ok(words)
}

/// The most a token command may print: a token is a few kilobytes at most, and a command that
/// prints without end (`cat /dev/zero`) must not fill the memory.
pub(crate) const MAX_TOKEN_OUTPUT: u64 = 64 * 1024;

/// Runs `command`, answering what it printed, trimmed.
async fn run(command: &CommandLine) -> Result<String, String> {
    let words = words(command)?;
    let program = &words[0];
    let child = Command::new(program)
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("`auth_token_command` {program} cannot start: {error}"))?;
    let work = finish(
        child,
        MAX_TOKEN_OUTPUT,
        ["its output", "its standard error"],
        "a token may be",
    );
    // Dropping `work` (a timeout, output past the cap) drops the child, which kills it.
    let (status, stdout, stderr) = tokio::time::timeout(TOKEN_COMMAND_TIMEOUT, work)
        .await
        .map_err(|_| {
            format!(
                "`auth_token_command` {program} did not finish within {} s",
                TOKEN_COMMAND_TIMEOUT.as_secs()
            )
        })?
        .map_err(|error| format!("`auth_token_command` {program}: {error}"))?;
    if !status.success() {
        // Its standard error says why; its standard output is never shown (it may be a token).
        let said = String::from_utf8_lossy(&stderr);
        let said = cut(said.trim(), 300);
        return Err(format!(
            "`auth_token_command` {program} exited with {status}{}",
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ));
    }
    let token = String::from_utf8(stdout).map_err(|_| {
        format!("`auth_token_command` {program} printed something that is not text")
    })?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("`auth_token_command` {program} printed nothing"));
    }
    Ok(token.to_owned())
}

/// Fills `auth_token` from `auth_token_command` in each config that has a command and no token;
/// a command that fails makes its tools' configs that error (their steps fail with it).
pub(crate) async fn resolve(configs: &mut HashMap<String, Result<Option<ToolConfig>, String>>) {
    let mut tokens: HashMap<CommandLine, Result<String, String>> = HashMap::new();
    for entry in configs.values_mut() {
        let Ok(Some(config)) = entry else { continue };
        let Some(command) = config.auth_token_command.clone() else {
            continue;
        };
        if config.auth_token.is_some() {
            continue;
        }
        let token = match tokens.get(&command) {
            Some(token) => token.clone(),
            None => {
                let token = run(&command).await;
                tokens.insert(command, token.clone());
                token
            }
        };
        match token {
            Ok(token) => config.auth_token = Some(Secret::new(token)),
            Err(error) => *entry = Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(command: CommandLine) -> Result<Option<ToolConfig>, String> {
        let mut config = ToolConfig::default();
        config.auth_token_command = Some(command);
        Ok(Some(config))
    }

    #[tokio::test]
    async fn a_command_gives_the_token_once_for_every_tool_sharing_it() {
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("count");
        let line = format!(
            "sh -c 'echo x >> {}; printf \"  tok-from-vault\\n\"'",
            counter.display()
        );
        let mut configs = HashMap::from([
            ("a".to_owned(), config(CommandLine::Line(line.clone()))),
            ("b".to_owned(), config(CommandLine::Line(line))),
        ]);
        resolve(&mut configs).await;
        for id in ["a", "b"] {
            let token = configs[id]
                .as_ref()
                .unwrap()
                .as_ref()
                .unwrap()
                .auth_token
                .clone();
            assert_eq!(token.unwrap().expose(), "tok-from-vault");
        }
        assert_eq!(std::fs::read_to_string(counter).unwrap().lines().count(), 1);
    }

    /// Issue 31, item 16: `cat /dev/zero` as a token command once read 2.1 GB and aborted.
    #[tokio::test]
    async fn a_command_printing_without_end_is_stopped_at_the_cap() {
        let mut configs = HashMap::from([(
            "a".to_owned(),
            config(CommandLine::Words(vec!["cat".into(), "/dev/zero".into()])),
        )]);
        resolve(&mut configs).await;
        let error = configs["a"].clone().unwrap_err();
        assert!(
            error.contains("its output is larger than a token may be (65536)"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_failing_command_fails_its_tools_and_shows_no_output() {
        let mut configs = HashMap::from([(
            "a".to_owned(),
            config(CommandLine::Words(vec![
                "sh".into(),
                "-c".into(),
                "echo secret-part; echo denied >&2; exit 3".into(),
            ])),
        )]);
        resolve(&mut configs).await;
        let error = configs["a"].clone().unwrap_err();
        assert!(
            error.contains("exited with") && error.contains("denied"),
            "{error}"
        );
        assert!(!error.contains("secret-part"), "{error}");
        let mut missing = HashMap::from([(
            "b".to_owned(),
            config(CommandLine::Line("no-such-program-anywhere".into())),
        )]);
        resolve(&mut missing).await;
        assert!(missing["b"].clone().unwrap_err().contains("cannot start"));
    }

    #[tokio::test]
    async fn a_token_given_wins_over_the_command() {
        let mut given = ToolConfig::default();
        given.auth_token = Some(Secret::new("given"));
        given.auth_token_command = Some(CommandLine::Line("false".into()));
        let mut configs = HashMap::from([("a".to_owned(), Ok(Some(given)))]);
        resolve(&mut configs).await;
        assert_eq!(
            configs["a"]
                .as_ref()
                .unwrap()
                .as_ref()
                .unwrap()
                .auth_token
                .as_ref()
                .unwrap()
                .expose(),
            "given"
        );
    }
}

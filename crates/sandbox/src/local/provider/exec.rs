//! Executions: Python and shell code run in a sandbox's session, and their history.

use std::time::{Duration, Instant};

use crate::error::{ErrorCode, SandboxError};
use crate::local::isolation::Limits;
use crate::local::python::PythonSession;
use crate::local::shell;
use crate::local::state::{self};
use crate::model::{PythonResult, ShellResult};
use crate::path::{self as paths, PathField};
use crate::provider::{
    Annotation, HistoryEntry, HistoryPage, HistoryQuery, MAX_EXEC_TIMEOUT_SECS, PythonExec,
    SandboxProvider, SandboxResult, ShellExec,
};

use super::{LocalProvider, not_found, quote, random_hex};
fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn check_timeout(seconds: u64) -> SandboxResult<Duration> {
    if (1..=MAX_EXEC_TIMEOUT_SECS).contains(&seconds) {
        Ok(Duration::from_secs(seconds))
    } else {
        Err(SandboxError::new(
            ErrorCode::ValidationError,
            format!("timeout must be 1 to {MAX_EXEC_TIMEOUT_SECS} seconds, not {seconds}"),
        )
        .detail("field", "timeout"))
    }
}

impl LocalProvider {
    pub(super) fn record_history(&self, id: &str, entry: &HistoryEntry) {
        if let Err(error) = state::append_history(&self.inner.config.data_dir, id, entry) {
            tracing::warn!(sandbox = %id, %error, "an execution was not recorded in the history");
        }
    }
}

/// [`crate::SandboxProvider::python_exec`]: in the session's Python process, started if needed.
pub(super) async fn python(
    provider: &LocalProvider,
    id: &str,
    request: &PythonExec,
) -> SandboxResult<PythonResult> {
    let timeout = check_timeout(request.timeout)?;
    let ready = provider.begin(id, "python", || Ok(())).await?;
    let started = Instant::now();
    let mut python_slot = ready.runtime.python.lock().await;
    if !python_slot.as_mut().is_some_and(PythonSession::alive) {
        if let Some(old) = python_slot.take() {
            old.stop().await;
        }
        let scratch = ready.runtime.scratch()?;
        provider.hand_over(&scratch)?;
        provider.hand_over(&ready.workspace)?;
        let command = provider.inner.isolation.command_in(
            provider.interpreter().await,
            &PythonSession::driver_args(),
            &ready.workspace,
            ".",
            &ready.env,
            &Limits {
                scratch: Some(&scratch),
                memory_bytes: ready.memory_bytes,
                hidden: Some(&provider.inner.config.data_dir),
            },
        );
        match PythonSession::start(command).await {
            Ok(python) => *python_slot = Some(python),
            Err(error) => {
                // No runtime came up: the sandbox is idle again, not `ready`.
                drop(python_slot);
                let _ = provider.end_session(id).await;
                return Err(error);
            }
        }
    }
    let Some(python) = python_slot.as_mut() else {
        return Err(SandboxError::new(
            ErrorCode::InternalError,
            "the Python session did not start",
        ));
    };
    let executed = python.exec(&request.code, timeout).await;
    let execution_id = format!("exec-{}", random_hex());
    let (success, output, error, data) = match executed {
        Ok(done) => (
            done.success,
            done.output,
            done.error,
            Some(serde_json::json!({
                "execution_count": done.execution_count,
                "output": {"text": done.text, "images": []},
            })),
        ),
        Err(error) if error.code == ErrorCode::Timeout => {
            // The process was killed: the next call starts a new one.
            *python_slot = None;
            (false, String::new(), Some(error.message), None)
        }
        Err(error) => {
            *python_slot = None;
            return Err(error);
        }
    };
    drop(python_slot);
    let result = PythonResult {
        success,
        output,
        error,
        data,
        execution_id,
        execution_time_ms: elapsed_ms(started),
        code: request.include_code.then(|| request.code.clone()),
    };
    provider.record_history(
        id,
        &HistoryEntry {
            id: result.execution_id.clone(),
            session_id: Some(ready.session_id),
            exec_type: "python".to_owned(),
            code: request.code.clone(),
            success: result.success,
            execution_time_ms: result.execution_time_ms,
            output: Some(result.output.clone()),
            error: result.error.clone(),
            description: request.description.clone(),
            tags: request.tags.clone(),
            notes: None,
            created_at: provider.now(),
        },
    );
    Ok(result)
}

/// [`crate::SandboxProvider::shell_exec`]: `bash -lc` in the session, its process group kept.
pub(super) async fn shell(
    provider: &LocalProvider,
    id: &str,
    request: &ShellExec,
) -> SandboxResult<ShellResult> {
    let timeout = check_timeout(request.timeout)?;
    let mut cwd = ".".to_owned();
    let ready = provider
        .begin(id, "shell", || {
            if let Some(given) = &request.cwd {
                cwd = paths::normalize(given, PathField::Cwd)?;
            }
            Ok(())
        })
        .await?;
    provider.resolve(&ready, &cwd, PathField::Cwd)?;
    // As Ship: `cd <cwd> && <command>`, so a missing directory is the command's failure.
    let script = if cwd == "." {
        request.command.clone()
    } else {
        format!("cd {} && {}", quote(&cwd), request.command)
    };
    let scratch = ready.runtime.scratch()?;
    provider.hand_over(&scratch)?;
    provider.hand_over(&ready.workspace)?;
    let command = provider.inner.isolation.command_in(
        "bash",
        &["-lc", &script],
        &ready.workspace,
        ".",
        &ready.env,
        &Limits {
            scratch: Some(&scratch),
            memory_bytes: ready.memory_bytes,
            hidden: Some(&provider.inner.config.data_dir),
        },
    );
    let groups = &ready.runtime.shell_groups;
    let ran = shell::run(command, timeout, |group| {
        groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(group);
    })
    .await?;
    let result = ShellResult {
        success: ran.success,
        output: ran.output,
        error: ran.error,
        exit_code: Some(ran.exit_code),
        execution_id: format!("exec-{}", random_hex()),
        execution_time_ms: u64::try_from(ran.elapsed.as_millis()).unwrap_or(u64::MAX),
        command: request.include_code.then(|| request.command.clone()),
    };
    provider.record_history(
        id,
        &HistoryEntry {
            id: result.execution_id.clone(),
            session_id: Some(ready.session_id),
            exec_type: "shell".to_owned(),
            code: request.command.clone(),
            success: result.success,
            execution_time_ms: result.execution_time_ms,
            output: Some(result.output.clone()),
            error: result.error.clone(),
            description: request.description.clone(),
            tags: request.tags.clone(),
            notes: None,
            created_at: provider.now(),
        },
    );
    Ok(result)
}

/// [`crate::SandboxProvider::history`]: newest first.
pub(super) async fn history(
    provider: &LocalProvider,
    id: &str,
    query: &HistoryQuery,
) -> SandboxResult<HistoryPage> {
    if !provider.state().persisted.sandboxes.contains_key(id) {
        return Err(not_found(id));
    }
    let limit = query.limit.unwrap_or(100).min(500) as usize;
    let mut entries = state::read_history(&provider.inner.config.data_dir, id)?;
    entries.retain(|entry| query.admits(entry));
    entries.reverse();
    let total = entries.len() as u64;
    let entries = entries
        .into_iter()
        .skip(query.offset as usize)
        .take(limit)
        .collect();
    Ok(HistoryPage { entries, total })
}

/// [`crate::SandboxProvider::execution`].
pub(super) async fn execution(
    provider: &LocalProvider,
    id: &str,
    execution_id: &str,
) -> SandboxResult<HistoryEntry> {
    if !provider.state().persisted.sandboxes.contains_key(id) {
        return Err(not_found(id));
    }
    state::read_history(&provider.inner.config.data_dir, id)?
        .into_iter()
        .find(|entry| entry.id == execution_id)
        .ok_or_else(|| {
            SandboxError::new(
                ErrorCode::NotFound,
                format!("Execution not found: {execution_id}"),
            )
        })
}

/// [`crate::SandboxProvider::annotate`].
pub(super) async fn annotate(
    provider: &LocalProvider,
    id: &str,
    execution_id: &str,
    annotation: &Annotation,
) -> SandboxResult<HistoryEntry> {
    let mut entry = provider.execution(id, execution_id).await?;
    state::append_annotation(
        &provider.inner.config.data_dir,
        id,
        execution_id,
        annotation,
    )?;
    annotation.apply(&mut entry);
    Ok(entry)
}

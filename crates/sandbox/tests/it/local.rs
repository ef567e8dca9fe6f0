//! The local provider's own behaviour: state that survives a restart, one provider per data
//! directory, the idle timeout, timeouts that kill, size limits, listing pages, the isolation
//! it reports.

use std::sync::Arc;

use chrono::Duration;
use wayline_sandbox::clock::ManualClock;
use wayline_sandbox::local::{Isolation, IsolationMode};
use wayline_sandbox::{
    CreateSandbox, ErrorCode, ListQuery, LocalConfig, LocalProvider, PythonExec, SandboxProvider,
    ShellExec, Status,
};

use crate::common::{local_provider, python_available, start_time};

#[tokio::test]
async fn sandboxes_and_files_survive_a_restart_and_the_directory_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    let first = local_provider(dir.path(), &clock);
    let info = first
        .create(
            &CreateSandbox::default()
                .ttl(3_600)
                .idempotency_key("made-once"),
        )
        .await
        .unwrap();
    first
        .write_file(&info.id, "notes/a.txt", "kept")
        .await
        .unwrap();
    // A second provider on the same directory is refused while the first lives.
    let busy = LocalProvider::open(LocalConfig::new(dir.path())).unwrap_err();
    assert!(busy.message.contains("in use"), "{busy}");
    drop(first);
    let second = local_provider(dir.path(), &clock);
    let again = second.get(&info.id).await.unwrap();
    assert_eq!(again.status, Status::Idle, "no session survives a restart");
    assert_eq!(again.expires_at, info.expires_at);
    assert_eq!(
        second.read_file(&info.id, "notes/a.txt").await.unwrap(),
        "kept"
    );
    // Idempotency keys survive too.
    let replay = second
        .create(
            &CreateSandbox::default()
                .ttl(3_600)
                .idempotency_key("made-once"),
        )
        .await
        .unwrap();
    assert_eq!(replay.id, info.id);
    // A damaged state file is reported, not overwritten.
    drop(second);
    std::fs::write(dir.path().join("state.json"), "{ not json").unwrap();
    let damaged = LocalProvider::open(LocalConfig::new(dir.path())).unwrap_err();
    assert!(damaged.message.contains("state.json: line 1"), "{damaged}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("state.json")).unwrap(),
        "{ not json"
    );
}

#[tokio::test]
async fn the_idle_timeout_ends_the_session_and_keeps_the_files() {
    if !python_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(start_time());
    let provider = local_provider(dir.path(), &clock);
    let id = provider
        .create(&CreateSandbox::new("short-idle-test"))
        .await
        .unwrap()
        .id;
    let set = provider
        .python_exec(
            &id,
            &PythonExec::new("x = 7\nopen('kept.txt', 'w').write('yes')"),
        )
        .await
        .unwrap();
    assert!(set.success, "{set:?}");
    let ready = provider.get(&id).await.unwrap();
    assert_eq!(ready.status, Status::Ready);
    assert_eq!(
        ready.idle_expires_at,
        Some(start_time() + Duration::seconds(2))
    );
    // Keepalive moves the deadline without starting anything.
    clock.advance(Duration::seconds(1));
    provider.keepalive(&id).await.unwrap();
    clock.advance(Duration::seconds(2));
    assert_eq!(provider.get(&id).await.unwrap().status, Status::Ready);
    clock.advance(Duration::seconds(1));
    let idle = provider.get(&id).await.unwrap();
    assert_eq!((idle.status, idle.idle_expires_at), (Status::Idle, None));
    let lost = provider
        .python_exec(&id, &PythonExec::new("x"))
        .await
        .unwrap();
    assert!(lost.error.unwrap().contains("NameError"));
    assert_eq!(provider.read_file(&id, "kept.txt").await.unwrap(), "yes");
    // Stop is idempotent.
    provider.stop(&id).await.unwrap();
    provider.stop(&id).await.unwrap();
}

#[tokio::test]
async fn a_timed_out_execution_says_so_and_the_next_one_starts_afresh() {
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    provider
        .python_exec(&id, &PythonExec::new("y = 1"))
        .await
        .unwrap();
    let slow = provider
        .python_exec(
            &id,
            &PythonExec::new("import time\ntime.sleep(30)").timeout(1),
        )
        .await
        .unwrap();
    assert!(!slow.success);
    assert_eq!(
        slow.error.as_deref(),
        Some("Code execution timed out after 1 seconds")
    );
    let after = provider
        .python_exec(&id, &PythonExec::new("'y' in globals()"))
        .await
        .unwrap();
    assert_eq!(
        after.output, "False",
        "the killed session's variables are gone"
    );
    let shell = provider
        .shell_exec(&id, &ShellExec::new("sleep 30").timeout(1))
        .await
        .unwrap();
    assert_eq!(
        (shell.success, shell.exit_code, shell.error.as_deref()),
        (false, Some(-1), Some("Command timed out"))
    );
    // Subprocess output joins the output; the driver's pipes stay clean.
    let child = provider
        .python_exec(
            &id,
            &PythonExec::new(
                "import subprocess\nsubprocess.run(['echo', 'from a child'])\nprint('after')",
            ),
        )
        .await
        .unwrap();
    assert!(child.success, "{child:?}");
    assert!(child.output.contains("from a child"), "{}", child.output);
    assert!(child.output.contains("after"), "{}", child.output);
    // The profile's env reaches the shell, which starts in the workspace.
    let env = provider
        .shell_exec(
            &id,
            &ShellExec::new("echo $BAY_TEST_ENV_VAR; mkdir -p sub; cd sub && pwd"),
        )
        .await
        .unwrap();
    assert!(env.output.starts_with("test-value-12345\n"), "{env:?}");
    let sub = provider
        .shell_exec(&id, &ShellExec::new("pwd").cwd("sub"))
        .await
        .unwrap();
    assert!(sub.output.ends_with("/sub"), "{sub:?}");
    let missing = provider
        .shell_exec(&id, &ShellExec::new("pwd").cwd("no-such-dir"))
        .await
        .unwrap();
    assert_eq!(
        missing.exit_code,
        Some(1),
        "as Ship: `cd` fails the command"
    );
}

#[tokio::test]
async fn size_limits_pages_and_the_isolation_mode() {
    let dir = tempfile::tempdir().unwrap();
    let provider = LocalProvider::open(
        LocalConfig::new(dir.path())
            .isolation(IsolationMode::None)
            .max_file_bytes(10)
            .clock(Arc::new(ManualClock::new(start_time()))),
    )
    .unwrap();
    assert_eq!(provider.isolation(), &Isolation::None);
    assert!(
        provider
            .isolation()
            .describe()
            .contains("not a security boundary")
    );
    let id = provider.create(&Default::default()).await.unwrap().id;
    let big = provider
        .write_file(&id, "big.txt", "01234567890")
        .await
        .unwrap_err();
    assert_eq!(big.code, ErrorCode::ValidationError);
    assert_eq!(big.details["limit"], 10);
    assert!(
        provider.list_files(&id, ".").await.unwrap().is_empty(),
        "nothing half-written"
    );
    provider.upload(&id, "ok.bin", vec![1; 10]).await.unwrap();
    for _ in 0..4 {
        provider.create(&Default::default()).await.unwrap();
    }
    let first = provider.list(&ListQuery::new().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let cursor = first.next_cursor.clone().unwrap();
    let second = provider
        .list(&ListQuery::new().limit(2).cursor(cursor))
        .await
        .unwrap();
    let third = provider
        .list(
            &ListQuery::new()
                .limit(2)
                .cursor(second.next_cursor.unwrap()),
        )
        .await
        .unwrap();
    assert_eq!((third.items.len(), third.next_cursor), (1, None));
    let mut ids: Vec<_> = first
        .items
        .iter()
        .chain(&second.items)
        .chain(&third.items)
        .map(|info| info.id.clone())
        .collect();
    let listed = ids.clone();
    ids.sort();
    assert_eq!(ids, listed, "by id");
    ids.dedup();
    assert_eq!(ids.len(), 5);
    let bubblewrap = LocalProvider::open(
        LocalConfig::new(dir.path().join("other")).isolation(IsolationMode::Bubblewrap),
    );
    match bubblewrap {
        Ok(provider) => assert!(matches!(provider.isolation(), Isolation::Bubblewrap { .. })),
        Err(error) => assert!(error.message.contains("bubblewrap"), "{error}"),
    }
}

/// A provider in a temporary directory with one sandbox, when `python3` runs here.
async fn one_sandbox() -> Option<(tempfile::TempDir, LocalProvider, String)> {
    if !python_available() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let provider = local_provider(dir.path(), &ManualClock::new(start_time()));
    let id = provider.create(&Default::default()).await.unwrap().id;
    Some((dir, provider, id))
}

/// True once process `pid` is gone (or a zombie), polling up to two seconds: a killed process
/// takes a moment to disappear, and real processes cannot use tokio's paused clock.
async fn gone(pid: &str) -> bool {
    for _ in 0..40 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn stop_and_delete_end_the_session_and_what_it_started() {
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    let pids = provider
        .python_exec(
            &id,
            &PythonExec::new(
                "import os, subprocess\nchild = subprocess.Popen(['sleep', '60'])\nprint(os.getpid(), child.pid)",
            ),
        )
        .await
        .unwrap();
    let pids: Vec<String> = pids.output.split_whitespace().map(str::to_owned).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    provider.stop(&id).await.unwrap();
    assert!(gone(&pids[0]).await, "the session's Python ended");
    assert!(gone(&pids[1]).await, "and the process it started");
    let again = provider
        .python_exec(&id, &PythonExec::new("import os; print(os.getpid())"))
        .await
        .unwrap();
    provider.delete(&id).await.unwrap();
    assert!(gone(&again.output).await, "delete ends the session too");
    // A background job of a command that timed out ends with it.
    let id = provider.create(&Default::default()).await.unwrap().id;
    let timed_out = provider
        .shell_exec(
            &id,
            &ShellExec::new("sleep 60 & echo $! > bg.pid; wait").timeout(1),
        )
        .await
        .unwrap();
    assert_eq!(timed_out.exit_code, Some(-1));
    let background = provider.read_file(&id, "bg.pid").await.unwrap();
    assert!(gone(background.trim()).await, "the background job ended");
}

/// A background job a command left running (`(sleep 97 &)`) lives on after the command, as it
/// would in Bay's container, and ends with the session: on stop, and on delete.
#[tokio::test]
async fn background_jobs_of_finished_commands_end_with_the_session() {
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    let start = ShellExec::new("(sleep 97 > /dev/null 2>&1 & echo $!)");
    let first = provider.shell_exec(&id, &start).await.unwrap();
    assert!(first.success, "{first:?}");
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", first.output.trim()));
    assert!(
        stat.is_ok_and(|stat| !stat.contains(") Z ")),
        "the job outlives its command"
    );
    provider.stop(&id).await.unwrap();
    assert!(gone(first.output.trim()).await, "stop ends it");
    let second = provider.shell_exec(&id, &start).await.unwrap();
    provider.delete(&id).await.unwrap();
    assert!(gone(second.output.trim()).await, "delete ends it");
}

#[tokio::test]
async fn an_exec_cut_short_does_not_leave_the_session_out_of_step() {
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    provider
        .python_exec(&id, &PythonExec::new("1"))
        .await
        .unwrap();
    // A caller that gives up (an HTTP client gone, a step's deadline) drops the call.
    let cut = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        provider.python_exec(
            &id,
            &PythonExec::new("import time; time.sleep(0.5); 'late'"),
        ),
    )
    .await;
    assert!(cut.is_err());
    let next = provider
        .python_exec(&id, &PythonExec::new("'on time'"))
        .await
        .unwrap();
    assert_eq!(next.output, "'on time'", "not the earlier call's answer");
}

#[tokio::test]
async fn code_sees_a_clean_environment() {
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    let seen = provider
        .python_exec(&id, &PythonExec::new("import os; sorted(os.environ)"))
        .await
        .unwrap();
    let names: Vec<String> = serde_json::from_str(&seen.output.replace('\'', "\"")).unwrap();
    let allowed = [
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TERM",
        "TZ",
        "USER",
        "LOGNAME",
        "HOME",
        "BAY_TEST_ENV_VAR",
        // Set by the provider itself: the session's scratch directory.
        "TMPDIR",
        "PYTHONUSERBASE",
        "PIP_BREAK_SYSTEM_PACKAGES",
    ];
    for name in &names {
        assert!(
            allowed.contains(&name.as_str()),
            "{name} leaked into the sandbox: {names:?}"
        );
    }
    assert!(names.contains(&"HOME".to_owned()) && names.contains(&"BAY_TEST_ENV_VAR".to_owned()));
}

#[cfg(unix)] // symlinks and user ids as Unix has them
#[tokio::test]
async fn planted_symlinks_cannot_redirect_file_calls() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let provider = local_provider(dir.path(), &ManualClock::new(start_time()));
    let id = provider.create(&Default::default()).await.unwrap().id;
    provider.write_file(&id, "keep.txt", "kept").await.unwrap();
    let workspace = std::fs::read_dir(dir.path().join("cargos"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // A link to a file that does not exist yet, outside: writing through it is refused.
    let target = outside.path().join("planted.txt");
    std::os::unix::fs::symlink(&target, workspace.join("dangling.txt")).unwrap();
    let refused = provider
        .write_file(&id, "dangling.txt", "no")
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidPath);
    assert!(!target.exists(), "nothing written outside");
    // Deleting a link to the workspace itself removes the link, not the workspace.
    std::os::unix::fs::symlink(".", workspace.join("self")).unwrap();
    provider.delete_file(&id, "self").await.unwrap();
    assert_eq!(provider.read_file(&id, "keep.txt").await.unwrap(), "kept");
    // Writing to the workspace itself is refused, and leaves nothing beside it.
    let root = provider.write_file(&id, "a/..", "x").await.unwrap_err();
    assert_eq!(root.code, ErrorCode::ShipError);
    assert!(root.message.contains("is a directory"), "{root}");
    let beside: Vec<_> = std::fs::read_dir(dir.path().join("cargos"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(beside.len(), 1, "{beside:?}");
}

#[tokio::test]
async fn replays_equal_the_first_answer_with_the_system_clock() {
    let dir = tempfile::tempdir().unwrap();
    let provider =
        LocalProvider::open(LocalConfig::new(dir.path()).isolation(IsolationMode::None)).unwrap();
    let request = CreateSandbox::default().ttl(600).idempotency_key("clock-1");
    let first = provider.create(&request).await.unwrap();
    let replay = provider.create(&request).await.unwrap();
    assert_eq!(first, replay);
    let extended = provider
        .extend_ttl(&first.id, 60, Some("clock-2"))
        .await
        .unwrap();
    let again = provider
        .extend_ttl(&first.id, 60, Some("clock-2"))
        .await
        .unwrap();
    assert_eq!(extended, again);
    // Keepalive moves the idle deadline and starts nothing.
    provider.keepalive(&first.id).await.unwrap();
    let kept = provider.get(&first.id).await.unwrap();
    assert_eq!((kept.status, kept.containers), (Status::Idle, None));
    assert!(kept.idle_expires_at.is_some());
    // A ttl too large to hold is refused, not taken as "no expiry".
    let huge = provider
        .create(&CreateSandbox::default().ttl(i64::MAX))
        .await
        .unwrap_err();
    assert_eq!(huge.code, ErrorCode::ValidationError);
}

#[cfg(unix)] // symlinks and user ids as Unix has them
#[tokio::test]
async fn bubblewrap_runs_code_as_nobody_in_workspace_with_a_tmp_and_installs_of_the_session() {
    if !python_available() || !crate::scenarios::pip_available() {
        return;
    }
    if !crate::common::bubblewrap_available() {
        return;
    }
    let target = crate::common::target(crate::common::Via::Bubblewrap).await;
    let provider = target.provider.clone();
    let id = provider.create(&Default::default()).await.unwrap().id;
    let shell = |command: &str| {
        let provider = provider.clone();
        let id = id.clone();
        let command = command.to_owned();
        async move {
            provider
                .shell_exec(&id, &ShellExec::new(command).timeout(120))
                .await
                .unwrap()
        }
    };
    // `/workspace` exists in the sandbox whether or not the host has one.
    let seen = shell("pwd; echo $HOME; touch /not-here 2>/dev/null || echo read-only").await;
    assert_eq!(
        seen.output.trim(),
        "/workspace\n/workspace\nread-only",
        "{seen:?}"
    );
    if std::fs::metadata("/proc/self")
        .is_ok_and(|metadata| std::os::unix::fs::MetadataExt::uid(&metadata) == 0)
    {
        let who = shell("id -u").await;
        assert_eq!(
            who.output.trim(),
            "65534",
            "a root server runs code as nobody"
        );
    }
    // What the code writes in the workspace is the host's file.
    shell("echo hello > note.txt").await;
    assert_eq!(
        provider.read_file(&id, "note.txt").await.unwrap(),
        "hello\n"
    );
    // The session's /tmp, and a plain `pip install`, last as long as the session.
    let python = |code: &str| {
        let provider = provider.clone();
        let id = id.clone();
        let code = code.to_owned();
        async move {
            provider
                .python_exec(&id, &wayline_sandbox::PythonExec::new(code).timeout(120))
                .await
                .unwrap()
        }
    };
    let built = python(crate::scenarios::BUILD_WHEEL).await;
    assert!(built.success, "{built:?}");
    // A new interpreter each time, as a script the code starts would be.
    let version = "import subprocess, sys\n\
                   found = subprocess.run([sys.executable, '-c', 'import wayline_fixture_pkg as p; \
                   print(p.__version__)'], capture_output=True, text=True)\n\
                   found.stdout.strip() or 'no-package'";
    let installed = python(
        "import subprocess, sys\n\
         subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-index', \
         '--find-links', 'wheels', 'wayline-fixture-pkg', '--disable-pip-version-check'], \
         check=True).returncode",
    )
    .await;
    assert!(installed.success, "{installed:?}");
    assert_eq!(python(version).await.output, "'2.31.0'");
    shell("echo kept > /tmp/mark").await;
    assert_eq!(
        shell("cat /tmp/mark").await.output.trim(),
        "kept",
        "one /tmp per session"
    );
    provider.stop(&id).await.unwrap();
    let after = shell("cat /tmp/mark 2>/dev/null || echo no-mark").await;
    assert_eq!(after.output.trim(), "no-mark", "{after:?}");
    assert_eq!(python(version).await.output, "'no-package'");
    assert!(
        provider.read_file(&id, "note.txt").await.is_ok(),
        "the workspace outlives the session"
    );
}

/// A profile's memory limit, its env file and the runtime's version, in both isolation modes
/// (bubblewrap where it runs here).
async fn limits_env_file_and_version(via: crate::common::Via) {
    if !python_available() {
        return;
    }
    let target = crate::common::target(via).await;
    let provider = target.provider.clone();
    // An allocation past the profile's memory fails; the sandbox stays readable and usable.
    let oom = provider
        .create(&wayline_sandbox::CreateSandbox::new("oom-test"))
        .await
        .unwrap()
        .id;
    let grabbed = provider
        .python_exec(&oom, &PythonExec::new("b = bytearray(500 * 1024 * 1024)"))
        .await
        .unwrap();
    assert!(!grabbed.success, "{grabbed:?}");
    assert!(grabbed.error.unwrap().contains("MemoryError"));
    provider
        .write_file(&oom, "still.txt", "readable")
        .await
        .unwrap();
    assert_eq!(
        provider.read_file(&oom, "still.txt").await.unwrap(),
        "readable"
    );
    let small = provider
        .python_exec(&oom, &PythonExec::new("len(bytearray(10 * 1024 * 1024))"))
        .await
        .unwrap();
    assert_eq!(small.output, "10485760", "{small:?}");
    let shell = provider
        .shell_exec(&oom, &ShellExec::new("ulimit -d"))
        .await
        .unwrap();
    assert_eq!(shell.output.trim(), "131072", "shell commands are held too");
    // The profile's env, also as Bay's env file; the runtime's version while it runs.
    let id = provider.create(&Default::default()).await.unwrap().id;
    let sourced = provider
        .shell_exec(
            &id,
            &ShellExec::new("env -i bash -c '. /workspace/.bay_env.sh 2>/dev/null || . ./.bay_env.sh; echo $BAY_TEST_ENV_VAR'"),
        )
        .await
        .unwrap();
    assert_eq!(sourced.output.trim(), "test-value-12345", "{sourced:?}");
    let running = provider.get(&id).await.unwrap();
    let version = running.containers.unwrap()[0]["version"].clone();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let profiles = provider.profiles().await.unwrap();
    let oom_profile = profiles.iter().find(|p| p.id == "oom-test").unwrap();
    assert_eq!(
        oom_profile.extra["resources"],
        serde_json::json!({"cpus": 0.5, "memory": "128m"})
    );
    let unlimited = profiles.iter().find(|p| p.id == "python-default").unwrap();
    let shown = &unlimited.extra["resources"];
    assert!(
        shown["cpus"].as_f64().is_some_and(|cpus| cpus >= 1.0),
        "both fields always present, as Bay's schema requires: the machine's without limits; {shown}"
    );
    if std::path::Path::new("/proc/meminfo").exists() {
        assert!(
            shown["memory"]
                .as_str()
                .is_some_and(|memory| memory.ends_with('m')),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn limits_env_file_and_version_locally() {
    limits_env_file_and_version(crate::common::Via::Local).await;
}

#[tokio::test]
async fn limits_env_file_and_version_in_bubblewrap() {
    if crate::common::bubblewrap_available() {
        limits_env_file_and_version(crate::common::Via::Bubblewrap).await;
    }
}

/// Issue 31, item 6: one cap for every kind of execution (Python's output was not capped: 600
/// MB came back and went to the history file), what is cut said in a last line.
#[tokio::test]
async fn every_kind_of_execution_keeps_its_output_within_one_cap() {
    use wayline_sandbox::local::output::MAX_OUTPUT_BYTES;
    let Some((_dir, provider, id)) = one_sandbox().await else {
        return;
    };
    let within = |text: &str| {
        assert!(text.len() < MAX_OUTPUT_BYTES + 200, "{} bytes", text.len());
        assert!(
            text.ends_with(&format!("an execution keeps {MAX_OUTPUT_BYTES}]")),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
    };
    // 12 MiB printed, written by a child process, raised, and given as the value.
    for code in [
        "for _ in range(12 * 1024):\n    print('x' * 1023)",
        "import subprocess\nsubprocess.run(['head', '-c', str(12 << 20), '/dev/zero'])",
        "'y' * (12 << 20)",
    ] {
        let ran = provider
            .python_exec(&id, &PythonExec::new(code))
            .await
            .unwrap();
        within(&ran.output);
    }
    let raised = provider
        .python_exec(&id, &PythonExec::new("raise ValueError('z' * (12 << 20))"))
        .await
        .unwrap();
    within(raised.error.as_deref().unwrap());
    let shell = provider
        .shell_exec(
            &id,
            &ShellExec::new("head -c 12582912 /dev/zero | tr '\\0' s"),
        )
        .await
        .unwrap();
    within(&shell.output);
    // The history keeps what the answer kept.
    let history = provider.history(&id, &Default::default()).await.unwrap();
    for entry in history.entries {
        assert!(entry.output.unwrap_or_default().len() < MAX_OUTPUT_BYTES + 200);
    }
    // And the session goes on.
    let next = provider
        .python_exec(&id, &PythonExec::new("1 + 1"))
        .await
        .unwrap();
    assert_eq!(next.output, "2");
}

/// Issue 31, item 7: a profile's memory holds shared memory too — an anonymous shared mapping
/// (the address space limit) and, under bubblewrap, files in `/dev/shm` (a private one of the
/// profile's size) — which the data limit alone let through.
#[tokio::test]
async fn shared_memory_is_held_to_the_profile_too() {
    if !python_available() {
        return;
    }
    let mut vias = vec![crate::common::Via::Local];
    if crate::common::bubblewrap_available() {
        vias.push(crate::common::Via::Bubblewrap);
    }
    for via in vias {
        let target = crate::common::target(via).await;
        let provider = target.provider.clone();
        let id = provider
            .create(&wayline_sandbox::CreateSandbox::new("oom-test"))
            .await
            .unwrap()
            .id;
        // 2 GiB shared: past the 128 MiB profile and the address space it is given.
        let mapped = provider
            .python_exec(
                &id,
                &PythonExec::new("import mmap\nm = mmap.mmap(-1, 2 << 30, flags=mmap.MAP_SHARED)"),
            )
            .await
            .unwrap();
        assert!(!mapped.success, "{via:?}: {mapped:?}");
        if via == crate::common::Via::Bubblewrap {
            let shm = provider
                .shell_exec(
                    &id,
                    &ShellExec::new(
                        "head -c 300000000 /dev/zero > /dev/shm/big; echo rc=$?; df -k /dev/shm | tail -1",
                    ),
                )
                .await
                .unwrap();
            let said = format!("{} {:?}", shm.output, shm.error);
            assert!(said.contains("No space left on device"), "{said}");
            assert!(said.contains("131072"), "the profile's 128 MiB: {said}");
        }
    }
}

/// Issue 31, item 3: under bubblewrap, code runs as a host user without privileges — as root,
/// `nobody` on the host (a user namespace's `nobody` was root to the kernel, and read
/// `/etc/shadow`) — and sees neither the data directory nor other sandboxes' files.
#[cfg(unix)]
#[tokio::test]
async fn code_in_bubblewrap_has_no_privileges_and_no_other_sandbox() {
    use std::os::unix::fs::PermissionsExt;
    if !python_available() || !crate::common::bubblewrap_available() {
        return;
    }
    let root = std::fs::metadata("/proc/self")
        .is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0);
    let target = crate::common::target(crate::common::Via::Bubblewrap).await;
    let provider = target.provider.clone();
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "root-only-secret").unwrap();
    std::fs::set_permissions(secret.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let first = provider.create(&Default::default()).await.unwrap().id;
    provider
        .write_file(&first, "mine.txt", "first-sandbox-secret")
        .await
        .unwrap();
    let second = provider.create(&Default::default()).await.unwrap().id;
    let data = target.dir.path().display().to_string();
    let seen = provider
        .shell_exec(
            &second,
            &ShellExec::new(format!(
                "id -u; cat {} 2>&1; ls -A {data} 2>&1 | wc -l; cat {data}/cargos/*/mine.txt 2>/dev/null; grep -rl first-sandbox-secret /tmp /workspace 2>/dev/null; echo end",
                secret.path().display()
            )),
        )
        .await
        .unwrap();
    let lines: Vec<&str> = seen.output.lines().collect();
    if root {
        assert_eq!(lines[0], "65534", "{}", seen.output);
        let shadow = provider
            .shell_exec(&second, &ShellExec::new("cat /etc/shadow"))
            .await
            .unwrap();
        assert!(!shadow.success, "{shadow:?}");
    }
    assert!(
        !seen.output.contains("root-only-secret") || !root,
        "{}",
        seen.output
    );
    assert_eq!(
        lines[2], "0",
        "the data directory is empty inside: {}",
        seen.output
    );
    assert_eq!(
        lines[3], "end",
        "no other sandbox's file is found: {}",
        seen.output
    );
    // The workspace and what the provider wrote into it are the code's to change.
    let own = provider
        .shell_exec(
            &first,
            &ShellExec::new("echo more >> mine.txt && mkdir -p d && touch d/x && echo ok"),
        )
        .await
        .unwrap();
    assert_eq!(own.output, "ok", "{own:?}");
    provider
        .write_file(&first, "nested/deep/file.txt", "x")
        .await
        .unwrap();
    let nested = provider
        .shell_exec(
            &first,
            &ShellExec::new("echo y > nested/deep/new.txt && echo ok"),
        )
        .await
        .unwrap();
    assert_eq!(nested.output, "ok", "{nested:?}");
}

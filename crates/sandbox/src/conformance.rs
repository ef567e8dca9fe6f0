//! The conformance suite every [`SandboxProvider`] passes: the [contract](crate::provider#contract)
//! checked through the trait alone, so it runs the same against the embedded provider, a Bay
//! deployment through [`BayClient`](crate::BayClient), or a provider of your own.
//!
//! Call [`all`] (or one part) from a test with a provider and the id of a profile that grants
//! `python`, `shell` and `filesystem`. Each check panics with a message naming the rule it
//! found broken. Every sandbox and cargo it makes, it deletes again when the check passes;
//! nothing depends on the provider's clock, so a real server can be checked too.
//!
//! ```no_run
//! # async fn check() {
//! use wayline_sandbox::{LocalConfig, LocalProvider, conformance};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let provider = LocalProvider::open(LocalConfig::new(dir.path())).unwrap();
//! conformance::all(&provider, "python-default").await;
//! # }
//! ```

use std::fmt::Debug;

use crate::error::ErrorCode;
use crate::provider::{
    Annotation, CargoQuery, CreateCargo, CreateSandbox, HistoryQuery, ListQuery, PythonExec,
    SandboxProvider, SandboxResult, ShellExec,
};

/// Every part of the suite, in turn: [`lifecycle`], [`idempotency`], [`ttl`], [`exec`],
/// [`files`], [`history`], [`capabilities`] and [`cargos`].
pub async fn all(provider: &dyn SandboxProvider, profile: &str) {
    lifecycle(provider, profile).await;
    idempotency(provider, profile).await;
    ttl(provider, profile).await;
    exec(provider, profile).await;
    files(provider, profile).await;
    history(provider, profile).await;
    capabilities(provider).await;
    cargos(provider, profile).await;
}

/// Fails with `rule` unless `result` is the error `code`.
fn refused<T: Debug>(result: SandboxResult<T>, code: ErrorCode, rule: &str) {
    match result {
        Err(error) if error.code == code => {}
        Err(error) => panic!(
            "{rule}: expected `{code:?}`, got `{:?}`: {}",
            error.code, error
        ),
        Ok(value) => panic!("{rule}: expected `{code:?}`, got an answer: {value:?}"),
    }
}

/// `result`'s answer, or a failure naming `rule`.
fn answered<T>(result: SandboxResult<T>, rule: &str) -> T {
    result.unwrap_or_else(|error| panic!("{rule}: {error}"))
}

/// A new sandbox of `profile` (no expiry); its id.
async fn created(provider: &dyn SandboxProvider, profile: &str) -> String {
    let info = answered(
        provider.create(&CreateSandbox::new(profile)).await,
        "create makes a sandbox of a profile the provider offers",
    );
    assert!(!info.id.is_empty(), "a created sandbox has an id");
    assert_eq!(info.profile, profile, "a created sandbox keeps its profile");
    info.id
}

/// Deletes sandbox `id` (the end of a check that passed).
async fn deleted(provider: &dyn SandboxProvider, id: &str) {
    answered(provider.delete(id).await, "delete removes a sandbox");
}

/// Create, read, list, stop and delete: a sandbox is found by id and in the list until it is
/// deleted; then it is `not_found`, and deleting it again succeeds.
pub async fn lifecycle(provider: &dyn SandboxProvider, profile: &str) {
    let id = created(provider, profile).await;
    let read = answered(provider.get(&id).await, "get reads a sandbox just created");
    assert_eq!(read.id, id, "get answers the sandbox asked for");
    assert_eq!(
        read.expires_at, None,
        "a sandbox made without a TTL never expires"
    );

    // Listed, a page at a time, by id.
    let mut cursor = None;
    let mut seen = Vec::new();
    for _ in 0..1_000 {
        let mut query = ListQuery::new().limit(200);
        query.cursor = cursor.take();
        let page = answered(
            provider.list(&query).await,
            "list pages through the sandboxes",
        );
        seen.extend(page.items.into_iter().map(|info| info.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(seen.contains(&id), "list holds a sandbox that exists");
    refused(
        provider.list(&ListQuery::new().limit(0)).await,
        ErrorCode::ValidationError,
        "a page limit of 0 is a validation error",
    );

    answered(provider.keepalive(&id).await, "keepalive on a sandbox");
    answered(provider.stop(&id).await, "stop a sandbox");
    answered(provider.stop(&id).await, "stop is idempotent");
    answered(provider.get(&id).await, "a stopped sandbox is still there");

    deleted(provider, &id).await;
    refused(
        provider.get(&id).await,
        ErrorCode::NotFound,
        "a deleted sandbox is not_found",
    );
    answered(
        provider.delete(&id).await,
        "deleting an already deleted sandbox succeeds",
    );
    refused(
        provider.get("sandbox-000000000000").await,
        ErrorCode::NotFound,
        "an unknown sandbox is not_found",
    );
    refused(
        provider
            .create(&CreateSandbox::new("no-such-profile-wayline"))
            .await,
        ErrorCode::ValidationError,
        "an unknown profile is a validation error",
    );
}

/// `create` with an idempotency key replays its first answer for the same request and
/// refuses another request with `conflict`.
pub async fn idempotency(provider: &dyn SandboxProvider, profile: &str) {
    let key = format!("conformance-{:016x}", fastrand::u64(..));
    let request = CreateSandbox::new(profile).idempotency_key(key.clone());
    let first = answered(
        provider.create(&request).await,
        "create with an idempotency key",
    );
    let again = answered(
        provider.create(&request).await,
        "create repeated with its idempotency key",
    );
    assert_eq!(
        again.id, first.id,
        "a repeated create with the same key answers the same sandbox"
    );
    refused(
        provider
            .create(&CreateSandbox::new(profile).ttl(600).idempotency_key(key))
            .await,
        ErrorCode::Conflict,
        "an idempotency key reused for another request is a conflict",
    );
    deleted(provider, &first.id).await;
}

/// `extend_ttl` in Bay's order: `extend_by <= 0` is `validation_error`, unknown is
/// `not_found`, no expiry is `sandbox_ttl_infinite`, else the expiry moves by `extend_by` at
/// least.
pub async fn ttl(provider: &dyn SandboxProvider, profile: &str) {
    let forever = created(provider, profile).await;
    refused(
        provider.extend_ttl(&forever, 0, None).await,
        ErrorCode::ValidationError,
        "extend_ttl by 0 is a validation error",
    );
    refused(
        provider.extend_ttl("sandbox-000000000000", 60, None).await,
        ErrorCode::NotFound,
        "extend_ttl of an unknown sandbox is not_found",
    );
    refused(
        provider.extend_ttl(&forever, 60, None).await,
        ErrorCode::SandboxTtlInfinite,
        "extend_ttl of a sandbox without expiry is sandbox_ttl_infinite",
    );
    deleted(provider, &forever).await;

    let info = answered(
        provider
            .create(&CreateSandbox::new(profile).ttl(3_600))
            .await,
        "create with a TTL",
    );
    let expires = info
        .expires_at
        .unwrap_or_else(|| panic!("a sandbox made with a TTL has an expiry: {info:?}"));
    let extended = answered(
        provider.extend_ttl(&info.id, 600, None).await,
        "extend_ttl of a live sandbox",
    );
    let moved = extended
        .expires_at
        .unwrap_or_else(|| panic!("an extended sandbox has an expiry: {extended:?}"));
    assert!(
        moved >= expires + chrono::Duration::seconds(600),
        "extend_ttl moves the expiry to max(old, now) + extend_by: {expires} became {moved}"
    );
    deleted(provider, &info.id).await;
}

/// Python keeps its variables within a session and loses them on `stop`; an error or a
/// timeout is a successful call with `success: false`; shell commands report their exit code
/// and run in `cwd`; a timeout out of range is a validation error.
pub async fn exec(provider: &dyn SandboxProvider, profile: &str) {
    let id = created(provider, profile).await;
    let set = answered(
        provider
            .python_exec(&id, &PythonExec::new("kept = 41"))
            .await,
        "python_exec runs code",
    );
    assert!(set.success, "an assignment succeeds: {set:?}");
    let read = answered(
        provider
            .python_exec(&id, &PythonExec::new("print(kept + 1)"))
            .await,
        "python_exec runs code in the same session",
    );
    assert!(
        read.success && read.output.contains("42"),
        "a session keeps its variables between executions: {read:?}"
    );
    let failed = answered(
        provider.python_exec(&id, &PythonExec::new("1 / 0")).await,
        "a Python error is a successful call",
    );
    assert!(
        !failed.success
            && failed
                .error
                .as_deref()
                .is_some_and(|error| error.contains("ZeroDivisionError")),
        "a Python error answers success: false with the traceback in `error`: {failed:?}"
    );
    let slow = answered(
        provider
            .python_exec(
                &id,
                &PythonExec::new("import time; time.sleep(30)").timeout(1),
            )
            .await,
        "a Python timeout is a successful call",
    );
    assert!(
        !slow.success,
        "a Python timeout answers success: false: {slow:?}"
    );
    refused(
        provider
            .python_exec(&id, &PythonExec::new("1").timeout(0))
            .await,
        ErrorCode::ValidationError,
        "a timeout of 0 seconds is a validation error",
    );

    let shell = answered(
        provider
            .shell_exec(&id, &ShellExec::new("echo out; exit 3"))
            .await,
        "shell_exec runs a command",
    );
    assert!(
        !shell.success && shell.exit_code == Some(3) && shell.output.contains("out"),
        "a shell command reports its output and exit code: {shell:?}"
    );
    answered(
        provider
            .shell_exec(&id, &ShellExec::new("mkdir -p inner/dir"))
            .await,
        "shell_exec makes a directory",
    );
    let here = answered(
        provider
            .shell_exec(&id, &ShellExec::new("pwd").cwd("inner/dir"))
            .await,
        "shell_exec in a cwd",
    );
    assert!(
        here.success && here.output.trim_end().ends_with("/inner/dir"),
        "a shell command runs in its cwd: {here:?}"
    );
    refused(
        provider
            .shell_exec(&id, &ShellExec::new("pwd").cwd("../.."))
            .await,
        ErrorCode::InvalidPath,
        "a cwd that climbs out of the workspace is invalid_path",
    );

    answered(
        provider.write_file(&id, "kept.txt", "still here").await,
        "write_file before a stop",
    );
    answered(provider.stop(&id).await, "stop a running sandbox");
    let lost = answered(
        provider
            .python_exec(&id, &PythonExec::new("print(kept)"))
            .await,
        "python_exec after a stop starts a new session",
    );
    assert!(
        !lost.success,
        "stop loses the session's variables: {lost:?}"
    );
    assert_eq!(
        answered(
            provider.read_file(&id, "kept.txt").await,
            "read_file after a stop"
        ),
        "still here",
        "stop keeps the files"
    );
    deleted(provider, &id).await;
    refused(
        provider.python_exec(&id, &PythonExec::new("1")).await,
        ErrorCode::NotFound,
        "an execution in a deleted sandbox is not_found",
    );
}

/// Files written are read, listed, downloaded and seen by code; a missing file is
/// `ship_error` to read and `file_not_found` to download; paths that are absolute or climb
/// out of the workspace are `invalid_path`.
pub async fn files(provider: &dyn SandboxProvider, profile: &str) {
    let id = created(provider, profile).await;
    answered(
        provider
            .write_file(&id, "notes/a.txt", "first line\n")
            .await,
        "write_file creates its parents",
    );
    assert_eq!(
        answered(provider.read_file(&id, "notes/a.txt").await, "read_file"),
        "first line\n",
        "a file reads back as written"
    );
    answered(
        provider.write_file(&id, "notes/a.txt", "replaced").await,
        "write_file overwrites",
    );
    assert_eq!(
        answered(provider.read_file(&id, "notes/a.txt").await, "read_file"),
        "replaced",
        "write_file overwrites a file"
    );
    let bytes: Vec<u8> = (0..=255).collect();
    let uploaded = answered(
        provider.upload(&id, "notes/b.bin", bytes.clone()).await,
        "upload",
    );
    assert_eq!(uploaded.size, 256, "an upload says how many bytes it wrote");
    assert_eq!(
        answered(provider.download(&id, "notes/b.bin").await, "download"),
        bytes,
        "a download answers the bytes uploaded"
    );
    let listed = answered(provider.list_files(&id, "notes").await, "list_files");
    let names: Vec<&str> = listed.iter().map(|entry| entry.name.as_str()).collect();
    assert_eq!(
        names,
        ["a.txt", "b.bin"],
        "a directory lists its entries by name"
    );
    let seen = answered(
        provider
            .shell_exec(&id, &ShellExec::new("cat notes/a.txt"))
            .await,
        "code reads a written file",
    );
    assert_eq!(
        seen.output.trim(),
        "replaced",
        "code sees the files written"
    );

    answered(
        provider.delete_file(&id, "notes/a.txt").await,
        "delete_file",
    );
    refused(
        provider.read_file(&id, "notes/a.txt").await,
        ErrorCode::ShipError,
        "reading a missing file is ship_error",
    );
    refused(
        provider.download(&id, "notes/a.txt").await,
        ErrorCode::FileNotFound,
        "downloading a missing file is file_not_found",
    );
    for path in ["../outside.txt", "/etc/hostname", "notes/../../outside.txt"] {
        refused(
            provider.write_file(&id, path, "x").await,
            ErrorCode::InvalidPath,
            &format!("writing `{path}` is invalid_path"),
        );
        refused(
            provider.read_file(&id, path).await,
            ErrorCode::InvalidPath,
            &format!("reading `{path}` is invalid_path"),
        );
    }
    deleted(provider, &id).await;
}

/// Executions are kept newest first with what was run, read one by one, and annotated.
pub async fn history(provider: &dyn SandboxProvider, profile: &str) {
    let id = created(provider, profile).await;
    let mut tagged = PythonExec::new("print('first')");
    tagged.description = Some("the first".to_owned());
    tagged.tags = Some("conformance,python".to_owned());
    let first = answered(provider.python_exec(&id, &tagged).await, "python_exec");
    let second = answered(
        provider
            .shell_exec(&id, &ShellExec::new("echo second"))
            .await,
        "shell_exec",
    );
    let page = answered(
        provider.history(&id, &HistoryQuery::default()).await,
        "history",
    );
    let ids: Vec<&str> = page.entries.iter().map(|entry| entry.id.as_str()).collect();
    assert_eq!(
        ids,
        [second.execution_id.as_str(), first.execution_id.as_str()],
        "history lists the executions newest first"
    );
    assert_eq!(page.total, 2, "history counts every match");
    let shells = answered(
        provider
            .history(
                &id,
                &HistoryQuery {
                    exec_type: Some("shell".to_owned()),
                    ..HistoryQuery::default()
                },
            )
            .await,
        "history of one kind",
    );
    assert_eq!(shells.total, 1, "history filters by kind");
    let entry = answered(
        provider.execution(&id, &first.execution_id).await,
        "execution",
    );
    assert_eq!(entry.exec_type, "python", "an execution keeps its kind");
    assert_eq!(entry.code, "print('first')", "an execution keeps its code");
    assert_eq!(
        entry.description.as_deref(),
        Some("the first"),
        "an execution keeps its description"
    );
    let annotated = answered(
        provider
            .annotate(
                &id,
                &first.execution_id,
                &Annotation {
                    notes: Some("looked at".to_owned()),
                    ..Annotation::default()
                },
            )
            .await,
        "annotate",
    );
    assert_eq!(
        annotated.notes.as_deref(),
        Some("looked at"),
        "annotate sets notes"
    );
    assert_eq!(
        annotated.description.as_deref(),
        Some("the first"),
        "annotate keeps what it was not given"
    );
    refused(
        provider.execution(&id, "exec-000000000000").await,
        ErrorCode::NotFound,
        "an unknown execution is not_found",
    );
    deleted(provider, &id).await;
}

/// A capability call on a sandbox whose profile lacks the capability is
/// `capability_not_supported`. Checked with the first profile the provider offers that lacks
/// `shell`, `python` or `filesystem`; a provider whose profiles all grant all three passes.
pub async fn capabilities(provider: &dyn SandboxProvider) {
    let profiles = answered(provider.profiles().await, "profiles");
    let lacking = profiles.iter().find_map(|profile| {
        ["shell", "python", "filesystem"]
            .into_iter()
            .find(|capability| !profile.capabilities.iter().any(|held| held == capability))
            .map(|capability| (profile.id.clone(), capability))
    });
    let Some((profile, capability)) = lacking else {
        return;
    };
    let id = created(provider, &profile).await;
    let rule = format!("`{capability}` on a profile without it is capability_not_supported");
    match capability {
        "shell" => refused(
            provider.shell_exec(&id, &ShellExec::new("true")).await,
            ErrorCode::CapabilityNotSupported,
            &rule,
        ),
        "python" => refused(
            provider.python_exec(&id, &PythonExec::new("1")).await,
            ErrorCode::CapabilityNotSupported,
            &rule,
        ),
        _ => refused(
            provider.read_file(&id, "anything.txt").await,
            ErrorCode::CapabilityNotSupported,
            &rule,
        ),
    }
    deleted(provider, &id).await;
}

/// An external cargo outlives the sandboxes that mount it and cannot be deleted while one
/// does; a sandbox's own cargo is managed.
pub async fn cargos(provider: &dyn SandboxProvider, profile: &str) {
    let cargo = answered(
        provider.create_cargo(&CreateCargo::default()).await,
        "create_cargo",
    );
    assert!(!cargo.managed, "a cargo made on its own is external");
    let listed = answered(
        provider.list_cargos(&CargoQuery::default()).await,
        "list_cargos",
    );
    assert!(
        listed.items.iter().any(|item| item.id == cargo.id),
        "list_cargos holds an external cargo"
    );
    let mut mounting = CreateSandbox::new(profile);
    mounting.cargo_id = Some(cargo.id.clone());
    let first = answered(
        provider.create(&mounting).await,
        "create a sandbox on an external cargo",
    );
    assert_eq!(
        first.cargo_id.as_deref(),
        Some(cargo.id.as_str()),
        "a sandbox mounts the cargo it was given"
    );
    answered(
        provider.write_file(&first.id, "shared.txt", "kept").await,
        "write_file on an external cargo",
    );
    refused(
        provider.delete_cargo(&cargo.id).await,
        ErrorCode::Conflict,
        "a cargo in use cannot be deleted",
    );
    deleted(provider, &first.id).await;
    answered(
        provider.get_cargo(&cargo.id).await,
        "an external cargo outlives its sandbox",
    );
    let second = answered(
        provider.create(&mounting).await,
        "another sandbox on the same cargo",
    );
    assert_eq!(
        answered(
            provider.read_file(&second.id, "shared.txt").await,
            "read_file"
        ),
        "kept",
        "an external cargo keeps its files for the next sandbox"
    );
    deleted(provider, &second.id).await;
    answered(
        provider.delete_cargo(&cargo.id).await,
        "delete an unused cargo",
    );
    refused(
        provider.get_cargo(&cargo.id).await,
        ErrorCode::NotFound,
        "a deleted cargo is not_found",
    );

    let own = created(provider, profile).await;
    let info = answered(provider.get(&own).await, "get");
    let own_cargo = info
        .cargo_id
        .unwrap_or_else(|| panic!("a sandbox names its cargo: {own}"));
    let managed = answered(provider.get_cargo(&own_cargo).await, "get_cargo");
    assert!(
        managed.managed && managed.managed_by_sandbox_id.as_deref() == Some(own.as_str()),
        "a sandbox's own cargo is managed by it: {managed:?}"
    );
    deleted(provider, &own).await;
}

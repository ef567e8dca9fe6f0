//! Bay's error codes, from the local provider and through `BayClient` over HTTP: the same
//! checks run against both, so the wire keeps every code, status and detail.

use chrono::Duration;
use serde_json::json;
use wayline_sandbox::{CreateSandbox, ErrorCode, SandboxError, ShellExec};

use crate::common::{Target, Via, python_available, target};

both!(every_path_rule_is_invalid_path);
both!(expiry_and_infinite_ttl);
both!(a_missing_capability_names_what_is_available);
both!(idempotency_conflicts_and_bad_keys);
both!(unknown_sandboxes_profiles_and_files);

async fn sandbox(target: &Target, profile: &str) -> String {
    target
        .provider
        .create(&CreateSandbox::new(profile))
        .await
        .unwrap()
        .id
}

fn reason(error: &SandboxError) -> (ErrorCode, &str, &str) {
    (
        error.code,
        error.details["field"].as_str().unwrap_or_default(),
        error.details["reason"].as_str().unwrap_or_default(),
    )
}

async fn every_path_rule_is_invalid_path(via: Via) {
    let target = target(via).await;
    let id = sandbox(&target, "python-default").await;
    let provider = &target.provider;
    for (path, expected) in [
        ("", "empty_path"),
        ("a\0b", "null_byte"),
        ("/etc/passwd", "absolute_path"),
        ("../outside.txt", "path_traversal"),
        ("a/../../outside.txt", "path_traversal"),
    ] {
        let read = provider.read_file(&id, path).await.unwrap_err();
        assert_eq!(
            reason(&read),
            (ErrorCode::InvalidPath, "path", expected),
            "read {path:?}"
        );
        let write = provider.write_file(&id, path, "x").await.unwrap_err();
        assert_eq!(reason(&write).2, expected, "write {path:?}");
        let upload = provider.upload(&id, path, b"x".to_vec()).await.unwrap_err();
        assert_eq!(reason(&upload).2, expected, "upload {path:?}: {upload:?}");
        let download = provider.download(&id, path).await.unwrap_err();
        assert_eq!(reason(&download).2, expected, "download {path:?}");
        let delete = provider.delete_file(&id, path).await.unwrap_err();
        assert_eq!(reason(&delete).2, expected, "delete {path:?}");
        let list = provider.list_files(&id, path).await.unwrap_err();
        assert_eq!(reason(&list).2, expected, "list {path:?}");
        assert_eq!(read.status(), 400);
    }
    // `a/../x` is allowed, and normalized.
    provider.write_file(&id, "a/../x.txt", "ok").await.unwrap();
    assert_eq!(provider.read_file(&id, "x.txt").await.unwrap(), "ok");
    // Hidden files are allowed.
    provider
        .write_file(&id, ".gitignore", "*.pyc")
        .await
        .unwrap();
    // The shell's cwd has the same rules, reported on the `cwd` field.
    let cwd = provider
        .shell_exec(&id, &ShellExec::new("pwd").cwd("../.."))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&cwd),
        (ErrorCode::InvalidPath, "cwd", "path_traversal")
    );
    let absolute = provider
        .shell_exec(&id, &ShellExec::new("pwd").cwd("/tmp"))
        .await
        .unwrap_err();
    assert_eq!(reason(&absolute).2, "absolute_path");
    // A symlink that leads out of the workspace is refused too.
    let link = provider
        .shell_exec(&id, &ShellExec::new("ln -s / escape && ln -s .. up"))
        .await
        .unwrap();
    assert!(link.success, "{link:?}");
    for path in ["escape/etc/hostname", "up/state.json", "escape"] {
        let escaped = provider.read_file(&id, path).await.unwrap_err();
        assert_eq!(
            reason(&escaped),
            (ErrorCode::InvalidPath, "path", "path_traversal"),
            "{path}"
        );
    }
    let escaped_write = provider
        .write_file(&id, "escape/tmp/wayline-escaped", "no")
        .await
        .unwrap_err();
    assert_eq!(reason(&escaped_write).2, "path_traversal");
    let escaped_cwd = provider
        .shell_exec(&id, &ShellExec::new("pwd").cwd("escape"))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&escaped_cwd),
        (ErrorCode::InvalidPath, "cwd", "path_traversal")
    );
}

async fn expiry_and_infinite_ttl(via: Via) {
    let target = target(via).await;
    let provider = &target.provider;
    let forever = provider
        .create(&CreateSandbox::default().ttl(0))
        .await
        .unwrap();
    assert_eq!(forever.expires_at, None, "a ttl of 0 means no expiry");
    let infinite = provider
        .extend_ttl(&forever.id, 60, None)
        .await
        .unwrap_err();
    assert_eq!(
        (infinite.code, infinite.status()),
        (ErrorCode::SandboxTtlInfinite, 409)
    );
    assert_eq!(infinite.details, json!({"sandbox_id": forever.id}));
    let zero = provider.extend_ttl(&forever.id, 0, None).await.unwrap_err();
    assert_eq!(
        (zero.code, zero.status()),
        (ErrorCode::ValidationError, 400),
        "extend_by <= 0 is checked first"
    );
    let short = provider
        .create(&CreateSandbox::default().ttl(10))
        .await
        .unwrap();
    target.clock.advance(Duration::seconds(11));
    let expired = provider.extend_ttl(&short.id, 60, None).await.unwrap_err();
    assert_eq!(
        (expired.code, expired.status()),
        (ErrorCode::SandboxExpired, 409)
    );
    assert!(expired.details["expires_at"].is_string(), "{expired:?}");
    // No resurrection through a call either.
    if python_available() {
        let exec = provider
            .python_exec(&short.id, &wayline_sandbox::PythonExec::new("1"))
            .await
            .unwrap_err();
        assert_eq!(exec.code, ErrorCode::SandboxExpired);
    }
}

async fn a_missing_capability_names_what_is_available(via: Via) {
    let target = target(via).await;
    let id = sandbox(&target, "python-only-test").await;
    let shell = target
        .provider
        .shell_exec(&id, &ShellExec::new("echo hi"))
        .await
        .unwrap_err();
    assert_eq!(
        (shell.code, shell.status()),
        (ErrorCode::CapabilityNotSupported, 400)
    );
    assert_eq!(
        shell.details,
        json!({"capability": "shell", "available": ["python"]})
    );
    // Capability is checked before the path.
    let file = target
        .provider
        .read_file(&id, "/etc/passwd")
        .await
        .unwrap_err();
    assert_eq!(file.code, ErrorCode::CapabilityNotSupported);
    assert_eq!(file.details["capability"], "filesystem");
}

async fn idempotency_conflicts_and_bad_keys(via: Via) {
    let target = target(via).await;
    let provider = &target.provider;
    let first = provider
        .create(&CreateSandbox::default().ttl(60).idempotency_key("key-1"))
        .await
        .unwrap();
    let conflict = provider
        .create(&CreateSandbox::default().ttl(61).idempotency_key("key-1"))
        .await
        .unwrap_err();
    assert_eq!(
        (conflict.code, conflict.status()),
        (ErrorCode::Conflict, 409)
    );
    // The key is shared across endpoints: using it on extend_ttl is another request.
    let elsewhere = provider
        .extend_ttl(&first.id, 30, Some("key-1"))
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code, ErrorCode::Conflict);
    let bad = provider
        .create(&CreateSandbox::default().idempotency_key("not a valid key!"))
        .await
        .unwrap_err();
    assert_eq!((bad.code, bad.status()), (ErrorCode::Conflict, 409));
    assert_eq!(bad.details["key"], "not a valid key!");
    // Errors are not stored: a key whose first use failed can be used again.
    let failed = provider
        .create(&CreateSandbox::new("no-such-profile").idempotency_key("key-2"))
        .await
        .unwrap_err();
    assert_eq!(failed.code, ErrorCode::ValidationError);
    provider
        .create(&CreateSandbox::default().idempotency_key("key-2"))
        .await
        .unwrap();
    // Keys expire (Bay keeps them an hour).
    target.clock.advance(Duration::hours(2));
    let fresh = provider
        .create(&CreateSandbox::default().ttl(61).idempotency_key("key-1"))
        .await
        .unwrap();
    assert_ne!(fresh.id, first.id);
}

async fn unknown_sandboxes_profiles_and_files(via: Via) {
    let target = target(via).await;
    let provider = &target.provider;
    let unknown = provider.get("sandbox-000000000000").await.unwrap_err();
    assert_eq!((unknown.code, unknown.status()), (ErrorCode::NotFound, 404));
    assert_eq!(
        provider
            .delete("sandbox-000000000000")
            .await
            .unwrap_err()
            .code,
        ErrorCode::NotFound,
        "a never-existing id is 404"
    );
    let profile = provider
        .create(&CreateSandbox::new("gpu-huge"))
        .await
        .unwrap_err();
    assert_eq!(
        (profile.code, profile.message.as_str()),
        (ErrorCode::ValidationError, "Invalid profile: gpu-huge")
    );
    let id = sandbox(&target, "python-default").await;
    // Bay's quirk: a missing file is a Ship error on read and delete, 404 only on download.
    let read = provider.read_file(&id, "missing.txt").await.unwrap_err();
    assert_eq!((read.code, read.status()), (ErrorCode::ShipError, 502));
    let delete = provider.delete_file(&id, "missing.txt").await.unwrap_err();
    assert_eq!(delete.code, ErrorCode::ShipError);
    let download = provider.download(&id, "missing.txt").await.unwrap_err();
    assert_eq!(
        (download.code, download.status()),
        (ErrorCode::FileNotFound, 404)
    );
    provider.delete(&id).await.unwrap();
    provider.delete(&id).await.unwrap();
    let after = provider.read_file(&id, "x").await.unwrap_err();
    assert_eq!(after.code, ErrorCode::NotFound);
}

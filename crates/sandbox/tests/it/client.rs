//! `BayClient` against `mockito`: Bay's wire details that the loopback server cannot provoke
//! (retries on 5xx, FastAPI's 422 shape as Bay sends it, non-JSON error bodies, naive
//! timestamps, auth and idempotency headers).

use mockito::Matcher;
use serde_json::json;
use wayline_sandbox::{CreateSandbox, ErrorCode, PythonExec, SandboxProvider, Status};

use crate::common::{TOKEN, client_for};

fn sandbox_json(id: &str) -> serde_json::Value {
    json!({
        "id": id, "status": "idle", "profile": "python-default", "cargo_id": "ws-0123456789ab",
        "capabilities": ["filesystem", "shell", "python"],
        "created_at": "2026-11-22T04:02:59.609120", "expires_at": null,
        "idle_expires_at": "2026-11-22T04:32:59.609120", "containers": null
    })
}

#[tokio::test]
async fn a_get_is_retried_on_503_and_reads_naive_timestamps() {
    let mut server = mockito::Server::new_async().await;
    let busy = server
        .mock("GET", "/v1/sandboxes/sandbox-1")
        .match_header("authorization", format!("Bearer {TOKEN}").as_str())
        .with_status(503)
        .with_body(r#"{"error":{"code":"session_not_ready","message":"starting","details":{"retry_after_ms":1000}}}"#)
        .expect(4)
        .create_async()
        .await;
    let client = client_for(&server.url());
    // All four attempts (one plus three retries) busy: the error comes through with its retry hint.
    let error = client.get("sandbox-1").await.unwrap_err();
    busy.assert_async().await;
    assert_eq!(error.code, ErrorCode::SessionNotReady);
    assert_eq!(error.retry_after_ms(), Some(1000));
    busy.remove_async().await;
    // Three failures, then a success.
    let flaky = server
        .mock("GET", "/v1/sandboxes/sandbox-2")
        .with_status(502)
        .with_body("Bad Gateway")
        .expect(3)
        .create_async()
        .await;
    let fine = server
        .mock("GET", "/v1/sandboxes/sandbox-2")
        .with_status(200)
        .with_body(sandbox_json("sandbox-2").to_string())
        .create_async()
        .await;
    let _ = (&flaky, &fine);
    // mockito answers the first matching mock until its `expect` is used up, then the next.
    let info = client.get("sandbox-2").await.unwrap();
    flaky.assert_async().await;
    fine.assert_async().await;
    assert_eq!(info.status, Status::Idle);
    assert_eq!(
        info.created_at.to_rfc3339(),
        "2026-11-22T04:02:59.609120+00:00"
    );
}

#[tokio::test]
async fn exec_is_never_retried_and_posts_only_with_a_key() {
    let mut server = mockito::Server::new_async().await;
    let exec = server
        .mock("POST", "/v1/sandboxes/sandbox-1/python/exec")
        .match_body(Matcher::PartialJson(json!({"code": "1", "timeout": 30})))
        .with_status(503)
        .with_body(r#"{"error":{"code":"session_not_ready","message":"starting","details":{"sandbox_id":"sandbox-1","retry_after_ms":1000}}}"#)
        .expect(1)
        .create_async()
        .await;
    let client = client_for(&server.url());
    let error = client
        .python_exec("sandbox-1", &PythonExec::new("1"))
        .await
        .unwrap_err();
    exec.assert_async().await;
    assert_eq!(error.code, ErrorCode::SessionNotReady);
    // A create without a key is not retried either...
    let unkeyed = server
        .mock("POST", "/v1/sandboxes")
        .match_header("idempotency-key", Matcher::Missing)
        .with_status(500)
        .with_body("Internal Server Error")
        .expect(1)
        .create_async()
        .await;
    let failed = client.create(&CreateSandbox::default()).await.unwrap_err();
    unkeyed.assert_async().await;
    assert_eq!(failed.code, ErrorCode::InternalError);
    // ...with one it is, and the key and the SDK's body go out each time.
    let keyed = server
        .mock("POST", "/v1/sandboxes")
        .match_header("idempotency-key", "create-1")
        .match_body(Matcher::Json(
            json!({"profile": "python-default", "ttl": 60}),
        ))
        .with_status(500)
        .with_body("Internal Server Error")
        .expect(4)
        .create_async()
        .await;
    let error = client
        .create(&CreateSandbox::default().ttl(60).idempotency_key("create-1"))
        .await
        .unwrap_err();
    keyed.assert_async().await;
    assert_eq!(error.code, ErrorCode::InternalError);
    assert_eq!(
        error.details["raw_response_snippet"],
        "Internal Server Error"
    );
}

#[tokio::test]
async fn fastapis_422_and_non_json_errors_become_typed_errors() {
    let mut server = mockito::Server::new_async().await;
    let _invalid = server
        .mock("POST", "/v1/sandboxes/sandbox-1/shell/exec")
        .with_status(422)
        .with_header("content-type", "application/json")
        .with_body(
            json!({"detail": [{"type": "less_than_equal", "loc": ["body", "timeout"],
                "msg": "Input should be less than or equal to 300", "input": 301,
                "ctx": {"le": 300}}]})
            .to_string(),
        )
        .create_async()
        .await;
    let client = client_for(&server.url());
    let error = client
        .shell_exec(
            "sandbox-1",
            &wayline_sandbox::ShellExec::new("ls").timeout(301),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationError);
    assert_eq!(
        error.message,
        "body.timeout: Input should be less than or equal to 300"
    );
    assert_eq!(error.details["errors"][0]["ctx"]["le"], 300);
    // A proxy's HTML 404 and a long plain-text 502.
    let _html = server
        .mock("DELETE", "/v1/sandboxes/sandbox-9")
        .with_status(404)
        .with_body("<html><body>Not Found</body></html>")
        .create_async()
        .await;
    let missing = client.delete("sandbox-9").await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert_eq!(
        missing.details["raw_response_snippet"],
        "<html><body>Not Found</body></html>"
    );
    assert_eq!(missing.details["raw_response_truncated"], false);
    let long = "x".repeat(800);
    let _gateway = server
        .mock("GET", "/v1/sandboxes/sandbox-9/filesystem/files")
        .match_query(Matcher::UrlEncoded("path".into(), "src/a b.py".into()))
        .with_status(502)
        .with_body(&long)
        .expect(4)
        .create_async()
        .await;
    let gateway = client
        .read_file("sandbox-9", "src/a b.py")
        .await
        .unwrap_err();
    assert_eq!(gateway.code, ErrorCode::ShipError);
    assert_eq!(
        gateway.details["raw_response_snippet"]
            .as_str()
            .unwrap()
            .len(),
        500
    );
    assert_eq!(gateway.details["raw_response_truncated"], true);
    // An unreachable Bay is an error that says where, with no panic and no secret.
    let gone = client_for("http://127.0.0.1:9");
    let unreachable = gone.get("sandbox-1").await.unwrap_err();
    assert!(
        unreachable
            .message
            .contains("cannot reach Bay at http://127.0.0.1:9"),
        "{unreachable}"
    );
    assert!(!format!("{unreachable:?}{gone:?}").contains(TOKEN));
}

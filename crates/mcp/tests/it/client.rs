//! `McpServers` (the engine's MCP client) against server-everything on stdio.

use std::time::Duration;

use serde_json::json;
use wayline_core::mcp::{McpCall, McpClient, McpErrorKind};
use wayline_mcp::McpServers;

use crate::support::{everything, everything_servers};

#[tokio::test]
async fn tools_are_called_and_their_content_read() {
    let Some(executable) = everything() else {
        return;
    };
    let client = McpServers::new(everything_servers(&executable));

    let echo = client
        .call(McpCall::new("everything", "echo", json!({"message": "hi"})))
        .await
        .unwrap();
    assert!(!echo.is_error);
    assert_eq!(echo.output(), json!({"text": "Echo: hi"}));

    let weather = client
        .call(McpCall::new(
            "everything",
            "get-structured-content",
            json!({"location": "Chicago"}),
        ))
        .await
        .unwrap();
    let output = weather.output();
    assert!(output["temperature"].is_number(), "{output}");

    let tools = client
        .connection("everything")
        .await
        .unwrap()
        .tools()
        .await
        .unwrap();
    let echo = tools.iter().find(|tool| tool.name == "echo").unwrap();
    let hints = echo.annotations.as_ref().unwrap();
    assert_eq!(hints.idempotent_hint, Some(true));
    // What the engine asks before calling a tool again.
    assert_eq!(
        client.idempotent_hint("everything", "echo").await,
        Some(true)
    );
    assert_eq!(
        client
            .idempotent_hint("everything", "toggle-simulated-logging")
            .await,
        Some(false)
    );
    assert_eq!(
        client.idempotent_hint("everything", "no-such-tool").await,
        None
    );
    client.close().await;
}

#[tokio::test]
async fn unknown_servers_and_tools_are_clear_errors() {
    let Some(executable) = everything() else {
        return;
    };
    let client = McpServers::new(everything_servers(&executable));
    let error = client
        .call(McpCall::new("evrything", "echo", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), McpErrorKind::Invalid);
    assert!(error.message().contains("defined: everything"), "{error}");

    let unknown = client
        .call(McpCall::new("everything", "no-such-tool", json!({})))
        .await;
    match unknown {
        Ok(outcome) => assert!(outcome.is_error, "{outcome:?}"),
        Err(error) => assert_eq!(error.kind(), McpErrorKind::Invalid, "{error}"),
    }
    let mut call = McpCall::new(
        "everything",
        "trigger-long-running-operation",
        json!({"duration": 5, "steps": 5}),
    );
    call.timeout = Duration::from_millis(300);
    let late = client.call(call).await.unwrap_err();
    assert_eq!(late.kind(), McpErrorKind::Timeout, "{late}");
    client.close().await;
}

#[tokio::test]
async fn a_server_that_will_not_start_says_why_without_its_secrets() {
    let mut servers = everything_servers(std::path::Path::new("/no/such/mcp-server"));
    let server = servers.get_mut("everything").unwrap();
    server.env.insert(
        "API_TOKEN".into(),
        wayline_core::secret::Secret::new("s3cret-value"),
    );
    let client = McpServers::new(servers);
    let error = client
        .call(McpCall::new("everything", "echo", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), McpErrorKind::Unavailable);
    assert!(
        error
            .message()
            .contains("cannot start `/no/such/mcp-server`"),
        "{error}"
    );
    assert!(!error.message().contains("s3cret"), "{error}");
}

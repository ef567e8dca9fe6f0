//! The tool harness over every fixture tool: each is called against a loopback server that
//! answers with a body holding every field its `response_extract` reads, and the request and
//! the outputs are checked against the definition.

use serde_json::{Map, Value, json};
use wayline::core::{AuthType, Secret, ToolConfig};
use wayline::registry::ToolRegistry;
use wayline::testing::{MockServer, Reply, ToolHarness};

/// A JSON body in which every dot path exists, each leaf holding its own path as text.
fn body_for(paths: &[&str]) -> Value {
    let mut body = Value::Null;
    for path in paths {
        let mut slot = &mut body;
        for segment in path.split('.') {
            slot = match segment.parse::<usize>() {
                Ok(index) => {
                    if !slot.is_array() {
                        *slot = Value::Array(Vec::new());
                    }
                    let items = slot.as_array_mut().unwrap();
                    while items.len() <= index {
                        items.push(Value::Null);
                    }
                    &mut items[index]
                }
                Err(_) => {
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    slot.as_object_mut()
                        .unwrap()
                        .entry(segment.to_owned())
                        .or_insert(Value::Null)
                }
            };
        }
        *slot = Value::String((*path).to_owned());
    }
    if body.is_null() {
        json!({"ok": true})
    } else {
        body
    }
}

/// The path a request to `path` under `base_url` arrives at.
fn expected_path(base_url: &str, path: &str) -> String {
    let base_path = base_url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_owned()))
        .unwrap_or_default();
    let joined = if path.is_empty() {
        base_path
    } else {
        format!(
            "{}/{}",
            base_path.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    };
    if joined.is_empty() {
        "/".to_owned()
    } else {
        joined
    }
}

#[tokio::test]
async fn every_fixture_tool_sends_what_its_definition_says() {
    let Some(dir) = wayline_testkit::fixture("structure-ai-bot/tools") else {
        return;
    };
    let registry = ToolRegistry::load([dir]).into_result().unwrap();
    assert_eq!(registry.len(), 31);
    for tool in registry.tools() {
        let extract: Vec<(String, String)> = tool
            .response_extract
            .iter()
            .flat_map(|extract| extract.fields.clone())
            .collect();
        let paths: Vec<&str> = extract.iter().map(|(_, path)| path.as_str()).collect();
        let body = body_for(&paths);
        let server = MockServer::start(move |_| Reply::json(200, body.clone()))
            .await
            .unwrap();
        let mut config = ToolConfig::default();
        config.auth_token = Some(Secret::new("test-token"));
        config.auth_username = Some(Secret::new("test-user"));
        let harness = ToolHarness::new(tool.clone()).with_config(config);
        let inputs: Vec<(&str, Value)> = tool
            .input_names()
            .into_iter()
            .map(|name| (name, json!(format!("v-{name}"))))
            .collect();
        let call = harness.call(&server, inputs).await;
        assert_eq!(call.error(), None, "{}", tool.id);
        let request = call.request();

        // Method: as declared, upper-cased.
        assert_eq!(
            request.method,
            tool.method.to_ascii_uppercase(),
            "{}",
            tool.id
        );
        // Path: every placeholder filled with its input.
        let mut path = tool.path.clone();
        for name in tool.path_placeholders() {
            path = path.replace(&format!("{{{name}}}"), &format!("v-{name}"));
        }
        assert_eq!(
            request.path(),
            expected_path(&tool.base_url, &path),
            "{}",
            tool.id
        );
        // Auth: the configured credentials, in the declared form.
        let auth = tool.effective_auth();
        match auth.kind {
            AuthType::None => {}
            AuthType::Bearer => {
                assert_eq!(
                    request.header("authorization"),
                    Some("Bearer test-token"),
                    "{}",
                    tool.id
                )
            }
            AuthType::ApiKey => assert_eq!(
                request.header(auth.header.as_deref().unwrap_or("X-API-Key")),
                Some("test-token"),
                "{}",
                tool.id
            ),
            AuthType::Basic => assert!(
                request
                    .header("authorization")
                    .unwrap()
                    .starts_with("Basic "),
                "{}",
                tool.id
            ),
        }
        // Outputs: exactly the extracted fields when declared.
        if !extract.is_empty() {
            let expected: Map<String, Value> = extract
                .iter()
                .map(|(name, path)| (name.clone(), Value::String(path.clone())))
                .collect();
            assert_eq!(call.output(), &Value::Object(expected), "{}", tool.id);
        }
    }
}

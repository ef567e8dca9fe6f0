//! The OpenAI-compatible client against `mockito`: the request it sends (model, messages,
//! structured output, Bearer key), the usage it records, retries on 429 and 5xx, refusals, and
//! answers that are not completions; the scripted model; configuration from the environment.

use std::sync::Arc;
use std::time::Duration;

use mockito::Matcher;
use serde_json::json;
use wayline_executor::ReqwestTransport;
use wayline_planner::llm::{
    CompletionRequest, LanguageModel, Message, ModelErrorKind, OpenAiConfig, OpenAiModel,
};
use wayline_planner::testing::ScriptedModel;

fn model(url: &str) -> OpenAiModel {
    OpenAiModel::new(
        OpenAiConfig::new(format!("{url}/v1"), "planner-7b")
            .api_key("sk-llm-secret")
            .retry_base(Duration::from_millis(1)),
        Arc::new(ReqwestTransport::new().unwrap()),
    )
}

fn completion(text: &str) -> String {
    json!({
        "model": "planner-7b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
    .to_string()
}

#[tokio::test]
async fn a_completion_is_asked_for_with_the_schema_and_its_usage_recorded() {
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("POST", "/v1/chat/completions")
        .match_header("authorization", "Bearer sk-llm-secret")
        .match_body(Matcher::PartialJson(json!({
            "model": "planner-7b",
            "messages": [{"role": "system", "content": "plan"}, {"role": "user", "content": "goal"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
        })))
        .with_body(completion("{\"steps\": []}"))
        .create_async()
        .await;
    let client = model(&server.url());
    let request = CompletionRequest::new(vec![Message::system("plan"), Message::user("goal")])
        .json_schema(json!({"type": "object"}));
    let answer = client.complete(&request).await.unwrap();
    mock.assert_async().await;
    assert_eq!(answer.text, "{\"steps\": []}");
    assert_eq!((answer.usage.prompt_tokens, answer.usage.total()), (12, 17));
    client.complete(&request).await.unwrap();
    assert_eq!(client.usage().total(), 34, "usage adds up over calls");
    assert!(!format!("{client:?}").contains("sk-llm-secret"));
}

#[tokio::test]
async fn overload_is_retried_and_refusals_are_not() {
    let mut server = mockito::Server::new_async().await;
    let busy = server
        .mock("POST", "/v1/chat/completions")
        .with_status(429)
        .with_header("retry-after", "0")
        .with_body(r#"{"error": {"message": "slow down"}}"#)
        .expect(2)
        .create_async()
        .await;
    let fine = server
        .mock("POST", "/v1/chat/completions")
        .with_body(completion("ok"))
        .create_async()
        .await;
    let client = model(&server.url());
    let request = CompletionRequest::new(vec![Message::user("hi")]);
    assert_eq!(client.complete(&request).await.unwrap().text, "ok");
    busy.assert_async().await;
    fine.assert_async().await;
    busy.remove_async().await;
    fine.remove_async().await;

    let refused = server
        .mock("POST", "/v1/chat/completions")
        .with_status(400)
        .with_body(r#"{"error": {"message": "model `planner-7b` does not exist"}}"#)
        .expect(1)
        .create_async()
        .await;
    let error = client.complete(&request).await.unwrap_err();
    refused.assert_async().await;
    assert_eq!(error.kind(), ModelErrorKind::Refused);
    assert!(error.to_string().contains("does not exist"), "{error}");
    refused.remove_async().await;

    let down = server
        .mock("POST", "/v1/chat/completions")
        .with_status(502)
        .with_body("Bad Gateway")
        .expect(4)
        .create_async()
        .await;
    let error = client.complete(&request).await.unwrap_err();
    down.assert_async().await;
    assert_eq!(error.kind(), ModelErrorKind::Unavailable);
    assert!(error.to_string().contains("after 4 attempt(s)"), "{error}");
    assert!(!error.to_string().contains("sk-llm-secret"));
    down.remove_async().await;

    let _odd = server
        .mock("POST", "/v1/chat/completions")
        .with_body("<html>not an API</html>")
        .create_async()
        .await;
    let error = client.complete(&request).await.unwrap_err();
    assert_eq!(error.kind(), ModelErrorKind::Unreadable);
}

#[tokio::test]
async fn the_scripted_model_answers_in_order_and_remembers() {
    let model = ScriptedModel::new(["first", "second"]);
    let ask = |text: &str| CompletionRequest::new(vec![Message::user(text)]);
    assert_eq!(model.complete(&ask("a")).await.unwrap().text, "first");
    assert_eq!(model.complete(&ask("b c")).await.unwrap().text, "second");
    let error = model.complete(&ask("d")).await.unwrap_err();
    assert_eq!(error.kind(), ModelErrorKind::Exhausted);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(model.requests()[1].messages[0].content, "b c");
}

#[test]
fn configuration_comes_from_flags_then_the_environment() {
    let env = |name: &str| match name {
        "WAYLINE_LLM_URL" => Some("http://127.0.0.1:8000/v1/".to_owned()),
        "WAYLINE_LLM_MODEL" => Some("qwen".to_owned()),
        "WAYLINE_LLM_API_KEY" => Some("sk-env".to_owned()),
        _ => None,
    };
    let config = OpenAiConfig::resolve(None, None, env).unwrap();
    assert_eq!(
        (config.base_url.as_str(), config.model.as_str()),
        ("http://127.0.0.1:8000/v1", "qwen")
    );
    assert!(!format!("{config:?}").contains("sk-env"));
    let flags =
        OpenAiConfig::resolve(Some("https://llm.example.com/v1"), Some("big"), env).unwrap();
    assert_eq!(flags.model, "big");
    let missing = OpenAiConfig::resolve(None, None, |_| None)
        .unwrap_err()
        .to_string();
    assert!(missing.contains("WAYLINE_LLM_URL"), "{missing}");
    let no_model = OpenAiConfig::resolve(Some("http://h/v1"), None, |_| None)
        .unwrap_err()
        .to_string();
    assert!(no_model.contains("WAYLINE_LLM_MODEL"), "{no_model}");
}

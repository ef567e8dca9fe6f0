//! Request shape for one tool of each fixture format, checked by a `mockito` server: method,
//! path, query, headers and body as the tool definition says.

use mockito::Matcher;
use serde_json::json;
use wayline::core::{Secret, ToolConfig};
use wayline::testing::ToolHarness;

/// The fixture tool, or `None` (after a notice) when the shared fixtures are absent.
fn fixture_tool(id: &str) -> Option<ToolHarness> {
    let path = wayline_testkit::fixture(&format!("structure-ai-bot/tools/{id}.yaml"))?;
    Some(ToolHarness::load(path).unwrap())
}

fn config(pairs: &[(&str, &str)]) -> ToolConfig {
    let mut config = ToolConfig::default();
    for (key, value) in pairs {
        match *key {
            "auth_token" => config.auth_token = Some(Secret::new(*value)),
            "auth_username" => config.auth_username = Some(Secret::new(*value)),
            other => panic!("unexpected key {other}"),
        }
    }
    config
}

#[tokio::test]
async fn legacy_get_sends_the_path_and_the_rest_as_query() {
    let Some(harness) = fixture_tool("open_meteo") else {
        return;
    };
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("GET", "/v1/forecast")
        .match_query(Matcher::AllOf(vec![
            Matcher::UrlEncoded("latitude".into(), "38.7".into()),
            Matcher::UrlEncoded("longitude".into(), "-9.1".into()),
            Matcher::UrlEncoded("current".into(), "temperature_2m,wind_speed_10m".into()),
        ]))
        .match_body(Matcher::Missing)
        .with_body(r#"{"current": {"temperature_2m": 18.5}}"#)
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [
                ("latitude", json!(38.7)),
                ("longitude", json!(-9.1)),
                ("current", json!("temperature_2m,wind_speed_10m")),
            ],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(call.output(), &json!({"current": {"temperature_2m": 18.5}}));
}

#[tokio::test]
async fn legacy_path_parameters_and_bearer_auth() {
    let Some(harness) = fixture_tool("github_repo") else {
        return;
    };
    let harness = harness.with_config(config(&[("auth_token", "ghp_test")]));
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("GET", "/repos/rust-lang/rust")
        .match_header("authorization", "Bearer ghp_test")
        .with_body(r#"{"full_name": "rust-lang/rust"}"#)
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [("owner", json!("rust-lang")), ("repo", json!("rust"))],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(call.output()["full_name"], "rust-lang/rust");
}

#[tokio::test]
async fn legacy_post_sends_the_inputs_as_a_json_body() {
    let Some(harness) = fixture_tool("httpbin_post") else {
        return;
    };
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("POST", "/post")
        .match_header("content-type", "application/json")
        .match_body(Matcher::Json(json!({"city": "Lisbon", "stars": 5})))
        .with_body(r#"[1, 2]"#)
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [("city", json!("Lisbon")), ("stars", json!(5))],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(
        call.output(),
        &json!({"items": [1, 2], "count": 2}),
        "lists are wrapped"
    );
}

#[tokio::test]
async fn config_graphql_body_is_rendered_into_the_query_string() {
    let Some(harness) = fixture_tool("github_graphql_create_issue") else {
        return;
    };
    let harness = harness.with_config(config(&[("auth_token", "ghp_test")]));
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("POST", "/graphql")
        .match_header("authorization", "Bearer ghp_test")
        .match_header("content-type", "application/json")
        .match_body(Matcher::Json(json!({"query":
            "mutation { createIssue(input: {repositoryId: \"R_1\", title: \"Hello\", body: \"World\"}) { issue { id number title url } } }"
        })))
        .with_body(
            r#"{"data": {"createIssue": {"issue": {"id": "I_1", "number": 7, "title": "Hello", "url": "https://x/7"}}}}"#,
        )
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [
                ("repo_id", json!("R_1")),
                ("title", json!("Hello")),
                ("body", json!("World")),
            ],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(
        call.output(),
        &json!({"issue_id": "I_1", "issue_number": 7, "issue_title": "Hello", "issue_url": "https://x/7"})
    );
}

#[tokio::test]
async fn config_form_body_with_basic_auth() {
    let Some(harness) = fixture_tool("spotify_token") else {
        return;
    };
    let harness = harness.with_config(config(&[
        ("auth_username", "client"),
        ("auth_token", "secret"),
    ]));
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("POST", "/api/token")
        .match_header("authorization", "Basic Y2xpZW50OnNlY3JldA==")
        .match_header("content-type", "application/x-www-form-urlencoded")
        .match_body("grant_type=client_credentials")
        .with_body(r#"{"access_token": "at", "expires_in": 3600, "token_type": "Bearer"}"#)
        .create_async()
        .await;
    let call = harness.call_at(&server.url(), []).await;
    mock.assert_async().await;
    assert_eq!(
        call.output(),
        &json!({"access_token": "at", "expires_in": 3600})
    );
}

#[tokio::test]
async fn config_api_key_header_and_query_params() {
    let Some(harness) = fixture_tool("youtube_search") else {
        return;
    };
    let harness = harness.with_config(config(&[("auth_token", "AIza-test")]));
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("GET", "/youtube/v3/search")
        .match_header("x-goog-api-key", "AIza-test")
        .match_query(Matcher::AllOf(vec![
            Matcher::UrlEncoded("q".into(), "rust async".into()),
            Matcher::UrlEncoded("maxResults".into(), "1".into()),
        ]))
        .with_body(r#"{"items": [{"id": {"videoId": "v1"}, "snippet": {"title": "Async Rust"}}]}"#)
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [("q", json!("rust async")), ("maxResults", json!(1))],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(
        call.output(),
        &json!({"video_id": "v1", "video_title": "Async Rust"})
    );
}

#[tokio::test]
async fn config_templated_header_carries_a_token_from_an_input() {
    let Some(harness) = fixture_tool("spotify_search_artist") else {
        return;
    };
    let mut server = mockito::Server::new_async().await;
    let mock = server
        .mock("GET", "/v1/search")
        .match_header("authorization", "Bearer from-step")
        .match_query(Matcher::AllOf(vec![
            Matcher::UrlEncoded("q".into(), "Radiohead".into()),
            Matcher::UrlEncoded("type".into(), "artist".into()),
        ]))
        .with_body(
            r#"{"artists": {"items": [{"id": "a1", "name": "Radiohead", "genres": ["rock"], "popularity": 80,
                "images": [{"url": "https://i/1"}], "followers": {"total": 9}}]}}"#,
        )
        .create_async()
        .await;
    let call = harness
        .call_at(
            &server.url(),
            [
                ("q", json!("Radiohead")),
                ("type", json!("artist")),
                ("access_token", json!("from-step")),
            ],
        )
        .await;
    mock.assert_async().await;
    assert_eq!(call.output()["artist_id"], "a1");
    assert_eq!(call.output()["genres"], json!(["rock"]));
    // The templated Authorization header is a credential: the record hides it.
    assert_eq!(
        call.result.request.as_ref().unwrap().headers["Authorization"],
        "***"
    );
}

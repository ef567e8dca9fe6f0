//! The repository's own tool files: legacy and config forms, YAML, YML and JSON.

use std::fs;

use wayline_core::document::Format;
use wayline_core::{AuthType, CodePath, ToolCatalog};
use wayline_registry::{Secret, ToolConfigs, ToolRegistry, catalog_entries, load_tool_file_with};
use wayline_testkit::testdata;

#[test]
fn own_tools_load_in_every_format() {
    let registry = ToolRegistry::load([testdata("tools")])
        .into_result()
        .unwrap();
    assert_eq!(
        registry.tool_ids(),
        [
            "country",
            "forecast",
            "ip_locate",
            "post_report",
            "rates",
            "token"
        ]
    );
    let rates = registry.tool("rates").unwrap();
    assert_eq!(rates.code_path(), CodePath::Legacy);
    assert_eq!(rates.effective_auth().kind, AuthType::ApiKey);
    assert_eq!(rates.effective_auth().header.as_deref(), Some("X-Api-Key"));
    assert_eq!(rates.required_inputs(), ["base"]);
    let token = registry.tool("token").unwrap();
    assert_eq!(
        (token.idempotent, token.tags.as_slice()),
        (Some(true), ["auth".to_owned()].as_slice())
    );
    let country = registry.tool("country").unwrap();
    assert!(country.has_closed_outputs());

    let entries = catalog_entries(&registry);
    let forecast = entries.iter().find(|entry| entry.id == "forecast").unwrap();
    assert_eq!(
        forecast.endpoint.as_deref(),
        Some("GET http://127.0.0.1:8080/v1/forecast")
    );
    assert_eq!(forecast.outputs, ["temperature", "wind"]);
}

#[test]
fn variables_expand_with_defaults_and_unset_ones_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("api.yaml");
    fs::write(&path, "id: api\nname: API\n# ${COMMENTED_OUT}\nbase_url: ${API_URL:-http://127.0.0.1:9}\npath: /v${VERSION}\n").unwrap();

    let env = |name: &str| (name == "VERSION").then(|| "2".to_owned());
    let tool = load_tool_file_with(&path, &env).unwrap();
    assert_eq!(
        (tool.base_url.as_str(), tool.path.as_str()),
        ("http://127.0.0.1:9", "/v2")
    );

    let err = load_tool_file_with(&path, &|_: &str| None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("api.yaml:5:9"), "{err}");
    assert!(err.contains("`VERSION` is not set"), "{err}");
}

#[test]
fn tool_configs_load_from_a_file_and_keep_secrets_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("configs.json");
    fs::write(
        &path,
        r#"{"rates": {"auth_token": "${RATES_KEY}", "base_url": "http://127.0.0.1:1"}}"#,
    )
    .unwrap();
    let env = |name: &str| (name == "RATES_KEY").then(|| "k-123".to_owned());
    let configs = ToolConfigs::load_with(&path, &env).unwrap();
    let rates = configs.get("rates").unwrap();
    assert_eq!(rates.get("auth_token").map(Secret::expose), Some("k-123"));
    assert_eq!(rates.base_url.as_deref(), Some("http://127.0.0.1:1"));
    assert!(!format!("{configs:?}").contains("k-123"));

    let unknown = configs.unknown_tools(&["rate"], "configs.json");
    assert_eq!(unknown[0].suggestion.as_deref(), Some("rate"));
    assert!(
        ToolConfigs::parse("", Format::Yaml, "empty.yaml", &|_: &str| None)
            .unwrap()
            .get("x")
            .is_none()
    );
}

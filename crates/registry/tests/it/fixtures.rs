//! Every tool file of the Python structure-ai-bot project loads unchanged and matches the
//! Python model's view.

use serde_json::Value;
use wayline_core::{CodePath, ToolCatalog};
use wayline_registry::{ToolRegistry, render_catalog};
use wayline_testkit::{fixture, read_json};

#[test]
fn all_fixture_tools_load_and_match_the_normalized_python_view() {
    let Some(dir) = fixture("structure-ai-bot") else {
        return;
    };
    let report = ToolRegistry::load([dir.join("tools")]);
    assert!(report.errors.is_empty(), "{:#?}", report.errors);
    let registry = report.registry;
    assert_eq!(registry.len(), 31);

    let normalized = read_json(&dir.join("tools_normalized.json"));
    for (file, python) in normalized.as_object().unwrap() {
        let id = python["id"].as_str().unwrap();
        let tool = registry
            .tool(id)
            .unwrap_or_else(|| panic!("{file}: tool {id} missing"));
        assert!(
            registry.source(id).unwrap().ends_with(file),
            "{id} came from {file}"
        );
        let ours = serde_json::to_value(tool).unwrap();
        for (key, expected) in python.as_object().unwrap() {
            match key.as_str() {
                "__effective_auth" => {
                    let auth = serde_json::to_value(tool.effective_auth()).unwrap();
                    assert_eq!(&auth, expected, "{file}: effective auth");
                }
                "__code_path" => {
                    let path = match tool.code_path() {
                        CodePath::Config => "config",
                        CodePath::Legacy => "legacy",
                    };
                    assert_eq!(path, expected, "{file}: code path");
                }
                _ => assert_eq!(
                    ours.get(key).unwrap_or(&Value::Null),
                    expected,
                    "{file}: {key}"
                ),
            }
        }
    }
}

#[test]
fn the_catalog_lists_every_fixture_tool() {
    let Some(dir) = fixture("structure-ai-bot/tools") else {
        return;
    };
    let registry = ToolRegistry::load([dir]).into_result().unwrap();
    let text = render_catalog(&registry);
    for id in registry.tool_ids() {
        assert!(
            text.contains(&format!("{id} — ")),
            "{id} missing from the catalog"
        );
    }
    // Required inputs are starred: the GraphQL placeholder and the path parameters.
    assert!(text.contains("inputs: search*"), "{text}");
    assert!(text.contains("inputs: owner*, repo*"), "{text}");
}

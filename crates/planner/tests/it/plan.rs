//! Planning with a scripted model: invalid answers (a cycle, an unknown tool, a dangling
//! reference) are repaired from the validation report; answers in prose or code fences are
//! read; a model that never answers validly stops after the repairs allowed.

use std::sync::Arc;

use wayline_core::{MemoryCatalog, ToolDefinition};
use wayline_planner::Error as PlanError;
use wayline_planner::llm::Role;
use wayline_planner::plan::{PlanOptions, Planner};
use wayline_planner::testing::ScriptedModel;

fn catalog() -> Arc<MemoryCatalog> {
    let mut geocode = ToolDefinition::new("geocode", "https://geo.example.com");
    geocode.path = "/search/{name}".to_owned();
    let mut forecast = ToolDefinition::new("forecast", "https://weather.example.com");
    forecast.path = "/{latitude}/{longitude}".to_owned();
    Arc::new(MemoryCatalog::from_tools([geocode, forecast]))
}

const VALID: &str = r#"{"id": "w", "name": "Weather", "inputs": {"city": {}}, "steps": [
  {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "$input.city"}},
  {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "locate.lat", "longitude": "locate.lon"}}]}"#;

#[tokio::test]
async fn invalid_answers_are_repaired_from_the_report() {
    let unknown_tool = r#"{"id": "w", "name": "W", "steps": [{"id": "a", "tool_id": "geocoder", "input_mapping": {"name": "$input.city"}}]}"#;
    let cycle = r#"{"id": "w", "name": "W", "inputs": {"city": {}}, "steps": [
      {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "forecast.city"}},
      {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "locate.lat", "longitude": "locate.lon"}}]}"#;
    let fenced = format!("Sure! Here is the fixed plan:\n```json\n{VALID}\n```\nLet me know.");
    let model = Arc::new(ScriptedModel::new([
        unknown_tool.to_owned(),
        cycle.to_owned(),
        fenced,
    ]));
    let planner = Planner::new(model.clone(), catalog()).options({
        let mut options = PlanOptions::default();
        options.max_repairs = 2;
        options
    });
    let plan = planner
        .plan("weather for a city", &["city".to_owned()])
        .await
        .unwrap();
    assert_eq!(plan.answers, 3);
    assert_eq!(plan.workflow.steps.len(), 2);
    assert!(plan.view.contains("locate"), "{}", plan.view);
    // Each repair request carried the problems of the answer before.
    let requests = model.requests();
    let second = requests[1].messages.last().unwrap();
    assert_eq!(second.role, Role::User);
    assert!(second.content.contains("geocoder"), "{}", second.content);
    let third = requests[2].messages.last().unwrap();
    assert!(
        third.content.to_lowercase().contains("cycle"),
        "{}",
        third.content
    );
}

#[tokio::test]
async fn a_model_that_never_answers_validly_stops_after_the_repairs() {
    let dangling = r#"{"id": "w", "name": "W", "steps": [{"id": "a", "tool_id": "forecast", "input_mapping": {"latitude": "$steps.ghost.outputs.lat", "longitude": 1}}]}"#;
    let model = Arc::new(ScriptedModel::new([
        dangling,
        "no JSON here",
        dangling,
        dangling,
    ]));
    let planner = Planner::new(model.clone(), catalog()).options({
        let mut options = PlanOptions::default();
        options.max_repairs = 2;
        options
    });
    let error = planner.plan("weather", &[]).await.unwrap_err();
    let PlanError::Invalid { answers, problems } = &error else {
        panic!("{error}")
    };
    assert_eq!(*answers, 3, "the first answer and two repairs");
    assert!(!problems.is_empty());
    assert_eq!(model.requests().len(), 3, "no fourth call");
    assert!(
        error
            .to_string()
            .contains("no valid plan after 3 answer(s)"),
        "{error}"
    );
}

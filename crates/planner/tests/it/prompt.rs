//! The planner's prompt: the 31 fixture tools fit the budget and are all named; in a
//! synthetic catalog of 2,000 tools the relevant ones are chosen (known answers).

use wayline_core::{MemoryCatalog, ToolDefinition};
use wayline_planner::prompt::{DEFAULT_BUDGET, build, estimate_tokens};
use wayline_registry::ToolRegistry;
use wayline_testkit::fixture;

#[test]
fn the_31_fixture_tools_fit_the_budget_and_are_all_named() {
    let Some(dir) = fixture("structure-ai-bot/tools") else {
        return;
    };
    let report = ToolRegistry::load([dir]);
    assert!(report.errors.is_empty());
    let registry = report.registry;
    let prompt = build(
        &registry,
        "Find the weather where I am",
        &["city".to_owned()],
        DEFAULT_BUDGET,
    );
    assert_eq!(prompt.tools.len(), 31);
    assert_eq!(prompt.dropped, 0);
    assert!(prompt.tokens <= DEFAULT_BUDGET, "{} tokens", prompt.tokens);
    let text: String = prompt
        .messages
        .iter()
        .map(|message| message.content.as_str())
        .collect();
    for id in wayline_core::ToolCatalog::tool_ids(&registry) {
        assert!(text.contains(&format!("- {id}:")), "{id} is named");
    }
    assert!(text.contains("Run inputs: city"));
    assert!(text.contains("\"edges\""), "the format's example");
}

/// A tool with an id, a description and inputs.
fn tool(id: &str, description: &str, inputs: &[&str]) -> ToolDefinition {
    let mut tool = ToolDefinition::new(id, "https://api.example.com");
    tool.description = description.to_owned();
    tool.path = inputs.iter().map(|name| format!("/{{{name}}}")).collect();
    tool
}

#[test]
fn in_2000_tools_the_relevant_ones_are_chosen() {
    let topics = [
        "invoice",
        "shipment",
        "ticket",
        "playlist",
        "vehicle",
        "recipe",
        "sensor",
        "payroll",
        "warehouse",
        "campaign",
    ];
    let actions = ["create", "list", "update", "archive", "export"];
    let mut tools = Vec::new();
    for index in 0..1_997 {
        let topic = topics[index % topics.len()];
        let action = actions[(index / topics.len()) % actions.len()];
        tools.push(tool(
            &format!("{action}_{topic}_{index}"),
            &format!("{action} a {topic} record in system {index}"),
            &[&format!("{topic}Id")],
        ));
    }
    // The three the goal needs.
    tools.push(tool(
        "geocode_city",
        "Find the coordinates of a city by its name",
        &["name"],
    ));
    tools.push(tool(
        "weather_forecast",
        "The weather forecast at a latitude and longitude",
        &["latitude", "longitude"],
    ));
    tools.push(tool(
        "convert_temperature",
        "Convert a temperature between Celsius and Fahrenheit",
        &["value"],
    ));
    let catalog = MemoryCatalog::from_tools(tools);
    let budget = 2_000;
    let prompt = build(
        &catalog,
        "Get the weather forecast for a city and convert the temperature to Fahrenheit",
        &["city".to_owned()],
        budget,
    );
    assert!(prompt.tokens <= budget, "{} tokens", prompt.tokens);
    assert!(prompt.dropped > 1_900, "{} dropped", prompt.dropped);
    let mut first: Vec<&str> = prompt.tools[..3].iter().map(String::as_str).collect();
    first.sort_unstable();
    assert_eq!(
        first,
        ["convert_temperature", "geocode_city", "weather_forecast"],
        "the relevant tools come first: {:?}",
        &prompt.tools[..5]
    );
    let text = &prompt.messages[0].content;
    assert!(text.contains("less relevant tools are not shown"));
    assert!(estimate_tokens(text) < budget);
}

//! wayline → Arazzo → wayline: the structure-ai-bot fixture workflows come back equal.

use wayline_arazzo::export::export;
use wayline_arazzo::import::import;
use wayline_arazzo::sources::{Sources, check_operations};
use wayline_arazzo::{load, validate};
use wayline_core::Edge;
use wayline_registry::{ToolRegistry, load_workflow_file};
use wayline_testkit::fixture;

const WORKFLOWS: [&str; 6] = [
    "anime_intel_graphql",
    "artist_intel",
    "artist_intel_reduced",
    "geo_weather",
    "github_intel",
    "travel_briefing",
];

#[test]
fn the_fixture_workflows_come_back_equal() {
    let Some(dir) = fixture("structure-ai-bot") else {
        return;
    };
    let tools = ToolRegistry::load([dir.join("tools")])
        .into_result()
        .unwrap();
    for name in WORKFLOWS {
        let original = load_workflow_file(&dir.join(format!("workflows/{name}.json"))).unwrap();
        let exported =
            export(&original, &tools, name).unwrap_or_else(|error| panic!("{name}: {error}"));
        // What is written is Arazzo: it loads and validates like any document.
        let text = serde_norway::to_string(&exported.arazzo).unwrap();
        let document = load(&text, &format!("{name}.arazzo.yaml"))
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        let errors: Vec<_> = validate(&document)
            .into_iter()
            .filter(|problem| problem.is_error())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        // Its OpenAPI descriptions hold every operation its steps call, as the importer reads
        // them.
        let files = tempfile::tempdir().unwrap();
        for (file, description) in &exported.descriptions {
            std::fs::write(files.path().join(file), description.to_string()).unwrap();
        }
        let sources = Sources::load(&document, files.path(), &indexmap::IndexMap::new());
        let problems = check_operations(&document, &sources);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
        let back =
            import(&document, None, &tools).unwrap_or_else(|error| panic!("{name}: {error}"));
        // The explicit edges come back as a set: Arazzo keeps them as each step's `dependsOn`,
        // in step order.
        let sorted = |edges: &[Edge]| {
            let mut pairs: Vec<(String, String)> = edges
                .iter()
                .map(|edge| (edge.from_step_id.clone(), edge.to_step_id.clone()))
                .collect();
            pairs.sort();
            pairs
        };
        assert_eq!(sorted(&back.edges), sorted(&original.edges), "{name}");
        let mut back = back;
        back.edges = original.edges.clone();
        assert_eq!(back, original, "{name}");
    }
}

#[test]
fn what_has_no_exact_mapping_is_named() {
    let Some(dir) = fixture("structure-ai-bot/tools") else {
        return;
    };
    let tools = ToolRegistry::load([dir]).into_result().unwrap();
    let mut workflow = wayline_core::Workflow::new("w", "W");
    workflow
        .steps
        .push(wayline_core::Step::new("look", "ip_geolocation"));
    let mut transform = wayline_core::Step::new("shape", "");
    transform.kind = wayline_core::StepKind::Transform;
    workflow.steps.push(transform);
    let error = export(&workflow, &tools, "w").unwrap_err();
    assert_eq!(error.step, "shape");
    assert!(
        error
            .reason
            .contains("a `transform` step calls no operation"),
        "{error}"
    );

    let text = "arazzo: 1.1.0
info: {title: T, version: '1'}
sourceDescriptions: [{name: api, url: ./api.yaml}]
workflows:
  - workflowId: w
    steps:
      - stepId: look
        operationId: ip_geolocation
        onFailure: [{name: again, type: retry}]
";
    let document = load(text, "w.arazzo.yaml").unwrap();
    let error = import(&document, None, &tools).unwrap_err();
    assert_eq!(error.place, "step `look`");
    assert!(
        error.reason.contains("no success or failure actions"),
        "{error}"
    );
    let embedded = text.replace(
        "        onFailure: [{name: again, type: retry}]\n",
        "        parameters: [{name: ip, in: path, value: 'x-{$inputs.ip}'}]\n",
    );
    let error = import(&load(&embedded, "w.arazzo.yaml").unwrap(), None, &tools).unwrap_err();
    assert!(
        error.reason.contains("embeds expressions in text"),
        "{error}"
    );
}

/// Issue 31, item 23: an exported document requires what the original workflow requires (an
/// input declared without a default; in a workflow that declares none, each input a step
/// reads), so its runs are refused where the original's are.
#[tokio::test]
async fn an_exported_document_requires_the_inputs_the_original_requires() {
    use std::sync::Arc;

    use wayline_core::document::Format;
    use wayline_core::{InputSpec, MemoryCatalog, Step, Workflow};
    use wayline_executor::{Engine, Error as EngineError, RunOptions};

    let tool = wayline_registry::parse_tool(
        "id: find\nname: Find\nbase_url: http://api.test\nmethod: GET\npath: /find\n\
         request: {query_params: [region, q, page]}\n",
        Format::Yaml,
        "find.yaml",
        &wayline_registry::process_env,
    )
    .unwrap();
    let mut tools = ToolRegistry::new();
    tools.insert(tool, "find.yaml".into()).unwrap();
    // Declared: `region` without a default, `page` with one (and `required: true`, which a
    // default makes moot).
    let mut declared = Workflow::new("w", "W");
    declared
        .inputs
        .insert("region".into(), InputSpec::default());
    let mut page = InputSpec::default();
    page.default = Some(serde_json::json!(1));
    page.required = Some(true);
    declared.inputs.insert("page".into(), page);
    declared.steps.push(
        Step::new("find", "find")
            .map("region", "$input.region")
            .map("page", "$input.page"),
    );
    // Undeclared: what the steps read.
    let mut undeclared = Workflow::new("w", "W");
    undeclared
        .steps
        .push(Step::new("find", "find").map("q", "$input.query"));

    for (workflow, required) in [(declared, vec!["region"]), (undeclared, vec!["query"])] {
        // The original refuses a run without them.
        let engine = Engine::builder(Arc::new(tools.clone())).build();
        match engine.run(&workflow, RunOptions::new()).await {
            Err(EngineError::InvalidInputs { problems, .. }) => {
                assert_eq!(problems.len(), required.len(), "{problems:?}");
                for (problem, name) in problems.iter().zip(&required) {
                    assert!(problem.contains(&format!("`{name}`")), "{problem}");
                }
            }
            other => panic!("{other:?}"),
        }
        // So does the export.
        let exported = export(&workflow, &tools, "w").unwrap();
        let schema = &exported.arazzo["workflows"][0]["inputs"];
        assert_eq!(schema["required"], serde_json::json!(required), "{schema}");
        let files = tempfile::tempdir().unwrap();
        for (file, description) in &exported.descriptions {
            std::fs::write(files.path().join(file), description.to_string()).unwrap();
        }
        let text = serde_norway::to_string(&exported.arazzo).unwrap();
        let document = load(&text, "w.arazzo.yaml").unwrap();
        let sources = Sources::load(&document, files.path(), &indexmap::IndexMap::new());
        let runner =
            wayline_arazzo::run::Runner::new(document, &sources, &indexmap::IndexMap::new());
        let engine = Engine::builder(Arc::new(MemoryCatalog::new())).build();
        let refused = runner
            .run(&engine, "w", serde_json::Map::new(), RunOptions::new())
            .await
            .unwrap_err()
            .to_string();
        for name in &required {
            assert!(
                refused.contains(&format!("\"{name}\" is a required property")),
                "{refused}"
            );
        }
        // And it reads back as the same requirements.
        let back = import(&load(&text, "w.arazzo.yaml").unwrap(), None, &tools).unwrap();
        assert_eq!(
            wayline_core::inputs::schema(&back)["required"],
            serde_json::json!(required)
        );
    }
}

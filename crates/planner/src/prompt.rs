//! The planner's prompt (for the design phase, where a workflow is planned): the tool catalog,
//! compact and within a token budget, the most relevant tools first; the goal and the declared
//! inputs; the graph format with one example. And reading a model's answer back: code fences and
//! prose around the JSON are tolerated, the JSON itself is held to the workflow schema (an unknown
//! field is an error that names it and the nearest known one).

use std::fmt::Write as _;

use wayline_core::ToolCatalog;
use wayline_core::document::{self, Format};
use wayline_core::workflow::Workflow;
use wayline_knowledge::words::words;
use wayline_registry::{CatalogEntry, catalog_entries};

use crate::Error;
use crate::llm::Message;

/// Tokens a prompt may use unless told otherwise.
pub const DEFAULT_BUDGET: usize = 6_000;

/// A rough token count: four characters a token (what tokenizers average on English and
/// identifiers; the budget keeps a margin).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// A built prompt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Prompt {
    /// The messages to send.
    pub messages: Vec<Message>,
    /// The tools in the catalog section, in the order shown.
    pub tools: Vec<String>,
    /// Tools left out to stay within the budget.
    pub dropped: usize,
    /// The estimated tokens of the whole prompt.
    pub tokens: usize,
}

const INSTRUCTIONS: &str = "You plan API workflows. Given a goal and a catalog of tools, answer with ONE JSON object: a workflow whose steps call tools from the catalog. Use only tool ids and input names from the catalog. Map each tool input to `$input.NAME` (a declared run input), to `STEP_ID.FIELD` (an output of an earlier step), or to a literal value. List `edges` from each step to the steps that need its outputs. Only where the way on depends on a judgement about earlier results, add a step with `\"kind\": \"decision\"`, a `decision_prompt` and two or more `choices` (it calls no tool; a model answers it at run time), and give the steps of each branch `\"when\": \"steps.ID.choice == 'CHOICE'\"` (a step after a skipped step is skipped too, so branches do not rejoin). Answer with the JSON only.";

const FORMAT: &str = r#"Format (one example):
{
  "id": "city_weather",
  "name": "Weather for a city",
  "inputs": {"city": {"description": "a city name"}},
  "steps": [
    {"id": "locate", "tool_id": "geocode", "input_mapping": {"name": "$input.city"}},
    {"id": "forecast", "tool_id": "forecast", "input_mapping": {"latitude": "locate.lat", "longitude": "locate.lon"}}
  ],
  "edges": [{"from_step_id": "locate", "to_step_id": "forecast"}]
}"#;

/// Words too common to say which tool a goal needs.
const STOPWORDS: [&str; 24] = [
    "a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "with", "by", "from", "at", "it",
    "its", "then", "get", "me", "my", "is", "are", "be", "this",
];

fn stem(word: &str) -> String {
    wayline_registry::openapi::singular(word)
}

/// How relevant `entry` is to a goal of `goal_words` (stems): hits in the id and name count
/// twice, in the description once, in inputs and outputs a half.
fn relevance(entry: &CatalogEntry, goal_words: &[String]) -> f64 {
    let score = |text: &str, weight: f64| {
        words(text)
            .iter()
            .filter(|word| goal_words.iter().any(|goal| *goal == stem(word)))
            .count() as f64
            * weight
    };
    let fields: String = entry
        .inputs
        .iter()
        .map(|input| input.name.as_str())
        .chain(entry.outputs.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    score(&entry.id, 2.0)
        + score(&entry.name, 2.0)
        + score(&entry.description, 1.0)
        + score(&fields, 0.5)
}

/// One tool as the catalog shows it: id, what it does, inputs (required ones starred),
/// outputs.
fn render_entry(entry: &CatalogEntry) -> String {
    let description = if entry.description.is_empty() {
        &entry.name
    } else {
        &entry.description
    };
    let inputs: Vec<String> = entry
        .inputs
        .iter()
        .map(|input| format!("{}{}", input.name, if input.required { "*" } else { "" }))
        .collect();
    let outputs = if entry.outputs.is_empty() {
        "(response body)".to_owned()
    } else {
        entry.outputs.join(", ")
    };
    format!(
        "- {}: {}\n  inputs: {}; outputs: {}\n",
        entry.id,
        description.trim(),
        if inputs.is_empty() {
            "(none)".to_owned()
        } else {
            inputs.join(", ")
        },
        outputs
    )
}

/// The prompt for `goal` over `catalog`, with the run inputs `inputs`, in at most `budget`
/// tokens (estimated): tools are shown most relevant first, and those that do not fit are
/// left out (and counted).
pub fn build(catalog: &dyn ToolCatalog, goal: &str, inputs: &[String], budget: usize) -> Prompt {
    let goal_words: Vec<String> = words(goal)
        .into_iter()
        .filter(|word| !STOPWORDS.contains(&word.as_str()))
        .map(|word| stem(&word))
        .collect();
    let mut entries: Vec<(f64, CatalogEntry)> = catalog_entries(catalog)
        .into_iter()
        .map(|entry| (relevance(&entry, &goal_words), entry))
        .collect();
    // Most relevant first; the catalog's order (by id) among equals.
    entries.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let mut user = format!("Goal: {}\n", goal.trim());
    if inputs.is_empty() {
        user.push_str("Run inputs: (none declared)\n");
    } else {
        let _ = writeln!(user, "Run inputs: {}", inputs.join(", "));
    }
    let system_head = format!("{INSTRUCTIONS}\n\n{FORMAT}\n\nCatalog:\n");
    let fixed = estimate_tokens(&system_head) + estimate_tokens(&user);
    let mut catalog_text = String::new();
    let mut used = fixed;
    let mut tools = Vec::new();
    let total = entries.len();
    for (_, entry) in &entries {
        let line = render_entry(entry);
        let cost = estimate_tokens(&line);
        if used + cost > budget {
            break;
        }
        used += cost;
        catalog_text.push_str(&line);
        tools.push(entry.id.clone());
    }
    let dropped = total - tools.len();
    if dropped > 0 {
        let _ = writeln!(
            catalog_text,
            "({dropped} less relevant tools are not shown.)"
        );
    }
    let system = format!("{system_head}{catalog_text}");
    let tokens = estimate_tokens(&system) + estimate_tokens(&user);
    Prompt {
        messages: vec![Message::system(system), Message::user(user)],
        tools,
        dropped,
        tokens,
    }
}

/// The first JSON object in `text`, with code fences and prose around it ignored: the span
/// from the first `{` to its matching `}` (braces inside strings do not count).
pub fn json_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, c) in text[start..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&text[start..start + offset + c.len_utf8()]);
                }
            }
            _ => {}
        }
    }
    None
}

/// The workflow in a model's answer. Prose and code fences around it are fine; the JSON must
/// be a workflow (unknown fields are errors naming the nearest known field).
pub fn parse_answer(text: &str) -> Result<Workflow, Error> {
    let json = json_object(text).ok_or_else(|| Error::Answer {
        message: "the answer holds no JSON object; answer with the workflow as one JSON object"
            .to_owned(),
    })?;
    Ok(document::parse::<Workflow>(
        json,
        Format::Json,
        "the model's answer",
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_fences_and_prose_are_read_and_the_schema_is_strict() {
        let fenced = "Here is the plan:\n```json\n{\"id\": \"w\", \"name\": \"W\", \"steps\": [{\"id\": \"a\", \"tool_id\": \"t\", \"input_mapping\": {\"q\": \"{braces} in a string\"}}]}\n```\nIt calls one tool.";
        let workflow = parse_answer(fenced).unwrap();
        assert_eq!(workflow.steps[0].input_mapping["q"], "{braces} in a string");
        let typo = "{\"id\": \"w\", \"name\": \"W\", \"steps\": [{\"id\": \"a\", \"tool_id\": \"t\", \"input_mappings\": {}}]}";
        let error = parse_answer(typo).unwrap_err().to_string();
        assert!(error.contains("input_mapping"), "{error}");
        assert!(
            parse_answer("I cannot help with that.")
                .unwrap_err()
                .to_string()
                .contains("no JSON object")
        );
        assert_eq!(json_object("x {\"a\": \"}\"} y"), Some("{\"a\": \"}\"}"));
        assert_eq!(json_object("{ unterminated"), None);
    }

    #[test]
    fn words_are_stemmed() {
        assert_eq!(stem("cities"), "city");
        assert_eq!(stem("forecasts"), "forecast");
    }
}

//! Mapping values that are literals by the reference rule but read like a reference written
//! wrong: `geoo.lat` beside a step `geo`, `geocode.lat` naming a tool where a step belongs,
//! `$imput.currency` for `$input.currency`. They are sent as that text, so validation warns.
//! Other dotted text (`report.csv`, `t3.micro`, `example.de`) is left alone. So is a path with
//! brackets (`posts[0].id`, `posts.items[0].id`): references have none, so the first is sent
//! as text and the second looks for a field named `items[0]`.

use rustc_hash::FxHashSet;
use wayline_core::document::nearest;
use wayline_core::{Reference, ToolCatalog, Workflow};

use crate::problem::{Problem, ProblemKind};

/// The reference prefixes, without their `$`.
const PREFIXES: [&str; 3] = ["input", "inputs", "steps"];

/// How many near-miss searches ("did you mean") one validation makes, for its warnings and, as
/// many again, for its errors. Each search is as long as the workflow (or the catalog), so
/// without a bound a workflow of many mistakes would cost the square of its size; past it,
/// literals are no longer searched (nor warned of) and errors carry no hint.
pub(crate) const MAX_NEAR_MISS_SEARCHES: usize = 256;

/// What the checks of one workflow share: its step ids, indexed once (a lookup per literal
/// would otherwise scan the steps, and a large workflow cost the square of its size), and the
/// near-miss searches left.
struct Steps<'a> {
    workflow: &'a Workflow,
    ids: FxHashSet<&'a str>,
    searches_left: usize,
}

impl<'a> Steps<'a> {
    fn new(workflow: &'a Workflow) -> Self {
        Steps {
            workflow,
            ids: workflow.steps.iter().map(|step| step.id.as_str()).collect(),
            searches_left: MAX_NEAR_MISS_SEARCHES,
        }
    }

    fn has(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// The step id nearest to `id`, while searches are left.
    fn nearest(&mut self, id: &str) -> Option<&'a str> {
        self.searches_left = self.searches_left.checked_sub(1)?;
        nearest(id, self.workflow.steps.iter().map(|step| step.id.as_str()))
    }
}

fn identifier(segment: &str) -> bool {
    segment
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `text` looks like a reference written wrong, if it does.
fn suspicion(text: &str, steps: &mut Steps<'_>, catalog: &dyn ToolCatalog) -> Option<String> {
    let mut segments = text.split('.');
    let (first, second) = (segments.next()?, segments.next()?);
    if let Some(prefix) = first.strip_prefix('$') {
        if PREFIXES.contains(&prefix) || !identifier(prefix) {
            return None;
        }
        let near = nearest(prefix, PREFIXES)?;
        return Some(format!(
            "`${prefix}` is no reference prefix; did you mean `${near}`?"
        ));
    }
    if !identifier(first) || !identifier(second) || steps.has(first) {
        return None;
    }
    if catalog.tool(first).is_some() {
        let callers: Vec<String> = steps
            .workflow
            .steps
            .iter()
            .filter(|caller| caller.tool_id == first)
            .map(|caller| format!("`{}`", caller.id))
            .collect();
        return Some(if callers.is_empty() {
            format!(
                "`{first}` is a tool, not a step; add a step that calls it and refer to that step's id"
            )
        } else {
            format!(
                "`{first}` is a tool, not a step; refer to the step that calls it ({})",
                callers.join(" or ")
            )
        });
    }
    // Short words are too often near something: `ip.v4` is no typo of a step `id`.
    if first.chars().count() < 4 {
        return None;
    }
    let near = steps.nearest(first)?;
    Some(format!(
        "there is no step `{first}`; did you mean `{near}`?"
    ))
}

/// What is wrong with `text`, a step reference written with brackets (`posts[0].id`), if it
/// is one.
fn bracketed(text: &str, steps: &Steps<'_>) -> Option<String> {
    if !text.contains('[') {
        return None;
    }
    let dotted = without_brackets(text)?;
    let is_step = |id: &str| steps.has(id);
    Reference::parse_str(&dotted, is_step).step()?;
    let as_written = match Reference::parse_str(text, is_step) {
        Reference::Step { .. } => "which looks for a field with brackets in its name",
        _ => "which would be sent as that text",
    };
    Some(format!(
        "{as_written}; references have no brackets: write `{dotted}` (numbers index lists)"
    ))
}

/// `text` with each `[N]`, `['key']` and `["key"]` written as a path segment (`.N`, `.key`);
/// `None` when a bracket holds anything else or is not closed.
fn without_brackets(text: &str) -> Option<String> {
    let mut dotted = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        dotted.push_str(&rest[..open]);
        let close = rest[open..].find(']')? + open;
        let inside = &rest[open + 1..close];
        let unquoted = ['\'', '"'].iter().find_map(|quote| {
            inside
                .strip_prefix(*quote)
                .and_then(|key| key.strip_suffix(*quote))
        });
        let segment = match unquoted {
            Some(key) if !key.is_empty() && !key.contains('.') => key,
            Some(_) => return None,
            None if inside.trim_start_matches('-').parse::<u64>().is_ok() => inside,
            None => return None,
        };
        dotted.push('.');
        dotted.push_str(segment);
        rest = &rest[close + 1..];
    }
    dotted.push_str(rest);
    Some(dotted)
}

/// The mapping values of `workflow` that read like a reference written wrong.
pub(crate) fn suspect_literals(workflow: &Workflow, catalog: &dyn ToolCatalog) -> Vec<Problem> {
    let mut found = Vec::new();
    let mut steps = Steps::new(workflow);
    for step in &workflow.steps {
        for (input, value) in &step.input_mapping {
            let Some(text) = value.as_str() else { continue };
            let why = bracketed(text, &steps).or_else(|| {
                suspicion(text, &mut steps, catalog)
                    .map(|why| format!("which would be sent as that text: {why}"))
            });
            if let Some(why) = why {
                found.push(Problem {
                    kind: ProblemKind::SuspectLiteral,
                    message: format!("step `{}` maps `{input}` to `{text}`, {why}", step.id),
                    steps: vec![step.id.clone()],
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use wayline_core::workflow::Step;
    use wayline_core::{MemoryCatalog, ToolDefinition};

    use super::*;

    #[test]
    fn near_misses_are_searched_a_bounded_number_of_times() {
        let catalog = MemoryCatalog::from_tools([]);
        let mut workflow = Workflow::new("w", "W");
        workflow.steps.push(Step::new("locate", "geocode"));
        let mut step = Step::new("use", "geocode");
        for n in 0..MAX_NEAR_MISS_SEARCHES + 50 {
            step = step.map(format!("in{n}"), "locat.lon");
        }
        workflow.steps.push(step);
        let found = suspect_literals(&workflow, &catalog);
        assert_eq!(found.len(), MAX_NEAR_MISS_SEARCHES);
    }

    #[test]
    fn tools_near_misses_and_misspelled_prefixes_are_suspect_other_dotted_text_is_not() {
        let catalog = MemoryCatalog::from_tools([
            ToolDefinition::new("geocode", "https://geo.example.com"),
            ToolDefinition::new("forecast", "https://weather.example.com"),
        ]);
        let mut workflow = Workflow::new("w", "W");
        workflow.steps.push(
            Step::new("locate", "geocode")
                .map("host", "api.example.de")
                .map("file", "report.csv")
                .map("size", "t3.micro")
                .map("version", "3.5")
                .map("name", "$input.city")
                .map("cost", "$4.99"),
        );
        workflow.steps.push(
            Step::new("forecast", "forecast")
                .map("latitude", "geocode.lat")
                .map("longitude", "locat.lon")
                .map("place", "place.name")
                .map("currency", "$imput.currency")
                .map("when", "$setps.locate.outputs.at"),
        );
        let found = suspect_literals(&workflow, &catalog);
        let messages: Vec<&str> = found
            .iter()
            .map(|problem| problem.message.as_str())
            .collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].contains("refer to the step that calls it (`locate`)"));
        assert!(messages[1].contains("did you mean `locate`?"));
        assert!(messages[2].contains("did you mean `$input`?"));
        assert!(messages[3].contains("did you mean `$steps`?"));
        assert!(
            found
                .iter()
                .all(|problem| problem.kind == ProblemKind::SuspectLiteral)
        );
    }

    #[test]
    fn step_references_written_with_brackets_are_suspect_other_brackets_are_not() {
        let catalog = MemoryCatalog::from_tools([ToolDefinition::new("list", "https://x.test")]);
        let mut workflow = Workflow::new("w", "W");
        workflow.steps.push(Step::new("posts", "list"));
        workflow.steps.push(
            Step::new("post", "list")
                .map("id", "posts[0].id")
                .map("first", "posts.items[0].id")
                .map("last", "posts['items'][-1]")
                .map("filter", "filter[status]=open")
                .map("raw", "posts[first]")
                .map("open", "posts[0"),
        );
        let messages: Vec<String> = suspect_literals(&workflow, &catalog)
            .into_iter()
            .map(|problem| problem.message)
            .collect();
        assert_eq!(
            messages,
            [
                "step `post` maps `id` to `posts[0].id`, which would be sent as that text; references have no brackets: write `posts.0.id` (numbers index lists)",
                "step `post` maps `first` to `posts.items[0].id`, which looks for a field with brackets in its name; references have no brackets: write `posts.items.0.id` (numbers index lists)",
                "step `post` maps `last` to `posts['items'][-1]`, which would be sent as that text; references have no brackets: write `posts.items.-1` (numbers index lists)",
            ]
        );
    }
}

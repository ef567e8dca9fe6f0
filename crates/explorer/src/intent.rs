//! A target in plain words read as goals: verbs to CRUD actions, nouns to the spec's
//! resources, clause by clause, with `it`, `them` and `both` taken back to the resources named
//! before. "create a cluster, create a branch on it, delete both" is create cluster, create
//! branch, delete branch, delete cluster (the last-made first, so children go before parents).

use serde::{Deserialize, Serialize};
use wayline_registry::openapi::{ApiSpec, Operation};

/// What a goal does to a resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verb {
    /// Make one.
    Create,
    /// Read one.
    Read,
    /// List them.
    List,
    /// Change one.
    Update,
    /// Remove one.
    Delete,
    /// A custom method (`reset`, `cancel`).
    Action(String),
}

/// One thing the target asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Goal {
    /// What to do.
    pub verb: Verb,
    /// To which resource (singular, lower case: `cluster`), or the command-line tool to run.
    pub resource: String,
    /// For a command-line tool: the command line the target quoted, if it quoted one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// The method of the operations that stand for a SUT's command-line tools.
pub const CLI_METHOD: &str = "CLI";

/// Words and the verbs they mean.
const VERBS: [(&str, &str); 29] = [
    ("run", "run"),
    ("execute", "run"),
    ("create", "create"),
    ("add", "create"),
    ("make", "create"),
    ("new", "create"),
    ("provision", "create"),
    ("get", "read"),
    ("show", "read"),
    ("describe", "read"),
    ("check", "read"),
    ("read", "read"),
    ("fetch", "read"),
    ("inspect", "read"),
    ("list", "list"),
    ("find", "list"),
    ("update", "update"),
    ("scale", "update"),
    ("modify", "update"),
    ("change", "update"),
    ("rename", "update"),
    ("edit", "update"),
    ("patch", "update"),
    ("resize", "update"),
    ("delete", "delete"),
    ("remove", "delete"),
    ("destroy", "delete"),
    ("drop", "delete"),
    ("teardown", "delete"),
];

/// Words that refer back to resources named before.
const BACK: [&str; 6] = ["it", "its", "them", "both", "all", "they"];

pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The CRUD verb of an operation, from its method and path.
pub(crate) fn operation_verb(operation: &Operation) -> Verb {
    if operation.method == CLI_METHOD {
        return Verb::Action("run".to_owned());
    }
    let path = operation.path.trim_end_matches('/');
    let last = path.rsplit('/').next().unwrap_or_default();
    if let Some((_, action)) = last.rsplit_once(':')
        && !action.contains('}')
    {
        return Verb::Action(action.to_lowercase());
    }
    let on_item = last.starts_with('{');
    match (operation.method.as_str(), on_item) {
        ("POST", false) => Verb::Create,
        ("GET", true) => Verb::Read,
        ("GET", false) => Verb::List,
        ("DELETE", _) => Verb::Delete,
        ("PATCH" | "PUT", _) | ("POST", true) => Verb::Update,
        _ => Verb::Read,
    }
}

/// The resource an operation acts on: the last collection segment of its path, singular
/// (`/clusters/{clusterId}/branches/{branchId}:reset` → `branch`).
pub(crate) fn operation_resource(operation: &Operation) -> String {
    if operation.method == CLI_METHOD {
        // A tool's name, as it is (`aws` is no plural).
        return operation.path.trim_start_matches('/').to_owned();
    }
    let collection = operation
        .path
        .split('/')
        .rev()
        .find(|segment| !segment.is_empty() && !segment.starts_with('{'))
        .unwrap_or_default();
    let collection = collection.split(':').next().unwrap_or_default();
    wayline_registry::openapi::singular(&collection.to_lowercase())
}

/// The resources of a spec (each operation's last collection segment, singular), in first-seen
/// order.
pub(crate) fn resources(spec: &ApiSpec) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for operation in &spec.operations {
        let resource = operation_resource(operation);
        if !resource.is_empty() && !found.contains(&resource) {
            found.push(resource);
        }
    }
    found
}

/// The goals of `target`, against the resources of `spec`.
pub fn parse(target: &str, spec: &ApiSpec) -> Vec<Goal> {
    let known = resources(spec);
    let mut goals: Vec<Goal> = Vec::new();
    let mut named: Vec<String> = Vec::new();
    let lowered = target.to_lowercase();
    let clauses = lowered
        .split([',', ';', '.'])
        .flat_map(|clause| clause.split(" then "))
        .flat_map(|clause| clause.split(" and "));
    let mut verb: Option<Verb> = None;
    for clause in clauses {
        let words = words(clause);
        let mut clause_resources: Vec<String> = Vec::new();
        let mut back = false;
        for word in &words {
            if let Some((_, meaning)) = VERBS.iter().find(|(text, _)| text == word) {
                verb = Some(match *meaning {
                    "run" => Verb::Action("run".to_owned()),
                    "create" => Verb::Create,
                    "read" => Verb::Read,
                    "list" => Verb::List,
                    "update" => Verb::Update,
                    _ => Verb::Delete,
                });
                continue;
            }
            if BACK.contains(&word.as_str()) {
                back = true;
                continue;
            }
            let singular = wayline_registry::openapi::singular(word);
            if let Some(resource) = known
                .iter()
                .find(|resource| **resource == singular || **resource == *word)
            {
                clause_resources.push(resource.clone());
            } else if let Some(action) = spec_action(spec, word) {
                verb = Some(Verb::Action(action));
            }
        }
        let Some(current) = verb.clone() else {
            continue;
        };
        let mut targets = clause_resources.clone();
        if targets.is_empty() && back {
            targets = if words.iter().any(|word| word == "it" || word == "its") {
                named.last().cloned().into_iter().collect()
            } else {
                // `both`, `them`, `all`: every one named so far, the last-named first.
                named.iter().rev().cloned().collect()
            };
        }
        let quoted = quoted_text(clause_original(target, clause));
        for resource in targets {
            let goal = Goal {
                verb: current.clone(),
                resource: resource.clone(),
                command: (current == Verb::Action("run".to_owned()))
                    .then(|| quoted.clone())
                    .flatten(),
            };
            if !goals.contains(&goal) {
                goals.push(goal);
            }
            if !named.contains(&resource) {
                named.push(resource);
            }
        }
    }
    goals
}

/// The text of `clause` (lower-cased) as written in `target` (quotes keep their case).
fn clause_original<'a>(target: &'a str, clause: &str) -> &'a str {
    let lowered = target.to_lowercase();
    match lowered.find(clause.trim()) {
        // Lower-casing keeps byte offsets for ASCII; anything else keeps the whole target.
        Some(start) if lowered.len() == target.len() => target
            .get(start..start + clause.trim().len())
            .unwrap_or(target),
        _ => target,
    }
}

/// The first text in `"…"`, `'…'` or `` `…` `` in `text`.
fn quoted_text(text: &str) -> Option<String> {
    for quote in ['"', '`', '\''] {
        if let Some(start) = text.find(quote)
            && let Some(length) = text[start + 1..].find(quote)
        {
            let inner = text[start + 1..start + 1 + length].trim();
            if !inner.is_empty() {
                return Some(inner.to_owned());
            }
        }
    }
    None
}

/// A word that is a custom method of the spec (`reset` of `…:reset`).
fn spec_action(spec: &ApiSpec, word: &str) -> Option<String> {
    spec.operations
        .iter()
        .find_map(|operation| match operation_verb(operation) {
            Verb::Action(action) if action == word => Some(action),
            _ => None,
        })
}

/// The operations that do `goal`.
pub(crate) fn candidates<'a>(spec: &'a ApiSpec, goal: &Goal) -> Vec<&'a Operation> {
    spec.operations
        .iter()
        .filter(|operation| {
            operation_resource(operation) == goal.resource && operation_verb(operation) == goal.verb
        })
        .collect()
}

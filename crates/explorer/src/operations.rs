//! What an operation does, and to which resource: its CRUD verb from its method and path (a
//! POST's from its summary when that starts with a verb), its resource from the last
//! collection segment of its path.

use serde::{Deserialize, Serialize};
use wayline_registry::openapi::{ApiSpec, Operation};

use crate::names::CLI_METHOD;

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

/// The lower-case words of `text`.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The CRUD verb of an operation, from its method and path (and, for a POST, the verb its
/// summary starts with).
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
    // A POST creates, changes or acts: its summary's verb says which, when it has one.
    if operation.method == "POST"
        && let Some(verb) = summary_verb(operation)
    {
        return match verb {
            "create" => Verb::Create,
            "read" => Verb::Read,
            "list" => Verb::List,
            "delete" => Verb::Delete,
            _ => Verb::Update,
        };
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

/// The verb an operation's summary starts with, when it is a CRUD verb the explorer knows
/// ("Create a new file" → `create`).
pub(crate) fn summary_verb(operation: &Operation) -> Option<&'static str> {
    let words = words(&operation.summary);
    crate::verbs::verb_of(words.first()?)
        .filter(|verb| matches!(*verb, "create" | "read" | "list" | "update" | "delete"))
}

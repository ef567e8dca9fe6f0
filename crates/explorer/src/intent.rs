//! A target in plain words read as goals: verbs to CRUD actions, nouns to the spec's
//! resources, clause by clause, with `it`, `them` and `both` taken back to the resources named
//! before. "create a cluster, create a branch on it, delete both" is create cluster, create
//! branch, delete branch, delete cluster (the last-made first, so children go before parents).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wayline_registry::openapi::{ApiSpec, Operation};

use crate::names;

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
    /// The id of an existing resource the target names (`344` of "update post 344").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Ids the target gives for other, existing resources the goal refers to (`cluster:
    /// 10086` of "create a branch on cluster 10086").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub given: BTreeMap<String, String>,
    /// The target asks for the whole collection ("delete all records"): only then may a
    /// collection-wide write do the goal (see [`crate::extent`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_collection: bool,
}

pub use crate::names::CLI_METHOD;

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

/// Words that, before a resource, mean every one of them ("delete all records").
const EVERY: [&str; 2] = ["all", "every"];

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

/// The goals of `target`, against the resources of `spec`. Resources are found in one word or
/// several (`special events` for `/special-events`), verbs among the usual words and the first
/// words of the spec's own summaries and operation ids (`place` of "Place an order"), a number
/// after a resource is the id of an existing one ("update post 344"), and creates are put after
/// the creates of what they refer to ("create an order for a pet" creates the pet first).
pub fn parse(target: &str, spec: &ApiSpec) -> Vec<Goal> {
    let known = resources(spec);
    let spec_verbs = spec_verbs(spec, &known);
    let mut goals: Vec<Goal> = Vec::new();
    // Resources named so far, with the id the target gave them.
    let mut named: Vec<(String, Option<String>)> = Vec::new();
    let lowered = target.to_lowercase();
    let clauses = lowered
        .split([',', ';', '.'])
        .flat_map(|clause| clause.split(" then "))
        .flat_map(|clause| clause.split(" and "));
    let mut verb: Option<Verb> = None;
    for clause in clauses {
        let words = words(clause);
        let mut clause_resources: Vec<(String, Option<String>)> = Vec::new();
        // Resources this clause names as a whole ("all records").
        let mut whole: Vec<String> = Vec::new();
        let mut back = false;
        let mut index = 0;
        while index < words.len() {
            let word = &words[index];
            if EVERY.contains(&word.as_str())
                && let Some((resource, length)) = resource_at(&words[index + 1..], &known)
            {
                index += 1 + length;
                whole.push(resource.clone());
                clause_resources.push((resource, None));
                continue;
            }
            if let Some((_, meaning)) = VERBS.iter().find(|(text, _)| text == word) {
                verb = Some(match *meaning {
                    "run" => Verb::Action("run".to_owned()),
                    "create" => Verb::Create,
                    "read" => Verb::Read,
                    "list" => Verb::List,
                    "update" => Verb::Update,
                    _ => Verb::Delete,
                });
                index += 1;
                continue;
            }
            if BACK.contains(&word.as_str()) {
                back = true;
                index += 1;
                continue;
            }
            if let Some((resource, length)) = resource_at(&words[index..], &known) {
                index += length;
                // A number right after it is the id of an existing one.
                let id = words
                    .get(index)
                    .filter(|word| word.bytes().all(|byte| byte.is_ascii_digit()))
                    .cloned();
                if id.is_some() {
                    index += 1;
                }
                clause_resources.push((resource, id));
                continue;
            }
            if let Some(action) = spec_action(spec, word) {
                verb = Some(Verb::Action(action));
            } else if let Some((_, meaning)) = spec_verbs.iter().find(|(text, _)| text == word) {
                verb = Some(meaning.clone());
            }
            index += 1;
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
        // In a create, a resource named with its id is one that exists: it is what the others
        // are made on ("create a branch on cluster 10086"), not one more to create.
        let mut given = BTreeMap::new();
        if current == Verb::Create && targets.iter().any(|(_, id)| id.is_none()) {
            targets.retain(|(resource, id)| match id {
                Some(id) => {
                    given.insert(resource.clone(), id.clone());
                    false
                }
                None => true,
            });
        }
        let quoted = quoted_text(clause_original(target, clause));
        for (resource, id) in targets {
            let goal = Goal {
                verb: current.clone(),
                resource: resource.clone(),
                command: (current == Verb::Action("run".to_owned()))
                    .then(|| quoted.clone())
                    .flatten(),
                id: id.clone(),
                given: given.clone(),
                whole_collection: whole.contains(&resource),
            };
            if !goals.contains(&goal) {
                goals.push(goal);
            }
            match named.iter_mut().find(|(known, _)| *known == resource) {
                Some(entry) => entry.1 = id.or(entry.1.take()),
                None => named.push((resource, id)),
            }
        }
    }
    creates_after_what_they_refer_to(goals, spec)
}

/// The resource named by the first words of `words` (one to three, joined: `special events` is
/// `special-event`), and how many words it took; the longest match first.
fn resource_at(words: &[String], known: &[String]) -> Option<(String, usize)> {
    (1..=words.len().min(3)).rev().find_map(|length| {
        let joined = words[..length].concat();
        let singular = wayline_registry::openapi::singular(&joined);
        known
            .iter()
            .find(|resource| {
                let resource = names::normalize(resource);
                resource == singular || resource == joined
            })
            .map(|resource| (resource.clone(), length))
    })
}

/// Words the spec's own summaries and operation ids start with that are no usual verb
/// (`place` of `placeOrder`, "Place an order for a pet"), each with the verb its operation
/// does: a target worded like an operation reads as that operation's verb.
fn spec_verbs(spec: &ApiSpec, known: &[String]) -> Vec<(String, Verb)> {
    let mut found: Vec<(String, Verb)> = Vec::new();
    for operation in &spec.operations {
        if operation.method == CLI_METHOD {
            continue;
        }
        let summary = words(&operation.summary);
        let id = wayline_knowledge::words::words(&operation.id);
        for first in [summary.first(), id.first()].into_iter().flatten() {
            let usual = VERBS.iter().any(|(text, _)| text == first)
                || BACK.contains(&first.as_str())
                || wayline_knowledge::words::is_stopword(first)
                || known
                    .iter()
                    .any(|resource| names::normalize(resource) == *first);
            if !usual && first.len() > 2 && !found.iter().any(|(word, _)| word == first) {
                found.push((first.clone(), operation_verb(operation)));
            }
        }
    }
    found
}

/// `goals` with every create moved after the creates of resources its operations refer to
/// (an id field of that resource's type in their inputs, required or not); otherwise in the
/// order the target gave.
fn creates_after_what_they_refer_to(goals: Vec<Goal>, spec: &ApiSpec) -> Vec<Goal> {
    let refers_to = |goal: &Goal, other: &Goal| {
        goal.verb == Verb::Create
            && other.verb == Verb::Create
            && goal.resource != other.resource
            && candidates(spec, goal).iter().any(|operation| {
                operation.parameters.iter().any(|parameter| {
                    names::id_kind(&parameter.name).as_deref()
                        == Some(names::normalize(&other.resource).as_str())
                })
            })
    };
    let mut ordered: Vec<Goal> = Vec::with_capacity(goals.len());
    let mut pending = goals;
    while !pending.is_empty() {
        // The first goal that refers to no create still pending (the first of all, should
        // they refer to each other in a circle).
        let next = (0..pending.len())
            .find(|&at| {
                !pending
                    .iter()
                    .enumerate()
                    .any(|(other, goal)| other != at && refers_to(&pending[at], goal))
            })
            .unwrap_or(0);
        ordered.push(pending.remove(next));
    }
    ordered
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

/// The operations that do `goal`. A collection-wide write does only a goal about the whole
/// collection ("delete all records"), and such a goal is done by nothing else when it
/// changes or deletes ("list all records" lists them as any list does).
pub(crate) fn candidates<'a>(spec: &'a ApiSpec, goal: &Goal) -> Vec<&'a Operation> {
    let writes = matches!(goal.verb, Verb::Update | Verb::Delete);
    spec.operations
        .iter()
        .filter(|operation| {
            operation_resource(operation) == goal.resource && operation_verb(operation) == goal.verb
        })
        .filter(|operation| {
            if crate::extent::collection_wide(spec, operation).is_some() {
                goal.whole_collection
            } else {
                !(goal.whole_collection && writes)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    fn spec() -> ApiSpec {
        let ok = json!({"200": {"description": "ok"}});
        let spec = json!({
            "openapi": "3.0.0",
            "paths": {
                "/special-events": {"post": {"operationId": "createSpecialEvent", "responses": ok}},
                "/special-events/{eventId}": {"delete": {"operationId": "deleteSpecialEvent", "responses": ok}},
                "/pets": {"post": {"operationId": "addPet", "responses": ok}},
                "/posts/{postId}": {"put": {"operationId": "updatePost", "responses": ok}},
                "/store/order": {"post": {
                    "operationId": "placeOrder", "summary": "Place an order for a pet",
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                        "properties": {"petId": {"type": "integer"}, "quantity": {"type": "integer"}}}}}},
                    "responses": ok}}
            }
        });
        ApiSpec::parse(&spec.to_string(), Path::new("spec.json")).unwrap()
    }

    fn goal(verb: Verb, resource: &str, id: Option<&str>) -> Goal {
        Goal {
            verb,
            resource: resource.to_owned(),
            command: None,
            id: id.map(str::to_owned),
            given: BTreeMap::new(),
            whole_collection: false,
        }
    }

    #[test]
    fn all_before_a_resource_is_the_whole_collection_and_only_it_takes_a_collection_write() {
        let ok = json!({"200": {"description": "ok"}});
        let spec = ApiSpec::parse(
            &json!({"openapi": "3.0.0", "paths": {
                "/records": {"post": {"operationId": "createRecord", "responses": ok},
                             "delete": {"operationId": "deleteRecords", "responses": ok}},
                "/records/{id}": {"delete": {"operationId": "deleteRecord", "responses": ok}}
            }})
            .to_string(),
            Path::new("spec.json"),
        )
        .unwrap();
        let goals = parse("create a record, then delete it", &spec);
        assert!(!goals[1].whole_collection);
        let ids = |goal: &Goal| -> Vec<String> {
            candidates(&spec, goal)
                .iter()
                .map(|operation| operation.id.clone())
                .collect()
        };
        assert_eq!(
            ids(&goals[1]),
            ["deleteRecord"],
            "never the collection-wide delete"
        );
        let goals = parse("delete all records", &spec);
        assert!(goals[0].whole_collection);
        assert_eq!(ids(&goals[0]), ["deleteRecords"]);
        // `them all` refers back; it is no whole collection.
        let goals = parse("create a record, then delete them all", &spec);
        assert!(!goals[1].whole_collection);
    }

    #[test]
    fn collections_of_several_words_are_resources() {
        assert_eq!(
            parse("create a special event, then delete it", &spec()),
            [
                goal(Verb::Create, "special-event", None),
                goal(Verb::Delete, "special-event", None)
            ]
        );
    }

    #[test]
    fn a_target_worded_like_an_operation_takes_its_verb() {
        assert_eq!(
            parse("place an order", &spec()),
            [goal(Verb::Create, "order", None)]
        );
    }

    #[test]
    fn a_number_after_a_resource_is_its_id_and_it_carries_it() {
        assert_eq!(
            parse("update post 344, then delete it", &spec()),
            [
                goal(Verb::Update, "post", Some("344")),
                goal(Verb::Delete, "post", Some("344"))
            ]
        );
    }

    #[test]
    fn a_resource_named_with_its_id_in_a_create_is_what_the_others_are_made_on() {
        let mut on_pet = goal(Verb::Create, "order", None);
        on_pet.given.insert("pet".to_owned(), "10086".to_owned());
        assert_eq!(parse("create an order for pet 10086", &spec()), [on_pet]);
    }

    #[test]
    fn a_create_comes_after_the_create_of_what_it_refers_to() {
        assert_eq!(
            parse("create an order for a pet", &spec()),
            [
                goal(Verb::Create, "pet", None),
                goal(Verb::Create, "order", None)
            ]
        );
        // Otherwise the target's order stands.
        assert_eq!(
            parse("create a pet and a special event", &spec()),
            [
                goal(Verb::Create, "pet", None),
                goal(Verb::Create, "special-event", None)
            ]
        );
    }
}

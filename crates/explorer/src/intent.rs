//! A target in plain words read as goals: verbs to CRUD actions, nouns to the spec's
//! resources, clause by clause, with `it`, `them` and `both` taken back to the resources named
//! before. "create a cluster, create a branch on it, delete both" is create cluster, create
//! branch, delete branch, delete cluster (the last-made first, so children go before parents).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wayline_registry::openapi::{ApiSpec, Operation};

use crate::names;
pub use crate::operations::Verb;
pub(crate) use crate::operations::{operation_resource, operation_verb, resources, words};
pub(crate) use crate::verbs::verb_of;

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
    /// Values the target gives for the goal's own request ("update its title to y": `title:
    /// y`; "named demo": `name: demo`), as written; typed by the spec when sent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, String>,
    /// The status the target expects ("reading it gives 404", "it is gone"): that answer is
    /// the goal done, and any other is a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<u16>,
    /// The method the target names for an update ("patch it": `PATCH`; "put", "replace":
    /// `PUT`); with none, PATCH goes before PUT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Which of several alike goals this is ("create two files": 0 and 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copy: u32,
    /// The word the target used for the resource, when the spec's paths do not name it so
    /// (`file`, a `content` of `/api/contents/{path}`): a body field offering it as a value
    /// (`type: file`) takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noun: Option<String>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

pub use crate::names::CLI_METHOD;

/// Words before a status that say the target expects it ("gives 404", "expect 409").
const STATUS_LEADS: [&str; 10] = [
    "gives",
    "give",
    "returns",
    "return",
    "answers",
    "expect",
    "expecting",
    "with",
    "is",
    "status",
];

/// Words after which a resource named before is where the goal happens, not one more goal
/// ("create a record in the collection", "list the records of the bucket").
const PREPOSITIONS: [&str; 9] = [
    "in", "on", "of", "under", "inside", "within", "for", "from", "into",
];

/// The word a possessive `'s` is read as.
const POSSESSIVE: &str = "wlpossessive";

/// Counts before a resource ("create two files").
const COUNTS: [(&str, u32); 8] = [
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("2", 2),
    ("3", 3),
    ("4", 4),
    ("5", 5),
];

/// Words that refer back to resources named before.
const BACK: [&str; 6] = ["it", "its", "them", "both", "all", "they"];

/// Words that, before a resource, mean every one of them ("delete all records").
const EVERY: [&str; 2] = ["all", "every"];

/// The goals of `target`, against the resources of `spec`. Resources are found in one word or
/// several (`special events` for `/special-events`), verbs among the usual words and the first
/// words of the spec's own summaries and operation ids (`place` of "Place an order"), a number
/// after a resource is the id of an existing one ("update post 344"), and creates are put after
/// the creates of what they refer to ("create an order for a pet" creates the pet first).
pub fn parse(target: &str, spec: &ApiSpec) -> Vec<Goal> {
    let known = resources(spec);
    let aliases = crate::vocabulary::aliases(spec);
    let spec_verbs = spec_verbs(spec, &known);
    // Values come out first, as placeholders, so their words are read as no verb or
    // resource and keep their case.
    let (text, values) = crate::phrases::lift(target, &known);
    let mut goals: Vec<Goal> = Vec::new();
    // Resources named so far, with the id the target gave them.
    let mut named: Vec<(String, Option<String>)> = Vec::new();
    let lowered = text.to_lowercase();
    let clauses = lowered
        .split([',', ';', '.'])
        .flat_map(|clause| clause.split(" then "))
        .flat_map(|clause| clause.split(" and "));
    let mut verb: Option<Verb> = None;
    for clause in clauses {
        // A possessive is a word of its own: `the bucket's records` is no `buckets`.
        let words = words(&clause.replace("'s ", &format!(" {POSSESSIVE} ")));
        let read = read_clause(&words, spec, (&known, &aliases), &spec_verbs, &named);
        if read.verb.is_some() {
            verb = read.verb.clone();
        }
        let Some(current) = verb.clone() else {
            continue;
        };
        let mut targets = read.resources.clone();
        if targets.is_empty() && read.back {
            targets = if words.iter().any(|word| word == "it" || word == "its") {
                named.last().cloned().into_iter().collect()
            } else {
                // `both`, `them`, `all`: every one named so far, the last-named first.
                named.iter().rev().cloned().collect()
            };
        }
        // In a create, a resource named with its id is one that exists: it is what the others
        // are made on ("create a branch on cluster 10086"), not one more to create.
        let mut given: BTreeMap<String, String> = read.given.iter().cloned().collect();
        if current == Verb::Create && targets.iter().any(|(_, id)| id.is_none()) {
            targets.retain(|(resource, id)| match id {
                Some(id) => {
                    given.insert(resource.clone(), id.clone());
                    false
                }
                None => true,
            });
        }
        let quoted = quoted_text(clause_original(&text, clause));
        let clause_values: BTreeMap<String, String> = read
            .values
            .iter()
            .filter_map(|index| values.get(*index))
            .map(|value| (value.field.clone(), value.value.clone()))
            .collect();
        for (resource, id) in targets {
            let count = read
                .counts
                .iter()
                .find(|(counted, _)| *counted == resource)
                .map_or(1, |(_, count)| *count);
            for copy in 0..count {
                let goal = Goal {
                    verb: current.clone(),
                    resource: resource.clone(),
                    command: (current == Verb::Action("run".to_owned()))
                        .then(|| quoted.clone())
                        .flatten(),
                    id: id.clone(),
                    given: given.clone(),
                    whole_collection: read.whole.contains(&resource),
                    values: clause_values.clone(),
                    expect: read.expect,
                    method: read.method.clone(),
                    copy,
                    noun: read
                        .nouns
                        .iter()
                        .find(|(named, _)| *named == resource)
                        .map(|(_, noun)| noun.clone()),
                };
                if !goals.contains(&goal) {
                    goals.push(goal);
                }
            }
            match named.iter_mut().find(|(known, _)| *known == resource) {
                Some(entry) => entry.1 = id.or(entry.1.take()),
                None => named.push((resource, id)),
            }
        }
    }
    read_back_updates(creates_after_what_they_refer_to(goals, spec), spec)
}

/// `goals` with each update that gives values read back: the next goal about its resource,
/// when it is a plain read, checks the values; otherwise a read that does is put right after
/// the update (when the spec can read the resource). "Rename it to b" is not done until a
/// read shows `b`.
fn read_back_updates(mut goals: Vec<Goal>, spec: &ApiSpec) -> Vec<Goal> {
    let mut at = 0;
    while at < goals.len() {
        let update = &goals[at];
        if update.verb != Verb::Update || update.values.is_empty() {
            at += 1;
            continue;
        }
        let mut read = update.clone();
        read.verb = Verb::Read;
        read.method = None;
        read.expect = None;
        let next = goals[at + 1..]
            .iter()
            .position(|goal| goal.resource == update.resource)
            .map(|offset| at + 1 + offset);
        match next {
            Some(next)
                if goals[next].verb == Verb::Read
                    && goals[next].expect.is_none()
                    && goals[next].values.is_empty() =>
            {
                goals[next].values = read.values;
            }
            _ if !candidates(spec, &read).is_empty() && !goals.contains(&read) => {
                goals.insert(at + 1, read);
            }
            _ => {}
        }
        at += 1;
    }
    goals
}

/// What one clause says.
#[derive(Debug, Default)]
struct Clause {
    /// Its verb, when it has one (else the last clause's goes on).
    verb: Option<Verb>,
    /// The resources it is about, each with the id the target gave it.
    resources: Vec<(String, Option<String>)>,
    /// Resources it names as a whole ("all records").
    whole: Vec<String>,
    /// How many of a resource ("two files").
    counts: Vec<(String, u32)>,
    /// It refers back (`it`, `them`, `both`).
    back: bool,
    /// The values it gives (indexes of the lifted values).
    values: Vec<usize>,
    /// The status it expects.
    expect: Option<u16>,
    /// The method it names (`PATCH`, `PUT`).
    method: Option<String>,
    /// The words it used for resources the spec's paths name otherwise (`content`: `file`).
    nouns: Vec<(String, String)>,
    /// Existing resources it names with their ids as where the goal happens ("in bucket 7").
    given: Vec<(String, String)>,
}

/// Reads the words of one clause. `named` are the resources named in the clauses before.
fn read_clause(
    words: &[String],
    spec: &ApiSpec,
    (known, aliases): (&[String], &[crate::vocabulary::Alias]),
    spec_verbs: &[(String, Verb)],
    named: &[(String, Option<String>)],
) -> Clause {
    let mut clause = Clause::default();
    // The resource the first words of a slice name: by the spec's paths, else by a word its
    // summaries or tags use for one ("file" for a `content`), with that word.
    let resource_in = |words: &[String]| -> Option<(String, usize, Option<String>)> {
        resource_at(words, known)
            .map(|(resource, length)| (resource, length, None))
            .or_else(|| {
                let word = words.first()?;
                let singular = wayline_registry::openapi::singular(word);
                aliases
                    .iter()
                    .find(|alias| alias.word == singular || alias.word == *word)
                    .map(|alias| (alias.resource.clone(), 1, Some(alias.word.clone())))
            })
    };
    let mut index = 0;
    while index < words.len() {
        let word = &words[index];
        let previous = index.checked_sub(1).map(|at| words[at].as_str());
        if let Some(value) = crate::phrases::placeholder_index(word) {
            clause.values.push(value);
            index += 1;
            continue;
        }
        // "reading it gives 404", "expect 409".
        if let Ok(status) = word.parse::<u16>()
            && (100..=599).contains(&status)
            && previous.is_some_and(|previous| STATUS_LEADS.contains(&previous))
        {
            clause.expect = Some(status);
            index += 1;
            continue;
        }
        // "it is gone", "it no longer exists", "it is not found".
        let gone = word == "gone"
            || (word == "longer" && previous == Some("no"))
            || (word == "found" && previous == Some("not"));
        if gone {
            clause.expect = Some(404);
            clause.verb = Some(Verb::Read);
            index += 1;
            continue;
        }
        if EVERY.contains(&word.as_str())
            && let Some((resource, length, noun)) = resource_in(&words[index + 1..])
        {
            index += 1 + length;
            clause.whole.push(resource.clone());
            clause
                .nouns
                .extend(noun.map(|noun| (resource.clone(), noun)));
            clause.resources.push((resource, None));
            continue;
        }
        if let Some((_, count)) = COUNTS.iter().find(|(text, _)| text == word)
            && let Some((resource, length, noun)) = resource_in(&words[index + 1..])
        {
            index += 1 + length;
            clause.counts.push((resource.clone(), *count));
            clause
                .nouns
                .extend(noun.map(|noun| (resource.clone(), noun)));
            clause.resources.push((resource, None));
            continue;
        }
        if let Some(meaning) = verb_of(word) {
            match word.as_str() {
                "patch" | "patching" => clause.method = Some("PATCH".to_owned()),
                "put" | "putting" | "replace" | "replacing" => {
                    clause.method = Some("PUT".to_owned());
                }
                _ => {}
            }
            // A later verb in the clause (after "gone") does not undo the expectation's read.
            if clause.expect.is_none() || clause.verb.is_none() {
                clause.verb = Some(match meaning {
                    "run" => Verb::Action("run".to_owned()),
                    "create" => Verb::Create,
                    "read" => Verb::Read,
                    "list" => Verb::List,
                    "update" => Verb::Update,
                    _ => Verb::Delete,
                });
            }
            index += 1;
            continue;
        }
        if BACK.contains(&word.as_str()) {
            clause.back = true;
            index += 1;
            continue;
        }
        if let Some((resource, length, noun)) = resource_in(&words[index..]) {
            index += length;
            clause
                .nouns
                .extend(noun.map(|noun| (resource.clone(), noun)));
            // A number right after it is the id of an existing one.
            let id = words
                .get(index)
                .filter(|word| word.bytes().all(|byte| byte.is_ascii_digit()))
                .cloned();
            if id.is_some() {
                index += 1;
            }
            // A resource named before, after `in`/`of`/… (or before `'s`), is where the goal
            // happens: "create a record in the collection", "list the bucket's records".
            let after_preposition = previous
                .is_some_and(|previous| PREPOSITIONS.contains(&previous))
                || (previous.is_some_and(|previous| {
                    matches!(previous, "the" | "that" | "this" | "its" | "their")
                }) && index >= length + 2
                    && PREPOSITIONS.contains(&words[index - length - 2].as_str()));
            let possessive = words.get(index).is_some_and(|next| next == POSSESSIVE)
                && resource_at(&words[(index + 1).min(words.len())..], known).is_some();
            let placed = (after_preposition && !clause.resources.is_empty()) || possessive;
            let named_before = named.iter().any(|(known, _)| *known == resource);
            match id {
                // "delete all records in bucket 7": bucket 7 is where, not one more goal.
                Some(id) if placed => clause.given.push((resource, id)),
                None if placed && named_before => {}
                id => clause.resources.push((resource, id)),
            }
            continue;
        }
        if let Some(action) = spec_action(spec, word) {
            clause.verb = Some(Verb::Action(action));
        } else if let Some((_, meaning)) = spec_verbs.iter().find(|(text, _)| text == word) {
            clause.verb = Some(meaning.clone());
        }
        index += 1;
    }
    clause
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
            let usual = verb_of(first).is_some()
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
/// changes or deletes ("list all records" lists them as any list does). An update's
/// candidates are the method the target names, else PATCH, then PUT, then the rest.
pub(crate) fn candidates<'a>(spec: &'a ApiSpec, goal: &Goal) -> Vec<&'a Operation> {
    let writes = matches!(goal.verb, Verb::Update | Verb::Delete);
    let mut found = spec
        .operations
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
        .collect::<Vec<_>>();
    if goal.verb != Verb::Update {
        return found;
    }
    // The method the target names, when the API has it; else a partial update (PATCH)
    // before a replacement (PUT), which would drop the fields it is not given.
    if let Some(method) = &goal.method
        && found.iter().any(|operation| operation.method == *method)
    {
        found.retain(|operation| operation.method == *method);
    }
    let order = |operation: &&Operation| match operation.method.as_str() {
        "PATCH" => 0,
        "PUT" => 1,
        _ => 2,
    };
    found.sort_by_key(order);
    found
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
            values: BTreeMap::new(),
            expect: None,
            method: None,
            copy: 0,
            noun: None,
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

    fn nested() -> ApiSpec {
        let ok = json!({"200": {"description": "ok"}});
        ApiSpec::parse(
            &json!({"openapi": "3.0.0", "paths": {
                "/buckets": {"post": {"operationId": "createBucket", "responses": ok}},
                "/buckets/{bid}/records": {"post": {"operationId": "createRecord", "responses": ok},
                                           "get": {"operationId": "listRecords", "responses": ok}},
                "/buckets/{bid}/records/{id}": {
                    "get": {"operationId": "getRecord", "responses": ok},
                    "put": {"operationId": "putRecord", "responses": ok},
                    "patch": {"operationId": "patchRecord", "responses": ok}}
            }})
            .to_string(),
            Path::new("spec.json"),
        )
        .unwrap()
    }

    #[test]
    fn targets_carry_values_outcomes_methods_and_counts() {
        let spec = nested();
        let goals = parse(
            "create a record with title hello, then update its title to Second, then reading it gives 404",
            &spec,
        );
        assert_eq!(goals.len(), 4, "{goals:#?}");
        assert_eq!(goals[0].values["title"], "hello");
        assert_eq!(goals[1].verb, Verb::Update);
        assert_eq!(goals[1].values["title"], "Second");
        assert_eq!(goals[1].method, None);
        // The update is read back before the read that expects an error.
        assert_eq!((goals[2].verb.clone(), goals[2].expect), (Verb::Read, None));
        assert_eq!(goals[2].values["title"], "Second");
        assert_eq!(
            (goals[3].verb.clone(), goals[3].expect),
            (Verb::Read, Some(404))
        );
        // A read that follows the update checks its values.
        let goals = parse(
            "create a record, then update its title to x, then read it",
            &spec,
        );
        assert_eq!(goals.len(), 3, "{goals:#?}");
        assert_eq!(goals[2].values["title"], "x");
        let goals = parse("create a record, delete it, then it is gone", &spec);
        assert_eq!(
            (goals[2].verb.clone(), goals[2].expect),
            (Verb::Read, Some(404))
        );
        let goals = parse("create a record, then patch it with title x", &spec);
        assert_eq!(goals[1].method.as_deref(), Some("PATCH"));
        let goals = parse("create a record, then replace it with title x", &spec);
        assert_eq!(goals[1].method.as_deref(), Some("PUT"));
        // Two of one resource are two goals; the parent named before is where they go.
        let goals = parse(
            "create a bucket, create two records in the bucket, then list the bucket's records",
            &spec,
        );
        let read: Vec<(Verb, &str, u32)> = goals
            .iter()
            .map(|goal| (goal.verb.clone(), goal.resource.as_str(), goal.copy))
            .collect();
        assert_eq!(
            read,
            [
                (Verb::Create, "bucket", 0),
                (Verb::Create, "record", 0),
                (Verb::Create, "record", 1),
                (Verb::List, "record", 0)
            ]
        );
        let goals = parse(
            "create a bucket, then list the records of the bucket",
            &spec,
        );
        assert_eq!(goals.len(), 2, "no list of buckets: {goals:#?}");
        // A resource with its id after "in" is where the goal happens, whatever the verb.
        let goals = parse("delete all records in bucket 7", &spec);
        assert_eq!(goals.len(), 1, "the bucket is no goal: {goals:#?}");
        assert!(goals[0].whole_collection);
        assert_eq!(goals[0].given["bucket"], "7");
    }

    #[test]
    fn verbs_in_their_other_forms() {
        for (word, verb) in [
            ("reading", "read"),
            ("getting", "read"),
            ("creating", "create"),
            ("deleting", "delete"),
            ("listing", "list"),
            ("patching", "update"),
        ] {
            assert_eq!(verb_of(word), Some(verb), "{word}");
        }
        assert_eq!(verb_of("thing"), None);
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

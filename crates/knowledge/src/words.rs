//! Words in identifiers and sentences: operation ids split into verbs and nouns, variable
//! names compared loosely, intent keywords.

/// Verbs operation ids start with, mapped to the CRUD action they stand for.
const VERBS: [(&str, &str); 16] = [
    ("create", "create"),
    ("add", "create"),
    ("post", "create"),
    ("new", "create"),
    ("get", "read"),
    ("describe", "read"),
    ("list", "read"),
    ("read", "read"),
    ("fetch", "read"),
    ("update", "update"),
    ("patch", "update"),
    ("put", "update"),
    ("modify", "update"),
    ("scale", "update"),
    ("delete", "delete"),
    ("remove", "delete"),
];

/// Words too common to select anything.
const STOPWORDS: [&str; 24] = [
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "from", "it",
    "its", "then", "until", "is", "be", "as", "at", "into", "service", "api",
];

/// The lower-case words of an identifier or sentence: `ClusterService_GetCluster` gives
/// `cluster service get cluster`; `get-node_groups` gives `get node groups`.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for character in text.chars() {
        if !character.is_alphanumeric() {
            flush(&mut current, &mut words);
            previous = None;
            continue;
        }
        let boundary = previous.is_some_and(|before| {
            (before.is_lowercase() && character.is_uppercase())
                || (before.is_alphabetic() && character.is_numeric())
        });
        if boundary {
            flush(&mut current, &mut words);
        }
        current.extend(character.to_lowercase());
        previous = Some(character);
    }
    flush(&mut current, &mut words);
    words
}

fn flush(current: &mut String, words: &mut Vec<String>) {
    if !current.is_empty() {
        words.push(std::mem::take(current));
    }
}

/// The CRUD action a word stands for, if it is a known verb.
pub fn action_of(word: &str) -> Option<&'static str> {
    VERBS
        .iter()
        .find(|(verb, _)| *verb == word)
        .map(|(_, action)| *action)
}

/// The resource an operation acts on: its last word that is neither a verb nor a stop word
/// (`ClusterService_GetCluster` → `cluster`, `list_node_groups` → `group`), singular.
pub fn resource_of(operation_id: &str) -> String {
    words(operation_id)
        .into_iter()
        .rev()
        .find(|word| action_of(word).is_none() && !is_stopword(word) && !is_number(word))
        .map(|word| singular(&word))
        .unwrap_or_else(|| operation_id.to_lowercase())
}

/// The CRUD action of an operation: its first verb (`read` when it has none and the method
/// is GET, otherwise unknown).
pub fn operation_action(operation_id: &str) -> Option<&'static str> {
    words(operation_id).iter().find_map(|word| action_of(word))
}

/// True for words that select nothing.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

fn is_number(word: &str) -> bool {
    word.bytes().all(|byte| byte.is_ascii_digit())
}

/// A word without a plural `s` (`clusters` → `cluster`; `status` stays).
pub fn singular(word: &str) -> String {
    if word.len() > 3 && word.ends_with('s') && !word.ends_with("ss") && !word.ends_with("us") {
        word[..word.len() - 1].to_owned()
    } else {
        word.to_owned()
    }
}

/// A variable name compared loosely: lower case, letters and digits only
/// (`nodegroup_1`, `NodeGroup1` and `node-group-1` are one name).
pub fn loose(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|character| character.to_ascii_lowercase())
        .collect()
}

/// True when two variable names are the same loosely, or one is the other with a `_1`-style
/// suffix or an `_id` suffix (`nodegroup_1` and `NodeGroupId` both name a node group id).
pub fn same_variable(a: &str, b: &str) -> bool {
    let (a, b) = (loose(a), loose(b));
    let trim = |name: &str| {
        name.trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches("id")
            .to_owned()
    };
    a == b || (!trim(&a).is_empty() && trim(&a) == trim(&b))
}

/// Names an error message says are missing. A JSON error body in the message (`HTTP 422:
/// {...}`) is read as the common frameworks write one:
/// - FastAPI / Pydantic: `{"detail": [{"loc": ["body", "title"], "msg": "field required",
///   "type": "value_error.missing"}]}`: the last name of each `loc` whose entry says the value is
///   missing (its `type` or `msg`);
/// - RFC 7807 problem details (and the many APIs that list errors alike): the `name`, `field`,
///   `param`, `property` or `pointer` of each entry of `invalid-params`, `invalid_params`,
///   `errors` or `violations` that says it is missing or required;
/// - any JSON: the phrasings below in its `detail`, `title`, `message`, `error`, `msg` and
///   `description` texts, nested ones too.
///
/// Otherwise, the phrasings in the message: `X is required`, `X is missing`, `X are
/// required`, `missing X`, `requires X`, `missing required field X`, `X must be provided` (or
/// set, given, specified), `X not set`, `X required`, `X: field required`.
pub fn missing_names(message: &str) -> Vec<String> {
    let structured = json_body(message)
        .map(|body| {
            let mut names = Vec::new();
            missing_in_json(&body, &mut names, false);
            names
        })
        .unwrap_or_default();
    let mut names = if structured.is_empty() {
        missing_in_text(message)
    } else {
        structured
    };
    let mut seen = Vec::new();
    names.retain(|name| {
        let fresh = !seen.contains(name);
        seen.push(name.clone());
        fresh
    });
    names
}

/// The JSON document in a message (`HTTP 422: {...} (after 3 attempts)`), if it holds one
/// whole.
fn json_body(message: &str) -> Option<serde_json::Value> {
    let start = message.find(['{', '['])?;
    serde_json::Deserializer::from_str(&message[start..])
        .into_iter::<serde_json::Value>()
        .next()?
        .ok()
}

/// Keys of error texts in JSON error bodies.
const TEXT_KEYS: [&str; 6] = ["detail", "title", "message", "error", "msg", "description"];

/// Keys of the lists of per-field errors in JSON error bodies.
const LIST_KEYS: [&str; 5] = [
    "detail",
    "invalid-params",
    "invalid_params",
    "errors",
    "violations",
];

/// Keys naming the field a per-field error is about.
const FIELD_KEYS: [&str; 5] = ["name", "field", "param", "property", "pointer"];

/// The names `value` (a JSON error body, or an `entry` of one of its per-field error lists)
/// says are missing.
fn missing_in_json(value: &serde_json::Value, names: &mut Vec<String>, entry: bool) {
    use serde_json::Value;
    let Value::Object(object) = value else {
        if let Value::Array(items) = value {
            items
                .iter()
                .for_each(|item| missing_in_json(item, names, true));
        }
        return;
    };
    // One field's error: Pydantic's `loc`, or a named field.
    let says_missing = object.iter().any(|(key, text)| {
        matches!(
            key.as_str(),
            "type" | "msg" | "message" | "reason" | "detail" | "code"
        ) && text.as_str().is_some_and(|text| {
            let text = text.to_lowercase();
            text.contains("missing") || text.contains("required")
        })
    });
    let field = object
        .get("loc")
        .and_then(Value::as_array)
        .and_then(|loc| loc.iter().rev().find_map(Value::as_str))
        // Only an entry names its field so: a whole body's `name` is the error's own
        // (`{"name": "BadRequest", "message": "title is required"}`).
        .or_else(|| {
            FIELD_KEYS
                .iter()
                .filter(|_| entry)
                .find_map(|key| object.get(*key).and_then(Value::as_str))
        })
        .map(|field| field.rsplit('/').next().unwrap_or(field));
    if says_missing && let Some(field) = field {
        // `loc: ["body"]` is the whole body missing, not a field of it.
        if !field.is_empty() && !LOCATIONS.contains(&field) {
            names.push(field.to_owned());
        }
        return;
    }
    for key in LIST_KEYS {
        if let Some(Value::Array(entries)) = object.get(key) {
            entries
                .iter()
                .for_each(|item| missing_in_json(item, names, true));
        }
    }
    for key in TEXT_KEYS {
        match object.get(key) {
            Some(Value::String(text)) => names.extend(missing_in_text(text)),
            Some(nested @ Value::Object(_)) => missing_in_json(nested, names, false),
            _ => {}
        }
    }
}

/// Where a request puts its values, as error bodies name them.
const LOCATIONS: [&str; 5] = ["body", "query", "path", "header", "cookie"];

/// Words that say what is missing but never name it (and the keys of Pydantic's errors, read
/// as text when a body was cut short).
const NOT_NAMES: [&str; 14] = [
    "field",
    "fields",
    "parameter",
    "parameters",
    "property",
    "properties",
    "value",
    "values",
    "argument",
    "arguments",
    "required",
    "missing",
    "msg",
    "loc",
];

/// The phrasings of [`missing_names`] in plain text.
fn missing_in_text(message: &str) -> Vec<String> {
    let words: Vec<&str> = message
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '\'' | '"' | '`'))
        .filter(|word| !word.is_empty())
        .collect();
    // Compared without punctuation: `required.` and `required)` are `required`.
    let bare = |word: &str| {
        word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .to_lowercase()
    };
    let mut names = Vec::new();
    for (index, word) in words.iter().enumerate() {
        let next = |offset: usize| {
            words
                .get(index + offset)
                .map(|w| bare(w))
                .unwrap_or_default()
        };
        let before = (matches!(next(1).as_str(), "is" | "are")
            && matches!(next(2).as_str(), "required" | "missing"))
            || (next(1) == "must"
                && next(2) == "be"
                && matches!(next(3).as_str(), "provided" | "set" | "given" | "specified"))
            || (next(1) == "not" && next(2) == "set")
            || next(1) == "required";
        let previous = |offset: usize| {
            index
                .checked_sub(offset)
                .map(|at| bare(words[at]))
                .unwrap_or_default()
        };
        let after = matches!(previous(1).as_str(), "missing" | "require" | "requires")
            // `missing required field: X`, `required parameter X`
            || (matches!(
                previous(1).as_str(),
                "field" | "fields" | "parameter" | "property" | "argument"
            ) && matches!(previous(2).as_str(), "missing" | "required"))
            // `X: field required` (Pydantic's text)
            || (next(1) == "field" && next(2) == "required");
        let name = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-');
        let lowered = name.to_lowercase();
        // A number names a thing, not a field (`cluster 10086 is missing`).
        if (before || after)
            && !name.is_empty()
            && !is_number(name)
            && !is_stopword(&lowered)
            && !NOT_NAMES.contains(&lowered.as_str())
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Keywords of a goal: its words, stop words and duplicates removed, singular.
pub fn keywords(text: &str) -> Vec<String> {
    let mut keywords: Vec<String> = Vec::new();
    for word in words(text) {
        if word.len() < 2 || is_stopword(&word) || is_number(&word) {
            continue;
        }
        let word = singular(&word);
        if !keywords.contains(&word) {
            keywords.push(word);
        }
    }
    keywords
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words_and_resources() {
        assert_eq!(
            words("ClusterService_GetCluster"),
            ["cluster", "service", "get", "cluster"]
        );
        assert_eq!(
            words("network_private-endpoint_create"),
            ["network", "private", "endpoint", "create"]
        );
        assert_eq!(resource_of("ClusterService_GetCluster"), "cluster");
        assert_eq!(resource_of("list_node_groups"), "group");
        assert_eq!(resource_of("network_private-endpoint_create"), "endpoint");
        assert_eq!(
            operation_action("ClusterService_DeleteCluster"),
            Some("delete")
        );
        assert_eq!(operation_action("geocode"), None);
    }

    #[test]
    fn variable_names_compare_loosely() {
        assert!(same_variable("nodegroup_1", "NodeGroupId"));
        assert!(same_variable("nodegroup_id", "NodeGroupId"));
        assert!(same_variable("cluster_id", "clusterId"));
        assert!(!same_variable("cluster_id", "nodegroup_id"));
    }

    #[test]
    fn missing_names_come_from_the_usual_phrasings() {
        assert_eq!(
            missing_names("tidbNodeGroupId is required"),
            ["tidbNodeGroupId"]
        );
        assert_eq!(missing_names("missing 'regionId' in body"), ["regionId"]);
        assert_eq!(
            missing_names("private-connection-resource-id is required"),
            ["private-connection-resource-id"]
        );
        assert!(missing_names("cluster is not in a deletable state").is_empty());
        assert_eq!(
            missing_names("tidbNodeGroupId is required."),
            ["tidbNodeGroupId"]
        );
        assert_eq!(missing_names("(regionId must be provided)"), ["regionId"]);
        assert!(missing_names("displayName must be at most 64 chars").is_empty());
        assert_eq!(missing_names("missing required field: title"), ["title"]);
        assert_eq!(missing_names("Missing required fields title"), ["title"]);
        assert_eq!(missing_names("title: field required"), ["title"]);
    }

    #[test]
    fn missing_names_come_from_the_usual_error_bodies() {
        // FastAPI with Pydantic 1 and 2.
        assert_eq!(
            missing_names(
                r#"HTTP 422: {"detail":[{"loc":["body","title"],"msg":"field required","type":"value_error.missing"},{"loc":["body","count"],"msg":"value is not a valid integer","type":"type_error.integer"}]}"#
            ),
            ["title"]
        );
        assert_eq!(
            missing_names(
                r#"HTTP 422: {"detail":[{"type":"missing","loc":["body","displayName"],"msg":"Field required","input":{}}]}"#
            ),
            ["displayName"]
        );
        // RFC 7807 problem details.
        assert_eq!(
            missing_names(
                r#"HTTP 400: {"type":"https://example.net/validation","title":"Your request is not valid.","invalid-params":[{"name":"regionId","reason":"is required"},{"name":"age","reason":"must be a positive integer"}]}"#
            ),
            ["regionId"]
        );
        assert_eq!(
            missing_names(
                r#"HTTP 400: {"type":"about:blank","title":"Bad Request","status":400,"detail":"missing required field: blogText"}"#
            ),
            ["blogText"]
        );
        // An error object with a message, and JSON Pointers.
        assert_eq!(
            missing_names(r#"HTTP 400: {"error":{"code":400,"message":"name is required"}}"#),
            ["name"]
        );
        // A Node framework's error names itself, not the field.
        assert_eq!(
            missing_names(
                r#"HTTP 400: {"name":"BadRequest","message":"title is required","code":400}"#
            ),
            ["title"]
        );
        assert!(missing_names("cluster 10086 is missing").is_empty());
        assert_eq!(
            missing_names(
                r#"HTTP 422: {"errors":[{"pointer":"/data/attributes/title","detail":"must be present (required)"}]}"#
            ),
            ["title"]
        );
        // Never the framework's own words: a missing body, a body cut short, retries noted.
        assert!(
            missing_names(
                r#"HTTP 422: {"detail":[{"loc":["body"],"msg":"field required","type":"missing"}]}"#
            )
            .is_empty()
        );
        assert!(
            missing_names(
                r#"HTTP 422: {"detail":[{"loc":["body","title"],"msg":"field required","ty…"#
            )
            .is_empty()
        );
        assert_eq!(
            missing_names(
                r#"HTTP 422: {"detail":[{"loc":["body","title"],"msg":"field required"}]} (after 2 attempts)"#
            ),
            ["title"]
        );
    }

    #[test]
    fn keywords_drop_stop_words_and_plurals() {
        assert_eq!(
            keywords("Create a cluster and poll until ACTIVE"),
            ["create", "cluster", "poll", "active"]
        );
    }
}

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

/// Names an error message says are missing: `X is required`, `X is missing`, `X are
/// required`, `missing X`, `requires X`, `X must be provided` (or set, given, specified),
/// `X not set`, `X required`.
pub fn missing_names(message: &str) -> Vec<String> {
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
        let after = index > 0
            && matches!(
                bare(words[index - 1]).as_str(),
                "missing" | "require" | "requires"
            );
        let name = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-');
        if (before || after) && !name.is_empty() && !is_stopword(&name.to_lowercase()) {
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
    }

    #[test]
    fn keywords_drop_stop_words_and_plurals() {
        assert_eq!(
            keywords("Create a cluster and poll until ACTIVE"),
            ["create", "cluster", "poll", "active"]
        );
    }
}

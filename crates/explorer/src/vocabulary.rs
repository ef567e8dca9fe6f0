//! The words a spec uses for its resources besides its paths. An API whose paths do not name
//! what a person asks for (`/api/contents/{path}` holds files and directories) says it in its
//! summaries ("Create a new file", "Rename a file or directory") and tags: the noun a summary's
//! verb acts on (its object: "checkpoints" of "Get a list of checkpoints for a file", not
//! "file") and each tag, singular, stand for the operation's resource.

use wayline_registry::openapi::{ApiSpec, Operation};

use crate::names;
use crate::operations::{operation_resource, resources, words};

/// Words before a summary's object that are not it ("a new", "the given", "a list of").
const BEFORE_OBJECT: [&str; 16] = [
    "a",
    "an",
    "the",
    "new",
    "existing",
    "given",
    "specified",
    "current",
    "available",
    "all",
    "one",
    "some",
    "list",
    "set",
    "number",
    "of",
];

/// Verbs a summary starts with that the explorer reads no CRUD action in.
const MORE_VERBS: [&str; 16] = [
    "start",
    "stop",
    "restore",
    "save",
    "upload",
    "download",
    "kill",
    "interrupt",
    "restart",
    "resolve",
    "rename",
    "move",
    "copy",
    "search",
    "query",
    "send",
];

/// Words that are no resource, though a summary may put them where one goes.
const NO_RESOURCE: [&str; 12] = [
    "path",
    "id",
    "ids",
    "uuid",
    "name",
    "data",
    "json",
    "information",
    "info",
    "details",
    "version",
    "value",
];

/// One word the spec uses for a resource, and the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    /// The word, singular and lower case (`file`).
    pub(crate) word: String,
    /// The resource it stands for (`content`).
    pub(crate) resource: String,
}

/// The object of `operation`'s summary: the nouns after its first verb ("file", "directory"
/// of "Rename a file or directory without re-uploading content").
fn summary_objects(operation: &Operation) -> Vec<String> {
    let words = words(&operation.summary);
    // Only a summary that starts with a verb has an object ("This can be used to ..." has
    // none).
    let starts_with_a_verb = words.first().is_some_and(|first| {
        crate::verbs::verb_of(first).is_some() || MORE_VERBS.contains(&first.as_str())
    });
    if !starts_with_a_verb {
        return Vec::new();
    }
    let mut rest = words
        .iter()
        .skip(1)
        .skip_while(|word| BEFORE_OBJECT.contains(&word.as_str()));
    let mut objects = Vec::new();
    while let Some(word) = rest.next() {
        objects.push(wayline_registry::openapi::singular(word));
        if !rest
            .next()
            .is_some_and(|joiner| joiner == "or" || joiner == "and")
        {
            break;
        }
    }
    objects
}

/// The aliases of `spec`: each operation's summary objects and tags, for its resource, when
/// they are not already a resource's name.
pub(crate) fn aliases(spec: &ApiSpec) -> Vec<Alias> {
    let resources = resources(spec);
    let mut found: Vec<Alias> = Vec::new();
    for operation in &spec.operations {
        let resource = operation_resource(operation);
        if resource.is_empty() {
            continue;
        }
        let tags = operation
            .tags
            .iter()
            .map(|tag| wayline_registry::openapi::singular(&tag.to_lowercase()));
        for word in summary_objects(operation).into_iter().chain(tags) {
            let usable = word.len() > 2
                && word.chars().all(char::is_alphanumeric)
                && !NO_RESOURCE.contains(&word.as_str())
                && crate::verbs::verb_of(&word).is_none()
                && !wayline_knowledge::words::is_stopword(&word)
                && !resources
                    .iter()
                    .any(|known| names::normalize(known) == names::normalize(&word));
            let alias = Alias {
                word,
                resource: resource.clone(),
            };
            if usable && !found.contains(&alias) {
                found.push(alias);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    /// Jupyter Server's contents and checkpoints, as its spec words them.
    fn jupyter() -> ApiSpec {
        let ok = json!({"200": {"description": "ok"}});
        let op = |summary: &str| json!({"summary": summary, "tags": ["contents"], "responses": ok});
        ApiSpec::parse(
            &json!({"swagger": "2.0", "paths": {
                "/api/contents/{path}": {
                    "get": op("Get contents of file or directory"),
                    "post": op("Create a new file in the specified path"),
                    "patch": op("Rename a file or directory without re-uploading content"),
                    "delete": op("Delete a file in the given path")},
                "/api/contents/{path}/checkpoints": {
                    "get": op("Get a list of checkpoints for a file"),
                    "post": op("Create a new checkpoint for a file")}
            }})
            .to_string(),
            Path::new("spec.json"),
        )
        .unwrap()
    }

    #[test]
    fn summaries_and_tags_name_resources_the_paths_do_not() {
        let spec = jupyter();
        let words: Vec<(String, String)> = aliases(&spec)
            .into_iter()
            .map(|alias| (alias.word, alias.resource))
            .collect();
        assert!(
            words.contains(&("file".into(), "content".into())),
            "{words:?}"
        );
        assert!(
            words.contains(&("directory".into(), "content".into())),
            "{words:?}"
        );
        // "for a file" is not what a checkpoint's summary acts on.
        assert!(
            !words.contains(&("file".into(), "checkpoint".into())),
            "{words:?}"
        );
        let create = spec
            .operations
            .iter()
            .find(|operation| {
                operation.method == "POST" && !operation.path.ends_with("checkpoints")
            })
            .unwrap();
        assert_eq!(crate::operations::summary_verb(create), Some("create"));
        // A POST on an item path whose summary says "Create" creates.
        assert_eq!(
            crate::operations::operation_verb(create),
            crate::intent::Verb::Create
        );
        // "create a file" is a create of a content, saying "file".
        let goals = crate::intent::parse("create a file, then rename it to b.txt", &spec);
        assert_eq!(
            (goals[0].resource.as_str(), goals[0].noun.as_deref()),
            ("content", Some("file"))
        );
        assert_eq!(goals[1].values["name"], "b.txt");
    }
}

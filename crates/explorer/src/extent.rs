//! How much of the API an operation touches: one item, a whole collection, or a singleton;
//! and the safety rule built on it. A DELETE, PUT or PATCH on a collection's own path
//! (`DELETE /buckets/{bid}/collections/{cid}/records`) changes every item in it: such a
//! *collection-wide write* is never chosen for a target about one resource, and never run
//! unattended unless the target asks for the whole collection ("delete all records") and the
//! caller allows it. An operation whose summary or id says it works in bulk ("Delete all
//! records", `purgeRecords`, "bulk update") counts as collection-wide too, whatever its path.

use wayline_registry::openapi::{ApiSpec, Operation};

use crate::names::CLI_METHOD;

/// What an operation's path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Extent {
    /// One item: the path ends in its parameter (`/posts/{postId}`, `/things/{path}:cancel`).
    Item,
    /// A collection: the spec treats the path as one (it has items under it, a create, or a
    /// list that answers an array).
    Collection,
    /// A single resource with no items (`/settings`, `/users/{id}/avatar`).
    Singleton,
    /// A command-line tool's step.
    Command,
}

/// Methods that change what a path names.
const WRITES: [&str; 3] = ["DELETE", "PUT", "PATCH"];

/// Words in a summary or an operation id that say an operation works on many at once.
const BULK_WORDS: [&str; 6] = ["bulk", "batch", "purge", "truncate", "wipe", "flush"];

/// Verbs after which `all` (or `every`) means the whole collection ("Delete all records").
const VERBS_BEFORE_ALL: [&str; 10] = [
    "delete", "deletes", "remove", "removes", "update", "updates", "patch", "replace", "replaces",
    "clear",
];

/// The path without a custom method (`/things/{id}:cancel` → `/things/{id}`) or a trailing
/// slash.
fn plain_path(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((_, last)) if last.contains(':') && !last.starts_with('{') => {
            let cut = trimmed.len() - last.len() + last.find(':').unwrap_or(last.len());
            &trimmed[..cut]
        }
        Some((_, last)) if last.starts_with('{') && last.contains("}:") => {
            let cut = trimmed.len() - last.len() + last.find("}:").unwrap_or(0) + 1;
            &trimmed[..cut]
        }
        _ => trimmed,
    }
}

/// True when the last segment of `path` is a parameter (`{postId}`).
fn ends_in_parameter(path: &str) -> bool {
    plain_path(path)
        .rsplit('/')
        .next()
        .is_some_and(|last| last.starts_with('{') && last.ends_with('}'))
}

/// The extent of `operation` in `spec`.
pub fn extent(spec: &ApiSpec, operation: &Operation) -> Extent {
    if operation.method == CLI_METHOD {
        return Extent::Command;
    }
    let path = plain_path(&operation.path);
    if ends_in_parameter(path) {
        return Extent::Item;
    }
    if is_collection(spec, path) {
        Extent::Collection
    } else {
        Extent::Singleton
    }
}

/// True when the spec treats `path` as a collection: an operation on an item under it
/// (`{path}/{id}`), a POST on it, or a GET on it that answers an array (or an object holding
/// one, as paged lists do).
fn is_collection(spec: &ApiSpec, path: &str) -> bool {
    spec.operations.iter().any(|other| {
        let other_path = plain_path(&other.path);
        if let Some(rest) = other_path.strip_prefix(path)
            && let Some(rest) = rest.strip_prefix('/')
            && !rest.contains('/')
            && rest.starts_with('{')
        {
            return true;
        }
        if other_path != path {
            return false;
        }
        match other.method.as_str() {
            "POST" => true,
            "GET" => other.response.as_ref().is_some_and(answers_a_list),
            _ => false,
        }
    })
}

/// True for a response schema that is an array, or an object with an array among its
/// top-level fields (`{"data": [...], "meta": {...}}`).
fn answers_a_list(schema: &serde_json::Value) -> bool {
    let is_array = |schema: &serde_json::Value| {
        schema.get("type").and_then(serde_json::Value::as_str) == Some("array")
            || schema.get("items").is_some()
    };
    is_array(schema)
        || schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|properties| properties.values().any(is_array))
}

/// Why `operation` is a collection-wide write, in words a person reads at a question; `None`
/// for an operation that writes one item, a singleton, or nothing.
pub fn collection_wide(spec: &ApiSpec, operation: &Operation) -> Option<String> {
    if operation.method == CLI_METHOD {
        return None;
    }
    let method = operation.method.as_str();
    if WRITES.contains(&method) && extent(spec, operation) == Extent::Collection {
        let what = match method {
            "DELETE" => "deletes",
            "PUT" => "replaces",
            _ => "changes",
        };
        return Some(format!(
            "`{}` ({method} {}) {what} the whole collection, not one item",
            operation.id, operation.path
        ));
    }
    if method != "GET"
        && let Some(words) = bulk_words(operation)
    {
        return Some(format!(
            "`{}` ({method} {}) says it acts on many at once (\"{words}\")",
            operation.id, operation.path
        ));
    }
    None
}

/// The words of `operation`'s summary or id that say it works in bulk, if any. A word its
/// path names is a resource, not a warning (`POST /batches`, "Create a batch").
fn bulk_words(operation: &Operation) -> Option<String> {
    let summary = wayline_knowledge::words::words(&operation.summary);
    let id = wayline_knowledge::words::words(&operation.id);
    // The path without its custom method: `:purge` of `/records:purge` is the warning.
    let path = wayline_knowledge::words::words(plain_path(&operation.path));
    let in_path = |word: &str| {
        path.iter()
            .any(|segment| segment == word || wayline_registry::openapi::singular(segment) == word)
    };
    for words in [&summary, &id] {
        if let Some(word) = words
            .iter()
            .find(|word| BULK_WORDS.contains(&word.as_str()) && !in_path(word))
        {
            return Some(word.clone());
        }
        if let Some(pair) = words.windows(2).find(|pair| {
            VERBS_BEFORE_ALL.contains(&pair[0].as_str())
                && matches!(pair[1].as_str(), "all" | "every")
        }) {
            return Some(pair.join(" "));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;

    fn spec(paths: serde_json::Value) -> ApiSpec {
        ApiSpec::parse(
            &json!({"openapi": "3.0.0", "paths": paths}).to_string(),
            Path::new("spec.json"),
        )
        .unwrap()
    }

    fn of<'a>(spec: &'a ApiSpec, id: &str) -> &'a Operation {
        spec.operation(id).unwrap()
    }

    #[test]
    fn paths_name_items_collections_and_singletons() {
        let ok = json!({"200": {"description": "ok"}});
        let list = json!({"200": {"description": "ok", "content": {"application/json": {
            "schema": {"type": "object", "properties": {"data": {"type": "array", "items": {}}}}}}}});
        let spec = spec(json!({
            "/buckets/{bid}/records": {
                "get": {"operationId": "listRecords", "responses": list},
                "delete": {"operationId": "deleteRecords", "responses": ok},
                "patch": {"operationId": "patchRecords", "responses": ok}},
            "/buckets/{bid}/records/{id}": {
                "delete": {"operationId": "deleteRecord", "responses": ok},
                "put": {"operationId": "putRecord", "responses": ok}},
            "/jobs/{id}:cancel": {"post": {"operationId": "cancelJob", "responses": ok}},
            "/settings": {"put": {"operationId": "putSettings", "responses": ok}},
            "/users/{id}/avatar": {"delete": {"operationId": "deleteAvatar", "responses": ok}},
            "/tags": {"post": {"operationId": "addTag", "responses": ok},
                      "delete": {"operationId": "clearTags", "responses": ok}},
            "/records/{id}": {"delete": {"operationId": "purgeRecord", "responses": ok}},
            "/zones/{id}": {"delete": {"operationId": "deleteZone",
                "summary": "Deletes this zone, all attached metadata and rrsets.", "responses": ok}},
            "/notes/{id}": {"delete": {"operationId": "dropNote",
                "summary": "Delete all notes of the user", "responses": ok}},
            "/batches": {"post": {"operationId": "createBatch", "summary": "Create a batch",
                "responses": ok}},
            "/things:batchDelete": {"post": {"operationId": "batchDeleteThings", "responses": ok}},
            "/queues/{id}:purge": {"post": {"operationId": "purge", "responses": ok}}
        }));
        assert_eq!(
            extent(&spec, of(&spec, "deleteRecords")),
            Extent::Collection
        );
        assert_eq!(extent(&spec, of(&spec, "deleteRecord")), Extent::Item);
        assert_eq!(extent(&spec, of(&spec, "cancelJob")), Extent::Item);
        assert_eq!(extent(&spec, of(&spec, "putSettings")), Extent::Singleton);
        assert_eq!(extent(&spec, of(&spec, "deleteAvatar")), Extent::Singleton);
        for wide in [
            "deleteRecords",
            "patchRecords",
            "clearTags",
            "purgeRecord",
            "dropNote",
            "batchDeleteThings",
            "purge",
        ] {
            assert!(collection_wide(&spec, of(&spec, wide)).is_some(), "{wide}");
        }
        for one in [
            "deleteRecord",
            "putRecord",
            "putSettings",
            "deleteAvatar",
            "deleteZone",
            "createBatch",
        ] {
            assert_eq!(collection_wide(&spec, of(&spec, one)), None, "{one}");
        }
        let why = collection_wide(&spec, of(&spec, "deleteRecords")).unwrap();
        assert!(
            why.contains("deletes the whole collection, not one item"),
            "{why}"
        );
    }

    #[test]
    fn custom_methods_are_cut_from_the_path() {
        assert_eq!(plain_path("/things/{id}:cancel"), "/things/{id}");
        assert_eq!(plain_path("/things:batchDelete"), "/things");
        assert_eq!(plain_path("/things/"), "/things");
        assert_eq!(plain_path("/"), "");
    }
}

//! Names across conventions. `displayName`, `display_name`, `display-name` and `DisplayName`
//! are one name; `postId`, `post_id`, `post-id` and `PostID` name the id of a `post`; and the
//! resource a path parameter holds the id of is the collection just before it in the path,
//! whatever the parameter is called (`/posts/{entryId}` → `post`).

use serde_json::Value;

/// The method of the operations that stand for a SUT's command-line tools.
pub const CLI_METHOD: &str = "CLI";

/// `name` as names are compared: lower case, letters and digits only (the knowledge's loose
/// form of a variable name).
pub(crate) use wayline_knowledge::words::loose as normalize;

/// True when `a` and `b` are one name written in two conventions.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a == b || normalize(a) == normalize(b)
}

/// The resource whose id an id-like name holds, normalized: `postId`, `post_id`, `post-id`,
/// `PostID` → `post`, `blogPostId` → `blogpost`; `None` for a name that is not an id, or for
/// a bare `id` (whose resource is the one the operation acts on).
pub(crate) fn id_kind(name: &str) -> Option<String> {
    let field = name.rsplit('.').next().unwrap_or(name);
    let normalized = normalize(field);
    let ends_in_id = field.ends_with("Id")
        || field.ends_with("ID")
        || field.ends_with("_id")
        || field.ends_with("-id");
    // `UUID` and `GUID` are kinds of id, not the ids of a `uu` or a `gu`.
    if matches!(normalized.as_str(), "uuid" | "guid") {
        return None;
    }
    let kind = normalized.strip_suffix("id").filter(|_| ends_in_id)?;
    (!kind.is_empty()).then(|| kind.to_owned())
}

/// True when `name` names an identifier (`id`, `postId`, `post_id`, `PostID`).
pub(crate) fn is_id(name: &str) -> bool {
    let field = name.rsplit('.').next().unwrap_or(name);
    normalize(field) == "id" || id_kind(field).is_some()
}

pub(crate) use wayline_registry::openapi::path_parameter_resource;

/// True when `name` names something a person would make up freely (`name`, `title`,
/// `displayName`, `label`): a value the explorer may generate when nothing gives one.
pub(crate) fn is_name_like(name: &str) -> bool {
    let field = normalize(name.rsplit('.').next().unwrap_or(name));
    field.ends_with("name") || field.ends_with("title") || field == "label"
}

/// An id as text, whatever its JSON type (`1` and `"1"` are the same id in a path).
pub(crate) fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventions_meet_in_one_form() {
        for name in ["displayName", "display_name", "display-name", "DisplayName"] {
            assert!(same_name(name, "displayName"), "{name}");
        }
        assert!(!same_name("displayName", "display"));
        for name in [
            "postId",
            "post_id",
            "post-id",
            "PostID",
            "PostId",
            "post.postId",
        ] {
            assert_eq!(id_kind(name).as_deref(), Some("post"), "{name}");
        }
        assert_eq!(id_kind("blogPostId").as_deref(), Some("blogpost"));
        assert_eq!(id_kind("id"), None);
        assert_eq!(id_kind("ID"), None);
        assert_eq!(id_kind("paid"), None, "a word ending in `id` is not an id");
        assert_eq!(id_kind("valid"), None);
        assert_eq!(id_kind("UUID"), None);
        assert!(is_id("ID") && is_id("id") && is_id("post_id") && !is_id("title"));
        for name in [
            "name",
            "title",
            "displayName",
            "display_name",
            "label",
            "cluster.name",
        ] {
            assert!(is_name_like(name), "{name}");
        }
        assert!(!is_name_like("region") && !is_name_like("nameServers"));
    }

    #[test]
    fn a_path_parameter_holds_the_id_of_the_collection_before_it() {
        let path = "/clusters/{clusterId}/branches/{branchId}:reset";
        assert_eq!(
            path_parameter_resource(path, "clusterId").as_deref(),
            Some("cluster")
        );
        assert_eq!(
            path_parameter_resource(path, "branchId").as_deref(),
            Some("branch")
        );
        assert_eq!(
            path_parameter_resource("/posts/{entryId}", "entryId").as_deref(),
            Some("post")
        );
        assert_eq!(
            path_parameter_resource("/special-events/{id}", "id").as_deref(),
            Some("special-event")
        );
        assert_eq!(path_parameter_resource("/{id}", "id"), None);
        assert_eq!(path_parameter_resource("/a/{x}/{y}", "y"), None);
        assert_eq!(id_text(&serde_json::json!(7)).as_deref(), Some("7"));
    }
}

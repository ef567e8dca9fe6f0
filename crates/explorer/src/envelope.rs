//! Where the resource and its id are in an answer, whatever its shape: the resource itself
//! (`{"id": 1, ...}`), one object alone in an envelope (`{"ssh_key": {...}}`), the object under
//! a conventional key beside others (Kinto's `{"data": {...}, "permissions": {...}}`,
//! `{"result": {...}}`, `{"data": {...}, "meta": {...}}`), JSON:API's `{"data": {"type", "id",
//! "attributes"}}`, or HAL's `_embedded`. The id is the resource's id field (`postId`, `id`),
//! else a field named like the parameter its item path takes (`path` for
//! `/api/contents/{path}`, `silenceID` for `/silence/{silenceID}`).

use serde_json::Value;
use wayline_registry::openapi::ApiSpec;

use crate::intent::{operation_resource, operation_verb};
use crate::names;

/// Keys an API puts one resource under, beside metadata of its own.
pub(crate) const ENVELOPE_KEYS: [&str; 8] = [
    "data", "result", "item", "resource", "record", "object", "payload", "entity",
];

/// A resource found in an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<'a> {
    /// The resource object (the answer itself when it has no envelope).
    pub object: &'a Value,
    /// Where it is, dotted from the answer's root (empty for the root; `data`,
    /// `_embedded.post`).
    pub at: String,
    /// Its id, dotted from the answer's root (`data.id`, `silenceID`), and its value as the
    /// API typed it.
    pub id: Option<(String, Value)>,
}

impl Found<'_> {
    /// The resource's plain fields (no objects, arrays or nulls), with JSON:API's
    /// `attributes` taken as its own.
    pub fn fields(&self) -> Vec<(&str, &Value)> {
        let plain = |value: &Value| !value.is_null() && !value.is_object() && !value.is_array();
        let Some(object) = self.object.as_object() else {
            return Vec::new();
        };
        let mut fields: Vec<(&str, &Value)> = object
            .iter()
            .filter(|(_, value)| plain(value))
            .map(|(key, value)| (key.as_str(), value))
            .collect();
        if is_json_api(self.object)
            && let Some(attributes) = object.get("attributes").and_then(Value::as_object)
        {
            fields.extend(
                attributes
                    .iter()
                    .filter(|(_, value)| plain(value))
                    .map(|(key, value)| (key.as_str(), value)),
            );
        }
        fields
    }
}

/// The parameter names of `resource`'s item paths in `spec` (`postId` of `/posts/{postId}`,
/// `path` of `/api/contents/{path}`): a field of one of these names in an answer is its id.
pub fn item_parameters(spec: &ApiSpec, resource: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for operation in &spec.operations {
        if operation_resource(operation) != resource
            || operation_verb(operation) == crate::intent::Verb::Create
        {
            continue;
        }
        let last = operation.path.trim_end_matches('/').rsplit('/').next();
        let parameter = last
            .and_then(|last| last.strip_prefix('{'))
            .and_then(|last| last.split('}').next())
            .map(|name| name.rsplit('.').next().unwrap_or(name).to_owned());
        if let Some(parameter) = parameter
            && !found.contains(&parameter)
        {
            found.push(parameter);
        }
    }
    found
}

/// The `resource` in `body` (see the module's doc), its id found by its id field or one of
/// `item_parameters`.
pub fn find<'a>(body: &'a Value, resource: &str, item_parameters: &[String]) -> Found<'a> {
    let (object, at) = locate(body, resource);
    let id = id_in(object, resource, item_parameters)
        .map(|(field, value)| (join(&at, &field), value))
        // An answer may name what it made beside the envelope (`{"silenceID": ...}`).
        .or_else(|| {
            (!at.is_empty())
                .then(|| id_in(body, resource, item_parameters))
                .flatten()
        });
    Found { object, at, id }
}

/// The dotted path of `resource`'s id in `body` (`id`, `data.id`, `ssh_key.id`), by the
/// item parameters `spec` gives it.
pub fn id_path(spec: &ApiSpec, body: &Value, resource: &str) -> Option<String> {
    find(body, resource, &item_parameters(spec, resource))
        .id
        .map(|(path, _)| path)
}

fn join(at: &str, field: &str) -> String {
    if at.is_empty() {
        field.to_owned()
    } else {
        format!("{at}.{field}")
    }
}

/// True for a JSON:API resource object (`{"type": ..., "id": ...}`, maybe `attributes`).
fn is_json_api(object: &Value) -> bool {
    object.get("type").is_some_and(Value::is_string)
        && (object.get("attributes").is_some_and(Value::is_object)
            || object
                .get("id")
                .is_some_and(|id| names::id_text(id).is_some()))
}

/// The resource object in `body` and where it is.
fn locate<'a>(body: &'a Value, resource: &str) -> (&'a Value, String) {
    let Some(fields) = body.as_object() else {
        return (body, String::new());
    };
    // An answer with the resource's own id at its top is the resource.
    if id_field(body, resource).is_some() {
        return (body, String::new());
    }
    let wanted = names::normalize(resource);
    let named_as_resource = |key: &str| {
        let key = names::normalize(key);
        key == wanted || wayline_registry::openapi::singular(&key) == wanted
    };
    // The resource's own name, then the usual envelope keys, holding one object.
    let under = fields
        .iter()
        .filter(|(_, value)| value.is_object())
        .find(|(key, _)| named_as_resource(key))
        .or_else(|| {
            ENVELOPE_KEYS.iter().find_map(|envelope| {
                fields
                    .iter()
                    .find(|(key, value)| key.eq_ignore_ascii_case(envelope) && value.is_object())
            })
        });
    if let Some((key, inner)) = under {
        return (inner, key.clone());
    }
    // HAL: `{"_embedded": {"post": {...}}}`.
    if let Some(embedded) = fields.get("_embedded").and_then(Value::as_object)
        && let Some((key, inner)) = embedded
            .iter()
            .find(|(key, value)| value.is_object() && named_as_resource(key))
    {
        return (inner, format!("_embedded.{key}"));
    }
    // One object alone (`{"ssh_key": {...}}`), as DigitalOcean and many others answer.
    if fields.len() == 1
        && let Some((key, inner @ Value::Object(_))) = fields.iter().next()
    {
        return (inner, key.clone());
    }
    (body, String::new())
}

/// The id field of `resource` in `object` and its value: [`id_field`], else a field named like
/// one of `item_parameters`.
fn id_in(object: &Value, resource: &str, item_parameters: &[String]) -> Option<(String, Value)> {
    let fields = object.as_object()?;
    let field = id_field(object, resource).or_else(|| {
        fields
            .keys()
            .find(|key| {
                item_parameters
                    .iter()
                    .any(|parameter| names::same_name(key, parameter))
            })
            .cloned()
    })?;
    let value = fields.get(&field)?;
    names::id_text(value).map(|_| (field, value.clone()))
}

/// The field of `body` holding the id of a `resource`: `{resource}Id` in any convention
/// (`postId`, `post_id`, `post-id`, `PostID`), else `id` (`ID`, `Id`).
pub(crate) fn id_field(body: &Value, resource: &str) -> Option<String> {
    let object = body.as_object()?;
    let wanted = names::normalize(resource);
    object
        .keys()
        .find(|key| names::id_kind(key).as_deref() == Some(wanted.as_str()))
        .or_else(|| object.keys().find(|key| names::normalize(key) == "id"))
        .cloned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A row of the table: what the shape is, the answer, the item parameters, where the
    /// resource is and where its id is.
    type Shape<'a> = (&'a str, Value, &'a [String], &'a str, Option<&'a str>);

    /// Answer shapes, the resource each holds, and where its id is.
    #[test]
    fn the_resource_and_its_id_in_every_answer_shape() {
        let none: Vec<String> = Vec::new();
        let path = vec!["path".to_owned()];
        let silence = vec!["silenceID".to_owned()];
        let table: [Shape; 13] = [
            (
                "plain",
                json!({"id": 7, "title": "a"}),
                &none,
                "",
                Some("id"),
            ),
            (
                "named id",
                json!({"postId": "p1"}),
                &none,
                "",
                Some("postId"),
            ),
            (
                "alone in an envelope",
                json!({"post": {"id": 1}}),
                &none,
                "post",
                Some("post.id"),
            ),
            (
                "Kinto: data beside permissions",
                json!({"data": {"id": "r1", "last_modified": 5}, "permissions": {"write": ["a"]}}),
                &none,
                "data",
                Some("data.id"),
            ),
            (
                "data beside meta",
                json!({"data": {"id": 3}, "meta": {"total": 1}}),
                &none,
                "data",
                Some("data.id"),
            ),
            (
                "JSON:API",
                json!({"data": {"type": "posts", "id": "9", "attributes": {"title": "t"}},
                       "links": {"self": "/posts/9"}, "meta": {}}),
                &none,
                "data",
                Some("data.id"),
            ),
            (
                "HAL",
                json!({"_embedded": {"post": {"id": 4}}, "_links": {"self": {"href": "/x"}}}),
                &none,
                "_embedded.post",
                Some("_embedded.post.id"),
            ),
            (
                "result",
                json!({"result": {"id": "x"}, "success": true}),
                &none,
                "result",
                Some("result.id"),
            ),
            (
                "named by the resource, beside others",
                json!({"post": {"id": 2}, "included": {"a": 1}}),
                &none,
                "post",
                Some("post.id"),
            ),
            (
                "named by the item path's parameter",
                json!({"name": "Untitled.txt", "path": "dir/Untitled.txt", "type": "file"}),
                &path,
                "",
                Some("path"),
            ),
            (
                "the id beside no envelope",
                json!({"silenceID": "s-1"}),
                &silence,
                "",
                Some("silenceID"),
            ),
            (
                "no id at all",
                json!({"ok": true, "count": 2}),
                &none,
                "",
                None,
            ),
            ("a list is no resource", json!([{"id": 1}]), &none, "", None),
        ];
        for (name, body, parameters, at, id) in table {
            let found = find(&body, "post", parameters);
            assert_eq!(found.at, at, "{name}");
            assert_eq!(
                found.id.as_ref().map(|(path, _)| path.as_str()),
                id,
                "{name}"
            );
        }
        let json_api = json!({"data": {"type": "posts", "id": "9", "attributes": {"title": "t"}}});
        let found = find(&json_api, "post", &[]);
        assert!(
            found.fields().contains(&("title", &json!("t"))),
            "JSON:API attributes"
        );
        // Numbers stay numbers.
        assert_eq!(find(&json!({"id": 7}), "post", &[]).id.unwrap().1, json!(7));
    }
}

//! `$ref` resolution: references into the same document (`#/definitions/X`) and into other
//! files relative to the referring one (`common.yaml#/components/schemas/X`, `other.json`).
//! A reference that leads back to itself is cut where it repeats, and a schema nested deeper
//! than [`MAX_DEPTH`] is cut too, so a recursive schema neither loops nor blows up.
//!
//! Another file is read only where its [`ReadScope`] lets references lead (the spec's own
//! directory unless the reader allowed more), only when it is a regular file within the
//! document size limit, and an error in it quotes nothing of it: the user named the spec, not
//! the files its references reach.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wayline_core::document::{self, Format};
use wayline_durable::read::ReadScope;

use crate::Error;

/// The member an inlined `$ref` target gets, holding the name it was referred to by.
pub(crate) const REF_NAME: &str = "x-ref-name";

/// How deep inlined schemas go before they are cut.
pub(crate) const MAX_DEPTH: usize = 24;

/// A problem in a spec, with where it is.
pub(crate) fn spec_error(origin: &str, pointer: &str, message: impl Into<String>) -> Error {
    Error::Spec {
        origin: origin.to_owned(),
        pointer: pointer.to_owned(),
        message: message.into(),
    }
}

/// The documents a spec is made of, loaded as they are referred to.
#[derive(Debug)]
pub(crate) struct Resolver {
    documents: HashMap<PathBuf, Value>,
    /// Schema nodes produced so far (see [`MAX_NODES`]).
    nodes: usize,
    /// The root document's file (refs without a file part point into it).
    root: PathBuf,
    /// Where the files references name may be.
    scope: ReadScope,
}

/// A place a value came from: the document and the JSON pointer inside it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Place {
    pub(crate) document: PathBuf,
    pub(crate) pointer: String,
}

impl Place {
    fn label(&self) -> String {
        format!("{}#{}", self.document.display(), self.pointer)
    }
}

/// Parses spec text: JSON when it starts with `{`, YAML otherwise (YAML also reads JSON).
pub(crate) fn parse_document(text: &str, path: &Path) -> Result<Value, Error> {
    let format = if text.trim_start().starts_with('{') {
        Format::Json
    } else {
        Format::Yaml
    };
    document::parse::<Value>(text, format, &path.display().to_string()).map_err(Error::Document)
}

/// `path` with `.` and `dir/..` taken out, lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The most schema nodes one inlining may produce: a spec whose shared references fan out
/// enough to pass it is cut there, not expanded without end.
pub(crate) const MAX_NODES: usize = 1_000_000;

/// `~1` and `~0` decoded, as RFC 6901 says.
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

impl Resolver {
    /// A resolver whose root document is `root` (already parsed) from the file `path`, reading
    /// the files its references name within `scope`.
    pub(crate) fn new(path: &Path, root: Value, scope: ReadScope) -> Self {
        let path = normalize(path);
        let mut documents = HashMap::new();
        documents.insert(path.clone(), root);
        Resolver {
            documents,
            nodes: 0,
            root: path,
            scope,
        }
    }

    /// The document in the file `path`, which a `$ref` at `pointer` of `origin` names: read
    /// only within the scope, and parsed with nothing of it quoted in an error.
    fn read_referenced(&self, path: &Path, origin: &str, pointer: &str) -> Result<Value, Error> {
        if let Err(error) = self.scope.check(path) {
            return Err(match error {
                wayline_durable::Error::OutsideScope { roots, .. } => spec_error(
                    origin,
                    pointer,
                    format!(
                        "a `$ref` leads to {}, outside {}: references are read only at or below \
                         the spec's directory; copy the file beside the spec, or allow its \
                         directory (`--allow-read DIR`)",
                        path.display(),
                        wayline_durable::read::roots_text(&roots)
                    ),
                ),
                wayline_durable::Error::Io { source, .. } => Error::Io {
                    path: path.to_owned(),
                    source,
                },
                other => spec_error(origin, pointer, other.to_string()),
            });
        }
        let text = crate::load::read_text(path)?;
        parse_document(&text, path).map_err(Error::without_content)
    }

    /// The root document.
    pub(crate) fn root(&self) -> &Value {
        &self.documents[&self.root]
    }

    /// The root document's path.
    pub(crate) fn root_path(&self) -> &Path {
        &self.root
    }

    /// Where `reference` (a `$ref` value found in `from`) points: the same document, or a
    /// file relative to `from` (normalized, so `a/../b.yaml` and `b.yaml` are one place).
    /// URLs and absolute paths are refused: a spec reads only files beside it.
    fn target(&self, from: &Path, reference: &str, origin: &str) -> Result<Place, Error> {
        let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        if file.contains("://") || file.starts_with('/') {
            return Err(spec_error(
                origin,
                pointer,
                format!(
                    "`$ref: {reference}` points outside the spec's directory (URLs and absolute paths are not followed); copy the document beside the spec and refer to it relatively"
                ),
            ));
        }
        let document = if file.is_empty() {
            from.to_path_buf()
        } else {
            normalize(&from.parent().unwrap_or(Path::new(".")).join(file))
        };
        Ok(Place {
            document,
            pointer: pointer.to_owned(),
        })
    }

    /// The value at `place`, loading its document when first needed.
    fn lookup(&mut self, place: &Place, origin: &str) -> Result<Value, Error> {
        self.value_at(place, origin).cloned()
    }

    /// A `$ref` whose target is only another `$ref`, and so on back to where it started, points
    /// at nothing: an error naming the loop. (A schema that refers to itself through one of its
    /// properties is recursion, which is fine and is cut where it recurs.)
    fn refuse_alias_loop(&mut self, start: &Place, origin: &str) -> Result<(), Error> {
        let mut chain = vec![start.clone()];
        while chain.len() <= MAX_DEPTH {
            let place = chain.last().cloned().unwrap_or_else(|| start.clone());
            let Some(next) = self
                .value_at(&place, origin)?
                .get("$ref")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return Ok(());
            };
            let next = self.target(&place.document, &next, origin)?;
            if let Some(at) = chain.iter().position(|seen| *seen == next) {
                let names: Vec<String> = chain[at..]
                    .iter()
                    .chain([&next])
                    .map(Place::label)
                    .collect();
                return Err(spec_error(
                    origin,
                    &start.pointer,
                    format!(
                        "`$ref`s point at each other in a loop with no definition in it: {}; \
                         make one of them hold the definition",
                        names.join(" → ")
                    ),
                ));
            }
            chain.push(next);
        }
        Ok(())
    }

    /// The value at `place`, borrowed, loading its document when first needed.
    fn value_at(&mut self, place: &Place, origin: &str) -> Result<&Value, Error> {
        if !self.documents.contains_key(&place.document) {
            let loaded = self.read_referenced(&place.document, origin, &place.pointer)?;
            self.documents.insert(place.document.clone(), loaded);
        }
        let mut current = &self.documents[&place.document];
        for token in place.pointer.split('/').skip(1) {
            let token = unescape(token);
            current = match current {
                Value::Object(map) => map.get(&token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|at| items.get(at)),
                _ => None,
            }
            .ok_or_else(|| {
                spec_error(
                    origin,
                    &place.pointer,
                    format!("`$ref` to {} leads nowhere", place.label()),
                )
            })?;
        }
        Ok(current)
    }

    /// `value` (found in `document`) with its own `$ref` followed, chain by chain, but nothing
    /// inside it inlined: the value, and the document its remaining references are relative
    /// to. A path item or an operation in a file of its own is read this way, so that only the
    /// parts the importer uses are resolved (not its code samples or error responses).
    pub(crate) fn follow(
        &mut self,
        document: &Path,
        value: &Value,
    ) -> Result<(PathBuf, Value), Error> {
        let mut place = document.to_path_buf();
        let mut current = value.clone();
        let mut hops = 0;
        while let Some(reference) = current.get("$ref").and_then(Value::as_str) {
            let origin = place.display().to_string();
            let target = self.target(&place, reference, &origin)?;
            self.refuse_alias_loop(&target, &origin)?;
            let mut found = self.lookup(&target, &origin)?;
            // Fields beside the `$ref` (a path item's `parameters`, OpenAPI 3.1's `summary`)
            // override what it points at, as when a reference is inlined; resolved where they
            // were written, since what follows is read relative to the target's file.
            if let (Value::Object(fields), Value::Object(siblings)) = (&mut found, &current) {
                for (key, sibling) in siblings.iter().filter(|(key, _)| *key != "$ref") {
                    let sibling = self.inline(&place, sibling)?;
                    fields.insert(key.clone(), sibling);
                }
            }
            current = found;
            place = target.document;
            hops += 1;
            if hops > MAX_DEPTH {
                break;
            }
        }
        Ok((place, current))
    }

    /// `value` (found in `document`) with every `$ref` inlined, `allOf` merged, recursion cut.
    pub(crate) fn inline(&mut self, document: &Path, value: &Value) -> Result<Value, Error> {
        let mut stack = Vec::new();
        self.inline_at(document, value, &mut stack, 0)
    }

    fn inline_at(
        &mut self,
        document: &Path,
        value: &Value,
        stack: &mut Vec<Place>,
        depth: usize,
    ) -> Result<Value, Error> {
        self.nodes += 1;
        if depth > MAX_DEPTH || self.nodes > MAX_NODES {
            return Ok(Value::Object(Map::from_iter([(
                "description".to_owned(),
                Value::from("(nested too deep; cut)"),
            )])));
        }
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    let origin = document.display().to_string();
                    let place = self.target(document, reference, &origin)?;
                    self.refuse_alias_loop(&place, &origin)?;
                    if stack.contains(&place) {
                        return Ok(Value::Object(Map::from_iter([
                            ("x-recursive".to_owned(), Value::from(reference)),
                            (
                                "description".to_owned(),
                                Value::from(format!("(recursive: {reference})")),
                            ),
                        ])));
                    }
                    let target = self.lookup(&place, &origin)?;
                    stack.push(place.clone());
                    let inlined = self.inline_at(&place.document, &target, stack, depth + 1);
                    stack.pop();
                    let mut inlined = inlined?;
                    // Siblings of `$ref` (OpenAPI 3.1 allows them) override what it points at.
                    if let Value::Object(fields) = &mut inlined {
                        // The name it had (`Pet` of `#/components/schemas/Pet`): the
                        // explorer names resources by it.
                        if let Some(name) = place
                            .pointer
                            .rsplit('/')
                            .next()
                            .filter(|name| !name.is_empty())
                        {
                            fields.insert(REF_NAME.to_owned(), Value::from(unescape(name)));
                        }
                        for (key, sibling) in map.iter().filter(|(key, _)| *key != "$ref") {
                            let sibling = self.inline_at(document, sibling, stack, depth + 1)?;
                            fields.insert(key.clone(), sibling);
                        }
                    }
                    return Ok(inlined);
                }
                let mut out = Map::with_capacity(map.len());
                for (key, inner) in map {
                    out.insert(
                        key.clone(),
                        self.inline_at(document, inner, stack, depth + 1)?,
                    );
                }
                if let Some(Value::Array(parts)) = out.remove("allOf") {
                    return Ok(Value::Object(merge_all_of(out, parts)));
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .map(|item| self.inline_at(document, item, stack, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }
}

/// `allOf` folded into one schema: properties and `required` united, the other keys of the
/// parts filled in where the outer schema has none (the outer schema's own keys win).
fn merge_all_of(mut outer: Map<String, Value>, parts: Vec<Value>) -> Map<String, Value> {
    for part in parts {
        let Value::Object(part) = part else {
            continue;
        };
        for (key, value) in part {
            match (key.as_str(), outer.get_mut(&key), value) {
                ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                    for (name, schema) in theirs {
                        mine.entry(name).or_insert(schema);
                    }
                }
                ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                    for name in theirs {
                        if !mine.contains(&name) {
                            mine.push(name);
                        }
                    }
                }
                (_, Some(_), _) => {}
                (_, None, value) => {
                    outer.insert(key, value);
                }
            }
        }
    }
    outer
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn refs_inline_all_of_merges_and_recursion_is_cut() {
        let spec = json!({
            "definitions": {
                "Node": {"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#/definitions/Node"}}},
                "State": {"type": "string", "enum": ["A", "B"]},
                "Thing": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            }
        });
        let mut resolver = Resolver::new(
            Path::new("spec.json"),
            spec,
            ReadScope::beside(Path::new("spec.json")),
        );
        let node = resolver
            .inline(
                Path::new("spec.json"),
                &json!({"$ref": "#/definitions/Node"}),
            )
            .unwrap();
        assert_eq!(node["properties"]["name"]["type"], "string");
        assert_eq!(
            node["properties"]["next"]["x-recursive"],
            "#/definitions/Node"
        );
        let state = resolver
            .inline(
                Path::new("spec.json"),
                &json!({"readOnly": true, "allOf": [{"$ref": "#/definitions/State"}]}),
            )
            .unwrap();
        assert_eq!(
            state,
            json!({"readOnly": true, "type": "string", "enum": ["A", "B"], "x-ref-name": "State"})
        );
        let merged = resolver
            .inline(
                Path::new("spec.json"),
                &json!({"allOf": [{"$ref": "#/definitions/Thing"}, {"required": ["size"], "properties": {"size": {"type": "integer"}}}]}),
            )
            .unwrap();
        assert_eq!(merged["required"], json!(["id", "size"]));
        assert_eq!(merged["properties"]["size"]["type"], "integer");
        let missing = resolver
            .inline(
                Path::new("spec.json"),
                &json!({"$ref": "#/definitions/Nope"}),
            )
            .unwrap_err();
        assert!(missing.to_string().contains("leads nowhere"), "{missing}");
    }

    #[test]
    fn refs_that_only_point_at_each_other_are_named_as_a_loop() {
        let spec = json!({
            "paths": {"/a": {"$ref": "#/paths/~1b"}, "/b": {"$ref": "#/paths/~1a"}},
            "definitions": {"Node": {"properties": {"next": {"$ref": "#/definitions/Node"}}}}
        });
        let mut resolver = Resolver::new(
            Path::new("spec.json"),
            spec,
            ReadScope::beside(Path::new("spec.json")),
        );
        let error = resolver
            .inline(Path::new("spec.json"), &json!({"$ref": "#/paths/~1a"}))
            .unwrap_err()
            .to_string();
        assert!(error.contains("loop"), "{error}");
        assert!(
            error.contains("spec.json#/paths/~1a → spec.json#/paths/~1b → spec.json#/paths/~1a"),
            "{error}"
        );
        // Recursion through a property is not such a loop.
        assert!(
            resolver
                .inline(
                    Path::new("spec.json"),
                    &json!({"$ref": "#/definitions/Node"})
                )
                .is_ok()
        );
    }
}

//! Reading a document: YAML or JSON text → its structural rules → the model, with every
//! problem located by file, line and column.

use std::path::Path;

use saphyr_parser::{Event, Parser};
use serde_json::Value;
use wayline_core::document::{self, Format};

use crate::check::check;
use crate::error::Error;
use crate::model::ArazzoDocument;
use crate::positions::Positions;
use crate::problem::{Problem, Rule};

/// Reads an Arazzo document from `text` (YAML, or JSON, which YAML reads too); `origin` names
/// it in errors.
///
/// ```
/// let text = "arazzo: 1.0.1\ninfo: {title: T, version: '1'}\n\
///             sourceDescriptions: [{name: api, url: ./api.yaml}]\n\
///             workflows: [{workflowId: w, steps: [{stepId: s, operationId: getPet}]}]\n";
/// let document = wayline_arazzo::load(text, "w.arazzo.yaml").unwrap();
/// assert_eq!(document.workflows[0].steps[0].step_id, "s");
///
/// let error = wayline_arazzo::load(&text.replace("stepId", "stepID"), "w.arazzo.yaml").unwrap_err();
/// assert!(error.to_string().contains("w.arazzo.yaml:4:38: unknown field `stepID`"), "{error}");
/// ```
pub fn load(text: &str, origin: &str) -> Result<ArazzoDocument, Error> {
    // JSON is YAML: one parser for both keeps the positions and the values in step.
    let value: Value = document::parse(text, Format::Yaml, origin).map_err(Error::Document)?;
    let problems = check(&value);
    if !problems.is_empty() {
        return Err(invalid(text, origin, problems));
    }
    serde_json::from_value(value).map_err(|error| {
        // The rules accept only what the model reads; a mismatch is reported, not a panic.
        invalid(
            text,
            origin,
            vec![Problem::new(
                Rule::WrongType,
                "",
                format!("the document does not fit the Arazzo model: {error}"),
            )],
        )
    })
}

/// Whether `text` is an Arazzo document (YAML or JSON with an `arazzo` field at its root), as
/// opposed to another description or a wayline workflow. Read from the parser's events, up to
/// the root's `arazzo` key, without building the document (the loader does that next).
pub fn is_arazzo(text: &str) -> bool {
    // Containers open, and whether the root mapping expects a key next.
    let mut depth = 0usize;
    let mut expects_key = true;
    for event in Parser::new_from_str(text) {
        let Ok((event, _)) = event else {
            return false;
        };
        match event {
            Event::MappingStart(..) if depth == 0 => depth = 1,
            Event::SequenceStart(..) if depth == 0 => return false,
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if depth == 1 {
                    expects_key = !expects_key;
                }
                depth += 1;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return false;
                }
            }
            Event::Scalar(value, ..) if depth == 1 => {
                if expects_key && value == "arazzo" {
                    return true;
                }
                expects_key = !expects_key;
            }
            Event::Alias(_) if depth == 1 => expects_key = !expects_key,
            _ => {}
        }
    }
    false
}

/// Reads the Arazzo document in the file at `path` (a regular file within the document size
/// limit).
pub fn load_file(path: &Path) -> Result<ArazzoDocument, Error> {
    let text = wayline_durable::read::text(path, document::Limits::configured().max_bytes)
        .map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
    load(&text, &path.display().to_string())
}

/// [`Error::Invalid`] with each problem located in `text`.
fn invalid(text: &str, origin: &str, mut problems: Vec<Problem>) -> Error {
    let positions = Positions::of(text);
    for problem in &mut problems {
        problem.locate(&positions);
    }
    problems.sort_by_key(|problem| (problem.line, problem.column));
    Error::Invalid {
        origin: origin.to_owned(),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arazzo_document_is_told_by_its_root_key_alone() {
        let yes = [
            "arazzo: 1.0.1\ninfo: {title: T}\n",
            "info: {arazzo: nested, list: [a, {b: c}]}\nworkflows: []\narazzo: 1.1.0\n",
            r#"{"info": {"title": "T"}, "arazzo": "1.0.1"}"#,
            // A syntax error after the key is the loader's to report, as an Arazzo document's.
            "arazzo: 1.0.1\ninfo: [unclosed\n",
        ];
        for text in yes {
            assert!(is_arazzo(text), "{text}");
        }
        let no = [
            "openapi: 3.1.0\ninfo: {arazzo: 1}\n",
            "id: w\nsteps: [{arazzo: x}]\n",
            "- arazzo: 1.0.1\n",
            "info: {title: arazzo}\n",
            "arazzo",
            "",
            "{a: [unclosed\n",
        ];
        for text in no {
            assert!(!is_arazzo(text), "{text}");
        }
    }
}

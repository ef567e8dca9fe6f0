//! Where each node of a YAML or JSON document is: a table from JSON Pointer to line and
//! column, built from the YAML parser's events, so that a rule checked on the parsed value can
//! say where in the file it broke. A field's position is its key's (that is where a reader looks
//! for it); a list item's is its first character.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// Line and column (both 1-based) of the nodes of one document, by JSON Pointer.
#[derive(Debug, Default, Clone)]
pub struct Positions {
    at: HashMap<String, (usize, usize)>,
}

/// A container being read.
enum Frame {
    /// A mapping at `pointer`; `key` is the key whose value comes next (none: a key comes).
    Mapping {
        pointer: String,
        key: Option<String>,
    },
    /// A sequence at `pointer`, with the index of its next item.
    Sequence { pointer: String, next: usize },
    /// A node used as a mapping key that is itself a mapping or sequence: skipped.
    ComplexKey,
}

impl Positions {
    /// The positions of `text`'s nodes. Text the parser cannot read yields the positions before
    /// the problem (the syntax error itself is reported by the loader's parser).
    pub fn of(text: &str) -> Positions {
        let mut positions = Positions::default();
        let mut stack: Vec<Frame> = Vec::new();
        for event in Parser::new_from_str(text) {
            let Ok((event, span)) = event else {
                break;
            };
            let at = (span.start.line(), span.start.col() + 1);
            match event {
                Event::Scalar(value, ..) => positions.node(&mut stack, at, Some(&value), None),
                Event::Alias(_) => positions.node(&mut stack, at, None, None),
                Event::MappingStart(..) => {
                    positions.node(&mut stack, at, None, Some(true));
                }
                Event::SequenceStart(..) => {
                    positions.node(&mut stack, at, None, Some(false));
                }
                // (The key of the value just ended was taken when the value began: the
                // mapping holding it now expects a key.)
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
        positions
    }

    /// Records one node: a key (a scalar where a mapping expects one) or a value; `container`
    /// says whether it opens a mapping (`Some(true)`) or a sequence (`Some(false)`).
    fn node(
        &mut self,
        stack: &mut Vec<Frame>,
        at: (usize, usize),
        scalar: Option<&str>,
        container: Option<bool>,
    ) {
        let pointer = match stack.last_mut() {
            None => String::new(),
            Some(Frame::ComplexKey) => {
                if container.is_some() {
                    stack.push(Frame::ComplexKey);
                }
                return;
            }
            Some(Frame::Mapping { pointer, key }) => match key.take() {
                None => {
                    // A key: its position is the field's.
                    match scalar {
                        Some(name) => {
                            let field = format!("{pointer}/{}", escape(name));
                            self.at.entry(field).or_insert(at);
                            *key = Some(name.to_owned());
                        }
                        None if container.is_some() => stack.push(Frame::ComplexKey),
                        None => *key = Some(String::new()),
                    }
                    return;
                }
                Some(name) => format!("{pointer}/{}", escape(&name)),
            },
            Some(Frame::Sequence { pointer, next }) => {
                let item = format!("{pointer}/{next}");
                *next += 1;
                item
            }
        };
        self.at.entry(pointer.clone()).or_insert(at);
        match container {
            Some(true) => stack.push(Frame::Mapping { pointer, key: None }),
            Some(false) => stack.push(Frame::Sequence { pointer, next: 0 }),
            None => {}
        }
    }

    /// The line and column of the node at `pointer`, or of its nearest ancestor that has one.
    pub fn find(&self, pointer: &str) -> Option<(usize, usize)> {
        let mut pointer = pointer;
        loop {
            if let Some(at) = self.at.get(pointer) {
                return Some(*at);
            }
            let (parent, _) = pointer.rsplit_once('/')?;
            pointer = parent;
        }
    }
}

/// A key as a JSON Pointer token (RFC 6901: `~` as `~0`, `/` as `~1`).
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_items_and_nested_nodes_have_their_places() {
        let text = "arazzo: 1.1.0\ninfo:\n  title: T\nworkflows:\n  - workflowId: w\n    steps:\n      - stepId: a\n        outputs: {x: $response.body}\n  - workflowId: v\n";
        let positions = Positions::of(text);
        assert_eq!(positions.find(""), Some((1, 1)));
        assert_eq!(positions.find("/info/title"), Some((3, 3)));
        assert_eq!(positions.find("/workflows/0"), Some((5, 5)));
        assert_eq!(positions.find("/workflows/0/steps/0/stepId"), Some((7, 9)));
        assert_eq!(
            positions.find("/workflows/0/steps/0/outputs/x"),
            Some((8, 19))
        );
        assert_eq!(positions.find("/workflows/1/workflowId"), Some((9, 5)));
        // A pointer to something absent falls back to its nearest ancestor.
        assert_eq!(positions.find("/workflows/1/steps/3"), Some((9, 5)));
    }

    #[test]
    fn json_is_read_too_and_keys_are_escaped() {
        let text = "{\n  \"paths\": {\n    \"/a~b\": {\"get\": 1}\n  }\n}\n";
        let positions = Positions::of(text);
        assert_eq!(positions.find("/paths/~1a~0b/get"), Some((3, 14)));
    }
}

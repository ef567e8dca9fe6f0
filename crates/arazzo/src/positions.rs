//! Where each node of a YAML or JSON document is: a table from JSON Pointer to line and
//! column, built from the YAML parser's events, so that a rule checked on the parsed value can
//! say where in the file it broke. A field's position is its key's (that is where a reader looks
//! for it); a list item's is its first character.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// Line and column (both 1-based) of the nodes of one document, by JSON Pointer.
///
/// Kept as a tree (each node's children by key or index), not as a table of whole pointers:
/// a long key over many items is stored once, so the table is about the size of the document
/// (a 1 MiB key over 2,000 items once made a 2 GB table).
#[derive(Debug, Default, Clone)]
pub struct Positions {
    /// Each node's line and column; node 0 is the root, when there is one.
    at: Vec<(usize, usize)>,
    /// A node's child by its key (a mapping's) or its index (a sequence's), unescaped.
    children: HashMap<(usize, Box<str>), usize>,
}

/// A container being read.
enum Frame {
    /// A mapping (node `node`); `key` is the node of the key whose value comes next (none: a
    /// key comes).
    Mapping { node: usize, key: Option<Key> },
    /// A sequence (node `node`), with the index of its next item.
    Sequence { node: usize, next: usize },
    /// A node used as a mapping key that is itself a mapping or sequence: skipped.
    ComplexKey,
}

/// The key of the value that comes next in a mapping.
enum Key {
    /// A scalar key, already a node.
    Node(usize),
    /// A key with no name of its own (an alias): its value is the mapping's `""` member.
    Unnamed,
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

    /// The child of `parent` named `token`, made at `at` when it is new (the first place a
    /// repeated key has is kept).
    fn child(&mut self, parent: usize, token: &str, at: (usize, usize)) -> usize {
        let nodes = &mut self.at;
        *self
            .children
            .entry((parent, Box::from(token)))
            .or_insert_with(|| {
                nodes.push(at);
                nodes.len() - 1
            })
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
        let node = match stack.last_mut() {
            None => {
                if self.at.is_empty() {
                    self.at.push(at);
                }
                0
            }
            Some(Frame::ComplexKey) => {
                if container.is_some() {
                    stack.push(Frame::ComplexKey);
                }
                return;
            }
            Some(Frame::Mapping { node, key }) => match key.take() {
                None => {
                    // A key: its position is the field's.
                    match scalar {
                        Some(name) => *key = Some(Key::Node(self.child(*node, name, at))),
                        None if container.is_some() => stack.push(Frame::ComplexKey),
                        None => *key = Some(Key::Unnamed),
                    }
                    return;
                }
                Some(Key::Node(child)) => child,
                Some(Key::Unnamed) => self.child(*node, "", at),
            },
            Some(Frame::Sequence { node, next }) => {
                let (parent, index) = (*node, *next);
                *next += 1;
                self.child(parent, &index.to_string(), at)
            }
        };
        match container {
            Some(true) => stack.push(Frame::Mapping { node, key: None }),
            Some(false) => stack.push(Frame::Sequence { node, next: 0 }),
            None => {}
        }
    }

    /// The line and column of the node at `pointer`, or of its nearest ancestor that has one.
    pub fn find(&self, pointer: &str) -> Option<(usize, usize)> {
        let mut node = 0;
        let mut found = *self.at.first()?;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            match self.children.get(&(node, Box::from(token.as_str()))) {
                Some(&child) => {
                    node = child;
                    found = self.at[child];
                }
                None => break,
            }
        }
        Some(found)
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

    /// Issue 31, item 8: a 1 MiB key over 2,000 items once made a table of 2 GB.
    #[test]
    fn a_long_key_is_kept_once() {
        let key = "k".repeat(1 << 20);
        let items = "  - 1\n".repeat(2_000);
        let text = format!("? {key}\n:\n{items}");
        let positions = Positions::of(&text);
        let kept: usize = positions
            .children
            .keys()
            .map(|(_, token)| token.len())
            .sum();
        assert!(kept < (1 << 20) + 20_000, "{kept} bytes of keys");
        assert_eq!(positions.find(&format!("/{key}/1999")), Some((2002, 5)));
    }

    #[test]
    fn json_is_read_too_and_keys_are_escaped() {
        let text = "{\n  \"paths\": {\n    \"/a~b\": {\"get\": 1}\n  }\n}\n";
        let positions = Positions::of(text);
        assert_eq!(positions.find("/paths/~1a~0b/get"), Some((3, 14)));
    }
}

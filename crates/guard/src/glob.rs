//! Tool-name patterns: the full glob syntax on names (there are no path separators).
//!
//! `*` any run of characters, `?` one character, `[abc]`, `[a-z]` and `[!a-z]` (or `[^a-z]`)
//! one character of (or not of) a set, `{read,get}_*` one of several alternatives (nesting
//! allowed), `\x` the character `x` itself. Matching is case-sensitive and whole-name.

use std::fmt;

use crate::Error;

/// A compiled pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    /// The alternatives after `{…}` expansion, each a sequence of tokens.
    alternatives: Vec<Vec<Token>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    Any,
    AnyRun,
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.source)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// A tool name split into characters once, to be matched against many patterns (tool names
/// are short: up to 64 characters need no allocation).
pub(crate) struct Name {
    inline: [char; 64],
    heap: Vec<char>,
    len: usize,
}

impl Name {
    pub(crate) fn new(name: &str) -> Name {
        let mut inline = ['\0'; 64];
        let mut len = 0;
        let mut heap = Vec::new();
        for character in name.chars() {
            if len < inline.len() {
                inline[len] = character;
            } else {
                if heap.is_empty() {
                    heap.extend_from_slice(&inline);
                }
                heap.push(character);
            }
            len += 1;
        }
        Name { inline, heap, len }
    }

    pub(crate) fn chars(&self) -> &[char] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    pub(crate) fn matched_by(&self, glob: &Glob) -> bool {
        glob.matches_chars(self.chars())
    }
}

/// The longest pattern accepted (expansion rescans the pattern per `{…}` group).
const MAX_PATTERN_CHARS: usize = 256;

/// The deepest `{…}` nesting accepted (expansion recurses per level).
const MAX_BRACE_DEPTH: usize = 8;

/// The most alternatives a pattern may expand to (`{a,b}{c,d}` is four).
const MAX_ALTERNATIVES: usize = 256;

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Glob, Error> {
        let fail = |reason: &str| Error::Pattern {
            pattern: pattern.to_owned(),
            reason: reason.to_owned(),
        };
        if pattern.is_empty() {
            return Err(fail("a pattern cannot be empty"));
        }
        if pattern.chars().count() > MAX_PATTERN_CHARS {
            return Err(fail(&format!(
                "longer than {MAX_PATTERN_CHARS} characters; tool names are shorter"
            )));
        }
        let mut depth = 0usize;
        for character in pattern.chars() {
            match character {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > MAX_BRACE_DEPTH {
                return Err(fail(&format!(
                    "`{{…}}` nested more than {MAX_BRACE_DEPTH} deep"
                )));
            }
        }
        let expanded = expand(pattern).map_err(|reason| fail(&reason))?;
        let alternatives = expanded
            .iter()
            .map(|text| tokens(text).map_err(|reason| fail(&reason)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Glob {
            source: pattern.to_owned(),
            alternatives,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True when `name` matches as a whole.
    pub fn matches(&self, name: &str) -> bool {
        Name::new(name).matched_by(self)
    }

    /// True when the name, already split into characters, matches.
    pub(crate) fn matches_chars(&self, name: &[char]) -> bool {
        self.alternatives
            .iter()
            .any(|tokens| match_tokens(tokens, name))
    }

    /// True when the pattern has no wildcard: it names one tool.
    pub fn is_literal(&self) -> bool {
        self.alternatives.len() == 1
            && self.alternatives[0]
                .iter()
                .all(|token| matches!(token, Token::Literal(_)))
    }
}

/// Expands `{a,b}` alternatives (outside `[...]`, honouring `\` escapes).
fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    // Find the first top-level `{`.
    let mut index = 0;
    let mut in_set = false;
    while index < chars.len() {
        match chars[index] {
            '\\' => index += 1,
            '[' if !in_set => in_set = true,
            ']' if in_set => in_set = false,
            '{' if !in_set => {
                let mut depth = 0;
                let mut parts = Vec::new();
                let mut start = index + 1;
                let mut end = None;
                let mut cursor = index;
                while cursor < chars.len() {
                    match chars[cursor] {
                        '\\' => cursor += 1,
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                parts.push(chars[start..cursor].iter().collect::<String>());
                                end = Some(cursor);
                                break;
                            }
                        }
                        ',' if depth == 1 => {
                            parts.push(chars[start..cursor].iter().collect::<String>());
                            start = cursor + 1;
                        }
                        _ => {}
                    }
                    cursor += 1;
                }
                let end = end.ok_or("an unclosed `{`")?;
                let before: String = chars[..index].iter().collect();
                let after: String = chars[end + 1..].iter().collect();
                let mut out = Vec::new();
                for part in parts {
                    for tail in expand(&format!("{part}{after}"))? {
                        out.push(format!("{before}{tail}"));
                        if out.len() > MAX_ALTERNATIVES {
                            return Err(format!(
                                "more than {MAX_ALTERNATIVES} alternatives; split it into several patterns"
                            ));
                        }
                    }
                }
                return Ok(out);
            }
            '}' if !in_set => return Err("a `}` without its `{`".into()),
            _ => {}
        }
        index += 1;
    }
    Ok(vec![pattern.to_owned()])
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let token = match chars[index] {
            '\\' => {
                index += 1;
                Token::Literal(*chars.get(index).ok_or("a trailing `\\`")?)
            }
            '?' => Token::Any,
            '*' => {
                // `**` is the same as `*` for names.
                while chars.get(index + 1) == Some(&'*') {
                    index += 1;
                }
                Token::AnyRun
            }
            '[' => {
                let mut cursor = index + 1;
                let negated = matches!(chars.get(cursor), Some('!' | '^'));
                if negated {
                    cursor += 1;
                }
                let mut items = Vec::new();
                let mut first = true;
                loop {
                    let Some(&character) = chars.get(cursor) else {
                        return Err("an unclosed `[`".into());
                    };
                    if character == ']' && !first {
                        break;
                    }
                    first = false;
                    let character = if character == '\\' {
                        cursor += 1;
                        *chars.get(cursor).ok_or("a trailing `\\`")?
                    } else {
                        character
                    };
                    if chars.get(cursor + 1) == Some(&'-')
                        && chars.get(cursor + 2).is_some_and(|end| *end != ']')
                    {
                        let end = chars[cursor + 2];
                        if end < character {
                            return Err(format!("the range `{character}-{end}` is backwards"));
                        }
                        items.push((character, end));
                        cursor += 3;
                    } else {
                        items.push((character, character));
                        cursor += 1;
                    }
                }
                index = cursor;
                Token::Set { negated, items }
            }
            character => Token::Literal(character),
        };
        tokens.push(token);
        index += 1;
    }
    Ok(tokens)
}

/// Whole-name match with backtracking on the last `*` only (linear for typical patterns).
fn match_tokens(tokens: &[Token], name: &[char]) -> bool {
    let (mut t, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(t) {
            Some(Token::AnyRun) => {
                star = Some((t, n));
                t += 1;
            }
            Some(token) if one(token, name[n]) => {
                t += 1;
                n += 1;
            }
            _ => match star {
                Some((star_t, star_n)) => {
                    t = star_t + 1;
                    n = star_n + 1;
                    star = Some((star_t, star_n + 1));
                }
                None => return false,
            },
        }
    }
    tokens[t..].iter().all(|token| *token == Token::AnyRun)
}

fn one(token: &Token, character: char) -> bool {
    match token {
        Token::Literal(expected) => *expected == character,
        Token::Any => true,
        Token::AnyRun => false,
        Token::Set { negated, items } => {
            items
                .iter()
                .any(|(low, high)| (*low..=*high).contains(&character))
                != *negated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        Glob::new(pattern).unwrap().matches(name)
    }

    #[test]
    fn the_full_syntax_matches_whole_names() {
        assert!(matches("oc_write_*", "oc_write_scale"));
        assert!(!matches("oc_write_*", "xoc_write_scale"));
        assert!(matches("oc_*_health*", "oc_diagnostic_namespace_health_v2"));
        assert!(matches("oc_rea?_logs", "oc_read_logs"));
        assert!(matches("oc_[rw]*", "oc_read_logs"));
        assert!(!matches("oc_[!rw]*", "oc_read_logs"));
        assert!(matches("oc_[a-d]*", "oc_diagnostic_events"));
        assert!(matches("{memory,knowledge}_*", "knowledge_seed"));
        assert!(matches(
            "oc_{read_{logs,describe},write_apply}",
            "oc_read_describe"
        ));
        assert!(!matches("oc_{read,write}_x", "oc_diagnostic_x"));
        assert!(matches("a\\*b", "a*b"));
        assert!(!matches("a\\*b", "axb"));
        assert!(matches("*", ""));
        assert!(matches("*_*_*", "a_b_c_d"));
        let long = format!("oc_{}_x", "y".repeat(100));
        assert!(
            matches("oc_*_x", &long),
            "names longer than the inline buffer"
        );
        assert!(!matches("oc_*_z", &long));
        assert!(Glob::new("oc_read_logs").unwrap().is_literal());
        assert!(!Glob::new("oc_*").unwrap().is_literal());
    }

    fn reason(pattern: &str) -> String {
        match Glob::new(pattern).unwrap_err() {
            Error::Pattern { reason, .. } => reason,
            other => panic!("not a pattern error: {other}"),
        }
    }

    #[test]
    fn malformed_patterns_are_refused_with_the_reason() {
        assert!(reason("oc_[abc").contains("unclosed `[`"));
        assert!(reason("oc_{a,b").contains("unclosed `{`"));
        assert!(reason("oc_a}").contains("without its `{`"));
        assert!(reason("[z-a]").contains("backwards"));
        assert!(Glob::new("").is_err());
        assert!(reason(&"{a}".repeat(200)).contains("longer than"));
        let nested = format!("{}x{}", "{".repeat(20), "}".repeat(20));
        assert!(reason(&nested).contains("nested"));
        assert!(Glob::new("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").is_err());
    }
}

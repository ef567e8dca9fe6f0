//! Reading YAML and JSON documents into typed models, with errors a person can act on.
//!
//! Every model in this crate rejects unknown fields. serde reports such a field as a bare
//! message; [`parse`] turns it into a [`DocumentError`] that names the file, the line and column,
//! the field, and the nearest known field (`input_mappings` → "did you mean `input_mapping`?"),
//! and renders the offending line with a caret under it.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use saphyr_parser::Event;
use serde::de::DeserializeOwned;

/// The text formats a document may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML 1.2 (which also reads most JSON).
    Yaml,
    /// JSON.
    Json,
}

impl Format {
    /// The format a file name implies: `.yaml`/`.yml` → YAML, `.json` → JSON, anything else none.
    ///
    /// ```
    /// use wayline_core::document::Format;
    /// assert_eq!(Format::from_path("tools/a.yml".as_ref()), Some(Format::Yaml));
    /// assert_eq!(Format::from_path("notes.txt".as_ref()), None);
    /// ```
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "yaml" | "yml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// A problem in a document: what, where, and how to fix it.
///
/// `Display` renders it for people, e.g.
///
/// ```text
/// workflow.yaml:7:5: unknown field `input_mappings` (did you mean `input_mapping`?)
///   |
/// 7 |     input_mappings:
///   |     ^
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocumentError {
    /// Where the text came from (a file path, or a name such as `<stdin>`).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong, as a lower-case fragment.
    pub message: String,
    /// The field the problem is about, when there is one (an unknown or missing field).
    pub field: Option<String>,
    /// The nearest known field to an unknown one.
    pub suggestion: Option<String>,
    /// What of the offending line is shown, for the caret rendering: the line (a window of it
    /// when it is long), or for a field's problem, the line up to the key. Never set for a
    /// document that is not well-formed or not the kind of document expected (see [`parse`]).
    pub snippet: Option<String>,
    /// The caret's column in `snippet` (it differs from `column` in a window of a long line).
    pub snippet_column: Option<usize>,
    /// How the snippet is cut (kept so that [`DocumentError::with_snippet_from`] cuts alike).
    quote: Quote,
}

/// How much of the offending line an error shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Quote {
    /// Nothing of the text.
    #[default]
    Nothing,
    /// The line, or a window of it around the column.
    Window,
    /// The line up to the end of the key at the column (what follows may be anything).
    UpToKey,
}

/// The most characters of a line a snippet shows.
const SNIPPET_CHARS: usize = 120;

impl DocumentError {
    /// A problem that has no position in the text (an unreadable file, a whole-document rule).
    pub fn new(origin: impl Into<String>, message: impl Into<String>) -> Self {
        DocumentError {
            origin: origin.into(),
            line: None,
            column: None,
            message: message.into(),
            field: None,
            suggestion: None,
            snippet: None,
            snippet_column: None,
            quote: Quote::Nothing,
        }
    }

    /// Sets the position and takes the offending line from `text` (a window of
    /// 120 characters around the column, when the line is longer).
    pub fn at(self, text: &str, line: usize, column: usize) -> Self {
        self.quoting(Quote::Window, text, line, column)
    }

    /// Sets the position and shows the offending line only up to the end of the key at
    /// `column`: for a problem with a field, whose value may be anything (a file given by
    /// mistake may hold credentials under keys wayline does not know).
    pub fn at_key(self, text: &str, line: usize, column: usize) -> Self {
        self.quoting(Quote::UpToKey, text, line, column)
    }

    /// Sets the position and shows nothing of the text: for a document that is not
    /// well-formed, or not the kind of document expected, which may be any file at all.
    pub fn located(self, line: usize, column: usize) -> Self {
        self.quoting(Quote::Nothing, "", line, column)
    }

    /// The same problem with nothing of the text shown: for a document another one refers to
    /// (a source description, a `$ref`'s file), which its reader never chose to show.
    #[must_use]
    pub fn without_content(mut self) -> Self {
        self.quote = Quote::Nothing;
        self.snippet = None;
        self.snippet_column = None;
        self
    }

    fn quoting(mut self, quote: Quote, text: &str, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self.quote = quote;
        self.take_snippet(text);
        self
    }

    /// Takes the snippet from `text` as [`DocumentError::quote`] says.
    fn take_snippet(&mut self, text: &str) {
        let line = self
            .line
            .and_then(|line| line.checked_sub(1))
            .and_then(|index| text.lines().nth(index));
        let column = self.column.unwrap_or(1).max(1);
        let shown = match (self.quote, line) {
            (Quote::Nothing, _) | (_, None) => None,
            (Quote::Window, Some(line)) => Some(window(line, column)),
            (Quote::UpToKey, Some(line)) => Some(window(up_to_key(line, column), column)),
        };
        (self.snippet, self.snippet_column) = match shown {
            Some((snippet, caret)) => (Some(snippet), Some(caret)),
            None => (None, None),
        };
    }

    /// Re-reads the snippet from another text with the same lines: used when the parsed text
    /// had `${VAR}` expanded, so that an expanded value (possibly a secret) is never shown.
    pub fn with_snippet_from(mut self, original: &str) -> Self {
        self.take_snippet(original);
        self
    }

    /// `origin:line:column`, as far as it is known.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", self.origin),
            (Some(line), None) => format!("{}:{line}", self.origin),
            _ => self.origin.clone(),
        }
    }
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean `{suggestion}`?)")?;
        }
        if let (Some(line), Some(snippet)) = (self.line, &self.snippet) {
            let gutter = line.to_string().len();
            let column = self.snippet_column.or(self.column).unwrap_or(1).max(1);
            // The caret goes under the character the column names; tabs keep their width.
            let pad: String = snippet
                .chars()
                .take(column - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(
                f,
                "\n{:gutter$} |\n{line} | {snippet}\n{:gutter$} | {pad}^",
                "", ""
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for DocumentError {}

/// `line`, or when it is longer than [`SNIPPET_CHARS`] a window of it around `column` marked
/// with `…` at the cut ends; and the column of the caret in what is shown.
fn window(line: &str, column: usize) -> (String, usize) {
    let count = line.chars().count();
    if count <= SNIPPET_CHARS {
        return (line.to_owned(), column);
    }
    let at = column.saturating_sub(1).min(count);
    let start = at.saturating_sub(SNIPPET_CHARS / 2);
    let end = (start + SNIPPET_CHARS).min(count);
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(line.chars().skip(start).take(end - start));
    if end < count {
        shown.push('…');
    }
    (shown, at - start + 1 + usize::from(start > 0))
}

/// `line` up to the end of the key at `column` (its `:`, or the column itself when none
/// follows): the value after a key is not shown.
fn up_to_key(line: &str, column: usize) -> &str {
    let at = line
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(line.len(), |(at, _)| at);
    match line[at..].find(':') {
        Some(colon) => &line[..at + colon + 1],
        None => &line[..at],
    }
}

/// What a document may be before it is parsed: parsers' time and memory grow with a document's
/// size and nesting, and a YAML parser's with its nesting faster than linearly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest document, in bytes (default 16 MiB; `WAYLINE_MAX_DOCUMENT_BYTES`).
    pub max_bytes: usize,
    /// The deepest nesting of collections, block or flow (default 128, as serde_json's;
    /// `WAYLINE_MAX_DOCUMENT_DEPTH`). A YAML document's aliases may not expand it past
    /// `max_bytes` either.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 16 << 20,
            max_depth: 128,
        }
    }
}

impl Limits {
    /// The defaults, each replaced by its environment variable when that holds a number.
    pub fn from_env() -> Limits {
        let number = |name: &str| std::env::var(name).ok()?.trim().parse::<usize>().ok();
        let defaults = Limits::default();
        Limits {
            max_bytes: number("WAYLINE_MAX_DOCUMENT_BYTES").unwrap_or(defaults.max_bytes),
            max_depth: number("WAYLINE_MAX_DOCUMENT_DEPTH").unwrap_or(defaults.max_depth),
        }
    }

    /// [`Limits::from_env`], read once per process: what [`parse`] applies.
    pub fn configured() -> Limits {
        static CONFIGURED: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
        *CONFIGURED.get_or_init(Limits::from_env)
    }

    /// Checks `text` against the limits before a parser builds anything from it, and says
    /// what kind of node its root is.
    fn check(&self, text: &str, origin: &str, format: Format) -> Result<Root, Box<DocumentError>> {
        if text.len() > self.max_bytes {
            // No position: nothing of a document this large is shown.
            return Err(Box::new(DocumentError::new(
                origin,
                format!(
                    "the document is {} bytes, more than the {} allowed; split it, or raise \
                     WAYLINE_MAX_DOCUMENT_BYTES",
                    text.len(),
                    self.max_bytes
                ),
            )));
        }
        match format {
            Format::Json => {
                self.check_brackets(text, origin)?;
                Ok(match text.trim_start().as_bytes().first() {
                    Some(b'{') => Root::Mapping,
                    Some(b'[') => Root::Sequence,
                    _ => Root::Scalar,
                })
            }
            Format::Yaml => self.check_events(text, origin),
        }
    }

    /// Reads `text`'s YAML events (no document is built): the nesting of every collection,
    /// block or flow, and the size the document has once its aliases are expanded, each held to
    /// the limits. Text that is not well-formed YAML is refused here, with the parser's reason
    /// and place and nothing of the text: the document's own parser never sees it (its time
    /// grows faster than linearly with nesting that only a complete read can measure).
    fn check_events(&self, text: &str, origin: &str) -> Result<Root, Box<DocumentError>> {
        // Per open collection: its anchor, its expanded size so far, and where it began.
        let mut open: Vec<Open> = Vec::new();
        // The expanded size of each anchored node, by anchor id.
        let mut anchored: HashMap<usize, usize> = HashMap::new();
        let mut expanded = 0usize;
        let mut root = None;
        let refuse = |line: usize, column: usize, message: String| {
            Err(Box::new(
                DocumentError::new(origin, message).located(line, column),
            ))
        };
        for event in saphyr_parser::Parser::new_from_str(text) {
            let (event, span) = match event {
                Ok(event) => event,
                Err(error) => {
                    let mut place = (error.marker().line(), error.marker().col() + 1);
                    // A flow collection left open is shown where it began (the parser notices
                    // only where the text ends).
                    if error.info().starts_with("while parsing a flow")
                        && let Some(start) = open.last()
                    {
                        place = start.began;
                    }
                    let (line, column) = place;
                    let message = if error.info().contains("recursion limit") {
                        self.too_deep()
                    } else {
                        error.info().to_owned()
                    };
                    return refuse(line, column, message);
                }
            };
            let (line, column) = (span.start.line(), span.start.col() + 1);
            // A node's size: its scalar's length and one, or one for a collection (its items
            // add theirs), or what an alias stands for.
            let (size, anchor, opens) = match event {
                Event::Scalar(ref value, _, anchor, _) => (value.len() + 1, anchor, false),
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    (1, anchor, true)
                }
                Event::Alias(id) => (anchored.get(&id).copied().unwrap_or(0), 0, false),
                Event::SequenceEnd | Event::MappingEnd => {
                    if let Some(Open { anchor, size, .. }) = open.pop() {
                        if anchor != 0 {
                            anchored.insert(anchor, size);
                        }
                        if let Some(parent) = open.last_mut() {
                            parent.size = parent.size.saturating_add(size);
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            if root.is_none() {
                root = Some(match event {
                    Event::MappingStart(..) => Root::Mapping,
                    Event::SequenceStart(..) => Root::Sequence,
                    _ => Root::Scalar,
                });
            }
            expanded = expanded.saturating_add(size);
            if expanded > self.max_bytes {
                return refuse(
                    line,
                    column,
                    format!(
                        "its aliases (`*name`) expand the document past {} bytes, the most a \
                         document may be; write the repeated parts out, or raise \
                         WAYLINE_MAX_DOCUMENT_BYTES",
                        self.max_bytes
                    ),
                );
            }
            if opens {
                open.push(Open {
                    anchor,
                    size,
                    began: (line, column),
                });
                if open.len() > self.max_depth {
                    return refuse(line, column, self.too_deep());
                }
            } else {
                if anchor != 0 {
                    anchored.insert(anchor, size);
                }
                if let Some(parent) = open.last_mut() {
                    parent.size = parent.size.saturating_add(size);
                }
            }
        }
        Ok(root.unwrap_or(Root::Scalar))
    }

    fn too_deep(&self) -> String {
        format!(
            "collections nest deeper than {} levels; flatten the document, or raise \
             WAYLINE_MAX_DOCUMENT_DEPTH",
            self.max_depth
        )
    }

    /// The nesting of JSON's arrays and objects in `text`, by a scan that skips strings.
    fn check_brackets(&self, text: &str, origin: &str) -> Result<(), Box<DocumentError>> {
        let bytes = text.as_bytes();
        let (mut depth, mut line, mut line_start, mut at) = (0usize, 1usize, 0usize, 0usize);
        let mut in_word = false;
        while at < bytes.len() {
            match bytes[at] {
                b'\n' => {
                    line += 1;
                    line_start = at + 1;
                    in_word = false;
                }
                b'#' if !in_word => {
                    while at < bytes.len() && bytes[at] != b'\n' {
                        at += 1;
                    }
                    continue;
                }
                quote @ (b'"' | b'\'') if !in_word => {
                    at += 1;
                    while at < bytes.len() && bytes[at] != quote {
                        if bytes[at] == b'\\' && quote == b'"' {
                            at += 1;
                        } else if bytes[at] == b'\n' {
                            line += 1;
                            line_start = at + 1;
                        }
                        at += 1;
                    }
                }
                // Inside a plain scalar (`a{b`) a bracket opens nothing.
                b'[' | b'{' if !in_word => {
                    depth += 1;
                    if depth > self.max_depth {
                        let column = text[line_start..at].chars().count() + 1;
                        return Err(Box::new(
                            DocumentError::new(origin, self.too_deep()).located(line, column),
                        ));
                    }
                    in_word = false;
                }
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    in_word = true;
                }
                b' ' | b'\t' | b',' | b':' => in_word = false,
                _ => in_word = true,
            }
            at += 1;
        }
        Ok(())
    }
}

/// Parses `text` as `format` into `T`, which should reject unknown fields. A document past the
/// [`Limits::configured`] (size, nesting) is refused before it is parsed.
///
/// ```
/// use wayline_core::document::{parse, Format};
/// use wayline_core::Edge;
///
/// let err = parse::<Edge>("from_step_id: a\nto_step: b\n", Format::Yaml, "edge.yaml").unwrap_err();
/// assert_eq!(err.line, Some(2));
/// assert_eq!(err.suggestion.as_deref(), Some("to_step_id"));
/// ```
pub fn parse<T: DeserializeOwned>(
    text: &str,
    format: Format,
    origin: &str,
) -> Result<T, Box<DocumentError>> {
    parse_with(text, format, origin, Limits::configured())
}

/// [`parse`] with the given limits.
pub fn parse_with<T: DeserializeOwned>(
    text: &str,
    format: Format,
    origin: &str,
    limits: Limits,
) -> Result<T, Box<DocumentError>> {
    let root = limits.check(text, origin, format)?;
    match format {
        Format::Yaml => serde_norway::from_str(text).map_err(|err| {
            let (message, positions) = take_positions(&err.to_string());
            let error = describe(origin, &message);
            // A scanner error ("... while scanning a quoted scalar at line 3 column 11") names
            // where the unfinished construct began: that is the place to show.
            let syntax = message.contains("while scanning") || message.contains("while parsing");
            let construct_start = syntax.then(|| positions.last().copied()).flatten();
            let position =
                construct_start.or_else(|| err.location().map(|at| (at.line(), at.column())));
            let quote = root.quote(&error, syntax);
            Box::new(match position {
                Some((line, column)) => error.quoting(quote, text, line, column),
                None => error,
            })
        }),
        Format::Json => serde_json::from_str(text).map_err(|err| {
            let message = strip_json_location(&err.to_string());
            let error = describe(origin, &message);
            let syntax = !matches!(err.classify(), serde_json::error::Category::Data);
            let quote = root.quote(&error, syntax);
            // serde_json reports line 0 for errors that have no position (e.g. I/O).
            Box::new(if err.line() > 0 {
                error.quoting(quote, text, err.line(), err.column())
            } else {
                error
            })
        }),
    }
}

/// A collection the limits' scan is inside of.
struct Open {
    /// Its anchor's id (0: none).
    anchor: usize,
    /// Its size so far, its aliases expanded.
    size: usize,
    /// Where it began (line, column).
    began: (usize, usize),
}

/// The kind of a document's root node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    Mapping,
    Sequence,
    Scalar,
}

impl Root {
    /// How much of the text of a document with this root a parse error may show. A document
    /// that is not well-formed, or whose root is not a mapping (every wayline format is one), may be any file given by
    /// mistake — a private key, an INI file of credentials — so nothing of it is shown; in a
    /// well-formed mapping, a field's problem shows the line up to its key, any other the line.
    fn quote(self, error: &DocumentError, syntax: bool) -> Quote {
        if syntax || self != Root::Mapping {
            Quote::Nothing
        } else if error.field.is_some() {
            Quote::UpToKey
        } else {
            Quote::Window
        }
    }
}

/// Turns serde's message into a [`DocumentError`], recognising unknown and missing fields.
fn describe(origin: &str, message: &str) -> DocumentError {
    let (context, message) = split_yaml_path(message);
    let mut error = DocumentError::new(origin, message.to_owned());
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some((field, expected)) = rest.split_once('`') {
            let known = backticked(expected);
            error.field = Some(field.to_owned());
            error.suggestion = nearest(field, known.iter().copied()).map(str::to_owned);
            let shown = named(field);
            error.message = if known.is_empty() {
                format!("unknown field `{shown}`: this mapping takes no fields")
            } else {
                format!(
                    "unknown field `{shown}`; known fields: {}",
                    known.join(", ")
                )
            };
        }
    } else if let Some(rest) = message.strip_prefix("missing field `") {
        if let Some((field, _)) = rest.split_once('`') {
            error.field = Some(field.to_owned());
            error.message = format!("missing required field `{field}`");
        }
    } else if message.starts_with("invalid type") || message.starts_with("invalid value") {
        error.message = humanize_expectation(message);
    } else if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((variant, expected)) = rest.split_once('`')
    {
        error.message = format!("unknown variant `{}`{expected}", named(variant));
    }
    if let Some(context) = context {
        error.message = format!("{context}: {}", error.message);
    }
    error
}

/// serde_norway prefixes nested errors with the path (`steps[0].id: ...`); keep it apart.
fn split_yaml_path(message: &str) -> (Option<&str>, &str) {
    match message.split_once(": ") {
        Some((path, rest))
            if !path.contains(' ')
                && !path.is_empty()
                && path
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-.[]".contains(c)) =>
        {
            (Some(path), rest)
        }
        _ => (None, message),
    }
}

/// Rewrites serde's `invalid type: X, expected Y` in words a user knows (no Rust type names),
/// and without the value itself: `invalid type: string "…"` says `a string`, whatever the string
/// (the document may be a file given by mistake, the value a credential).
fn humanize_expectation(message: &str) -> String {
    let Some((head, rest)) = message.split_once(": ") else {
        return message.to_owned();
    };
    // The value serde quotes may itself hold `, expected `: read past it first.
    let (what, expected) = match rest.strip_prefix("string \"") {
        Some(quoted) => match closing_quote(quoted) {
            Some(end) => ("string", quoted[end + 1..].strip_prefix(", expected ")),
            None => ("string", None),
        },
        None => match rest.split_once(", expected ") {
            Some((what, expected)) => (what, Some(expected)),
            None => (rest, None),
        },
    };
    let word = |text: &str| {
        let kind = text.split_once(' ').map_or(text, |(kind, _)| kind);
        match (text, kind) {
            ("sequence" | "a sequence", _) => "a list".to_owned(),
            ("map" | "a map", _) => "a mapping".to_owned(),
            (_, "string") => "a string".to_owned(),
            (_, "integer" | "floating") => "a number".to_owned(),
            (_, "boolean") => "a boolean".to_owned(),
            (_, "character") => "a character".to_owned(),
            (other, _) => match other.strip_prefix("struct ") {
                Some(name) => format!("a mapping ({name})"),
                None => other.to_owned(),
            },
        }
    };
    match expected {
        Some(expected) => format!("{head}: {}, expected {}", word(what), word(expected)),
        None => format!("{head}: {}", word(what)),
    }
}

/// The index of the `"` that ends a string serde wrote escaped (`\"` inside it is kept).
fn closing_quote(quoted: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, ch) in quoted.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(at),
            _ => {}
        }
    }
    None
}

/// A name taken from the document, cut for a message when it is long.
fn named(name: &str) -> String {
    const SHOWN: usize = 64;
    if name.chars().count() <= SHOWN {
        return name.to_owned();
    }
    let head: String = name.chars().take(SHOWN).collect();
    format!("{head}…")
}

/// The names between backticks in serde's `expected one of `a`, `b`` text.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The known name closest to `unknown`, if any is close enough to be a plausible typo.
pub fn nearest<'a>(unknown: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let unknown_lower = unknown.to_ascii_lowercase();
    known
        .into_iter()
        .map(|candidate| {
            let distance =
                strsim::damerau_levenshtein(&unknown_lower, &candidate.to_ascii_lowercase());
            (distance, candidate)
        })
        .filter(|(distance, candidate)| {
            let longest = unknown.len().max(candidate.len());
            *distance <= 2.max(longest / 3)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Removes every ` at line N column M` from a YAML message, returning the positions in order.
fn take_positions(message: &str) -> (String, Vec<(usize, usize)>) {
    let mut text = String::with_capacity(message.len());
    let mut positions = Vec::new();
    let mut rest = message;
    while let Some(index) = rest.find(" at line ") {
        text.push_str(&rest[..index]);
        let after = &rest[index + " at line ".len()..];
        let line_digits = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let column_part = after[line_digits..].strip_prefix(" column ");
        match (after[..line_digits].parse::<usize>(), column_part) {
            (Ok(line), Some(column_part)) => {
                let column_digits = column_part
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(column_part.len());
                let column = column_part[..column_digits].parse().unwrap_or(1);
                positions.push((line, column));
                rest = &column_part[column_digits..];
            }
            _ => {
                text.push_str(" at line ");
                rest = after;
            }
        }
    }
    text.push_str(rest);
    (text, positions)
}

fn strip_json_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_owned(),
        None => message.to_owned(),
    }
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` with values from `lookup`.
///
/// YAML comment lines (whose first non-blank character is `#`) are left alone, so a commented-out
/// `${VAR}` needs no value. A `${` that does not start a well-formed reference is kept as text.
/// Line structure is preserved unless a value itself holds a newline.
///
/// ```
/// use wayline_core::document::expand_vars;
/// let lookup = |name: &str| (name == "HOST").then(|| "api.example.com".to_owned());
/// let expanded = expand_vars("url: https://${HOST}/${VERSION:-v1}", lookup).unwrap();
/// assert_eq!(expanded.text, "url: https://api.example.com/v1");
/// assert_eq!(expanded.values, ["api.example.com"]);
/// ```
pub fn expand_vars(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Expansion, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut values = Vec::new();
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with('#') {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let body = &after[..end];
            let (name, default) = match body.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (body, None),
            };
            if !is_variable_name(name) {
                out.push_str("${");
                rest = after;
                continue;
            }
            // As in the shell: `:-` falls back when the variable is unset or empty.
            match (lookup(name), default) {
                (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
                (Some(value), _) => {
                    out.push_str(&value);
                    if !value.is_empty() && !values.contains(&value) {
                        values.push(value);
                    }
                }
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    return Err(UnsetVariable {
                        name: name.to_owned(),
                        line: index + 1,
                        column: line.len() - rest.len() + start + 1,
                    });
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
    }
    Ok(Expansion { text: out, values })
}

/// The result of [`expand_vars`].
#[derive(Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The text with every reference replaced.
    pub text: String,
    /// The values taken from the environment (not defaults), to keep out of messages.
    pub values: Vec<String>,
}

impl fmt::Debug for Expansion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The values may be secrets.
        f.debug_struct("Expansion")
            .field("values", &format_args!("[{} redacted]", self.values.len()))
            .finish_non_exhaustive()
    }
}

impl Expansion {
    /// Parses the expanded text (see [`parse`]); an error shows the line as written in
    /// `original` and masks every expanded value in its message.
    pub fn parse<T: DeserializeOwned>(
        &self,
        original: &str,
        format: Format,
        origin: &str,
    ) -> Result<T, Box<DocumentError>> {
        parse(&self.text, format, origin).map_err(|error| {
            let mut error = (*error).with_snippet_from(original);
            // serde quotes offending values: one could be an expanded secret.
            for value in &self.values {
                error.message = error.message.replace(value.as_str(), "***");
            }
            Box::new(error)
        })
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `${VAR}` without a default whose variable is not set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetVariable {
    /// The variable's name.
    pub name: String,
    /// 1-based line of the reference.
    pub line: usize,
    /// 1-based column of the `$`.
    pub column: usize,
}

impl UnsetVariable {
    /// The same problem as a [`DocumentError`] located in `text` from `origin`.
    pub fn into_document_error(self, text: &str, origin: &str) -> DocumentError {
        DocumentError::new(
            origin,
            format!(
                "environment variable `{}` is not set; set it, or give a default as `${{{}:-value}}`",
                self.name, self.name
            ),
        )
        .at(text, self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_past_the_limits_are_refused_before_parsing() {
        #[derive(Debug, serde::Deserialize)]
        struct Any {
            #[expect(dead_code, reason = "only parsed")]
            x: serde_json::Value,
        }
        let limits = Limits {
            max_bytes: 1_000,
            max_depth: 8,
        };
        let deep = format!("x: {}1{}\n", "{a: ".repeat(20), "}".repeat(20));
        let error = parse_with::<Any>(&deep, Format::Yaml, "deep.yaml", limits).unwrap_err();
        assert!(error.message.contains("nest deeper than 8"), "{error}");
        // Every collection counts, block or flow: the root mapping is the first level, so the
        // eighth `{` opens the ninth.
        assert_eq!(
            (error.line, error.column),
            (Some(1), Some(32)),
            "the eighth `{{`"
        );
        let deep_json = format!("{{\"x\": {}1{}}}", "[".repeat(20), "]".repeat(20));
        assert!(parse_with::<Any>(&deep_json, Format::Json, "d.json", limits).is_err());
        let big = format!("x: '{}'\n", "a".repeat(2_000));
        let error = parse_with::<Any>(&big, Format::Yaml, "big.yaml", limits).unwrap_err();
        assert!(error.message.contains("2006 bytes"), "{error}");
        // Brackets in quotes, comments and words do not count.
        let fine = format!(
            "# {}\nx: ['{}', \"{}\", it's]\ny: a{}b\n",
            "[".repeat(50),
            "{".repeat(50),
            "[".repeat(50),
            "{".repeat(30)
        );
        assert!(
            parse_with::<Any>(&fine, Format::Yaml, "fine.yaml", limits).is_ok(),
            "{fine}"
        );
        // 20,000 levels of flow mappings: refused at once by the default limits (it took
        // seconds to parse; 100,000 took minutes).
        let huge = format!("x: {}1{}\n", "{a: ".repeat(20_000), "}".repeat(20_000));
        let error = parse::<Any>(&huge, Format::Yaml, "huge.yaml").unwrap_err();
        assert!(error.message.contains("nest deeper than 128"), "{error}");
    }

    /// Issue 31, item 8: a `"` inside a block scalar once hid the brackets after it from the
    /// nesting limit (400 KB then parsed for over a minute); the limit now reads the parser's
    /// events, where a block scalar is a scalar.
    #[test]
    fn a_quote_in_a_block_scalar_hides_no_nesting() {
        let bypass = format!(
            "note: |\n  he said \"hi\nx: {}1{}\ny: \"\n",
            "[".repeat(20_000),
            "]".repeat(20_000)
        );
        let error = parse::<serde_json::Value>(&bypass, Format::Yaml, "b.yaml").unwrap_err();
        assert!(error.message.contains("nest deeper than 128"), "{error}");
        assert_eq!(error.line, Some(3));
        // Nesting in block style counts too.
        let mut block = String::new();
        for depth in 0..200 {
            block.push_str(&format!("{}k:\n", " ".repeat(depth)));
        }
        let error = parse::<serde_json::Value>(&block, Format::Yaml, "b.yaml").unwrap_err();
        assert!(error.message.contains("nest deeper than 128"), "{error}");
    }

    /// Issue 31, item 8: aliases once expanded a 1 MB document to gigabytes.
    #[test]
    fn aliases_may_not_expand_a_document_past_its_size_limit() {
        let big = "a".repeat(1 << 20);
        let references = vec!["*big"; 1_000].join(", ");
        let text = format!("anchor: &big {big}\nall: [{references}]\n");
        let error = parse::<serde_json::Value>(&text, Format::Yaml, "a.yaml").unwrap_err();
        assert!(error.message.contains("aliases"), "{error}");
        assert_eq!(error.line, Some(2));
        // Nine levels of ten: a billion `lol`s in a few hundred bytes.
        let mut laughs = "a0: &a0 lol\n".to_owned();
        for level in 1..10 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            laughs.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let error = parse::<serde_json::Value>(&laughs, Format::Yaml, "l.yaml").unwrap_err();
        assert!(error.message.contains("aliases"), "{error}");
        // A few aliases are fine.
        let fine = "base: &base {a: 1}\none: *base\ntwo: *base\n";
        assert!(parse::<serde_json::Value>(fine, Format::Yaml, "f.yaml").is_ok());
    }

    /// Issue 31, item 2: what does not parse as the expected kind of document is quoted
    /// nowhere in its error (it may be any file given by mistake).
    #[test]
    fn errors_quote_nothing_of_a_file_that_is_not_the_document_expected() {
        // An INI file of credentials: a syntax error on its second line.
        let ini = "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n";
        let error = parse::<crate::Workflow>(ini, Format::Yaml, "creds").unwrap_err();
        assert!(error.snippet.is_none() && error.line.is_some(), "{error:?}");
        assert!(!error.to_string().contains("wJalr"), "{error}");
        // A private key: one plain scalar, not a mapping.
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----\n";
        let error = parse::<crate::Workflow>(key, Format::Yaml, "id_ed25519").unwrap_err();
        let shown = error.to_string();
        assert!(
            !shown.contains("b3Bl") && !shown.contains("BEGIN"),
            "{shown}"
        );
        assert!(
            shown.contains("invalid type: a string, expected a mapping (Workflow)"),
            "{shown}"
        );
        // JSON credentials: a mapping, but not a workflow; its line is shown up to the key.
        let json = "{\n  \"client_secret\": \"s3cr3t-value\",\n  \"id\": \"x\"\n}";
        let error = parse::<crate::Workflow>(json, Format::Json, "c.json").unwrap_err();
        let shown = error.to_string();
        assert!(shown.contains("client_secret"), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        // A JSON syntax error: nothing quoted.
        let error =
            parse::<crate::Workflow>("{\"id\": s3cr3t}", Format::Json, "t.json").unwrap_err();
        assert!(error.snippet.is_none(), "{error:?}");
        // A value serde would quote is named by its kind, even one holding `, expected `.
        let error = parse::<crate::Workflow>(
            "id: w\nname: W\nsteps: \"tok, expected 1\"\n",
            Format::Yaml,
            "w.yaml",
        )
        .unwrap_err();
        assert_eq!(
            error.message, "steps: invalid type: a string, expected a list",
            "{error}"
        );
        // A long line is shown as a window around the column.
        let long = format!(
            "{{\"id\": \"w\", \"name\": \"W\", \"steps\": [], \"edges\": 3, \"pad\": \"{}\"}}",
            "x".repeat(5_000)
        );
        let error = parse::<crate::Workflow>(&long, Format::Json, "w.json").unwrap_err();
        let snippet = error.snippet.clone().unwrap_or_default();
        assert!(snippet.chars().count() <= 122, "{snippet}");
        assert!(error.to_string().lines().count() == 4, "{error}");
    }

    #[test]
    fn nearest_finds_plausible_typos_only() {
        let known = ["input_mapping", "tool_id", "severity"];
        assert_eq!(nearest("input_mappings", known), Some("input_mapping"));
        assert_eq!(nearest("toolid", known), Some("tool_id"));
        assert_eq!(nearest("colour", known), None);
    }

    #[test]
    fn expand_uses_defaults_and_reports_unset_variables() {
        let lookup = |name: &str| (name == "A").then(|| "1".to_owned());
        assert_eq!(expand_vars("${A}-${B:-2}", lookup).unwrap().text, "1-2");
        assert_eq!(
            expand_vars("# ${B}\nx: ${A}", lookup).unwrap().text,
            "# ${B}\nx: 1"
        );
        assert_eq!(
            expand_vars("keep ${not a var} and ${", lookup)
                .unwrap()
                .text,
            "keep ${not a var} and ${"
        );
        let err = expand_vars("a: 1\nb: x${B}", lookup).unwrap_err();
        assert_eq!((err.name.as_str(), err.line, err.column), ("B", 2, 5));
    }

    #[test]
    fn empty_variable_takes_the_default() {
        let lookup = |_: &str| Some(String::new());
        assert_eq!(expand_vars("${A:-d}", lookup).unwrap().text, "d");
    }

    #[test]
    fn expanded_values_are_masked_in_errors() {
        let lookup = |_: &str| Some("s3cret".to_owned());
        let original = "id: ${T}\nname: N\nsteps: ${T}\n";
        let expansion = expand_vars(original, lookup).unwrap();
        let err = expansion
            .parse::<crate::Workflow>(original, Format::Yaml, "w.yaml")
            .unwrap_err();
        let shown = err.to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("steps: ${T}"), "{shown}");
    }

    #[test]
    fn caret_points_at_the_column() {
        let error = DocumentError::new("f.yaml", "bad").at("a: 1\n  bee: 2\n", 2, 3);
        assert_eq!(
            error.to_string(),
            "f.yaml:2:3: bad\n  |\n2 |   bee: 2\n  |   ^"
        );
    }

    #[test]
    fn real_yaml_errors_are_located_and_explained() {
        let text = "id: w\nname: W\nsteps:\n  - id: a\n    tool_id: t\n    input_mappings: {}\n";
        let err = parse::<crate::Workflow>(text, Format::Yaml, "w.yaml").unwrap_err();
        eprintln!("{err}");
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(6), Some("input_mappings"))
        );
        assert_eq!(err.suggestion.as_deref(), Some("input_mapping"));

        let err = parse::<crate::Workflow>("id: w\nname: W\nsteps: 3\n", Format::Yaml, "w.yaml")
            .unwrap_err();
        eprintln!("{err}");
        assert_eq!(err.line, Some(3));
        assert!(err.message.contains("expected a list"), "{}", err.message);

        let err = parse::<crate::ToolDefinition>("- id: a\n- id: b\n", Format::Yaml, "t.yaml")
            .unwrap_err();
        eprintln!("{err}");
        assert_eq!(err.line, Some(1));
        assert_eq!(
            err.message,
            "invalid type: a list, expected a mapping (ToolDefinition)"
        );

        let err = parse::<crate::Workflow>(
            "{\"id\": \"w\", \"name\": \"W\",\n \"stepz\": []}",
            Format::Json,
            "w.json",
        )
        .unwrap_err();
        eprintln!("{err}");
        assert_eq!(
            (err.line, err.suggestion.as_deref()),
            (Some(2), Some("steps"))
        );

        let err = parse::<crate::Workflow>("id: [\n", Format::Yaml, "w.yaml").unwrap_err();
        eprintln!("{err}");
        assert!(err.line.is_some());
    }

    #[test]
    fn scanner_errors_point_at_the_unfinished_construct() {
        let text = "id: broken\nname: B\nbase_url: \"http://x\nmethod: GET\n";
        let err = parse::<crate::ToolDefinition>(text, Format::Yaml, "t.yaml").unwrap_err();
        assert_eq!((err.line, err.column), (Some(3), Some(11)), "{err}");
        assert!(!err.message.contains("at line"), "{}", err.message);
    }

    #[test]
    fn yaml_paths_are_kept_as_context() {
        let error = describe(
            "w.yaml",
            "steps[0]: unknown field `input_mappings`, expected one of `id`, `input_mapping`",
        );
        assert_eq!(error.field.as_deref(), Some("input_mappings"));
        assert_eq!(error.suggestion.as_deref(), Some("input_mapping"));
        assert!(error.message.starts_with("steps[0]: unknown field"));
    }
}

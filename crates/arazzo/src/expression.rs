//! Runtime expressions (`$statusCode`, `$response.body#/id`, `$steps.login.outputs.token`, …)
//! and strings that embed them (`https://{$inputs.host}/pets/{$steps.find.outputs.id}`), parsed
//! by the specification's ABNF.

use std::fmt;

/// A runtime expression.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expression {
    /// `$url`: the request's URL.
    Url,
    /// `$method`: the request's method.
    Method,
    /// `$statusCode`: the response's status.
    StatusCode,
    /// `$self`: the document's URI.
    SelfUri,
    /// `$request.…`.
    Request(Source),
    /// `$response.…`.
    Response(Source),
    /// `$message.…` (AsyncAPI).
    Message(Source),
    /// `$inputs.NAME[#/pointer]`: an input of the workflow.
    Inputs(Field),
    /// `$outputs.NAME[#/pointer]`: an output of the workflow.
    Outputs(Field),
    /// `$steps.STEP.outputs.NAME[#/pointer]`, or `$steps.STEP.outputs`: all of them.
    Steps {
        /// The step.
        step: String,
        /// The output and a pointer into it (none: all the outputs, as a mapping).
        output: Option<Field>,
    },
    /// `$workflows.WORKFLOW.inputs|outputs.NAME[#/pointer]`.
    Workflows {
        /// The workflow.
        workflow: String,
        /// Whether its inputs or its outputs.
        part: WorkflowPart,
        /// The input or output, and a pointer into it.
        field: Field,
    },
    /// `$workflows.WORKFLOW.steps.STEP.outputs.NAME[#/pointer]`: a step of another workflow
    /// (the form step `dependsOn` uses for it).
    WorkflowStep {
        /// The workflow.
        workflow: String,
        /// The step.
        step: String,
        /// The output and a pointer into it (none: all the outputs).
        output: Option<Field>,
    },
    /// `$sourceDescriptions.NAME.REFERENCE`: an operation or workflow id of the source, or one
    /// of the source description's fields (`url`).
    SourceDescriptions {
        /// The source description.
        source: String,
        /// What in it.
        reference: String,
    },
    /// `$components.KIND.NAME`.
    Components {
        /// Which components.
        kind: ComponentKind,
        /// The component.
        name: String,
    },
}

/// A part of a request, response or message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// `header.NAME` (names compare without case).
    Header(String),
    /// `query.NAME`.
    Query(String),
    /// `path.NAME`.
    Path(String),
    /// `body[#/pointer]`.
    Body(Option<String>),
    /// `payload[#/pointer]`.
    Payload(Option<String>),
}

/// A named value with an optional JSON Pointer into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The name (input and output names may contain dots).
    pub name: String,
    /// A JSON Pointer into the value (`/0/id`), after `#`.
    pub pointer: Option<String>,
}

/// `$workflows.W.inputs` or `.outputs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowPart {
    /// The workflow's inputs.
    Inputs,
    /// The workflow's outputs.
    Outputs,
}

/// The kinds of component an expression can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// `$components.parameters`.
    Parameters,
    /// `$components.successActions`.
    SuccessActions,
    /// `$components.failureActions`.
    FailureActions,
}

/// Why a runtime expression does not parse: what was expected at which character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionError {
    /// The 0-based character offset in the text.
    pub offset: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for ExpressionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at character {})", self.message, self.offset + 1)
    }
}

impl std::error::Error for ExpressionError {}

/// The top-level names, for messages and suggestions.
const ROOTS: [&str; 13] = [
    "$url",
    "$method",
    "$statusCode",
    "$request.",
    "$response.",
    "$message.",
    "$inputs.",
    "$outputs.",
    "$steps.",
    "$workflows.",
    "$sourceDescriptions.",
    "$components.",
    "$self",
];

impl Expression {
    /// Parses a whole runtime expression.
    ///
    /// ```
    /// use wayline_arazzo::expression::{Expression, Field};
    ///
    /// let parsed = Expression::parse("$steps.login.outputs.token#/value").unwrap();
    /// assert_eq!(parsed, Expression::Steps {
    ///     step: "login".into(),
    ///     output: Some(Field { name: "token".into(), pointer: Some("/value".into()) }),
    /// });
    /// assert!(Expression::parse("$step.login.outputs.token").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Expression, ExpressionError> {
        let (expression, rest) = Expression::parse_prefix(text, text.len())?;
        if rest < text.len() {
            return Err(ExpressionError {
                offset: text[..rest].chars().count(),
                message: format!("unexpected `{}` after the expression", &text[rest..]),
            });
        }
        Ok(expression)
    }

    /// Parses the expression at the start of `text`, reading no further than byte `end`;
    /// answers it and the byte offset where it stopped. Names that the ABNF lets take any
    /// character (`query.NAME`, `path.NAME`, source references) run to `end`.
    pub(crate) fn parse_prefix(
        text: &str,
        end: usize,
    ) -> Result<(Expression, usize), ExpressionError> {
        let text = &text[..end];
        let mut reader = Reader { text, at: 0 };
        if !reader.eat("$") {
            return Err(reader.error("a runtime expression starts with `$`"));
        }
        let root = reader.word(is_strict);
        let expression = match root {
            "url" => Expression::Url,
            "method" => Expression::Method,
            "statusCode" => Expression::StatusCode,
            "self" => Expression::SelfUri,
            "request" => Expression::Request(reader.dot().and_then(|()| reader.source())?),
            "response" => Expression::Response(reader.dot().and_then(|()| reader.source())?),
            "message" => Expression::Message(reader.dot().and_then(|()| reader.source())?),
            "inputs" => Expression::Inputs(reader.dot().and_then(|()| reader.field())?),
            "outputs" => Expression::Outputs(reader.dot().and_then(|()| reader.field())?),
            "steps" => {
                reader.dot()?;
                let step = reader.strict("a step id")?;
                Expression::Steps {
                    step,
                    output: reader.outputs()?,
                }
            }
            "workflows" => {
                reader.dot()?;
                let workflow = reader.strict("a workflow id")?;
                let part = if reader.eat(".inputs.") {
                    WorkflowPart::Inputs
                } else if reader.eat(".outputs.") {
                    WorkflowPart::Outputs
                } else if reader.eat(".steps.") {
                    // Not in the ABNF, but the form `dependsOn` prescribes for another
                    // workflow's steps, and what published documents write to read their
                    // outputs.
                    let step = reader.strict("a step id")?;
                    return Ok((
                        Expression::WorkflowStep {
                            workflow,
                            step,
                            output: reader.outputs()?,
                        },
                        reader.at,
                    ));
                } else {
                    return Err(reader.error(
                        "expected `.inputs.NAME`, `.outputs.NAME` or `.steps.STEP.outputs.NAME` after the workflow id",
                    ));
                };
                Expression::Workflows {
                    workflow,
                    part,
                    field: reader.field()?,
                }
            }
            "sourceDescriptions" => {
                reader.dot()?;
                let source = reader.strict("a source description name")?;
                reader.dot()?;
                let reference = reader.rest();
                if reference.is_empty() {
                    return Err(reader.error("expected what of the source description (an operation id, a workflow id, or `url`)"));
                }
                Expression::SourceDescriptions {
                    source,
                    reference: reference.to_owned(),
                }
            }
            "components" => {
                reader.dot()?;
                let start = reader.at;
                let kind = match reader.word(is_strict) {
                    "parameters" => ComponentKind::Parameters,
                    "successActions" => ComponentKind::SuccessActions,
                    "failureActions" => ComponentKind::FailureActions,
                    _ => {
                        reader.at = start;
                        return Err(reader
                            .error("expected `parameters`, `successActions` or `failureActions`"));
                    }
                };
                reader.dot()?;
                let name = reader.word(is_identifier);
                if name.is_empty() {
                    return Err(reader.error("expected a component name"));
                }
                Expression::Components {
                    kind,
                    name: name.to_owned(),
                }
            }
            other => {
                let written = format!("${other}");
                let near = wayline_core::document::nearest(
                    &written,
                    ROOTS.iter().map(|root| root.trim_end_matches('.')),
                )
                .map(|near| format!(" (did you mean `{near}`?)"))
                .unwrap_or_default();
                return Err(ExpressionError {
                    offset: 0,
                    message: format!(
                        "`{written}` is not a runtime expression{near}; they begin with {}",
                        ROOTS.join(", ")
                    ),
                });
            }
        };
        Ok((expression, reader.at))
    }
}

/// A cursor over an expression's text.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, message: &str) -> ExpressionError {
        ExpressionError {
            offset: self.text[..self.at].chars().count(),
            message: message.to_owned(),
        }
    }

    fn eat(&mut self, expected: &str) -> bool {
        if self.text[self.at..].starts_with(expected) {
            self.at += expected.len();
            true
        } else {
            false
        }
    }

    fn dot(&mut self) -> Result<(), ExpressionError> {
        if self.eat(".") {
            Ok(())
        } else {
            Err(self.error("expected `.`"))
        }
    }

    /// The longest run of characters `accept` takes.
    fn word(&mut self, accept: fn(char) -> bool) -> &'a str {
        let rest = &self.text[self.at..];
        let length = rest.find(|c| !accept(c)).unwrap_or(rest.len());
        self.at += length;
        &rest[..length]
    }

    fn rest(&mut self) -> &'a str {
        let rest = &self.text[self.at..];
        self.at = self.text.len();
        rest
    }

    fn strict(&mut self, what: &str) -> Result<String, ExpressionError> {
        let word = self.word(is_strict);
        if word.is_empty() {
            return Err(self.error(&format!("expected {what} (letters, digits, `_`, `-`)")));
        }
        Ok(word.to_owned())
    }

    /// `.outputs.NAME[#pointer]` after a step id, or `.outputs` alone: all of them, as a
    /// mapping (a selector's context, as published documents write it).
    fn outputs(&mut self) -> Result<Option<Field>, ExpressionError> {
        if self.eat(".outputs.") {
            return self.field().map(Some);
        }
        if self.text[self.at..] == *".outputs" {
            self.at = self.text.len();
            return Ok(None);
        }
        Err(self.error("expected `.outputs.NAME` after the step id"))
    }

    /// `NAME[#pointer]`, NAME an identifier (dots allowed).
    fn field(&mut self) -> Result<Field, ExpressionError> {
        let name = self.word(is_identifier);
        if name.is_empty() {
            return Err(self.error("expected a name (letters, digits, `.`, `_`, `-`)"));
        }
        Ok(Field {
            name: name.to_owned(),
            pointer: self.pointer()?,
        })
    }

    /// `#/json/pointer`, when the text goes on with `#`.
    fn pointer(&mut self) -> Result<Option<String>, ExpressionError> {
        if !self.eat("#") {
            return Ok(None);
        }
        let start = self.at;
        let pointer = self.word(|c| c != '{' && c != '}' && !c.is_whitespace());
        if !pointer.is_empty() && !pointer.starts_with('/') {
            self.at = start;
            return Err(self.error("a JSON Pointer after `#` starts with `/`"));
        }
        let bad_escape = pointer
            .match_indices('~')
            .find(|(index, _)| !pointer[index + 1..].starts_with(['0', '1']));
        if let Some((index, _)) = bad_escape {
            self.at = start + index;
            return Err(
                self.error("in a JSON Pointer `~` is written `~0` and `/` inside a name `~1`")
            );
        }
        Ok(Some(pointer.to_owned()))
    }

    /// `#/json/pointer`, or `.name.name` read as the pointer `/name/name`: the condition
    /// language's property access, which published documents also write in values
    /// (`$message.payload.userId`).
    fn pointer_or_properties(&mut self) -> Result<Option<String>, ExpressionError> {
        if !self.text[self.at..].starts_with('.') {
            return self.pointer();
        }
        let mut pointer = String::new();
        while self.text[self.at..].starts_with('.') {
            let start = self.at;
            self.at += 1;
            let name = self.word(is_strict);
            if name.is_empty() {
                self.at = start;
                break;
            }
            pointer.push('/');
            pointer.push_str(name);
        }
        Ok((!pointer.is_empty()).then_some(pointer))
    }

    /// `header.TOKEN`, `query.NAME`, `path.NAME`, `body[#ptr]` or `payload[#ptr]`.
    fn source(&mut self) -> Result<Source, ExpressionError> {
        let start = self.at;
        match self.word(is_strict) {
            "header" => {
                self.dot()?;
                let name = self.word(is_tchar);
                if name.is_empty() {
                    return Err(self.error("expected a header name"));
                }
                Ok(Source::Header(name.to_owned()))
            }
            kind @ ("query" | "path") => {
                self.dot()?;
                let name = self.word(|c| c != '{' && c != '}' && !c.is_whitespace());
                if name.is_empty() {
                    return Err(self.error(&format!("expected a {kind} parameter name")));
                }
                Ok(if kind == "query" {
                    Source::Query(name.to_owned())
                } else {
                    Source::Path(name.to_owned())
                })
            }
            "body" => Ok(Source::Body(self.pointer_or_properties()?)),
            "payload" => Ok(Source::Payload(self.pointer_or_properties()?)),
            _ => {
                self.at = start;
                Err(self.error(
                    "expected `header.NAME`, `query.NAME`, `path.NAME`, `body` or `payload`",
                ))
            }
        }
    }
}

/// `identifier-strict`: `[A-Za-z0-9_-]`.
fn is_strict(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `identifier`: `[A-Za-z0-9._-]`.
fn is_identifier(c: char) -> bool {
    is_strict(c) || c == '.'
}

/// RFC 9110's `tchar`, what a header name is made of.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A string value as the specification reads it: a whole runtime expression (the value is the
/// expression's, of its type), or text with `{$…}` expressions embedded (the value is text).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Template {
    /// Text with no expression in it.
    Literal(String),
    /// One expression, the whole value.
    Expression(Expression),
    /// Text and embedded expressions, in order.
    Embedded(Vec<Part>),
}

/// A piece of an expression string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// Text as written.
    Text(String),
    /// A `{$…}` expression.
    Expression(Expression),
}

impl Template {
    /// Reads `text`: a value that starts with `$` and a letter is a runtime expression (it
    /// must parse); `{$` and a letter inside text opens an embedded one; anything else is
    /// text (`$5.00`, `{"json": true}`).
    ///
    /// ```
    /// use wayline_arazzo::expression::{Expression, Part, Template};
    ///
    /// assert_eq!(Template::parse("$statusCode").unwrap(), Template::Expression(Expression::StatusCode));
    /// let Template::Embedded(parts) = Template::parse("Bearer {$inputs.token}").unwrap() else { panic!() };
    /// assert_eq!(parts[0], Part::Text("Bearer ".into()));
    /// assert_eq!(Template::parse("{\"json\": true}").unwrap(), Template::Literal("{\"json\": true}".into()));
    /// ```
    pub fn parse(text: &str) -> Result<Template, ExpressionError> {
        if starts_expression(text) {
            return Expression::parse(text).map(Template::Expression);
        }
        let parts = embedded(text)?;
        if parts.iter().all(|part| matches!(part, Part::Text(_))) {
            return Ok(Template::Literal(text.to_owned()));
        }
        Ok(Template::Embedded(parts))
    }

    /// The expressions in it.
    pub fn expressions(&self) -> Vec<&Expression> {
        match self {
            Template::Literal(_) => Vec::new(),
            Template::Expression(expression) => vec![expression],
            Template::Embedded(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    Part::Expression(expression) => Some(expression),
                    Part::Text(_) => None,
                })
                .collect(),
        }
    }
}

/// Whether `text` begins a runtime expression: `$` and a letter.
pub(crate) fn starts_expression(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next() == Some('$') && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// The text and `{$…}` expressions of `text`.
pub(crate) fn embedded(text: &str) -> Result<Vec<Part>, ExpressionError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut at = 0;
    while let Some(found) = text[at..].find("{$") {
        let start = at + found;
        if !starts_expression(&text[start + 1..]) {
            literal.push_str(&text[at..start + 2]);
            at = start + 2;
            continue;
        }
        literal.push_str(&text[at..start]);
        let Some(close) = text[start..].find('}') else {
            return Err(ExpressionError {
                offset: text[..start].chars().count(),
                message: "`{$` opens an embedded expression that no `}` closes".to_owned(),
            });
        };
        let inner = &text[start + 1..start + close];
        let expression = Expression::parse(inner).map_err(|error| ExpressionError {
            offset: text[..=start].chars().count() + error.offset,
            message: error.message,
        })?;
        if !literal.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut literal)));
        }
        parts.push(Part::Expression(expression));
        at = start + close + 1;
    }
    literal.push_str(&text[at..]);
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, pointer: Option<&str>) -> Field {
        Field {
            name: name.into(),
            pointer: pointer.map(str::to_owned),
        }
    }

    #[test]
    fn every_form_of_the_abnf_parses() {
        let cases = [
            ("$url", Expression::Url),
            ("$method", Expression::Method),
            ("$statusCode", Expression::StatusCode),
            ("$self", Expression::SelfUri),
            (
                "$request.header.X-Api-Key",
                Expression::Request(Source::Header("X-Api-Key".into())),
            ),
            (
                "$request.query.page size",
                Expression::Request(Source::Query("page".into())),
            ),
            (
                "$request.path.id",
                Expression::Request(Source::Path("id".into())),
            ),
            (
                "$request.body#/user/uuid",
                Expression::Request(Source::Body(Some("/user/uuid".into()))),
            ),
            ("$response.body", Expression::Response(Source::Body(None))),
            (
                "$response.header.Retry-After",
                Expression::Response(Source::Header("Retry-After".into())),
            ),
            (
                "$message.payload#/status",
                Expression::Message(Source::Payload(Some("/status".into()))),
            ),
            (
                "$message.payload.user.id",
                Expression::Message(Source::Payload(Some("/user/id".into()))),
            ),
            (
                "$workflows.producer.steps.wait.outputs.userId",
                Expression::WorkflowStep {
                    workflow: "producer".into(),
                    step: "wait".into(),
                    output: Some(field("userId", None)),
                },
            ),
            (
                "$inputs.x-api-key",
                Expression::Inputs(field("x-api-key", None)),
            ),
            (
                "$inputs.user.name",
                Expression::Inputs(field("user.name", None)),
            ),
            (
                "$outputs.bar#/name",
                Expression::Outputs(field("bar", Some("/name"))),
            ),
            (
                "$steps.someStepId.outputs.pets#/0/id",
                Expression::Steps {
                    step: "someStepId".into(),
                    output: Some(field("pets", Some("/0/id"))),
                },
            ),
            (
                "$workflows.foo.inputs.username",
                Expression::Workflows {
                    workflow: "foo".into(),
                    part: WorkflowPart::Inputs,
                    field: field("username", None),
                },
            ),
            (
                "$sourceDescriptions.petstore.getPetById",
                Expression::SourceDescriptions {
                    source: "petstore".into(),
                    reference: "getPetById".into(),
                },
            ),
            (
                "$components.parameters.page.size",
                Expression::Components {
                    kind: ComponentKind::Parameters,
                    name: "page.size".into(),
                },
            ),
        ];
        for (text, expected) in cases {
            let parsed = if text.contains(' ') {
                // A query name runs to the end it is given.
                Expression::parse_prefix(text, text.find(' ').unwrap()).map(|(parsed, _)| parsed)
            } else {
                Expression::parse(text)
            };
            assert_eq!(parsed.as_ref(), Ok(&expected), "{text}");
        }
    }

    #[test]
    fn what_does_not_parse_says_what_was_expected_where() {
        let cases = [
            ("$step.a.outputs.b", 0, "did you mean `$steps`?"),
            ("$steps.a.output.b", 8, "expected `.outputs.NAME`"),
            ("$response.bodyx", 10, "expected `header.NAME`"),
            ("$response.body#id", 15, "starts with `/`"),
            ("$inputs.", 8, "expected a name"),
            ("$components.widgets.x", 12, "expected `parameters`"),
            ("$statusCode.x", 11, "unexpected `.x`"),
            ("statusCode", 0, "starts with `$`"),
            ("$response.body#/a~2b", 17, "`~0`"),
        ];
        for (text, offset, message) in cases {
            let error = Expression::parse(text).unwrap_err();
            assert!(error.message.contains(message), "{text}: {error}");
            assert_eq!(error.offset, offset, "{text}: {error}");
        }
    }

    #[test]
    fn templates_embed_expressions_in_text() {
        let Template::Embedded(parts) =
            Template::parse("https://{$inputs.host}/api/{$steps.create.outputs.id}/status")
                .unwrap()
        else {
            panic!("embedded");
        };
        assert_eq!(parts.len(), 5);
        assert_eq!(parts[0], Part::Text("https://".into()));
        assert_eq!(parts[4], Part::Text("/status".into()));
        assert_eq!(
            Template::parse("filter={$inputs.filter}&limit=20")
                .unwrap()
                .expressions(),
            [&Expression::Inputs(field("filter", None))]
        );
        let error = Template::parse("id={$inputs.id").unwrap_err();
        assert!(error.message.contains("no `}` closes"), "{error}");
        let error = Template::parse("a {$input.id} b").unwrap_err();
        assert_eq!(error.offset, 3, "{error}");
        assert_eq!(
            Template::parse("plain").unwrap(),
            Template::Literal("plain".into())
        );
    }
}

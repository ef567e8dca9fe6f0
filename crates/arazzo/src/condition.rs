//! The specification's simple condition language (`$statusCode == 200 && $response.body.data
//! != null`): literals, runtime expressions, `.` and `[]` access, comparisons, `!`, `&&`,
//! `||` and grouping, with its case and type rules.

use std::cmp::Ordering;

use serde_json::Value;

use crate::expression::{Expression, ExpressionError};

/// Where a condition's runtime expressions get their values.
pub trait Resolver {
    /// The value of `expression`, its JSON Pointer (if any) applied (`None`: nothing there,
    /// read as `null`).
    fn resolve(&self, expression: &Expression) -> Option<Value>;
}

/// A parsed simple condition.
///
/// ```
/// use serde_json::{json, Value};
/// use wayline_arazzo::condition::{Condition, Resolver};
/// use wayline_arazzo::expression::{Expression, Source};
///
/// struct Reply;
/// impl Resolver for Reply {
///     fn resolve(&self, expression: &Expression) -> Option<Value> {
///         let body = json!({"data": [1, 2], "state": "READY"});
///         match expression {
///             Expression::StatusCode => Some(json!(200)),
///             // `$response.body.state` reads as `$response.body#/state`.
///             Expression::Response(Source::Body(Some(pointer))) => body.pointer(pointer).cloned(),
///             _ => None,
///         }
///     }
/// }
/// let condition = Condition::parse("$statusCode == 200 && $response.body.state == 'ready'").unwrap();
/// assert!(condition.evaluate(&Reply));
/// assert!(Condition::parse("$response.body.data[1] >= '2'").unwrap().evaluate(&Reply));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    root: Node,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    Expression(Expression),
    Property(Box<Node>, String),
    Index(Box<Node>, Value),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Compare(Box<Node>, Comparison, Box<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
    NotEqual,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(Value),
    /// A runtime expression and the property names written after it (`.count`).
    Expression(Expression, Vec<String>),
    Compare(Comparison),
    Not,
    And,
    Or,
    Open,
    Close,
    OpenIndex,
    CloseIndex,
    Dot,
    Name(String),
}

impl Condition {
    /// Parses a condition.
    pub fn parse(text: &str) -> Result<Condition, ExpressionError> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens,
            at: 0,
            text,
        };
        let root = parser.or()?;
        if parser.at < parser.tokens.len() {
            return Err(parser.error("unexpected text after the condition"));
        }
        Ok(Condition { root })
    }

    /// Whether the condition passes: `true`, or a comparison or logical operator that holds;
    /// `false` and `null` fail (a number passes unless zero, a string unless empty, a list or
    /// mapping always).
    pub fn evaluate(&self, resolver: &dyn Resolver) -> bool {
        truthy(&value(&self.root, resolver))
    }

    /// The runtime expressions it reads.
    pub fn expressions(&self) -> Vec<&Expression> {
        let mut found = Vec::new();
        collect(&self.root, &mut found);
        found
    }
}

fn collect<'a>(node: &'a Node, found: &mut Vec<&'a Expression>) {
    match node {
        Node::Literal(_) => {}
        Node::Expression(expression) => found.push(expression),
        Node::Property(inner, _) | Node::Index(inner, _) | Node::Not(inner) => {
            collect(inner, found);
        }
        Node::And(left, right) | Node::Or(left, right) | Node::Compare(left, _, right) => {
            collect(left, found);
            collect(right, found);
        }
    }
}

/// The characters that end a runtime expression inside a condition.
fn ends_expression(c: char) -> bool {
    c.is_whitespace() || "()[]=!<>&|'".contains(c)
}

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, ExpressionError> {
    let error = |at: usize, message: &str| ExpressionError {
        offset: text[..at].chars().count(),
        message: message.to_owned(),
    };
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let c = rest.chars().next().unwrap_or(' ');
        if c.is_whitespace() {
            at += c.len_utf8();
            continue;
        }
        let two = rest.get(..2).unwrap_or("");
        let (token, length) = match (two, c) {
            ("==", _) => (Token::Compare(Comparison::Equal), 2),
            ("!=", _) => (Token::Compare(Comparison::NotEqual), 2),
            ("<=", _) => (Token::Compare(Comparison::LessOrEqual), 2),
            (">=", _) => (Token::Compare(Comparison::GreaterOrEqual), 2),
            ("&&", _) => (Token::And, 2),
            ("||", _) => (Token::Or, 2),
            (_, '<') => (Token::Compare(Comparison::Less), 1),
            (_, '>') => (Token::Compare(Comparison::Greater), 1),
            (_, '!') => (Token::Not, 1),
            (_, '(') => (Token::Open, 1),
            (_, ')') => (Token::Close, 1),
            (_, '[') => (Token::OpenIndex, 1),
            (_, ']') => (Token::CloseIndex, 1),
            (_, '.') => (Token::Dot, 1),
            (_, '=') => return Err(error(at, "`=` compares as `==`")),
            (_, '&') => return Err(error(at, "`&` is written `&&`")),
            (_, '|') => return Err(error(at, "`|` is written `||`")),
            (_, '\'') => {
                let (string, length) = quoted(rest).ok_or_else(|| {
                    error(
                        at,
                        "a string opened with `'` is not closed (a quote inside is `''`)",
                    )
                })?;
                (Token::Literal(Value::String(string)), length)
            }
            (_, '$') => {
                let end = rest.find(ends_expression).unwrap_or(rest.len());
                let (expression, used) =
                    Expression::parse_prefix(rest, end).map_err(|inner| ExpressionError {
                        offset: text[..at].chars().count() + inner.offset,
                        message: inner.message,
                    })?;
                // What the expression's grammar did not take is property access: `.count`.
                let tail = &rest[used..end];
                let mut names = Vec::new();
                if !tail.is_empty() {
                    let Some(properties) = tail.strip_prefix('.') else {
                        return Err(error(at + used, "expected `.NAME` after the expression"));
                    };
                    for name in properties.split('.') {
                        if name.is_empty() {
                            return Err(error(at + used, "an empty property name"));
                        }
                        names.push(name.to_owned());
                    }
                }
                (Token::Expression(expression, names), end)
            }
            (_, c) if c.is_ascii_digit() || c == '-' => {
                let length = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
                    .unwrap_or(rest.len());
                let number: serde_json::Number = rest[..length]
                    .parse()
                    .map_err(|_| error(at, &format!("`{}` is not a number", &rest[..length])))?;
                (Token::Literal(Value::Number(number)), length)
            }
            (_, c) if c.is_alphabetic() || c == '_' => {
                let length = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(rest.len());
                let word = &rest[..length];
                let token = match word {
                    "true" => Token::Literal(Value::Bool(true)),
                    "false" => Token::Literal(Value::Bool(false)),
                    "null" => Token::Literal(Value::Null),
                    _ => Token::Name(word.to_owned()),
                };
                (token, length)
            }
            _ => return Err(error(at, &format!("unexpected `{c}`"))),
        };
        tokens.push((token, at));
        at += length;
    }
    Ok(tokens)
}

/// The string in `text` (which starts with `'`), `''` read as one quote, and its length.
fn quoted(text: &str) -> Option<(String, usize)> {
    let mut string = String::new();
    let mut chars = text.char_indices().skip(1).peekable();
    while let Some((index, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().is_some_and(|(_, next)| *next == '\'') {
                chars.next();
                string.push('\'');
                continue;
            }
            return Some((string, index + 1));
        }
        string.push(c);
    }
    None
}

struct Parser<'a> {
    tokens: Vec<(Token, usize)>,
    at: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ExpressionError {
        let offset = self
            .tokens
            .get(self.at)
            .map_or(self.text.len(), |(_, at)| *at);
        ExpressionError {
            offset: self.text[..offset].chars().count(),
            message: message.to_owned(),
        }
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(token, _)| token)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).map(|(token, _)| token.clone());
        self.at += 1;
        token
    }

    fn or(&mut self) -> Result<Node, ExpressionError> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            left = Node::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, ExpressionError> {
        let mut left = self.not()?;
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            left = Node::And(Box::new(left), Box::new(self.not()?));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, ExpressionError> {
        if self.peek() == Some(&Token::Not) {
            self.at += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        let left = self.access()?;
        if let Some(Token::Compare(comparison)) = self.peek() {
            let comparison = *comparison;
            self.at += 1;
            let right = self.access()?;
            return Ok(Node::Compare(Box::new(left), comparison, Box::new(right)));
        }
        Ok(left)
    }

    /// A primary value and the `.name` and `[index]` accesses after it.
    fn access(&mut self) -> Result<Node, ExpressionError> {
        let mut node = self.primary()?;
        loop {
            match self.peek() {
                Some(Token::Dot) => {
                    self.at += 1;
                    match self.next() {
                        Some(Token::Name(name)) => node = Node::Property(Box::new(node), name),
                        _ => {
                            self.at -= 1;
                            return Err(self.error("expected a property name after `.`"));
                        }
                    }
                }
                Some(Token::OpenIndex) => {
                    self.at += 1;
                    let index = match self.next() {
                        Some(Token::Literal(index @ (Value::Number(_) | Value::String(_)))) => {
                            index
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.error("an index is a number or a quoted string"));
                        }
                    };
                    if self.next() != Some(Token::CloseIndex) {
                        self.at -= 1;
                        return Err(self.error("expected `]`"));
                    }
                    node = Node::Index(Box::new(node), index);
                }
                _ => return Ok(node),
            }
        }
    }

    fn primary(&mut self) -> Result<Node, ExpressionError> {
        match self.next() {
            Some(Token::Literal(value)) => Ok(Node::Literal(value)),
            Some(Token::Expression(expression, names)) => Ok(names
                .into_iter()
                .fold(Node::Expression(expression), |node, name| {
                    Node::Property(Box::new(node), name)
                })),
            Some(Token::Open) => {
                let inner = self.or()?;
                if self.next() != Some(Token::Close) {
                    self.at -= 1;
                    return Err(self.error("expected `)`"));
                }
                Ok(inner)
            }
            Some(Token::Name(name)) => {
                self.at -= 1;
                Err(self.error(&format!(
                    "`{name}` is neither a literal nor a runtime expression (strings are quoted: '{name}')"
                )))
            }
            _ => {
                self.at -= 1;
                Err(self.error("expected a value: a literal, a runtime expression or `(`"))
            }
        }
    }
}

fn value(node: &Node, resolver: &dyn Resolver) -> Value {
    match node {
        Node::Literal(value) => value.clone(),
        Node::Expression(expression) => resolver.resolve(expression).unwrap_or(Value::Null),
        Node::Property(inner, name) => match value(inner, resolver) {
            Value::Object(mut map) => map.remove(name).unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Node::Index(inner, index) => match (value(inner, resolver), index) {
            (Value::Array(mut items), Value::Number(number)) => number
                .as_u64()
                .and_then(|index| usize::try_from(index).ok())
                .filter(|index| *index < items.len())
                .map_or(Value::Null, |index| items.swap_remove(index)),
            (Value::Object(mut map), Value::String(key)) => map.remove(key).unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Node::Not(inner) => Value::Bool(!truthy(&value(inner, resolver))),
        Node::And(left, right) => {
            Value::Bool(truthy(&value(left, resolver)) && truthy(&value(right, resolver)))
        }
        Node::Or(left, right) => {
            Value::Bool(truthy(&value(left, resolver)) || truthy(&value(right, resolver)))
        }
        Node::Compare(left, comparison, right) => {
            let (left, right) = (value(left, resolver), value(right, resolver));
            Value::Bool(match comparison {
                Comparison::Equal => loosely_equal(&left, &right),
                Comparison::NotEqual => !loosely_equal(&left, &right),
                Comparison::Less => order(&left, &right) == Some(Ordering::Less),
                Comparison::LessOrEqual => {
                    matches!(order(&left, &right), Some(Ordering::Less | Ordering::Equal))
                }
                Comparison::Greater => order(&left, &right) == Some(Ordering::Greater),
                Comparison::GreaterOrEqual => {
                    matches!(
                        order(&left, &right),
                        Some(Ordering::Greater | Ordering::Equal)
                    )
                }
            })
        }
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|number| number != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// A number, or a string that reads as one (numeric strings compare as numbers).
fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// `==`: `null` equals only `null`; numbers (and numeric strings beside a number) by value;
/// strings without case; booleans beside `'true'`/`'false'`; lists and mappings as they are.
fn loosely_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::String(a), Value::String(b)) => a.to_lowercase() == b.to_lowercase(),
        (Value::Number(_), _) | (_, Value::Number(_)) => {
            matches!((numeric(left), numeric(right)), (Some(a), Some(b)) if a == b)
        }
        (Value::Bool(flag), Value::String(text)) | (Value::String(text), Value::Bool(flag)) => {
            text.eq_ignore_ascii_case(if *flag { "true" } else { "false" })
        }
        _ => left == right,
    }
}

/// The order of two values: numbers (numeric strings included) by value, strings without
/// case; `None` for anything else (so `<` and `>` fail, `null` included).
fn order(left: &Value, right: &Value) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (numeric(left), numeric(right))
        && (left.is_number() || right.is_number())
    {
        return a.partial_cmp(&b);
    }
    match (left, right) {
        (Value::String(a), Value::String(b)) => Some(a.to_lowercase().cmp(&b.to_lowercase())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::expression::{Field, Source};

    struct Context;

    impl Resolver for Context {
        fn resolve(&self, expression: &Expression) -> Option<Value> {
            match expression {
                Expression::StatusCode => Some(json!(201)),
                Expression::Response(Source::Body(pointer)) => {
                    let body = json!({
                        "count": 3, "state": "Ready", "items": [{"id": "a"}, {"id": "b"}],
                        "nothing": null, "limit": "10"
                    });
                    match pointer {
                        None => Some(body),
                        Some(pointer) => body.pointer(pointer).cloned(),
                    }
                }
                Expression::Response(Source::Header(name)) if name == "Content-Type" => {
                    Some(json!("application/json"))
                }
                Expression::Inputs(Field { name, .. }) if name == "threshold" => Some(json!(2)),
                _ => None,
            }
        }
    }

    fn holds(text: &str) -> bool {
        Condition::parse(text)
            .unwrap_or_else(|error| panic!("{text}: {error}"))
            .evaluate(&Context)
    }

    #[test]
    fn comparisons_follow_the_specifications_type_rules() {
        for passes in [
            "$statusCode == 201",
            "$statusCode >= 200 && $statusCode < 300",
            "$response.body.count > $inputs.threshold",
            "$response.body.state == 'READY'",
            "$response.body.state != 'failed'",
            "$response.body.limit == 10",
            "$response.body.limit > 9",
            "$response.body.items[1].id == 'b'",
            "$response.body.items[0]['id'] == 'A'",
            "$response.body.nothing == null",
            "$response.body.items != null",
            "$response.header.Content-Type == 'application/json'",
            "!($statusCode == 500) || false",
            "'it''s' == 'IT''S'",
            "$response.body.count",
        ] {
            assert!(holds(passes), "{passes}");
        }
        for fails in [
            "$statusCode == 200",
            "$response.body.nothing",
            "$response.body.missing > 0",
            "$response.body.nothing < 1",
            "$request.body == 1",
            "null == false",
            "$response.body.items[5].id == 'b'",
            "$statusCode == 201 && $response.body.state == 'busy'",
        ] {
            assert!(!holds(fails), "{fails}");
        }
    }

    #[test]
    fn precedence_is_not_then_comparison_then_and_then_or() {
        assert!(holds("false && false || true"));
        assert!(!holds("false && (false || true)"));
        assert!(holds("!false && $statusCode == 201"));
    }

    #[test]
    fn mistakes_are_reported_where_they_are() {
        let cases = [
            ("$statusCode = 200", 12, "`==`"),
            ("$statusCode == 'open", 15, "not closed"),
            ("$response.body.state == ready", 24, "strings are quoted"),
            ("($statusCode == 200", 19, "expected `)`"),
            ("$statuscode == 200", 0, "did you mean `$statusCode`?"),
            ("$response.body[x] == 1", 15, "an index is"),
            ("$statusCode == 200 200", 19, "unexpected text"),
        ];
        for (text, offset, message) in cases {
            let error = Condition::parse(text).unwrap_err();
            assert!(error.message.contains(message), "{text}: {error}");
            assert_eq!(error.offset, offset, "{text}: {error}");
        }
    }

    #[test]
    fn the_expressions_read_are_listed() {
        let condition =
            Condition::parse("$statusCode == 200 && $inputs.a.b != $steps.s.outputs.o").unwrap();
        assert_eq!(condition.expressions().len(), 3);
    }
}

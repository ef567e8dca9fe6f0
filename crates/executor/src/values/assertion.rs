//! A step's `expect`, compiled once and checked against each response it settles on: the
//! status, header and body checks, the duration limit and the CEL assertions. Each gives an
//! [`AssertionResult`]; the step fails when one did not hold, its error naming each failure with
//! what was expected and what came (cut to [`MAX_SHOWN`] bytes, secrets masked by the caller).

use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use wayline_core::expect::{Check, Expect, JsonType, StatusSet};
use wayline_core::{AssertionResult, Expression};

use crate::values::eval::{self, ResponseView, Scope};
use crate::values::extract::Path;
use crate::values::redact::cut;

/// The most of a value an assertion result shows.
pub(crate) const MAX_SHOWN: usize = 120;

/// One check, its regular expression compiled.
#[derive(Debug, Clone)]
struct Compiled {
    check: Check,
    regex: Option<Regex>,
}

impl Compiled {
    fn compile(check: &Check, subject: &str) -> Result<Compiled, String> {
        let pattern = match check {
            Check::Ops(ops) => ops.matches.as_deref(),
            _ => None,
        };
        let regex = pattern
            .map(|pattern| {
                Regex::new(pattern).map_err(|error| {
                    format!(
                        "`expect` of {subject}: invalid regular expression `{pattern}`: {error}"
                    )
                })
            })
            .transpose()?;
        Ok(Compiled {
            check: check.clone(),
            regex,
        })
    }
}

/// A step's expectations, ready to check.
#[derive(Debug, Default)]
pub(crate) struct Assertions {
    status: Option<StatusSet>,
    headers: Vec<(String, Compiled)>,
    body: Vec<(Path, Compiled)>,
    max_duration_ms: Option<u64>,
    asserts: Vec<Expression>,
}

impl Assertions {
    /// Compiles `expect` (its CEL assertions, compiled with the step's other expressions, come
    /// as `asserts`); the problems found otherwise.
    pub(crate) fn compile(
        expect: &Expect,
        asserts: Vec<Expression>,
    ) -> Result<Assertions, Vec<String>> {
        let mut problems = Vec::new();
        let headers = expect
            .headers
            .iter()
            .filter_map(|(name, check)| {
                let subject = format!("header `{name}`");
                Compiled::compile(check, &subject)
                    .map_err(|problem| problems.push(problem))
                    .ok()
                    .map(|compiled| (name.to_ascii_lowercase(), compiled))
            })
            .collect();
        let body = expect
            .body
            .iter()
            .filter_map(|(source, check)| {
                let path = Path::compile(source)
                    .map_err(|error| {
                        problems.push(format!("`expect.body` path `{source}`: {error}"))
                    })
                    .ok()?;
                Compiled::compile(check, &format!("body `{source}`"))
                    .map_err(|problem| problems.push(problem))
                    .ok()
                    .map(|compiled| (path, compiled))
            })
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Assertions {
            status: expect.status.clone(),
            headers,
            body,
            max_duration_ms: expect.max_duration_ms,
            asserts,
        })
    }

    /// The statuses the step expects, when it says.
    pub(crate) fn status(&self) -> Option<&StatusSet> {
        self.status.as_ref()
    }

    /// The result of the status check for `status`.
    pub(crate) fn status_result(&self, status: u16) -> Option<AssertionResult> {
        self.status.as_ref().map(|expected| {
            AssertionResult::new("status", "in", expected.matches(status))
                .values(expected.to_string(), status.to_string())
        })
    }

    /// Checks a response, answered by an attempt that took `duration`, as `scope` holds it
    /// (its `response` set): headers, body, duration, then the CEL assertions. The status was
    /// checked when the response came ([`status_result`](Self::status_result)).
    pub(crate) fn check(&self, scope: Scope<'_>, duration: Duration) -> Vec<AssertionResult> {
        let mut results = Vec::new();
        let Some(view) = scope.response else {
            return results;
        };
        for (name, compiled) in &self.headers {
            let actual = header(view, name).map(Value::from);
            results.extend(judge(
                &format!("header {name}"),
                compiled,
                actual.as_ref(),
                true,
            ));
        }
        for (path, compiled) in &self.body {
            let actual = path.extract(view.body);
            let subject = format!("body {}", path.source());
            results.extend(judge(&subject, compiled, actual.as_ref(), false));
        }
        if let Some(limit) = self.max_duration_ms {
            let took = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
            results.push(
                AssertionResult::new("duration_ms", "at most", took <= limit)
                    .values(limit.to_string(), took.to_string()),
            );
        }
        for expression in &self.asserts {
            let subject = format!("assert `{}`", expression.source());
            results.push(match eval::condition(expression, scope) {
                Ok(holds) => AssertionResult::new(subject, "holds", holds),
                Err(error) => AssertionResult::new(subject, "holds", false).values("true", error),
            });
        }
        results
    }
}

/// A header's value (names compare in any case; the first of several).
fn header<'a>(view: ResponseView<'a>, name: &str) -> Option<&'a str> {
    view.headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// The error of a step whose assertions failed: each failure, in order.
pub(crate) fn failure_message(results: &[AssertionResult]) -> Option<String> {
    let failed: Vec<String> = results
        .iter()
        .filter(|result| !result.passed)
        .map(ToString::to_string)
        .collect();
    (!failed.is_empty()).then(|| format!("expectation failed: {}", failed.join("; ")))
}

/// What `check` finds of `actual` (`None`: nothing at the path), for `subject`. Header values
/// compare as text: a number or boolean expected matches its text.
fn judge(
    subject: &str,
    compiled: &Compiled,
    actual: Option<&Value>,
    text_only: bool,
) -> Vec<AssertionResult> {
    let shown = |value: Option<&Value>| match value {
        None => "nothing".to_owned(),
        Some(value) => show(value),
    };
    let ops = match &compiled.check {
        Check::Equals(expected) => {
            let passed = actual.is_some_and(|actual| same(actual, expected, text_only));
            return vec![
                AssertionResult::new(subject, "equals", passed)
                    .values(show(expected), shown(actual)),
            ];
        }
        Check::Ops(ops) => ops,
        _ => return Vec::new(),
    };
    let mut results = Vec::new();
    let came = shown(actual);
    let mut push = |check: &str, passed: bool, expected: String, actual: String| {
        results.push(AssertionResult::new(subject, check, passed).values(expected, actual));
    };
    if let Some(expected) = &ops.equals {
        let passed = actual.is_some_and(|actual| same(actual, expected, text_only));
        push("equals", passed, show(expected), came.clone());
    }
    if let Some(expected) = &ops.not_equals {
        let passed = actual.is_some_and(|actual| !same(actual, expected, text_only));
        push("not_equals", passed, show(expected), came.clone());
    }
    if let Some(expected) = &ops.contains {
        let passed = actual.is_some_and(|actual| holds(actual, expected, text_only));
        push("contains", passed, show(expected), came.clone());
    }
    if let (Some(pattern), Some(regex)) = (&ops.matches, &compiled.regex) {
        let passed = matches!(actual, Some(Value::String(text)) if regex.is_match(text));
        push(
            "matches",
            passed,
            show(&Value::from(pattern.as_str())),
            came.clone(),
        );
    }
    if let Some(wanted) = ops.exists {
        push(
            "exists",
            actual.is_some() == wanted,
            wanted.to_string(),
            came.clone(),
        );
    }
    if let Some(kind) = ops.type_ {
        // Say the type that came rather than the value.
        let type_came = actual.map_or_else(
            || came.clone(),
            |actual| JsonType::of(actual).as_str().to_owned(),
        );
        let passed = actual.is_some_and(|actual| kind.admits(actual));
        push("type", passed, kind.as_str().to_owned(), type_came);
    }
    if let Some(length) = ops.length {
        let found = actual.and_then(length_of);
        let length_came = found.map_or_else(|| came.clone(), |found| found.to_string());
        push(
            "length",
            found == Some(length),
            length.to_string(),
            length_came,
        );
    }
    let number = actual.and_then(|actual| number_of(actual, text_only));
    for (check, bound) in [
        ("gt", ops.gt),
        ("gte", ops.gte),
        ("lt", ops.lt),
        ("lte", ops.lte),
    ] {
        if let Some(bound) = bound {
            let passed = number.is_some_and(|number| compare(check, number, bound));
            push(check, passed, show(&Value::from(bound)), came.clone());
        }
    }
    results
}

/// Whether `number` is `check` (`gt`, `gte`, `lt`, `lte`) of `bound`.
fn compare(check: &str, number: f64, bound: f64) -> bool {
    match check {
        "gt" => number > bound,
        "gte" => number >= bound,
        "lt" => number < bound,
        _ => number <= bound,
    }
}

/// `value` as JSON text, cut to [`MAX_SHOWN`] bytes.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_SHOWN {
        text
    } else {
        format!("{}…", cut(&text, MAX_SHOWN))
    }
}

/// Equality, numbers by value (`1` equals `1.0`); with `text_only`, a scalar expected against
/// a string compares as text.
fn same(actual: &Value, expected: &Value, text_only: bool) -> bool {
    match (actual, expected) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(_) | Value::Bool(_)) if text_only => {
            a.as_str() == expected.to_string().as_str()
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b, false))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same(a, b, false)))
        }
        _ => actual == expected,
    }
}

/// `contains`: a substring of a string, an element of a list, a key of an object.
fn holds(actual: &Value, expected: &Value, text_only: bool) -> bool {
    match (actual, expected) {
        (Value::String(text), Value::String(part)) => text.contains(part.as_str()),
        (Value::String(text), other) if text_only => text.contains(&other.to_string()),
        (Value::Array(items), _) => items.iter().any(|item| same(item, expected, false)),
        (Value::Object(fields), Value::String(key)) => fields.contains_key(key),
        _ => false,
    }
}

fn length_of(value: &Value) -> Option<u64> {
    match value {
        Value::String(text) => Some(text.chars().count() as u64),
        Value::Array(items) => Some(items.len() as u64),
        Value::Object(fields) => Some(fields.len() as u64),
        _ => None,
    }
}

fn number_of(value: &Value, text_only: bool) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) if text_only => text.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wayline_core::document::{Format, parse};

    use super::*;

    fn check(yaml: &str) -> Compiled {
        let check: Check = parse(yaml, Format::Yaml, "c.yaml").unwrap();
        Compiled::compile(&check, "x").unwrap()
    }

    fn passed(results: &[AssertionResult]) -> Vec<bool> {
        results.iter().map(|result| result.passed).collect()
    }

    #[test]
    fn plain_values_are_equality_numbers_by_value() {
        let results = judge("body `n`", &check("1"), Some(&json!(1.0)), false);
        assert_eq!(passed(&results), [true]);
        let results = judge("body `n`", &check("Ada"), Some(&json!("Bob")), false);
        assert_eq!(
            results[0].to_string(),
            r#"body `n` equals: expected "Ada", got "Bob""#
        );
        let results = judge("body `n`", &check("Ada"), None, false);
        assert_eq!(results[0].actual.as_deref(), Some("nothing"));
    }

    #[test]
    fn every_operator_is_judged() {
        let results = judge(
            "body `x`",
            &check("{contains: b, matches: '^a', type: string, length: 3, not_equals: abd}"),
            Some(&json!("abc")),
            false,
        );
        assert_eq!(passed(&results), [true, true, true, true, true]);
        let results = judge(
            "body `x`",
            &check("{gt: 1, gte: 2, lt: 2, lte: 1}"),
            Some(&json!(2)),
            false,
        );
        assert_eq!(passed(&results), [true, true, false, false]);
        let results = judge(
            "body `x`",
            &check("{contains: 2, length: 2}"),
            Some(&json!([1, 2.0])),
            false,
        );
        assert_eq!(passed(&results), [true, true]);
        let results = judge(
            "body `x`",
            &check("{contains: id}"),
            Some(&json!({"id": 1})),
            false,
        );
        assert_eq!(passed(&results), [true]);
        let results = judge("body `x`", &check("{exists: false}"), None, false);
        assert_eq!(passed(&results), [true]);
        let results = judge(
            "body `x`",
            &check("{type: integer}"),
            Some(&json!("7")),
            false,
        );
        assert_eq!(
            (results[0].passed, results[0].actual.as_deref()),
            (false, Some("string"))
        );
        // Nothing at the path fails every check but `exists: false`.
        let results = judge(
            "body `x`",
            &check("{gt: 1, type: 'null', matches: x}"),
            None,
            false,
        );
        assert_eq!(passed(&results), [false, false, false]);
    }

    #[test]
    fn headers_compare_as_text() {
        let length = Some(json!("12"));
        assert_eq!(
            passed(&judge("header", &check("12"), length.as_ref(), true)),
            [true]
        );
        assert_eq!(
            passed(&judge("header", &check("{lt: 13}"), length.as_ref(), true)),
            [true]
        );
        assert_eq!(
            passed(&judge("body", &check("12"), length.as_ref(), false)),
            [false]
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = json!("x".repeat(500));
        let results = judge("body `x`", &check("short"), Some(&long), false);
        let shown = results[0].actual.as_deref().unwrap();
        assert!(
            shown.len() <= MAX_SHOWN + 4 && shown.ends_with('…'),
            "{shown}"
        );
    }

    #[test]
    fn a_bad_regular_expression_is_found_when_compiled() {
        let expect: Expect = parse("body: {x: {matches: '('}}", Format::Yaml, "e.yaml").unwrap();
        let problems = Assertions::compile(&expect, Vec::new()).unwrap_err();
        assert!(
            problems[0].contains("invalid regular expression"),
            "{problems:?}"
        );
        let expect: Expect = parse("body: {'$[': 1}", Format::Yaml, "e.yaml").unwrap();
        assert!(Assertions::compile(&expect, Vec::new()).is_err());
    }
}

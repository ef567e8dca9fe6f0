//! Whether a Criterion Object holds: simple conditions, regular expressions, JSONPath queries
//! and XPath 3.1 queries (feature `xpath`, by Xee; decision 106) over a context, as the
//! specification's "Condition Evaluation" says. What cannot be evaluated (a JSON Pointer
//! "criterion", XPath in a build without it) is an error that says so, never a silent pass.

use serde_json::Value;

use crate::condition::{Condition, Resolver};
use crate::expression::{Expression, ExpressionError, Part, embedded};
use crate::model::{Criterion, CriterionKind, CriterionType, ExpressionKind};
use crate::runtime::{Values, as_text};

/// Why a criterion could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CriterionError {
    /// A runtime expression, or the condition, does not parse.
    #[error("`{text}`: {error}")]
    Expression {
        /// What was written.
        text: String,
        /// Why it does not parse.
        error: ExpressionError,
    },
    /// A regular expression or JSONPath query that does not compile.
    #[error("`{condition}` is not a valid {kind}: {reason}")]
    Invalid {
        /// The condition, its expressions substituted.
        condition: String,
        /// `regular expression` or `JSONPath query`.
        kind: &'static str,
        /// Why.
        reason: String,
    },
    /// A criterion of a type wayline does not evaluate.
    #[error(
        "{0} criteria are not evaluated by wayline; write the check as a simple, regex or jsonpath criterion"
    )]
    Unsupported(&'static str),
    /// An XPath criterion whose context is not an XML document.
    #[error("the context `{context}` of an XPath criterion is not an XML document: {reason}")]
    NotXml {
        /// The context as written.
        context: String,
        /// Why it does not parse as XML.
        reason: String,
    },
    /// An evaluation given up: its run was cancelled or passed its deadline, or it took longer
    /// than allowed.
    #[error("not evaluated: {0}")]
    Stopped(String),
    /// A regex, JSONPath or XPath criterion without `context`.
    #[error("a {0} criterion needs `context`: the runtime expression it applies to")]
    NoContext(&'static str),
}

/// Whether `criterion` holds for `values`.
///
/// ```
/// use serde_json::json;
/// use wayline_arazzo::criteria::passes;
/// use wayline_arazzo::runtime::{Exchange, Values};
///
/// let criterion = serde_json::from_value(json!({
///     "context": "$response.body", "type": "jsonpath",
///     "condition": "$.pets[?(@.status == 'available')]"
/// })).unwrap();
/// let mut values = Values::default();
/// values.response = Some(Exchange::new(vec![], Some(json!({"pets": [{"status": "available"}]}))));
/// assert!(passes(&criterion, &values).unwrap());
/// ```
pub fn passes(criterion: &Criterion, values: &Values) -> Result<bool, CriterionError> {
    passes_within(criterion, values, &|| false)
}

/// [`passes`] for a run: an XPath evaluation is given up when `stop` says the run stopped
/// (cancelled, or past its deadline).
pub(crate) fn passes_within(
    criterion: &Criterion,
    values: &Values,
    stop: crate::xpath::Stop<'_>,
) -> Result<bool, CriterionError> {
    let kind = match &criterion.kind {
        None | Some(CriterionType::Named(CriterionKind::Simple)) => {
            let condition = Condition::parse(&criterion.condition).map_err(|error| {
                CriterionError::Expression {
                    text: criterion.condition.clone(),
                    error,
                }
            })?;
            return Ok(condition.evaluate(values));
        }
        Some(CriterionType::Named(CriterionKind::Regex)) => "regex",
        Some(CriterionType::Named(CriterionKind::Jsonpath))
        | Some(CriterionType::Versioned(crate::model::ExpressionType {
            kind: ExpressionKind::Jsonpath,
            ..
        })) => "jsonpath",
        Some(CriterionType::Versioned(crate::model::ExpressionType {
            kind: ExpressionKind::Jsonpointer,
            ..
        })) => return Err(CriterionError::Unsupported("JSON Pointer")),
        Some(_) => "xpath",
    };
    let context = criterion
        .context
        .as_deref()
        .ok_or(CriterionError::NoContext(kind))?;
    let expression = Expression::parse(context).map_err(|error| CriterionError::Expression {
        text: context.to_owned(),
        error,
    })?;
    // A whole body is read where it is (bodies can be large); anything else is resolved.
    let resolved;
    let subject = match values.body(&expression) {
        Some(body) => body,
        None => {
            resolved = values.resolve(&expression).unwrap_or(Value::Null);
            &resolved
        }
    };
    let condition = substitute(&criterion.condition, values)?;
    if kind == "xpath" {
        // The context is XML text: a body kept as text, or a string value.
        if subject.is_null() {
            return Ok(false);
        }
        return crate::xpath::holds(as_text(subject), condition.clone(), stop).map_err(|error| {
            match error {
                crate::xpath::XPathError::NotBuilt => CriterionError::Unsupported("XPath"),
                crate::xpath::XPathError::Document(reason) => CriterionError::NotXml {
                    context: context.to_owned(),
                    reason,
                },
                crate::xpath::XPathError::Query(reason) => CriterionError::Invalid {
                    condition: condition.clone(),
                    kind: "XPath query",
                    reason,
                },
                crate::xpath::XPathError::Stopped(reason) => CriterionError::Stopped(reason),
            }
        });
    }
    if kind == "regex" {
        let pattern = regex::Regex::new(&condition).map_err(|error| CriterionError::Invalid {
            condition: condition.clone(),
            kind: "regular expression",
            reason: error.to_string(),
        })?;
        return Ok(!subject.is_null() && pattern.is_match(&as_text(subject)));
    }
    let query = jsonpath_rust::parser::parse_json_path(&condition).map_err(|error| {
        CriterionError::Invalid {
            condition: condition.clone(),
            kind: "JSONPath query",
            reason: error.to_string(),
        }
    })?;
    // A body kept as text that is JSON is queried as JSON.
    let parsed;
    let subject = match subject {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(json) => {
                parsed = json;
                &parsed
            }
            Err(_) => subject,
        },
        other => other,
    };
    Ok(jsonpath_rust::query::js_path_process(&query, subject).is_ok_and(|nodes| !nodes.is_empty()))
}

/// `condition` with its `{$…}` expressions replaced by their values, as text.
fn substitute(condition: &str, values: &Values) -> Result<String, CriterionError> {
    let parts = embedded(condition).map_err(|error| CriterionError::Expression {
        text: condition.to_owned(),
        error,
    })?;
    Ok(parts
        .into_iter()
        .map(|part| match part {
            Part::Text(text) => text,
            Part::Expression(expression) => {
                as_text(&values.resolve(&expression).unwrap_or(Value::Null))
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::runtime::Exchange;

    fn criterion(value: Value) -> Criterion {
        serde_json::from_value(value).unwrap()
    }

    fn values() -> Values {
        Values {
            status: Some(200),
            inputs: Map::from_iter([("status".to_owned(), json!("sold"))]),
            response: Some(Exchange::new(
                vec![("X-Trace".to_owned(), "abc-123".to_owned())],
                Some(json!({"pets": [{"name": "rex", "status": "sold"}], "state": "READY"})),
            )),
            ..Values::default()
        }
    }

    #[test]
    fn each_kind_of_criterion_holds_or_not() {
        let values = values();
        let cases = [
            (json!({"condition": "$statusCode == 200"}), true),
            (
                json!({"condition": "$response.body.state == 'ready'", "type": "simple", "context": "$response.body"}),
                true,
            ),
            (
                json!({"condition": "^abc-\\d+$", "context": "$response.header.X-Trace", "type": "regex"}),
                true,
            ),
            (
                json!({"condition": "^({$inputs.status})$", "context": "$response.body#/pets/0/status", "type": "regex"}),
                true,
            ),
            (
                json!({"condition": "^xyz", "context": "$response.header.X-Trace", "type": "regex"}),
                false,
            ),
            (
                json!({"condition": "^x", "context": "$response.header.Missing", "type": "regex"}),
                false,
            ),
            (
                json!({"condition": "$.pets[?(@.status == '{$inputs.status}')]", "context": "$response.body", "type": "jsonpath"}),
                true,
            ),
            (
                json!({"condition": "$.pets[?(@.status == 'available')]", "context": "$response.body", "type": {"type": "jsonpath", "version": "rfc9535"}}),
                false,
            ),
        ];
        for (written, expected) in cases {
            assert_eq!(
                passes(&criterion(written.clone()), &values),
                Ok(expected),
                "{written}"
            );
        }
    }

    #[cfg(feature = "xpath")]
    #[test]
    fn xpath_criteria_query_an_xml_body() {
        let mut values = values();
        values.response = Some(Exchange::new(
            vec![],
            Some(Value::String(
                "<pets><pet status='available'>rex</pet><pet status='sold'>ada</pet></pets>"
                    .to_owned(),
            )),
        ));
        let holds = |condition: &str| {
            passes(
                &criterion(
                    json!({"condition": condition, "context": "$response.body", "type": "xpath"}),
                ),
                &values,
            )
        };
        assert_eq!(holds("/pets/pet[@status = '{$inputs.status}']"), Ok(true));
        assert_eq!(holds("/pets/pet[@status = 'lost']"), Ok(false));
        assert_eq!(holds("count(//pet) = 2"), Ok(true));
        let versioned = criterion(
            json!({"condition": "//pet", "context": "$response.body", "type": {"type": "xpath", "version": "xpath-30"}}),
        );
        assert_eq!(passes(&versioned, &values), Ok(true));
    }

    #[test]
    fn what_cannot_be_evaluated_is_an_error_not_a_pass() {
        let values = values();
        // The body is JSON, not XML.
        let xpath =
            criterion(json!({"condition": "/a", "context": "$response.body", "type": "xpath"}));
        #[cfg(feature = "xpath")]
        assert!(matches!(
            passes(&xpath, &values),
            Err(CriterionError::NotXml { .. })
        ));
        #[cfg(not(feature = "xpath"))]
        assert_eq!(
            passes(&xpath, &values),
            Err(CriterionError::Unsupported("XPath"))
        );
        let pointer = criterion(
            json!({"condition": "/a", "context": "$response.body", "type": {"type": "jsonpointer", "version": "rfc6901"}}),
        );
        assert_eq!(
            passes(&pointer, &values),
            Err(CriterionError::Unsupported("JSON Pointer"))
        );
        let bad_regex =
            criterion(json!({"condition": "(", "context": "$response.body", "type": "regex"}));
        assert!(matches!(
            passes(&bad_regex, &values),
            Err(CriterionError::Invalid {
                kind: "regular expression",
                ..
            })
        ));
        let bad_path =
            criterion(json!({"condition": "$.[", "context": "$response.body", "type": "jsonpath"}));
        assert!(matches!(
            passes(&bad_path, &values),
            Err(CriterionError::Invalid {
                kind: "JSONPath query",
                ..
            })
        ));
        let bad_condition = criterion(json!({"condition": "$statusCode = 200"}));
        assert!(matches!(
            passes(&bad_condition, &values),
            Err(CriterionError::Expression { .. })
        ));
        let no_context = criterion(json!({"condition": "x", "type": "regex"}));
        assert_eq!(
            passes(&no_context, &values),
            Err(CriterionError::NoContext("regex"))
        );
    }
}

//! What a step expects of its response (the extension `expect`): the status, headers, values
//! in the body, how long the call may take, and CEL assertions. The executor checks them after
//! the call; a step whose expectations fail fails, naming each one that did with what was
//! expected and what came.
//!
//! ```yaml
//! expect:
//!   status: 201                  # a code, a class ("4xx"), or a list of them
//!   headers:
//!     content-type: {contains: json}
//!   body:                        # path (dot, JSONPath or JSON Pointer) → check
//!     $.id: {exists: true, type: integer}
//!     name: Ada                  # a value that is no mapping means `equals`
//!     items: {length: 3}
//!     items.0.price: {gt: 10, lte: 100}
//!     email: {matches: "^[^@]+@[^@]+$"}
//!   max_duration_ms: 500
//!   assert:                      # CEL over status, headers, body, steps and inputs
//!     - "body.id > 0"
//! ```
//!
//! A mapping given as a check is always read as operators; to compare with an object, write
//! `{equals: {...}}`. With `status` set, the statuses it names are the step's successes, a 4xx
//! among them: a step expecting `404` succeeds when it gets one, and an expected status is
//! never retried.

use std::fmt;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// A step's expectations of its response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Expect {
    /// The statuses that count as success (any below 400 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusSet>,
    /// Header name (any case) → check of its value.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, Check>,
    /// Path in the body → check of the value there.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub body: IndexMap<String, Check>,
    /// The longest the call (the attempt that answered) may take, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
    /// Whether the body is checked against the tool's response schema for the status (its
    /// `response_schemas`): `true` requires one, `false` turns off `--check-schema` for this
    /// step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<bool>,
    /// CEL conditions that must hold, over `status`, `headers`, `body`, `steps` and `inputs`
    /// (one string or a list).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "OneOrMany"))]
    pub assert: Vec<String>,
}

impl Expect {
    /// Expects `status` and nothing else.
    pub fn status(status: StatusSet) -> Self {
        Expect {
            status: Some(status),
            ..Expect::default()
        }
    }
}

/// One string or a list of them (the schema of `assert`).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[schemars(untagged)]
#[expect(
    dead_code,
    reason = "a shape for the schema only; values are read by `one_or_many`"
)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    match OneOrMany::deserialize(deserializer)
        .map_err(|_| de::Error::custom("`assert` takes a CEL condition or a list of them"))?
    {
        OneOrMany::One(one) => Ok(vec![one]),
        OneOrMany::Many(many) => Ok(many),
    }
}

/// One pattern of statuses: a code or a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StatusPattern {
    /// Exactly this code.
    Code(u16),
    /// Any code of this hundred (`4` for `4xx`).
    Class(u8),
}

impl StatusPattern {
    /// Reads `404`, `4xx` (any case); `None` for anything else.
    pub fn parse(text: &str) -> Option<StatusPattern> {
        let text = text.trim();
        if let Some(class) = text
            .strip_suffix("xx")
            .or_else(|| text.strip_suffix("XX"))
            .and_then(|digit| digit.parse::<u8>().ok())
            .filter(|digit| (1..=5).contains(digit))
        {
            return Some(StatusPattern::Class(class));
        }
        text.parse::<u16>()
            .ok()
            .filter(|code| (100..=599).contains(code))
            .map(StatusPattern::Code)
    }

    /// Whether `status` fits.
    pub fn matches(self, status: u16) -> bool {
        match self {
            StatusPattern::Code(code) => code == status,
            StatusPattern::Class(class) => status / 100 == u16::from(class),
        }
    }
}

impl fmt::Display for StatusPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusPattern::Code(code) => write!(f, "{code}"),
            StatusPattern::Class(class) => write!(f, "{class}xx"),
        }
    }
}

/// The statuses a step expects (one or several patterns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet(pub Vec<StatusPattern>);

impl StatusSet {
    /// Whether `status` fits one of the patterns.
    pub fn matches(&self, status: u16) -> bool {
        self.0.iter().any(|pattern| pattern.matches(status))
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        f.write_str(&names.join(" or "))
    }
}

impl Serialize for StatusSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let one = |pattern: &StatusPattern| match pattern {
            StatusPattern::Code(code) => Value::from(*code),
            StatusPattern::Class(_) => Value::from(pattern.to_string()),
        };
        match self.0.as_slice() {
            [single] => one(single).serialize(serializer),
            many => many
                .iter()
                .map(one)
                .collect::<Vec<_>>()
                .serialize(serializer),
        }
    }
}

const STATUS_HELP: &str = "`status` takes a code (404), a class (\"4xx\") or a list of them";

struct StatusVisitor;

impl<'de> Visitor<'de> for StatusVisitor {
    type Value = StatusSet;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(STATUS_HELP)
    }

    fn visit_u64<E: de::Error>(self, code: u64) -> Result<StatusSet, E> {
        self.visit_str(&code.to_string())
    }

    fn visit_i64<E: de::Error>(self, code: i64) -> Result<StatusSet, E> {
        self.visit_str(&code.to_string())
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<StatusSet, E> {
        StatusPattern::parse(text)
            .map(|pattern| StatusSet(vec![pattern]))
            .ok_or_else(|| E::custom(format!("{STATUS_HELP}; `{text}` is neither")))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StatusSet, A::Error> {
        let mut patterns = Vec::new();
        while let Some(one) = seq.next_element::<StatusSet>()? {
            patterns.extend(one.0);
        }
        if patterns.is_empty() {
            return Err(de::Error::custom(format!(
                "{STATUS_HELP}; the list is empty"
            )));
        }
        Ok(StatusSet(patterns))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for StatusSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StatusSet".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one = serde_json::json!({"anyOf": [
            {"type": "integer", "minimum": 100, "maximum": 599},
            {"type": "string", "pattern": "^([1-5][0-9][0-9]|[1-5][xX][xX])$"}
        ]});
        schemars::json_schema!({
            "description": "A status code (404), a class (\"4xx\"), or a list of them.",
            "anyOf": [one, {"type": "array", "items": one, "minItems": 1}]
        })
    }
}

impl<'de> Deserialize<'de> for StatusSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StatusSet, D::Error> {
        deserializer.deserialize_any(StatusVisitor)
    }
}

/// A check of one value: a literal it must equal, or operators.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Check {
    /// Equal to this value (a check written as a plain value).
    Equals(Value),
    /// Every operator given holds.
    Ops(Box<CheckOps>),
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Check::Equals(value) if !value.is_object() => value.serialize(serializer),
            Check::Equals(value) => CheckOps {
                equals: Some(value.clone()),
                ..CheckOps::default()
            }
            .serialize(serializer),
            Check::Ops(ops) => ops.serialize(serializer),
        }
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Check;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value to equal, or a mapping of checks (equals, contains, matches, exists, type, length, gt, gte, lt, lte, not_equals)")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Check, E> {
        Ok(Check::Equals(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Check, E> {
        Ok(Check::Equals(Value::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Check, E> {
        Ok(Check::Equals(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Check, E> {
        Ok(Check::Equals(Value::from(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Check, E> {
        Ok(Check::Equals(Value::from(value)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Check, E> {
        Ok(Check::Equals(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Check, E> {
        Ok(Check::Equals(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Check, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Check::Equals)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Check, A::Error> {
        let ops = CheckOps::deserialize(de::value::MapAccessDeserializer::new(map))?;
        if ops == CheckOps::default() {
            return Err(de::Error::custom(
                "a check needs at least one of equals, not_equals, contains, matches, exists, type, length, gt, gte, lt, lte (to compare with an empty object, write `{equals: {}}`)",
            ));
        }
        Ok(Check::Ops(Box::new(ops)))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Check {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Check".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let operators = generator.subschema_for::<CheckOps>();
        schemars::json_schema!({
            "description": "A value to equal (anything but a mapping), or a mapping of checks.",
            "anyOf": [operators, {"not": {"type": "object"}}]
        })
    }
}

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Check, D::Error> {
        deserializer.deserialize_any(CheckVisitor)
    }
}

/// The operators of a check; every one given must hold.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CheckOps {
    /// Equal to this value (`null` included).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub equals: Option<Value>,
    /// Not equal to this value.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub not_equals: Option<Value>,
    /// A string holding this text, a list holding this element, or an object with this key.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub contains: Option<Value>,
    /// A string the regular expression finds a match in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<String>,
    /// Whether the path leads to a value (`null` counts as one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// The value's JSON type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<JsonType>,
    /// The length of a string (in characters), list or object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// A number greater than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<f64>,
    /// A number at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gte: Option<f64>,
    /// A number less than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<f64>,
    /// A number at most this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lte: Option<f64>,
}

/// A field given, `null` included (`Option<Value>` alone reads `null` as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// JSON's types, as a check names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum JsonType {
    /// A string.
    String,
    /// Any number.
    Number,
    /// A number without a fraction.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A list.
    Array,
    /// A mapping.
    Object,
    /// `null`.
    Null,
}

impl JsonType {
    /// The type's name.
    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Integer => "integer",
            JsonType::Boolean => "boolean",
            JsonType::Array => "array",
            JsonType::Object => "object",
            JsonType::Null => "null",
        }
    }

    /// The type of `value` (an integral number is an `integer`).
    pub fn of(value: &Value) -> JsonType {
        match value {
            Value::String(_) => JsonType::String,
            Value::Number(number) if number.is_i64() || number.is_u64() => JsonType::Integer,
            Value::Number(_) => JsonType::Number,
            Value::Bool(_) => JsonType::Boolean,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
            Value::Null => JsonType::Null,
        }
    }

    /// Whether `value` is of this type (an integer is a number too).
    pub fn admits(self, value: &Value) -> bool {
        let actual = JsonType::of(value);
        actual == self || (self == JsonType::Number && actual == JsonType::Integer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Format, parse};

    fn expect(yaml: &str) -> Expect {
        parse(yaml, Format::Yaml, "expect.yaml").unwrap()
    }

    #[test]
    fn statuses_are_codes_classes_or_lists() {
        assert_eq!(
            expect("status: 404").status,
            Some(StatusSet(vec![StatusPattern::Code(404)]))
        );
        let set = expect("status: [\"2xx\", 404]").status.unwrap();
        assert!(set.matches(204) && set.matches(404) && !set.matches(500));
        assert_eq!(set.to_string(), "2xx or 404");
        assert!(expect("status: 4XX").status.unwrap().matches(409));
        for bad in [
            "status: 4x",
            "status: 99",
            "status: []",
            "status: {code: 200}",
        ] {
            let error = parse::<Expect>(bad, Format::Yaml, "e.yaml").unwrap_err();
            assert!(error.message.contains("`status` takes"), "{bad}: {error}");
        }
    }

    #[test]
    fn checks_are_values_or_operators() {
        let parsed = expect(
            "body:\n  name: Ada\n  tags: [a, b]\n  gone: null\n  $.id: {exists: true, type: integer}\n  n: {gt: 1, lte: 3.5}\n  x: {equals: null}\n  o: {equals: {a: 1}}\n",
        );
        assert_eq!(parsed.body["name"], Check::Equals(Value::from("Ada")));
        assert_eq!(
            parsed.body["tags"],
            Check::Equals(serde_json::json!(["a", "b"]))
        );
        assert_eq!(parsed.body["gone"], Check::Equals(Value::Null));
        let Check::Ops(ops) = &parsed.body["$.id"] else {
            panic!("operators")
        };
        assert_eq!(
            (ops.exists, ops.type_),
            (Some(true), Some(JsonType::Integer))
        );
        let Check::Ops(null) = &parsed.body["x"] else {
            panic!("operators")
        };
        assert_eq!(null.equals, Some(Value::Null), "`equals: null` is given");
        // What is written comes back.
        let again: Expect = parse(
            &serde_json::to_string(&parsed).unwrap(),
            Format::Json,
            "e.json",
        )
        .unwrap();
        assert_eq!(again, parsed);
    }

    #[test]
    fn a_mapping_is_operators_and_a_typo_is_named() {
        let error =
            parse::<Expect>("body:\n  id: {exist: true}\n", Format::Yaml, "e.yaml").unwrap_err();
        assert!(error.message.contains("exist"), "{error}");
        assert_eq!(error.suggestion.as_deref(), Some("exists"), "{error:?}");
        let error = parse::<Expect>("body:\n  id: {}\n", Format::Yaml, "e.yaml").unwrap_err();
        assert!(error.message.contains("at least one of"), "{error}");
        let error = parse::<Expect>("bodi: {}\n", Format::Yaml, "e.yaml").unwrap_err();
        assert_eq!(error.suggestion.as_deref(), Some("body"));
    }

    #[test]
    fn assert_takes_one_or_many() {
        assert_eq!(expect("assert: body.ok").assert, ["body.ok"]);
        assert_eq!(expect("assert: [a, b]").assert, ["a", "b"]);
    }

    #[test]
    fn types_admit_their_values() {
        assert!(JsonType::Number.admits(&serde_json::json!(3)));
        assert!(!JsonType::Integer.admits(&serde_json::json!(3.5)));
        assert_eq!(JsonType::of(&serde_json::json!(3.0)), JsonType::Number);
    }
}

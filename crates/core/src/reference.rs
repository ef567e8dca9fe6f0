//! The meaning of an `input_mapping` value.
//!
//! | form | meaning |
//! |---|---|
//! | `$input.NAME`, `$inputs.NAME` | the run input `NAME` (the whole rest, dots included) |
//! | `STEP.path.0.field` | the output of step `STEP`, walked by the path (numbers index lists) |
//! | `$steps.STEP.outputs.PATH` | the same, in Arazzo's spelling |
//! | anything else, and every non-string | a literal |
//!
//! A dotted string is a step reference **only if its first segment is a step id** of the
//! workflow, so `"3.5"` and `"example.com"` stay literals.

use serde_json::Value;

/// What a mapping value refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference<'a> {
    /// A run input.
    Input {
        /// The input's name.
        name: &'a str,
    },
    /// (Part of) an earlier step's output.
    Step {
        /// The step id.
        step: &'a str,
        /// Dot path into its output; empty for the whole output.
        path: &'a str,
    },
    /// Written as a reference (`$input.`, `$inputs.`, `$steps.`) but not well-formed.
    Malformed {
        /// What is wrong.
        reason: &'static str,
    },
    /// Not a reference: the value is used as written.
    Literal,
}

impl<'a> Reference<'a> {
    /// Parses a mapping value; `is_step` says whether a name is a step id of the workflow.
    ///
    /// ```
    /// use serde_json::json;
    /// use wayline_core::Reference;
    ///
    /// let is_step = |id: &str| id == "step_1" || id == "geo-1";
    /// assert_eq!(Reference::parse(&json!("$input.city"), is_step), Reference::Input { name: "city" });
    /// assert_eq!(
    ///     Reference::parse(&json!("step_1.results.0.lat"), is_step),
    ///     Reference::Step { step: "step_1", path: "results.0.lat" },
    /// );
    /// assert_eq!(
    ///     Reference::parse(&json!("$steps.geo-1.outputs.code"), is_step),
    ///     Reference::Step { step: "geo-1", path: "code" },
    /// );
    /// assert_eq!(Reference::parse(&json!("3.5"), is_step), Reference::Literal);
    /// assert_eq!(Reference::parse(&json!(7), is_step), Reference::Literal);
    /// ```
    pub fn parse(value: &'a Value, is_step: impl Fn(&str) -> bool) -> Reference<'a> {
        match value {
            Value::String(text) => Reference::parse_str(text, is_step),
            _ => Reference::Literal,
        }
    }

    /// Parses a mapping string (see [`Reference::parse`]).
    pub fn parse_str(text: &'a str, is_step: impl Fn(&str) -> bool) -> Reference<'a> {
        if let Some(name) = text
            .strip_prefix("$input.")
            .or_else(|| text.strip_prefix("$inputs."))
        {
            return if name.is_empty() {
                Reference::Malformed {
                    reason: "no input name after `$input.`",
                }
            } else {
                Reference::Input { name }
            };
        }
        if let Some(rest) = text.strip_prefix("$steps.") {
            return parse_arazzo_step(rest);
        }
        if matches!(text, "$input" | "$inputs" | "$steps") {
            return Reference::Malformed {
                reason: "a reference needs a name after the prefix",
            };
        }
        match text.split_once('.') {
            Some((step, path)) if is_step(step) => Reference::Step { step, path },
            _ => Reference::Literal,
        }
    }

    /// The step this refers to, if it refers to one.
    pub fn step(&self) -> Option<&'a str> {
        match self {
            Reference::Step { step, .. } => Some(step),
            _ => None,
        }
    }
}

fn parse_arazzo_step(rest: &str) -> Reference<'_> {
    let (step, after) = rest.split_once('.').unwrap_or((rest, ""));
    if step.is_empty() {
        return Reference::Malformed {
            reason: "no step id after `$steps.`",
        };
    }
    match after.split_once('.') {
        Some(("outputs", path)) => Reference::Step { step, path },
        None if after == "outputs" => Reference::Step { step, path: "" },
        _ => Reference::Malformed {
            reason: "Arazzo step references read `$steps.STEP.outputs.PATH`",
        },
    }
}

/// The segments of a dot path (`""` has none).
///
/// ```
/// let segments: Vec<_> = wayline_core::reference::segments("items.0.name").collect();
/// assert_eq!(segments, ["items", "0", "name"]);
/// ```
pub fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|segment| !segment.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Reference<'_> {
        Reference::parse_str(text, |id| matches!(id, "step_1" | "step-4" | "example"))
    }

    #[test]
    fn dotted_literals_stay_literals() {
        assert_eq!(parse("3.5"), Reference::Literal);
        assert_eq!(parse("api.example.com"), Reference::Literal);
        assert_eq!(parse("temperature_2m,wind_speed_10m"), Reference::Literal);
        assert_eq!(parse("step_1"), Reference::Literal);
    }

    #[test]
    fn a_step_id_as_first_segment_makes_a_reference() {
        assert_eq!(
            parse("step-4.base_code"),
            Reference::Step {
                step: "step-4",
                path: "base_code"
            }
        );
        assert_eq!(
            parse("example.com"),
            Reference::Step {
                step: "example",
                path: "com"
            }
        );
        assert_eq!(
            parse("step_1."),
            Reference::Step {
                step: "step_1",
                path: ""
            }
        );
    }

    #[test]
    fn input_names_keep_their_dots() {
        assert_eq!(parse("$input.a.b"), Reference::Input { name: "a.b" });
        assert_eq!(parse("$inputs.city"), Reference::Input { name: "city" });
        assert!(matches!(parse("$input."), Reference::Malformed { .. }));
        assert!(matches!(parse("$inputs"), Reference::Malformed { .. }));
    }

    #[test]
    fn arazzo_step_forms() {
        assert_eq!(
            parse("$steps.step_1.outputs.countryCode"),
            Reference::Step {
                step: "step_1",
                path: "countryCode"
            }
        );
        assert_eq!(
            parse("$steps.step_1.outputs"),
            Reference::Step {
                step: "step_1",
                path: ""
            }
        );
        assert!(matches!(
            parse("$steps.step_1.countryCode"),
            Reference::Malformed { .. }
        ));
        assert!(matches!(parse("$steps."), Reference::Malformed { .. }));
    }
}

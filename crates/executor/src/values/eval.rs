//! Evaluating compiled CEL expressions over a run's data.
//!
//! Variables: `inputs` (the run inputs), `steps` (only the step ids the expression names, each
//! that step's output), and with a response at hand `status`, `headers` (lower-case names) and
//! `body` (parsed JSON, or the text when it is not JSON).
//!
//! Validation bounds an expression's text and nesting, but not what its loops cost on the
//! data: two nested `map`s over a long response list cost the square of its length, and
//! `list.map(x, body)` copies the whole body once per element. So one evaluation runs at most
//! [`MAX_ITERATIONS`] loop iterations and builds at most about [`MAX_BUILT_BYTES`] of `map`
//! elements, both counted as the loops run (see `wayline_core::expr::ITERATION_METER`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use cel::common::types::{CelBytes, CelMap, CelMapKey, CelString};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::{ExecutionError, FunctionContext};
use indexmap::IndexMap;
use serde_json::Value;
use wayline_core::Expression;
use wayline_core::expr::{BUILT_VALUE_METER, ITERATION_METER};

use crate::cancel::RunStop;

static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// A response as expressions see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseView<'a> {
    pub(crate) status: u16,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a Value,
}

/// What an expression can read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) inputs: &'a IndexMap<String, Value>,
    pub(crate) steps: &'a HashMap<String, Arc<Value>>,
    pub(crate) response: Option<ResponseView<'a>>,
    pub(crate) budget: ExpressionBudget,
    /// The run's cancel token and deadline: loops stop when either says so.
    pub(crate) stop: Option<&'a RunStop>,
}

/// The most loop iterations one evaluation may run unless the engine sets another
/// [`ExpressionBudget`]: a million take well under a second (release build), and an expression
/// that needs more fails instead of holding the run.
pub const MAX_ITERATIONS: u64 = 1_000_000;

/// About the most memory, in bytes, that the elements built by `map`s may take in one
/// evaluation unless the engine sets another [`ExpressionBudget`] (each value counted as 32
/// bytes, each string and byte string as its length more):
/// enough for a `map` over a million elements of a few fields each, and it stops
/// `list.map(x, body)` on a large body long before it takes the machine's memory.
pub const MAX_BUILT_BYTES: u64 = 256 * 1024 * 1024;

/// The longest one evaluation may take unless the engine sets another [`ExpressionBudget`]:
/// far more than any condition over a response needs, and it bounds how late a run's deadline
/// takes effect when it passes during an evaluation.
pub const MAX_EVALUATION_TIME: Duration = Duration::from_secs(10);

/// What one value is counted as in [`MAX_BUILT_BYTES`], beside the text it holds.
const VALUE_BYTES: u64 = 32;

/// What one evaluation of an expression may spend (see [`EngineBuilder::expression_budget`]).
/// An expression that needs more fails, and so does the step it belongs to, with an error that
/// names the budget.
///
/// [`EngineBuilder::expression_budget`]: crate::EngineBuilder::expression_budget
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpressionBudget {
    /// Loop iterations: the elements of the lists and maps that `map`, `filter`, `all`,
    /// `exists` and `exists_one` go over, nested loops counted in full. Default
    /// [`MAX_ITERATIONS`].
    pub iterations: u64,
    /// About the bytes the elements built by `map`s may take. Default [`MAX_BUILT_BYTES`].
    pub built_bytes: u64,
    /// Wall-clock time, checked at every loop iteration: the backstop for loops whose every
    /// iteration works through large data (`items.all(x, log.contains(x.name))` over a long
    /// log). Default [`MAX_EVALUATION_TIME`]. Unlike the other two, whether it is exceeded
    /// depends on the machine.
    pub time: Duration,
}

impl Default for ExpressionBudget {
    fn default() -> Self {
        ExpressionBudget {
            iterations: MAX_ITERATIONS,
            built_bytes: MAX_BUILT_BYTES,
            time: MAX_EVALUATION_TIME,
        }
    }
}

/// A native CEL function, as `cel::Context::add_function` takes one.
type NativeFunction = Box<
    dyn for<'c, 'v> Fn(&mut FunctionContext<'c, 'v>) -> Result<CowVal<'c, 'v>, ExecutionError>
        + Send
        + Sync,
>;

/// How many iterations pass between two looks at the clocks and the cancel token: reading a
/// clock costs about as much as a small iteration.
const CHECK_EVERY: u64 = 64;

/// The [`ITERATION_METER`] of one evaluation: counts each iteration, and at the first and
/// every [`CHECK_EVERY`]th checks the time since `started` and the run's `stop`, handing the
/// value back, or fails once a budget is spent or the run must stop.
fn iteration_meter(budget: ExpressionBudget, stop: Option<RunStop>) -> NativeFunction {
    let ExpressionBudget {
        iterations, time, ..
    } = budget;
    let started = Instant::now();
    let done = AtomicU64::new(0);
    Box::new(move |call| {
        let value = call
            .args
            .pop()
            .ok_or(ExecutionError::MissingArgumentOrTarget)?;
        let count = done.fetch_add(1, Ordering::Relaxed);
        if count >= iterations {
            return Err(call.error(format!(
                "needs more than {iterations} loop iterations (the budget of one evaluation); \
                 filter or index the data before looping over it, or loop over less of it"
            )));
        }
        if count.is_multiple_of(CHECK_EVERY) {
            if started.elapsed() >= time {
                return Err(call.error(format!(
                    "took more than {} ms (the budget of one evaluation); loop over less data, \
                     or do less in each iteration",
                    time.as_millis()
                )));
            }
            if let Some(reason) = stop.as_ref().and_then(RunStop::trip) {
                return Err(call.error(format!("stopped: {reason}")));
            }
        }
        Ok(value)
    })
}

/// The [`BUILT_VALUE_METER`] of one evaluation: weighs each element a `map` builds against the
/// bytes left and hands it back, or fails once they are spent.
fn built_value_meter(budget: u64) -> NativeFunction {
    let left = AtomicU64::new(budget);
    Box::new(move |call| {
        let element = call
            .args
            .pop()
            .ok_or(ExecutionError::MissingArgumentOrTarget)?;
        let weight = weigh(
            element.as_ref(),
            left.load(Ordering::Relaxed).saturating_add(1),
        );
        left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(weight)
        })
        .map_err(|_| {
            call.error(format!(
                "builds more than {} MiB of list elements (the budget of one evaluation); \
                 map to the fields you need rather than to whole objects",
                budget / (1024 * 1024)
            ))
        })?;
        Ok(element)
    })
}

/// The bytes `value` is counted as, or a number past `cap` once it is clear the value weighs
/// more: weighing stops there, so a huge value costs no more to weigh than the budget left.
fn weigh(value: &dyn Val, cap: u64) -> u64 {
    if let Some(text) = value.downcast_ref::<CelString>() {
        return VALUE_BYTES + text.inner().len() as u64;
    }
    if let Some(bytes) = value.downcast_ref::<CelBytes>() {
        return VALUE_BYTES + bytes.inner().len() as u64;
    }
    let mut total = VALUE_BYTES;
    if let Some(map) = value.downcast_ref::<CelMap>() {
        for (key, item) in map.inner() {
            let key_text = match key {
                CelMapKey::String(text) => text.inner().len() as u64,
                _ => 0,
            };
            total += VALUE_BYTES + key_text + weigh(item.as_ref(), cap.saturating_sub(total));
            if total > cap {
                break;
            }
        }
    } else if let Some(items) = value.as_iterable() {
        let mut items = items.iter();
        while let Some(item) = items.next() {
            total += weigh(item, cap.saturating_sub(total));
            if total > cap {
                break;
            }
        }
    }
    total
}

/// Evaluates `expression` to JSON, within the scope's budget.
pub(crate) fn evaluate(expression: &Expression, scope: Scope<'_>) -> Result<Value, String> {
    let budget = scope.budget;
    let mut context = cel::Context::with_env(Arc::clone(&ENV));
    let meter = iteration_meter(budget, scope.stop.cloned());
    context
        .add_function(ITERATION_METER, meter)
        .and_then(|()| {
            context.add_function(BUILT_VALUE_METER, built_value_meter(budget.built_bytes))
        })
        .map_err(|error| format!("cannot define the evaluation budget: {error}"))?;
    context.add_variable_from_value("inputs", object_to_cel(scope.inputs.iter()));
    let steps = expression.step_refs().iter().filter_map(|id| {
        scope
            .steps
            .get(id)
            .map(|output| (id.as_str(), output.as_ref()))
    });
    context.add_variable_from_value("steps", object_to_cel(steps));
    if let Some(response) = scope.response {
        context.add_variable_from_value("status", cel::Value::Int(i64::from(response.status)));
        let headers = response
            .headers
            .iter()
            .map(|(name, value)| (Key::from(name.as_str()), cel::Value::from(value.as_str())))
            .collect::<HashMap<_, _>>();
        context.add_variable_from_value("headers", cel::Value::Map(Map::from(headers)));
        context.add_variable_from_value("body", to_cel(response.body));
    }
    let value = cel::Value::resolve(expression.tree(), &context).map_err(|error| {
        let reason = match error {
            ExecutionError::FunctionError { function, message }
                if function == ITERATION_METER || function == BUILT_VALUE_METER =>
            {
                message
            }
            other => lowercase(&other),
        };
        format!("`{}` failed: {reason}", expression.source())
    })?;
    from_cel(&value).map_err(|kind| {
        format!(
            "`{}` gave a {kind}, which has no JSON form",
            expression.source()
        )
    })
}

/// Evaluates a condition; anything but a boolean is an error.
pub(crate) fn condition(expression: &Expression, scope: Scope<'_>) -> Result<bool, String> {
    match evaluate(expression, scope)? {
        Value::Bool(holds) => Ok(holds),
        other => Err(format!(
            "`{}` gave {other}, not true or false",
            expression.source()
        )),
    }
}

fn lowercase(error: &impl std::fmt::Display) -> String {
    let text = error.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

fn object_to_cel<'v, K: AsRef<str>>(fields: impl Iterator<Item = (K, &'v Value)>) -> cel::Value {
    let map = fields
        .map(|(key, value)| (Key::from(key.as_ref()), to_cel(value)))
        .collect::<HashMap<_, _>>();
    cel::Value::Map(Map::from(map))
}

/// JSON → CEL. Integers stay integers; other numbers become doubles.
pub(crate) fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(flag) => cel::Value::Bool(*flag),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                cel::Value::Int(int)
            } else if let Some(uint) = number.as_u64() {
                cel::Value::UInt(uint)
            } else {
                cel::Value::Float(number.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(text) => cel::Value::from(text.as_str()),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => object_to_cel(fields.iter()),
    }
}

/// CEL → JSON; the error names a CEL type JSON cannot hold.
pub(crate) fn from_cel(value: &cel::Value) -> Result<Value, &'static str> {
    Ok(match value {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(flag) => Value::Bool(*flag),
        cel::Value::Int(int) => Value::from(*int),
        cel::Value::UInt(uint) => Value::from(*uint),
        cel::Value::Float(float) => serde_json::Number::from_f64(*float)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        cel::Value::String(text) => Value::String(text.to_string()),
        cel::Value::Bytes(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        cel::Value::List(items) => {
            Value::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?)
        }
        cel::Value::Map(map) => {
            let mut entries = map
                .map
                .iter()
                .map(|(key, value)| Ok((key_text(key), from_cel(value)?)))
                .collect::<Result<Vec<_>, &'static str>>()?;
            // CEL maps are unordered; sort so outputs do not depend on hashing.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        cel::Value::Function(..) => return Err("function"),
        _ => return Err("value of an unsupported type"),
    })
}

fn key_text(key: &Key) -> String {
    match key {
        Key::Int(int) => int.to_string(),
        Key::Uint(uint) => uint.to_string(),
        Key::Bool(flag) => flag.to_string(),
        Key::String(text) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::CancelToken;

    fn scope<'a>(
        inputs: &'a IndexMap<String, Value>,
        steps: &'a HashMap<String, Arc<Value>>,
        body: &'a Value,
    ) -> Scope<'a> {
        Scope {
            inputs,
            steps,
            response: Some(ResponseView {
                status: 200,
                headers: &[],
                body,
            }),
            budget: ExpressionBudget::default(),
            stop: None,
        }
    }

    #[test]
    fn reads_inputs_steps_and_body() {
        let inputs = IndexMap::from([("min".to_owned(), json!(2))]);
        let steps = HashMap::from([("a".to_owned(), Arc::new(json!({"n": 3})))]);
        let body = json!({"state": "ACTIVE", "items": [1, 2.5]});
        let expr = Expression::compile(
            "body.state == 'ACTIVE' && steps.a.n > inputs.min && status == 200",
        )
        .unwrap();
        assert_eq!(condition(&expr, scope(&inputs, &steps, &body)), Ok(true));
        let expr = Expression::compile("{'n': steps.a.n * 2, 'first': body.items}").unwrap();
        assert_eq!(
            evaluate(&expr, scope(&inputs, &steps, &body)),
            Ok(json!({"first": [1, 2.5], "n": 6}))
        );
    }

    #[test]
    fn errors_name_the_expression() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({});
        let expr = Expression::compile("body.missing == 1").unwrap();
        let error = condition(&expr, scope(&inputs, &steps, &body)).unwrap_err();
        assert!(error.contains("`body.missing == 1` failed"), "{error}");
        let expr = Expression::compile("1 + 1").unwrap();
        let error = condition(&expr, scope(&inputs, &steps, &body)).unwrap_err();
        assert!(error.contains("not true or false"), "{error}");
    }

    #[test]
    fn comprehensions_run_as_before_under_the_meter() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body =
            json!({"items": [{"id": 1, "ok": true}, {"id": 2, "ok": false}], "tags": {"a": 1}});
        for (source, expected) in [
            ("body.items.map(x, x.id)", json!([1, 2])),
            ("body.items.filter(x, x.ok).map(x, x.id)", json!([1])),
            ("body.items.map(x, x.ok, x.id * 10)", json!([10])),
            (
                "body.items.all(x, x.id > 0) && body.items.exists(x, !x.ok)",
                json!(true),
            ),
            ("body.items.exists_one(x, x.ok)", json!(true)),
            ("body.tags.all(k, k == 'a')", json!(true)),
            (
                "body.items.map(x, body.items.map(y, x.id * y.id))",
                json!([[1, 2], [2, 4]]),
            ),
        ] {
            let expr = Expression::compile(source).unwrap();
            assert_eq!(
                evaluate(&expr, scope(&inputs, &steps, &body)),
                Ok(expected),
                "{source}"
            );
        }
    }

    #[test]
    fn nested_loops_past_the_budget_fail_with_a_clear_error() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({"items": (0..100).collect::<Vec<_>>()});
        let expr = Expression::compile("body.items.map(x, body.items.map(y, x + y))").unwrap();
        let within = |iterations| Scope {
            budget: ExpressionBudget {
                iterations,
                ..ExpressionBudget::default()
            },
            ..scope(&inputs, &steps, &body)
        };
        // The outer list's 100 and 100 for each of its elements: 10,100 iterations in all.
        assert!(evaluate(&expr, within(10_100)).is_ok());
        let error = evaluate(&expr, within(10_099)).unwrap_err();
        assert!(
            error.starts_with("`body.items.map(x, body.items.map(y, x + y))` failed: needs more than 10099 loop iterations"),
            "{error}"
        );
        assert!(!error.contains(ITERATION_METER), "{error}");
    }

    #[test]
    fn copies_past_the_memory_budget_fail_with_a_clear_error() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({"items": [1, 2, 3, 4], "text": "x".repeat(1000)});
        let within = |built_bytes| Scope {
            budget: ExpressionBudget {
                built_bytes,
                ..ExpressionBudget::default()
            },
            ..scope(&inputs, &steps, &body)
        };
        // Each element is a copy of the body: a map of two entries, a list of four and a
        // string of 1,000 bytes.
        let element = 32 + (32 + 5 + 32 + 4 * 32) + (32 + 4 + 32 + 1000);
        let expr = Expression::compile("body.items.map(x, body)").unwrap();
        assert!(evaluate(&expr, within(4 * element)).is_ok());
        let error = evaluate(&expr, within(4 * element - 1)).unwrap_err();
        assert!(error.contains("failed: builds more than"), "{error}");
        // What filter keeps is the list's own and is not weighed.
        let expr = Expression::compile("body.items.filter(x, x > 0)").unwrap();
        assert!(evaluate(&expr, within(0)).is_ok());
    }

    #[test]
    fn every_kind_of_loop_counts_its_iterations() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({"items": [1, 2, 3, 4, 5], "tags": {"a": 1, "b": 2}});
        let within = |iterations| Scope {
            budget: ExpressionBudget {
                iterations,
                ..ExpressionBudget::default()
            },
            ..scope(&inputs, &steps, &body)
        };
        for (source, iterations) in [
            ("body.items.map(x, x * 2)", 5),
            ("body.items.filter(x, x > 2)", 5),
            ("body.items.map(x, x > 2, x * 2)", 5),
            ("body.items.all(x, x > 0)", 5),
            // `all` and `exists` count each element's check, the one that ends the loop too.
            ("body.items.exists(x, x == 2)", 3),
            ("body.items.exists_one(x, x == 2)", 5),
            ("body.tags.all(k, k != 'c')", 2),
            ("body.items.map(x, body.items.filter(y, y < x))", 30),
        ] {
            let expr = Expression::compile(source).unwrap();
            assert!(evaluate(&expr, within(iterations)).is_ok(), "{source}");
            let error = evaluate(&expr, within(iterations - 1)).unwrap_err();
            assert!(error.contains("loop iterations"), "{source}: {error}");
        }
    }

    #[test]
    fn a_loop_past_the_time_budget_fails_with_a_clear_error() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({"items": [1]});
        let no_time = Scope {
            budget: ExpressionBudget {
                time: Duration::ZERO,
                ..ExpressionBudget::default()
            },
            ..scope(&inputs, &steps, &body)
        };
        let expr = Expression::compile("body.items.all(x, x > 0)").unwrap();
        let error = evaluate(&expr, no_time).unwrap_err();
        assert!(error.contains("failed: took more than 0 ms"), "{error}");
        // Without a loop there is nothing to meter.
        let expr = Expression::compile("body.items[0] > 0").unwrap();
        assert_eq!(evaluate(&expr, no_time), Ok(json!(true)));
    }

    #[test]
    fn a_loop_stops_when_the_run_is_cancelled_or_past_its_deadline() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        let body = json!({"items": [1, 2, 3]});
        let expr = Expression::compile("body.items.all(x, x > 0)").unwrap();
        let cancel = CancelToken::new();
        let running = RunStop::new(Some(cancel.clone()), Some(Duration::from_secs(3600)));
        let run = |stop| Scope {
            stop: Some(stop),
            ..scope(&inputs, &steps, &body)
        };
        assert_eq!(evaluate(&expr, run(&running)), Ok(json!(true)));
        cancel.cancel();
        let error = evaluate(&expr, run(&running)).unwrap_err();
        assert!(
            error.ends_with("failed: stopped: the run was cancelled"),
            "{error}"
        );
        let past = RunStop::new(None, Some(Duration::ZERO));
        let error = evaluate(&expr, run(&past)).unwrap_err();
        assert!(
            error.ends_with("failed: stopped: the run deadline of 0 ms passed"),
            "{error}"
        );
    }

    #[test]
    fn a_failing_predicate_of_all_or_exists_cannot_escape_the_meter() {
        let inputs = IndexMap::new();
        let steps = HashMap::new();
        // Every predicate fails (no `parent` field): CEL's `all` sets each error aside and goes
        // on, so a meter inside the predicate would never be reached.
        let body = json!({"items": (0..100).map(|id| json!({"id": id})).collect::<Vec<_>>()});
        let within = |iterations| Scope {
            budget: ExpressionBudget {
                iterations,
                ..ExpressionBudget::default()
            },
            ..scope(&inputs, &steps, &body)
        };
        let expr = Expression::compile("body.items.all(x, body.items.exists(y, y.id == x.parent))")
            .unwrap();
        let error = evaluate(&expr, within(1_000)).unwrap_err();
        assert!(
            error.contains("needs more than 1000 loop iterations"),
            "{error}"
        );
        // And a stop is not lost to an element that decides the fold.
        let cancel = CancelToken::new();
        cancel.cancel();
        let stopped = RunStop::new(Some(cancel), None);
        let expr = Expression::compile("[1, 2, 3].exists(x, x == 2)").unwrap();
        let error = evaluate(
            &expr,
            Scope {
                stop: Some(&stopped),
                ..scope(&inputs, &steps, &body)
            },
        )
        .unwrap_err();
        assert!(error.ends_with("stopped: the run was cancelled"), "{error}");
    }
}

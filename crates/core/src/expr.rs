//! CEL expressions (`when`, `poll.until`, `expect`, outputs), compiled once.
//!
//! Expressions see `inputs` (run inputs), `steps` (step id → output), `vars` (saved variables)
//! and, where a response is at hand, `status`, `headers` and `body`. Compiling one also lists the
//! step ids and input names it reads, which is how the graph infers edges from conditions.

use std::fmt;
use std::sync::Arc;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};

use crate::Error;

/// A compiled CEL expression with the steps and inputs it refers to.
///
/// ```
/// use wayline_core::Expression;
///
/// let expr = Expression::compile("steps.check.ok == true && inputs.region != 'eu'").unwrap();
/// assert_eq!(expr.step_refs(), ["check"]);
/// assert_eq!(expr.input_refs(), ["region"]);
///
/// let err = Expression::compile("steps.check.ok ==").unwrap_err();
/// assert!(err.to_string().contains("1:18"));
/// ```
#[derive(Clone)]
pub struct Expression {
    source: Arc<str>,
    tree: Arc<IdedExpr>,
    step_refs: Vec<String>,
    input_refs: Vec<String>,
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expression")
            .field("source", &self.source)
            .field("step_refs", &self.step_refs)
            .field("input_refs", &self.input_refs)
            .finish_non_exhaustive()
    }
}

/// The longest expression accepted, in bytes. Conditions and outputs are a line or two; a
/// longer text is most likely a mistake, and parsing and evaluating it costs memory in
/// proportion.
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// The deepest nesting of brackets (`(`, `[`, `{`) accepted.
pub const MAX_NESTING: usize = 32;

/// The most member accesses and operators (`.`, `&&`, `+`, `==`, ...) one expression may
/// chain: each is a level of the parsed tree, and parsing, walking and evaluating a tree
/// recurses through its levels.
pub const MAX_OPERATIONS: usize = 256;

/// The deepest nesting of comprehensions (`map`, `filter`, `all`, `exists`, `exists_one`)
/// accepted: each level multiplies the work by the length of a list.
pub const MAX_COMPREHENSION_NESTING: usize = 2;

/// The function called once on every iteration of every comprehension, in the tree
/// [`Expression::tree`] gives: it wraps the part of the loop evaluated first (the loop
/// condition of `all` and `exists`, checked before each element; the condition of `filter`,
/// `exists_one` and a three-argument `map`; the element of `map`) and an evaluator defines it
/// to count the iteration, check the time, and hand the value back unchanged. Loops are the
/// only part of an expression whose cost grows with the data rather than with its text. No
/// CEL name starts with `@`, so no expression can call or shadow it.
pub const ITERATION_METER: &str = "@iteration";

/// The function every element a `map` appends to its list passes through, in the tree
/// [`Expression::tree`] gives. An evaluator defines it to weigh the element against a budget
/// of memory and hand it back unchanged: each element is a copy, so `list.map(x, body)` would
/// copy the whole body once per element. The elements `filter` keeps are the list's own and
/// are not weighed.
pub const BUILT_VALUE_METER: &str = "@built";

impl Expression {
    /// Parses `source`; a syntax error names its 1-based line and column. An expression past
    /// the limits ([`MAX_EXPRESSION_BYTES`], [`MAX_NESTING`], [`MAX_OPERATIONS`],
    /// [`MAX_COMPREHENSION_NESTING`]) is refused before it is parsed, so no text can exhaust the
    /// stack or the memory.
    pub fn compile(source: &str) -> Result<Expression, Error> {
        check_limits(source)?;
        let program = cel::Program::compile(source).map_err(|errors| {
            let first = errors.errors.first();
            let (line, column) = first
                .map(|error| (error.pos.0.max(1) as usize, error.pos.1.max(1) as usize))
                .unwrap_or((1, 1));
            Error::InvalidExpression {
                expression: source.to_owned(),
                line,
                column,
                message: first
                    .map(|error| lowercase_first(&error.msg))
                    .unwrap_or_else(|| "cannot be parsed".to_owned()),
            }
        })?;
        let mut refs = Refs::default();
        refs.walk(program.expression());
        let mut tree = program.expression().clone();
        meter_comprehensions(&mut tree);
        Ok(Expression {
            source: source.into(),
            tree: Arc::new(tree),
            step_refs: refs.steps,
            input_refs: refs.inputs,
        })
    }

    /// The text it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Step ids read as `steps.ID` or `steps["ID"]`, in order of first appearance.
    pub fn step_refs(&self) -> &[String] {
        &self.step_refs
    }

    /// Input names read as `inputs.NAME` or `inputs["NAME"]`, in order of first appearance.
    pub fn input_refs(&self) -> &[String] {
        &self.input_refs
    }

    /// The parsed tree to evaluate (with `cel::Value::resolve`): every comprehension's loop
    /// calls [`ITERATION_METER`] once per element, and every element a `map` builds passes through
    /// [`BUILT_VALUE_METER`], functions the evaluating context must define.
    pub fn tree(&self) -> &IdedExpr {
        &self.tree
    }
}

/// Adds the calls of [`ITERATION_METER`] and [`BUILT_VALUE_METER`] to every comprehension in
/// `expr`. The shape of each loop stays as the macro wrote it, so the interpreter still
/// recognises `map`, `filter`, `all` and `exists` by it and runs them its fast way.
fn meter_comprehensions(expr: &mut IdedExpr) {
    match &mut expr.expr {
        Expr::Comprehension(comprehension) => {
            for part in [
                &mut comprehension.iter_range,
                &mut comprehension.accu_init,
                &mut comprehension.loop_cond,
                &mut comprehension.loop_step,
                &mut comprehension.result,
            ] {
                meter_comprehensions(part);
            }
            if is_logical_fold(&comprehension.loop_step, &comprehension.accu_var) {
                // `all` and `exists` set a failing step aside and go on (CEL's error-absorbing
                // `&&` and `||`), so a meter inside the step would neither run when the
                // predicate fails nor stop the loop when it trips. The loop condition is
                // evaluated before every element and its error ends the loop at once.
                wrap_in_call(&mut comprehension.loop_cond, ITERATION_METER);
            } else {
                meter_loop_step(
                    &mut comprehension.loop_step,
                    &comprehension.accu_var,
                    &comprehension.iter_var,
                );
            }
        }
        Expr::Select(select) => meter_comprehensions(&mut select.operand),
        Expr::Call(call) => {
            if let Some(target) = &mut call.target {
                meter_comprehensions(target);
            }
            call.args.iter_mut().for_each(meter_comprehensions);
        }
        Expr::List(list) => list.elements.iter_mut().for_each(meter_comprehensions),
        Expr::Map(map) => map
            .entries
            .iter_mut()
            .for_each(|entry| meter_entry(&mut entry.expr)),
        Expr::Struct(object) => object
            .entries
            .iter_mut()
            .for_each(|entry| meter_entry(&mut entry.expr)),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// True for the loop step of `all` (`@result && p`) and `exists` (`@result || p`).
fn is_logical_fold(step: &IdedExpr, accumulator: &str) -> bool {
    matches!(&step.expr, Expr::Call(call)
        if matches!(call.func_name.as_str(), operators::LOGICAL_AND | operators::LOGICAL_OR)
            && matches!(call.args.first().map(|folded| &folded.expr),
                Some(Expr::Ident(name)) if name == accumulator))
}

/// Meters one loop step (not a logical fold), in the shapes the standard macros write
/// (`@result` is the accumulator):
/// - `c ? @result + [f] : @result` (`filter`, `map(x, c, f)`) and `c ? @result + 1 : @result`
///   (`exists_one`): [`ITERATION_METER`] around `c`, and for a `map`, [`BUILT_VALUE_METER`]
///   around `f`;
/// - `@result + [f]` (`map`): both around `f`.
///
/// Their errors end the loop at once. Any other step is metered whole, which still counts
/// every iteration.
fn meter_loop_step(step: &mut IdedExpr, accumulator: &str, variable: &str) {
    let is =
        |expr: &IdedExpr, name: &str| matches!(&expr.expr, Expr::Ident(ident) if ident == name);
    let Expr::Call(call) = &mut step.expr else {
        return wrap_in_call(step, ITERATION_METER);
    };
    match (call.func_name.as_str(), call.args.as_mut_slice()) {
        (operators::CONDITIONAL, [condition, appending, otherwise])
            if is(otherwise, accumulator) =>
        {
            wrap_in_call(condition, ITERATION_METER);
            meter_appended(appending, accumulator, variable);
        }
        (operators::ADD, [sum, _]) if is(sum, accumulator) => {
            match appended_elements(step, accumulator) {
                Some(elements) if !elements.is_empty() => {
                    for element in elements {
                        wrap_in_call(element, ITERATION_METER);
                        wrap_in_call(element, BUILT_VALUE_METER);
                    }
                }
                _ => wrap_in_call(step, ITERATION_METER),
            }
        }
        _ => wrap_in_call(step, ITERATION_METER),
    }
}

/// Wraps the elements appended by `@result + [f]` in calls of [`BUILT_VALUE_METER`], leaving
/// alone an element that is the loop variable itself (what `filter` appends).
fn meter_appended(appending: &mut IdedExpr, accumulator: &str, variable: &str) {
    if let Some(elements) = appended_elements(appending, accumulator) {
        for element in elements {
            if !matches!(&element.expr, Expr::Ident(name) if name == variable) {
                wrap_in_call(element, BUILT_VALUE_METER);
            }
        }
    }
}

/// The elements of the list literal in `@result + [..]`, if `expr` is that.
fn appended_elements<'e>(
    expr: &'e mut IdedExpr,
    accumulator: &str,
) -> Option<&'e mut Vec<IdedExpr>> {
    let Expr::Call(call) = &mut expr.expr else {
        return None;
    };
    match (call.func_name.as_str(), call.args.as_mut_slice()) {
        (operators::ADD, [sum, appended]) if matches!(&sum.expr, Expr::Ident(name) if name == accumulator) => {
            match &mut appended.expr {
                Expr::List(list) => Some(&mut list.elements),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Replaces `expr` with the call `function(expr)`.
fn wrap_in_call(expr: &mut IdedExpr, function: &str) {
    let argument = std::mem::take(expr);
    *expr = IdedExpr {
        id: argument.id,
        expr: Expr::Call(CallExpr {
            func_name: function.to_owned(),
            target: None,
            args: vec![argument],
        }),
    };
}

fn meter_entry(entry: &mut EntryExpr) {
    match entry {
        EntryExpr::StructField(field) => meter_comprehensions(&mut field.value),
        EntryExpr::MapEntry(entry) => {
            meter_comprehensions(&mut entry.key);
            meter_comprehensions(&mut entry.value);
        }
    }
}

/// Refuses `source` when it is past the limits, by a scan of its text (string literals
/// skipped), before the parser sees it.
fn check_limits(source: &str) -> Result<(), Error> {
    let refuse = |at: usize, message: String| {
        // `at` may fall inside a multi-byte character (the length limit's byte): the text
        // before it is taken up to the character that holds it.
        let at = (0..=at.min(source.len()))
            .rev()
            .find(|&at| source.is_char_boundary(at))
            .unwrap_or(0);
        let before = &source[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        Err(Error::InvalidExpression {
            expression: shortened(source),
            line,
            column,
            message,
        })
    };
    if source.len() > MAX_EXPRESSION_BYTES {
        return refuse(
            MAX_EXPRESSION_BYTES,
            format!(
                "it is {} bytes long, more than the {MAX_EXPRESSION_BYTES} allowed; split it, or compute parts in a transform step",
                source.len()
            ),
        );
    }
    let bytes = source.as_bytes();
    // Open brackets, each with whether it opened a comprehension's arguments.
    let mut open: Vec<bool> = Vec::new();
    let mut operations = 0usize;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        match byte {
            b'"' | b'\'' => {
                at = skip_string(bytes, at);
                continue;
            }
            b'(' | b'[' | b'{' => {
                let comprehension = byte == b'(' && opens_comprehension(&source[..at]);
                open.push(comprehension);
                if open.len() > MAX_NESTING {
                    return refuse(
                        at,
                        format!("brackets nest deeper than {MAX_NESTING} levels"),
                    );
                }
                if open.iter().filter(|&&is| is).count() > MAX_COMPREHENSION_NESTING {
                    return refuse(
                        at,
                        format!(
                            "comprehensions (map, filter, all, exists) nest deeper than {MAX_COMPREHENSION_NESTING} levels; each level multiplies the work"
                        ),
                    );
                }
            }
            b')' | b']' | b'}' => {
                open.pop();
            }
            b'.' if !bytes.get(at + 1).is_some_and(u8::is_ascii_digit) => operations += 1,
            b'&' | b'|' | b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'?' => {
                operations += 1;
                // Two-character operators count once.
                if matches!(bytes.get(at + 1), Some(b'&' | b'|' | b'=')) {
                    at += 1;
                }
            }
            _ => {}
        }
        if operations > MAX_OPERATIONS {
            return refuse(
                at,
                format!(
                    "it chains more than {MAX_OPERATIONS} operators and member accesses; split it, or compute parts in a transform step"
                ),
            );
        }
        at += 1;
    }
    Ok(())
}

/// The index after the string literal starting at `start` (quoted by `'` or `"`, single or
/// triple, with backslash escapes).
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let mut at = start + if triple { 3 } else { 1 };
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            byte if byte == quote
                && (!triple
                    || (bytes.get(at + 1) == Some(&quote)
                        && bytes.get(at + 2) == Some(&quote))) =>
            {
                return at + if triple { 3 } else { 1 };
            }
            _ => at += 1,
        }
    }
    bytes.len()
}

/// True when the text before an opening parenthesis ends with a comprehension macro's name
/// (`.map`, `.filter`, `.all`, `.exists`, `.exists_one`).
fn opens_comprehension(before: &str) -> bool {
    let name = before.trim_end();
    ["map", "filter", "all", "exists", "exists_one", "existsOne"]
        .iter()
        .any(|macro_name| {
            name.strip_suffix(macro_name)
                .is_some_and(|rest| rest.trim_end().ends_with('.'))
        })
}

/// A long expression cut for an error message.
fn shortened(source: &str) -> String {
    const SHOWN: usize = 120;
    if source.chars().count() <= SHOWN {
        return source.to_owned();
    }
    let head: String = source.chars().take(SHOWN).collect();
    format!("{head}… ({} bytes)", source.len())
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[derive(Default)]
struct Refs {
    steps: Vec<String>,
    inputs: Vec<String>,
}

impl Refs {
    fn note(&mut self, root: &str, name: &str) {
        let list = match root {
            "steps" => &mut self.steps,
            "inputs" => &mut self.inputs,
            _ => return,
        };
        if !list.iter().any(|known| known == name) {
            list.push(name.to_owned());
        }
    }

    fn walk(&mut self, expr: &IdedExpr) {
        match &expr.expr {
            Expr::Select(select) => {
                if let Expr::Ident(root) = &select.operand.expr {
                    self.note(root, &select.field);
                }
                self.walk(&select.operand);
            }
            Expr::Call(call) => {
                if call.func_name == operators::INDEX
                    && let [target, key] = call.args.as_slice()
                    && let (Expr::Ident(root), Expr::Literal(LiteralValue::String(name))) =
                        (&target.expr, &key.expr)
                {
                    self.note(root, name.inner());
                }
                if let Some(target) = &call.target {
                    self.walk(target);
                }
                call.args.iter().for_each(|arg| self.walk(arg));
            }
            Expr::Comprehension(comprehension) => {
                for part in [
                    &comprehension.iter_range,
                    &comprehension.accu_init,
                    &comprehension.loop_cond,
                    &comprehension.loop_step,
                    &comprehension.result,
                ] {
                    self.walk(part);
                }
            }
            Expr::List(list) => list.elements.iter().for_each(|element| self.walk(element)),
            Expr::Map(map) => map
                .entries
                .iter()
                .for_each(|entry| self.walk_entry(&entry.expr)),
            Expr::Struct(object) => object
                .entries
                .iter()
                .for_each(|entry| self.walk_entry(&entry.expr)),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn walk_entry(&mut self, entry: &EntryExpr) {
        match entry {
            EntryExpr::StructField(field) => self.walk(&field.value),
            EntryExpr::MapEntry(entry) => {
                self.walk(&entry.key);
                self.walk(&entry.value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_steps_in_selects_indexes_macros_and_lists() {
        let expr = Expression::compile(
            r#"has(steps.a.x) && steps["b-2"].y > 1 && [steps.c].all(s, s.ok) && {"k": steps.d}.k != null"#,
        )
        .unwrap();
        assert_eq!(expr.step_refs(), ["a", "b-2", "c", "d"]);
    }

    #[test]
    fn expressions_past_the_limits_are_refused_before_parsing() {
        let refused = |source: &str| match Expression::compile(source) {
            Err(Error::InvalidExpression { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        // Seven nested comprehensions: seconds and hundreds of megabytes when evaluated.
        let mut nested = "x".to_owned();
        for depth in 0..7 {
            nested = format!("[1, 2, 3].map(v{depth}, {nested})");
        }
        assert!(refused(&nested).contains("comprehensions"));
        assert!(Expression::compile("[1, 2].map(a, [3, 4].filter(b, b > a)).size() > 0").is_ok());
        // A member chain of 20,000 segments (it overflowed the stack).
        let chain = format!("body{}", ".a".repeat(20_000));
        assert!(refused(&chain).contains("bytes long"));
        let chain = format!("body{}", ".a".repeat(300));
        assert!(refused(&chain).contains("operators and member accesses"));
        let parens = format!("{}1{}", "(".repeat(40), ")".repeat(40));
        assert!(refused(&parens).contains("nest deeper"));
        assert!(refused(&"1 + ".repeat(2_000)).contains("bytes long"));
        // What is inside a string does not count.
        let quoted = format!(
            r#"body.note == '{}' && body.x == "{}""#,
            ".(".repeat(500),
            "[".repeat(500)
        );
        assert!(Expression::compile(&quoted).is_ok(), "{quoted}");
        let triple = format!("body.note == '''{}'''", "a.'b".repeat(100));
        assert!(Expression::compile(&triple).is_ok(), "{triple}");
    }

    #[test]
    fn a_long_expression_is_refused_wherever_its_characters_fall() {
        // Byte 4,096 inside a three-byte character, at each of its offsets (issue 31: it
        // panicked every command that validated it).
        for pad in 0..3 {
            let source = format!("{}'{}'", "a".repeat(pad), "é€".repeat(2_000));
            match Expression::compile(&source) {
                Err(Error::InvalidExpression { line, column, .. }) => {
                    assert_eq!(line, 1);
                    assert!(column > 1000, "{column}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn response_variables_are_not_step_refs() {
        let expr = Expression::compile("body.state == 'ACTIVE' && status == 200").unwrap();
        assert!(expr.step_refs().is_empty());
        assert!(expr.input_refs().is_empty());
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        match Expression::compile("a +* b").unwrap_err() {
            Error::InvalidExpression { line, column, .. } => assert_eq!((line, column), (1, 4)),
            other => panic!("unexpected {other:?}"),
        }
    }
}

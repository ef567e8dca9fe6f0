//! CEL expressions (`when`, `poll.until`, `expect`, outputs), compiled once.
//!
//! Expressions see `inputs` (run inputs), `steps` (step id → output), `vars` (saved variables)
//! and, where a response is at hand, `status`, `headers` and `body`. Compiling one also lists the
//! step ids and input names it reads, which is how the graph infers edges from conditions.

use std::fmt;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

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
    program: Arc<cel::Program>,
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

impl Expression {
    /// Parses `source`; a syntax error names its 1-based line and column.
    pub fn compile(source: &str) -> Result<Expression, Error> {
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
        Ok(Expression {
            source: source.into(),
            program: Arc::new(program),
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

    /// The compiled program, for evaluation.
    pub fn program(&self) -> &cel::Program {
        &self.program
    }
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
                if call.func_name == cel::common::ast::operators::INDEX
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

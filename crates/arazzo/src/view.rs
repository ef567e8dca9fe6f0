//! A workflow's plan drawn for people (Mermaid, Graphviz DOT, text) or written for programs
//! (JSON): its steps, what each calls, which are control points, and what each waits for
//! (only the waits no other wait implies, so the drawing shows the order and not every pair).

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::model::{Step, StepTarget, Workflow};
use crate::waits::Waits;

/// The views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum View {
    /// A Mermaid `flowchart`; control points are drawn as hexagons.
    Mermaid,
    /// A Graphviz `digraph`; control points are drawn as hexagons.
    Dot,
    /// One block per level, each step with what it calls and waits for.
    Text,
    /// `{workflow_id, steps: [{id, calls, control, waits}], levels: [[id…]…]}`.
    Json,
}

/// `workflow` drawn from its `plan`.
pub fn render(workflow: &Workflow, plan: &Waits, view: View) -> String {
    let direct = direct_waits(plan, workflow.steps.len());
    let id = |step: usize| workflow.steps[step].step_id.as_str();
    match view {
        View::Json => {
            let steps: Vec<serde_json::Value> = workflow
                .steps
                .iter()
                .enumerate()
                .map(|(index, step)| {
                    serde_json::json!({
                        "id": step.step_id,
                        "calls": calls(step),
                        "control": plan.is_control(index),
                        "waits": direct[index].iter().map(|before| id(*before)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let levels: Vec<Vec<&str>> = plan
                .levels()
                .iter()
                .map(|level| level.iter().map(|step| id(*step)).collect())
                .collect();
            let mut out = serde_json::to_string_pretty(&serde_json::json!({
                "workflow_id": workflow.workflow_id,
                "steps": steps,
                "levels": levels,
            }))
            .unwrap_or_default();
            out.push('\n');
            out
        }
        View::Text => {
            let plural = |count: usize, word: &str| {
                format!("{count} {word}{}", if count == 1 { "" } else { "s" })
            };
            let mut out = format!(
                "{} — {}, {}\n",
                workflow.workflow_id,
                plural(workflow.steps.len(), "step"),
                plural(plan.levels().len(), "level")
            );
            for (number, level) in plan.levels().iter().enumerate() {
                let _ = writeln!(out, "level {number}");
                for step in level {
                    let control = if plan.is_control(*step) {
                        " [control]"
                    } else {
                        ""
                    };
                    let waits: Vec<&str> = direct[*step].iter().map(|before| id(*before)).collect();
                    let after = if waits.is_empty() {
                        String::new()
                    } else {
                        format!(" after {}", waits.join(", "))
                    };
                    let _ = writeln!(
                        out,
                        "  {}  {}{control}{after}",
                        id(*step),
                        calls(&workflow.steps[*step])
                    );
                }
            }
            out
        }
        View::Mermaid => {
            let mut out = String::from("flowchart TD\n");
            for (index, step) in workflow.steps.iter().enumerate() {
                let label = format!("{}<br/>{}", step.step_id, calls(step)).replace('"', "#quot;");
                let (open, close) = if plan.is_control(index) {
                    ("{{", "}}")
                } else {
                    ("[", "]")
                };
                let _ = writeln!(out, "  s{index}{open}\"{label}\"{close}");
            }
            for (index, waits) in direct.iter().enumerate() {
                for before in waits {
                    let _ = writeln!(out, "  s{before} --> s{index}");
                }
            }
            out
        }
        View::Dot => {
            let escape = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
            let mut out = format!(
                "digraph \"{}\" {{\n  rankdir=TB;\n",
                escape(&workflow.workflow_id)
            );
            for (index, step) in workflow.steps.iter().enumerate() {
                let shape = if plan.is_control(index) {
                    "hexagon"
                } else {
                    "box"
                };
                let _ = writeln!(
                    out,
                    "  s{index} [shape={shape}, label=\"{}\\n{}\"];",
                    escape(&step.step_id),
                    escape(&calls(step))
                );
            }
            for (index, waits) in direct.iter().enumerate() {
                for before in waits {
                    let _ = writeln!(out, "  s{before} -> s{index};");
                }
            }
            out.push_str("}\n");
            out
        }
    }
}

/// What a step calls, for labels.
fn calls(step: &Step) -> String {
    match step.target() {
        Some(StepTarget::OperationId(id)) => id.to_owned(),
        Some(StepTarget::OperationPath(path)) => path.to_owned(),
        Some(StepTarget::ChannelPath(path)) => format!("channel {path}"),
        Some(StepTarget::Workflow(id)) => format!("workflow {id}"),
        None => String::new(),
    }
}

/// Each step's waits that no other of its waits already implies (the plan's waits point
/// backwards or form no loop, so earlier steps' reductions are complete when a step is read).
fn direct_waits(plan: &Waits, steps: usize) -> Vec<BTreeSet<usize>> {
    // Everything each step waits for, directly or not, in an order where waits come first.
    let order: Vec<usize> = plan.levels().into_iter().flatten().collect();
    let mut reach: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); steps];
    for &step in &order {
        let mut all = BTreeSet::new();
        for &before in plan.waits(step) {
            all.insert(before);
            all.extend(reach[before].iter().copied());
        }
        reach[step] = all;
    }
    (0..steps)
        .map(|step| {
            plan.waits(step)
                .iter()
                .copied()
                .filter(|before| {
                    !plan
                        .waits(step)
                        .iter()
                        .any(|other| other != before && reach[*other].contains(before))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(view: View) -> String {
        let text = "arazzo: 1.1.0\ninfo: {title: T, version: '1'}\nsourceDescriptions: [{name: api, url: ./api.yaml}]\nworkflows:\n  - workflowId: w\n    steps:\n      - {stepId: a, operationId: getA}\n      - {stepId: b, operationId: getB}\n      - {stepId: gate, operationId: check, onSuccess: [{name: stop, type: end, criteria: [{condition: $statusCode == 204}]}]}\n      - {stepId: c, operationId: getC}\n";
        let document = crate::load(text, "t.arazzo.yaml").unwrap();
        let workflow = &document.workflows[0];
        let plan = Waits::of(workflow, None).unwrap();
        render(workflow, &plan, view)
    }

    #[test]
    fn the_plan_is_drawn_with_direct_waits_only() {
        assert_eq!(
            drawn(View::Text),
            "w — 4 steps, 3 levels\nlevel 0\n  a  getA\n  b  getB\nlevel 1\n  gate  check [control] after a, b\nlevel 2\n  c  getC after gate\n"
        );
        let mermaid = drawn(View::Mermaid);
        assert!(mermaid.contains("s2{{\"gate<br/>check\"}}"), "{mermaid}");
        assert!(
            mermaid.contains("s2 --> s3") && !mermaid.contains("s0 --> s3"),
            "{mermaid}"
        );
        let dot = drawn(View::Dot);
        assert!(dot.contains("s2 [shape=hexagon"), "{dot}");
        let json: serde_json::Value = serde_json::from_str(&drawn(View::Json)).unwrap();
        assert_eq!(
            json["levels"],
            serde_json::json!([["a", "b"], ["gate"], ["c"]])
        );
        assert_eq!(json["steps"][3]["waits"], serde_json::json!(["gate"]));
    }
}

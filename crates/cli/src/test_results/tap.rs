//! The TAP 13 report: one test point per workflow, with a YAML block saying why a failed one
//! failed (each failed step, its error and its failed expectations); a workflow left out by
//! `--fail-fast` is `# SKIP`.

use std::fmt::Write;

use serde_json::{Value, json};
use wayline_core::StepStatus;

use super::{CaseStatus, TestResults};

/// The report.
pub(crate) fn render(results: &TestResults) -> String {
    let mut out = format!("TAP version 13\n1..{}\n", results.cases.len());
    for (index, case) in results.cases.iter().enumerate() {
        let number = index + 1;
        // A `#` would start a directive: keep it out of the description.
        let description = format!("{} ({})", case.path, case.id).replace('#', "\\#");
        match case.verdict {
            CaseStatus::Passed => {
                let _ = writeln!(out, "ok {number} - {description}");
            }
            CaseStatus::Skipped => {
                let reason = case.reason.as_deref().unwrap_or("not run");
                let _ = writeln!(out, "ok {number} - {description} # SKIP {reason}");
            }
            CaseStatus::Failed | CaseStatus::Errored => {
                let _ = writeln!(out, "not ok {number} - {description}");
                let mut diagnostics = serde_json::Map::new();
                diagnostics.insert("message".into(), json!(case.why().unwrap_or_default()));
                diagnostics.insert(
                    "severity".into(),
                    json!(if case.verdict == CaseStatus::Errored {
                        "error"
                    } else {
                        "fail"
                    }),
                );
                let failed: Vec<Value> = case
                    .run
                    .iter()
                    .flat_map(|run| &run.step_results)
                    .filter(|step| step.status == StepStatus::Failed)
                    .map(|step| {
                        json!({
                            "step": step.step_id,
                            "error": step.error,
                            "failed_expectations": step
                                .assertions
                                .iter()
                                .filter(|checked| !checked.passed)
                                .map(ToString::to_string)
                                .collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                if !failed.is_empty() {
                    diagnostics.insert("steps".into(), Value::Array(failed));
                }
                let yaml = serde_norway::to_string(&Value::Object(diagnostics)).unwrap_or_default();
                out.push_str("  ---\n");
                for line in yaml.lines() {
                    let _ = writeln!(out, "  {line}");
                }
                out.push_str("  ...\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_results::tests::sample;

    #[test]
    fn each_workflow_is_a_test_point_with_diagnostics_when_it_failed() {
        let tap = render(&sample());
        let lines: Vec<&str> = tap.lines().collect();
        assert_eq!(
            &lines[..3],
            [
                "TAP version 13",
                "1..3",
                "ok 1 - tests/health.yaml (health)"
            ]
        );
        assert_eq!(lines[3], "not ok 2 - tests/users.yaml (users)");
        assert_eq!(lines[4], "  ---");
        assert!(tap.contains("  - step: get"), "{tap}");
        assert!(tap.contains("not ok 3 - tests/broken.yaml (broken)"));
        // The diagnostics are YAML a TAP consumer reads back.
        let block: String = tap
            .split("  ---\n")
            .nth(1)
            .unwrap()
            .split("  ...\n")
            .next()
            .unwrap()
            .lines()
            .map(|line| format!("{}\n", &line[2..]))
            .collect();
        let read: Value = serde_norway::from_str(&block).unwrap();
        assert_eq!(read["steps"][0]["step"], "get");
        assert_eq!(read["severity"], "fail");
    }
}

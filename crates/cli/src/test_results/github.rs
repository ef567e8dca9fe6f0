//! GitHub Actions annotations (`--report github`): an `::error` workflow command per failed
//! step (at its line in the workflow file when it can be found) and per workflow that could not
//! run, so a pull request shows each failure beside the file.

use super::{CaseStatus, TestResults};

/// A message escaped as GitHub's workflow commands want it.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value escaped (`:` and `,` separate properties).
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The annotations, one per line.
pub(crate) fn render(results: &TestResults) -> String {
    let mut out = String::new();
    for case in &results.cases {
        match case.verdict {
            CaseStatus::Passed | CaseStatus::Skipped => {}
            CaseStatus::Errored => {
                out.push_str(&format!(
                    "::error file={},title={}::{}\n",
                    property(&case.path),
                    property(&format!("wayline: {} could not run", case.id)),
                    data(case.reason.as_deref().unwrap_or("errored"))
                ));
            }
            CaseStatus::Failed => {
                let mut any = false;
                for step in case.failed_steps() {
                    any = true;
                    let line = case
                        .step_line(&step.step_id)
                        .map(|line| format!(",line={line}"))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "::error file={}{line},title={}::{}\n",
                        property(&case.path),
                        property(&format!("wayline: {} step {}", case.id, step.step_id)),
                        data(step.error.as_deref().unwrap_or("failed"))
                    ));
                }
                if !any {
                    out.push_str(&format!(
                        "::error file={},title={}::{}\n",
                        property(&case.path),
                        property(&format!("wayline: {}", case.id)),
                        data(&case.why().unwrap_or_default())
                    ));
                }
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
    fn failures_are_annotated_at_their_step() {
        let out = render(&sample());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with("::error file=tests/users.yaml,line=6,title=wayline%3A users step get::expectation failed"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with(
                "::error file=tests/broken.yaml,title=wayline%3A broken could not run::"
            )
        );
        assert_eq!(data("a%b\nc"), "a%25b%0Ac");
    }
}

//! The JUnit XML report, valid against the JUnit schema of Jenkins (whose format GitLab,
//! GitHub's test reporters and Azure DevOps read too): `<testsuites>` with one `<testsuite>` per
//! workflow (its file in the property `path`) and one `<testcase>` per step (`classname` the
//! workflow's id). A failed step has a `<failure>` whose `message` is its error and whose text
//! lists each expectation checked; a skipped step has `<skipped>` saying why; a workflow that
//! could not run is one `<testcase>` with an `<error>`, and one left out by `--fail-fast` one
//! with `<skipped>`.

use std::fmt::Write;

use wayline_core::{StepResult, StepStatus};

use super::{Case, CaseStatus, TestResults};

/// `text` safe in XML content and attribute values: markup escaped, and the characters XML
/// 1.0 cannot hold (control characters but tab, newline and carriage return) dropped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            ch if u32::from(ch) < 0x20 || ch == '\u{FFFE}' || ch == '\u{FFFF}' => {}
            ch => out.push(ch),
        }
    }
    out
}

fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// The report.
pub(crate) fn render(results: &TestResults) -> String {
    let mut totals = Counts::default();
    let mut body = String::new();
    for (index, case) in results.cases.iter().enumerate() {
        let (xml, counts) = render_case(case, index);
        totals.add(counts);
        body.push_str(&xml);
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"wayline\" tests=\"{}\" failures=\"{}\" errors=\"{}\" disabled=\"{}\" time=\"{}\">\n{body}</testsuites>\n",
        totals.tests,
        totals.failures,
        totals.errors,
        totals.skipped,
        seconds(u64::try_from(results.duration.as_millis()).unwrap_or(u64::MAX)),
    )
}

/// The tests of a suite, and how many of them failed, errored or were skipped.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.tests += other.tests;
        self.failures += other.failures;
        self.errors += other.errors;
        self.skipped += other.skipped;
    }
}

fn render_case(case: &Case, index: usize) -> (String, Counts) {
    let mut cases = String::new();
    let mut counts = Counts::default();
    let classname = escape(&case.id);
    match &case.run {
        Some(run) => {
            for step in &run.step_results {
                let (xml, outcome) = step_case(step, &classname);
                counts.add(outcome);
                cases.push_str(&xml);
            }
        }
        None => {
            let reason = escape(case.reason.as_deref().unwrap_or("not run"));
            let (element, name) = if case.verdict == CaseStatus::Skipped {
                counts.skipped = 1;
                (format!("      <skipped>{reason}</skipped>\n"), "not run")
            } else {
                counts.errors = 1;
                (
                    format!("      <error message=\"{reason}\" type=\"load\">{reason}</error>\n"),
                    "load",
                )
            };
            counts.tests = 1;
            let _ = write!(
                cases,
                "    <testcase name=\"{name}\" classname=\"{classname}\" time=\"0.000\">\n{element}    </testcase>\n"
            );
        }
    }
    let xml = format!(
        "  <testsuite name=\"{classname}\" id=\"{index}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\" hostname=\"localhost\">\n    <properties>\n      <property name=\"path\" value=\"{}\"/>\n      <property name=\"workflow\" value=\"{}\"/>\n    </properties>\n{cases}  </testsuite>\n",
        counts.tests,
        counts.failures,
        counts.errors,
        counts.skipped,
        seconds(u64::try_from(case.duration.as_millis()).unwrap_or(u64::MAX)),
        case.started_at.format("%Y-%m-%dT%H:%M:%S"),
        escape(&case.path),
        escape(&case.name),
    );
    (xml, counts)
}

/// One step's `<testcase>`, and what it counts for.
fn step_case(step: &StepResult, classname: &str) -> (String, Counts) {
    let mut inner = String::new();
    let mut counts = Counts {
        tests: 1,
        ..Counts::default()
    };
    if step.status == StepStatus::Failed {
        counts.failures = 1;
        let message = step.error.as_deref().unwrap_or("failed");
        let mut details = String::new();
        for checked in &step.assertions {
            let _ = writeln!(
                details,
                "{} {checked}",
                if checked.passed { "ok    " } else { "FAILED" }
            );
        }
        if details.is_empty() {
            details = message.to_owned();
        }
        let kind = if step.assertions.iter().any(|checked| !checked.passed) {
            "expectation"
        } else {
            "step"
        };
        let _ = writeln!(
            inner,
            "      <failure message=\"{}\" type=\"{kind}\">{}</failure>",
            escape(message),
            escape(&details)
        );
    } else if matches!(step.status, StepStatus::Skipped | StepStatus::Pending) {
        counts.skipped = 1;
        let _ = writeln!(
            inner,
            "      <skipped>{}</skipped>",
            escape(step.error.as_deref().unwrap_or("not run"))
        );
    }
    let opening = format!(
        "    <testcase name=\"{}\" classname=\"{classname}\" time=\"{}\" assertions=\"{}\"",
        escape(&step.step_id),
        seconds(step.duration_ms.unwrap_or(0)),
        step.assertions.len()
    );
    let xml = if inner.is_empty() {
        format!("{opening}/>\n")
    } else {
        format!("{opening}>\n{inner}    </testcase>\n")
    };
    (xml, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_results::tests::sample;

    #[test]
    fn every_step_is_a_testcase_and_the_counts_add_up() {
        let xml = render(&sample());
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"wayline\" tests=\"5\" failures=\"1\" errors=\"1\" disabled=\"1\" time=\"1.234\""), "{xml}");
        assert!(xml.contains(
            "<testcase name=\"get\" classname=\"users\" time=\"0.030\" assertions=\"1\">"
        ));
        assert!(
            xml.contains("FAILED body name equals: expected &quot;Bob&quot;, got &quot;Ada&quot;")
        );
        assert!(
            xml.contains("&lt;&amp;&gt;"),
            "markup in an error is escaped"
        );
        assert!(xml.contains("<skipped>dependency `get` failed</skipped>"));
        assert!(xml.contains(
            "<error message=\"tests/broken.yaml:3:5: unknown field `stepz`\" type=\"load\">"
        ));
    }

    #[test]
    fn text_xml_cannot_hold_is_dropped() {
        assert_eq!(escape("a\u{1}b\tc\u{FFFF}"), "ab\tc");
        assert_eq!(escape("'\""), "&apos;&quot;");
    }
}

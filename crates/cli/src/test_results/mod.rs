//! What `wayline test` found — one [`Case`] per workflow, passed, failed, errored or skipped —
//! and the reports written from it: JUnit XML ([`junit`]), TAP ([`tap`]), JSON (here),
//! GitHub annotations ([`github`]) and an HTTP Archive of every exchange ([`har`]). A leaf: it
//! uses no other module of the CLI, and reads run records, never the engine.

pub(crate) mod github;
pub(crate) mod har;
pub(crate) mod junit;
pub(crate) mod tap;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use wayline_core::{Run, RunStatus, StepResult, StepStatus};
use wayline_executor::Exchange;

/// How a workflow's test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseStatus {
    /// Its run succeeded.
    Passed,
    /// Its run failed (a step, an expectation) or was cancelled.
    Failed,
    /// It could not run: a file that does not load, an invalid workflow, bad inputs.
    Errored,
    /// Not run (`--fail-fast` after a failure).
    Skipped,
}

impl CaseStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Passed => "passed",
            CaseStatus::Failed => "failed",
            CaseStatus::Errored => "errored",
            CaseStatus::Skipped => "skipped",
        }
    }
}

/// One workflow's test.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The file, as given (`-` for standard input).
    pub(crate) path: String,
    /// The workflow's id (the file's name when it did not load).
    pub(crate) id: String,
    /// Its name.
    pub(crate) name: String,
    /// How it ended.
    pub(crate) verdict: CaseStatus,
    /// Why it errored or was skipped.
    pub(crate) reason: Option<String>,
    /// Its run, when it ran.
    pub(crate) run: Option<Run>,
    /// When it started.
    pub(crate) started_at: DateTime<Utc>,
    /// How long it took.
    pub(crate) duration: Duration,
    /// The exchanges of its run (with `--har`).
    pub(crate) exchanges: Vec<Exchange>,
    /// The workflow's text (for the line of a failed step).
    pub(crate) source: Option<String>,
}

impl Case {
    /// A case that did not run, for `reason`.
    pub(crate) fn not_run(path: &str, id: &str, verdict: CaseStatus, reason: String) -> Case {
        Case {
            path: path.to_owned(),
            id: id.to_owned(),
            name: String::new(),
            verdict,
            reason: Some(reason),
            run: None,
            started_at: Utc::now(),
            duration: Duration::ZERO,
            exchanges: Vec::new(),
            source: None,
        }
    }

    /// The verdict a run deserves.
    pub(crate) fn verdict_of(run: &Run) -> CaseStatus {
        if run.status == RunStatus::Success {
            CaseStatus::Passed
        } else {
            CaseStatus::Failed
        }
    }

    /// The steps that failed, in the record's order.
    pub(crate) fn failed_steps(&self) -> impl Iterator<Item = &StepResult> {
        self.run
            .iter()
            .flat_map(|run| &run.step_results)
            .filter(|step| step.status == StepStatus::Failed)
    }

    /// Why it did not pass, in one line: the first failed step and its error, or the reason.
    pub(crate) fn why(&self) -> Option<String> {
        if let Some(step) = self.failed_steps().next() {
            return Some(format!(
                "step `{}`: {}",
                step.step_id,
                step.error.as_deref().unwrap_or("failed")
            ));
        }
        if let Some(run) = self
            .run
            .as_ref()
            .filter(|run| run.status != RunStatus::Success)
        {
            return Some(format!("the run ended {}", run.status.as_str()));
        }
        self.reason.clone()
    }

    /// The 1-based line of step `id` in the workflow's text, when it can be found.
    pub(crate) fn step_line(&self, id: &str) -> Option<usize> {
        let source = self.source.as_deref()?;
        let quoted = [
            format!("id: {id}"),
            format!("id: \"{id}\""),
            format!("id: '{id}'"),
            format!("\"id\": \"{id}\""),
        ];
        source
            .lines()
            .position(|line| {
                let line = line
                    .trim_start()
                    .trim_start_matches("- ")
                    .trim_end()
                    .trim_end_matches(',');
                quoted.iter().any(|form| line == form)
            })
            .map(|index| index + 1)
    }

    /// One line for the terminal: `PASS  path (id, 3 steps, 120 ms)`.
    pub(crate) fn line(&self) -> String {
        let tag = match self.verdict {
            CaseStatus::Passed => "PASS ",
            CaseStatus::Failed => "FAIL ",
            CaseStatus::Errored => "ERROR",
            CaseStatus::Skipped => "SKIP ",
        };
        let steps = self.run.as_ref().map_or(0, |run| run.step_results.len());
        let mut line = format!(
            "{tag} {} ({}, {steps} step{}, {} ms)",
            self.path,
            self.id,
            if steps == 1 { "" } else { "s" },
            self.duration.as_millis()
        );
        if self.verdict != CaseStatus::Passed
            && let Some(why) = self.why()
        {
            // The first line: a document error's snippet follows on the next ones.
            line.push_str(": ");
            line.push_str(why.lines().next().unwrap_or_default());
        }
        line
    }

    fn json(&self) -> Value {
        json!({
            "path": self.path,
            "id": self.id,
            "name": self.name,
            "status": self.verdict.as_str(),
            "started_at": self.started_at.to_rfc3339(),
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "error": if self.verdict == CaseStatus::Passed { None } else { self.why() },
            "run": self.run,
        })
    }
}

/// A whole `wayline test`.
#[derive(Debug, Clone)]
pub(crate) struct TestResults {
    /// The workflows, in the order they were found.
    pub(crate) cases: Vec<Case>,
    /// When it started.
    pub(crate) started_at: DateTime<Utc>,
    /// How long it took.
    pub(crate) duration: Duration,
}

/// How many cases ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    pub(crate) errored: usize,
    pub(crate) skipped: usize,
}

impl Counts {
    pub(crate) fn total(self) -> usize {
        self.passed + self.failed + self.errored + self.skipped
    }
}

impl TestResults {
    pub(crate) fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        for case in &self.cases {
            match case.verdict {
                CaseStatus::Passed => counts.passed += 1,
                CaseStatus::Failed => counts.failed += 1,
                CaseStatus::Errored => counts.errored += 1,
                CaseStatus::Skipped => counts.skipped += 1,
            }
        }
        counts
    }

    /// True when every workflow passed.
    pub(crate) fn passed(&self) -> bool {
        self.cases
            .iter()
            .all(|case| case.verdict == CaseStatus::Passed)
    }

    /// `4 workflows: 3 passed, 1 failed (0.4 s)`.
    pub(crate) fn summary(&self) -> String {
        let counts = self.counts();
        let mut parts = vec![format!("{} passed", counts.passed)];
        for (count, word) in [
            (counts.failed, "failed"),
            (counts.errored, "errored"),
            (counts.skipped, "skipped"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {word}"));
            }
        }
        format!(
            "{} workflow{}: {} ({:.1} s)",
            counts.total(),
            if counts.total() == 1 { "" } else { "s" },
            parts.join(", "),
            self.duration.as_secs_f64()
        )
    }

    /// The JSON report (`--report json=PATH`, `--format json`).
    pub(crate) fn json(&self) -> Value {
        let counts = self.counts();
        json!({
            "wayline": env!("CARGO_PKG_VERSION"),
            "summary": {
                "workflows": counts.total(),
                "passed": counts.passed,
                "failed": counts.failed,
                "errored": counts.errored,
                "skipped": counts.skipped,
                "started_at": self.started_at.to_rfc3339(),
                "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            },
            "workflows": self.cases.iter().map(Case::json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Three results: a pass, a failed expectation, a file that did not load.
    pub(crate) fn sample() -> TestResults {
        let run: Run = serde_json::from_value(json!({
            "id": "run-1", "workflow_id": "users", "status": "failed",
            "step_results": [
                {"step_id": "list", "status": "success", "output_data": {}, "duration_ms": 12,
                 "assertions": [{"subject": "status", "check": "in", "passed": true, "expected": "200", "actual": "200"}]},
                {"step_id": "get", "status": "failed", "output_data": {}, "duration_ms": 30,
                 "error": "expectation failed: body name equals: expected \"Bob\", got \"Ada\" <&>",
                 "assertions": [{"subject": "body name", "check": "equals", "passed": false, "expected": "\"Bob\"", "actual": "\"Ada\""}]},
                {"step_id": "after", "status": "skipped", "output_data": {}, "error": "dependency `get` failed"}
            ],
            "user_inputs": {}
        }))
        .unwrap();
        let mut passing = run.clone();
        passing.status = RunStatus::Success;
        passing.id = "run-0".into();
        passing.workflow_id = "health".into();
        passing.step_results = vec![run.step_results[0].clone()];
        let at: DateTime<Utc> = "2026-11-25T10:00:00Z".parse().unwrap();
        let case = |path: &str, id: &str, run: Run, source: &str| Case {
            path: path.into(),
            id: id.into(),
            name: id.to_uppercase(),
            verdict: Case::verdict_of(&run),
            reason: None,
            run: Some(run),
            started_at: at,
            duration: Duration::from_millis(42),
            exchanges: Vec::new(),
            source: Some(source.into()),
        };
        TestResults {
            cases: vec![
                case(
                    "tests/health.yaml",
                    "health",
                    passing,
                    "id: health\nsteps:\n  - id: list\n",
                ),
                case(
                    "tests/users.yaml",
                    "users",
                    run,
                    "id: users\nname: Users\nsteps:\n  - id: list\n    tool_id: t\n  - id: get\n    tool_id: t\n",
                ),
                Case::not_run(
                    "tests/broken.yaml",
                    "broken",
                    CaseStatus::Errored,
                    "tests/broken.yaml:3:5: unknown field `stepz`".into(),
                ),
            ],
            started_at: at,
            duration: Duration::from_millis(1234),
        }
    }

    #[test]
    fn lines_and_summary_say_what_happened() {
        let results = sample();
        assert_eq!(
            results.cases[0].line(),
            "PASS  tests/health.yaml (health, 1 step, 42 ms)"
        );
        assert!(results.cases[1].line().starts_with(
            "FAIL  tests/users.yaml (users, 3 steps, 42 ms): step `get`: expectation failed"
        ));
        assert!(
            results.cases[2]
                .line()
                .starts_with("ERROR tests/broken.yaml")
        );
        assert_eq!(
            results.summary(),
            "3 workflows: 1 passed, 1 failed, 1 errored (1.2 s)"
        );
        assert!(!results.passed());
        assert_eq!(results.cases[1].step_line("get"), Some(6));
        assert_eq!(results.cases[1].step_line("nope"), None);
    }

    #[test]
    fn the_json_report_counts_and_keeps_each_run() {
        let report = sample().json();
        assert_eq!(report["summary"]["workflows"], 3);
        assert_eq!(report["summary"]["failed"], 1);
        assert_eq!(report["workflows"][1]["status"], "failed");
        assert_eq!(
            report["workflows"][1]["run"]["step_results"][1]["step_id"],
            "get"
        );
        assert_eq!(report["workflows"][2]["run"], Value::Null);
    }
}

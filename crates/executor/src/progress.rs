//! Showing a run to a person: a [`RunObserver`] that prints progress, and a summary of the
//! finished run.
//!
//! In a terminal ([`ProgressStyle::Live`]) finished steps scroll by while the steps still running
//! stay at the bottom, one line each, redrawn on every event. Elsewhere
//! ([`ProgressStyle::Plain`]) each event is one plain line, fit for logs and CI.

use std::fmt;
use std::io::Write;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use indexmap::IndexMap;
use wayline_core::{Run, RunEvent, RunObserver, RunStatus, StepResult, StepStatus};

/// How progress is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressStyle {
    /// Redraw the running steps in place (for a terminal).
    Live,
    /// One line per event (for logs and pipes).
    Plain,
}

/// Prints run progress to a writer (usually stderr).
///
/// ```
/// use std::sync::Arc;
/// use wayline_executor::{Progress, ProgressStyle};
///
/// let progress = Progress::new(std::io::sink(), ProgressStyle::Plain);
/// # let _ = Arc::new(progress);
/// ```
pub struct Progress {
    style: ProgressStyle,
    state: Mutex<State>,
}

struct State {
    out: Box<dyn Write + Send>,
    running: IndexMap<String, Running>,
    drawn: usize,
}

struct Running {
    since: Instant,
    attempt: u32,
    note: String,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("style", &self.style)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// Progress written to `out` in `style`.
    pub fn new(out: impl Write + Send + 'static, style: ProgressStyle) -> Self {
        Progress {
            style,
            state: Mutex::new(State {
                out: Box::new(out),
                running: IndexMap::new(),
                drawn: 0,
            }),
        }
    }

    /// Progress on stderr: live when stderr is a terminal, plain otherwise.
    pub fn stderr() -> Self {
        use std::io::IsTerminal;
        let style = if std::io::stderr().is_terminal() {
            ProgressStyle::Live
        } else {
            ProgressStyle::Plain
        };
        Progress::new(std::io::stderr(), style)
    }
}

impl RunObserver for Progress {
    fn on_event(&self, event: &RunEvent<'_>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut lines = Vec::new();
        match event {
            RunEvent::RunStarted { run } => lines.push(format!(
                "run {} of `{}`: {} steps",
                run.id,
                run.workflow_id,
                run.step_results.len()
            )),
            RunEvent::StepStarted { step_id, .. } => {
                state.running.insert(
                    (*step_id).to_owned(),
                    Running {
                        since: Instant::now(),
                        attempt: 0,
                        note: String::new(),
                    },
                );
                if self.style == ProgressStyle::Plain {
                    lines.push(format!("  start   {step_id}"));
                }
            }
            RunEvent::Attempt {
                step_id, attempt, ..
            } => {
                if let Some(running) = state.running.get_mut(*step_id) {
                    running.attempt = *attempt;
                }
            }
            RunEvent::RetryScheduled {
                step_id,
                delay,
                reason,
                ..
            } => {
                let note = format!("retry in {} ms: {reason}", delay.as_millis());
                if self.style == ProgressStyle::Plain {
                    lines.push(format!("  retry   {step_id} {note}"));
                }
                if let Some(running) = state.running.get_mut(*step_id) {
                    running.note = note;
                }
            }
            RunEvent::StepFinished { result, .. } => {
                state.running.shift_remove(&result.step_id);
                lines.push(format!("  {}", step_line(result)));
            }
            RunEvent::RunFinished { run } => {
                state.running.clear();
                lines.push(format!("run {}: {}", status_word(run.status), counts(run)));
            }
            _ => {}
        }
        let _ = self.draw(&mut state, &lines);
    }
}

impl Progress {
    fn draw(&self, state: &mut State, lines: &[String]) -> std::io::Result<()> {
        let State {
            out,
            running,
            drawn,
        } = state;
        if self.style == ProgressStyle::Live && *drawn > 0 {
            // Up to the first running line, then clear to the end of the screen.
            write!(out, "\x1b[{drawn}F\x1b[J")?;
        }
        for line in lines {
            writeln!(out, "{line}")?;
        }
        if self.style == ProgressStyle::Live {
            for (step, running) in running.iter() {
                let attempt = if running.attempt > 1 {
                    format!(" attempt {}", running.attempt)
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "  ...     {step} {:.1}s{attempt} {}",
                    running.since.elapsed().as_secs_f64(),
                    running.note
                )?;
            }
            *drawn = running.len();
        }
        out.flush()
    }
}

fn step_line(result: &StepResult) -> String {
    let timing = result
        .duration_ms
        .map(|ms| format!(" {ms} ms"))
        .unwrap_or_default();
    let status = result
        .response_status
        .map(|status| format!(" HTTP {status}"))
        .unwrap_or_default();
    let attempts = if result.attempts > 1 {
        format!(", {} attempts", result.attempts)
    } else {
        String::new()
    };
    let error = result
        .error
        .as_deref()
        .map(|error| format!(": {error}"))
        .unwrap_or_default();
    let word = match result.status {
        StepStatus::Success => "ok     ",
        StepStatus::Failed => "FAILED ",
        StepStatus::Skipped => "skipped",
        StepStatus::UnknownOutcome => "UNKNOWN",
        StepStatus::Cancelled => "stopped",
        _ => "?      ",
    };
    format!("{word} {}{status}{timing}{attempts}{error}", result.step_id)
}

fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Success => "succeeded",
        RunStatus::Failed => "FAILED",
        RunStatus::Cancelled => "cancelled",
        RunStatus::TimedOut => "TIMED OUT",
        _ => "running",
    }
}

fn counts(run: &Run) -> String {
    let count = |status: StepStatus| {
        run.step_results
            .iter()
            .filter(|result| result.status == status)
            .count()
    };
    let duration = match (run.started_at, run.finished_at) {
        (Some(start), Some(end)) => format!(" in {} ms", (end - start).num_milliseconds()),
        _ => String::new(),
    };
    let unknown = count(StepStatus::UnknownOutcome);
    let unknown = if unknown > 0 {
        format!(", {unknown} with an unknown outcome")
    } else {
        String::new()
    };
    let stopped = count(StepStatus::Cancelled);
    let unknown = if stopped > 0 {
        format!(", {stopped} stopped{unknown}")
    } else {
        unknown
    };
    format!(
        "{} ok, {} failed, {} skipped{unknown}{duration}",
        count(StepStatus::Success),
        count(StepStatus::Failed),
        count(StepStatus::Skipped)
    )
}

/// A finished run as text: one line per step (status, timing, error) and the totals.
///
/// ```
/// use wayline_core::{Run, StepResult};
/// let mut run = Run::new("r1", "w");
/// run.step_results.push(StepResult::pending("a"));
/// assert!(wayline_executor::summary(&run).contains("a"));
/// ```
pub fn summary(run: &Run) -> String {
    let mut text = format!("run {} of `{}`\n", run.id, run.workflow_id);
    for result in &run.step_results {
        text.push_str(&format!("  {}\n", step_line(result)));
    }
    text.push_str(&format!("{}: {}\n", status_word(run.status), counts(run)));
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn drive(style: ProgressStyle) -> String {
        let out = Shared::default();
        let progress = Progress::new(out.clone(), style);
        let mut run = Run::new("r1", "w");
        run.step_results = vec![StepResult::pending("a"), StepResult::pending("b")];
        progress.on_event(&RunEvent::RunStarted { run: &run });
        for step_id in ["a", "b"] {
            progress.on_event(&RunEvent::StepStarted {
                run_id: "r1",
                step_id,
            });
        }
        let mut done = StepResult::pending("a");
        done.status = StepStatus::Success;
        done.response_status = Some(200);
        done.duration_ms = Some(12);
        progress.on_event(&RunEvent::StepFinished {
            run_id: "r1",
            result: &done,
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn plain_progress_is_one_line_per_event() {
        assert_eq!(
            drive(ProgressStyle::Plain),
            "run r1 of `w`: 2 steps\n  start   a\n  start   b\n  ok      a HTTP 200 12 ms\n"
        );
    }

    #[test]
    fn live_progress_redraws_the_running_steps_in_place() {
        let shown = drive(ProgressStyle::Live);
        // After `a` finishes, the block of running steps (two lines) is erased and redrawn
        // with only `b` under the finished line.
        let last = shown.rsplit("\x1b[2F\x1b[J").next().unwrap();
        assert!(
            last.starts_with("  ok      a HTTP 200 12 ms\n  ...     b "),
            "{last:?}"
        );
        assert_eq!(last.lines().count(), 2);
    }
}

//! Showing a run to a person: a [`RunObserver`] that prints progress, and a summary of the
//! finished run.
//!
//! In a terminal ([`ProgressStyle::Live`]) finished steps scroll by while the steps still running
//! stay at the bottom, one line each, redrawn on every event. Elsewhere
//! ([`ProgressStyle::Plain`]) each event is one plain line, fit for logs and CI.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

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
/// Live, the running steps' lines are cut to the terminal's width (a line that wrapped would
/// take two rows, and the redraw, which moves up one row per line, would leave a stale copy
/// behind) and redrawn every quarter second, so their elapsed times move while a step waits to
/// retry.
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
    state: Arc<Mutex<State>>,
    /// Redraws the running steps while there are any (live only); stopped when dropped.
    ticker: Option<Ticker>,
}

struct State {
    out: Box<dyn Write + Send>,
    running: IndexMap<String, Running>,
    drawn: usize,
    /// The terminal's width, asked at each draw (`None`: lines are not cut).
    width: Box<dyn Fn() -> Option<usize> + Send>,
}

struct Running {
    since: Instant,
    attempt: u32,
    note: String,
}

/// How often the running steps are redrawn.
const TICK: Duration = Duration::from_millis(250);

/// A thread that redraws the running steps every [`TICK`] until dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(state: Arc<Mutex<State>>) -> Option<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("wayline-progress".to_owned())
            .spawn(move || {
                while !stopping.load(Ordering::SeqCst) {
                    std::thread::park_timeout(TICK);
                    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                    if !state.running.is_empty() {
                        let _ = draw(&mut state, ProgressStyle::Live, &[]);
                    }
                }
            })
            .ok()?;
        Some(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("style", &self.style)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// Progress written to `out` in `style`; live lines are not cut (see
    /// [`width`](Self::width)) and not redrawn between events.
    pub fn new(out: impl Write + Send + 'static, style: ProgressStyle) -> Self {
        Progress {
            style,
            state: Arc::new(Mutex::new(State {
                out: Box::new(out),
                running: IndexMap::new(),
                drawn: 0,
                width: Box::new(|| None),
            })),
            ticker: None,
        }
    }

    /// Cuts live lines to the width `width` answers (asked at each draw: a terminal can be
    /// resized).
    #[must_use]
    pub fn width(self, width: impl Fn() -> Option<usize> + Send + 'static) -> Self {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .width = Box::new(width);
        self
    }

    /// Redraws the running steps every quarter second (live only), so their elapsed times
    /// move between events.
    #[must_use]
    pub fn ticking(mut self) -> Self {
        if self.style == ProgressStyle::Live && self.ticker.is_none() {
            self.ticker = Ticker::start(Arc::clone(&self.state));
        }
        self
    }

    /// Progress on stderr: live when stderr is a terminal that takes cursor movements (not
    /// `TERM=dumb`), cut to its width and ticking; plain otherwise.
    pub fn stderr() -> Self {
        use std::io::IsTerminal;
        let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
        if !std::io::stderr().is_terminal() || dumb {
            return Progress::new(std::io::stderr(), ProgressStyle::Plain);
        }
        Progress::new(std::io::stderr(), ProgressStyle::Live)
            .width(|| {
                terminal_size::terminal_size_of(std::io::stderr())
                    .map(|(width, _)| usize::from(width.0))
            })
            .ticking()
    }

    /// Redraws the running steps now (what the ticker does).
    pub fn tick(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = draw(&mut state, self.style, &[]);
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
        let _ = draw(&mut state, self.style, &lines);
    }
}

/// `line` in at most `width - 1` columns (the last one is left empty: a terminal that wraps at
/// the last column would move to the next row), one column per character.
fn fit(line: &str, width: Option<usize>) -> String {
    let Some(width) = width.filter(|width| *width > 1) else {
        return line.to_owned();
    };
    let room = width - 1;
    if line.chars().count() <= room {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(room - 1).collect();
    cut.push('…');
    cut
}

/// Prints `lines` (scrolling up), then the running steps in place of those drawn before.
fn draw(state: &mut State, style: ProgressStyle, lines: &[String]) -> std::io::Result<()> {
    let State {
        out,
        running,
        drawn,
        width,
    } = state;
    if style == ProgressStyle::Live && *drawn > 0 {
        // Up to the first running line, then clear to the end of the screen.
        write!(out, "\x1b[{drawn}F\x1b[J")?;
    }
    for line in lines {
        writeln!(out, "{line}")?;
    }
    if style == ProgressStyle::Live {
        let width = width();
        for (step, running) in running.iter() {
            let attempt = if running.attempt > 1 {
                format!(" attempt {}", running.attempt)
            } else {
                String::new()
            };
            let line = format!(
                "  ...     {step} {:.1}s{attempt} {}",
                running.since.elapsed().as_secs_f64(),
                running.note
            );
            // One row each, newlines in a reason included, or the redraw leaves a stale row.
            writeln!(out, "{}", fit(&line.replace(['\n', '\r'], " "), width))?;
        }
        *drawn = running.len();
    }
    out.flush()
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
    fn live_lines_fit_the_width_and_a_tick_moves_the_clock() {
        let out = Shared::default();
        let progress = Progress::new(out.clone(), ProgressStyle::Live).width(|| Some(40));
        progress.on_event(&RunEvent::StepStarted {
            run_id: "r1",
            step_id: "slow",
        });
        progress.on_event(&RunEvent::RetryScheduled {
            run_id: "r1",
            step_id: "slow",
            attempt: 1,
            delay: Duration::from_secs(30),
            reason: &format!("HTTP 503: {}\nsecond line", "x".repeat(200)),
        });
        progress.tick();
        let shown = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let redraws: Vec<&str> = shown.split("\x1b[1F\x1b[J").collect();
        assert_eq!(
            redraws.len(),
            3,
            "the retry and the tick each redraw: {shown:?}"
        );
        for line in redraws
            .iter()
            .flat_map(|redraw| redraw.lines())
            .filter(|line| line.contains("slow"))
        {
            assert!(line.chars().count() <= 39, "{line:?}");
        }
        assert!(redraws[2].ends_with("…\n"), "{:?}", redraws[2]);
        assert_eq!(fit("short", Some(40)), "short");
        assert_eq!(fit("abcdef", Some(5)), "abc…");
        assert_eq!(fit("abcdef", None), "abcdef");
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

//! Triggers: running saved workflows on intervals and cron expressions.
//!
//! A [`Trigger`] names a saved workflow, its inputs and a [`Schedule`]. [`run_triggers`] is the
//! loop a host embeds (or `wayline schedule run` keeps in the foreground): it waits for the next
//! due trigger and calls the host's `fire` function with it. The host runs the workflow (it owns
//! the engine and the stores), so this module needs neither.
//!
//! - Fires of different triggers may overlap; a trigger whose previous run is still going is
//!   skipped that time (and the skip is reported), so a slow workflow never piles up runs.
//! - An interval fires first one interval after the start, then at a fixed rate; missed fires
//!   (the host was busy or suspended) are not made up.
//! - Cron expressions are evaluated in UTC (5 fields, or 6 with seconds first).
//! - A trigger with `until` fires no more after that time.
//! - The same triggers can be shared by a pool of workers instead (`wayline schedule sync`
//!   into a PostgreSQL store; see [`RunQueue::sync_schedules`](crate::queue::RunQueue::sync_schedules)):
//!   each due time then fires exactly once whichever worker sees it first, and [`Missed`] says
//!   what happens to due times that passed while no worker ran. This loop, in one process,
//!   never makes them up.

use std::future::Future;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;
use wayline_core::document::{self, Format};

use crate::Error;
use crate::in_flight::InFlight;

/// The longest the loop sleeps before it looks at the clock again.
const RECHECK: Duration = Duration::from_secs(60);

/// The longest interval `every` accepts: a leap year.
const MAX_INTERVAL_SECONDS: u64 = 366 * 86_400;

/// When a trigger fires.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Schedule {
    /// At a fixed rate.
    Every(Duration),
    /// At the times a cron expression matches (UTC).
    Cron {
        /// The expression as written.
        expression: String,
        /// The parsed expression (boxed: it is large).
        cron: Box<croner::Cron>,
    },
}

impl Schedule {
    /// An interval schedule; `text` is a number with a unit: `30s`, `15m`, `2h`, `1d`.
    pub fn every(text: &str) -> Result<Schedule, Error> {
        Schedule::every_seconds(text).map_err(|message| Error::Schedule { message })
    }

    fn every_seconds(text: &str) -> Result<Schedule, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number
            .parse()
            .map_err(|_| format!("`{text}` is not an interval; write e.g. 30s, 15m, 2h or 1d"))?;
        let seconds = match unit.trim() {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            _ => {
                return Err(format!(
                    "`{text}`: the unit must be s, m, h or d (e.g. 15m)"
                ));
            }
        };
        if number == 0 {
            return Err(format!("`{text}`: an interval must be longer than zero"));
        }
        let seconds = number.saturating_mul(seconds);
        if seconds > MAX_INTERVAL_SECONDS {
            return Err(format!(
                "`{text}`: an interval can be at most 366d; for rarer runs write a cron expression"
            ));
        }
        Ok(Schedule::Every(Duration::from_secs(seconds)))
    }

    /// A cron schedule.
    pub fn cron(expression: &str) -> Result<Schedule, Error> {
        let cron = croner::Cron::from_str(expression.trim()).map_err(|error| Error::Schedule {
            message: format!("`{expression}` is not a cron expression: {error}"),
        })?;
        Ok(Schedule::Cron {
            expression: expression.trim().to_owned(),
            cron: Box::new(cron),
        })
    }

    /// The first time after `after` this schedule fires, for a schedule that started at
    /// `start` (intervals count from it); `None` when it never fires again (a cron expression
    /// that matches no date, or a time beyond what a date can hold).
    pub fn next_after(&self, start: DateTime<Utc>, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            // Checked arithmetic throughout: `Schedule::Every` can be built with any duration.
            Schedule::Every(interval) => {
                let interval = chrono::Duration::from_std(*interval).ok()?;
                let elapsed = after.signed_duration_since(start);
                let periods = elapsed.num_milliseconds() / interval.num_milliseconds().max(1);
                let periods = i32::try_from(periods.max(0).checked_add(1)?).ok()?;
                start.checked_add_signed(interval.checked_mul(periods)?)
            }
            Schedule::Cron { cron, .. } => cron.find_next_occurrence(&after, false).ok(),
        }
    }
}

/// What a shared schedule does with due times that passed while no worker ran (the store was
/// down, or no worker was running).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Missed {
    /// Only the latest of them fires; the others are recorded as skipped.
    #[default]
    Skip,
    /// Each of them fires, oldest first (at most 100 at a time).
    CatchUp,
}

impl Missed {
    /// The policy's name: `skip` or `catch_up`.
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::Skip => "skip",
            Missed::CatchUp => "catch_up",
        }
    }

    /// The policy `name` names.
    pub fn parse(name: &str) -> Option<Missed> {
        match name {
            "skip" => Some(Missed::Skip),
            "catch_up" => Some(Missed::CatchUp),
            _ => None,
        }
    }
}

/// A saved workflow run on a schedule.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Trigger {
    /// Its name, unique among the triggers of a schedules file (default: the workflow id).
    pub id: String,
    /// The saved workflow (its active version runs).
    pub workflow_id: String,
    /// When.
    pub schedule: Schedule,
    /// The run inputs.
    pub inputs: IndexMap<String, Value>,
    /// When shared: what happens to due times missed while no worker ran.
    pub missed: Missed,
    /// No fires after this time.
    pub until: Option<DateTime<Utc>>,
    /// When shared: the in-flight policy of the runs it queues (what a worker taking one over
    /// does with a step of unknown outcome); by default a person is asked.
    pub in_flight: InFlight,
}

impl Trigger {
    /// A trigger with no inputs, named after its workflow, that never ends.
    pub fn new(workflow_id: impl Into<String>, schedule: Schedule) -> Self {
        let workflow_id = workflow_id.into();
        Trigger {
            id: workflow_id.clone(),
            workflow_id,
            schedule,
            inputs: IndexMap::new(),
            missed: Missed::Skip,
            until: None,
            in_flight: InFlight::Ask,
        }
    }

    /// The first fire after `after` for a trigger that started at `start`, unless it is past
    /// `until`.
    pub fn next_after(&self, start: DateTime<Utc>, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.schedule
            .next_after(start, after)
            .filter(|at| self.until.is_none_or(|until| *at <= until))
    }
}

/// One entry of a schedules file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TriggerEntry {
    #[serde(default)]
    id: Option<String>,
    workflow_id: String,
    #[serde(default)]
    every: Option<String>,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    inputs: IndexMap<String, Value>,
    #[serde(default)]
    missed: Missed,
    #[serde(default)]
    until: Option<DateTime<Utc>>,
    #[serde(default)]
    in_flight: InFlight,
}

/// Reads a schedules file: a YAML (or JSON) list of `{workflow_id, every | cron, inputs}`, each
/// with an optional `id` (default: the workflow id; needed when two triggers run one
/// workflow), `missed: skip | catch_up`, `until` (RFC 3339) and `in_flight: ask | skip |
/// retry`. Errors name the file, and the entry and what to write instead.
pub fn load_triggers(path: &Path) -> Result<Vec<Trigger>, Error> {
    let triggers = read_triggers(path)?;
    if triggers.is_empty() {
        return Err(Error::Trigger {
            origin: path.display().to_string(),
            what: "no triggers".to_owned(),
            message: "list at least one".to_owned(),
        });
    }
    Ok(triggers)
}

/// As [`load_triggers`], but an empty list is a list: for shared schedules, where syncing
/// one removes them all.
pub fn read_triggers(path: &Path) -> Result<Vec<Trigger>, Error> {
    let text =
        wayline_durable::read::text(path, wayline_core::document::Limits::configured().max_bytes)
            .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let format = Format::from_path(path).unwrap_or(Format::Yaml);
    let origin = path.display().to_string();
    let entries: Vec<TriggerEntry> = document::parse(&text, format, &origin)?;
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let invalid = |message: String| Error::Trigger {
                origin: origin.clone(),
                what: format!("trigger {} (`{}`)", index + 1, entry.workflow_id),
                message,
            };
            let schedule = match (&entry.every, &entry.cron) {
                (Some(every), None) => Schedule::every(every),
                (None, Some(cron)) => Schedule::cron(cron),
                _ => Err(Error::Schedule {
                    message: "give exactly one of `every` (e.g. 15m) and `cron`".to_owned(),
                }),
            }
            .map_err(|error| invalid(error.to_string()))?;
            let now = Utc::now();
            if schedule.next_after(now, now).is_none() {
                return Err(invalid(
                    "this schedule never fires (no date matches it); check the day and month fields"
                        .to_owned(),
                ));
            }
            let id = entry.id.unwrap_or_else(|| entry.workflow_id.clone());
            wayline_core::store::check_id("trigger", &id)
                .map_err(|error| invalid(error.message().to_owned()))?;
            Ok(Trigger {
                id,
                workflow_id: entry.workflow_id,
                schedule,
                inputs: entry.inputs,
                missed: entry.missed,
                until: entry.until,
                in_flight: entry.in_flight,
            })
        })
        .collect::<Result<Vec<Trigger>, Error>>()
        .and_then(|triggers| {
            let mut seen = std::collections::HashSet::new();
            match triggers
                .iter()
                .find(|trigger| !seen.insert(trigger.id.as_str()))
            {
                Some(twice) => Err(Error::Trigger {
                    origin: origin.clone(),
                    what: format!("trigger `{}`", twice.id),
                    message: "two triggers have this id; give each an `id` of its own".into(),
                }),
                None => Ok(triggers),
            }
        })
}

/// What happened to a due trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Firing {
    /// `fire` was called.
    Started,
    /// Its previous run was still going.
    SkippedBusy,
}

/// Runs `triggers` until `stop` completes or `limit` fires have finished: waits for the next
/// due trigger and calls `fire` with its index and a copy of it. `observe` hears of each due
/// trigger (started or skipped). Runs in flight when it stops are awaited.
pub async fn run_triggers<F, Fut>(
    triggers: &[Trigger],
    mut fire: F,
    mut observe: impl FnMut(usize, &Trigger, Firing),
    limit: Option<usize>,
    stop: impl Future<Output = ()>,
) where
    F: FnMut(usize, Trigger) -> Fut,
    Fut: Future<Output = ()>,
{
    if triggers.is_empty() {
        return;
    }
    let mut clock = Clock::new();
    let start = clock.start;
    let mut next: Vec<Option<DateTime<Utc>>> = triggers
        .iter()
        .map(|trigger| trigger.next_after(start, start))
        .collect();
    let mut busy = vec![false; triggers.len()];
    let mut running = FuturesUnordered::new();
    let mut finished = 0usize;
    let mut started = 0usize;
    tokio::pin!(stop);
    loop {
        if limit.is_some_and(|limit| finished >= limit) {
            break;
        }
        let earliest = next
            .iter()
            .enumerate()
            .filter_map(|(index, at)| at.map(|at| (at, index)))
            .min();
        let reached_limit = limit.is_some_and(|limit| started >= limit);
        // Converted on each turn, so a clock that jumped (a suspended machine) is caught up.
        let wake = earliest.map(|(at, _)| clock.instant_of(at));
        let wait_for_due = async {
            match wake {
                Some(wake) if !reached_limit => tokio::time::sleep_until(wake).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut stop => break,
            Some(index) = running.next() => {
                busy[index] = false;
                finished += 1;
            }
            () = wait_for_due => {
                let Some((at, index)) = earliest else { continue };
                if clock.now() < at {
                    continue; // woke to look at the clock; not due yet
                }
                let trigger = &triggers[index];
                if busy[index] {
                    observe(index, trigger, Firing::SkippedBusy);
                } else {
                    observe(index, trigger, Firing::Started);
                    busy[index] = true;
                    started += 1;
                    let run = fire(index, trigger.clone());
                    running.push(async move {
                        run.await;
                        index
                    });
                }
                // The next fire after both this one and now: missed fires are not made up.
                let after = at.max(clock.now());
                next[index] = trigger.next_after(start, after);
            }
        }
    }
    while running.next().await.is_some() {}
}

/// Wall-clock time as the loop sees it: the runtime's clock (so tokio's paused clock drives it
/// in tests), moved forward when the system clock is ahead of it by more than a second, which
/// is what a suspended machine looks like (the monotonic clock stops during suspend).
#[derive(Debug)]
struct Clock {
    /// The system clock (replaced in tests).
    system: fn() -> DateTime<Utc>,
    start: DateTime<Utc>,
    start_instant: tokio::time::Instant,
    skew: chrono::Duration,
}

impl Clock {
    fn new() -> Clock {
        Clock::with_system(Utc::now)
    }

    fn with_system(system: fn() -> DateTime<Utc>) -> Clock {
        Clock {
            system,
            start: system(),
            start_instant: tokio::time::Instant::now(),
            skew: chrono::Duration::zero(),
        }
    }

    fn by_instant(&self, instant: tokio::time::Instant) -> DateTime<Utc> {
        let elapsed =
            chrono::Duration::from_std(instant.saturating_duration_since(self.start_instant))
                .unwrap_or(chrono::Duration::MAX);
        self.start
            .checked_add_signed(elapsed)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    fn now(&mut self) -> DateTime<Utc> {
        let by_instant = self.by_instant(tokio::time::Instant::now());
        let system = (self.system)();
        if system - by_instant > self.skew + chrono::Duration::seconds(1) {
            self.skew = system - by_instant;
        }
        by_instant
            .checked_add_signed(self.skew)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// The runtime instant at which wall-clock time `at` arrives (now, if it has passed), or
    /// a minute from now if that is sooner.
    fn instant_of(&mut self, at: DateTime<Utc>) -> tokio::time::Instant {
        let now = self.now();
        let wait = at.signed_duration_since(now).to_std().unwrap_or_default();
        // Waits are cut into minutes so a jump of the system clock is noticed within one.
        tokio::time::Instant::now() + wait.min(RECHECK)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;

    #[test]
    fn intervals_and_cron_expressions_are_parsed_with_clear_errors() {
        assert!(
            matches!(Schedule::every("15m"), Ok(Schedule::Every(d)) if d == Duration::from_secs(900))
        );
        assert!(
            matches!(Schedule::every("2h"), Ok(Schedule::Every(d)) if d == Duration::from_secs(7200))
        );
        assert!(
            Schedule::every("15")
                .unwrap_err()
                .to_string()
                .contains("unit must be")
        );
        assert!(
            Schedule::every("0s")
                .unwrap_err()
                .to_string()
                .contains("longer than zero")
        );
        assert!(
            Schedule::every("soon")
                .unwrap_err()
                .to_string()
                .contains("not an interval")
        );
        assert!(
            Schedule::cron("not cron")
                .unwrap_err()
                .to_string()
                .contains("not a cron expression")
        );
        let cron = Schedule::cron("30 6 * * MON").unwrap();
        let start: DateTime<Utc> = "2026-11-22T10:00:00Z".parse().unwrap(); // a Sunday
        assert_eq!(
            cron.next_after(start, start).unwrap().to_rfc3339(),
            "2026-11-23T06:30:00+00:00"
        );
        let every = Schedule::every("15m").unwrap();
        let later: DateTime<Utc> = "2026-11-22T10:31:00Z".parse().unwrap();
        assert_eq!(
            every.next_after(start, later).unwrap().to_rfc3339(),
            "2026-11-22T10:45:00+00:00"
        );
    }

    #[test]
    fn schedules_that_would_overflow_or_never_fire_are_refused_not_panicked_on() {
        assert!(
            Schedule::every("100000000d")
                .unwrap_err()
                .to_string()
                .contains("at most 366d")
        );
        assert!(Schedule::every("366d").is_ok());
        let start: DateTime<Utc> = "2026-11-22T10:00:00Z".parse().unwrap();
        let huge = Schedule::Every(Duration::MAX);
        assert_eq!(huge.next_after(start, start), None);
        let late = Schedule::Every(Duration::from_secs(366 * 86_400));
        assert_eq!(late.next_after(start, DateTime::<Utc>::MAX_UTC), None);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("schedules.yaml");
        std::fs::write(&path, "- {workflow_id: feb30, cron: '0 0 30 2 *'}\n").unwrap();
        let error = load_triggers(&path).unwrap_err().to_string();
        assert!(error.contains("trigger 1 (`feb30`)"), "{error}");
        assert!(error.contains("never fires"), "{error}");
    }

    #[test]
    fn a_schedules_file_sets_the_in_flight_policy_of_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("schedules.yaml");
        std::fs::write(
            &path,
            "- {workflow_id: nightly, cron: '0 3 * * *', in_flight: retry}\n- {workflow_id: hourly, every: 1h}\n",
        )
        .unwrap();
        let triggers = load_triggers(&path).unwrap();
        assert_eq!(
            (triggers[0].in_flight, triggers[1].in_flight),
            (InFlight::Retry, InFlight::Ask)
        );
        std::fs::write(&path, "- {workflow_id: w, every: 1h, in_flight: maybe}\n").unwrap();
        let error = load_triggers(&path).unwrap_err().to_string();
        assert!(
            error.contains("schedules.yaml:1:") && error.contains("`ask`, `skip`, `retry`"),
            "{error}"
        );
    }

    static SYSTEM_AHEAD_SECONDS: std::sync::atomic::AtomicI64 =
        std::sync::atomic::AtomicI64::new(0);

    fn shifted_system_clock() -> DateTime<Utc> {
        let ahead = SYSTEM_AHEAD_SECONDS.load(std::sync::atomic::Ordering::Relaxed);
        "2026-11-22T10:00:00Z".parse::<DateTime<Utc>>().unwrap() + chrono::Duration::seconds(ahead)
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_clock_catches_up_with_a_system_clock_that_jumped() {
        let mut clock = Clock::with_system(shifted_system_clock);
        let start = clock.start;
        tokio::time::advance(Duration::from_secs(10)).await;
        // The system clock has not moved (the paused runtime's has): the runtime's clock rules.
        assert_eq!(clock.now(), start + chrono::Duration::seconds(10));
        // A suspend of an hour: the system clock is an hour ahead of the runtime's.
        SYSTEM_AHEAD_SECONDS.store(3_610, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(clock.now(), start + chrono::Duration::seconds(3_610));
        // A fire due in the lost hour is due now, not an hour from now.
        let due = start + chrono::Duration::seconds(1_800);
        assert_eq!(clock.instant_of(due), tokio::time::Instant::now());
        // Far-off fires are looked at again within a minute.
        let far = start + chrono::Duration::days(30);
        assert_eq!(clock.instant_of(far), tokio::time::Instant::now() + RECHECK);
    }

    #[tokio::test(start_paused = true)]
    async fn triggers_fire_on_time_and_a_busy_one_is_skipped() {
        let fast = Trigger::new("fast", Schedule::every("10s").unwrap());
        let slow = Trigger::new("slow", Schedule::every("15s").unwrap());
        let fired = Rc::new(RefCell::new(Vec::new()));
        let seen = Rc::new(RefCell::new(Vec::new()));
        let begun = tokio::time::Instant::now();
        let log = Rc::clone(&fired);
        let skipped = Rc::clone(&seen);
        run_triggers(
            &[fast, slow],
            move |_, trigger| {
                let log = Rc::clone(&log);
                async move {
                    let at = begun.elapsed().as_secs();
                    log.borrow_mut()
                        .push(format!("{}@{at}", trigger.workflow_id));
                    // The slow workflow takes 20 s: longer than its interval.
                    if trigger.workflow_id == "slow" {
                        tokio::time::sleep(Duration::from_secs(20)).await;
                    }
                }
            },
            move |_, trigger, firing| {
                if firing == Firing::SkippedBusy {
                    let at = begun.elapsed().as_secs();
                    skipped
                        .borrow_mut()
                        .push(format!("{}@{at}", trigger.workflow_id));
                }
            },
            None,
            tokio::time::sleep(Duration::from_secs(61)),
        )
        .await;
        let expected = [
            "fast@10", "slow@15", "fast@20", "fast@30", "fast@40", "slow@45", "fast@50", "fast@60",
        ];
        assert_eq!(*fired.borrow(), expected.map(String::from));
        assert_eq!(*seen.borrow(), ["slow@30", "slow@60"].map(String::from));
    }
}

//! Shared schedules on PostgreSQL: `wayline_schedules` (the triggers, with when each fires
//! next) and `wayline_schedule_fires` (one row per schedule and due time).
//!
//! Firing is one transaction: the due schedules are locked with `FOR UPDATE SKIP LOCKED` (a
//! second worker skips them rather than waiting), each due time is recorded under the table's
//! primary key, the run is queued with an id made of the schedule and the due time, and the
//! next due time is written. Whichever worker gets there first fires a due time; the others
//! find nothing due, and even a repeated attempt would hit the unique record.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use wayline_core::store::{StoreError, StoreErrorKind};
use wayline_durable::postgres::deadpool_postgres::GenericClient;

use super::PostgresStore;
use crate::queue::{Fire, InFlight, SharedSchedule, Synced};
use crate::records::to_json;
use crate::schedule::{Missed, Schedule, Trigger};

/// At most this many due times of one schedule are handled per call (a long outage with
/// `missed: catch_up` is worked off over several calls).
const MOST_PER_CALL: usize = 100;

/// How long a due time's fire record is kept once fired (the schedule keeps its counts): long
/// enough to look into what fired last month, short enough that a schedule firing every
/// second does not grow the table without end.
pub(crate) const FIRES_KEPT_DAYS: i32 = 30;

/// The longest id of a shared schedule: its runs' ids add the due time (24 characters) and
/// must stay within the 128 of any id.
const MAX_ID: usize = 100;

/// How a trigger is stored: its interval or cron expression, and the whole definition as text.
struct Stored {
    every_ms: Option<i64>,
    cron: Option<String>,
    inputs: String,
    definition: String,
}

impl Stored {
    fn of(trigger: &Trigger) -> Result<Stored, StoreError> {
        let (every_ms, cron) = match &trigger.schedule {
            Schedule::Every(interval) => (
                Some(i64::try_from(interval.as_millis()).unwrap_or(i64::MAX)),
                None,
            ),
            Schedule::Cron { expression, .. } => (None, Some(expression.clone())),
        };
        let inputs = to_json(&trigger.inputs)?;
        let until = trigger
            .until
            .map(|until| until.to_rfc3339_opts(SecondsFormat::Micros, true));
        let mut definition = serde_json::json!({
            "workflow_id": trigger.workflow_id,
            "every_ms": every_ms,
            "cron": cron,
            "inputs": trigger.inputs,
            "missed": trigger.missed.as_str(),
            "until": until,
        });
        // Written only when not the default, so that schedules synced before there was a
        // policy keep their definition (and their due times) on the next sync.
        if trigger.in_flight != InFlight::Ask {
            definition["in_flight"] = trigger.in_flight.as_str().into();
        }
        let definition = to_json(&definition)?;
        Ok(Stored {
            every_ms,
            cron,
            inputs,
            definition,
        })
    }
}

/// A stored schedule's columns, in the order `SCHEDULE` selects them.
const SCHEDULE: &str = "s.id, s.workflow_id, s.every_ms, s.cron, s.inputs::text, s.missed, \
    s.until_at, s.start_at, s.next_due, s.in_flight";

impl PostgresStore {
    fn damaged(&self, id: &str, what: &str) -> StoreError {
        StoreError::new(
            StoreErrorKind::Corrupt,
            format!(
                "shared schedule `{id}` in {} has {what}; sync the schedules file again",
                self.database().shown()
            ),
        )
    }

    /// A stored schedule's trigger, from a row of `SCHEDULE` columns.
    fn trigger_of(
        &self,
        row: &wayline_durable::postgres::tokio_postgres::Row,
    ) -> Result<Trigger, StoreError> {
        let id: String = row.get(0);
        let schedule = match (row.get::<_, Option<i64>>(2), row.get::<_, Option<&str>>(3)) {
            (Some(every_ms), _) => Schedule::Every(Duration::from_millis(
                u64::try_from(every_ms).map_err(|_| self.damaged(&id, "a negative interval"))?,
            )),
            (None, Some(cron)) => Schedule::cron(cron)
                .map_err(|error| self.damaged(&id, &format!("a bad cron expression ({error})")))?,
            (None, None) => return Err(self.damaged(&id, "neither an interval nor a cron")),
        };
        let mut trigger = Trigger::new(row.get::<_, String>(1), schedule);
        trigger.inputs = serde_json::from_str(row.get(4))
            .map_err(|error| self.damaged(&id, &format!("damaged inputs ({error})")))?;
        let missed: &str = row.get(5);
        trigger.missed = Missed::parse(missed)
            .ok_or_else(|| self.damaged(&id, &format!("an unknown `missed` policy `{missed}`")))?;
        trigger.until = row.get(6);
        let in_flight: &str = row.get(9);
        trigger.in_flight = InFlight::parse(in_flight).ok_or_else(|| {
            self.damaged(&id, &format!("an unknown in-flight policy `{in_flight}`"))
        })?;
        trigger.id = id;
        Ok(trigger)
    }

    pub(crate) async fn sync_shared_schedules(
        &self,
        triggers: &[Trigger],
    ) -> Result<Synced, StoreError> {
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        let stored: Vec<(String, String)> = transaction
            .query(
                "SELECT id, definition FROM wayline_schedules FOR UPDATE",
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        let now: DateTime<Utc> = transaction
            .query_one("SELECT now()", &[])
            .await
            .map_err(|error| self.error(&error))?
            .get(0);
        let mut synced = Synced::default();
        if let Some(long) = triggers.iter().find(|trigger| trigger.id.len() > MAX_ID) {
            return Err(StoreError::new(
                StoreErrorKind::Invalid,
                format!(
                    "trigger `{}`: a shared schedule's id has at most {MAX_ID} characters (its runs are named after it)",
                    long.id
                ),
            ));
        }
        for trigger in triggers {
            let row = Stored::of(trigger)?;
            let before = stored.iter().find(|(id, _)| *id == trigger.id);
            if before.is_some_and(|(_, definition)| *definition == row.definition) {
                synced.kept.push(trigger.id.clone());
                continue;
            }
            // Stored to the microsecond, as the server keeps it, so that due times computed
            // from the stored start match.
            let start = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
            let next_due = trigger.next_after(start, start);
            transaction
                .execute(
                    "INSERT INTO wayline_schedules (id, workflow_id, every_ms, cron, inputs,
                        missed, until_at, definition, start_at, next_due, in_flight)
                     VALUES ($1, $2, $3, $4, $5::text::json, $6, $7, $8, $9, $10, $11)
                     ON CONFLICT (id) DO UPDATE SET workflow_id = excluded.workflow_id,
                        every_ms = excluded.every_ms, cron = excluded.cron,
                        inputs = excluded.inputs, missed = excluded.missed,
                        until_at = excluded.until_at, definition = excluded.definition,
                        start_at = excluded.start_at, next_due = excluded.next_due,
                        in_flight = excluded.in_flight",
                    &[
                        &trigger.id,
                        &trigger.workflow_id,
                        &row.every_ms,
                        &row.cron,
                        &row.inputs,
                        &trigger.missed.as_str(),
                        &trigger.until,
                        &row.definition,
                        &start,
                        &next_due,
                        &trigger.in_flight.as_str(),
                    ],
                )
                .await
                .map_err(|error| self.error(&error))?;
            if before.is_some() {
                synced.changed.push(trigger.id.clone());
            } else {
                synced.added.push(trigger.id.clone());
            }
        }
        for (id, _) in &stored {
            if !triggers.iter().any(|trigger| trigger.id == *id) {
                transaction
                    .execute("DELETE FROM wayline_schedules WHERE id = $1", &[id])
                    .await
                    .map_err(|error| self.error(&error))?;
                synced.removed.push(id.clone());
            }
        }
        transaction
            .commit()
            .await
            .map_err(|error| self.error(&error))?;
        Ok(synced)
    }

    pub(crate) async fn shared_schedules(&self) -> Result<Vec<SharedSchedule>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {SCHEDULE}, s.fired, s.skipped
                     FROM wayline_schedules s ORDER BY s.id"
                ),
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?;
        rows.iter()
            .map(|row| {
                Ok(SharedSchedule {
                    trigger: self.trigger_of(row)?,
                    start: row.get(7),
                    next_due: row.get(8),
                    fired: u64::try_from(row.get::<_, i64>(10)).unwrap_or_default(),
                    skipped: u64::try_from(row.get::<_, i64>(11)).unwrap_or_default(),
                })
            })
            .collect()
    }

    pub(crate) async fn fire_due_schedules(&self) -> Result<Vec<Fire>, StoreError> {
        let mut client = self.client().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| self.error(&error))?;
        let rows = transaction
            .query(
                &format!(
                    "SELECT {SCHEDULE}, now() FROM wayline_schedules s
                     WHERE s.next_due <= now() FOR UPDATE SKIP LOCKED"
                ),
                &[],
            )
            .await
            .map_err(|error| self.error(&error))?;
        let mut fires = Vec::new();
        for row in &rows {
            let trigger = self.trigger_of(row)?;
            let start: DateTime<Utc> = row.get(7);
            let now: DateTime<Utc> = row.get(10);
            let mut next: Option<DateTime<Utc>> = row.get(8);
            let mut due = Vec::new();
            while let Some(at) = next.filter(|at| *at <= now) {
                if due.len() == MOST_PER_CALL {
                    break;
                }
                due.push(at);
                next = trigger.next_after(start, at);
            }
            let version: Option<u32> = transaction
                .query_one(
                    "SELECT MAX(version) FROM wayline_workflows
                     WHERE id = $1 AND state = 'active'",
                    &[&trigger.workflow_id],
                )
                .await
                .map_err(|error| self.error(&error))?
                .get::<_, Option<i64>>(0)
                .and_then(|version| u32::try_from(version).ok());
            let latest = due.len().saturating_sub(1);
            let (mut fired, mut skipped) = (0_i64, 0_i64);
            for (index, at) in due.into_iter().enumerate() {
                let fire = if trigger.missed == Missed::Skip && index < latest {
                    Fire {
                        schedule_id: trigger.id.clone(),
                        due_at: at,
                        run_id: None,
                        note: Some(
                            "missed: no worker fired it in time, and the schedule says `missed: skip`"
                                .into(),
                        ),
                    }
                } else {
                    fire_of(&trigger, at, version)
                };
                // The record first: a due time recorded already is not fired again.
                let recorded = transaction
                    .execute(
                        "INSERT INTO wayline_schedule_fires (schedule_id, due_at, run_id, note)
                         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                        &[&fire.schedule_id, &fire.due_at, &fire.run_id, &fire.note],
                    )
                    .await
                    .map_err(|error| self.error(&error))?;
                if recorded == 0 {
                    continue;
                }
                if fire.run_id.is_some() {
                    fired += 1;
                } else {
                    skipped += 1;
                }
                if let (Some(run_id), Some(version)) = (&fire.run_id, version) {
                    self.enqueue(
                        &transaction,
                        Some(run_id),
                        &trigger.workflow_id,
                        version,
                        &to_json(&trigger.inputs)?,
                        trigger.in_flight,
                    )
                    .await?;
                }
                fires.push(fire);
            }
            transaction
                .execute(
                    "UPDATE wayline_schedules
                     SET next_due = $2, fired = fired + $3, skipped = skipped + $4 WHERE id = $1",
                    &[&trigger.id, &next, &fired, &skipped],
                )
                .await
                .map_err(|error| self.error(&error))?;
        }
        if !fires.is_empty() {
            // Whoever fires prunes (an index on the age keeps it cheap); the counts stay.
            transaction
                .execute(
                    "DELETE FROM wayline_schedule_fires
                     WHERE fired_at < now() - make_interval(days => $1)",
                    &[&FIRES_KEPT_DAYS],
                )
                .await
                .map_err(|error| self.error(&error))?;
        }
        transaction
            .commit()
            .await
            .map_err(|error| self.error(&error))?;
        Ok(fires)
    }
}

/// What firing `trigger` at `at` does: queue a run of the active `version`, or (none) record
/// why not.
fn fire_of(trigger: &Trigger, at: DateTime<Utc>, version: Option<u32>) -> Fire {
    let mut fire = Fire {
        schedule_id: trigger.id.clone(),
        due_at: at,
        run_id: None,
        note: None,
    };
    if version.is_some() {
        fire.run_id = Some(format!(
            "{}-{}",
            trigger.id,
            at.format("%Y%m%dT%H%M%S%.3fZ")
        ));
    } else {
        fire.note = Some(format!(
            "workflow `{}` has no active version; activate one",
            trigger.workflow_id
        ));
    }
    fire
}

//! The calendar's events: what a `[[event]]` entry and an imported iCalendar series are, apart
//! from the calendar that loads them (`calendar` reads `[[calendar]]` imports through `ics`,
//! which builds these).

use super::duration::IsoDuration;
use super::recur::Recurrence;
use super::zone::Zone;
use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How long each occurrence of a recurring entry lasts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Length {
    /// Ends at this wall-clock time: the same day, or the next when it is not after the start time.
    EndTime(#[serde(with = "super::compact")] NaiveTime),
    Duration(IsoDuration),
}

impl Length {
    /// The end of an occurrence that starts at `local_start` (wall clock in `tz`).
    ///
    /// With `end_time`, every occurrence lasts as long on the wall clock as the rule's own do, from
    /// `start_time` to `end_time` (to the next day when it is not after it): an RDATE at another
    /// time of day gets the rule's length (RFC 5545 §3.8.5.2), not "until the next `end_time`". A
    /// duration's nominal part moves the wall clock from the start as written, its exact part real
    /// time.
    pub fn end_of(&self, tz: Zone, start_time: NaiveTime, local_start: NaiveDateTime) -> DateTime<Utc> {
        match self {
            Length::EndTime(end_time) => {
                let mut wall = *end_time - start_time;
                if wall <= Duration::zero() {
                    wall += Duration::days(1);
                }
                tz.instant(local_start + wall)
            }
            Length::Duration(d) => d
                .add_nominal(local_start)
                .map(|wall| tz.instant(wall))
                .and_then(|t| t.checked_add_signed(d.exact()))
                .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Schedule {
    /// One interval, in local wall-clock time.
    Once {
        #[serde(with = "super::compact")]
        start: NaiveDateTime,
        #[serde(with = "super::compact")]
        end: NaiveDateTime,
    },
    Recurring {
        rule: Box<Recurrence>,
        #[serde(with = "super::compact")]
        start_time: NaiveTime,
        length: Length,
        /// Occurrences with their own start and end (moved occurrences, RDATE periods).
        #[serde(with = "super::compact")]
        instances: Vec<(NaiveDateTime, NaiveDateTime)>,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Event {
    pub id: String,
    pub name: String,
    pub tz: Zone,
    pub schedule: Schedule,
    /// The file it was declared in (the calendar, or an imported `.ics`) and its line there.
    pub file: PathBuf,
    pub line: usize,
}

/// Something in an imported file that Sluice read in a way the file may not have meant, always
/// toward more freeze (an ignored EXRULE, an unsynchronised DTSTART kept as an occurrence).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImportNote {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

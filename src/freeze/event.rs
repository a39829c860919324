//! The calendar's events: what a `[[event]]` entry and an imported iCalendar series are, apart
//! from the calendar that loads them (`calendar` reads `[[calendar]]` imports through `ics`,
//! which builds these).

use super::duration::IsoDuration;
use super::recur::Recurrence;
use super::zone::Zone;
use chrono::{NaiveDateTime, NaiveTime};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How long each occurrence of a recurring entry lasts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Length {
    /// Ends at this wall-clock time: the same day, or the next when it is not after the start time.
    EndTime(#[serde(with = "super::compact")] NaiveTime),
    Duration(IsoDuration),
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

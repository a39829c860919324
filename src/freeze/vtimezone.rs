//! Zones an iCalendar file defines itself (VTIMEZONE), and Windows zone names.
//!
//! A TZID is resolved in this order: an IANA name; a Windows name (Outlook writes
//! `TZID=Eastern Standard Time`), mapped to IANA with CLDR's `windowsZones` table as the
//! `windows-timezones` crate carries it (territory `001`, CLDR's world-wide default); else the
//! file's own VTIMEZONE of that TZID.
//!
//! Each observance (STANDARD or DAYLIGHT) begins at its DTSTART, at each RDATE and at each
//! occurrence of its RRULE (RFC 5545 §3.6.5), each time in the offset before it begins. A
//! VTIMEZONE whose observances all recur for ever becomes one POSIX TZ rule
//! (`<EST>5<EDT>4,M3.2.0/2,M11.1.0/2`) built from its current STANDARD and DAYLIGHT observances,
//! which jiff applies to every year, as the IANA database's own footer does. One whose offset
//! changed at given instants — an observance without RRULE ("+12 from 2024-01-01, +10 from
//! 2024-05-05"), RDATEs, an RRULE that ended — keeps every such change as a transition
//! ([`super::tzif`]), with the rules that recur for ever (or the last offset) after the last one.
//! A rule a POSIX string cannot continue (not an "nth weekday of a month" or a fixed date) is an
//! error: the calendar must not guess a zone.

use super::recur::Recurrence;
use super::zone::Zone;
use chrono::{Datelike, NaiveDateTime, Timelike};
use std::str::FromStr;

/// The IANA name for a Windows zone name, when CLDR maps it.
pub fn windows_to_iana(name: &str) -> Option<&'static str> {
    windows_timezones::WindowsTimezone::from_str(name).ok().map(|z| z.tzdb_id())
}

/// One STANDARD or DAYLIGHT block, as read from the file.
#[derive(Clone, Debug)]
pub struct Observance {
    pub daylight: bool,
    /// DTSTART: local time in the offset *before* this observance begins.
    pub start: NaiveDateTime,
    pub offset_from: i32,
    pub offset_to: i32,
    pub name: Option<String>,
    pub rrule: Option<String>,
    /// Further onsets (RDATE), local time in the offset before them, like `start`.
    pub rdates: Vec<NaiveDateTime>,
}

impl Observance {
    /// Whether its RRULE recurs for ever (no UNTIL, no COUNT).
    fn recurs_for_ever(&self) -> bool {
        self.rrule.as_deref().is_some_and(|r| {
            let upper = r.to_ascii_uppercase();
            !upper.contains("UNTIL") && !upper.contains("COUNT")
        })
    }

    /// Its onsets as UTC seconds, from its DTSTART to `until` (local) inclusive.
    fn onsets(&self, tzid: &str, until: NaiveDateTime) -> Result<Vec<i64>, String> {
        let mut local = self.onsets_once_local();
        local.retain(|t| *t <= until);
        if let Some(rule) = &self.rrule {
            // UNTIL in UTC is compared with the onset's instant: read in the offset before it.
            let before = Zone::fixed(self.offset_from)?;
            let recurrence =
                Recurrence::parse(rule, self.start).map_err(|m| format!("VTIMEZONE `{tzid}`: RRULE {m}"))?;
            local.extend(recurrence.starts_between(before, self.start, until)?);
        }
        Ok(local.into_iter().map(|t| self.instant(t)).collect())
    }

    /// The onsets that are not occurrences of a rule: DTSTART without RRULE, and RDATEs.
    fn onsets_once(&self) -> Vec<i64> {
        self.onsets_once_local().into_iter().map(|t| self.instant(t)).collect()
    }

    fn onsets_once_local(&self) -> Vec<NaiveDateTime> {
        let mut local = self.rdates.clone();
        if self.rrule.is_none() {
            local.push(self.start);
        }
        local
    }

    /// A local onset as UTC seconds: it is read in the offset before it.
    fn instant(&self, local: NaiveDateTime) -> i64 {
        local.and_utc().timestamp() - self.offset_from as i64
    }
}

/// Parses `-0500` / `+0530` / `+053000` into seconds east of UTC.
pub fn parse_offset(text: &str) -> Option<i32> {
    let t = text.trim();
    let (sign, digits) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    if !(digits.len() == 4 || digits.len() == 6) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |r: std::ops::Range<usize>| digits[r].parse::<i32>().ok();
    let seconds = n(0..2)? * 3600 + n(2..4)? * 60 + if digits.len() == 6 { n(4..6)? } else { 0 };
    Some(sign * seconds)
}

/// `<ABC>` or an alphabetic name of three or more letters, as POSIX allows.
fn posix_name(name: Option<&str>, offset: i32) -> String {
    match name {
        Some(n) if n.len() >= 3 && n.bytes().all(|b| b.is_ascii_alphabetic()) => n.to_string(),
        Some(n) if n.len() >= 3 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-') => {
            format!("<{n}>")
        }
        _ => {
            format!("<{}{:02}{:02}>", if offset < 0 { '-' } else { '+' }, offset.abs() / 3600, offset.abs() % 3600 / 60)
        }
    }
}

/// A fixed offset as a POSIX TZ string: `IST-5:30`, `<+12>-12`.
fn posix_fixed(name: Option<&str>, offset: i32) -> String {
    format!("{}{}", posix_name(name, offset), posix_offset(offset))
}

/// POSIX offsets are west of UTC: UTC-5 is `5`, UTC+5:30 is `-5:30`.
fn posix_offset(seconds_east: i32) -> String {
    let west = -seconds_east;
    let (sign, a) = (if west < 0 { "-" } else { "" }, west.abs());
    let (h, m, s) = (a / 3600, a % 3600 / 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h}"),
        (_, 0) => format!("{sign}{h}:{m:02}"),
        _ => format!("{sign}{h}:{m:02}:{s:02}"),
    }
}

/// The POSIX date rule (`M3.2.0`, `J60`) and time (`/2`) for a yearly observance rule.
fn posix_rule(o: &Observance) -> Result<String, String> {
    let rule = o.rrule.as_deref().ok_or("an observance without RRULE")?;
    let parts = super::rrule_parts::parse(rule)?;
    if parts.freq() != super::rrule_parts::Freq::Yearly || parts.interval != 1 {
        return Err(format!("RRULE `{rule}` is not yearly"));
    }
    let month = match parts.by_month.as_slice() {
        [m] => *m,
        [] => o.start.month(),
        _ => return Err(format!("RRULE `{rule}` names several months")),
    };
    let date = match (parts.by_day.as_slice(), parts.by_month_day.as_slice()) {
        ([(Some(n), day)], []) if (1..=4).contains(n) || *n == -1 || *n == 5 => {
            let week = if *n < 0 { 5 } else { *n };
            format!("M{month}.{week}.{}", day.num_days_from_sunday())
        }
        // Outlook and Apple write "the second Sunday" as BYMONTHDAY=8,…,14;BYDAY=SU.
        ([(None, day)], days) if days.len() == 7 => {
            let first = *days.iter().min().unwrap_or(&0);
            let week = match first {
                1 => 1,
                8 => 2,
                15 => 3,
                22 => 4,
                -7 => 5,
                f if f >= 22 => 5,
                _ => return Err(format!("RRULE `{rule}` is not an nth weekday of the month")),
            };
            format!("M{month}.{week}.{}", day.num_days_from_sunday())
        }
        ([], [day]) if *day > 0 => {
            let in_common_year = chrono::NaiveDate::from_ymd_opt(2025, month, *day as u32)
                .ok_or_else(|| format!("RRULE `{rule}`: no such day"))?;
            format!("J{}", in_common_year.ordinal())
        }
        _ => return Err(format!("RRULE `{rule}` is neither an nth weekday of a month nor a fixed date")),
    };
    let t = o.start.time();
    let (h, m, s) = (t.hour(), t.minute(), t.second());
    Ok(match (m, s) {
        (0, 0) => format!("{date}/{h}"),
        (_, 0) => format!("{date}/{h}:{m:02}"),
        _ => format!("{date}/{h}:{m:02}:{s:02}"),
    })
}

/// The POSIX TZ string of a VTIMEZONE: its latest STANDARD and DAYLIGHT observances.
pub fn posix_of(tzid: &str, observances: &[Observance]) -> Result<String, String> {
    let latest =
        |daylight: bool| observances.iter().filter(|o| o.daylight == daylight).max_by_key(|o| o.start).cloned();
    let (standard, daylight) = (latest(false), latest(true));
    let Some(standard) = standard else {
        return Err(format!("VTIMEZONE `{tzid}` has no STANDARD observance"));
    };
    let std_part = posix_fixed(standard.name.as_deref(), standard.offset_to);
    // Daylight saving time whose rule has ended (UNTIL or COUNT) is history: the zone no longer
    // observes it.
    let daylight = daylight.filter(Observance::recurs_for_ever);
    match daylight {
        None => Ok(std_part),
        Some(d) => {
            let dst_part = format!("{}{}", posix_name(d.name.as_deref(), d.offset_to), posix_offset(d.offset_to));
            let why = |m: String| format!("VTIMEZONE `{tzid}`: {m}; use an IANA TZID");
            let (on, off) = (posix_rule(&d).map_err(why)?, posix_rule(&standard).map_err(why)?);
            Ok(format!("{std_part}{dst_part},{on},{off}"))
        }
    }
}

/// The zone for a VTIMEZONE definition: one POSIX TZ string when every observance recurs for
/// ever, else its transitions ([`super::tzif`]).
pub fn zone_of(tzid: &str, observances: &[Observance]) -> Result<Zone, String> {
    let name = match transitions(tzid, observances)? {
        Some(spec) => spec,
        None => posix_of(tzid, observances)?,
    };
    let tz = if super::tzif::is_transitions(&name) {
        super::tzif::zone(&name).map_err(|e| format!("VTIMEZONE `{tzid}`: {e}"))?
    } else {
        jiff::tz::TimeZone::posix(&name).map_err(|e| {
            format!("VTIMEZONE `{tzid}`: its rules give the POSIX TZ string `{name}`, which is invalid: {e}")
        })?
    };
    Ok(Zone::custom(&name, tz))
}

/// The transitions of a VTIMEZONE with onsets that do not recur for ever (a DTSTART without
/// RRULE, an RDATE, an RRULE that ends), written as [`super::tzif`] reads them; `None` when every
/// onset recurs for ever (one POSIX rule says it all) or none changes the offset.
fn transitions(tzid: &str, observances: &[Observance]) -> Result<Option<String>, String> {
    let end_of_time = chrono::NaiveDate::from_ymd_opt(9999, 12, 31).and_then(|d| d.and_hms_opt(0, 0, 0));
    let end_of_time = end_of_time.unwrap_or(NaiveDateTime::MAX);
    let mut last_once = None;
    for o in observances {
        let once = if o.recurs_for_ever() { o.onsets_once() } else { o.onsets(tzid, end_of_time)? };
        last_once = last_once.max(once.into_iter().max());
    }
    let Some(last_once) = last_once else { return Ok(None) };
    // A year past the last onset that does not recur (and past the first onset of every rule
    // that does), so that those rules have begun again before the POSIX rule continues them.
    let latest_start = observances.iter().map(|o| o.start.and_utc().timestamp() - o.offset_from as i64).max();
    let until = last_once.max(latest_start.unwrap_or(last_once)) + 366 * 86_400;
    let until = chrono::DateTime::from_timestamp(until, 0).map_or(end_of_time, |t| t.naive_utc());
    let mut onsets: Vec<(i64, &Observance)> = Vec::new();
    for o in observances {
        onsets.extend(o.onsets(tzid, until)?.into_iter().map(|t| (t, o)));
    }
    onsets.sort_by_key(|(t, _)| *t);
    let for_ever: Vec<Observance> = observances.iter().filter(|o| o.recurs_for_ever()).cloned().collect();
    let footer = match onsets.last() {
        Some(_) if !for_ever.is_empty() => posix_of(tzid, &for_ever)?,
        Some((_, o)) => posix_fixed(o.name.as_deref(), o.offset_to),
        None => return Ok(None),
    };
    let initial = onsets[0].1.offset_from;
    let mut offset = initial;
    let mut changes: Vec<(i64, &Observance)> = Vec::new();
    for (t, o) in onsets {
        if o.offset_to != offset {
            offset = o.offset_to;
            changes.push((t, o));
        }
    }
    if changes.is_empty() {
        return Ok(None);
    }
    let mut spec = posix_fixed(None, initial);
    for (i, (t, o)) in changes.iter().enumerate() {
        let at = chrono::DateTime::from_timestamp(*t, 0)
            .ok_or_else(|| format!("VTIMEZONE `{tzid}`: an onset out of range"))?;
        let rule = if i + 1 == changes.len() { footer.clone() } else { posix_fixed(o.name.as_deref(), o.offset_to) };
        spec.push_str(&format!(" @{} {rule}", super::time::utc_string(at)));
    }
    Ok(Some(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(daylight: bool, start: &str, from: &str, to: &str, name: &str, rrule: &str) -> Observance {
        Observance {
            daylight,
            start: NaiveDateTime::parse_from_str(start, "%Y%m%dT%H%M%S").unwrap(),
            offset_from: parse_offset(from).unwrap(),
            offset_to: parse_offset(to).unwrap(),
            name: Some(name.into()),
            rrule: Some(rrule.into()),
            rdates: Vec::new(),
        }
    }

    #[test]
    fn outlook_and_google_style_definitions_become_posix_rules() {
        let us = [
            obs(false, "16010101T020000", "-0400", "-0500", "EST", "FREQ=YEARLY;BYDAY=1SU;BYMONTH=11"),
            obs(true, "16010101T020000", "-0500", "-0400", "EDT", "FREQ=YEARLY;BYDAY=2SU;BYMONTH=3"),
        ];
        assert_eq!(posix_of("Custom", &us).unwrap(), "EST5EDT4,M3.2.0/2,M11.1.0/2");
        let uk = [
            obs(false, "19701025T020000", "+0100", "+0000", "GMT", "FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU"),
            obs(true, "19700329T010000", "+0000", "+0100", "BST", "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU"),
        ];
        assert_eq!(posix_of("London", &uk).unwrap(), "GMT0BST-1,M3.5.0/1,M10.5.0/2");
        let apple = [
            obs(
                false,
                "20071104T020000",
                "-0400",
                "-0500",
                "EST",
                "FREQ=YEARLY;BYMONTH=11;BYMONTHDAY=1,2,3,4,5,6,7;BYDAY=SU",
            ),
            obs(
                true,
                "20070311T020000",
                "-0500",
                "-0400",
                "EDT",
                "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=8,9,10,11,12,13,14;BYDAY=SU",
            ),
        ];
        assert_eq!(posix_of("Apple", &apple).unwrap(), "EST5EDT4,M3.2.0/2,M11.1.0/2");
        let india = [Observance { rrule: None, ..obs(false, "19700101T000000", "+0530", "+0530", "IST", "") }];
        assert_eq!(posix_of("India", &india).unwrap(), "IST-5:30");
        let z = zone_of("Custom", &us).unwrap();
        let july_2100 = chrono::NaiveDate::from_ymd_opt(2100, 7, 1).unwrap().and_hms_opt(12, 0, 0).unwrap();
        assert_eq!(z.instant(july_2100).to_rfc3339(), "2100-07-01T16:00:00+00:00");
    }

    fn at(zone: Zone, local: &str) -> String {
        let t = NaiveDateTime::parse_from_str(local, "%Y-%m-%dT%H:%M").unwrap();
        super::super::time::utc_string(zone.instant(t))
    }

    #[test]
    fn each_observance_without_rrule_begins_once_at_its_dtstart() {
        // The zone: +12 from 2024-01-01, +10 from 2024-05-05 (RFC 5545 §3.6.5).
        let once = |start: &str, from: &str, to: &str| Observance {
            rrule: None,
            name: None,
            ..obs(false, start, from, to, "", "")
        };
        let shift = [once("20240101T000000", "+1100", "+1200"), once("20240505T030000", "+1200", "+1000")];
        let zone = zone_of("Shift", &shift).unwrap();
        assert_eq!(zone.name(), "<+1100>-11 @2023-12-31T13:00:00Z <+1200>-12 @2024-05-04T15:00:00Z <+1000>-10");
        assert_eq!(at(zone, "2023-06-01T12:00"), "2023-06-01T01:00:00Z");
        assert_eq!(at(zone, "2024-03-01T12:00"), "2024-03-01T00:00:00Z");
        // After the second onset: +10, not the +12 before it (two hours apart).
        assert_eq!(at(zone, "2024-06-01T12:00"), "2024-06-01T02:00:00Z");
        assert_eq!(at(zone, "2090-06-01T12:00"), "2090-06-01T02:00:00Z");
        // Written as its transitions, the zone reads back as itself (the cache, `freeze import`).
        assert_eq!(at(Zone::named(zone.name()).unwrap(), "2024-06-01T12:00"), "2024-06-01T02:00:00Z");

        // RDATEs: the same observance begins again.
        let mut summer = once("20200405T030000", "+1000", "+1100");
        summer.rdates = vec![NaiveDateTime::parse_from_str("20210404T030000", "%Y%m%dT%H%M%S").unwrap()];
        let mut winter = once("20201004T020000", "+1100", "+1000");
        winter.rdates = vec![NaiveDateTime::parse_from_str("20211003T020000", "%Y%m%dT%H%M%S").unwrap()];
        let zone = zone_of("Flip", &[summer, winter]).unwrap();
        assert_eq!(at(zone, "2020-06-01T12:00"), "2020-06-01T01:00:00Z");
        assert_eq!(at(zone, "2020-12-01T12:00"), "2020-12-01T02:00:00Z");
        assert_eq!(at(zone, "2021-06-01T12:00"), "2021-06-01T01:00:00Z");
        assert_eq!(at(zone, "2022-06-01T12:00"), "2022-06-01T02:00:00Z", "no onset after October 2021");
    }

    #[test]
    fn rules_that_ended_are_history_and_rules_that_recur_continue() {
        // US rules before 2007 (first Sunday of April, last of October) and after.
        let us = [
            obs(
                false,
                "19671029T020000",
                "-0400",
                "-0500",
                "EST",
                "FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU;UNTIL=20061029T060000Z",
            ),
            obs(
                true,
                "19870405T020000",
                "-0500",
                "-0400",
                "EDT",
                "FREQ=YEARLY;BYMONTH=4;BYDAY=1SU;UNTIL=20060402T070000Z",
            ),
            obs(true, "20070311T020000", "-0500", "-0400", "EDT", "FREQ=YEARLY;BYMONTH=3;BYDAY=2SU"),
            obs(false, "20071104T020000", "-0400", "-0500", "EST", "FREQ=YEARLY;BYMONTH=11;BYDAY=1SU"),
        ];
        let zone = zone_of("US", &us).unwrap();
        // 2006-03-20: before the old rules' April start, EST; 2026-03-20: after the second Sunday, EDT.
        assert_eq!(at(zone, "2006-03-20T12:00"), "2006-03-20T17:00:00Z");
        assert_eq!(at(zone, "2006-04-10T12:00"), "2006-04-10T16:00:00Z");
        assert_eq!(at(zone, "2026-03-20T12:00"), "2026-03-20T16:00:00Z");
        assert_eq!(at(zone, "2100-07-01T12:00"), "2100-07-01T16:00:00Z");
        assert_eq!(at(zone, "2100-11-20T12:00"), "2100-11-20T17:00:00Z");
        // Only rules that recur for ever (Outlook's 1601 definitions): one POSIX rule, as before.
        let outlook = [
            obs(false, "16010101T020000", "-0400", "-0500", "EST", "FREQ=YEARLY;BYDAY=1SU;BYMONTH=11"),
            obs(true, "16010101T020000", "-0500", "-0400", "EDT", "FREQ=YEARLY;BYDAY=2SU;BYMONTH=3"),
        ];
        assert_eq!(zone_of("Outlook", &outlook).unwrap().name(), "EST5EDT4,M3.2.0/2,M11.1.0/2");
        // A single observance that never changes the offset is that offset.
        let india = [Observance { rrule: None, ..obs(false, "19700101T000000", "+0530", "+0530", "IST", "") }];
        assert_eq!(zone_of("India", &india).unwrap().name(), "IST-5:30");
    }

    #[test]
    fn windows_names_map_through_cldr() {
        assert_eq!(windows_to_iana("Eastern Standard Time"), Some("America/New_York"));
        assert_eq!(windows_to_iana("W. Europe Standard Time"), Some("Europe/Berlin"));
        assert_eq!(windows_to_iana("Europe/London"), None);
    }

    #[test]
    fn unexpressible_rules_are_errors() {
        let odd = [
            obs(false, "20001029T020000", "+0100", "+0000", "GMT", "FREQ=YEARLY;BYMONTH=10;BYDAY=-2SU"),
            obs(true, "20000326T010000", "+0000", "+0100", "BST", "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU"),
        ];
        assert!(posix_of("Odd", &odd).unwrap_err().contains("use an IANA TZID"));
    }
}

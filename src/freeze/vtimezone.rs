//! Zones an iCalendar file defines itself (VTIMEZONE), and Windows zone names.
//!
//! A TZID is resolved in this order: an IANA name; a Windows name (Outlook writes
//! `TZID=Eastern Standard Time`), mapped to IANA with CLDR's `windowsZones` table as the
//! `windows-timezones` crate carries it (territory `001`, CLDR's world-wide default); else the
//! file's own VTIMEZONE of that TZID. A VTIMEZONE becomes a POSIX TZ rule
//! (`<EST>5<EDT>4,M3.2.0/2,M11.1.0/2`) built from its current STANDARD and DAYLIGHT observances,
//! which jiff then applies to every year, as the IANA database's own footer does. Observances
//! a POSIX rule cannot express (RDATE lists, rules other than "nth weekday of a month" or a fixed
//! date) are errors: the calendar must not guess a zone.

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
    pub has_rdate: bool,
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
    let std_part =
        format!("{}{}", posix_name(standard.name.as_deref(), standard.offset_to), posix_offset(standard.offset_to));
    // Daylight saving time whose rule has ended (UNTIL or COUNT) is history: the zone no longer
    // observes it.
    let open_ended = |o: &Observance| {
        o.rrule.as_deref().is_some_and(|r| {
            let upper = r.to_ascii_uppercase();
            !upper.contains("UNTIL") && !upper.contains("COUNT")
        })
    };
    let daylight = daylight.filter(open_ended);
    match daylight {
        None if standard.has_rdate && standard.rrule.is_none() && observances.len() > 1 => {
            Err(format!("VTIMEZONE `{tzid}`: observances given by RDATE lists cannot be continued to later years"))
        }
        None => Ok(std_part),
        Some(d) => {
            let dst_part = format!("{}{}", posix_name(d.name.as_deref(), d.offset_to), posix_offset(d.offset_to));
            let why = |m: String| format!("VTIMEZONE `{tzid}`: {m}; use an IANA TZID");
            let (on, off) = (posix_rule(&d).map_err(why)?, posix_rule(&standard).map_err(why)?);
            Ok(format!("{std_part}{dst_part},{on},{off}"))
        }
    }
}

/// The zone for a VTIMEZONE definition.
pub fn zone_of(tzid: &str, observances: &[Observance]) -> Result<Zone, String> {
    let posix = posix_of(tzid, observances)?;
    let tz = jiff::tz::TimeZone::posix(&posix).map_err(|e| {
        format!("VTIMEZONE `{tzid}`: its rules give the POSIX TZ string `{posix}`, which is invalid: {e}")
    })?;
    Ok(Zone::custom(&posix, tz))
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
            has_rdate: false,
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

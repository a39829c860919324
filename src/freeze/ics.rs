//! iCalendar import (`[[calendar]]`: each VEVENT becomes an event) and export (`sluice freeze
//! export`: the expanded windows, for release engineers to subscribe to).
//!
//! Parsing uses the `icalendar` crate, but times are resolved here: its own conversions
//! (`as_dt_with_tz`) unwrap and panic on DST-gap or ambiguous local times and on unknown TZIDs.
//! The parse itself runs under `catch_unwind` so malformed input is an error, never a crash.

use super::calendar::{Calendar, Event, Length, Schedule};
use super::duration::IsoDuration;
use super::expand::Occurrence;
use super::recur::Recurrence;
use super::time::{parse_zone, utc_string};
use crate::error::{read_text, Error, Result};
use chrono::{DateTime, NaiveDateTime, NaiveTime, Utc};
use chrono_tz::Tz;
use icalendar::{CalendarDateTime, Component, DatePerhapsTime, EventLike};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Reads the VEVENTs of an `.ics` file as events with ids `{prefix}{UID}`; `tz` is used for
/// floating times and all-day dates.
pub fn import(path: &Path, prefix: &str, tz: Tz) -> Result<Vec<Event>> {
    import_text(path, &read_text(path)?, prefix, tz)
}

/// [`import`] of text already read; `path` names the file in errors and events.
pub fn import_text(path: &Path, text: &str, prefix: &str, tz: Tz) -> Result<Vec<Event>> {
    let parsed = catch_unwind(AssertUnwindSafe(|| text.parse::<icalendar::Calendar>()))
        .map_err(|_| {
            Error::invalid(path, None, "the iCalendar parser crashed on this file; check that it is valid RFC 5545")
        })?
        .map_err(|e| Error::invalid(path, None, format!("not a valid iCalendar file: {}", e.trim())))?;
    // The crate keeps no positions: find each VEVENT's line by counting BEGIN:VEVENT in order.
    let vevent_lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_end().eq_ignore_ascii_case("BEGIN:VEVENT"))
        .map(|(i, _)| i + 1)
        .collect();
    let mut events = Vec::new();
    for (n, vevent) in parsed.events().enumerate() {
        let line = vevent_lines.get(n).copied().unwrap_or(1);
        let uid = vevent.get_uid().map(str::trim).unwrap_or("");
        let at = |m: String| {
            let name = if uid.is_empty() { format!("VEVENT #{}", n + 1) } else { format!("VEVENT `{uid}`") };
            Error::invalid(path, Some(line), format!("{name}: {m}"))
        };
        if uid.is_empty() {
            return Err(at("has no UID; every imported event needs one (it becomes the event id)".into()));
        }
        if vevent.property_value("RECURRENCE-ID").is_some() {
            return Err(at("RECURRENCE-ID (a moved occurrence) is not supported; export the series expanded".into()));
        }
        let start = vevent.get_start().ok_or_else(|| at("has no DTSTART".into()))?;
        let (start_local, zone, all_day) = local_of(&start, tz).map_err(at)?;
        let end_local = match (vevent.get_end(), vevent.property_value("DURATION")) {
            (Some(end), _) => {
                let (end_local, end_zone, _) = local_of(&end, zone).map_err(at)?;
                if end_zone != zone {
                    // Keep one zone per event: read the end in the start's zone.
                    super::time::resolve_local(end_zone, end_local).with_timezone(&zone).naive_local()
                } else {
                    end_local
                }
            }
            (None, Some(d)) => {
                let d = IsoDuration::parse(d.trim()).map_err(|m| at(format!("DURATION: {m}")))?;
                d.add_nominal(start_local).ok_or_else(|| at("DURATION out of range".into()))? + d.exact()
            }
            (None, None) if all_day => start_local + chrono::Duration::days(1),
            (None, None) => start_local,
        };
        if end_local < start_local {
            return Err(at("ends before it starts".into()));
        }
        let schedule = match vevent.property_value("RRULE") {
            None => Schedule::Once { start: start_local, end: end_local },
            Some(rule) => {
                let span = end_local - start_local;
                let length = if all_day {
                    IsoDuration::from_parts(span.num_days().max(1) as u32, 0)
                } else {
                    IsoDuration::from_parts(0, span.num_seconds().max(1) as u64)
                };
                Schedule::Recurring {
                    rule: Box::new(Recurrence::parse(rule, start_local).map_err(|m| at(format!("RRULE {m}")))?),
                    start_time: start_local.time(),
                    length: Length::Duration(length),
                }
            }
        };
        events.push(Event {
            id: format!("{prefix}{uid}"),
            name: vevent.get_summary().unwrap_or(uid).to_string(),
            tz: zone,
            schedule,
            file: path.to_path_buf(),
            line,
        });
    }
    Ok(events)
}

/// A DTSTART/DTEND as local wall-clock time, its zone, and whether it is an all-day date.
fn local_of(value: &DatePerhapsTime, default: Tz) -> std::result::Result<(NaiveDateTime, Tz, bool), String> {
    match value {
        DatePerhapsTime::Date(d) => Ok((d.and_time(NaiveTime::MIN), default, true)),
        DatePerhapsTime::DateTime(CalendarDateTime::Floating(t)) => Ok((*t, default, false)),
        DatePerhapsTime::DateTime(CalendarDateTime::Utc(t)) => Ok((t.naive_utc(), Tz::UTC, false)),
        DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone { date_time, tzid }) => {
            let zone = parse_zone(tzid.trim_matches('"')).map_err(|m| format!("TZID: {m}"))?;
            Ok((*date_time, zone, false))
        }
    }
}

/// Writes occurrences as an iCalendar document: one VEVENT per occurrence, in UTC.
pub fn export(calendar: &Calendar, occurrences: &[Occurrence], stamp: DateTime<Utc>) -> String {
    let mut out = icalendar::Calendar::new();
    out.name("Sluice change freezes");
    for o in occurrences {
        let window = &calendar.windows[o.window];
        let event = o.event.map(|e| &calendar.events[e]);
        let title = match (window.kind, event) {
            (super::calendar::Kind::Deny, Some(e)) => format!("Change freeze: {} ({})", window.id, e.name),
            (super::calendar::Kind::Deny, None) => format!("Change freeze: {}", window.id),
            (super::calendar::Kind::Allow, _) => format!("Deploy window: {}", window.id),
        };
        let mut description = String::new();
        if !window.reason.is_empty() {
            description.push_str(&window.reason);
            description.push('\n');
        }
        description.push_str(&format!(
            "kind: {}\nenvironments: {}\nservices: {}",
            window.kind.as_str(),
            window.environments.describe(),
            window.services.describe()
        ));
        if let Some(e) = event {
            description.push_str(&format!("\nevent: {}", e.id));
        }
        let uid = format!("{}-{}@sluice", window.id, utc_string(o.start).replace([':', '-'], ""));
        out.push(
            icalendar::Event::new()
                .uid(&uid)
                .summary(&title)
                .description(&description)
                .starts(o.start)
                .ends(o.end)
                .timestamp(stamp)
                .add_property("CATEGORIES", window.kind.as_str())
                .done(),
        );
    }
    out.done().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_timed_all_day_floating_and_recurring_events() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.ics");
        std::fs::write(
            &file,
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\n\
BEGIN:VEVENT\r\nUID:spring-count\r\nSUMMARY:Spring Bird Count\r\nDTSTART;TZID=Europe/London:20260517T000000\r\nDTEND;TZID=Europe/London:20260519T000000\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:june-day\r\nDTSTART;VALUE=DATE:20260601\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:utc-one\r\nDTSTART:20260701T120000Z\r\nDURATION:PT2H\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:monthly\r\nDTSTART;TZID=America/New_York:20260105T060000\r\nDTEND;TZID=America/New_York:20260105T080000\r\nRRULE:FREQ=MONTHLY;BYDAY=1MO\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n",
        )
        .unwrap();
        let events = import(&file, "survey-", Tz::UTC).unwrap();
        let ids: Vec<_> = events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["survey-spring-count", "survey-june-day", "survey-utc-one", "survey-monthly"]);
        assert_eq!(events[0].name, "Spring Bird Count");
        assert_eq!(events[0].tz.name(), "Europe/London");
        assert_eq!(events[0].line, 4);
        match &events[1].schedule {
            Schedule::Once { start, end } => assert_eq!((*end - *start).num_hours(), 24),
            other => panic!("{other:?}"),
        }
        match &events[2].schedule {
            Schedule::Once { start, end } => assert_eq!((*end - *start).num_hours(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(events[3].schedule, Schedule::Recurring { .. }));
    }

    #[test]
    fn bad_tzid_and_dst_gap_times_are_handled() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.ics");
        std::fs::write(&file, "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;TZID=Eastern Standard Time:20260308T023000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n").unwrap();
        let e = import(&file, "", Tz::UTC).unwrap_err().to_string();
        assert!(e.contains(":2: VEVENT `x`: TZID: unknown time zone `Eastern Standard Time`"), "{e}");
        // 02:30 on the New York spring-forward day does not exist: imported, not a panic.
        std::fs::write(&file, "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:gap\r\nDTSTART;TZID=America/New_York:20260308T023000\r\nDTEND;TZID=America/New_York:20260308T040000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n").unwrap();
        assert_eq!(import(&file, "", Tz::UTC).unwrap().len(), 1);
        std::fs::write(&file, "this is not a calendar").unwrap();
        assert!(import(&file, "", Tz::UTC).unwrap_err().to_string().contains("not a valid iCalendar file"));
    }
}

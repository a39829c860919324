//! Occurrences: each window's intervals in UTC, `[start, end)`, within a queried range.
//!
//! Expansion is bounded by the range asked for; one-off events are pre-sorted in UTC per window
//! (see [`super::calendar::AnchoredEvents`]) so a range query is a binary search, not a scan.

use super::calendar::{Anchor, Calendar, Length, Schedule};
use super::duration::IsoDuration;
use super::time::resolve_local;
use crate::error::{Error, Result};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use chrono_tz::Tz;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occurrence {
    /// Index into `calendar.windows`.
    pub window: usize,
    /// Index into `calendar.events`, for anchored windows.
    pub event: Option<usize>,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Occurrence {
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.start <= t && t < self.end
    }
}

/// Slack around a UTC range when searching in local wall-clock time: offsets stay within ±26 h.
const ZONE_SLACK: i64 = 27;

/// An occurrence of a schedule: UTC start and end, and the local wall-clock start and end.
pub type Interval = (DateTime<Utc>, DateTime<Utc>, NaiveDateTime, NaiveDateTime);

/// The UTC intervals of one schedule that intersect `[from, to)`, in order.
pub fn schedule_intervals(
    tz: Tz,
    schedule: &Schedule,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> std::result::Result<Vec<Interval>, String> {
    let mut out = Vec::new();
    match schedule {
        Schedule::Once { start, end } => {
            let (s, e) = (resolve_local(tz, *start), resolve_local(tz, *end));
            if s < to && e > from && s < e {
                out.push((s, e, *start, *end));
            }
        }
        Schedule::Recurring { rule, start_time, length } => {
            let longest = match length {
                Length::EndTime(_) => Duration::days(1),
                Length::Duration(d) => d.upper_bound(),
            };
            let lo = from.naive_utc() - longest - Duration::hours(ZONE_SLACK);
            let hi = to.naive_utc() + Duration::hours(ZONE_SLACK);
            for local_start in rule.starts_between(tz, lo, hi)? {
                let s = resolve_local(tz, local_start);
                let (e, local_end) = match length {
                    Length::EndTime(end_time) => {
                        let mut local_end = local_start.date().and_time(*end_time);
                        if *end_time <= *start_time || local_end <= local_start {
                            local_end += Duration::days(1);
                        }
                        (resolve_local(tz, local_end), local_end)
                    }
                    Length::Duration(d) => add(tz, local_start, d),
                };
                // A window that DST squeezes to nothing (02:00–02:30 on a spring-forward day) is empty.
                if s < to && e > from && s < e {
                    out.push((s, e, local_start, local_end));
                }
            }
        }
    }
    Ok(out)
}

/// `local + d`: nominal part on the wall clock, then the exact part in real time.
fn add(tz: Tz, local: NaiveDateTime, d: &IsoDuration) -> (DateTime<Utc>, NaiveDateTime) {
    let wall = d.add_nominal(local).unwrap_or(NaiveDateTime::MAX);
    (resolve_local(tz, wall) + d.exact(), wall + d.exact())
}

/// `local - d`: the exact part in real time, then the nominal part on the wall clock.
fn sub(tz: Tz, local: NaiveDateTime, d: &IsoDuration) -> DateTime<Utc> {
    let wall = d.sub_nominal(local).unwrap_or(NaiveDateTime::MIN);
    resolve_local(tz, wall) - d.exact()
}

impl Calendar {
    /// Every occurrence of the windows `keep` selects that intersects `[from, to)`, sorted by start
    /// (then window order).
    pub fn occurrences(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        keep: impl Fn(usize) -> bool,
    ) -> Result<Vec<Occurrence>> {
        let mut out = Vec::new();
        for (wi, window) in self.windows.iter().enumerate() {
            if !keep(wi) {
                continue;
            }
            let entry =
                |m: String| Error::invalid(&self.path, Some(window.line), format!("[[window]] `{}`: {m}", window.id));
            match &window.anchor {
                Anchor::Own { tz, schedule } => {
                    for (s, e, _, _) in schedule_intervals(*tz, schedule, from, to).map_err(entry)? {
                        out.push(Occurrence { window: wi, event: None, start: s, end: e });
                    }
                }
                Anchor::Events(anchored) => {
                    let lead = anchored.lead.upper_bound() + Duration::hours(2);
                    let lag = anchored.lag.upper_bound() + Duration::hours(2);
                    // Events that can reach [from, to) once widened by lead and lag.
                    let (ev_from, ev_to) = (from - lag, to + lead);
                    let first = anchored.once.partition_point(|(s, _, _)| *s < ev_from - anchored.once_max_len);
                    for (_, e, ei) in anchored.once[first..].iter().take_while(|(s, _, _)| *s < ev_to) {
                        if *e <= ev_from {
                            continue;
                        }
                        let event = &self.events[*ei];
                        if let Schedule::Once { start, end } = &event.schedule {
                            let ws = sub(event.tz, *start, &anchored.lead);
                            let (we, _) = add(event.tz, *end, &anchored.lag);
                            if ws < to && we > from && ws < we {
                                out.push(Occurrence { window: wi, event: Some(*ei), start: ws, end: we });
                            }
                        }
                    }
                    for &ei in &anchored.recurring {
                        let event = &self.events[ei];
                        let intervals = schedule_intervals(event.tz, &event.schedule, ev_from, ev_to).map_err(|m| {
                            Error::invalid(&event.file, Some(event.line), format!("event `{}`: {m}", event.id))
                        })?;
                        for (_, _, ls, le) in intervals {
                            let ws = sub(event.tz, ls, &anchored.lead);
                            let (we, _) = add(event.tz, le, &anchored.lag);
                            if ws < to && we > from && ws < we {
                                out.push(Occurrence { window: wi, event: Some(ei), start: ws, end: we });
                            }
                        }
                    }
                }
            }
        }
        out.sort_by_key(|a| (a.start, a.window, a.end));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::calendar::parse;
    use crate::freeze::time::utc_string;
    use std::path::Path;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn intervals(cal: &Calendar, from: &str, to: &str) -> Vec<String> {
        cal.occurrences(t(from), t(to), |_| true)
            .unwrap()
            .iter()
            .map(|o| format!("{} {}..{}", cal.windows[o.window].id, utc_string(o.start), utc_string(o.end)))
            .collect()
    }

    fn weekly(zone: &str) -> Calendar {
        let text = format!(
            "[[window]]\nid = \"peak\"\nkind = \"deny\"\ntimezone = \"{zone}\"\nrrule = \"FREQ=WEEKLY;BYDAY=SU\"\nstart_time = \"07:00\"\nend_time = \"09:30\"\n"
        );
        parse(Path::new("f.toml"), &text).unwrap()
    }

    #[test]
    fn weekly_window_follows_new_york_across_march_and_november_changes() {
        let cal = weekly("America/New_York");
        // DST starts Sunday 2026-03-08 and ends Sunday 2026-11-01: the wall clock stays 07:00.
        assert_eq!(
            intervals(&cal, "2026-03-01T00:00:00Z", "2026-03-16T00:00:00Z"),
            [
                "peak 2026-03-01T12:00:00Z..2026-03-01T14:30:00Z",
                "peak 2026-03-08T11:00:00Z..2026-03-08T13:30:00Z",
                "peak 2026-03-15T11:00:00Z..2026-03-15T13:30:00Z",
            ]
        );
        assert_eq!(
            intervals(&cal, "2026-10-25T00:00:00Z", "2026-11-09T00:00:00Z"),
            [
                "peak 2026-10-25T11:00:00Z..2026-10-25T13:30:00Z",
                "peak 2026-11-01T12:00:00Z..2026-11-01T14:30:00Z",
                "peak 2026-11-08T12:00:00Z..2026-11-08T14:30:00Z",
            ]
        );
    }

    #[test]
    fn weekly_window_follows_london_across_march_and_october_changes() {
        let cal = weekly("Europe/London");
        // BST starts Sunday 2026-03-29 and ends Sunday 2026-10-25.
        assert_eq!(
            intervals(&cal, "2026-03-22T00:00:00Z", "2026-03-30T00:00:00Z"),
            ["peak 2026-03-22T07:00:00Z..2026-03-22T09:30:00Z", "peak 2026-03-29T06:00:00Z..2026-03-29T08:30:00Z"]
        );
        assert_eq!(
            intervals(&cal, "2026-10-18T00:00:00Z", "2026-10-26T00:00:00Z"),
            ["peak 2026-10-18T06:00:00Z..2026-10-18T08:30:00Z", "peak 2026-10-25T07:00:00Z..2026-10-25T09:30:00Z"]
        );
    }

    #[test]
    fn windows_in_the_gap_and_overlap_follow_the_documented_policy() {
        let text = "[[window]]\nid = \"night\"\nkind = \"deny\"\ntimezone = \"America/New_York\"\nrrule = \"FREQ=DAILY\"\nfrom = \"2026-03-07\"\nstart_time = \"01:30\"\nend_time = \"02:30\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
            [
                "night 2026-03-07T06:30:00Z..2026-03-07T07:30:00Z",
                // 02:30 does not exist on 2026-03-08: the end moves to 03:00 EDT (07:00Z).
                "night 2026-03-08T06:30:00Z..2026-03-08T07:00:00Z",
                "night 2026-03-09T05:30:00Z..2026-03-09T06:30:00Z",
            ]
        );
        // 2026-11-01 01:30 is ambiguous: the earlier instant (EDT) starts it.
        let got = intervals(&cal, "2026-11-01T00:00:00Z", "2026-11-01T12:00:00Z");
        assert_eq!(got, ["night 2026-11-01T05:30:00Z..2026-11-01T07:30:00Z"]);
    }

    #[test]
    fn event_window_starts_seven_calendar_days_before_the_event() {
        let text = r#"
[[event]]
id = "count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[window]]
id = "freeze"
kind = "deny"
event = "count"
lead = "P7D"
lag = "PT6H"
"#;
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"),
            ["freeze 2026-05-09T23:00:00Z..2026-05-19T05:00:00Z"]
        );
        assert!(intervals(&cal, "2026-05-19T05:00:00Z", "2026-06-01T00:00:00Z").is_empty());
        assert_eq!(intervals(&cal, "2026-05-19T04:59:59Z", "2026-05-19T05:00:00Z").len(), 1);
    }

    #[test]
    fn lead_across_a_dst_change_counts_calendar_days() {
        // Event 2026-04-02 00:00 London (BST); seven calendar days earlier is 2026-03-26 00:00 GMT.
        let text = "[[event]]\nid = \"e\"\ntimezone = \"Europe/London\"\nstart = \"2026-04-02T00:00\"\nend = \"2026-04-03T00:00\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"e\"\nlead = \"P7D\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"),
            ["w 2026-03-26T00:00:00Z..2026-04-02T23:00:00Z"]
        );
    }

    #[test]
    fn recurring_event_with_glob_anchor() {
        let text = r#"
[[event]]
id = "survey-spring"
timezone = "Europe/London"
rrule = "FREQ=YEARLY;BYMONTH=5;BYDAY=3SU"
start_time = "00:00"
duration = "P2D"

[[event]]
id = "survey-june"
start = "2026-06-01T06:00"
end = "2026-06-01T18:00"

[[window]]
id = "pre-survey"
kind = "deny"
event = "survey-*"
lead = "PT12H"
"#;
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-01-01T00:00:00Z", "2027-06-01T00:00:00Z"),
            [
                "pre-survey 2026-05-16T11:00:00Z..2026-05-18T23:00:00Z",
                "pre-survey 2026-05-31T18:00:00Z..2026-06-01T18:00:00Z",
                "pre-survey 2027-05-15T11:00:00Z..2027-05-17T23:00:00Z",
            ]
        );
    }
}

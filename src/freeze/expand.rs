//! Occurrences: each window's intervals in UTC, `[start, end)`, within a queried range.
//!
//! Expansion is bounded by the range asked for; one-off events are pre-sorted in UTC per window
//! (see [`super::calendar::AnchoredEvents`]) so a range query is a binary search, not a scan.

use super::calendar::{Anchor, Calendar, Length, Schedule};
use super::duration::IsoDuration;
use super::zone::Zone;
use crate::error::{Error, Result};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};

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

/// One occurrence of a schedule: its UTC start and end, equal when a DST change squeezes it to
/// nothing (02:00–02:30 on a spring-forward day), and its wall-clock start as the rule gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub local_start: NaiveDateTime,
}

/// The occurrences of one schedule that touch `[from, to)`, in order: those that overlap it and
/// the zero-length ones inside it. Zero-length occurrences are kept: an event squeezed to
/// nothing still happens and still anchors lead and lag; a window squeezed to nothing blocks
/// nothing (callers drop it).
pub fn schedule_instances(
    tz: Zone,
    schedule: &Schedule,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> std::result::Result<Vec<Instance>, String> {
    let touches = |s: DateTime<Utc>, e: DateTime<Utc>| s < to && (e > from || (s == e && s >= from));
    let mut out = Vec::new();
    match schedule {
        Schedule::Once { start, end } => {
            let (s, e) = (tz.instant(*start), tz.instant(*end));
            if touches(s, e) {
                out.push(Instance { start: s, end: e.max(s), local_start: *start });
            }
        }
        Schedule::Recurring { rule, start_time, length, instances } => {
            let longest = match length {
                Length::EndTime(_) => Duration::days(1),
                Length::Duration(d) => d.upper_bound(),
            };
            let lo = from.naive_utc() - longest - Duration::hours(ZONE_SLACK);
            let hi = to.naive_utc() + Duration::hours(ZONE_SLACK);
            // A rule start and an RDATE in one DST gap are two wall-clock times but one start:
            // the recurrence set is a set of instants (RFC 5545 §3.8.5.2), so they are one
            // occurrence, the longer if their ends differ (toward more freeze). Starts come in
            // wall-clock order, which is instant order, so such twins are neighbours.
            for local_start in rule.starts_between(tz, lo, hi)? {
                let s = tz.instant(local_start);
                let e = length.end_of(tz, *start_time, local_start);
                if let Some(twin) = out.last_mut().filter(|twin| twin.start == s) {
                    twin.end = twin.end.max(e);
                } else if touches(s, e) {
                    out.push(Instance { start: s, end: e.max(s), local_start });
                }
            }
            for &(start, end) in instances {
                let (s, e) = (tz.instant(start), tz.instant(end));
                if touches(s, e) {
                    out.push(Instance { start: s, end: e.max(s), local_start: start });
                }
            }
            if !instances.is_empty() {
                out.sort_by_key(|i| (i.start, i.end));
            }
        }
    }
    Ok(out)
}

/// `t + d` for an instant `t` in `tz`: years, months and days move the wall clock (calendar
/// days, 23 or 25 hours across a DST change), then hours, minutes and seconds move real time.
pub fn add(tz: Zone, t: DateTime<Utc>, d: &IsoDuration) -> DateTime<Utc> {
    let moved = if d.is_exact() { Some(t) } else { d.add_nominal(tz.local(t)).map(|wall| tz.instant(wall)) };
    moved.and_then(|m| m.checked_add_signed(d.exact())).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `t - d`: the calendar part on the wall clock, then the exact part in real time.
pub fn sub(tz: Zone, t: DateTime<Utc>, d: &IsoDuration) -> DateTime<Utc> {
    let moved = if d.is_exact() { Some(t) } else { d.sub_nominal(tz.local(t)).map(|wall| tz.instant(wall)) };
    moved.and_then(|m| m.checked_sub_signed(d.exact())).unwrap_or(DateTime::<Utc>::MIN_UTC)
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
                    for i in schedule_instances(*tz, schedule, from, to).map_err(entry)? {
                        // A window squeezed to nothing by a DST change blocks (or allows) nothing.
                        if i.start < i.end {
                            out.push(Occurrence { window: wi, event: None, start: i.start, end: i.end });
                        }
                    }
                }
                Anchor::Events(anchored) => {
                    // Calendar days count on the wall clock: across a change of offset (up to
                    // 26 hours, the span of UTC offsets) they last longer in real time.
                    let slack = |d: &IsoDuration| {
                        d.upper_bound() + if d.is_exact() { Duration::zero() } else { Duration::hours(ZONE_SLACK) }
                    };
                    let (lead, lag) = (slack(&anchored.lead), slack(&anchored.lag));
                    // Events that can reach [from, to) once widened by lead and lag.
                    let (ev_from, ev_to) = (from - lag, to + lead);
                    // The window of one event occurrence: lead before its real start, lag after
                    // its real end (for `PT…` durations that is the exact instant the event ends,
                    // whatever the wall clock did in between).
                    let mut anchor = |ei: usize, tz: Zone, s: DateTime<Utc>, e: DateTime<Utc>| {
                        let (ws, we) = (sub(tz, s, &anchored.lead), add(tz, e, &anchored.lag));
                        if ws < to && we > from && ws < we {
                            out.push(Occurrence { window: wi, event: Some(ei), start: ws, end: we });
                        }
                    };
                    let first = anchored.once.partition_point(|(s, _, _)| *s < ev_from - anchored.once_max_len);
                    for &(s, e, ei) in anchored.once[first..].iter().take_while(|(s, _, _)| *s < ev_to) {
                        if e < ev_from {
                            continue;
                        }
                        anchor(ei, self.events[ei].tz, s, e);
                    }
                    for &ei in &anchored.recurring {
                        let event = &self.events[ei];
                        let instances = schedule_instances(event.tz, &event.schedule, ev_from, ev_to).map_err(|m| {
                            Error::invalid(&event.file, Some(event.line), format!("event `{}`: {m}", event.id))
                        })?;
                        for i in instances {
                            anchor(ei, event.tz, i.start, i.end);
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

    #[test]
    fn exact_durations_anchor_at_the_real_end_across_dst() {
        // Issue 12, case 1: 20:00 New York + PT12H on 2026-03-07 ends at 13:00Z on 2026-03-08
        // (09:00 EDT), not at 08:00 local (12:00Z).
        let text = "[[event]]\nid = \"night-job\"\ntimezone = \"America/New_York\"\nrrule = \"FREQ=DAILY\"\nfrom = \"2026-03-07\"\nstart_time = \"20:00\"\nduration = \"PT12H\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"night-job\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-08T12:00:00Z"),
            ["w 2026-03-08T01:00:00Z..2026-03-08T13:00:00Z"]
        );
        // Calendar days stay calendar days: P1D from 20:00 on the 7th ends at 20:00 EDT on the 8th.
        let days = text.replace("PT12H", "P1D");
        let cal = parse(Path::new("f.toml"), &days).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-08T12:00:00Z"),
            ["w 2026-03-08T01:00:00Z..2026-03-09T00:00:00Z"]
        );
    }

    #[test]
    fn an_event_squeezed_to_nothing_still_anchors_its_window() {
        // Issue 12, case 2: 02:00–02:30 New York does not exist on 2026-03-08; the occurrence is
        // the instant 07:00Z, and a 12-hour lead freezes from 19:00Z the day before.
        let text = "[[event]]\nid = \"e\"\ntimezone = \"America/New_York\"\nrrule = \"FREQ=DAILY\"\nfrom = \"2026-03-07\"\nstart_time = \"02:00\"\nend_time = \"02:30\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"e\"\nlead = \"PT12H\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-08T00:00:01Z"),
            ["w 2026-03-07T19:00:00Z..2026-03-08T07:00:00Z"]
        );
        // The same event written as a one-off freezes the same way.
        let once = "[[event]]\nid = \"e\"\ntimezone = \"America/New_York\"\nstart = \"2026-03-08T02:00\"\nend = \"2026-03-08T02:30\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"e\"\nlead = \"PT12H\"\n";
        let cal = parse(Path::new("f.toml"), once).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-08T00:00:01Z"),
            ["w 2026-03-07T19:00:00Z..2026-03-08T07:00:00Z"]
        );
        // A window squeezed to nothing is not listed.
        let window = "[[window]]\nid = \"w\"\nkind = \"deny\"\ntimezone = \"America/New_York\"\nrrule = \"FREQ=DAILY\"\nfrom = \"2026-03-07\"\nstart_time = \"02:00\"\nend_time = \"02:30\"\n";
        let cal = parse(Path::new("f.toml"), window).unwrap();
        assert_eq!(intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z"), Vec::<String>::new());
    }

    #[test]
    fn an_rdate_at_another_time_lasts_as_long_as_the_rules_occurrences() {
        // 22:00–04:00 is six hours; an RDATE at 01:00 runs to 07:00, not to the next 04:00
        // (27 hours), as RFC 5545 §3.8.5.2 gives an RDATE instance the rule's duration.
        let text = "[[window]]\nid = \"night\"\nkind = \"deny\"\ntimezone = \"Europe/London\"\nrrule = \"FREQ=WEEKLY;BYDAY=MO\"\nfrom = \"2026-06-01\"\nstart_time = \"22:00\"\nend_time = \"04:00\"\nrdate = [\"2026-06-10T01:00\"]\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-06-08T00:00:00Z", "2026-06-12T00:00:00Z"),
            ["night 2026-06-08T21:00:00Z..2026-06-09T03:00:00Z", "night 2026-06-10T00:00:00Z..2026-06-10T06:00:00Z"]
        );
        // An RDATE at the rule's own time ends at end_time, as the rule's occurrences do.
        let same = text.replace("2026-06-10T01:00", "2026-06-10T22:00");
        let cal = parse(Path::new("f.toml"), &same).unwrap();
        assert_eq!(
            intervals(&cal, "2026-06-10T00:00:00Z", "2026-06-12T00:00:00Z"),
            ["night 2026-06-10T21:00:00Z..2026-06-11T03:00:00Z"]
        );
    }

    #[test]
    fn a_rule_start_and_an_rdate_in_one_dst_gap_are_one_occurrence() {
        // 02:30 and 02:15 do not exist in New York on 2026-03-08: both start at 03:00 EDT (07:00Z).
        let text = "[[window]]\nid = \"w\"\nkind = \"deny\"\ntimezone = \"America/New_York\"\nrrule = \"FREQ=DAILY\"\nfrom = \"2026-03-07\"\nstart_time = \"02:30\"\nduration = \"PT1H\"\nrdate = [\"2026-03-08T02:15\"]\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T00:00:00Z", "2026-03-08T12:00:00Z"),
            ["w 2026-03-08T07:00:00Z..2026-03-08T08:00:00Z"]
        );
        // With calendar days their ends differ (02:15 and 02:30 the next day): one occurrence, the longer.
        let days = text.replace("PT1H", "P1D");
        let cal = parse(Path::new("f.toml"), &days).unwrap();
        assert_eq!(
            intervals(&cal, "2026-03-08T06:00:00Z", "2026-03-08T08:00:00Z"),
            ["w 2026-03-07T07:30:00Z..2026-03-08T07:00:00Z", "w 2026-03-08T07:00:00Z..2026-03-09T06:30:00Z"]
        );
    }

    #[test]
    fn a_window_in_2100_keeps_daylight_saving_time() {
        // Issue 12, case 4.
        let text = "[[window]]\nid = \"noon\"\nkind = \"deny\"\ntimezone = \"America/New_York\"\nstart = \"2100-07-01T12:00\"\nend = \"2100-07-01T13:00\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        assert_eq!(
            intervals(&cal, "2100-01-01T00:00:00Z", "2101-01-01T00:00:00Z"),
            ["noon 2100-07-01T16:00:00Z..2100-07-01T17:00:00Z"]
        );
    }
}

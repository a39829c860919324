//! The answers of `sluice freeze status | list | next-open | lint`, as plain values.
//!
//! Each function computes what its command reports and nothing more: no flags, no output formats
//! (those are `cli::freeze` and `report::freeze`), no printing. The values borrow the calendar and
//! overrides they were computed from, so a renderer can name windows, events and overrides.

use super::calendar::{Anchor, Calendar, Event, Length, Schedule, Window};
use super::decide::{self, Decider, NextOpen, Query, Status};
use super::duration::IsoDuration;
use super::expand::Occurrence;
use super::overrides::{Override, Overrides};
use super::time::utc_string;
use crate::error::Result;
use crate::freeze::zone::Zone;
use chrono::{DateTime, Duration, Utc};

/// `freeze status`: the decision for one deploy at one instant.
pub struct StatusAnswer<'a> {
    pub calendar: &'a Calendar,
    pub overrides: &'a Overrides,
    pub query: Query<'a>,
    pub status: Status,
}

impl StatusAnswer<'_> {
    /// The overrides that opened the deploy, in the order of the overrides file.
    pub fn used(&self) -> Vec<&Override> {
        self.status.overrides_used.iter().map(|&i| &self.overrides.list[i]).collect()
    }
}

/// Decides whether a deploy matching `query` is frozen at `at`.
pub fn status<'a>(
    calendar: &'a Calendar,
    overrides: &'a Overrides,
    query: Query<'a>,
    at: DateTime<Utc>,
) -> Result<StatusAnswer<'a>> {
    let status = Decider::new(calendar, overrides, query).status(at)?;
    Ok(StatusAnswer { calendar, overrides, query, status })
}

/// `freeze list` (and `export`): the occurrences of the windows that apply, in `[from, to)`.
pub struct ListAnswer<'a> {
    pub calendar: &'a Calendar,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub occurrences: Vec<Occurrence>,
}

/// One occurrence with what it refers to, and the zone its local times are shown in: the event's
/// for an anchored window, else the window's own.
pub struct OccurrenceRow<'a> {
    pub occurrence: &'a Occurrence,
    pub window: &'a Window,
    pub event: Option<&'a Event>,
    pub tz: Zone,
}

impl ListAnswer<'_> {
    pub fn rows(&self) -> impl Iterator<Item = OccurrenceRow<'_>> {
        self.occurrences.iter().map(|o| {
            let window = &self.calendar.windows[o.window];
            let event = o.event.map(|e| &self.calendar.events[e]);
            let tz = event.map_or_else(|| window.display_tz(self.calendar), |e| e.tz);
            OccurrenceRow { occurrence: o, window, event, tz }
        })
    }
}

pub fn list<'a>(
    calendar: &'a Calendar,
    query: Query,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<ListAnswer<'a>> {
    let occurrences = calendar.occurrences(from, to, |w| calendar.windows[w].applies_to(query.env, query.service))?;
    Ok(ListAnswer { calendar, from, to, occurrences })
}

/// `freeze next-open`: the first instant open for at least `min_duration`, and until when.
pub struct NextOpenAnswer<'a> {
    pub query: Query<'a>,
    pub after: DateTime<Utc>,
    pub min_duration: IsoDuration,
    pub next: NextOpen,
    /// When the open stretch starting at `next` ends; `None` beyond the search horizon.
    pub open_until: Option<DateTime<Utc>>,
}

/// `min_duration` must have no months or years (they have no fixed length); its days count as
/// 24 hours each.
pub fn next_open<'a>(
    calendar: &Calendar,
    overrides: &Overrides,
    query: Query<'a>,
    after: DateTime<Utc>,
    min_duration: IsoDuration,
) -> Result<NextOpenAnswer<'a>> {
    let min = Duration::days(min_duration.days as i64) + min_duration.exact();
    let decider = Decider::new(calendar, overrides, query);
    let next = decider.next_open(after, min)?;
    let open_until = match next {
        NextOpen::At(t) => decider.blocked(t, t + decide::horizon())?.first().map(|b| b.0),
        NextOpen::NoneWithin(_) => None,
    };
    Ok(NextOpenAnswer { query, after, min_duration, next, open_until })
}

/// `freeze lint`: a calendar and overrides that loaded (so are valid), and what looks wrong.
pub struct LintAnswer {
    pub calendar: String,
    pub events: usize,
    pub windows: usize,
    pub overrides: usize,
    pub warnings: Vec<LintWarning>,
}

/// Serialized as one element of `warnings` in `freeze lint --format json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LintWarning {
    /// The id of the window, event or override.
    pub entry: String,
    pub line: usize,
    /// `file:line: …`, ready to print.
    pub message: String,
}

/// Warns about windows that never occur (from 2000 to the search horizon after `now`), have ended,
/// run overnight or give no reason; events no window uses; invalid or expired overrides.
pub fn lint(calendar: &Calendar, overrides: &Overrides, now: DateTime<Utc>) -> Result<LintAnswer> {
    let cal = calendar;
    let mut warnings = Vec::new();
    let mut warn = |entry: &str, line: usize, message: String| {
        warnings.push(LintWarning { entry: entry.to_string(), line, message })
    };
    let file = cal.path.to_string_lossy().to_string();
    let start = DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or(now);
    let end = now + decide::horizon();
    let occurrences = cal.occurrences(start, end, |_| true)?;
    let mut used_events = vec![false; cal.events.len()];
    for (wi, w) in cal.windows.iter().enumerate() {
        let at = format!("{file}:{}", w.line);
        match occurrences.iter().rfind(|o| o.window == wi) {
            None => warn(&w.id, w.line, format!("{at}: window `{}` never occurs (before {})", w.id, utc_string(end))),
            Some(last) if last.end <= now => warn(
                &w.id,
                w.line,
                format!(
                    "{at}: window `{}` has ended (last occurrence ended {}); remove it",
                    w.id,
                    utc_string(last.end)
                ),
            ),
            _ => {}
        }
        match &w.anchor {
            Anchor::Own { schedule: Schedule::Recurring { start_time, length: Length::EndTime(end_time), .. }, .. }
                if end_time < start_time =>
            {
                warn(
                    &w.id,
                    w.line,
                    format!(
                        "{at}: window `{}` ends ({end_time}) before it starts ({start_time}): each occurrence runs overnight into the next day",
                        w.id
                    ),
                )
            }
            Anchor::Events(a) => {
                for &e in a.once.iter().map(|(_, _, e)| e).chain(&a.recurring) {
                    used_events[e] = true;
                }
            }
            _ => {}
        }
        if w.reason.is_empty() {
            warn(&w.id, w.line, format!("{at}: window `{}` has no `reason`; findings will not say why", w.id));
        }
    }
    for (e, used) in cal.events.iter().zip(&used_events) {
        if !used {
            let message = format!(
                "{}:{}: event `{}` is used by no window, so it freezes nothing",
                e.file.display(),
                e.line,
                e.id
            );
            warn(&e.id, e.line, message);
        }
    }
    let ofile = overrides.path.as_ref().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
    for o in &overrides.list {
        if !o.is_valid() {
            let message = format!("{ofile}:{}: override `{}` is invalid: {}", o.line, o.id, o.problems.join("; "));
            warn(&o.id, o.line, message);
        } else if o.expires_at.is_some_and(|t| t <= now) {
            warn(&o.id, o.line, format!("{ofile}:{}: override `{}` has expired; remove it", o.line, o.id));
        }
    }
    Ok(LintAnswer {
        calendar: file,
        events: cal.events.len(),
        windows: cal.windows.len(),
        overrides: overrides.list.len(),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::{calendar, overrides, time::parse_instant};
    use std::path::Path;

    /// A UTC instant in RFC 3339, as `--at` takes it.
    fn t(text: &str) -> DateTime<Utc> {
        parse_instant(text, None).unwrap()
    }

    const CAL: &str = r#"
[[event]]
id = "count"
name = "Spring Bird Count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[event]]
id = "unused"
name = "Nobody's"
start = "2026-07-01T00:00"
end = "2026-07-02T00:00"

[[window]]
id = "count-freeze"
kind = "deny"
event = "count"
lead = "P1D"
environments = ["production"]
reason = "Count."

[[window]]
id = "night"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=DAILY"
start_time = "22:00"
end_time = "01:00"

[[window]]
id = "old"
kind = "deny"
start = "2020-06-01T06:00"
end = "2020-06-01T18:00"
reason = "Old."
"#;

    const OVR: &str = r#"
[[override]]
id = "expired"
windows = ["count-freeze"]
services = ["api"]
environments = ["production"]
requested_by = "alice"
approved_by = "bob"
reason = "fix"
ticket = "INC-1"
not_before = "2026-05-16T09:00:00Z"
expires_at = "2026-05-16T12:00:00Z"

[[override]]
id = "self-approved"
windows = ["count-freeze"]
services = ["api"]
environments = ["production"]
requested_by = "alice"
approved_by = "alice"
reason = "fix"
ticket = "INC-2"
not_before = "2026-05-16T09:00:00Z"
expires_at = "2026-05-16T12:00:00Z"
"#;

    fn load(ovr: &str) -> (Calendar, Overrides) {
        let cal = calendar::parse(Path::new("f.toml"), CAL).unwrap();
        let ovr = overrides::parse(Path::new("o.toml"), ovr, &cal, 4).unwrap();
        (cal, ovr)
    }

    #[test]
    fn lint_warns_per_entry_with_file_and_line() {
        let (cal, ovr) = load(OVR);
        let answer = lint(&cal, &ovr, t("2026-05-18T00:00:00Z")).unwrap();
        assert_eq!((answer.events, answer.windows, answer.overrides), (2, 3, 2));
        assert_eq!(answer.calendar, "f.toml");
        let got: Vec<_> = answer.warnings.iter().map(|w| (w.entry.as_str(), w.line)).collect();
        assert_eq!(
            got,
            [("night", 23), ("night", 23), ("old", 31), ("unused", 9), ("expired", 2), ("self-approved", 14)]
        );
        let messages: Vec<_> = answer.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(messages[0].starts_with("f.toml:23: window `night` ends (01:00:00) before it starts (22:00:00)"));
        assert_eq!(messages[1], "f.toml:23: window `night` has no `reason`; findings will not say why");
        assert_eq!(
            messages[2],
            "f.toml:31: window `old` has ended (last occurrence ended 2020-06-01T18:00:00Z); remove it"
        );
        assert_eq!(messages[3], "f.toml:9: event `unused` is used by no window, so it freezes nothing");
        assert_eq!(messages[4], "o.toml:2: override `expired` has expired; remove it");
        assert!(messages[5].starts_with("o.toml:14: override `self-approved` is invalid: "), "{}", messages[5]);
        // Before the override expires it is no warning; once the count is over, its window has ended.
        let before = lint(&cal, &ovr, t("2026-05-16T10:00:00Z")).unwrap();
        assert!(before.warnings.iter().all(|w| w.entry != "expired"));
        let after = lint(&cal, &ovr, t("2026-06-01T00:00:00Z")).unwrap();
        assert_eq!(
            after.warnings[0].message,
            "f.toml:15: window `count-freeze` has ended (last occurrence ended 2026-05-18T23:00:00Z); remove it"
        );
    }

    #[test]
    fn list_rows_show_anchored_windows_in_their_events_zone() {
        let (cal, _) = load("");
        let q = Query { env: Some("production"), service: None };
        let answer = list(&cal, q, t("2026-05-16T00:00:00Z"), t("2026-05-17T00:00:00Z")).unwrap();
        let rows: Vec<_> =
            answer.rows().map(|r| (r.window.id.as_str(), r.event.map(|e| e.id.as_str()), r.tz)).collect();
        assert_eq!(
            rows,
            // In start order: the count freeze from 2026-05-16 00:00 BST, the night from 22:00 EDT.
            [
                ("count-freeze", Some("count"), Zone::named("Europe/London").unwrap()),
                ("night", None, Zone::named("America/New_York").unwrap())
            ]
        );
        // Staging is outside the count freeze's scope.
        let staging = Query { env: Some("staging"), service: None };
        let answer = list(&cal, staging, t("2026-05-16T00:00:00Z"), t("2026-05-17T00:00:00Z")).unwrap();
        assert!(answer.rows().all(|r| r.window.id == "night"));
    }

    #[test]
    fn next_open_reports_how_long_the_deploy_stays_open() {
        let (cal, ovr) = load("");
        let q = Query { env: Some("production"), service: Some("api") };
        // Inside the count freeze (ends 2026-05-18T23:00Z, 19:00 in New York), then open until 22:00 New York.
        let answer = next_open(&cal, &ovr, q, t("2026-05-17T12:00:00Z"), IsoDuration::parse("PT2H").unwrap()).unwrap();
        assert_eq!(answer.next, NextOpen::At(t("2026-05-18T23:00:00Z")));
        assert_eq!(answer.open_until, Some(t("2026-05-19T02:00:00Z")));
        // Nothing open for four hours at a stretch: the nightly window leaves at most 21 h.
        let answer = next_open(&cal, &ovr, q, t("2026-05-17T12:00:00Z"), IsoDuration::parse("P1D").unwrap()).unwrap();
        assert!(matches!(answer.next, NextOpen::NoneWithin(_)));
        assert_eq!(answer.open_until, None);
    }

    #[test]
    fn status_answer_names_the_overrides_it_used() {
        let ovr_text = OVR.replace("2026-05-16T12:00:00Z", "2026-05-16T13:00:00Z");
        let (cal, ovr) = load(&ovr_text);
        let q = Query { env: Some("production"), service: Some("api") };
        let answer = status(&cal, &ovr, q, t("2026-05-17T10:00:00Z")).unwrap();
        assert!(answer.status.frozen && answer.used().is_empty());
        let answer = status(&cal, &ovr, q, t("2026-05-16T10:00:00Z")).unwrap();
        assert!(!answer.status.frozen);
        assert_eq!(answer.used().iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["expired"]);
    }
}

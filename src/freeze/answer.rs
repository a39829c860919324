//! The answers of `sluice freeze status | list | next-open | lint`, as plain values.
//!
//! Each function computes what its command reports and nothing more: no flags, no output formats
//! (those are `cli::freeze` and `report::freeze`), no printing. The values borrow the calendar and
//! overrides they were computed from, so a renderer can name windows, events and overrides.

use super::calendar::{Anchor, Calendar, Event, Length, Schedule, Window};
use super::decide::{self, Decider, Entry, NextOpen, Query, State, Status};
use super::duration::IsoDuration;
use super::expand::Occurrence;
use super::overrides::{Override, Overrides};
use super::time::utc_string;
use super::within::Within;
use crate::error::Result;
use crate::freeze::zone::Zone;
use chrono::{DateTime, Duration, Utc};

/// `freeze status`: the decision for one deploy at one instant.
pub struct StatusAnswer<'a> {
    pub calendar: &'a Calendar,
    pub overrides: &'a Overrides,
    pub query: Query<'a>,
    pub status: Status,
    /// When open: until when, and the windows that freeze it then (computed without overrides;
    /// when an override opened the deploy, until the override expires). `None` when no freeze
    /// applies within the search horizon.
    pub open_until: Option<(DateTime<Utc>, Vec<Entry>)>,
    /// Said about the question itself (a local `--at` in a DST gap, read as adjusted).
    pub notes: Vec<String>,
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
    let decider = Decider::new(calendar, overrides, query);
    let status = decider.status(at)?;
    let open_until = if status.frozen { None } else { next_freeze(&decider, &status, overrides, at)? };
    Ok(StatusAnswer { calendar, overrides, query, status, open_until, notes: Vec::new() })
}

/// The windows that block a deploy at `t` (active deny windows, allow windows it is outside of),
/// without overrides.
fn blocking_at(decider: &Decider, t: DateTime<Utc>) -> Result<Vec<Entry>> {
    let status = decider.without_overrides().status(t)?;
    Ok(status.entries.into_iter().filter(|e| matches!(e.state, State::Active | State::Outside)).collect())
}

/// When an open deploy stops being open, and what freezes it then.
fn next_freeze(
    decider: &Decider,
    status: &Status,
    overrides: &Overrides,
    at: DateTime<Utc>,
) -> Result<Option<(DateTime<Utc>, Vec<Entry>)>> {
    if !status.overrides_used.is_empty() {
        // Open only by an override: until the first of them expires, and then the windows it lifts.
        let until = status.overrides_used.iter().filter_map(|&i| overrides.list[i].expires_at).min();
        let lifted = status.entries.iter().filter(|e| matches!(e.state, State::Lifted(_))).cloned();
        let lifted = lifted.map(|e| Entry { state: State::Active, ..e }).collect();
        return Ok(until.map(|u| (u, lifted)));
    }
    let Some(start) = decider.without_overrides().next_blocked(at)? else {
        return Ok(None);
    };
    Ok(Some((start, blocking_at(decider, start)?)))
}

/// `freeze list` (and `export`): the occurrences of the windows that apply, in `[from, to)`.
pub struct ListAnswer<'a> {
    pub calendar: &'a Calendar,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub occurrences: Vec<Occurrence>,
    /// The environment or the service was left open: windows of several scopes are listed.
    pub unscoped: bool,
    pub notes: Vec<String>,
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
    let unscoped = query.env.is_none() || query.service.is_none();
    Ok(ListAnswer { calendar, from, to, occurrences, unscoped, notes: Vec::new() })
}

/// One open stretch after the first, for `next-open --count`.
pub struct OpenWindow {
    pub start: DateTime<Utc>,
    /// `None`: beyond the search horizon.
    pub until: Option<DateTime<Utc>>,
    /// The windows that close it (empty when the `--within` hours end it).
    pub closed_by: Vec<Entry>,
}

/// When deploys are frozen in `[from, to)`, for `freeze calendar`'s hours: for one deploy
/// (both the environment and the service given) exactly what `status` decides, allow windows
/// included (without overrides); otherwise the time any deny window that applies covers (allow
/// windows decide per scope, and are drawn as the slots they are).
pub fn frozen_hours(
    calendar: &Calendar,
    query: Query,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>> {
    if query.env.is_some() && query.service.is_some() {
        return Decider::new(calendar, &Overrides::default(), query).without_overrides().blocked(from, to);
    }
    let deny = calendar.occurrences(from, to, |w| {
        let window = &calendar.windows[w];
        window.kind == super::calendar::Kind::Deny && window.applies_to(query.env, query.service)
    })?;
    Ok(decide::merge(deny.iter().map(|o| (o.start.max(from), o.end.min(to))).collect()))
}

/// `freeze next-open`: the first instant open for at least `min_duration`, and until when.
pub struct NextOpenAnswer<'a> {
    pub calendar: &'a Calendar,
    pub query: Query<'a>,
    pub after: DateTime<Utc>,
    pub min_duration: IsoDuration,
    pub next: NextOpen,
    /// When the open stretch starting at `next` ends; `None` beyond the search horizon.
    pub open_until: Option<DateTime<Utc>>,
    /// How many valid overrides exist and were not used: next-open never uses overrides.
    pub overrides_ignored: usize,
    /// The windows that block until `next` (empty when `after` is already open).
    pub blocked_by: Vec<Entry>,
    /// The windows that close the open stretch at `open_until`.
    pub closed_by: Vec<Entry>,
    /// The hours deploys were asked for (`--within`).
    pub within: Option<&'a Within>,
    /// The open stretches after the first (`--count N` asks for N in all).
    pub later: Vec<OpenWindow>,
    pub notes: Vec<String>,
}

/// What `freeze next-open` asks: from when, how long at least, how many open stretches, and
/// within which hours.
#[derive(Clone)]
pub struct OpenQuestion<'a> {
    pub after: DateTime<Utc>,
    /// No months or years (they have no fixed length); its days count as 24 hours each.
    pub min_duration: IsoDuration,
    /// How many open stretches (at least 1).
    pub count: usize,
    pub within: Option<&'a Within>,
}

impl OpenQuestion<'_> {
    /// The first stretch at or after `after` open for `min_duration`, at any hour.
    pub fn new(after: DateTime<Utc>, min_duration: IsoDuration) -> OpenQuestion<'static> {
        OpenQuestion { after, min_duration, count: 1, within: None }
    }
}

pub fn next_open<'a>(
    calendar: &'a Calendar,
    overrides: &Overrides,
    query: Query<'a>,
    question: OpenQuestion<'a>,
) -> Result<NextOpenAnswer<'a>> {
    let OpenQuestion { after, min_duration, count, within } = question;
    let min = Duration::days(min_duration.days as i64) + min_duration.exact();
    // Overrides are ignored here (and the answer says so): a decision that uses one must be
    // audited, and a look ahead is no decision to deploy.
    let overrides_ignored = overrides.list.iter().filter(|o| o.is_valid()).count();
    let decider = Decider::new(calendar, overrides, query).without_overrides().within(within);
    let next = decider.next_open(after, min)?;
    let open_until = match next {
        NextOpen::At(t) => decider.next_blocked(t)?,
        NextOpen::NoneWithin(_) => None,
    };
    let blocked_by = match next {
        NextOpen::At(t) if t > after => blocking_at(&decider, t - Duration::nanoseconds(1))?,
        NextOpen::At(_) => Vec::new(),
        NextOpen::NoneWithin(_) => blocking_at(&decider, after)?,
    };
    let closed_by = match open_until {
        Some(u) => blocking_at(&decider, u)?,
        None => Vec::new(),
    };
    let mut later = Vec::new();
    let mut from = open_until;
    while later.len() + 1 < count {
        let Some(NextOpen::At(start)) = from.map(|t| decider.next_open(t, min)).transpose()? else { break };
        let until = decider.next_blocked(start)?;
        let closed_by = match until {
            Some(u) => blocking_at(&decider, u)?,
            None => Vec::new(),
        };
        later.push(OpenWindow { start, until, closed_by });
        from = until;
    }
    Ok(NextOpenAnswer {
        calendar,
        query,
        after,
        min_duration,
        next,
        open_until,
        overrides_ignored,
        blocked_by,
        closed_by,
        within,
        later,
        notes: Vec::new(),
    })
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

/// How far `freeze lint` looks for a window's first occurrence.
const LINT_UNTIL_YEAR: i32 = 2200;

/// Whether window `w` occurs from `after` to [`LINT_UNTIL_YEAR`].
fn occurs_after(calendar: &Calendar, w: usize, after: DateTime<Utc>) -> Result<bool> {
    let until =
        chrono::NaiveDate::from_ymd_opt(LINT_UNTIL_YEAR, 1, 1).map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc());
    let until = until.unwrap_or(after);
    let mut from = after;
    while from < until {
        let to = (from + Duration::days(3653)).min(until);
        if !calendar.occurrences(from, to, |i| i == w)?.is_empty() {
            return Ok(true);
        }
        from = to;
    }
    Ok(false)
}

/// Warns about windows that never occur (from 2000 to 2200), have ended,
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
            // A window planned for a later year (2040) is no mistake: look on, ten years at a time.
            None if occurs_after(cal, wi, end)? => {}
            None => warn(
                &w.id,
                w.line,
                format!("{at}: window `{}` never occurs (none from 2000 to {LINT_UNTIL_YEAR})", w.id),
            ),
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
    let counts_from_default = |s: &Schedule| matches!(s, Schedule::Recurring { rule, .. } if rule.counts_from_default);
    let count_warning = |what: &str, id: &str, file: &str, line: usize| {
        format!(
            "{file}:{line}: {what} `{id}` has an RRULE with COUNT but no `from`: it counts from {} (the default first date), so its occurrences depend on that date; set `from`",
            super::recur::DEFAULT_FROM
        )
    };
    for w in &cal.windows {
        if let Anchor::Own { schedule, .. } = &w.anchor {
            if counts_from_default(schedule) {
                warn(&w.id, w.line, count_warning("window", &w.id, &file, w.line));
            }
        }
    }
    for e in &cal.events {
        if counts_from_default(&e.schedule) {
            warn(&e.id, e.line, count_warning("event", &e.id, &e.file.display().to_string(), e.line));
        }
    }
    for note in &cal.import_notes {
        let message = format!("{}:{}: {}", note.file.display(), note.line, note.message);
        warn(&note.file.display().to_string(), note.line, message);
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
    fn a_window_planned_for_a_later_year_occurs_and_one_that_cannot_never_does() {
        let text = "[[window]]\nid = \"olympics\"\nkind = \"deny\"\nstart = \"2040-07-20T00:00\"\nend = \"2040-08-06T00:00\"\nreason = \"Games.\"\n\n\
[[window]]\nid = \"leap\"\nkind = \"deny\"\nrrule = \"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30\"\nstart_time = \"00:00\"\nduration = \"P1D\"\nreason = \"Never.\"\n";
        let cal = calendar::parse(Path::new("f.toml"), text).unwrap();
        let answer = lint(&cal, &Overrides::default(), t("2026-05-18T00:00:00Z")).unwrap();
        let messages: Vec<_> = answer.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(messages, ["f.toml:8: window `leap` never occurs (none from 2000 to 2200)"]);
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
        let answer =
            next_open(&cal, &ovr, q, OpenQuestion::new(t("2026-05-17T12:00:00Z"), IsoDuration::parse("PT2H").unwrap()))
                .unwrap();
        assert_eq!(answer.next, NextOpen::At(t("2026-05-18T23:00:00Z")));
        assert_eq!(answer.open_until, Some(t("2026-05-19T02:00:00Z")));
        // Nothing open for four hours at a stretch: the nightly window leaves at most 21 h.
        let answer =
            next_open(&cal, &ovr, q, OpenQuestion::new(t("2026-05-17T12:00:00Z"), IsoDuration::parse("P1D").unwrap()))
                .unwrap();
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

//! Decisions: is a deploy of service S to environment E frozen at T, and when is the next open
//! window?
//!
//! Rules: intervals are half-open `[start, end)`; deny beats allow; when any allow window applies
//! to the service and environment, deploys there are permitted only inside an active allow
//! window; a valid override in force lifts only the windows it names, for its services and
//! environments. `next_open` looks ahead [`HORIZON_DAYS`] and answers "none within" beyond that:
//! the gate fails closed rather than guessing.

use super::calendar::{Calendar, Kind, Scope};
use super::expand::Occurrence;
use super::overrides::Overrides;
use super::within::Within;
use crate::error::Result;
use chrono::{DateTime, Duration, Utc};

/// How far ahead `next_open` searches (two years).
pub const HORIZON_DAYS: i64 = 730;

/// The widening look-ahead of [`Decider::next_open`], ending at the horizon.
const LOOK_AHEAD_DAYS: [i64; 4] = [2, 16, 120, HORIZON_DAYS];

pub fn horizon() -> Duration {
    Duration::days(HORIZON_DAYS)
}

/// The deploy being asked about. `None` means "any": every window counts whatever its scope
/// (the most restrictive answer), and no override applies.
#[derive(Clone, Copy, Debug, Default)]
pub struct Query<'a> {
    pub env: Option<&'a str>,
    pub service: Option<&'a str>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// An active deny window.
    Active,
    /// An active deny window lifted by an override (index into the overrides).
    Lifted(usize),
    /// An allow window that applies but is not active: deploys wait for it (its next occurrence).
    Outside,
}

#[derive(Clone, Debug)]
pub struct Entry {
    pub window: usize,
    pub occurrence: Option<Occurrence>,
    pub state: State,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextOpen {
    At(DateTime<Utc>),
    /// No open instant (of the asked length) before this time.
    NoneWithin(DateTime<Utc>),
}

#[derive(Clone, Debug)]
pub struct Status {
    pub at: DateTime<Utc>,
    pub frozen: bool,
    pub entries: Vec<Entry>,
    pub next_open: NextOpen,
    /// Overrides that opened this deploy (indices).
    pub overrides_used: Vec<usize>,
    /// Invalid, expired or not-yet-valid overrides that concern this deploy, with why.
    pub override_problems: Vec<(usize, String)>,
}

pub struct Decider<'a> {
    pub calendar: &'a Calendar,
    pub overrides: &'a Overrides,
    pub query: Query<'a>,
    /// Hours a deploy may start in (`next-open --within`): outside them counts as blocked.
    pub within: Option<&'a Within>,
}

impl<'a> Decider<'a> {
    pub fn new(calendar: &'a Calendar, overrides: &'a Overrides, query: Query<'a>) -> Self {
        Decider { calendar, overrides, query, within: None }
    }

    /// The same question, with deploys only inside `within`.
    pub fn within(self, within: Option<&'a Within>) -> Decider<'a> {
        Decider { within, ..self }
    }

    /// The same question with no override in force: for answers about the future (when the
    /// freeze ends, the next open window), which no audit line covers.
    pub fn without_overrides(&self) -> Decider<'a> {
        static NONE: Overrides = Overrides { path: None, list: Vec::new(), commit: None };
        Decider { calendar: self.calendar, overrides: &NONE, query: self.query, within: self.within }
    }

    fn applies(&self, window: usize) -> bool {
        self.calendar.windows[window].applies_to(self.query.env, self.query.service)
    }

    /// The allow windows that decide, grouped by the deploys they decide for: for each allow
    /// window that applies, it and every other that surely applies to every deploy it does.
    ///
    /// A deploy under allow windows may go out only inside one that applies to it. For a
    /// concrete service and environment that is one group, every allow window that applies. A
    /// query that leaves the service or the environment open asks about every deploy it covers,
    /// and the most restrictive answer is frozen when any of them is: a deploy in the scope of
    /// window `a` may go out inside `a`, or inside a window whose scope surely includes `a`'s —
    /// not inside an allow window for other services. Whether one glob's matches include
    /// another's is decided conservatively (the same pattern, `*`, or a plain name the other
    /// matches), so a doubt makes the answer stricter, never looser.
    fn allow_groups(&self) -> Vec<Vec<usize>> {
        let allows: Vec<usize> = (0..self.calendar.windows.len())
            .filter(|&w| self.calendar.windows[w].kind == Kind::Allow && self.applies(w))
            .collect();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &a in &allows {
            let group: Vec<usize> = allows.iter().copied().filter(|&b| self.includes(b, a)).collect();
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        groups
    }

    /// Whether window `b` applies to every deploy this query covers that window `a` applies to.
    fn includes(&self, b: usize, a: usize) -> bool {
        let (a, b) = (&self.calendar.windows[a], &self.calendar.windows[b]);
        let env = self.query.env.is_some() || scope_includes(&b.environments, &a.environments);
        let service = self.query.service.is_some() || scope_includes(&b.services, &a.services);
        env && service
    }

    /// Valid overrides that lift `window` for this query, as intervals.
    fn lifts(&self, window: usize) -> impl Iterator<Item = (usize, DateTime<Utc>, DateTime<Utc>)> + '_ {
        let id = &self.calendar.windows[window].id;
        self.overrides.list.iter().enumerate().filter_map(move |(i, o)| {
            if !o.concerns(id, self.query.env, self.query.service) {
                return None;
            }
            o.interval().map(|(a, b)| (i, a, b))
        })
    }

    pub fn status(&self, at: DateTime<Utc>) -> Result<Status> {
        let tick = Duration::nanoseconds(1);
        let active = self.calendar.occurrences(at, at + tick, |w| self.applies(w))?;
        let mut entries = Vec::new();
        let mut used = Vec::new();
        let mut frozen = false;
        for o in &active {
            let lifted = self.lifts(o.window).find(|(_, a, b)| *a <= at && at < *b).map(|(i, _, _)| i);
            match (self.calendar.windows[o.window].kind, lifted) {
                (Kind::Deny, None) => {
                    frozen = true;
                    entries.push(Entry { window: o.window, occurrence: Some(o.clone()), state: State::Active });
                }
                (Kind::Deny, Some(i)) => {
                    used.push(i);
                    entries.push(Entry { window: o.window, occurrence: Some(o.clone()), state: State::Lifted(i) });
                }
                (Kind::Allow, _) => {}
            }
        }
        // Each group of allow windows must be open: inside one of its occurrences, or opened
        // by an override naming one of its windows.
        let mut outside: Vec<usize> = Vec::new();
        for group in self.allow_groups() {
            if active.iter().any(|o| group.contains(&o.window)) {
                continue;
            }
            let opened =
                group.iter().find_map(|&w| self.lifts(w).find(|(_, a, b)| *a <= at && at < *b).map(|(i, _, _)| (w, i)));
            match opened {
                Some((w, i)) => {
                    used.push(i);
                    if !entries.iter().any(|e: &Entry| e.window == w) {
                        entries.push(Entry { window: w, occurrence: None, state: State::Lifted(i) });
                    }
                }
                None => outside.extend(group.iter().filter(|w| !outside.contains(w)).collect::<Vec<_>>()),
            }
        }
        if !outside.is_empty() {
            frozen = true;
            let upcoming = self.calendar.occurrences(at, at + horizon(), |w| outside.contains(&w))?;
            for &w in &outside {
                let next = upcoming.iter().find(|o| o.window == w).cloned();
                entries.push(Entry { window: w, occurrence: next, state: State::Outside });
            }
        }
        used.sort_unstable();
        used.dedup();
        // Overrides decide only the instant asked about (and that decision is audited); when the
        // freeze ends is always computed without them.
        let next_open =
            if frozen { self.without_overrides().next_open(at, Duration::zero())? } else { NextOpen::At(at) };
        Ok(Status {
            at,
            frozen,
            entries,
            next_open,
            overrides_used: used,
            override_problems: self.override_problems(at, &active),
        })
    }

    fn override_problems(&self, at: DateTime<Utc>, active: &[Occurrence]) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (i, o) in self.overrides.list.iter().enumerate() {
            let concerns_any = o.windows.iter().any(|w| o.concerns(w, self.query.env, self.query.service))
                || (self.query.env.is_none() || self.query.service.is_none());
            if !o.is_valid() && concerns_any {
                out.push((i, format!("override `{}` is invalid and lifts nothing: {}", o.id, o.problems.join("; "))));
                continue;
            }
            let names_active = active
                .iter()
                .any(|a| o.concerns(&self.calendar.windows[a.window].id, self.query.env, self.query.service));
            if o.is_valid() && names_active && !o.in_force(at) {
                let (nb, ex) = (o.not_before.map(super::time::utc_string), o.expires_at.map(super::time::utc_string));
                let when = if o.expires_at.is_some_and(|e| e <= at) { "has expired" } else { "is not yet in force" };
                out.push((
                    i,
                    format!(
                        "override `{}` {when} (valid {} to {}) and lifts nothing now",
                        o.id,
                        nb.unwrap_or_default(),
                        ex.unwrap_or_default()
                    ),
                ));
            }
        }
        out
    }

    /// Intervals in `[from, to)` during which deploys are blocked, merged and sorted.
    pub fn blocked(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>> {
        let occurrences = self.calendar.occurrences(from, to, |w| self.applies(w))?;
        let mut blocked = Vec::new();
        let mut allowed = Vec::new();
        for o in &occurrences {
            let lifts: Vec<_> = self.lifts(o.window).map(|(_, a, b)| (a, b)).collect();
            match self.calendar.windows[o.window].kind {
                Kind::Deny => blocked.extend(subtract((o.start.max(from), o.end.min(to)), &lifts)),
                Kind::Allow => allowed.push((o.window, o.start, o.end)),
            }
        }
        for group in self.allow_groups() {
            let mut open: Vec<_> =
                allowed.iter().filter(|(w, _, _)| group.contains(w)).map(|&(_, a, b)| (a, b)).collect();
            for &w in &group {
                open.extend(self.lifts(w).map(|(_, a, b)| (a, b)));
            }
            blocked.extend(subtract((from, to), &open));
        }
        if let Some(within) = self.within {
            blocked.extend(subtract((from, to), &within.intervals(from, to)));
        }
        Ok(merge(blocked))
    }

    /// The first instant at or after `after` from which deploys are open for at least `min`.
    ///
    /// The search looks a few days ahead first and widens up to the horizon only when it must: an
    /// opening that fits inside a shorter look-ahead is the same opening the full one finds, and
    /// most answers lie within days, so only the occurrences that can touch them are expanded.
    pub fn next_open(&self, after: DateTime<Utc>, min: Duration) -> Result<NextOpen> {
        for days in LOOK_AHEAD_DAYS {
            let end = after + Duration::days(days);
            if let Some(t) = self.open_within(after, end, min)? {
                return Ok(NextOpen::At(t));
            }
        }
        Ok(NextOpen::NoneWithin(after + horizon()))
    }

    /// The first instant in `[after, end)` from which `[t, t + min)` is open and inside `[after, end)`.
    fn open_within(&self, after: DateTime<Utc>, end: DateTime<Utc>, min: Duration) -> Result<Option<DateTime<Utc>>> {
        let mut cursor = after;
        for (start, stop) in self.blocked(after, end)? {
            let gap = start - cursor;
            if gap > Duration::zero() && gap >= min {
                return Ok(Some(cursor));
            }
            cursor = cursor.max(stop);
        }
        Ok((end - cursor > Duration::zero() && end - cursor >= min).then_some(cursor))
    }

    /// The start of the first blocked stretch at or after `after`, within the horizon.
    pub fn next_blocked(&self, after: DateTime<Utc>) -> Result<Option<DateTime<Utc>>> {
        for days in LOOK_AHEAD_DAYS {
            if let Some(&(start, _)) = self.blocked(after, after + Duration::days(days))?.first() {
                return Ok(Some(start));
            }
        }
        Ok(None)
    }
}

/// Whether every value `narrow` matches, `wide` surely matches too (see
/// [`Decider::allow_groups`]): `wide` matches everything, or each of `narrow`'s patterns is one
/// of `wide`'s or a plain name `wide` matches.
fn scope_includes(wide: &Scope, narrow: &Scope) -> bool {
    let plain = |p: &str| !p.contains(['*', '?', '[', ']', '{', '}', '\\']);
    match (&wide.patterns, &narrow.patterns) {
        (None, _) => true,
        (Some(w), _) if w.iter().any(|p| p == "*") => true,
        (Some(_), None) => false,
        (Some(w), Some(n)) => n.iter().all(|p| w.contains(p) || (plain(p) && wide.matches(Some(p)))),
    }
}

/// Sorts and merges overlapping or touching intervals.
pub fn merge(mut intervals: Vec<(DateTime<Utc>, DateTime<Utc>)>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    intervals.retain(|(a, b)| a < b);
    intervals.sort();
    let mut out: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::with_capacity(intervals.len());
    for (a, b) in intervals {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `span` minus the union of `holes`.
fn subtract(
    span: (DateTime<Utc>, DateTime<Utc>),
    holes: &[(DateTime<Utc>, DateTime<Utc>)],
) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let mut out = Vec::new();
    let mut cursor = span.0;
    for &(a, b) in &merge(holes.to_vec()) {
        if b <= cursor || a >= span.1 {
            continue;
        }
        if a > cursor {
            out.push((cursor, a));
        }
        cursor = cursor.max(b);
    }
    if cursor < span.1 {
        out.push((cursor, span.1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::{calendar, overrides};
    use std::path::Path;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    const CAL: &str = r#"
[[event]]
id = "spring-bird-count-2026"
name = "Spring Bird Count"
timezone = "Europe/London"
start = "2026-05-17T00:00"
end = "2026-05-19T00:00"

[[window]]
id = "bird-count-freeze"
kind = "deny"
event = "spring-bird-count-2026"
lead = "P7D"
environments = ["production"]
reason = "No production changes from seven days before the count until it ends."

[[window]]
id = "commuter-peak"
kind = "deny"
timezone = "America/New_York"
rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"
start_time = "07:00"
end_time = "09:30"
services = ["planner-*"]
environments = ["production"]

[[window]]
id = "survey-day-freeze"
kind = "deny"
start = "2026-06-01T06:00"
end = "2026-06-01T18:00"
"#;

    fn status(cal: &str, ovr: Option<&str>, env: &str, service: &str, at: &str) -> Status {
        let cal = calendar::parse(Path::new("freeze.toml"), cal).unwrap();
        let ovr = ovr.map(|o| overrides::parse(Path::new("o.toml"), o, &cal, 4).unwrap()).unwrap_or_default();
        Decider::new(&cal, &ovr, Query { env: Some(env), service: Some(service) }).status(t(at)).unwrap()
    }

    fn frozen_by(s: &Status, cal: &str) -> Vec<String> {
        let cal = calendar::parse(Path::new("freeze.toml"), cal).unwrap();
        s.entries.iter().filter(|e| e.state != State::Lifted(0)).map(|e| cal.windows[e.window].id.clone()).collect()
    }

    #[test]
    fn frozen_exactly_at_start_and_open_exactly_at_end() {
        // survey-day-freeze: [2026-06-01T06:00Z, 2026-06-01T18:00Z)
        assert!(!status(CAL, None, "staging", "x", "2026-06-01T05:59:59Z").frozen);
        let s = status(CAL, None, "staging", "x", "2026-06-01T06:00:00Z");
        assert!(s.frozen);
        assert_eq!(s.next_open, NextOpen::At(t("2026-06-01T18:00:00Z")));
        assert!(status(CAL, None, "staging", "x", "2026-06-01T17:59:59Z").frozen);
        assert!(!status(CAL, None, "staging", "x", "2026-06-01T18:00:00Z").frozen);
    }

    #[test]
    fn event_freeze_with_seven_day_lead() {
        // Count starts 2026-05-17 00:00 BST = 2026-05-16T23:00Z; freeze from 2026-05-09T23:00Z.
        assert!(!status(CAL, None, "production", "survey-api", "2026-05-09T22:59:59Z").frozen);
        let s = status(CAL, None, "production", "survey-api", "2026-05-09T23:00:00Z");
        assert!(s.frozen);
        assert_eq!(frozen_by(&s, CAL), ["bird-count-freeze"]);
        assert_eq!(s.next_open, NextOpen::At(t("2026-05-18T23:00:00Z")));
        assert!(!status(CAL, None, "production", "survey-api", "2026-05-18T23:00:00Z").frozen);
    }

    #[test]
    fn scoping_by_service_and_environment() {
        // Monday 2026-03-02 07:30 New York = 12:30Z.
        assert!(status(CAL, None, "production", "planner-web", "2026-03-02T12:30:00Z").frozen);
        assert!(!status(CAL, None, "production", "survey-api", "2026-03-02T12:30:00Z").frozen);
        assert!(!status(CAL, None, "staging", "planner-web", "2026-03-02T12:30:00Z").frozen);
        // Bird-count freeze is production-only but every service.
        assert!(!status(CAL, None, "staging", "survey-api", "2026-05-12T12:00:00Z").frozen);
        assert!(status(CAL, None, "production", "anything", "2026-05-12T12:00:00Z").frozen);
        // Saturday: no commuter peak.
        assert!(!status(CAL, None, "production", "planner-web", "2026-03-07T12:30:00Z").frozen);
    }

    #[test]
    fn commuter_peak_tracks_new_york_dst() {
        // After DST starts (2026-03-09, Monday), 07:00 EDT = 11:00Z.
        assert!(status(CAL, None, "production", "planner-web", "2026-03-09T11:00:00Z").frozen);
        assert!(!status(CAL, None, "production", "planner-web", "2026-03-09T13:30:00Z").frozen);
        // Before it (Friday 2026-03-06), 11:00Z is 06:00 EST: open.
        assert!(!status(CAL, None, "production", "planner-web", "2026-03-06T11:00:00Z").frozen);
        // After it ends (Monday 2026-11-02), 07:00 EST = 12:00Z.
        assert!(!status(CAL, None, "production", "planner-web", "2026-11-02T11:30:00Z").frozen);
        assert!(status(CAL, None, "production", "planner-web", "2026-11-02T12:00:00Z").frozen);
    }

    const ALLOW: &str = r#"
[[window]]
id = "tuesday-deploys"
kind = "allow"
timezone = "Europe/London"
rrule = "FREQ=WEEKLY;BYDAY=TU"
start_time = "10:00"
end_time = "16:00"
services = ["survey-*"]

[[window]]
id = "hotfix-ban"
kind = "deny"
start = "2026-03-10T12:00"
end = "2026-03-10T13:00"
"#;

    #[test]
    fn allow_windows_permit_only_inside_and_deny_beats_allow() {
        // Tuesday 2026-03-03 10:00 GMT = 10:00Z.
        assert!(!status(ALLOW, None, "production", "survey-api", "2026-03-03T10:00:00Z").frozen);
        let s = status(ALLOW, None, "production", "survey-api", "2026-03-03T16:00:00Z");
        assert!(s.frozen);
        assert_eq!(s.entries[0].state, State::Outside);
        assert_eq!(s.entries[0].occurrence.as_ref().unwrap().start, t("2026-03-10T10:00:00Z"));
        assert_eq!(s.next_open, NextOpen::At(t("2026-03-10T10:00:00Z")));
        // A service no allow window names is free.
        assert!(!status(ALLOW, None, "production", "planner-web", "2026-03-03T16:00:00Z").frozen);
        // Deny inside allow: frozen, and next open is when the deny ends.
        let s = status(ALLOW, None, "production", "survey-api", "2026-03-10T12:30:00Z");
        assert!(s.frozen);
        assert_eq!(s.next_open, NextOpen::At(t("2026-03-10T13:00:00Z")));
    }

    const TWO_SLOTS: &str = r#"
[[window]]
id = "warehouse-slots"
kind = "allow"
timezone = "Europe/London"
rrule = "FREQ=WEEKLY;BYDAY=TU"
start_time = "13:00"
end_time = "16:00"
services = ["warehouse-*"]

[[window]]
id = "billing-slots"
kind = "allow"
timezone = "Europe/London"
rrule = "FREQ=WEEKLY;BYDAY=TU,WE"
start_time = "15:00"
end_time = "17:00"
services = ["billing"]
"#;

    fn unscoped(cal: &str, at: &str) -> Status {
        let cal = calendar::parse(Path::new("freeze.toml"), cal).unwrap();
        Decider::new(&cal, &Overrides::default(), Query::default()).status(t(at)).unwrap()
    }

    #[test]
    fn an_unscoped_status_is_frozen_while_any_scope_is() {
        // Tuesday 2026-03-03 14:00 GMT: inside the warehouse slot, outside the billing one.
        assert!(!status(TWO_SLOTS, None, "production", "warehouse-etl", "2026-03-03T14:00:00Z").frozen);
        assert!(status(TWO_SLOTS, None, "production", "billing", "2026-03-03T14:00:00Z").frozen);
        let s = unscoped(TWO_SLOTS, "2026-03-03T14:00:00Z");
        assert!(s.frozen, "billing is frozen, so the most restrictive answer is frozen");
        assert_eq!(frozen_by(&s, TWO_SLOTS), ["billing-slots"]);
        // When both slots are open, so is every deploy; the next such instant is 15:00.
        assert_eq!(s.next_open, NextOpen::At(t("2026-03-03T15:00:00Z")));
        assert!(!unscoped(TWO_SLOTS, "2026-03-03T15:30:00Z").frozen);
        // Outside both, frozen by both.
        assert_eq!(
            frozen_by(&unscoped(TWO_SLOTS, "2026-03-04T09:00:00Z"), TWO_SLOTS),
            ["warehouse-slots", "billing-slots"]
        );
        // A window for every service includes the billing one's deploys: inside it all are open,
        // inside billing's alone the other services are not.
        let wide = TWO_SLOTS.replace("services = [\"warehouse-*\"]\n", "");
        assert!(!unscoped(&wide, "2026-03-03T14:00:00Z").frozen);
        assert!(unscoped(&wide, "2026-03-04T15:30:00Z").frozen);
        assert!(!status(&wide, None, "production", "billing", "2026-03-04T15:30:00Z").frozen);
    }

    #[test]
    fn next_open_with_minimum_duration() {
        let cal = calendar::parse(Path::new("f.toml"), ALLOW).unwrap();
        let none = overrides::Overrides::default();
        let d = Decider::new(&cal, &none, Query { env: Some("production"), service: Some("survey-api") });
        // From Tuesday 2026-03-10 11:00Z: open 11:00–12:00 (1 h), then 13:00–16:00 (3 h).
        assert_eq!(
            d.next_open(t("2026-03-10T11:00:00Z"), Duration::hours(1)).unwrap(),
            NextOpen::At(t("2026-03-10T11:00:00Z"))
        );
        assert_eq!(
            d.next_open(t("2026-03-10T11:00:00Z"), Duration::hours(2)).unwrap(),
            NextOpen::At(t("2026-03-10T13:00:00Z"))
        );
        assert_eq!(
            d.next_open(t("2026-03-10T11:00:00Z"), Duration::hours(4)).unwrap(),
            NextOpen::At(t("2026-03-17T10:00:00Z"))
        );
        assert_eq!(
            d.next_open(t("2026-03-10T11:00:00Z"), Duration::hours(7)).unwrap(),
            NextOpen::NoneWithin(t("2026-03-10T11:00:00Z") + horizon())
        );
    }

    const OVR: &str = r#"
[[override]]
id = "ovr-2026-05-16-01"
windows = ["bird-count-freeze"]
services = ["survey-api"]
environments = ["production"]
requested_by = "alice"
approved_by = "bob"
reason = "SEV-1 fix for submission failures"
ticket = "INC-4521"
not_before = "2026-05-16T09:00:00Z"
expires_at = "2026-05-16T13:00:00Z"
"#;

    #[test]
    fn a_valid_override_lifts_only_its_windows_services_environments_and_time() {
        let s = status(CAL, Some(OVR), "production", "survey-api", "2026-05-16T10:00:00Z");
        assert!(!s.frozen);
        assert_eq!(s.overrides_used, [0]);
        assert_eq!(s.entries[0].state, State::Lifted(0));
        assert!(status(CAL, Some(OVR), "production", "planner-web", "2026-05-16T10:00:00Z").frozen);
        assert!(status(CAL, Some(OVR), "production", "survey-api", "2026-05-16T13:00:00Z").frozen);
        assert!(status(CAL, Some(OVR), "production", "survey-api", "2026-05-16T08:59:00Z").frozen);
        // When the freeze ends is computed without overrides (only the decision at the asked
        // instant uses them, and is audited): from 08:00 it is the end of the freeze.
        let s = status(CAL, Some(OVR), "production", "survey-api", "2026-05-16T08:00:00Z");
        assert_eq!(s.next_open, NextOpen::At(t("2026-05-18T23:00:00Z")));
        // It does not lift a window it does not name.
        let both = CAL.replace("end = \"2026-06-01T18:00\"", "end = \"2026-06-01T18:00\"\n")
            + "\n[[window]]\nid = \"extra\"\nkind = \"deny\"\nstart = \"2026-05-16T09:30\"\nend = \"2026-05-16T10:30\"\n";
        let s = status(&both, Some(OVR), "production", "survey-api", "2026-05-16T10:00:00Z");
        assert!(s.frozen);
        assert_eq!(s.entries.iter().filter(|e| e.state == State::Active).count(), 1);
    }

    #[test]
    fn invalid_and_expired_overrides_are_reported_and_lift_nothing() {
        let selfie = OVR.replace("approved_by = \"bob\"", "approved_by = \"alice\"");
        let s = status(CAL, Some(&selfie), "production", "survey-api", "2026-05-16T10:00:00Z");
        assert!(s.frozen);
        assert!(s.override_problems[0].1.contains("invalid and lifts nothing: approved by its own requester"));
        let s = status(CAL, Some(OVR), "production", "survey-api", "2026-05-16T14:00:00Z");
        assert!(s.frozen);
        assert!(s.override_problems[0].1.contains("has expired"), "{:?}", s.override_problems);
    }
}

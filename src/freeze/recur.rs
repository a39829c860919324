//! RRULE recurrences, expanded in *floating* (wall-clock) time and converted to UTC one
//! occurrence at a time.
//!
//! The `rrule` crate, given a zoned DTSTART, computes occurrences with offsets that go wrong
//! across DST changes (fmeringdal/rust-rrule#109, #115) and rejects or mishandles local times in a
//! gap. So the rule is run with a DTSTART in UTC standing for the local wall clock, and each
//! occurrence is then resolved in the entry's zone with the rules of its own date
//! ([`super::time::resolve_local`]). `UNTIL` is taken out and applied here for the same reason.
//! Calls into the crate are guarded so that a panic inside it becomes a configuration error.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use rrule::{RRule, RRuleSet, Unvalidated};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The first date a recurrence may occur on when the entry gives no `from`.
pub const DEFAULT_FROM: &str = "2000-01-01";

#[derive(Clone, Debug)]
enum Until {
    Local(NaiveDateTime),
    Utc(DateTime<Utc>),
}

#[derive(Clone, Debug)]
pub struct Recurrence {
    set: RRuleSet,
    until: Option<Until>,
    pub text: String,
}

impl Recurrence {
    /// Parses `rule` (the RRULE value, e.g. `FREQ=WEEKLY;BYDAY=MO,TU`) with its first occurrence
    /// no earlier than `dtstart` (local wall-clock time).
    pub fn parse(rule: &str, dtstart: NaiveDateTime) -> Result<Recurrence, String> {
        let body = rule.trim();
        let body = body.strip_prefix("RRULE:").unwrap_or(body);
        if body.contains('\n') || body.to_ascii_uppercase().contains("DTSTART") {
            return Err(format!(
                "`{rule}`: give only the RRULE value (FREQ=...); the first date is `from` and the time `start_time`"
            ));
        }
        // RFC 5545 rules are ASCII; the rrule crate slices them by byte and panics inside a
        // multi-byte character (found by fuzz/freeze_toml).
        if let Some(c) = body.chars().find(|c| !c.is_ascii()) {
            return Err(format!(
                "`{rule}`: `{c}` cannot appear in an RRULE (RFC 5545 rules are ASCII, e.g. FREQ=WEEKLY;BYDAY=MO,TU)"
            ));
        }
        let mut until = None;
        let mut parts = Vec::new();
        for part in body.split(';') {
            match part.split_once('=') {
                Some((key, value)) if key.eq_ignore_ascii_case("UNTIL") => until = Some(parse_until(rule, value)?),
                _ => parts.push(part),
            }
        }
        let rest = parts.join(";");
        let start = rrule::Tz::UTC.from_utc_datetime(&dtstart);
        let parsed = catch_unwind(|| -> Result<RRuleSet, String> {
            let unvalidated: RRule<Unvalidated> = rest.parse().map_err(|e| format!("`{rule}`: {e}"))?;
            unvalidated.build(start).map_err(|e| format!("`{rule}`: {e}"))
        })
        .map_err(|_| format!("`{rule}`: the RRULE library panicked on this rule; simplify it"))??;
        Ok(Recurrence { set: parsed.limit(), until, text: body.to_string() })
    }

    /// Local start times (wall clock) from `lo` to `hi` inclusive, in order; `tz` applies `UNTIL`
    /// given in UTC. Returns an error if the RRULE library panics.
    pub fn starts_between(&self, tz: Tz, lo: NaiveDateTime, hi: NaiveDateTime) -> Result<Vec<NaiveDateTime>, String> {
        catch_unwind(AssertUnwindSafe(|| {
            let mut out = Vec::new();
            for occurrence in &self.set {
                let local = occurrence.naive_utc();
                if local > hi || self.past_until(tz, local) {
                    break;
                }
                if local >= lo {
                    out.push(local);
                }
            }
            out
        }))
        .map_err(|_| format!("`{}`: the RRULE library panicked while expanding this rule", self.text))
    }

    fn past_until(&self, tz: Tz, local: NaiveDateTime) -> bool {
        match &self.until {
            None => false,
            Some(Until::Local(until)) => local > *until,
            Some(Until::Utc(until)) => super::time::resolve_local(tz, local) > *until,
        }
    }
}

fn parse_until(rule: &str, value: &str) -> Result<Until, String> {
    let bad = || format!("`{rule}`: UNTIL=`{value}` is not a date (20261231) or date-time (20261231T235959[Z])");
    if let Some(utc) = value.strip_suffix('Z') {
        let t = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").map_err(|_| bad())?;
        return Ok(Until::Utc(Utc.from_utc_datetime(&t)));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S") {
        return Ok(Until::Local(t));
    }
    let d = NaiveDate::parse_from_str(value, "%Y%m%d").map_err(|_| bad())?;
    // A date UNTIL includes that whole day.
    Ok(Until::Local(d.and_hms_opt(23, 59, 59).ok_or_else(bad)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::time::parse_local;

    fn starts(rule: &str, from: &str, lo: &str, hi: &str) -> Vec<String> {
        let r = Recurrence::parse(rule, parse_local(from).unwrap()).unwrap();
        let tz: Tz = "UTC".parse().unwrap();
        r.starts_between(tz, parse_local(lo).unwrap(), parse_local(hi).unwrap())
            .unwrap()
            .iter()
            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
            .collect()
    }

    #[test]
    fn third_sunday_of_may() {
        let got = starts("FREQ=YEARLY;BYMONTH=5;BYDAY=3SU", "2000-01-01T00:00", "2026-01-01", "2028-01-01");
        assert_eq!(got, ["2026-05-17 00:00", "2027-05-16 00:00"]);
    }

    #[test]
    fn weekdays_keep_their_wall_clock_time() {
        let got = starts("FREQ=WEEKLY;BYDAY=MO,FR", "2026-01-01T07:00", "2026-03-06", "2026-03-10");
        assert_eq!(got, ["2026-03-06 07:00", "2026-03-09 07:00"]);
    }

    #[test]
    fn until_is_applied_locally() {
        let got = starts("FREQ=DAILY;UNTIL=20260103", "2026-01-01T09:00", "2025-12-01", "2026-02-01");
        assert_eq!(got, ["2026-01-01 09:00", "2026-01-02 09:00", "2026-01-03 09:00"]);
    }

    #[test]
    fn bad_rules_are_errors_not_panics() {
        let from = parse_local("2026-01-01").unwrap();
        assert!(Recurrence::parse("FREQ=FORTNIGHTLY", from).unwrap_err().contains("FREQ=FORTNIGHTLY"));
        assert!(Recurrence::parse("FREQ=WEEKLY;BYDAY=XX", from).is_err());
        assert!(Recurrence::parse("DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY", from)
            .unwrap_err()
            .contains("only the RRULE"));
        assert!(Recurrence::parse("FREQ=DAILY;UNTIL=tomorrow", from).unwrap_err().contains("UNTIL"));
    }

    #[test]
    fn a_character_outside_ascii_is_refused_before_the_rrule_library_sees_it() {
        // fuzz/freeze_toml's crash: the library panicked slicing `TUԞE` inside the character.
        let from = parse_local("2026-01-01").unwrap();
        let error = Recurrence::parse("FREQ=WEEKLY;BYDAY=MO,TU\u{51e}E", from).unwrap_err();
        assert!(error.contains("`\u{51e}` cannot appear in an RRULE (RFC 5545 rules are ASCII"), "{error}");
    }

    #[test]
    fn a_rule_that_never_matches_ends() {
        let got = starts("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "2026-01-01T00:00", "2026-01-01", "2030-01-01");
        assert!(got.is_empty());
    }
}

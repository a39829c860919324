//! RRULE recurrences, expanded in *floating* (wall-clock) time and converted to UTC one
//! occurrence at a time.
//!
//! The `rrule` crate, given a zoned DTSTART, computes occurrences with offsets that go wrong
//! across DST changes (fmeringdal/rust-rrule#109, #115) and rejects or mishandles local times in a
//! gap. So the rule is run with a DTSTART in UTC standing for the local wall clock, and each
//! occurrence is then resolved in the entry's zone with the rules of its own date
//! ([`super::time::resolve_local`]). `UNTIL` is taken out and applied here for the same reason.
//! Calls into the crate are guarded so that a panic inside it becomes a configuration error.

use super::rrule_parts::{self, Freq, Parts};
use super::zone::Zone;
use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use rrule::{RRule, RRuleSet, Unvalidated};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The first date a recurrence may occur on when the entry gives no `from`.
pub const DEFAULT_FROM: &str = "2000-01-01";

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
enum Until {
    Local(#[serde(with = "super::compact")] NaiveDateTime),
    Utc(#[serde(with = "super::compact")] DateTime<Utc>),
}

/// A recurrence set (RFC 5545 §3.8.5): the starts of every RRULE, plus the RDATEs, minus the
/// EXDATEs, all in wall-clock time.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Recurrence {
    /// Where the rules start (wall clock): `from` + `start_time`, or an iCalendar DTSTART.
    #[serde(with = "super::compact")]
    pub dtstart: NaiveDateTime,
    pub rules: Vec<Rule>,
    /// Sorted.
    #[serde(with = "super::compact")]
    pub rdates: Vec<NaiveDateTime>,
    /// Sorted.
    #[serde(with = "super::compact")]
    pub exdates: Vec<NaiveDateTime>,
    /// Whether a rule has COUNT but the entry gave no `from`: it then counts from [`DEFAULT_FROM`].
    pub counts_from_default: bool,
}

impl Recurrence {
    /// One rule from `dtstart`.
    pub fn parse(rule: &str, dtstart: NaiveDateTime) -> Result<Recurrence, String> {
        Recurrence::new(&[rule], dtstart, Vec::new(), Vec::new())
    }

    pub fn new(
        rules: &[&str],
        dtstart: NaiveDateTime,
        mut rdates: Vec<NaiveDateTime>,
        mut exdates: Vec<NaiveDateTime>,
    ) -> Result<Recurrence, String> {
        let rules = rules.iter().map(|r| Rule::parse(r, dtstart)).collect::<Result<Vec<_>, _>>()?;
        rdates.sort_unstable();
        rdates.dedup();
        exdates.sort_unstable();
        exdates.dedup();
        Ok(Recurrence { dtstart, rules, rdates, exdates, counts_from_default: false })
    }

    /// The rules as written, `;`-joined rules separated by ` + `.
    pub fn text(&self) -> String {
        self.rules.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join(" + ")
    }

    pub fn has_count(&self) -> bool {
        self.rules.iter().any(Rule::has_count)
    }

    /// Local start times from `lo` to `hi` inclusive, in order, without duplicates.
    pub fn starts_between(&self, tz: Zone, lo: NaiveDateTime, hi: NaiveDateTime) -> Result<Vec<NaiveDateTime>, String> {
        let mut out = Vec::new();
        for rule in &self.rules {
            out.extend(rule.starts_between(tz, lo, hi)?);
        }
        let first = self.rdates.partition_point(|t| *t < lo);
        out.extend(self.rdates[first..].iter().take_while(|t| **t <= hi));
        out.sort_unstable();
        out.dedup();
        if !self.exdates.is_empty() {
            out.retain(|t| self.exdates.binary_search(t).is_err());
        }
        Ok(out)
    }
}

/// One RRULE with its DTSTART. A cached calendar stores it as [`ValidatedRule`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(into = "ValidatedRule", try_from = "ValidatedRule")]
pub struct Rule {
    /// The rule in normal form (explicit defaults, no UNTIL), ready to start from any period:
    /// the rules whose union it is ([`Parts::expandable`]), usually one.
    pieces: Vec<RRule<Unvalidated>>,
    parts: Parts,
    dtstart: NaiveDateTime,
    until: Option<Until>,
    pub text: String,
}

impl Rule {
    /// Parses `rule` (the RRULE value, e.g. `FREQ=WEEKLY;BYDAY=MO,TU`) with its first occurrence
    /// no earlier than `dtstart` (local wall-clock time). Every part is validated against
    /// RFC 5545 ([`rrule_parts`]).
    pub fn parse(rule: &str, dtstart: NaiveDateTime) -> Result<Rule, String> {
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
        let parts = rrule_parts::parse(body).map_err(|why| format!("`{rule}`: {why}"))?;
        let until = parts.until.as_deref().map(|u| parse_until(rule, u)).transpose()?;
        let pieces = pieces(&parts, dtstart).map_err(|why| format!("`{rule}`: {why}"))?;
        for piece in &pieces {
            catch_unwind(|| piece.clone().build(rrule::Tz::UTC.from_utc_datetime(&dtstart)).map(|_| ()))
                .map_err(|_| format!("`{rule}`: the RRULE library panicked on this rule; simplify it"))?
                .map_err(|e| format!("`{rule}`: {e}"))?;
        }
        Ok(Rule { pieces, parts, dtstart, until, text: body.to_string() })
    }

    /// Whether the rule has COUNT: then it must always be expanded from its first occurrence.
    pub fn has_count(&self) -> bool {
        self.parts.count.is_some()
    }

    /// Local start times (wall clock) from `lo` to `hi` inclusive, in order; `tz` applies `UNTIL`
    /// given in UTC. Only the periods that can reach `[lo, hi]` are expanded. Returns an error if
    /// the RRULE library panics.
    pub fn starts_between(&self, tz: Zone, lo: NaiveDateTime, hi: NaiveDateTime) -> Result<Vec<NaiveDateTime>, String> {
        let start = self.restart_point(lo);
        let mut out = Vec::new();
        for piece in &self.pieces {
            catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                let set: RRuleSet = piece
                    .clone()
                    .build(rrule::Tz::UTC.from_utc_datetime(&start))
                    .map_err(|e| format!("`{}`: {e}", self.text))?
                    .limit();
                for occurrence in &set {
                    let local = occurrence.naive_utc();
                    if local > hi || self.past_until(tz, local) {
                        break;
                    }
                    if local >= lo && local >= self.dtstart {
                        out.push(local);
                    }
                }
                Ok(())
            }))
            .map_err(|_| format!("`{}`: the RRULE library panicked while expanding this rule", self.text))??;
        }
        if self.pieces.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        Ok(out)
    }

    /// Where to start expanding for occurrences at or after `lo`: the first instant of the latest
    /// period (year, month, week, day or hour, stepped by INTERVAL from DTSTART's) that starts
    /// after DTSTART's period and no later than `lo`. Every occurrence of the rule lies in one
    /// such period, and the normal form makes every default explicit, so starting there gives
    /// exactly the occurrences at or after it. With COUNT the rule must be counted from DTSTART.
    fn restart_point(&self, lo: NaiveDateTime) -> NaiveDateTime {
        if self.has_count() || lo <= self.dtstart {
            return self.dtstart;
        }
        let interval = self.parts.interval.max(1) as i64;
        let (d, l) = (self.dtstart, lo);
        let midnight = |date: NaiveDate| date.and_time(NaiveTime::MIN);
        let week_start = |date: NaiveDate| {
            let back = (7 + date.weekday().num_days_from_monday() as i64
                - self.parts.wkst().num_days_from_monday() as i64)
                % 7;
            date - Duration::days(back)
        };
        let steps = |units: i64| (units / interval) * interval;
        let restarted = match self.parts.freq() {
            Freq::Yearly => {
                let n = steps((l.year() - d.year()) as i64);
                NaiveDate::from_ymd_opt(d.year() + n as i32, 1, 1).map(midnight)
            }
            Freq::Monthly => {
                let months = (l.year() - d.year()) as i64 * 12 + l.month() as i64 - d.month() as i64;
                let first = NaiveDate::from_ymd_opt(d.year(), d.month(), 1);
                first.and_then(|f| f.checked_add_months(Months::new(steps(months) as u32))).map(midnight)
            }
            Freq::Weekly => {
                let (w0, wl) = (week_start(d.date()), week_start(l.date()));
                Some(midnight(w0 + Duration::days(7 * steps((wl - w0).num_days() / 7))))
            }
            Freq::Daily => Some(midnight(d.date() + Duration::days(steps((l.date() - d.date()).num_days())))),
            Freq::Hourly => {
                let h0 = d.date().and_hms_opt(chrono::Timelike::hour(&d), 0, 0);
                h0.map(|h0| h0 + Duration::hours(steps((l - h0).num_hours())))
            }
        };
        match restarted {
            Some(t) if t > self.dtstart => t,
            _ => self.dtstart,
        }
    }

    fn past_until(&self, tz: Zone, local: NaiveDateTime) -> bool {
        match &self.until {
            None => false,
            Some(Until::Local(until)) => local > *until,
            Some(Until::Utc(until)) => tz.instant(local) > *until,
        }
    }
}

/// A [`Rule`] as the calendar cache stores it: its validated parts rather than the `rrule`
/// crate's value (which has no serde support). Read back, the crate's rule is rebuilt from the
/// parts' normal form without validating the parts again: they were valid when stored, and the
/// cache key covers Sluice's version.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct ValidatedRule {
    parts: Parts,
    #[serde(with = "super::compact")]
    dtstart: NaiveDateTime,
    until: Option<Until>,
    text: String,
}

impl From<Rule> for ValidatedRule {
    fn from(rule: Rule) -> ValidatedRule {
        ValidatedRule { parts: rule.parts, dtstart: rule.dtstart, until: rule.until, text: rule.text }
    }
}

impl TryFrom<ValidatedRule> for Rule {
    type Error = String;

    fn try_from(stored: ValidatedRule) -> Result<Rule, String> {
        let pieces = pieces(&stored.parts, stored.dtstart)?;
        Ok(Rule { pieces, parts: stored.parts, dtstart: stored.dtstart, until: stored.until, text: stored.text })
    }
}

/// The `rrule` crate's rules for `parts`, in normal form from `dtstart`.
fn pieces(parts: &Parts, dtstart: NaiveDateTime) -> Result<Vec<RRule<Unvalidated>>, String> {
    parts
        .expandable()?
        .iter()
        .map(|piece| {
            let normal = piece.normal_form(dtstart);
            catch_unwind(|| normal.parse::<RRule<Unvalidated>>().map_err(|e| e.to_string()))
                .map_err(|_| "the RRULE library panicked on this rule; simplify it".to_string())?
        })
        .collect()
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
        let tz = Zone::utc();
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
    fn the_fifth_from_last_weekday_is_the_fifth_counted_from_the_other_end() {
        // Months of 2026 with five Mondays: March, June, August, November.
        let from = "2026-01-01T09:00";
        let fifth = starts("FREQ=MONTHLY;BYDAY=5MO", from, "2026-01-01", "2027-01-01");
        assert_eq!(fifth, ["2026-03-30 09:00", "2026-06-29 09:00", "2026-08-31 09:00", "2026-11-30 09:00"]);
        let fifth_from_last = starts("FREQ=MONTHLY;BYDAY=-5MO", from, "2026-01-01", "2027-01-01");
        assert_eq!(fifth_from_last, ["2026-03-02 09:00", "2026-06-01 09:00", "2026-08-03 09:00", "2026-11-02 09:00"]);
        // Years with 53 Mondays: 2029 (from 1 January), 2035, 2040 (a leap year from a Sunday).
        let last = starts("FREQ=YEARLY;BYDAY=53MO", from, "2026-01-01", "2041-01-01");
        assert_eq!(last, ["2029-12-31 09:00", "2035-12-31 09:00", "2040-12-31 09:00"]);
        let first = starts("FREQ=YEARLY;BYDAY=-53MO", from, "2026-01-01", "2041-01-01");
        assert_eq!(first, ["2029-01-01 09:00", "2035-01-01 09:00", "2040-01-02 09:00"]);
        // With other BYDAY values: the union; with COUNT across them: refused, saying why.
        let mixed = starts("FREQ=MONTHLY;BYDAY=-5MO,1FR", from, "2026-03-01", "2026-04-01");
        assert_eq!(mixed, ["2026-03-02 09:00", "2026-03-06 09:00"]);
        let e = Recurrence::parse("FREQ=MONTHLY;BYDAY=-5MO,1FR;COUNT=3", parse_local(from).unwrap()).unwrap_err();
        assert!(e.contains("BYDAY=-5MO with other BYDAY values and COUNT"), "{e}");
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

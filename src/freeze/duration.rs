//! ISO 8601 durations (`P7D`, `PT12H`, `P1DT2H30M`, `P2W`, `PT0S`).
//!
//! Written here rather than taken from the `iso8601` crate because calendar arithmetic needs the
//! nominal parts (years, months, days) kept apart from the exact ones (hours, minutes, seconds),
//! and because a freeze file deserves errors that say which part is wrong. Following RFC 5545,
//! `P1D` is one *calendar* day in the entry's zone (23 or 25 hours across a DST change) while
//! `PT24H` is exactly 24 hours.

use chrono::{Duration, Months, NaiveDateTime};
use std::fmt;

/// The longest duration a calendar may use for `lead`, `lag`, `duration` or `--min-duration`:
/// a century, far beyond any freeze, and far inside the dates the engine can compute with.
pub const MAX_DAYS: i64 = 36_525;

fn too_long(text: &str) -> String {
    format!("`{text}` is longer than 100 years (P100Y), the longest duration a freeze calendar accepts")
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IsoDuration {
    /// Years × 12 + months: nominal.
    pub months: u32,
    /// Weeks × 7 + days: nominal (calendar days in the entry's zone).
    pub days: u32,
    /// Hours, minutes and seconds: exact.
    pub seconds: u64,
    text: String,
}

impl IsoDuration {
    pub fn zero() -> IsoDuration {
        IsoDuration { text: "PT0S".into(), ..IsoDuration::default() }
    }

    /// Parses a strict ISO 8601 duration: `P[nY][nM][nW][nD][T[nH][nM][nS]]`, integers only, no sign.
    pub fn parse(text: &str) -> Result<IsoDuration, String> {
        let bad =
            |why: &str| format!("`{text}` is not an ISO 8601 duration ({why}); examples: P7D, PT12H, P1DT6H, PT0S");
        let rest = text.strip_prefix('P').ok_or_else(|| bad("it must start with `P`"))?;
        if rest.is_empty() {
            return Err(bad("nothing after `P`"));
        }
        let (date_part, time_part) = match rest.split_once('T') {
            Some((d, "")) => return Err(bad(&format!("nothing after `T` in `{d}T`"))),
            Some((d, t)) => (d, Some(t)),
            None => (rest, None),
        };
        let mut out = IsoDuration::default();
        let mut parse_part = |part: &str, units: &[char], time: bool| -> Result<(), String> {
            let mut number = String::new();
            let mut last_unit: Option<usize> = None;
            for c in part.chars() {
                if c.is_ascii_digit() {
                    number.push(c);
                    continue;
                }
                let Some(position) = units.iter().position(|&u| u == c) else {
                    return Err(bad(&format!("unexpected `{c}`")));
                };
                if number.is_empty() {
                    return Err(bad(&format!("no number before `{c}`")));
                }
                if last_unit.is_some_and(|l| l >= position) {
                    return Err(bad(&format!("`{c}` out of order or repeated")));
                }
                last_unit = Some(position);
                let n: u64 = number.parse().map_err(|_| too_long(text))?;
                number.clear();
                let too_long = || too_long(text);
                let small = |n: u64| u32::try_from(n).map_err(|_| too_long());
                let add32 = |total: u32, n: u32, unit: u32| n.checked_mul(unit).and_then(|v| total.checked_add(v));
                let add64 = |total: u64, unit: u64| n.checked_mul(unit).and_then(|v| total.checked_add(v));
                match (time, c) {
                    (false, 'Y') => out.months = add32(out.months, small(n)?, 12).ok_or_else(too_long)?,
                    (false, 'M') => out.months = add32(out.months, small(n)?, 1).ok_or_else(too_long)?,
                    (false, 'W') => out.days = add32(out.days, small(n)?, 7).ok_or_else(too_long)?,
                    (false, 'D') => out.days = add32(out.days, small(n)?, 1).ok_or_else(too_long)?,
                    (true, 'H') => out.seconds = add64(out.seconds, 3600).ok_or_else(too_long)?,
                    (true, 'M') => out.seconds = add64(out.seconds, 60).ok_or_else(too_long)?,
                    (true, 'S') => out.seconds = add64(out.seconds, 1).ok_or_else(too_long)?,
                    _ => return Err(bad(&format!("unexpected `{c}`"))),
                }
            }
            if !number.is_empty() {
                return Err(bad(&format!("`{number}` has no unit")));
            }
            Ok(())
        };
        parse_part(date_part, &['Y', 'M', 'W', 'D'], false)?;
        if let Some(t) = time_part {
            parse_part(t, &['H', 'M', 'S'], true)?;
        }
        // Checked arithmetic and a bound: `P300000Y` once overflowed date arithmetic into a panic.
        if out.upper_bound() > Duration::days(MAX_DAYS) {
            return Err(too_long(text));
        }
        out.text = text.to_string();
        Ok(out)
    }

    /// A duration of whole calendar days and exact seconds (for imported events).
    pub fn from_parts(days: u32, seconds: u64) -> IsoDuration {
        let mut text = format!("P{days}D");
        if seconds > 0 {
            text.push_str(&format!("T{seconds}S"));
        }
        IsoDuration { months: 0, days, seconds, text }
    }

    pub fn is_zero(&self) -> bool {
        self.months == 0 && self.days == 0 && self.seconds == 0
    }

    /// Whether the duration is the same length whatever the date (no years, months or days).
    pub fn is_exact(&self) -> bool {
        self.months == 0 && self.days == 0
    }

    /// The exact length, counting a day as 24 hours and a month as 31 days (an upper bound).
    pub fn upper_bound(&self) -> Duration {
        let seconds = i64::try_from(self.seconds).ok().and_then(Duration::try_seconds);
        let days = Duration::try_days(self.days as i64 + 31 * self.months as i64);
        seconds.zip(days).and_then(|(s, d)| s.checked_add(&d)).unwrap_or(Duration::MAX)
    }

    /// Adds the nominal part (years, months, days) to a local wall-clock time.
    pub fn add_nominal(&self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        local.checked_add_months(Months::new(self.months))?.checked_add_signed(Duration::days(self.days as i64))
    }

    /// Subtracts the nominal part from a local wall-clock time.
    pub fn sub_nominal(&self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        local.checked_sub_months(Months::new(self.months))?.checked_sub_signed(Duration::days(self.days as i64))
    }

    pub fn exact(&self) -> Duration {
        i64::try_from(self.seconds).ok().and_then(Duration::try_seconds).unwrap_or(Duration::MAX)
    }
}

impl fmt::Display for IsoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let d = IsoDuration::parse("P7D").unwrap();
        assert_eq!((d.months, d.days, d.seconds), (0, 7, 0));
        let d = IsoDuration::parse("PT12H").unwrap();
        assert_eq!((d.months, d.days, d.seconds), (0, 0, 43_200));
        let d = IsoDuration::parse("P1Y2M3DT4H5M6S").unwrap();
        assert_eq!((d.months, d.days, d.seconds), (14, 3, 4 * 3600 + 5 * 60 + 6));
        let d = IsoDuration::parse("P2W").unwrap();
        assert_eq!(d.days, 14);
        assert!(IsoDuration::parse("PT0S").unwrap().is_zero());
        assert_eq!(IsoDuration::parse("PT90M").unwrap().to_string(), "PT90M");
    }

    #[test]
    fn rejects_malformed_durations_with_a_reason() {
        for (text, why) in [
            ("7D", "start with `P`"),
            ("P", "nothing after `P`"),
            ("PT", "nothing after `T`"),
            ("P1H", "unexpected `H`"),
            ("PT1D", "unexpected `D`"),
            ("P1D2", "has no unit"),
            ("PD", "no number before `D`"),
            ("P1D1Y", "out of order"),
            ("PT1.5H", "unexpected `.`"),
            ("-P1D", "start with `P`"),
            ("P300000Y", "longer than 100 years"),
            ("P101Y", "longer than 100 years"),
            ("P99999999999999999999D", "longer than 100 years"),
            ("PT99999999999999999999H", "longer than 100 years"),
            ("PT9999999999999999S", "longer than 100 years"),
            ("P4294967295Y", "longer than 100 years"),
        ] {
            let err = IsoDuration::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn nominal_days_are_calendar_days() {
        let t = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
        let d = IsoDuration::parse("P1M7D").unwrap();
        assert_eq!(d.add_nominal(t).unwrap().to_string(), "2026-04-08 00:00:00");
        assert_eq!(d.sub_nominal(t).unwrap().to_string(), "2026-01-25 00:00:00");
    }
}

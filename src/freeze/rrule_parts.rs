//! RRULE values checked part by part against RFC 5545 §3.3.10 before anything is expanded.
//!
//! The `rrule` crate accepts rules the RFC forbids and gives them a meaning of its own
//! (`FREQ=WEEKLY;BYDAY=1MO` matched every day; `INTERVAL=0` was taken), and a freeze calendar
//! must never guess: every part is validated here, with a message that says which part is wrong
//! and why. The parsed parts are then written back out in a normal form, with the defaults the
//! RFC takes from DTSTART made explicit, so the rule can be restarted from any period (see
//! [`super::recur`]).

use chrono::{Datelike, NaiveDateTime, Timelike, Weekday};
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Freq {
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
}

impl Freq {
    pub fn as_str(self) -> &'static str {
        match self {
            Freq::Hourly => "HOURLY",
            Freq::Daily => "DAILY",
            Freq::Weekly => "WEEKLY",
            Freq::Monthly => "MONTHLY",
            Freq::Yearly => "YEARLY",
        }
    }
}

/// The parts of one RRULE, validated.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    pub freq: Option<Freq>,
    pub interval: u32,
    pub count: Option<u32>,
    /// As written; interpreted by the caller (it depends on how DTSTART is written).
    pub until: Option<String>,
    pub by_second: Vec<u32>,
    pub by_minute: Vec<u32>,
    pub by_hour: Vec<u32>,
    /// `(ordinal, weekday)`: `-1SU` is `(Some(-1), Sun)`.
    pub by_day: Vec<(Option<i32>, Weekday)>,
    pub by_month_day: Vec<i32>,
    pub by_year_day: Vec<i32>,
    pub by_week_no: Vec<i32>,
    pub by_month: Vec<u32>,
    pub by_set_pos: Vec<i32>,
    pub wkst: Option<Weekday>,
}

fn weekday(text: &str) -> Option<Weekday> {
    Some(match text {
        "MO" => Weekday::Mon,
        "TU" => Weekday::Tue,
        "WE" => Weekday::Wed,
        "TH" => Weekday::Thu,
        "FR" => Weekday::Fri,
        "SA" => Weekday::Sat,
        "SU" => Weekday::Sun,
        _ => return None,
    })
}

fn weekday_code(day: Weekday) -> &'static str {
    ["MO", "TU", "WE", "TH", "FR", "SA", "SU"][day.num_days_from_monday() as usize]
}

/// A signed integer with at most `digits` digits, without leading `+` ambiguity beyond the RFC's.
fn signed(text: &str) -> Option<i32> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.trim_start_matches('+').parse().ok()
}

fn list<T>(key: &str, value: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    value.split(',').map(|item| parse(item).ok_or_else(|| format!("{key}={value}: `{item}` is not {what}"))).collect()
}

fn in_range(range: std::ops::RangeInclusive<i32>, signed_ok: bool) -> impl Fn(&str) -> Option<i32> {
    move |item| {
        let n = signed(item)?;
        let magnitude = if signed_ok { n.abs() } else { n };
        (n != 0 || *range.start() == 0).then_some(())?;
        (range.contains(&magnitude) && (signed_ok || !item.starts_with(['+', '-']))).then_some(n)
    }
}

/// Parses and validates an RRULE value (`FREQ=MONTHLY;BYDAY=-1FR`).
pub fn parse(body: &str) -> Result<Parts, String> {
    let mut parts = Parts { interval: 1, ..Parts::default() };
    let mut seen: Vec<String> = Vec::new();
    let body = body.strip_suffix(';').unwrap_or(body);
    if body.trim().is_empty() {
        return Err("is empty; write at least FREQ=…".into());
    }
    for part in body.split(';') {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!("`{part}` is not KEY=VALUE"));
        };
        let key = key.trim().to_ascii_uppercase();
        let value = value.trim().to_ascii_uppercase();
        if value.is_empty() {
            return Err(format!("{key} has no value"));
        }
        if seen.contains(&key) {
            return Err(format!("{key} is given twice; RFC 5545 allows each rule part once"));
        }
        seen.push(key.clone());
        let (k, v) = (key.as_str(), value.as_str());
        match k {
            "FREQ" => {
                parts.freq = Some(match v {
                    "HOURLY" => Freq::Hourly,
                    "DAILY" => Freq::Daily,
                    "WEEKLY" => Freq::Weekly,
                    "MONTHLY" => Freq::Monthly,
                    "YEARLY" => Freq::Yearly,
                    "SECONDLY" | "MINUTELY" => {
                        return Err(format!(
                            "FREQ={v} is not supported for freeze windows and events (the finest is HOURLY)"
                        ))
                    }
                    other => {
                        return Err(format!(
                            "FREQ={other} is not a frequency; use HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY"
                        ))
                    }
                })
            }
            "INTERVAL" => {
                parts.interval = match v.parse::<u32>() {
                    Ok(0) => {
                        return Err("INTERVAL=0: the interval must be a positive integer (1 is the default)".into())
                    }
                    Ok(n) if v.bytes().all(|b| b.is_ascii_digit()) && n <= 10_000 => n,
                    _ => return Err(format!("INTERVAL={v} is not a positive integer up to 10000")),
                }
            }
            "COUNT" => {
                parts.count = Some(match v.parse::<u32>() {
                    Ok(0) => return Err("COUNT=0: the rule would never occur; COUNT must be at least 1".into()),
                    Ok(n) if v.bytes().all(|b| b.is_ascii_digit()) && n <= 1_000_000 => n,
                    _ => return Err(format!("COUNT={v} is not a positive integer up to 1000000")),
                })
            }
            "UNTIL" => parts.until = Some(v.to_string()),
            "BYSECOND" => {
                parts.by_second = list(k, v, "a second (0 to 59)", |s| in_range(0..=59, false)(s).map(|n| n as u32))?
            }
            "BYMINUTE" => {
                parts.by_minute = list(k, v, "a minute (0 to 59)", |s| in_range(0..=59, false)(s).map(|n| n as u32))?
            }
            "BYHOUR" => {
                parts.by_hour = list(k, v, "an hour (0 to 23)", |s| in_range(0..=23, false)(s).map(|n| n as u32))?
            }
            "BYDAY" => {
                parts.by_day = list(k, v, "a weekday (MO…SU, with an optional ordinal such as 2MO or -1FR)", |s| {
                    let at = s.len().saturating_sub(2);
                    if !s.is_char_boundary(at) {
                        return None;
                    }
                    let (ordinal, day) = s.split_at(at);
                    let day = weekday(day)?;
                    if ordinal.is_empty() {
                        return Some((None, day));
                    }
                    Some((Some(in_range(1..=53, true)(ordinal)?), day))
                })?
            }
            "BYMONTHDAY" => {
                parts.by_month_day = list(k, v, "a day of the month (1 to 31 or -31 to -1)", in_range(1..=31, true))?
            }
            "BYYEARDAY" => {
                parts.by_year_day = list(k, v, "a day of the year (1 to 366 or -366 to -1)", in_range(1..=366, true))?
            }
            "BYWEEKNO" => {
                parts.by_week_no = list(k, v, "a week number (1 to 53 or -53 to -1)", in_range(1..=53, true))?
            }
            "BYMONTH" => {
                parts.by_month = list(k, v, "a month (1 to 12)", |s| in_range(1..=12, false)(s).map(|n| n as u32))?
            }
            "BYSETPOS" => {
                parts.by_set_pos = list(k, v, "a position (1 to 366 or -366 to -1)", in_range(1..=366, true))?
            }
            "WKST" => {
                parts.wkst =
                    Some(weekday(v).ok_or_else(|| format!("WKST={v} is not a weekday (MO, TU, WE, TH, FR, SA, SU)"))?)
            }
            "RSCALE" | "SKIP" => {
                return Err(format!("{k} (RFC 7529 non-Gregorian recurrences) is not supported"));
            }
            "DTSTART" => return Err("DTSTART is not an RRULE part".into()),
            other => return Err(format!("unknown rule part `{other}` (RFC 5545 §3.3.10)")),
        }
    }
    check_combinations(&parts)?;
    Ok(parts)
}

/// The RFC's rules about which parts go with which frequency.
fn check_combinations(p: &Parts) -> Result<(), String> {
    let Some(freq) = p.freq else {
        return Err("has no FREQ; RFC 5545 requires it".into());
    };
    if p.count.is_some() && p.until.is_some() {
        return Err("COUNT and UNTIL together: RFC 5545 allows one or the other".into());
    }
    if let Some((Some(n), day)) = p.by_day.iter().find(|(n, _)| n.is_some()) {
        let written = format!("{n}{}", weekday_code(*day));
        if !matches!(freq, Freq::Monthly | Freq::Yearly) {
            return Err(format!(
                "BYDAY={written} has an ordinal, which RFC 5545 allows only with FREQ=MONTHLY or FREQ=YEARLY; with FREQ={} write BYDAY={}",
                freq.as_str(),
                weekday_code(*day)
            ));
        }
        if freq == Freq::Yearly && !p.by_week_no.is_empty() {
            return Err(format!("BYDAY={written} has an ordinal, which RFC 5545 forbids together with BYWEEKNO"));
        }
        // Within a month (MONTHLY, or YEARLY with BYMONTH) the ordinal counts that month's days.
        let in_a_month = freq == Freq::Monthly || !p.by_month.is_empty();
        if in_a_month && n.abs() > 5 {
            return Err(format!("BYDAY={written}: a month has at most five of each weekday, so it never occurs"));
        }
    }
    if !p.by_month_day.is_empty() && freq == Freq::Weekly {
        return Err("BYMONTHDAY cannot be used with FREQ=WEEKLY (RFC 5545)".into());
    }
    if !p.by_year_day.is_empty() && matches!(freq, Freq::Daily | Freq::Weekly | Freq::Monthly) {
        return Err(format!("BYYEARDAY cannot be used with FREQ={} (RFC 5545)", freq.as_str()));
    }
    if !p.by_week_no.is_empty() && freq != Freq::Yearly {
        return Err(format!("BYWEEKNO is only valid with FREQ=YEARLY, not FREQ={}", freq.as_str()));
    }
    let other_by = !(p.by_second.is_empty()
        && p.by_minute.is_empty()
        && p.by_hour.is_empty()
        && p.by_day.is_empty()
        && p.by_month_day.is_empty()
        && p.by_year_day.is_empty()
        && p.by_week_no.is_empty()
        && p.by_month.is_empty());
    if !p.by_set_pos.is_empty() && !other_by {
        return Err("BYSETPOS needs another BYxxx part to select from (RFC 5545)".into());
    }
    Ok(())
}

impl Parts {
    /// The rule as rules the `rrule` crate expands, whose union is this one. The crate refuses
    /// the fifth-from-last weekday of a month (`BYDAY=-5MO`) and the 53rd-from-last of a year
    /// (`-53MO`) while it takes `5MO` and `53MO`; such a day is the weekday on one of the month's
    /// days -31 to -29 (the year's -366 and -365), which the crate does expand. A rule with
    /// other BYDAY values as well becomes one rule per value (exact without COUNT or BYSETPOS,
    /// which count across them: those are refused with a message).
    pub fn expandable(&self) -> Result<Vec<Parts>, String> {
        let in_year = self.freq() == Freq::Yearly && self.by_month.is_empty();
        let beyond = |n: &Option<i32>| match n {
            Some(-5) => self.freq() == Freq::Monthly,
            Some(-53) => in_year,
            _ => false,
        };
        if !self.by_day.iter().any(|(n, _)| beyond(n)) {
            return Ok(vec![self.clone()]);
        }
        let shown = |(n, d): &(Option<i32>, Weekday)| format!("{}{}", n.unwrap_or_default(), weekday_code(*d));
        let special: Vec<_> = self.by_day.iter().filter(|(n, _)| beyond(n)).collect();
        let others: Vec<_> = self.by_day.iter().filter(|(n, _)| !beyond(n)).copied().collect();
        let refuse = |why: &str| Err(format!("BYDAY={} {why}; write it as a rule of its own", shown(special[0])));
        if self.by_day.len() > 1 && (self.count.is_some() || !self.by_set_pos.is_empty()) {
            return refuse(
                "with other BYDAY values and COUNT or BYSETPOS is not supported (they count across the values)",
            );
        }
        if !self.by_month_day.is_empty() || !self.by_year_day.is_empty() {
            return refuse("together with BYMONTHDAY or BYYEARDAY is not supported");
        }
        let mut out = Vec::new();
        if !others.is_empty() {
            out.push(Parts { by_day: others, ..self.clone() });
        }
        for &(n, day) in special {
            let mut one = Parts { by_day: vec![(None, day)], ..self.clone() };
            if n == Some(-5) {
                one.by_month_day = vec![-31, -30, -29];
            } else {
                one.by_year_day = vec![-366, -365];
            }
            out.push(one);
        }
        Ok(out)
    }

    pub fn freq(&self) -> Freq {
        self.freq.unwrap_or(Freq::Daily)
    }

    pub fn wkst(&self) -> Weekday {
        self.wkst.unwrap_or(Weekday::Mon)
    }

    /// The rule without UNTIL (applied by the caller) and with the defaults RFC 5545 takes from
    /// `dtstart` written out, so that starting it from a later period gives the same occurrences.
    pub fn normal_form(&self, dtstart: NaiveDateTime) -> String {
        let freq = self.freq();
        let mut p = self.clone();
        if p.by_second.is_empty() {
            p.by_second.push(dtstart.second());
        }
        if p.by_minute.is_empty() {
            p.by_minute.push(dtstart.minute());
        }
        if p.by_hour.is_empty() && freq > Freq::Hourly {
            p.by_hour.push(dtstart.hour());
        }
        let no_day_parts =
            p.by_week_no.is_empty() && p.by_year_day.is_empty() && p.by_month_day.is_empty() && p.by_day.is_empty();
        if no_day_parts {
            match freq {
                Freq::Yearly => {
                    if p.by_month.is_empty() {
                        p.by_month.push(dtstart.month());
                    }
                    p.by_month_day.push(dtstart.day() as i32);
                }
                Freq::Monthly => p.by_month_day.push(dtstart.day() as i32),
                Freq::Weekly => p.by_day.push((None, dtstart.weekday())),
                _ => {}
            }
        }
        let mut out = format!("FREQ={};INTERVAL={}", freq.as_str(), p.interval);
        if let Some(c) = p.count {
            let _ = write!(out, ";COUNT={c}");
        }
        let _ = write!(out, ";WKST={}", weekday_code(p.wkst()));
        let join = |v: Vec<String>| v.join(",");
        let mut by = |key: &str, values: Vec<String>| {
            if !values.is_empty() {
                let _ = write!(out, ";{key}={}", join(values));
            }
        };
        by("BYMONTH", p.by_month.iter().map(u32::to_string).collect());
        by("BYWEEKNO", p.by_week_no.iter().map(i32::to_string).collect());
        by("BYYEARDAY", p.by_year_day.iter().map(i32::to_string).collect());
        by("BYMONTHDAY", p.by_month_day.iter().map(i32::to_string).collect());
        by(
            "BYDAY",
            p.by_day
                .iter()
                .map(|(n, d)| format!("{}{}", n.map(|n| n.to_string()).unwrap_or_default(), weekday_code(*d)))
                .collect(),
        );
        by("BYHOUR", p.by_hour.iter().map(u32::to_string).collect());
        by("BYMINUTE", p.by_minute.iter().map(u32::to_string).collect());
        by("BYSECOND", p.by_second.iter().map(u32::to_string).collect());
        by("BYSETPOS", p.by_set_pos.iter().map(i32::to_string).collect());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(rule: &str) -> String {
        parse(rule).unwrap_err()
    }

    #[test]
    fn the_rfc_forbids_these_and_so_do_we() {
        assert!(err("FREQ=WEEKLY;BYDAY=1MO").contains("BYDAY=1MO has an ordinal"));
        assert!(err("FREQ=DAILY;BYDAY=-1FR").contains("only with FREQ=MONTHLY or FREQ=YEARLY"));
        assert!(err("FREQ=DAILY;INTERVAL=0").contains("INTERVAL=0"));
        assert!(err("FREQ=DAILY;INTERVAL=-1").contains("INTERVAL=-1"));
        assert!(err("FREQ=DAILY;COUNT=3;UNTIL=20260101").contains("COUNT and UNTIL"));
        assert!(err("FREQ=WEEKLY;BYMONTHDAY=1").contains("BYMONTHDAY cannot be used with FREQ=WEEKLY"));
        assert!(err("FREQ=MONTHLY;BYYEARDAY=1").contains("BYYEARDAY cannot be used with FREQ=MONTHLY"));
        assert!(err("FREQ=MONTHLY;BYWEEKNO=1").contains("BYWEEKNO is only valid with FREQ=YEARLY"));
        assert!(err("FREQ=YEARLY;BYWEEKNO=1;BYDAY=1MO").contains("together with BYWEEKNO"));
        assert!(err("FREQ=DAILY;BYSETPOS=1").contains("BYSETPOS needs another"));
        assert!(err("BYDAY=MO").contains("has no FREQ"));
        assert!(err("FREQ=DAILY;FREQ=WEEKLY").contains("FREQ is given twice"));
        assert!(err("FREQ=DAILY;BYHOUR=24").contains("`24` is not an hour"));
        assert!(err("FREQ=MONTHLY;BYMONTHDAY=0").contains("`0` is not a day of the month"));
        assert!(err("FREQ=MONTHLY;BYMONTHDAY=32").contains("`32`"));
        assert!(err("FREQ=YEARLY;BYMONTH=13").contains("`13` is not a month"));
        assert!(err("FREQ=YEARLY;BYMONTH=-1").contains("`-1` is not a month"));
        assert!(err("FREQ=MONTHLY;BYDAY=0MO").contains("`0MO`"));
        assert!(err("FREQ=MONTHLY;BYDAY=6MO").contains("at most five"));
        assert!(err("FREQ=MONTHLY;BYMONTH=3;BYDAY=-6MO").contains("at most five"));
        assert!(err("FREQ=YEARLY;BYMONTH=3;BYDAY=6MO").contains("at most five of each weekday, so it never occurs"));
        assert!(parse("FREQ=MONTHLY;BYDAY=-5MO").is_ok() && parse("FREQ=YEARLY;BYDAY=-53MO").is_ok());
        assert!(err("FREQ=YEARLY;BYDAY=54MO").contains("`54MO`"));
        assert!(err("FREQ=WEEKLY;BYDAY=XX").contains("`XX` is not a weekday"));
        assert!(err("FREQ=WEEKLY;WKST=XX").contains("WKST=XX"));
        assert!(err("FREQ=FORTNIGHTLY").contains("FREQ=FORTNIGHTLY is not a frequency"));
        assert!(err("FREQ=MINUTELY").contains("not supported"));
        assert!(err("FREQ=DAILY;COLOUR=RED").contains("unknown rule part `COLOUR`"));
        assert!(err("FREQ=DAILY;BYDAY").contains("not KEY=VALUE"));
        assert!(err("FREQ=DAILY;BYDAY=").contains("BYDAY has no value"));
        assert!(err("FREQ=DAILY;COUNT=0").contains("COUNT=0"));
        assert!(err("FREQ=YEARLY;RSCALE=HEBREW").contains("RSCALE"));
    }

    #[test]
    fn valid_rules_pass_and_get_explicit_defaults() {
        let start = chrono::NaiveDate::from_ymd_opt(2026, 5, 17).unwrap().and_hms_opt(7, 30, 0).unwrap();
        let p = parse("freq=yearly;bymonth=5;byday=3SU").unwrap();
        assert_eq!(
            p.normal_form(start),
            "FREQ=YEARLY;INTERVAL=1;WKST=MO;BYMONTH=5;BYDAY=3SU;BYHOUR=7;BYMINUTE=30;BYSECOND=0"
        );
        let p = parse("FREQ=WEEKLY;INTERVAL=2").unwrap();
        assert_eq!(p.normal_form(start), "FREQ=WEEKLY;INTERVAL=2;WKST=MO;BYDAY=SU;BYHOUR=7;BYMINUTE=30;BYSECOND=0");
        let p = parse("FREQ=YEARLY").unwrap();
        assert!(p.normal_form(start).contains("BYMONTH=5;BYMONTHDAY=17"));
        let p = parse("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1").unwrap();
        assert!(p.normal_form(start).ends_with("BYSETPOS=-1"));
        assert!(parse("FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO").is_ok());
        assert!(parse("FREQ=MONTHLY;BYMONTHDAY=-1;").is_ok());
        assert!(parse("FREQ=DAILY;UNTIL=20261231T000000Z").unwrap().until.is_some());
    }
}

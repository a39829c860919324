//! Wall-clock time in IANA zones, converted to UTC with the rules in force on each date.
//!
//! Policy for times that a DST change makes invalid (documented in the README):
//! - a local time that does not exist (spring-forward gap) moves forward to the first valid
//!   instant, i.e. the moment the clocks change (02:30 on a New York spring-forward day is
//!   03:00 EDT);
//! - an ambiguous local time (fall-back overlap) takes the earlier instant (the first 01:30).

use super::zone::{Fit, Zone};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

/// Parses an IANA zone name. Unknown names are errors (never a silent fall-back to UTC).
pub fn parse_zone(name: &str) -> Result<Zone, String> {
    Zone::named(name)
}

/// Converts a local wall-clock time to UTC with the gap/overlap policy above.
pub fn resolve_local(tz: Zone, local: NaiveDateTime) -> DateTime<Utc> {
    tz.instant(local)
}

/// Parses a local date-time written without an offset: `2026-05-17T00:00`, `2026-05-17T00:00:00`
/// or a date alone (`2026-05-17`, meaning midnight).
pub fn parse_local(text: &str) -> Result<NaiveDateTime, String> {
    if let Some(t) = parse_local_fast(text) {
        return Ok(t);
    }
    for format in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(t);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_time(NaiveTime::MIN));
    }
    let after_t = text.split_once('T').map_or("", |(_, t)| t);
    if DateTime::parse_from_rfc3339(text).is_ok() || after_t.ends_with('Z') || after_t.contains(['+', '-']) {
        return Err(format!(
            "`{text}` carries a UTC offset; write the local time without one (`2026-05-17T00:00`) and set `timezone`"
        ));
    }
    Err(format!("`{text}` is not a local date-time; write it as `2026-05-17T00:00`"))
}

/// `YYYY-MM-DDTHH:MM`, the common form, without the cost of interpreting a format string
/// (a 10,000-event calendar has 20,000 of them).
fn parse_local_fast(text: &str) -> Option<NaiveDateTime> {
    let b = text.as_bytes();
    if b.len() != 16 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + (c - b'0') as u32))
    };
    let date = NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    date.and_hms_opt(num(11..13)?, num(14..16)?, 0)
}

/// Parses a time of day, `07:00` or `07:00:30`.
pub fn parse_time_of_day(text: &str) -> Result<NaiveTime, String> {
    NaiveTime::parse_from_str(text, "%H:%M")
        .or_else(|_| NaiveTime::parse_from_str(text, "%H:%M:%S"))
        .map_err(|_| format!("`{text}` is not a time of day; write it as `07:00`"))
}

/// A command-line instant, and a note when a local time had to be adjusted (it fell in a DST
/// gap, or happens twice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instant {
    pub at: DateTime<Utc>,
    pub note: Option<String>,
}

/// Parses a command-line instant: RFC 3339 (`2026-05-16T10:00:00Z`), or a local time read in `tz`.
pub fn parse_instant(text: &str, tz: Option<Zone>) -> Result<DateTime<Utc>, String> {
    parse_instant_noted(text, tz).map(|i| i.at)
}

/// [`parse_instant`], saying how a local time in a gap or an overlap was read.
pub fn parse_instant_noted(text: &str, tz: Option<Zone>) -> Result<Instant, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(Instant { at: t.with_timezone(&Utc), note: None });
    }
    match (parse_local(text), tz) {
        (Ok(local), Some(tz)) => {
            let (at, fit) = tz.resolve(local);
            let shown = |t: NaiveDateTime| t.format("%H:%M").to_string();
            let note = match fit {
                Fit::Exact => None,
                Fit::Gap => Some(format!(
                    "{} does not exist on {} in {} (the clocks go forward); using {} {}",
                    shown(local),
                    local.date(),
                    tz.name(),
                    shown(tz.local(at)),
                    tz.abbreviation(at)
                )),
                Fit::Fold => Some(format!(
                    "{} happens twice on {} in {} (the clocks go back); using the first, {} {} ({})",
                    shown(local),
                    local.date(),
                    tz.name(),
                    shown(tz.local(at)),
                    tz.abbreviation(at),
                    utc_string(at)
                )),
            };
            Ok(Instant { at, note })
        }
        (Ok(_), None) => Err(format!("`{text}` has no UTC offset: add one (`{text}Z`) or pass --tz ZONE")),
        (Err(_), _) => {
            Err(format!("`{text}` is not a time: use RFC 3339 (`2026-05-16T10:00:00Z`) or a local time with --tz"))
        }
    }
}

/// RFC 3339 in UTC with a `Z`, to the second: the one format machine output uses.
pub fn utc_string(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Local time with its offset and zone abbreviation, for people.
pub fn local_string(t: DateTime<Utc>, tz: Zone) -> String {
    use chrono::format::{Item, StrftimeItems};
    static ITEMS: std::sync::LazyLock<Vec<Item<'static>>> =
        std::sync::LazyLock::new(|| StrftimeItems::new("%Y-%m-%d %H:%M").collect());
    format!("{} {}", tz.local(t).format_with_items(ITEMS.iter()), tz.abbreviation(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(s: &str) -> NaiveDateTime {
        parse_local(s).unwrap()
    }

    #[test]
    fn spring_forward_gap_moves_to_the_first_valid_instant() {
        let ny = parse_zone("America/New_York").unwrap();
        // 2026-03-08 02:00 EST → 03:00 EDT; 02:30 does not exist.
        assert_eq!(utc_string(resolve_local(ny, local("2026-03-08T02:30"))), "2026-03-08T07:00:00Z");
        assert_eq!(utc_string(resolve_local(ny, local("2026-03-08T03:00"))), "2026-03-08T07:00:00Z");
        let london = parse_zone("Europe/London").unwrap();
        assert_eq!(utc_string(resolve_local(london, local("2026-03-29T01:15"))), "2026-03-29T01:00:00Z");
    }

    #[test]
    fn fall_back_overlap_takes_the_earlier_instant() {
        let ny = parse_zone("America/New_York").unwrap();
        // 2026-11-01 01:30 happens twice: 05:30Z (EDT) and 06:30Z (EST).
        assert_eq!(utc_string(resolve_local(ny, local("2026-11-01T01:30"))), "2026-11-01T05:30:00Z");
        let london = parse_zone("Europe/London").unwrap();
        assert_eq!(utc_string(resolve_local(london, local("2026-10-25T01:30"))), "2026-10-25T00:30:00Z");
    }

    #[test]
    fn offsets_follow_each_date() {
        let london = parse_zone("Europe/London").unwrap();
        assert_eq!(utc_string(resolve_local(london, local("2026-01-10T09:00"))), "2026-01-10T09:00:00Z");
        assert_eq!(utc_string(resolve_local(london, local("2026-07-10T09:00"))), "2026-07-10T08:00:00Z");
    }

    #[test]
    fn unknown_zones_are_errors_with_a_hint() {
        assert!(parse_zone("Mars/Olympus").unwrap_err().contains("unknown time zone `Mars/Olympus`"));
        assert!(parse_zone("europe/london").unwrap_err().contains("did you mean `Europe/London`"));
        assert!(parse_zone("UTC").is_ok());
    }

    #[test]
    fn instants_need_an_offset_or_a_zone() {
        assert_eq!(utc_string(parse_instant("2026-05-16T10:00:00+02:00", None).unwrap()), "2026-05-16T08:00:00Z");
        assert!(parse_instant("2026-05-16T10:00", None).unwrap_err().contains("--tz"));
        let london = parse_zone("Europe/London").unwrap();
        assert_eq!(utc_string(parse_instant("2026-05-16T10:00", Some(london)).unwrap()), "2026-05-16T09:00:00Z");
        assert!(parse_local("2026-05-16T10:00Z").unwrap_err().contains("offset"));
        assert_eq!(parse_local("2026-05-16T10:07").unwrap().to_string(), "2026-05-16 10:07:00");
        assert!(parse_local("2026-02-30T10:00").is_err());
        assert!(parse_local("2026-05-16T25:00").is_err());
    }
}

//! Zones given as explicit transitions: how a VTIMEZONE whose offset changed at given instants
//! (observances without RRULE, or RRULEs that ended) is kept exactly, not collapsed to one rule.
//!
//! The zone is written as text, so that it can be stored by name (the calendar cache) and
//! written into `freeze.toml` by `sluice freeze import`: a POSIX TZ string for the time before
//! the first change, then for each change `@` its instant in UTC and the POSIX TZ string in force
//! from then on — `<+1130>-11:30 @2023-12-31T12:30:00Z <+12>-12 @2024-05-04T15:00:00Z <+10>-10`.
//! Every string but the last is a fixed offset; the last may carry a DST rule, which then
//! continues for every later year. The text becomes TZif data (RFC 8536, version 2) for jiff,
//! whose reader applies it as it applies the IANA database's own files.

use chrono::{DateTime, Utc};
use jiff::tz::{Dst, TimeZone};
use jiff::Timestamp;

/// Whether `text` is a zone written as transitions (rather than a name or one POSIX string).
pub fn is_transitions(text: &str) -> bool {
    text.contains(" @")
}

/// One local time type: offset east of UTC, daylight saving or not, abbreviation.
#[derive(Clone, PartialEq, Eq)]
struct TimeType {
    offset: i32,
    dst: bool,
    abbreviation: String,
}

fn time_type(posix: &TimeZone, at: Timestamp) -> TimeType {
    let info = posix.to_offset_info(at);
    TimeType {
        offset: info.offset().seconds(),
        dst: info.dst() == Dst::Yes,
        abbreviation: info.abbreviation().to_string(),
    }
}

fn posix(text: &str) -> Result<TimeZone, String> {
    TimeZone::posix(text).map_err(|e| format!("`{text}` is not a POSIX TZ string: {e}"))
}

/// The zone `text` describes (see the module documentation).
pub fn zone(text: &str) -> Result<TimeZone, String> {
    let tokens: Vec<&str> = text.split(' ').collect();
    if tokens.len().is_multiple_of(2) {
        return Err(format!("`{text}`: expected `POSIX @INSTANT POSIX …`, a POSIX TZ string after every instant"));
    }
    let footer = tokens[tokens.len() - 1];
    if let Some(rule) = tokens[..tokens.len() - 1].iter().find(|t| t.contains(',')) {
        return Err(format!("`{text}`: only the last POSIX TZ string may have a DST rule (`{rule}`)"));
    }
    let first = posix(tokens[0])?;
    let mut types = vec![time_type(&first, Timestamp::MIN)];
    let mut transitions: Vec<(i64, u8)> = Vec::new();
    for pair in tokens[1..].chunks(2) {
        let (at, rule) = (pair[0], pair[1]);
        let instant = at
            .strip_prefix('@')
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| format!("`{at}` in `{text}` is not `@` and an RFC 3339 instant"))?;
        if transitions.last().is_some_and(|(last, _)| *last >= instant.timestamp()) {
            return Err(format!("`{text}`: the instants must increase"));
        }
        let stamp = Timestamp::from_second(instant.timestamp()).map_err(|e| format!("`{at}`: {e}"))?;
        let kind = time_type(&posix(rule)?, stamp);
        let index = match types.iter().position(|t| *t == kind) {
            Some(i) => i,
            None => {
                types.push(kind);
                types.len() - 1
            }
        };
        let index = u8::try_from(index).map_err(|_| format!("`{text}`: more than 255 kinds of local time"))?;
        transitions.push((instant.timestamp(), index));
    }
    posix(footer)?;
    TimeZone::tzif(text, &tzif(&transitions, &types, footer)).map_err(|e| format!("`{text}`: {e}"))
}

/// TZif version 2 data: a minimal version 1 block (readers of version 2 skip it), the
/// transitions with 64-bit times, and the footer.
fn tzif(transitions: &[(i64, u8)], types: &[TimeType], footer: &str) -> Vec<u8> {
    let mut designations = Vec::new();
    let mut at = Vec::new();
    for t in types {
        at.push(designations.len() as u8);
        designations.extend_from_slice(t.abbreviation.as_bytes());
        designations.push(0);
    }
    let header = |out: &mut Vec<u8>, timecnt: usize, typecnt: usize, charcnt: usize| {
        out.extend_from_slice(b"TZif2");
        out.extend_from_slice(&[0; 15]);
        for count in [0, 0, 0, timecnt, typecnt, charcnt] {
            out.extend_from_slice(&(count as u32).to_be_bytes());
        }
    };
    let mut out = Vec::new();
    header(&mut out, 0, 1, 1);
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
    header(&mut out, transitions.len(), types.len(), designations.len());
    for (time, _) in transitions {
        out.extend_from_slice(&time.to_be_bytes());
    }
    out.extend(transitions.iter().map(|(_, kind)| *kind));
    for (t, index) in types.iter().zip(at) {
        out.extend_from_slice(&t.offset.to_be_bytes());
        out.extend_from_slice(&[u8::from(t.dst), index]);
    }
    out.extend_from_slice(&designations);
    out.push(b'\n');
    out.extend_from_slice(footer.as_bytes());
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn offset_at(tz: &TimeZone, instant: &str) -> i32 {
        tz.to_offset(instant.parse().unwrap()).seconds() / 3600
    }

    #[test]
    fn each_change_holds_from_its_instant_and_the_last_rule_continues() {
        let tz = zone("<+11>-11 @2024-01-01T00:00:00Z <+12>-12 @2024-05-04T15:00:00Z <+10>-10").unwrap();
        assert_eq!(offset_at(&tz, "2023-12-31T23:59:59Z"), 11);
        assert_eq!(offset_at(&tz, "2024-01-01T00:00:00Z"), 12);
        assert_eq!(offset_at(&tz, "2024-05-04T14:59:59Z"), 12);
        assert_eq!(offset_at(&tz, "2024-05-04T15:00:00Z"), 10);
        assert_eq!(offset_at(&tz, "2090-07-01T00:00:00Z"), 10);
        // Wall clock to instant: noon on 2024-06-01 is at +10.
        let noon = tz.to_ambiguous_timestamp(date(2024, 6, 1).at(12, 0, 0, 0)).compatible().unwrap();
        assert_eq!(noon.to_string(), "2024-06-01T02:00:00Z");
        assert_eq!(tz.to_offset_info(noon).abbreviation(), "+10");
        // A DST rule as the last string continues every year.
        let tz = zone("EST5 @2007-03-11T07:00:00Z EST5EDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(offset_at(&tz, "2006-07-01T12:00:00Z"), -5);
        assert_eq!(offset_at(&tz, "2100-07-01T12:00:00Z"), -4);
        assert_eq!(offset_at(&tz, "2100-12-01T12:00:00Z"), -5);
    }

    #[test]
    fn malformed_transitions_are_errors() {
        assert!(zone("<+11>-11 @2024-01-01T00:00:00Z").unwrap_err().contains("after every instant"));
        assert!(zone("<+11>-11 2024-01-01 <+12>-12").unwrap_err().contains("RFC 3339"));
        let backwards = "<+11>-11 @2024-05-01T00:00:00Z <+12>-12 @2024-01-01T00:00:00Z <+10>-10";
        assert!(zone(backwards).unwrap_err().contains("must increase"));
        let inner_rule = "EST5EDT,M3.2.0,M11.1.0 @2024-01-01T00:00:00Z <+12>-12 @2024-05-01T00:00:00Z <+10>-10";
        assert!(zone(inner_rule).unwrap_err().contains("only the last"));
        let middle = "<+11>-11 @2024-01-01T00:00:00Z EST5EDT,M3.2.0,M11.1.0 @2024-05-01T00:00:00Z <+10>-10";
        assert!(zone(middle).unwrap_err().contains("only the last"));
        assert!(zone("Mars @2024-01-01T00:00:00Z <+12>-12").unwrap_err().contains("not a POSIX TZ string"));
        assert!(is_transitions("<+11>-11 @2024-01-01T00:00:00Z <+12>-12"));
        assert!(!is_transitions("EST5EDT,M3.2.0,M11.1.0"));
    }
}

//! Hours a deploy may start in, for `freeze next-open --within "Mon-Fri 09:00-17:00"`: "when
//! can I deploy during staffed hours?". Outside them a deploy counts as blocked, as inside a
//! deny window.
//!
//! The text is one or more `DAYS START-END` separated by `;`, days a comma list of `Mon` … `Sun`
//! or ranges (`Mon-Fri`, `Fri-Mon`), times `HH:MM` on the wall clock of the zone given (`END`
//! may be `24:00`; one not after `START` runs into the next day): `Mon-Thu 09:00-17:00; Fri
//! 09:00-12:00`.

use super::zone::Zone;
use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc, Weekday};

#[derive(Clone, Debug)]
pub struct Within {
    /// As written, for messages.
    pub text: String,
    pub zone: Zone,
    spans: Vec<Span>,
}

#[derive(Clone, Debug)]
struct Span {
    days: [bool; 7],
    start: NaiveTime,
    /// From `start`, on the wall clock.
    length: Duration,
}

/// `Mon`, `monday`, `Tues`: a day's name or its start, at least three letters.
fn day(text: &str) -> Option<Weekday> {
    let text = text.trim().to_ascii_lowercase();
    let names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
    let i = names.iter().position(|n| text.len() >= 3 && n.starts_with(&text))?;
    Weekday::try_from(i as u8).ok()
}

fn time(text: &str) -> Option<(NaiveTime, bool)> {
    if text == "24:00" {
        return Some((NaiveTime::MIN, true));
    }
    NaiveTime::parse_from_str(text, "%H:%M").ok().map(|t| (t, false))
}

impl Within {
    pub fn parse(text: &str, zone: Zone) -> Result<Within, String> {
        let example = "write e.g. \"Mon-Fri 09:00-17:00\" or \"Mon-Thu 09:00-17:00; Fri 09:00-12:00\"";
        let mut spans = Vec::new();
        for group in text.split(';').map(str::trim) {
            let (days_text, hours) =
                group.rsplit_once(' ').ok_or_else(|| format!("`{group}`: days and hours; {example}"))?;
            let mut days = [false; 7];
            for item in days_text.split(',') {
                let (first, last) = match item.split_once('-') {
                    Some((a, b)) => (a, b),
                    None => (item, item),
                };
                let (first, last) = day(first)
                    .zip(day(last))
                    .ok_or_else(|| format!("`{item}` is not a day or a range of days (Mon … Sun); {example}"))?;
                let mut d = first;
                loop {
                    days[d.num_days_from_monday() as usize] = true;
                    if d == last {
                        break;
                    }
                    d = d.succ();
                }
            }
            let (from, to) = hours.split_once('-').ok_or_else(|| format!("`{hours}` is not START-END; {example}"))?;
            let bad = |t: &str| format!("`{t}` is not a time of day (09:00, or 24:00 for an end); {example}");
            let (start, _) = time(from.trim()).filter(|(_, end_only)| !end_only).ok_or_else(|| bad(from))?;
            let (end, midnight) = time(to.trim()).ok_or_else(|| bad(to))?;
            let mut length = if midnight { Duration::days(1) - (start - NaiveTime::MIN) } else { end - start };
            if length <= Duration::zero() {
                length += Duration::days(1);
            }
            spans.push(Span { days, start, length });
        }
        Ok(Within { text: text.to_string(), zone, spans })
    }

    /// The hours within `[from, to)`, as instants (not merged).
    pub fn intervals(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let tz = self.zone;
        let (first, last) = (tz.local(from).date() - Duration::days(1), tz.local(to).date());
        let mut out = Vec::new();
        let mut date = first;
        while date <= last {
            for span in &self.spans {
                if span.days[date.weekday().num_days_from_monday() as usize] {
                    let start = date.and_time(span.start);
                    let (s, e) = (tz.instant(start), tz.instant(start + span.length));
                    if s < to && e > from {
                        out.push((s.max(from), e.min(to)));
                    }
                }
            }
            date += Duration::days(1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn staffed_hours_are_wall_clock_hours_on_the_days_named() {
        let london = Zone::named("Europe/London").unwrap();
        let w = Within::parse("Mon-Fri 09:00-17:00", london).unwrap();
        // Friday 2026-03-27 (GMT) and Monday 2026-03-30 (BST, after the clocks went forward).
        let got = w.intervals(t("2026-03-27T00:00:00Z"), t("2026-03-31T00:00:00Z"));
        assert_eq!(
            got,
            [
                (t("2026-03-27T09:00:00Z"), t("2026-03-27T17:00:00Z")),
                (t("2026-03-30T08:00:00Z"), t("2026-03-30T16:00:00Z")),
            ]
        );
        let w = Within::parse("fri-mon 22:00-02:00; Wed 10:00-24:00", Zone::utc()).unwrap();
        let got = w.intervals(t("2026-03-25T00:00:00Z"), t("2026-03-28T00:00:00Z"));
        assert_eq!(
            got,
            [
                (t("2026-03-25T10:00:00Z"), t("2026-03-26T00:00:00Z")),
                (t("2026-03-27T22:00:00Z"), t("2026-03-28T00:00:00Z"))
            ]
        );
    }

    #[test]
    fn malformed_hours_say_how_to_write_them() {
        for bad in ["Mon-Fri", "Mon-Fry 09:00-17:00", "Mon 9-17", "Mon 24:00-17:00", "Mon 09:00"] {
            let e = Within::parse(bad, Zone::utc()).unwrap_err();
            assert!(e.contains("write e.g. \"Mon-Fri 09:00-17:00\""), "{bad}: {e}");
        }
    }
}

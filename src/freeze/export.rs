//! iCalendar export (`sluice freeze export`): the expanded windows, to subscribe to.

use super::calendar::{Calendar, Kind};
use super::expand::Occurrence;
use super::time::utc_string;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// A UID that is the same every time the same occurrence is exported and differs between any
/// two occurrences: window, event and start identify an occurrence.
fn export_uid(window: &str, event: Option<&str>, start: DateTime<Utc>) -> String {
    let key = format!("{window}\0{}\0{}", event.unwrap_or(""), utc_string(start));
    let digest = hex::encode(&Sha256::digest(key.as_bytes())[..12]);
    let readable: String =
        window.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{readable}-{}-{digest}@sluice", utc_string(start).replace([':', '-'], ""))
}

/// Writes occurrences as an iCalendar document: one VEVENT per occurrence, in UTC.
pub fn export(calendar: &Calendar, occurrences: &[Occurrence], stamp: DateTime<Utc>) -> String {
    let mut out = icalendar::Calendar::empty();
    out.append_property(("VERSION", "2.0"));
    out.append_property(("PRODID", format!("-//Sluice//Sluice {}//EN", env!("CARGO_PKG_VERSION")).as_str()));
    out.append_property(("CALSCALE", "GREGORIAN"));
    out.name("Sluice change freezes");
    let mut seen = std::collections::HashSet::new();
    for o in occurrences {
        let window = &calendar.windows[o.window];
        let event = o.event.map(|e| &calendar.events[e]);
        let uid = export_uid(&window.id, event.map(|e| e.id.as_str()), o.start);
        // The same occurrence listed twice (an event matched by two globs of one window) is one VEVENT.
        if !seen.insert(uid.clone()) {
            continue;
        }
        let title = match (window.kind, event) {
            (Kind::Deny, Some(e)) => format!("Change freeze: {} ({})", window.id, e.name),
            (Kind::Deny, None) => format!("Change freeze: {}", window.id),
            (Kind::Allow, _) => format!("Deploy window: {}", window.id),
        };
        let mut description = String::new();
        if !window.reason.is_empty() {
            description.push_str(&window.reason);
            description.push('\n');
        }
        description.push_str(&format!(
            "kind: {}\nenvironments: {}\nservices: {}",
            window.kind.as_str(),
            window.environments.describe(),
            window.services.describe()
        ));
        if let Some(e) = event {
            description.push_str(&format!("\nevent: {}", e.id));
        }
        use icalendar::{Component as _, EventLike as _};
        out.push(
            icalendar::Event::new()
                .uid(&uid)
                .summary(&title)
                .description(&description)
                .starts(o.start)
                .ends(o.end)
                .timestamp(stamp)
                .add_property("CATEGORIES", window.kind.as_str())
                .done(),
        );
    }
    out.done().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freeze::calendar::parse;
    use crate::freeze::time::parse_instant;
    use std::path::Path;

    fn t(s: &str) -> DateTime<Utc> {
        parse_instant(s, None).unwrap()
    }

    #[test]
    fn export_uids_are_unique_and_stable_and_prodid_names_sluice() {
        // Issue 12, case 6: one glob-anchored window over two events with the same start.
        let text = "[[event]]\nid = \"a\"\nstart = \"2026-05-01T00:00\"\nend = \"2026-05-02T00:00\"\n\n[[event]]\nid = \"b\"\nstart = \"2026-05-01T00:00\"\nend = \"2026-05-03T00:00\"\n\n[[window]]\nid = \"w\"\nkind = \"deny\"\nevent = \"*\"\n";
        let cal = parse(Path::new("f.toml"), text).unwrap();
        let occ = cal.occurrences(t("2026-01-01T00:00:00Z"), t("2027-01-01T00:00:00Z"), |_| true).unwrap();
        let first = export(&cal, &occ, t("2026-01-01T00:00:00Z"));
        let uids: Vec<&str> = first.lines().filter_map(|l| l.strip_prefix("UID:")).collect();
        assert_eq!(uids.len(), 2);
        assert_ne!(uids[0], uids[1]);
        assert_eq!(
            export(&cal, &occ, t("2026-02-01T00:00:00Z")).lines().filter(|l| l.starts_with("UID:")).collect::<Vec<_>>(),
            first.lines().filter(|l| l.starts_with("UID:")).collect::<Vec<_>>()
        );
        assert!(first.contains(&format!("PRODID:-//Sluice//Sluice {}//EN", env!("CARGO_PKG_VERSION"))), "{first}");
    }
}

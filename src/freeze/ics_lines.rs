//! The content lines of an iCalendar file (RFC 5545 §3.1), checked before the `icalendar`
//! crate's parser reads it, so that a malformed file is reported in iCalendar terms at the
//! file's own line: the crate's errors name its parser combinators (`Many0`, `Eof`, `Satisfy`)
//! and count lines after unfolding.
//!
//! A content line is `name *(";" param) ":" value`, folded over physical lines that start with
//! a space or a tab; a name is letters, digits and `-`; a parameter is `name=value[,value…]`,
//! a value plain text without `"`, `;`, `:` and `,`, or a quoted string. `BEGIN:`/`END:` nest
//! and match, and every line is inside a component.

/// A problem at a 1-based physical line.
#[derive(Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

/// The logical (unfolded) lines with the physical line each starts on.
pub fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, physical) in text.split('\n').enumerate() {
        let physical = physical.strip_suffix('\r').unwrap_or(physical);
        match physical.strip_prefix([' ', '\t']) {
            Some(rest) if !out.is_empty() => out.last_mut().map_or((), |(_, l)| l.push_str(rest)),
            _ => out.push((i + 1, physical.to_string())),
        }
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// Shown in a message: the line, shortened.
fn quoted(line: &str) -> String {
    let short: String = line.chars().take(60).collect();
    if short.len() < line.len() {
        format!("`{short}…`")
    } else {
        format!("`{short}`")
    }
}

/// The name and value of one content line, or what is wrong with it.
fn content_line(line: &str) -> Result<(&str, &str), String> {
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() {
        return Err(format!("{} is not an iCalendar content line: it should start with a property name", quoted(line)));
    }
    let mut rest = &line[name_end..];
    loop {
        match rest.chars().next() {
            Some(':') => return Ok((name, &rest[1..])),
            Some(';') => rest = parameter(name, &rest[1..])?,
            Some(c) => {
                return Err(format!(
                    "{}: a property name is letters, digits and `-`, followed by `;` parameters or `:` and the value (found `{c}` after `{name}`)",
                    quoted(line)
                ))
            }
            None => return Err(format!("{}: the property `{name}` has no `:` before its value", quoted(line))),
        }
    }
}

/// One `;`-introduced parameter (after the `;`); returns what follows it.
fn parameter<'a>(property: &str, text: &'a str) -> Result<&'a str, String> {
    let name_end = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
    let name = &text[..name_end];
    let Some(mut rest) = text[name_end..].strip_prefix('=').filter(|_| !name.is_empty()) else {
        return Err(format!(
            "a parameter of `{property}` is not NAME=VALUE (at `{}`)",
            text.chars().take(30).collect::<String>()
        ));
    };
    loop {
        if let Some(quoted_value) = rest.strip_prefix('"') {
            let close = quoted_value.find('"').ok_or_else(|| {
                format!("the quoted value of parameter `{name}` of `{property}` is never closed (no second `\"`)")
            })?;
            rest = &quoted_value[close + 1..];
        } else {
            let end = rest.find(['"', ';', ':', ',']).unwrap_or(rest.len());
            if rest[end..].starts_with('"') {
                return Err(format!(
                    "parameter `{name}` of `{property}`: a `\"` inside a value that does not start with one"
                ));
            }
            rest = &rest[end..];
        }
        match rest.strip_prefix(',') {
            Some(more) => rest = more,
            None => return Ok(rest),
        }
    }
}

/// The properties Sluice reads (with BEGIN and END): a malformed line that may be one of them
/// could hide a freeze and fails the import; any other is skipped with a note (Apple's
/// Confluence exports fold lines without the leading space, leaving `l Latham;CUTYPE=…`).
const READ: &[&str] = &[
    "BEGIN",
    "END",
    "UID",
    "DTSTART",
    "DTEND",
    "DURATION",
    "RRULE",
    "RDATE",
    "EXDATE",
    "EXRULE",
    "RECURRENCE-ID",
    "STATUS",
    "SUMMARY",
    "TZID",
    "TZOFFSETFROM",
    "TZOFFSETTO",
    "TZNAME",
    "X-WR-TIMEZONE",
];

/// Checks every content line and the nesting of components; returns the malformed lines that
/// were skipped (they name no property Sluice reads).
pub fn check(text: &str) -> Result<Vec<LineError>, LineError> {
    let lines = logical_lines(text);
    let err = |line: usize, message: String| Err(LineError { line, message });
    if text.starts_with([' ', '\t']) {
        return err(1, "the file starts with a folded line (a space or tab begins a continuation)".into());
    }
    // A bare component (`BEGIN:VEVENT` … without a VCALENDAR around it) is read too, as before.
    let begins = |l: &str| l.get(..6).is_some_and(|b| b.eq_ignore_ascii_case("BEGIN:"));
    let first = lines.iter().find(|(_, l)| !l.trim().is_empty());
    if let Some((line, content)) = first.filter(|(_, l)| !begins(l)) {
        return err(
            *line,
            format!("not an iCalendar file: it must start with BEGIN:VCALENDAR, not {}", quoted(content)),
        );
    }
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut components = 0;
    let mut skipped = Vec::new();
    for (line, content) in &lines {
        if content.trim().is_empty() {
            continue;
        }
        let (name, value) = match content_line(content) {
            Ok(parsed) => parsed,
            Err(message) => {
                let leading = &content[..content.find(|c: char| !is_name_char(c)).unwrap_or(content.len())];
                if READ.iter().any(|p| p.eq_ignore_ascii_case(leading)) || (leading.is_empty() && open.is_empty()) {
                    return err(*line, message);
                }
                skipped.push(LineError {
                    line: *line,
                    message: format!("{message}; skipped, as it names no property Sluice reads"),
                });
                continue;
            }
        };
        let component = value.trim().to_ascii_uppercase();
        if name.eq_ignore_ascii_case("BEGIN") {
            components += usize::from(open.is_empty());
            open.push((component, *line));
        } else if name.eq_ignore_ascii_case("END") {
            match open.pop() {
                Some((begun, _)) if begun == component => {}
                Some((begun, at)) => {
                    return err(
                        *line,
                        format!("END:{component} closes BEGIN:{begun} of line {at}; END:{begun} is missing before it"),
                    )
                }
                None => return err(*line, format!("END:{component} without a BEGIN:{component}")),
            }
        } else if open.is_empty() {
            return err(*line, format!("{} is outside BEGIN:VCALENDAR … END:VCALENDAR", quoted(content)));
        }
    }
    if let Some((begun, at)) = open.last() {
        return err(*at, format!("BEGIN:{begun} is never closed (no END:{begun} before the end of the file)"));
    }
    if components == 0 {
        return err(1, "no BEGIN:VCALENDAR: this is not an iCalendar file".into());
    }
    Ok(skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (usize, String) {
        let e = check(&text.replace('\n', "\r\n")).unwrap_err();
        (e.line, e.message)
    }

    #[test]
    fn problems_are_named_in_icalendar_terms_at_the_files_own_line() {
        // Line 6 is the fourth logical line: the two folded lines before it count.
        let (line, m) = problem(
            "BEGIN:VCALENDAR\nDESCRIPTION:one\n two\n three\nBEGIN:VEVENT\nSUMMARY\nEND:VEVENT\nEND:VCALENDAR\n",
        );
        // (SUMMARY is read: the event's name.)
        assert_eq!((line, m.as_str()), (6, "`SUMMARY`: the property `SUMMARY` has no `:` before its value"));
        let (line, m) =
            problem("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART :20260101T000000Z\nEND:VEVENT\nEND:VCALENDAR\n");
        assert_eq!(line, 3);
        assert!(
            m.contains("a property name is letters, digits and `-`") && m.contains("found ` ` after `DTSTART`"),
            "{m}"
        );
        let (line, m) = problem("BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:a\nEND:VCALENDAR\n");
        assert_eq!(
            (line, m.as_str()),
            (4, "END:VCALENDAR closes BEGIN:VEVENT of line 2; END:VEVENT is missing before it")
        );
        let (line, m) = problem(
            "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;TZID=\"Eastern:20260101T000000\nEND:VEVENT\nEND:VCALENDAR\n",
        );
        assert_eq!(line, 3);
        assert!(m.contains("quoted value of parameter `TZID` of `DTSTART` is never closed"), "{m}");
        let (line, m) =
            problem("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;TZID:20260101T000000\nEND:VEVENT\nEND:VCALENDAR\n");
        assert_eq!(line, 3);
        assert!(m.contains("a parameter of `DTSTART` is not NAME=VALUE"), "{m}");
        assert_eq!(problem("hello\n").1, "not an iCalendar file: it must start with BEGIN:VCALENDAR, not `hello`");
        assert_eq!(
            problem("\nX:1\n"),
            (2, "not an iCalendar file: it must start with BEGIN:VCALENDAR, not `X:1`".into())
        );
        let (line, m) = problem("BEGIN:VCALENDAR\nEND:VCALENDAR\nX:1\n");
        assert_eq!((line, m.as_str()), (3, "`X:1` is outside BEGIN:VCALENDAR … END:VCALENDAR"));
        let (line, m) = problem("BEGIN:VCALENDAR\nEND:VCALENDAR\nBEGIN:X\n");
        assert_eq!((line, m.as_str()), (3, "BEGIN:X is never closed (no END:X before the end of the file)"));
        let (line, m) = problem("BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:a\n");
        assert_eq!((line, m.as_str()), (2, "BEGIN:VEVENT is never closed (no END:VEVENT before the end of the file)"));
        assert_eq!(problem("").1, "no BEGIN:VCALENDAR: this is not an iCalendar file");
    }

    #[test]
    fn valid_files_pass_with_folds_quotes_and_lists() {
        let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART;TZID=\"America/New_York\":20260101T090000\r\n\
ATTENDEE;MEMBER=\"mailto:a@x\",\"mailto:b@x\";ROLE=CHAIR:mailto:c@x\r\nDESCRIPTION:long\r\n\ttext: with colons\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n\r\n";
        assert_eq!(check(text), Ok(Vec::new()));
        // A bare component, as some tools write one event.
        assert_eq!(check("BEGIN:VEVENT\r\nUID:a\r\nEND:VEVENT\r\n"), Ok(Vec::new()));
        // A line broken without the leading space, in a property Sluice does not read: skipped.
        let broken = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nORGANIZER;CN=Danie\r\nl Latham;CUTYPE=INDIVIDUAL:mailto:d@x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let skipped = check(broken).unwrap();
        assert_eq!(skipped.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 4]);
        assert!(skipped[1].message.ends_with("skipped, as it names no property Sluice reads"), "{skipped:?}");
        // The same in DTSTART fails the import.
        assert_eq!(check(&broken.replace("ORGANIZER", "DTSTART")).unwrap_err().line, 3);
        assert_eq!(logical_lines(text)[6], (7, "DESCRIPTION:longtext: with colons".to_string()));
    }
}

//! `--format github`: GitHub Actions workflow commands, one annotation per finding
//! (`::error file=…,line=…::message`), shown on the pull request's diff.
//!
//! Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message `%`, CR
//! and LF are percent-encoded; in properties also `:` and `,`, which would otherwise end the
//! property.

use crate::finding::{Finding, Report, Severity};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for finding in &report.findings {
        out.push_str(&command(finding));
        out.push('\n');
    }
    for finding in &report.suppressed {
        out.push_str(&suppressed_command(finding));
        out.push('\n');
    }
    for note in &report.notes {
        out.push_str(&plain_line(note));
        out.push('\n');
    }
    out.push_str(&super::table::summary_line(report));
    out.push('\n');
    out
}

fn command(finding: &Finding) -> String {
    let name = match finding.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let mut properties = vec![
        ("file", finding.file.clone()),
        ("line", finding.line.to_string()),
        ("endLine", finding.end_line.max(finding.line).to_string()),
    ];
    // GitHub only accepts columns on single-line annotations.
    if finding.end_line <= finding.line {
        properties.push(("col", finding.column.to_string()));
        properties.push(("endColumn", finding.end_column.max(finding.column).to_string()));
    }
    properties.push(("title", format!("sluice {}", finding.rule)));
    let properties =
        properties.iter().map(|(key, value)| format!("{key}={}", escape_property(value))).collect::<Vec<_>>().join(",");
    let mut message = finding.message.clone();
    if !finding.help.is_empty() {
        message.push('\n');
        message.push_str(&finding.help);
    }
    format!("::{name} {properties}::{}", escape_data(&message))
}

/// A finding a `sluice:ignore` of the change silenced: a notice on its line, so the diff shows
/// what was waved through and why.
fn suppressed_command(finding: &Finding) -> String {
    let properties = [
        ("file", finding.file.clone()),
        ("line", finding.line.to_string()),
        ("title", format!("sluice {} (suppressed by this change)", finding.rule)),
    ];
    let properties =
        properties.iter().map(|(key, value)| format!("{key}={}", escape_property(value))).collect::<Vec<_>>().join(",");
    let message = format!(
        "{}\nThe finding ({}): {}",
        finding.suppressed_text().unwrap_or_default(),
        finding.severity,
        finding.message
    );
    format!("::notice {properties}::{}", escape_data(&message))
}

/// The message part of a workflow command.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A note is printed as a plain log line, which the runner does not decode: `%` stays as it is.
/// It is kept to one line and never starts with `::`, so text from a file name cannot become a
/// workflow command.
fn plain_line(text: &str) -> String {
    let line = text.replace(['\r', '\n'], " ");
    if line.starts_with("::") {
        format!(" {line}")
    } else {
        line
    }
}

/// A `key=value` property of a workflow command.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_escapes_percent_cr_and_lf_but_not_colon_or_comma() {
        assert_eq!(escape_data("100% done\r\nnext: a, b"), "100%25 done%0D%0Anext: a, b");
    }

    #[test]
    fn properties_also_escape_colon_and_comma() {
        assert_eq!(escape_property("a:b,c%d\ne"), "a%3Ab%2Cc%25d%0Ae");
    }

    #[test]
    fn percent_is_escaped_first_so_escapes_are_not_doubled() {
        assert_eq!(escape_data("%0A"), "%250A");
    }

    #[test]
    fn a_file_name_with_comma_and_colon_stays_one_property() {
        let finding = Finding::new("r", Severity::Warning, "q/a,b:c.sql", "bad: really, bad\nline two").at(2, 3, 2, 9);
        assert_eq!(
            command(&finding),
            "::warning file=q/a%2Cb%3Ac.sql,line=2,endLine=2,col=3,endColumn=9,title=sluice r::bad: really, bad%0Aline two"
        );
    }

    #[test]
    fn notes_are_plain_single_lines_that_cannot_start_a_command() {
        assert_eq!(plain_line("100.00% understood"), "100.00% understood");
        assert_eq!(plain_line("db/a\n::error::x.sql: 3 statements"), "db/a ::error::x.sql: 3 statements");
        assert_eq!(plain_line("::stop-commands::t"), " ::stop-commands::t");
    }

    #[test]
    fn multi_line_annotations_have_no_columns() {
        let finding = Finding::new("r", Severity::Info, "q.sql", "m").at(2, 3, 5, 9);
        assert_eq!(command(&finding), "::notice file=q.sql,line=2,endLine=5,title=sluice r::m");
    }
}

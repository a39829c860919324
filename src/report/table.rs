//! `--format table`: findings grouped by file, each with its source excerpt and a caret,
//! then a summary line. Colour only when the caller asks (a terminal without NO_COLOR).

use super::options::RenderOptions;
use crate::finding::{Finding, Report, Severity};
use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

pub fn render(report: &Report, options: &RenderOptions) -> String {
    let renderer = if options.color { Renderer::styled() } else { Renderer::plain() };
    let mut out = String::new();
    for finding in &report.findings {
        out.push_str(&renderer.render(&[finding_group(finding, options)]));
        out.push_str("\n\n");
    }
    for finding in &report.suppressed {
        out.push_str(&suppressed_line(finding));
        out.push('\n');
    }
    for note in &report.notes {
        out.push_str(note);
        out.push('\n');
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    out
}

/// "db/migrations/2.sql:3: suppressed by this change: rule, line 3, reason: … — what it said".
pub fn suppressed_line(finding: &Finding) -> String {
    let text = finding.suppressed_text().unwrap_or_default();
    format!("{}:{}: {text} ({} {})", finding.file, finding.line, finding.severity, finding.message)
}

pub fn summary_line(report: &Report) -> String {
    let suppressed = match report.suppressed.len() {
        0 => String::new(),
        n => format!(" {n} finding(s) suppressed by this change."),
    };
    if report.findings.is_empty() {
        return format!("No findings.{suppressed}");
    }
    let files = report.findings.iter().map(|f| f.file.as_str()).collect::<std::collections::BTreeSet<_>>().len();
    format!(
        "{} error(s), {} warning(s), {} info in {} file(s).{suppressed}",
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info),
        files
    )
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::INFO,
    }
}

fn finding_group<'a>(finding: &'a Finding, options: &RenderOptions) -> Group<'a> {
    let level = level(finding.severity);
    let mut group = Group::with_title(level.primary_title(finding.message.as_str()).id(finding.rule.as_str()));
    match &finding.snippet {
        Some(snippet) if !snippet.text().is_empty() => {
            let span = byte_span(snippet.text(), snippet.first_line, snippet.first_column, finding);
            group = group.element(
                Snippet::source(snippet.text())
                    .line_start(snippet.first_line)
                    .path(finding.file.as_str())
                    .annotation(AnnotationKind::Primary.span(span)),
            );
        }
        // The column as shown: 1-based, like the line (annotate-snippets prints it as given).
        _ => {
            group = group.element(
                annotate_snippets::Origin::path(finding.file.as_str()).line(finding.line).char_column(finding.column),
            );
        }
    }
    if !finding.help.is_empty() {
        group = group.element(Level::HELP.message(finding.help.as_ref()));
    }
    if options.explain && !finding.facts.is_empty() {
        let facts = finding.facts.iter().map(|f| format!("{}: {}", f.name, f.value)).collect::<Vec<_>>().join("; ");
        group = group.element(Level::NOTE.message(format!("facts used: {facts}")));
    }
    group
}

/// The byte range in `text` (which starts at `first_line`, `first_column`) that the finding's
/// line/column range covers.
fn byte_span(text: &str, first_line: usize, first_column: usize, finding: &Finding) -> std::ops::Range<usize> {
    let offset = |line: usize, column: usize| -> Option<usize> {
        let index = line.checked_sub(first_line)?;
        let column = if index == 0 { (column + 1).saturating_sub(first_column) } else { column };
        let mut start = 0;
        for (i, l) in text.split_inclusive('\n').enumerate() {
            if i == index {
                let within = l
                    .char_indices()
                    .nth(column.saturating_sub(1))
                    .map(|(b, _)| b)
                    .unwrap_or(l.trim_end_matches('\n').len());
                return Some(start + within);
            }
            start += l.len();
        }
        None
    };
    let start = offset(finding.line, finding.column).unwrap_or(0);
    let end = offset(finding.end_line, finding.end_column).unwrap_or(text.len()).max(start);
    if end == start {
        // Underline at least one character so the caret shows.
        let next = text[start..].chars().next().map(|c| c.len_utf8()).unwrap_or(0);
        return start..start + next;
    }
    start..end
}

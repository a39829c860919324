//! `--format markdown`: the report for a pull-request comment or the job summary.
//!
//! A verdict line, counts by severity, then the errors, the warnings and the rest, each grouped
//! by file with their SQL excerpt and fix; long excerpts and facts fold into `<details>`. GitHub
//! rejects comments over 65,536 characters, so the whole report is kept under [`LIMIT`] bytes
//! (bytes ≥ characters, so the character limit holds too), ending with a note saying what was
//! cut: what is cut is the least severe, never an error for an info.

use super::options::{FailOn, RenderOptions};
use crate::error::{Error, Result};
use crate::finding::{Finding, Report, Severity};
use crate::rules;

/// Hard cap on the rendered report, in bytes.
pub const LIMIT: usize = 65_000;
/// Excerpts longer than this many lines fold into `<details>`.
const FOLD_LINES: usize = 12;
/// Excerpts are cut after this many lines or bytes, whichever comes first.
const EXCERPT_MAX_LINES: usize = 60;
const EXCERPT_MAX_BYTES: usize = 4_000;
/// Room kept at the end for the truncation note.
const RESERVE: usize = 1_000;

pub fn render(report: &Report, options: &RenderOptions) -> String {
    let mut out = header(report, options.fail_on);
    // Right under the verdict, before anything can be cut: what the change itself waved through.
    out.push_str(&suppressed_section(report));
    let mut shown_findings = 0;
    'levels: for (severity, title) in LEVELS {
        let of_level: Vec<&Finding> = report.findings.iter().filter(|f| f.severity == severity).collect();
        let mut level_header = format!("\n### {title}\n");
        for (file, findings) in &group_by_file(of_level) {
            let file_header = format!("\n#### `{}`\n", code_text(file));
            let mut wrote_header = false;
            for finding in findings {
                let block = finding_block(finding, options);
                let needed = block.len() + if wrote_header { 0 } else { file_header.len() + level_header.len() };
                if out.len() + needed + RESERVE > LIMIT {
                    break 'levels;
                }
                if !wrote_header {
                    out.push_str(&level_header);
                    level_header.clear();
                    out.push_str(&file_header);
                    wrote_header = true;
                }
                out.push_str(&block);
                shown_findings += 1;
            }
        }
    }
    let cut_findings = report.findings.len() - shown_findings;
    let mut cut_notes = 0;
    if !report.notes.is_empty() && cut_findings == 0 {
        let mut notes = String::from("\n---\n\n");
        for (i, note) in report.notes.iter().enumerate() {
            let line = format!("- {}\n", note);
            if out.len() + notes.len() + line.len() + RESERVE > LIMIT {
                cut_notes = report.notes.len() - i;
                break;
            }
            notes.push_str(&line);
        }
        out.push_str(&notes);
    } else {
        cut_notes = report.notes.len();
    }
    if cut_findings > 0 || cut_notes > 0 {
        out.push_str(&truncation_note(report, shown_findings, cut_notes));
    }
    out
}

/// Suppressions the section lists before it says how many more there are.
const SUPPRESSED_SHOWN: usize = 50;

/// "### 🔕 Suppressed by this change": one row per finding a `sluice:ignore` the change adds
/// silenced — rule, line and reason — so a reviewer sees what was waved through.
fn suppressed_section(report: &Report) -> String {
    if report.suppressed.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n### 🔕 Suppressed by this change\n\n{} {} silenced by a `sluice:ignore` this change adds (not counted \
         above):\n\n| File | Line | Rule | Reason | Finding |\n| --- | ---: | --- | --- | --- |\n",
        report.suppressed.len(),
        plural(report.suppressed.len(), "finding", "findings"),
    );
    let cell = |text: &str| code_text(text).replace('|', "\\|");
    for finding in report.suppressed.iter().take(SUPPRESSED_SHOWN) {
        let reason = finding.suppression.as_ref().map(|s| s.reason.as_str()).unwrap_or_default();
        out.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {} {} |\n",
            cell(&finding.file),
            finding.line,
            cell(&finding.rule),
            cell(reason),
            finding.severity,
            cell(&shortened(&finding.message)),
        ));
    }
    if report.suppressed.len() > SUPPRESSED_SHOWN {
        out.push_str(&format!(
            "\n_… and {} more; the SARIF upload lists them all._\n",
            report.suppressed.len() - SUPPRESSED_SHOWN
        ));
    }
    out
}

/// A message cut to a table cell's length.
fn shortened(text: &str) -> String {
    const CELL_CHARS: usize = 300;
    match text.char_indices().nth(CELL_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Appends the markdown report to the file named by `GITHUB_STEP_SUMMARY`, when it is set, so
/// the job summary shows it whatever `--format` printed. Returns the file written to.
pub fn append_step_summary(report: &Report, options: &RenderOptions) -> Result<Option<std::path::PathBuf>> {
    match std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = std::path::PathBuf::from(path);
            append_to(&path, report, options)?;
            Ok(Some(path))
        }
        None => Ok(None),
    }
}

/// Appends the markdown report to `path`, creating it if needed.
pub fn append_to(path: &std::path::Path, report: &Report, options: &RenderOptions) -> Result<()> {
    use std::io::Write;
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::write(path, e))?;
    let mut text = render(report, options);
    text.push('\n');
    file.write_all(text.as_bytes()).map_err(|e| Error::write(path, e))
}

fn header(report: &Report, fail_on: FailOn) -> String {
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    let infos = report.count(Severity::Info);
    let files = group_by_file(&report.findings).len();
    let verdict = if report.findings.is_empty() {
        "## ✅ Sluice: no findings\n".to_string()
    } else if fail_on.fails(report) {
        format!(
            "## ❌ Sluice: the gate fails\n\n{} in {} {} (failing on {}).\n",
            counts_phrase(errors, warnings, infos),
            files,
            plural(files, "file", "files"),
            fail_on_word(fail_on)
        )
    } else {
        format!(
            "## ✅ Sluice: the gate passes\n\n{} in {} {} (failing on {}).\n",
            counts_phrase(errors, warnings, infos),
            files,
            plural(files, "file", "files"),
            fail_on_word(fail_on)
        )
    };
    if report.findings.is_empty() {
        return verdict;
    }
    format!(
        "{verdict}{}\n| Severity | Count |\n| --- | ---: |\n| 🔴 Error | {errors} |\n| 🟠 Warning | {warnings} |\n| 🔵 Info | {infos} |\n",
        needs_review(report)
    )
}

/// "**Needs review by:** `org/survey` or `ana` (`observations`)": the domain reviewers whose
/// approval the gate still waits for, one group per set of reviewers.
fn needs_review(report: &Report) -> String {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let pending = report
        .findings
        .iter()
        .filter(|f| f.rule == rules::domain_review_required::META.id && f.severity >= Severity::Warning);
    for finding in pending {
        let Some(evidence) = &finding.evidence else { continue };
        let reviewers: Vec<String> = evidence["reviewers"]
            .as_array()
            .map(|list| list.iter().filter_map(|r| r.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let table = evidence["table"].as_str().filter(|t| !t.is_empty()).map(|t| format!("`{}`", code_text(t)));
        match groups.iter_mut().find(|(r, _)| *r == reviewers) {
            Some((_, tables)) => tables.extend(table.filter(|t| !tables.contains(t))),
            None => groups.push((reviewers, table.into_iter().collect())),
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(reviewers, tables)| {
            // In code, not as @-mentions: a sticky comment re-rendered on every push must not page anyone.
            let who = reviewers.iter().map(|r| format!("`{}`", code_text(r))).collect::<Vec<_>>().join(" or ");
            if tables.is_empty() {
                who
            } else {
                format!("{who} ({})", tables.join(", "))
            }
        })
        .collect();
    format!("\n**Needs review by:** {}\n", parts.join("; "))
}

fn fail_on_word(fail_on: FailOn) -> &'static str {
    match fail_on {
        FailOn::Error => "errors",
        FailOn::Warning => "warnings and errors",
        FailOn::Never => "nothing",
    }
}

fn counts_phrase(errors: usize, warnings: usize, infos: usize) -> String {
    format!(
        "{errors} {}, {warnings} {}, {infos} info",
        plural(errors, "error", "errors"),
        plural(warnings, "warning", "warnings")
    )
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn badge(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "🔴 **error**",
        Severity::Warning => "🟠 **warning**",
        Severity::Info => "🔵 **info**",
    }
}

/// The severities in the order the report shows them, with their section titles.
const LEVELS: [(Severity, &str); 3] =
    [(Severity::Error, "🔴 Errors"), (Severity::Warning, "🟠 Warnings"), (Severity::Info, "🔵 Info")];

/// Findings grouped by file, files in the order they first appear (the report is sorted).
fn group_by_file<'f>(findings: impl IntoIterator<Item = &'f Finding>) -> Vec<(&'f str, Vec<&'f Finding>)> {
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for finding in findings {
        match groups.iter_mut().find(|(file, _)| *file == finding.file) {
            Some((_, list)) => list.push(finding),
            None => groups.push((finding.file.as_str(), vec![finding])),
        }
    }
    groups
}

fn finding_block(finding: &Finding, options: &RenderOptions) -> String {
    let mut out = format!(
        "\n{} `{}` · line {}\n\n{}\n",
        badge(finding.severity),
        code_text(&finding.rule),
        finding.line,
        finding.message.trim().replace("\r\n", "\n").replace('\r', "\n")
    );
    if let Some(snippet) = finding.snippet.as_ref().filter(|s| !s.text().trim().is_empty()) {
        let (excerpt, lines, cut) = excerpt(snippet.text());
        let fence = fence_for(&excerpt);
        let mut body = format!("{fence}sql\n{}\n{fence}\n", excerpt.trim_end_matches('\n'));
        if cut > 0 {
            body.push_str(&format!("\n_… {cut} more {} of this statement not shown._\n", plural(cut, "line", "lines")));
        }
        if lines > FOLD_LINES {
            out.push_str(&format!(
                "\n<details><summary>SQL excerpt (line {}, {} lines)</summary>\n\n{body}\n</details>\n",
                snippet.first_line,
                lines + cut
            ));
        } else {
            out.push('\n');
            out.push_str(&body);
        }
    }
    let fix = if finding.help.trim().is_empty() {
        rules::find(&finding.rule).map(|m| m.fix.trim().to_string()).unwrap_or_default()
    } else {
        finding.help.trim().to_string()
    };
    if !fix.is_empty() {
        out.push_str(&format!("\n**Fix:** {fix}\n"));
    }
    if options.explain && !finding.facts.is_empty() || finding.facts.len() > 3 {
        out.push_str("\n<details><summary>Facts used</summary>\n\n");
        for fact in &finding.facts {
            out.push_str(&format!("- {}: `{}`\n", fact.name, code_text(&fact.value)));
        }
        out.push_str("\n</details>\n");
    } else if !finding.facts.is_empty() {
        let facts = finding.facts.iter().map(|f| format!("{}: `{}`", f.name, code_text(&f.value))).collect::<Vec<_>>();
        out.push_str(&format!("\nFacts: {}\n", facts.join(" · ")));
    }
    out
}

/// The excerpt to show, its line count, and how many lines were cut.
fn excerpt(text: &str) -> (String, usize, usize) {
    let total = text.trim_end_matches('\n').lines().count();
    let mut out = String::new();
    let mut shown = 0;
    for line in text.trim_end_matches('\n').lines() {
        if shown == EXCERPT_MAX_LINES || out.len() + line.len() + 1 > EXCERPT_MAX_BYTES {
            break;
        }
        out.push_str(line);
        out.push('\n');
        shown += 1;
    }
    if shown == 0 {
        // A single enormous line: cut it at a character boundary.
        let end = (0..=EXCERPT_MAX_BYTES.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        out.push_str(&text[..end]);
        out.push_str(" …\n");
        shown = 1;
    }
    (out, shown, total - shown)
}

/// A code fence longer than any run of backticks inside the excerpt, so SQL cannot close it.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// Text for inline code spans: backticks would end the span, newlines would break the line.
fn code_text(text: &str) -> String {
    text.replace('`', "'").replace(['\r', '\n'], " ")
}

fn truncation_note(report: &Report, shown_findings: usize, cut_notes: usize) -> String {
    // In the order they are shown: errors, then warnings, then info.
    let ordered: Vec<&Finding> =
        LEVELS.iter().flat_map(|(s, _)| report.findings.iter().filter(move |f| f.severity == *s)).collect();
    let cut: Vec<&Finding> = ordered[shown_findings.min(ordered.len())..].to_vec();
    let mut parts = Vec::new();
    if !cut.is_empty() {
        let count = |s| cut.iter().filter(|f| f.severity == s).count();
        let files = group_by_file(cut.clone());
        let mut names = files.iter().take(10).map(|(file, _)| format!("`{}`", code_text(file))).collect::<Vec<_>>();
        if files.len() > 10 {
            names.push(format!("and {} more", files.len() - 10));
        }
        parts.push(format!(
            "{} of {} findings not shown ({}) in {} {}: {}",
            cut.len(),
            report.findings.len(),
            counts_phrase(count(Severity::Error), count(Severity::Warning), count(Severity::Info)),
            files.len(),
            plural(files.len(), "file", "files"),
            names.join(", ")
        ));
    }
    if cut_notes > 0 {
        parts.push(format!("{cut_notes} {} not shown", plural(cut_notes, "note", "notes")));
    }
    format!(
        "\n---\n\n> ⚠️ **Report cut to stay under {LIMIT} characters:** {}. Run `sluice check` locally, or read the \
         job log or the SARIF upload, for the full list.\n",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_summary_is_appended_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        std::fs::write(&path, "# earlier step\n").unwrap();
        let report = Report {
            findings: vec![Finding::new("migration-deleted", Severity::Error, "migrations/3.sql", "deleted")],
            notes: vec![],
            ..Default::default()
        };
        append_to(&path, &report, &RenderOptions::default()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# earlier step\n## ❌ Sluice: the gate fails"), "{text}");
        assert!(text.contains("`migrations/3.sql`"));
    }

    #[test]
    fn fences_outgrow_backticks_in_the_sql() {
        assert_eq!(fence_for("select 1"), "```");
        assert_eq!(fence_for("-- ```` x"), "`````");
    }

    #[test]
    fn a_single_enormous_line_is_cut_at_a_character_boundary() {
        let line = "é".repeat(EXCERPT_MAX_BYTES);
        let (text, shown, cut) = excerpt(&line);
        assert!(text.len() <= EXCERPT_MAX_BYTES + 8);
        assert_eq!((shown, cut), (1, 0));
    }
}

//! `--format json`: `{"version": 1, "findings": [...], "summary": {...}}`, stable across releases.
//!
//! Written as it is serialized: a history of 200,000 files can have a report of hundreds of
//! megabytes, and building it whole (as a JSON tree, then as text) took several times that in
//! memory. Keys come out sorted at every level, as they always have: the documents' fields are
//! declared in alphabetical order (and `Finding`'s, and `Fact`'s).

use crate::finding::{Finding, Report, Severity};
use rayon::prelude::*;
use serde::Serialize;
use std::io::Write;

pub fn render(report: &Report) -> String {
    let mut out = Vec::new();
    write(report, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// How many findings are rendered at a time (on every core) before they are written. The
/// rendered window is held whole until it is written: at 4,096 it was the largest thing alive at
/// the end of a lint (Lemmy's 2,022 findings, 2 MB of JSON, a third of the live heap at its
/// peak); 256 keeps both cores busy at no measurable cost in time.
const FINDINGS_AT_A_TIME: usize = 256;

/// Writes the report to `out`, pretty-printed, with a final newline: the document serde_json's
/// pretty printer gives, byte for byte, with the findings rendered a window at a time on every
/// core (one thread writing them all was a tenth of linting a large history).
/// `out` is buffered by the caller.
pub fn write(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let rest = Rest {
        notes: &report.notes,
        suppressed: &report.suppressed,
        summary: Summary {
            error: report.count(Severity::Error),
            info: report.count(Severity::Info),
            total: report.findings.len(),
            warning: report.count(Severity::Warning),
        },
        version: 1,
    };
    out.write_all(b"{\n  \"findings\": [")?;
    for (window, findings) in report.findings.chunks(FINDINGS_AT_A_TIME).enumerate() {
        let rendered: Vec<Vec<u8>> = findings.par_iter().map(nested_finding).collect::<std::io::Result<_>>()?;
        for (i, finding) in rendered.iter().enumerate() {
            out.write_all(if window == 0 && i == 0 { b"\n    " } else { b",\n    " })?;
            out.write_all(finding)?;
        }
    }
    out.write_all(if report.findings.is_empty() { b"]," } else { b"\n  ]," })?;
    // The other fields, as their own document: `{` and its newline are already written.
    let rest = serde_json::to_vec_pretty(&rest).map_err(std::io::Error::from)?;
    out.write_all(&rest[1..])?;
    out.write_all(b"\n")
}

/// A finding as the pretty printer writes it inside the findings array, two levels deep: its
/// lines after the first indented by four more spaces (JSON strings hold no raw newline).
fn nested_finding(finding: &Finding) -> std::io::Result<Vec<u8>> {
    let alone = serde_json::to_vec_pretty(finding).map_err(std::io::Error::from)?;
    let mut nested = Vec::with_capacity(alone.len() + alone.len() / 8);
    for (i, line) in alone.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            nested.extend_from_slice(b"\n    ");
        }
        nested.extend_from_slice(line);
    }
    Ok(nested)
}

/// The document's fields after `findings`, in alphabetical order: the order the keys have always had.
fn none_of(list: &&[Finding]) -> bool {
    list.is_empty()
}

#[derive(Serialize)]
struct Rest<'a> {
    notes: &'a [String],
    summary: Summary,
    /// Findings a `sluice:ignore` the change adds silenced (`sluice check`); absent when none.
    #[serde(skip_serializing_if = "none_of")]
    suppressed: &'a [Finding],
    version: u32,
}

#[derive(Serialize)]
struct Summary {
    error: usize,
    info: usize,
    total: usize,
    warning: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Finding;
    use serde_json::json;

    #[test]
    fn streamed_output_is_the_sorted_document_byte_for_byte() {
        let mut findings = vec![
            Finding::new("missing-lock-timeout", Severity::Error, "migrations/1.sql", "waits without a timeout")
                .at(2, 1, 2, 30)
                .snippet(2, "ALTER TABLE users ADD COLUMN a int;".to_string())
                .fact("table", "users")
                .fact("rows", "unknown")
                .help("SET lock_timeout first."),
            Finding::new("prefer-text-over-varchar", Severity::Info, "migrations/2.sql", "varchar(20)"),
        ];
        findings[1].evidence = Some(json!({ "plan": { "node": "Seq Scan", "cost": 12.5 }, "after": [1, 2] }));
        let report = Report { findings, notes: vec!["Migration statements checked: 2.".into()], ..Default::default() };
        // What the renderer produced before it streamed: a JSON tree, whose keys are sorted.
        let tree = json!({
            "version": 1,
            "findings": report.findings,
            "summary": { "error": 1, "warning": 0, "info": 1, "total": 2 },
            "notes": report.notes,
        });
        let expected = serde_json::to_string_pretty(&tree).unwrap() + "\n";
        assert_eq!(render(&report), expected);
        assert!(expected.find("\"findings\"") < expected.find("\"version\""));
    }

    #[test]
    fn no_findings_and_more_findings_than_a_window_render_as_the_whole_document() {
        let as_tree = |report: &Report| {
            let summary = json!({ "error": report.count(Severity::Error), "warning": 0, "info": 0, "total": report.findings.len() });
            let tree = json!({ "version": 1, "findings": report.findings, "summary": summary, "notes": report.notes });
            serde_json::to_string_pretty(&tree).unwrap() + "\n"
        };
        let empty = Report { findings: Vec::new(), notes: Vec::new(), ..Default::default() };
        assert_eq!(render(&empty), as_tree(&empty));
        let findings = (0..FINDINGS_AT_A_TIME + 2)
            .map(|i| {
                Finding::new("drop-table", Severity::Error, format!("m/{i}.sql"), "line one\nline \"two\"")
                    .fact("n", i.to_string())
            })
            .collect();
        let many = Report { findings, notes: vec!["a".into(), "b".into()], ..Default::default() };
        assert_eq!(render(&many), as_tree(&many));
    }
}

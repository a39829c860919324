//! `--format json`: `{"version": 1, "findings": [...], "summary": {...}}`, stable across releases.
//!
//! Written as it is serialized: a history of 200,000 files can have a report of hundreds of
//! megabytes, and building it whole (as a JSON tree, then as text) took several times that in
//! memory. Keys come out sorted at every level, as they always have: the documents' fields are
//! declared in alphabetical order (and `Finding`'s, and `Fact`'s).

use crate::finding::{Finding, Report, Severity};
use serde::Serialize;
use std::io::Write;

pub fn render(report: &Report) -> String {
    let mut out = Vec::new();
    write(report, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Writes the report to `out`, pretty-printed, with a final newline.
pub fn write(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let document = Document {
        findings: &report.findings,
        notes: &report.notes,
        summary: Summary {
            error: report.count(Severity::Error),
            info: report.count(Severity::Info),
            total: report.findings.len(),
            warning: report.count(Severity::Warning),
        },
        version: 1,
    };
    let mut out = std::io::BufWriter::new(out);
    serde_json::to_writer_pretty(&mut out, &document).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Fields in alphabetical order: the order the keys have always had.
#[derive(Serialize)]
struct Document<'a> {
    findings: &'a [Finding],
    notes: &'a [String],
    summary: Summary,
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
        let report = Report { findings, notes: vec!["Migration statements checked: 2.".into()] };
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
}

//! `--format json`: `{"version": 1, "findings": [...], "summary": {...}}`, stable across releases.

use crate::finding::{Report, Severity};
use serde_json::json;

pub fn render(report: &Report) -> String {
    let doc = json!({
        "version": 1,
        "findings": report.findings,
        "summary": {
            "error": report.count(Severity::Error),
            "warning": report.count(Severity::Warning),
            "info": report.count(Severity::Info),
            "total": report.findings.len(),
        },
        "notes": report.notes,
    });
    let mut out = serde_json::to_string_pretty(&doc).expect("findings serialize");
    out.push('\n');
    out
}

//! `--format gitlab`: GitLab Code Quality report (a JSON array of issues), shown in the merge
//! request widget when uploaded as `artifacts:reports:codequality`.
//!
//! Severity mapping: error → `critical`, warning → `major`, info → `info`. `blocker` is left
//! unused: GitLab ranks it above critical, and Sluice has no level above error to give it.
//! Fingerprints are the content-based ones SARIF uses, so an issue stays the same issue when
//! unrelated lines move.

use crate::finding::fingerprint::fingerprints;
use crate::finding::{Report, Severity};
use serde_json::{json, Value};

pub fn render(report: &Report) -> String {
    let mut out = serde_json::to_string_pretty(&document(report)).expect("Code Quality report serializes");
    out.push('\n');
    out
}

pub fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

pub fn document(report: &Report) -> Value {
    let issues: Vec<Value> = report
        .findings
        .iter()
        .zip(fingerprints(&report.findings))
        .map(|(finding, print)| {
            let mut description = finding.message.clone();
            if !finding.help.is_empty() {
                description.push_str(" — ");
                description.push_str(&finding.help);
            }
            json!({
                "type": "issue",
                "description": description,
                "check_name": finding.rule,
                "fingerprint": print,
                "severity": severity(finding.severity),
                "location": {
                    "path": finding.file,
                    "lines": { "begin": finding.line, "end": finding.end_line.max(finding.line) },
                },
            })
        })
        .collect();
    Value::Array(issues)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Finding;

    #[test]
    fn issues_carry_the_fields_gitlab_reads() {
        let report = Report {
            findings: vec![
                Finding::new("migration-edited", Severity::Error, "migrations/1.sql", "edited")
                    .at(4, 1, 6, 2)
                    .help("revert"),
                Finding::new("x", Severity::Warning, "q.sql", "w"),
                Finding::new("y", Severity::Info, "q.sql", "i"),
            ],
            notes: vec![],
            ..Default::default()
        };
        let doc = document(&report);
        let issue = &doc[0];
        assert_eq!(issue["check_name"], "migration-edited");
        assert_eq!(issue["description"], "edited — revert");
        assert_eq!(issue["severity"], "critical");
        assert_eq!(issue["location"]["path"], "migrations/1.sql");
        assert_eq!(issue["location"]["lines"]["begin"], 4);
        assert_eq!(issue["location"]["lines"]["end"], 6);
        assert_eq!(issue["fingerprint"].as_str().unwrap().len(), 32);
        assert_eq!(doc[1]["severity"], "major");
        assert_eq!(doc[2]["severity"], "info");
        let prints: std::collections::BTreeSet<String> =
            doc.as_array().unwrap().iter().map(|i| i["fingerprint"].to_string()).collect();
        assert_eq!(prints.len(), 3);
    }

    #[test]
    fn no_findings_is_an_empty_array() {
        assert_eq!(render(&Report::default()), "[]\n");
    }
}

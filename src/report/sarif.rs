//! `--format sarif`: SARIF 2.1.0 for GitHub code scanning and other result viewers.
//!
//! Rule metadata comes from the registry (`rules::all()`); results carry content-based
//! `partialFingerprints` (see [`super::fingerprint`]). We fill GitHub's own key,
//! `primaryLocationLineHash`, so `upload-sarif` keeps ours instead of computing a hash of the
//! lines around the location, and repeat it under `sluice/v1` for other consumers.

use crate::finding::fingerprint::fingerprints;
use crate::finding::{Finding, Report, Severity};
use crate::rules::{self, RuleMeta};
use serde_json::{json, Value};

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// Used when Cargo.toml sets no `repository`.
const FALLBACK_INFORMATION_URI: &str = "https://github.com/sluice-gate/sluice";

pub fn information_uri() -> &'static str {
    match env!("CARGO_PKG_REPOSITORY") {
        "" => FALLBACK_INFORMATION_URI,
        repository => repository,
    }
}

pub fn render(report: &Report) -> String {
    let mut out = serde_json::to_string_pretty(&document(report)).expect("SARIF serializes");
    out.push('\n');
    out
}

/// The SARIF log as a JSON value (tests validate it against the official schema).
pub fn document(report: &Report) -> Value {
    let mut rule_ids: Vec<&str> = Vec::new();
    let mut descriptors: Vec<Value> = Vec::new();
    for meta in rules::all() {
        rule_ids.push(meta.id);
        descriptors.push(descriptor(meta));
    }
    // A finding whose rule is not registered still gets a descriptor: the log stays valid and
    // the finding is shown rather than dropped.
    for finding in report.findings.iter().chain(&report.suppressed) {
        if !rule_ids.contains(&finding.rule.as_str()) {
            rule_ids.push(finding.rule.as_str());
            descriptors.push(json!({ "id": finding.rule }));
        }
    }
    let index_of = |finding: &Finding| rule_ids.iter().position(|id| *id == finding.rule).unwrap_or(0);
    let prints = fingerprints(&report.findings);
    let mut results: Vec<Value> =
        report.findings.iter().zip(prints).map(|(finding, print)| result(finding, index_of(finding), &print)).collect();
    // What a `sluice:ignore` of the change silenced: results with SARIF's own suppression, so a
    // viewer shows them as suppressed, under review, with the directive's reason.
    let prints = fingerprints(&report.suppressed);
    for (finding, print) in report.suppressed.iter().zip(prints) {
        let mut value = result(finding, index_of(finding), &print);
        value["suppressions"] = json!([{
            "kind": "inSource",
            "status": "underReview",
            "justification": finding.suppression.as_ref().map(|s| s.reason.as_str()).unwrap_or_default(),
        }]);
        value["message"]["text"] = json!(format!(
            "{}\n\n{}",
            finding.suppressed_text().unwrap_or_default(),
            value["message"]["text"].as_str().unwrap_or_default()
        ));
        results.push(value);
    }
    json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "sluice",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": information_uri(),
                    "rules": descriptors,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn descriptor(meta: &RuleMeta) -> Value {
    let markdown = meta.markdown();
    json!({
        "id": meta.id,
        "name": pascal_case(meta.id),
        "shortDescription": { "text": meta.summary },
        "fullDescription": { "text": format!("{}\n\n{}", meta.what.trim(), meta.why.trim()) },
        "help": { "text": markdown, "markdown": markdown },
        "defaultConfiguration": { "level": level(meta.severity) },
        "properties": { "tags": [meta.category.as_str()] },
    })
}

fn result(finding: &Finding, rule_index: usize, print: &str) -> Value {
    let mut text = finding.message.clone();
    if !finding.help.is_empty() {
        text.push_str("\n\n");
        text.push_str(&finding.help);
    }
    let end_column =
        if finding.end_line == finding.line { finding.end_column.max(finding.column) } else { finding.end_column };
    json!({
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": level(finding.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": uri_path(&finding.file), "uriBaseId": "%SRCROOT%" },
                "region": {
                    "startLine": finding.line,
                    "startColumn": finding.column,
                    "endLine": finding.end_line.max(finding.line),
                    "endColumn": end_column,
                }
            }
        }],
        "partialFingerprints": { "primaryLocationLineHash": print, "sluice/v1": print },
    })
}

/// `migration-edited` → `MigrationEdited`: SARIF's "friendly name" for a rule.
fn pascal_case(id: &str) -> String {
    id.split(['-', '_'])
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// A repository-relative path as a URI reference: `/` kept, anything outside RFC 3986's
/// unreserved set percent-encoded (spaces and `#` in file names would otherwise break the URI).
pub fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.replace('\\', "/").bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_paths_are_percent_encoded() {
        assert_eq!(uri_path("migrations/0001 init#1.sql"), "migrations/0001%20init%231.sql");
        assert_eq!(uri_path("queries/é.sql"), "queries/%C3%A9.sql");
    }

    #[test]
    fn rule_names_are_pascal_case() {
        assert_eq!(pascal_case("migration-out-of-order"), "MigrationOutOfOrder");
    }

    #[test]
    fn unregistered_rules_get_a_descriptor_and_a_valid_index() {
        let report = Report {
            findings: vec![Finding::new("not-a-registered-rule", Severity::Warning, "q.sql", "m")],
            notes: vec![],
            ..Default::default()
        };
        let doc = document(&report);
        let run = &doc["runs"][0];
        let index = run["results"][0]["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(run["tool"]["driver"]["rules"][index]["id"], "not-a-registered-rule");
    }
}

//! Fingerprints that identify a problem across runs, for SARIF `partialFingerprints` and GitLab
//! Code Quality `fingerprint`: code scanning and merge-request widgets keep one alert per problem.
//!
//! Built from the rule, the file and the finding's content (its SQL excerpt with whitespace
//! collapsed, or the message when there is none), never the line number, so adding lines above
//! a statement does not turn its finding into a "fixed" one plus a "new" one. Identical findings
//! in one file are told apart by an occurrence counter, in report order.

use crate::finding::Finding;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// One fingerprint per finding, in the same order: 32 hex digits.
pub fn fingerprints(findings: &[Finding]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    findings
        .iter()
        .map(|finding| {
            let key = key(finding);
            let occurrence = seen.entry(key.clone()).or_insert(0);
            *occurrence += 1;
            let mut hasher = Sha256::new();
            hasher.update(key.as_bytes());
            hasher.update(b"\0");
            hasher.update(occurrence.to_string().as_bytes());
            hex::encode(&hasher.finalize()[..16])
        })
        .collect()
}

fn key(finding: &Finding) -> String {
    let content = match &finding.snippet {
        Some(snippet) if !snippet.text().trim().is_empty() => collapse_whitespace(snippet.text()),
        _ => collapse_whitespace(&finding.message),
    };
    // NUL never occurs in paths or SQL text, so fields cannot run into each other.
    format!("{}\0{}\0{}", finding.rule, finding.file, content)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;

    fn finding(line: usize, sql: &str) -> Finding {
        Finding::new("some-rule", Severity::Error, "migrations/0002_index.sql", "CREATE INDEX locks writes")
            .at(line, 1, line, 20)
            .snippet(line, sql)
    }

    #[test]
    fn unrelated_line_shift_keeps_the_fingerprint() {
        let before = fingerprints(&[finding(3, "CREATE INDEX sightings_site_idx ON sightings (site);")]);
        let after = fingerprints(&[finding(41, "CREATE INDEX sightings_site_idx\n    ON sightings (site);")]);
        assert_eq!(before, after);
    }

    #[test]
    fn different_content_rule_or_file_changes_the_fingerprint() {
        let base = fingerprints(&[finding(3, "CREATE INDEX a_idx ON a (x);")])[0].clone();
        assert_ne!(base, fingerprints(&[finding(3, "CREATE INDEX b_idx ON b (x);")])[0]);
        let mut other_rule = finding(3, "CREATE INDEX a_idx ON a (x);");
        other_rule.rule = "other-rule".into();
        assert_ne!(base, fingerprints(&[other_rule])[0]);
        let mut other_file = finding(3, "CREATE INDEX a_idx ON a (x);");
        other_file.file = "migrations/0003.sql".into();
        assert_ne!(base, fingerprints(&[other_file])[0]);
    }

    #[test]
    fn duplicates_get_distinct_fingerprints_and_the_message_is_used_without_snippet() {
        let plain =
            |line| Finding::new("migration-deleted", Severity::Error, "m/1.sql", "deleted").at(line, 1, line, 1);
        let prints = fingerprints(&[plain(1), plain(9)]);
        assert_ne!(prints[0], prints[1]);
        assert_eq!(prints, fingerprints(&[plain(5), plain(7)]));
        let other = Finding::new("migration-deleted", Severity::Error, "m/1.sql", "something else");
        assert_ne!(prints[0], fingerprints(&[other])[0]);
        assert_eq!(prints[0].len(), 32);
    }
}

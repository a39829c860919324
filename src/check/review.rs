//! Domain review in `sluice check`: edits of a table's identity declaration need an approval
//! from its reviewers (`domain-review-required` (a); the migration statements that touch a
//! declared identity (b) are found by the rule itself), and the approvals the caller passes
//! (`--approved-by`) turn those findings into info naming who approved.
//!
//! Who reviews is always the trusted declaration's call: a change cannot name its own reviewers.

use super::gate::GatePolicies;
use super::options::Approvals;
use crate::finding::{Finding, Severity};
use crate::policy::identity::Entry;
use crate::rules::domain_review_required::{evidence, META};
use std::collections::BTreeSet;

/// (a): one finding per table whose declaration the change edits (added, removed or changed,
/// and the top-level reviewers), when the trusted declaration names reviewers for it; a note
/// for the others. `file` is the head's `identity.toml` (the trusted one when the head has none).
pub(super) fn declaration_findings(policies: &GatePolicies, file: &str) -> (Vec<Finding>, Vec<String>) {
    let (trusted, proposed) = (&policies.trusted.identity, &policies.proposed.identity);
    let mut findings = Vec::new();
    let mut unreviewed = Vec::new();
    let mut require = |what: String, table: &str, reviewers: &[String], line: usize| {
        if reviewers.is_empty() {
            unreviewed.push(what);
            return;
        }
        findings.push(
            Finding::new(
                META.id,
                META.severity,
                file,
                format!(
                    "{what}: needs an approval from one of its domain reviewers ({}), named by the base revision's \
                     identity.toml",
                    reviewers.join(", ")
                ),
            )
            .at(line, 1, line, 1)
            .help(META.fix)
            .fact("reviewers", reviewers.join(", "))
            .evidence(evidence(table, reviewers)),
        );
    };
    if trusted.default_reviewers != proposed.default_reviewers {
        require("the change edits the top-level reviewers of identity.toml".into(), "", &trusted.default_reviewers, 1);
    }
    let tables: BTreeSet<&String> = trusted.tables.keys().chain(proposed.tables.keys()).collect();
    for table in tables {
        let (old, new) = (trusted.get(table), proposed.get(table));
        let what = match (old, new) {
            (None, Some(_)) => format!("the change declares the identity of `{table}`"),
            (Some(_), None) => format!("the change removes the identity declaration of `{table}`"),
            (Some(a), Some(b)) if !same(a, b) => format!("the change edits the identity declaration of `{table}`"),
            _ => continue,
        };
        let line = new.map(|e| e.line).unwrap_or(1);
        // The trusted reviewers: the table's own, else the top-level ones (also for a new declaration).
        require(what, table, trusted.reviewers_for(table), line);
    }
    let notes = unreviewed
        .into_iter()
        .map(|what| format!("{what}; no domain reviewers are declared for it (`reviewers` in identity.toml), so no approval was required."))
        .collect();
    (findings, notes)
}

fn same(a: &Entry, b: &Entry) -> bool {
    Entry { line: 0, ..a.clone() } == Entry { line: 0, ..b.clone() }
}

/// Turns each `domain-review-required` finding whose reviewers include an approver into info
/// naming who approved; the others say who approved instead (if anyone) and which teams could
/// not be checked.
pub(super) fn apply_approvals(findings: &mut [Finding], approvals: &Approvals) {
    let given = approvals.normalized();
    for finding in findings.iter_mut().filter(|f| f.rule == META.id) {
        let reviewers: Vec<String> = finding
            .evidence
            .as_ref()
            .and_then(|e| e["reviewers"].as_array())
            .map(|list| list.iter().filter_map(|r| r.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        match approvals.approver(&reviewers) {
            Some(approver) => {
                finding.severity = Severity::Info;
                finding.message = format!("{}; approved by {approver}", finding.message);
                finding.facts.push(crate::finding::Fact { name: "approved by".into(), value: approver.clone() });
                if let Some(serde_json::Value::Object(map)) = finding.evidence.as_mut() {
                    map.insert("approved_by".into(), approver.into());
                }
            }
            None => {
                let mut why = String::from("; no approval from them");
                if !given.is_empty() {
                    why.push_str(&format!(
                        " (approved by {}, none of them a reviewer of this table)",
                        given.join(", ")
                    ));
                }
                let unresolved: Vec<&String> =
                    approvals.unresolved_teams.iter().filter(|t| reviewers.contains(&t.to_lowercase())).collect();
                if !unresolved.is_empty() {
                    why.push_str(&format!(
                        "; the members of {} could not be read, so their approvals could not be counted (give the \
                         action a token that may read team membership)",
                        unresolved.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                }
                finding.message.push_str(&why);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approvals(approved_by: &[&str]) -> Approvals {
        Approvals { approved_by: approved_by.iter().map(|s| s.to_string()).collect(), unresolved_teams: Vec::new() }
    }

    #[test]
    fn a_reviewer_login_or_team_approval_satisfies_and_names_who() {
        let reviewers = vec!["survey-org/survey-domain".to_string(), "ana".to_string()];
        assert_eq!(approvals(&["bob", "@Ana"]).approver(&reviewers).as_deref(), Some("ana"));
        assert_eq!(
            approvals(&["survey-org/survey-domain:carol"]).approver(&reviewers).as_deref(),
            Some("carol (member of survey-org/survey-domain)")
        );
        assert_eq!(
            approvals(&["Survey-Org/Survey-Domain"]).approver(&reviewers).as_deref(),
            Some("a member of survey-org/survey-domain")
        );
        assert_eq!(approvals(&["bob", "other-org/survey-domain:carol"]).approver(&reviewers), None);
    }

    #[test]
    fn approvals_turn_the_finding_into_info_or_say_why_not() {
        let finding = || {
            Finding::new(META.id, Severity::Error, "db/1.sql", "adds unique index x on observations")
                .evidence(evidence("observations", &["org/survey".to_string()]))
        };
        let mut findings = vec![finding()];
        apply_approvals(&mut findings, &approvals(&["org/survey:dana"]));
        assert_eq!(findings[0].severity, Severity::Info);
        assert!(findings[0].message.ends_with("; approved by dana (member of org/survey)"), "{}", findings[0].message);

        let mut findings = vec![finding()];
        let unresolved = Approvals { approved_by: vec!["eve".into()], unresolved_teams: vec!["org/survey".into()] };
        apply_approvals(&mut findings, &unresolved);
        assert_eq!(findings[0].severity, Severity::Error);
        let message = &findings[0].message;
        assert!(message.contains("no approval from them (approved by eve, none of them a reviewer"), "{message}");
        assert!(message.contains("the members of org/survey could not be read"), "{message}");
    }
}

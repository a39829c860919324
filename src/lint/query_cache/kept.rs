//! A query's finding as the query cache keeps it: every field a report shows, owned, so that a
//! finding read back is the one the rules made. Findings that carry what only the run that made
//! them can read (`settle`, a rule's own state for the end of the history) are not kept.

use crate::finding::{Fact, Finding, Severity, Snippet, Suppression};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    rule: String,
    severity: Severity,
    file: String,
    /// line, column, end line, end column.
    at: [usize; 4],
    message: String,
    help: String,
    facts: Vec<(String, String)>,
    /// First line, first column and text of the excerpt.
    snippet: Option<(usize, usize, String)>,
    /// The evidence as JSON text (postcard cannot read a `serde_json::Value` back).
    evidence: Option<String>,
    /// directive, file level, reason.
    suppression: Option<(String, bool, String)>,
}

impl Kept {
    /// The finding as kept; `None` for one that cannot be kept whole.
    pub fn of(finding: &Finding) -> Option<Kept> {
        if finding.settle.is_some() {
            return None;
        }
        let evidence = match &finding.evidence {
            Some(value) => Some(serde_json::to_string(value).ok()?),
            None => None,
        };
        Some(Kept {
            rule: finding.rule.clone(),
            severity: finding.severity,
            file: finding.file.clone(),
            at: [finding.line, finding.column, finding.end_line, finding.end_column],
            message: finding.message.clone(),
            help: finding.help.to_string(),
            facts: finding.facts.iter().map(|f| (f.name.clone(), f.value.clone())).collect(),
            snippet: finding.snippet.as_ref().map(|s| (s.first_line, s.first_column, s.text().to_string())),
            evidence,
            suppression: finding.suppression.as_ref().map(|s| (s.directive.clone(), s.file_level, s.reason.clone())),
        })
    }

    /// The finding again; `None` when its evidence does not read back (a cache of another
    /// layout that happened to decode).
    pub fn finding(&self) -> Option<Finding> {
        let evidence = match &self.evidence {
            Some(text) => Some(serde_json::from_str(text).ok()?),
            None => None,
        };
        let [line, column, end_line, end_column] = self.at;
        Some(Finding {
            rule: self.rule.clone(),
            severity: self.severity,
            file: self.file.clone(),
            line,
            column,
            end_line,
            end_column,
            message: self.message.clone(),
            help: Cow::Owned(self.help.clone()),
            facts: self.facts.iter().map(|(name, value)| Fact { name: name.clone(), value: value.clone() }).collect(),
            snippet: self.snippet.as_ref().map(|(line, column, text)| {
                let text: Arc<str> = text.as_str().into();
                Snippet::shared(*line, *column, &text, 0..text.len())
            }),
            evidence,
            suppression: self.suppression.as_ref().map(|(directive, file_level, reason)| {
                Box::new(Suppression { directive: directive.clone(), file_level: *file_level, reason: reason.clone() })
            }),
            settle: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_back_as_it_was_made() {
        let text: Arc<str> = "-- lead\nSELECT * FROM users WHERE lower(email) = $1\n".into();
        let mut finding = Finding::new("function-on-indexed-column", Severity::Warning, "src/users.go", "m")
            .at(3, 7, 4, 9)
            .help("fix it")
            .fact("table", "users")
            .excerpt(Snippet::shared(2, 1, &text, 8..text.len() - 1))
            .evidence(serde_json::json!({"plan": [1, 2.5, "x"]}));
        finding.suppression = Some(Box::new(Suppression {
            directive: "-- sluice:ignore x".into(),
            file_level: false,
            reason: "r".into(),
        }));
        let kept = Kept::of(&finding).unwrap();
        let bytes = postcard::to_allocvec(&kept).unwrap();
        let back = postcard::from_bytes::<Kept>(&bytes).unwrap().finding().unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&finding).unwrap());
        let (a, b) = (back.snippet.unwrap(), finding.snippet.unwrap());
        assert_eq!((a.first_line, a.first_column, a.text()), (b.first_line, b.first_column, b.text()));
    }

    #[test]
    fn a_finding_left_to_settle_is_not_kept() {
        let mut finding = Finding::new("r", Severity::Error, "f", "m");
        finding.settle = Some(Arc::new(1u8));
        assert!(Kept::of(&finding).is_none());
    }
}

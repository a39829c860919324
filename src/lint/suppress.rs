//! Inline suppression: `-- sluice:ignore rule-id[, rule-id] -- reason` silences those rules on
//! the next statement, `-- sluice:ignore-file rule-id -- reason` in the whole file. A directive
//! naming an unknown rule or giving no reason is itself a finding and silences nothing.

use crate::finding::{Finding, Suppression};
use crate::rules::{self, SourceFile, INVALID_SUPPRESSION};
use crate::sql::split::Comment;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Directive {
    rules: Vec<String>,
    file_level: bool,
    reason: String,
}

/// Reads a directive from a comment, or says what is wrong with it.
fn parse(comment: &Comment) -> Option<Result<Directive, String>> {
    let body = comment.text.trim_start_matches("--").trim_start_matches("/*").trim_end_matches("*/").trim();
    let rest = body.strip_prefix("sluice:")?;
    let (file_level, rest) = if let Some(r) = rest.strip_prefix("ignore-file") {
        (true, r)
    } else if let Some(r) = rest.strip_prefix("ignore") {
        (false, r)
    } else {
        return Some(Err(format!(
            "unknown directive `sluice:{}`; use `sluice:ignore` or `sluice:ignore-file`",
            rest.split_whitespace().next().unwrap_or("")
        )));
    };
    let (ids, reason) = match rest.split_once("--") {
        Some((ids, reason)) => (ids, reason.trim()),
        None => (rest, ""),
    };
    let rules: Vec<String> =
        ids.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    if rules.is_empty() {
        return Some(Err("`sluice:ignore` names no rule; write `-- sluice:ignore rule-id -- reason`".into()));
    }
    if let Some(unknown) = rules.iter().find(|id| rules::find(id).is_none()) {
        return Some(Err(format!("`sluice:ignore` names unknown rule `{unknown}`; `sluice rules` lists the rule ids")));
    }
    if rules.iter().any(|id| id == rules::UNREAD_TEXT.id) {
        return Some(Err(format!(
            "`{}` cannot be suppressed: Sluice never passes text it did not read; see `sluice rules {}`",
            rules::UNREAD_TEXT.id,
            rules::UNREAD_TEXT.id
        )));
    }
    // The change under review must not silence the reviewer it needs.
    if let Some(id) = rules.iter().find(|id| *id == rules::domain_review_required::META.id) {
        return Some(Err(format!(
            "`{id}` cannot be silenced by the change it reviews; it needs an approval from one of the table's domain \
             reviewers (`sluice check --approved-by LOGIN`)"
        )));
    }
    if reason.is_empty() {
        return Some(Err(format!(
            "`sluice:ignore {}` gives no reason; add one after ` -- ` so reviewers know why the check does not apply",
            rules.join(", ")
        )));
    }
    Some(Ok(Directive { rules, file_level, reason: reason.to_string() }))
}

/// Marks the findings of `file` that its directives silence (the lint's report drops them, or
/// for a review keeps them apart: [`crate::finding::Report::suppressed`]), and adds findings
/// for bad directives.
pub fn apply(file: &SourceFile, findings: Vec<Finding>) -> Vec<Finding> {
    let mut problems = Vec::new();
    // (rules, directive) per file-level directive; (first line, last line, rules, directive) per statement-level one.
    let mut file_rules: Vec<(Directive, String)> = Vec::new();
    let mut ranges: Vec<(usize, usize, Directive, String)> = Vec::new();
    for comment in &file.parsed.comments {
        match parse(comment) {
            None => {}
            Some(Err(message)) => problems.push(
                Finding::new(INVALID_SUPPRESSION.id, INVALID_SUPPRESSION.severity, file.display.clone(), message)
                    .at(comment.line, 1, comment.line, comment.text.chars().count() + 1)
                    .snippet(comment.line, comment.text.clone())
                    .help(INVALID_SUPPRESSION.fix.trim()),
            ),
            Some(Ok(d)) if d.file_level => file_rules.push((d, comment.text.clone())),
            Some(Ok(_)) => {}
        }
    }
    for statement in &file.parsed.statements {
        for comment in &statement.leading_comments {
            if let Some(Ok(d)) = parse(comment) {
                if !d.file_level {
                    ranges.push((statement.span.line, statement.span.end_line, d, comment.text.clone()));
                }
            }
        }
    }
    let owned = |d: &Directive, text: &str| Suppression {
        directive: text.trim().to_string(),
        file_level: d.file_level,
        reason: d.reason.clone(),
    };
    let silencer = |f: &Finding| -> Option<Suppression> {
        if f.rule == INVALID_SUPPRESSION.id {
            return None;
        }
        let statement = ranges
            .iter()
            .find(|(first, last, d, _)| (*first..=*last).contains(&f.line) && d.rules.contains(&f.rule))
            .map(|(_, _, d, text)| owned(d, text));
        statement.or_else(|| file_rules.iter().find(|(d, _)| d.rules.contains(&f.rule)).map(|(d, text)| owned(d, text)))
    };
    findings
        .into_iter()
        .map(|mut f| {
            f.suppression = silencer(&f).map(Box::new);
            f
        })
        .chain(problems)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment(text: &str) -> Comment {
        Comment { line: 1, text: text.into() }
    }

    #[test]
    fn reads_rules_and_reasons() {
        let d = parse(&comment("-- sluice:ignore drop-index-in-use, unparsed-statement -- replaced by idx_b"))
            .unwrap()
            .unwrap();
        assert_eq!(d.rules, ["drop-index-in-use", "unparsed-statement"]);
        assert!(!d.file_level);
        assert!(parse(&comment("-- sluice:ignore-file unparsed-statement -- vendored")).unwrap().unwrap().file_level);
        assert!(parse(&comment("-- just a comment")).is_none());
    }

    #[test]
    fn rejects_unknown_rules_and_missing_reasons() {
        assert!(parse(&comment("-- sluice:ignore no-such-rule -- x"))
            .unwrap()
            .unwrap_err()
            .contains("unknown rule `no-such-rule`"));
        assert!(parse(&comment("-- sluice:ignore drop-index-in-use"))
            .unwrap()
            .unwrap_err()
            .contains("gives no reason"));
        assert!(parse(&comment("-- sluice:ignore-file unread-text -- vendored"))
            .unwrap()
            .unwrap_err()
            .contains("cannot be suppressed"));
    }

    #[test]
    fn domain_review_cannot_be_silenced_by_the_change_it_reviews() {
        let error =
            parse(&comment("-- sluice:ignore domain-review-required, drop-table -- we know")).unwrap().unwrap_err();
        assert!(error.contains("`domain-review-required` cannot be silenced"), "{error}");
    }
}

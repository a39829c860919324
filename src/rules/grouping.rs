//! One finding per root cause: rules that check statement by statement but whose problem
//! belongs to a whole file, transaction or held lock fold their per-statement findings here,
//! at the end of the file, into one finding that lists the statements it covers.

use crate::finding::Finding;

/// Which finding of a group is kept and carries the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// The first statement of the group (the one to fix).
    First,
    /// The first statement of the highest severity (the worst consequence is the one named).
    MostSevere,
}

/// Folds the findings of `rule` that share a `key` into one: the head, raised to the group's
/// highest severity, and `annotate`d with the others (in statement order). Other findings and
/// the order of the kept ones are left as they were.
pub fn fold<K: PartialEq>(
    findings: &mut Vec<Finding>,
    rule: &str,
    head: Head,
    key: impl Fn(&Finding) -> K,
    annotate: impl Fn(&mut Finding, &[Finding]),
) {
    let mut groups: Vec<(K, Vec<usize>)> = Vec::new();
    for (at, finding) in findings.iter().enumerate().filter(|(_, f)| f.rule == rule) {
        let k = key(finding);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(at),
            None => groups.push((k, vec![at])),
        }
    }
    let mut dropped = vec![false; findings.len()];
    for (_, members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
        let worst = members.iter().map(|&i| findings[i].severity).max().expect("a group has members");
        let kept = match head {
            Head::First => members[0],
            Head::MostSevere => *members.iter().find(|&&i| findings[i].severity == worst).expect("the worst exists"),
        };
        // The others are moved out, not copied: their places are dropped below.
        let others: Vec<Finding> =
            members.iter().filter(|&&i| i != kept).map(|&i| std::mem::take(&mut findings[i])).collect();
        let finding = &mut findings[kept];
        finding.severity = worst;
        annotate(finding, &others);
        for &i in &members {
            dropped[i] = i != kept;
        }
    }
    let mut at = 0;
    findings.retain(|_| {
        at += 1;
        !dropped[at - 1]
    });
}

/// "lines 4, 9 and 12"; past eight lines, "lines 4, 9, … and 30 more". A statement that starts
/// after another on its line is named by line and column ("lines 4, 4:23 and 9").
pub fn lines(findings: &[Finding]) -> String {
    const SHOWN: usize = 8;
    let lines: Vec<String> = findings
        .iter()
        .map(|f| if f.column > 1 { format!("{}:{}", f.line, f.column) } else { f.line.to_string() })
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!("line {one}"),
        many if many.len() > SHOWN => format!("lines {} and {} more", many[..SHOWN].join(", "), many.len() - SHOWN),
        [rest @ .., last] => format!("lines {} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;

    fn f(rule: &str, line: usize, severity: Severity, group: &str) -> Finding {
        Finding::new(rule, severity, "m.sql", format!("at {line}")).at(line, 1, line, 1).fact("group", group)
    }

    fn group(f: &Finding) -> String {
        f.facts[0].value.clone()
    }

    #[test]
    fn one_finding_per_group_at_the_head_with_the_worst_severity() {
        let mut findings = vec![
            f("r", 2, Severity::Warning, "a"),
            f("other", 3, Severity::Error, "a"),
            f("r", 5, Severity::Error, "a"),
            f("r", 7, Severity::Warning, "b"),
            f("r", 9, Severity::Warning, "a"),
        ];
        fold(&mut findings, "r", Head::First, group, |head, others| {
            head.message = format!("{} (also {})", head.message, lines(others));
        });
        let shown: Vec<(usize, &str, Severity)> =
            findings.iter().map(|f| (f.line, f.message.as_str(), f.severity)).collect();
        assert_eq!(
            shown,
            [
                (2, "at 2 (also lines 5 and 9)", Severity::Error),
                (3, "at 3", Severity::Error),
                (7, "at 7", Severity::Warning),
            ]
        );
    }

    /// Issue 37: several statements of one line are told apart by their column.
    #[test]
    fn statements_sharing_a_line_are_named_by_column() {
        let at = |line, column| Finding::new("r", Severity::Warning, "m.sql", "").at(line, column, line, column + 5);
        assert_eq!(lines(&[at(4, 1), at(4, 23), at(9, 1)]), "lines 4, 4:23 and 9");
    }

    #[test]
    fn long_line_lists_are_cut() {
        let many: Vec<Finding> = (1..=10).map(|l| f("r", l, Severity::Warning, "a")).collect();
        assert_eq!(lines(&many), "lines 1, 2, 3, 4, 5, 6, 7, 8 and 2 more");
        assert_eq!(lines(&many[..3]), "lines 1, 2 and 3");
    }

    #[test]
    fn the_most_severe_head_names_the_worst_statement() {
        let mut findings = vec![f("r", 2, Severity::Warning, "a"), f("r", 5, Severity::Error, "a")];
        fold(&mut findings, "r", Head::MostSevere, group, |head, others| {
            head.message = format!("{} (also {})", head.message, lines(others));
        });
        assert_eq!(findings.len(), 1);
        assert_eq!((findings[0].line, findings[0].message.as_str()), (5, "at 5 (also line 2)"));
    }
}

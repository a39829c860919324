use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::Ddl;

pub struct UnparsedStatement;

pub static META: RuleMeta = RuleMeta {
    id: "unparsed-statement",
    severity: Severity::Warning,
    category: Category::Meta,
    summary: "A statement the SQL parser could not read, so only the token-level recognizer checked it",
    what: "Reports every statement sqlparser (PostgreSQL dialect) rejects, with the parser's message. Such a \
statement still goes through a token-level recognizer for what the gate must never miss (CREATE [UNIQUE] \
INDEX, UNIQUE and PRIMARY KEY constraints, DROP INDEX, renames); the finding says what it was recognized as, \
or that it was not checked at all. When the recognizer understood every token of the statement (for example \
`DROP INDEX CONCURRENTLY IF EXISTS name`, which sqlparser 0.64 rejects) nothing went unchecked, and the finding \
is only `info`, so the recommended migration patterns do not raise warnings. A statement refused for its depth \
(nested deeper than the parser's recursion limit, or chaining more than 1,000 operators, set operations or array \
brackets: a tree that deep could overflow the stack) is an `error` unless the recognizer understood all of it: \
the gate fails closed on what it could not fully check.",
    why: "A gate that silently skips what it cannot read passes exactly the unusual migration that needed \
review. Saying so keeps the verdict honest: the rest of the file is still checked, and a reviewer knows which \
statement to read by hand.",
    fix: "Read the statement by hand. If it is valid PostgreSQL, keep it and silence this finding with \
`-- sluice:ignore unparsed-statement -- <why it is safe>` on the line before it.",
    bad: "DO $$ BEGIN RAISE NOTICE 'hello'; END $$;",
    good: "-- sluice:ignore unparsed-statement -- only prints a notice\nDO $$ BEGIN RAISE NOTICE 'hello'; END $$;",
    equivalents: "squawk reports a parse error and stops; Sluice keeps checking the rest of the file.",
};

impl Rule for UnparsedStatement {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(error) = &cx.statement.parse_error else { return };
        let verdict = match &cx.statement.ddl {
            Ddl::Other(keywords) if keywords.is_empty() => "it was not checked".to_string(),
            Ddl::Other(keywords) => format!("Sluice does not know what `{keywords}` does, so it was not checked"),
            Ddl::CreateIndex(_) => "it was recognized as CREATE INDEX and checked as such".into(),
            Ddl::Drop { .. } => "it was recognized as DROP INDEX and checked as such".into(),
            Ddl::AlterTable { .. } => "it was recognized as ALTER TABLE and checked as far as it was understood".into(),
            Ddl::Rename { .. } => "it was recognized as a rename and checked as such".into(),
            Ddl::Reindex { .. } => "it was recognized as REINDEX".into(),
            _ => "it was only partly checked".into(),
        };
        let reason = match &cx.statement.too_deep {
            Some(_) => format!("Sluice did not parse this statement because {error}"),
            None => format!("the SQL parser could not read this statement ({error})"),
        };
        let mut finding = cx.finding(&META, format!("{reason}; {verdict}")).fact("parser", error.clone());
        if cx.statement.too_deep.is_some() {
            finding.severity = Severity::Error;
            finding.help = "Split the statement (a long chain of UNION or OR into several statements or an IN list, \
                deep nesting into CTEs), or read it by hand and silence this finding with \
                `-- sluice:ignore unparsed-statement -- <why it is safe>`."
                .into();
        }
        if cx.statement.fully_recognized {
            finding.severity = Severity::Info;
            finding.help = "Nothing to do: Sluice's recognizer understood every part of it and checked it.".into();
        }
        out.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn ordinary_migrations_sqlparser_rejects_neither_crash_nor_vanish() {
        let sql = "CREATE TABLE t (a int, b int);
ALTER TABLE t ADD CONSTRAINT t_ab UNIQUE NULLS NOT DISTINCT (a, b);
DROP INDEX CONCURRENTLY IF EXISTS t_ab;
ALTER TABLE t ALTER CONSTRAINT t_fk DEFERRABLE;
REINDEX INDEX CONCURRENTLY t_ab;
CREATE STATISTICS t_stats ON a, b FROM t;
ALTER SEQUENCE t_id_seq RENAME TO t_id_seq2;
DO $$ BEGIN PERFORM 1; END $$;
CREATE PROCEDURE p() LANGUAGE sql AS $$ SELECT 1 $$;
CREATE INDEX t_b ON t (b);";
        let found = lint_files(&[("001.sql", sql)], "");
        let unparsed: Vec<usize> = found.iter().filter(|f| f.rule == META.id).map(|f| f.line).collect();
        assert!(
            unparsed.contains(&3) && unparsed.contains(&4) && unparsed.contains(&5) && unparsed.contains(&8),
            "{unparsed:?}"
        );
        assert!(!unparsed.contains(&10));
        let drop = found.iter().find(|f| f.rule == META.id && f.line == 3).unwrap();
        assert!(drop.message.contains("recognized as DROP INDEX"), "{}", drop.message);
    }

    #[test]
    fn a_statement_too_deep_to_parse_fails_closed() {
        // An UPDATE nested 25 levels passed with a warning (issue 16, item 5).
        let nested = format!(
            "UPDATE t SET a = 1 WHERE b IN {}(SELECT 1){};",
            "(SELECT b FROM t WHERE b IN ".repeat(25),
            ")".repeat(25)
        );
        let chained = format!("CREATE VIEW v AS SELECT a FROM t{};", " UNION ALL SELECT a FROM t".repeat(1_001));
        for sql in [nested, chained] {
            let found = lint_files(&[("001.sql", &format!("CREATE TABLE t (a int, b int);\n{sql}"))], "");
            let f = found.iter().find(|f| f.rule == META.id).expect("reported");
            assert_eq!((f.line, f.severity), (2, Severity::Error));
            assert!(f.message.contains("did not parse this statement because it"), "{}", f.message);
        }
    }

    #[test]
    fn a_deep_statement_the_recognizer_understood_is_checked_as_such() {
        let predicate = format!("a = 1{}", " OR a = 1".repeat(600));
        let sql = format!("CREATE INDEX i ON t (a) WHERE {predicate};");
        let found = lint_files(&[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", &sql)], "");
        assert!(found.iter().any(|f| f.rule == "create-index-non-concurrently"), "{found:#?}");
        let f = found.iter().find(|f| f.rule == META.id).expect("reported");
        assert!(f.message.contains("recognized as CREATE INDEX"), "{}", f.message);
    }
}

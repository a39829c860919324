use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;

pub struct PreferJsonb;

pub static META: RuleMeta = RuleMeta {
    id: "prefer-jsonb",
    severity: Severity::Info,
    category: Category::Style,
    summary: "A column is declared json rather than jsonb",
    what: "Flags columns declared or retyped as `json`.",
    why: "`json` stores the text as given: it has no equality operator (so `SELECT DISTINCT`, `UNION` and \
GROUP BY on the row fail), cannot be indexed with GIN, and is re-parsed on every access.",
    fix: "Use `jsonb`, unless you need the exact input text (key order, duplicate keys, whitespace) preserved.",
    bad: "CREATE TABLE webhooks (id bigint PRIMARY KEY, payload json NOT NULL);",
    good: "CREATE TABLE webhooks (id bigint PRIMARY KEY, payload jsonb NOT NULL);",
    equivalents: "squawk: none; strong_migrations: add_column_json; eugene: E3",
};

impl Rule for PreferJsonb {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        for column in cx.declared_columns() {
            if column.base_type() == "json" {
                out.push(cx.column_finding(
                    &META,
                    column,
                    format!("{}.{} is json; jsonb compares, indexes and queries faster", column.table, column.name),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn add_column_and_type_changes() {
        let found = lint_files(&[("001.sql", "CREATE TABLE t (a jsonb, b json[]); ALTER TABLE t ADD COLUMN c json; ALTER TABLE t ALTER COLUMN a TYPE json;")], "");
        assert_eq!(of(&found, META.id).len(), 3);
        assert!(of(&found, META.id).iter().all(|f| f.severity == Severity::Info));
    }
}

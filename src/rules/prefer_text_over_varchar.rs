use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;

pub struct PreferTextOverVarchar;

pub static META: RuleMeta = RuleMeta {
    id: "prefer-text-over-varchar",
    severity: Severity::Info,
    category: Category::Style,
    summary: "A column is declared varchar(n) rather than text",
    what: "Flags columns declared or retyped as `varchar(n)` / `character varying(n)`. Unbounded `varchar` is not \
flagged.",
    why: "In PostgreSQL `varchar(n)` is `text` plus a length check, with no storage or speed benefit; when the \
limit proves too small, shrinking or changing it needs ACCESS EXCLUSIVE (and a rewrite when shrinking), while a \
CHECK constraint can be replaced with NOT VALID and validated without blocking.",
    fix: "Use `text`, with `CHECK (char_length(col) <= n)` if the limit is a real rule.",
    bad: "CREATE TABLE sites (id bigint PRIMARY KEY, name varchar(80) NOT NULL);",
    good: "CREATE TABLE sites (id bigint PRIMARY KEY, name text NOT NULL CHECK (char_length(name) <= 80));",
    equivalents: "squawk: prefer-text-field; strong_migrations: none; eugene: none",
};

impl Rule for PreferTextOverVarchar {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        for column in cx.declared_columns() {
            let varchar = matches!(column.base_type(), "varchar" | "character varying");
            if varchar && column.data_type.contains('(') {
                out.push(cx.column_finding(
                    &META,
                    column,
                    format!(
                        "{}.{} is {}; text with a CHECK constraint is as fast and easier to change",
                        column.table, column.name, column.data_type
                    ),
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
    fn bounded_varchar_only() {
        let count = |sql: &str| of(&lint_files(&[("001.sql", sql)], ""), META.id).len();
        assert_eq!(count("CREATE TABLE t (a varchar(10), b character varying(5), c varchar, d text);"), 2);
    }
}

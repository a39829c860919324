use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;

pub struct PreferTimestamptz;

pub static META: RuleMeta = RuleMeta {
    id: "prefer-timestamptz",
    severity: Severity::Info,
    category: Category::Style,
    summary: "A column is declared timestamp (without time zone) rather than timestamptz",
    what: "Flags columns declared or retyped as `timestamp`, `timestamp(n)` or `timestamp without time zone`.",
    why: "A `timestamp` does not record which instant it means: values written from sessions or servers in \
different time zones silently disagree, and daylight-saving changes produce duplicate or missing hours. The \
Spring Bird Count's observation windows are exactly such instants.",
    fix: "Use `timestamptz` (`timestamp with time zone`): it stores an instant and converts for display.",
    bad: "CREATE TABLE checklists (id bigint PRIMARY KEY, started_at timestamp NOT NULL);",
    good: "CREATE TABLE checklists (id bigint PRIMARY KEY, started_at timestamptz NOT NULL);",
    equivalents: "squawk: prefer-timestamp-tz; strong_migrations: none; eugene: none",
};

impl Rule for PreferTimestamptz {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        for column in cx.declared_columns() {
            let without_zone = column.base_type() == "timestamp" && !column.data_type.contains("with time zone")
                || column.data_type.contains("without time zone");
            if without_zone {
                out.push(cx.column_finding(
                    &META,
                    column,
                    format!(
                        "{}.{} is {}, which does not record the time zone; use timestamptz",
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
    fn spellings() {
        let found = lint_files(
            &[("001.sql", "CREATE TABLE t (a timestamp(3), b timestamp without time zone, c timestamptz, d timestamp with time zone, e TIMESTAMPTZ(6));")],
            "",
        );
        let names: Vec<&str> = of(&found, META.id).iter().map(|f| f.message.split(' ').next().unwrap()).collect();
        assert_eq!(names, ["t.a", "t.b"]);
    }

    #[test]
    fn points_at_the_column_that_declares_it() {
        let sql = "CREATE TABLE events (\n    id bigint,\n    happened_at timestamp NOT NULL\n);\n\
                   CREATE TABLE \"événements\" (id int);\n\
                   SELECT 1; ALTER TABLE \"événements\" ADD COLUMN seen_at timestamp;";
        let all = lint_files(&[("001.sql", sql)], "");
        let found = of(&all, META.id);
        assert_eq!((found[0].line, found[0].column, found[0].end_column), (3, 5, 16));
        assert_eq!((found[1].line, found[1].column, found[1].end_column), (6, 47, 54), "columns count characters");
    }
}

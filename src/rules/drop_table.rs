use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{Ddl, ObjectKind};

pub struct DropTable;

pub static META: RuleMeta = RuleMeta {
    id: "drop-table",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Dropping a table breaks the application code that still uses it, and loses its data",
    what: "Flags `DROP TABLE` of a table that existed before this migration, whatever its size. The message names \
the query files that still mention it.",
    why: "Running code that still queries the table fails at once, the data cannot be brought back by rolling \
back the code, and `CASCADE` silently drops the views and foreign keys that depend on it.",
    fix: "Contract step of expand/contract: ship code that no longer uses the table, (optionally rename it and \
wait), then drop it in a later release and acknowledge it with `-- sluice:ignore drop-table -- <why it is unused>`.",
    bad: "\
-- migration: 001_sessions.sql
CREATE TABLE legacy_sessions (id bigint PRIMARY KEY, token text);
-- migration: 002_drop_sessions.sql
SET lock_timeout = '5s';
DROP TABLE legacy_sessions;",
    good: "\
-- migration: 001_sessions.sql
CREATE TABLE legacy_sessions (id bigint PRIMARY KEY, token text);
-- migration: 002_drop_sessions.sql
SET lock_timeout = '5s';
-- sluice:ignore drop-table -- unused since release 3.0 moved sessions to redis; archived to s3
DROP TABLE legacy_sessions;",
    equivalents: "squawk: ban-drop-table; strong_migrations: none (drop_table is allowed); eugene: none",
};

impl Rule for DropTable {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::Drop { kind: ObjectKind::Table, names, .. } = &cx.statement.ddl else {
            return;
        };
        for name in names {
            if !cx.is_existing_table(name) {
                continue;
            }
            let users = super::drop_column::mentions(cx, name.rsplit('.').next().unwrap_or(name));
            let mut message =
                format!("dropping table {name} breaks running code that still uses it and deletes its data");
            if !users.is_empty() {
                message.push_str(&format!("; still mentioned by {}", users.join(", ")));
            }
            out.push(cx.finding(&META, message).fact("table", name.as_str()).fact("table rows", cx.size_fact(name)));
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
    fn only_tables_from_earlier_migrations() {
        let found = lint_files(
            &[
                ("001.sql", "CREATE TABLE a (x int);"),
                ("002.sql", "CREATE TABLE tmp (x int); DROP TABLE tmp; DROP TABLE IF EXISTS a;"),
            ],
            "",
        );
        let f = of(&found, META.id);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("table a"), "{}", f[0].message);
    }
}

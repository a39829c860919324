use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::names::shown;

pub struct RenameColumn;

pub static META: RuleMeta = RuleMeta {
    id: "rename-column",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Renaming a column breaks the application code that is still running",
    what: "Flags `ALTER TABLE … RENAME COLUMN` on a table that existed before this migration, whatever its size.",
    why: "During a deploy the old application version keeps running against the migrated schema: every query \
naming the old column fails until the last old instance is gone, and a rollback of the code fails the same way.",
    fix: "Expand/contract: add the new column, write both (application or trigger), backfill in batches, switch \
reads to the new column, and drop the old one in a later release once no running code uses it.",
    bad: "\
-- migration: 001_users.sql
CREATE TABLE users (id bigint PRIMARY KEY, name text);
-- migration: 002_rename_name.sql
SET lock_timeout = '5s';
ALTER TABLE users RENAME COLUMN name TO full_name;",
    good: "\
-- migration: 001_users.sql
CREATE TABLE users (id bigint PRIMARY KEY, name text);
-- migration: 002_expand_full_name.sql
SET lock_timeout = '5s';
ALTER TABLE users ADD COLUMN full_name text;
-- migration: 003_backfill_full_name.sql
SET statement_timeout = '60s';
UPDATE users SET full_name = name WHERE id BETWEEN 1 AND 10000 AND full_name IS NULL;",
    equivalents: "squawk: renaming-column; strong_migrations: rename_column; eugene: none",
};

impl Rule for RenameColumn {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        if !cx.is_existing_table(table) {
            return;
        }
        for action in actions {
            let AlterAction::RenameColumn { from, to } = action else {
                continue;
            };
            out.push(
                cx.finding(
                    &META,
                    format!(
                        "renaming {}.{} to {} breaks every running query that still names {1}",
                        shown(table),
                        shown(from),
                        shown(to)
                    ),
                )
                .fact("table", table.as_str()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn any_existing_table_even_a_tiny_one() {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (a int);"), ("002.sql", "ALTER TABLE t RENAME COLUMN a TO b;")],
            &Setup { tables: "[rows]\nt = 2\n", ..Setup::default() },
        );
        assert_eq!(of(&found, META.id).len(), 1);
        let found =
            lint_with(&[("001.sql", "CREATE TABLE t (a int); ALTER TABLE t RENAME a TO b;")], &Setup::default());
        assert!(of(&found, META.id).is_empty());
    }
}

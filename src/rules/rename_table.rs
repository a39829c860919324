use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl, ObjectKind};

pub struct RenameTable;

pub static META: RuleMeta = RuleMeta {
    id: "rename-table",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Renaming a table breaks the application code that is still running",
    what: "Flags `ALTER TABLE … RENAME TO` on a table that existed before this migration, unless the same file \
then creates a view with the old name (the compatibility view of an expand/contract rename).",
    why: "The old application version keeps running during the deploy: every query on the old name fails with \
`relation does not exist` until the last old instance is gone.",
    fix: "Rename and, in the same transaction, `CREATE VIEW old_name AS SELECT * FROM new_name` (a simple view \
is updatable, so old code keeps reading and writing); drop the view in a later release. Or copy to a new table \
with dual writes.",
    bad: "\
-- migration: 001_customers.sql
CREATE TABLE customer (id bigint PRIMARY KEY, name text);
-- migration: 002_rename_customer.sql
SET lock_timeout = '5s';
ALTER TABLE customer RENAME TO customers;",
    good: "\
-- migration: 001_customers.sql
CREATE TABLE customer (id bigint PRIMARY KEY, name text);
-- migration: 002_rename_customer.sql
SET lock_timeout = '5s';
BEGIN;
ALTER TABLE customer RENAME TO customers;
CREATE VIEW customer AS SELECT * FROM customers;
COMMIT;",
    equivalents: "squawk: renaming-table; strong_migrations: rename_table; eugene: none",
};

impl Rule for RenameTable {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let renames: Vec<(String, String)> = match &cx.statement.ddl {
            Ddl::AlterTable { table, actions, .. } => actions
                .iter()
                .filter_map(|a| match a {
                    AlterAction::RenameTable { to } => Some((table.clone(), to.clone())),
                    _ => None,
                })
                .collect(),
            Ddl::Rename { kind: ObjectKind::Table, from, to, .. } => vec![(from.clone(), to.clone())],
            _ => return,
        };
        for (from, to) in renames {
            if !cx.is_existing_table(&from) {
                continue;
            }
            let later = cx.file.parsed.statements.iter().filter(|s| s.span.start > cx.statement.span.start);
            let compatibility_view =
                later.clone().any(|s| matches!(&s.ddl, Ddl::CreateView { name, .. } if *name == from));
            if compatibility_view {
                continue;
            }
            out.push(
                cx.finding(
                    &META,
                    format!("renaming table {from} to {to} breaks every running query that still uses {from}"),
                )
                .fact("table", from.as_str()),
            );
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
    fn the_view_must_carry_the_old_name() {
        let count =
            |sql: &str| of(&lint_files(&[("001.sql", "CREATE TABLE a (x int);"), ("002.sql", sql)], ""), META.id).len();
        assert_eq!(count("ALTER TABLE a RENAME TO b; CREATE VIEW c AS SELECT * FROM b;"), 1);
        assert_eq!(count("ALTER TABLE a RENAME TO b; CREATE VIEW a AS SELECT * FROM b;"), 0);
        assert_eq!(
            of(&lint_files(&[("001.sql", "CREATE TABLE a (x int); ALTER TABLE a RENAME TO b;")], ""), META.id).len(),
            0
        );
    }
}

use super::claims::{self, Work};
use super::locks::Lock;
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::names::shown;

pub struct AddColumnNotNullWithoutDefault;

pub static META: RuleMeta = RuleMeta {
    id: "add-column-not-null-without-default",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ADD COLUMN … NOT NULL without a default fails on any table that has rows",
    what: "Flags `ALTER TABLE … ADD COLUMN … NOT NULL` (or `PRIMARY KEY`) with no default, identity or \
generated expression, on a table that existed before this migration. Table size does not matter: one row is \
enough to fail.",
    why: "PostgreSQL must fill the new column for existing rows; with no default it fills NULL, violates NOT NULL \
and aborts: `column … contains null values`. It passed on the empty development database and fails in \
production, halfway through the deploy.",
    fix: "Add the column nullable (or with a constant default, cheap from PostgreSQL 11), backfill it in batches, \
then add `CHECK (col IS NOT NULL) NOT VALID`, `VALIDATE CONSTRAINT`, and `SET NOT NULL`.",
    bad: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, name text NOT NULL);
-- migration: 002_account_region.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ADD COLUMN region text NOT NULL;",
    good: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, name text NOT NULL);
-- migration: 002_account_region.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ADD COLUMN region text NOT NULL DEFAULT 'eu';",
    equivalents:
        "squawk: adding-required-field; strong_migrations: add_column (NOT NULL without default); eugene: none",
};

impl Rule for AddColumnNotNullWithoutDefault {
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
            let AlterAction::AddColumn { column, .. } = action else {
                continue;
            };
            let has_default = column.default.as_ref().is_some_and(|d| !d.expression.eq_ignore_ascii_case("null"));
            if !column.not_null || has_default || column.identity || column.generated_stored {
                continue;
            }
            let finding = cx
                .finding(
                    &META,
                    format!(
                        "column {} is added to existing table {} as NOT NULL without a default: PostgreSQL checks every row under ACCESS EXCLUSIVE, and the migration fails as soon as the table has one",
                        shown(&column.name),
                        shown(table)
                    ),
                )
                .fact("table", table.as_str())
                .fact("table rows", cx.size_fact(table));
            let claims = [cx.claim_lock(table, Lock::AccessExclusive), cx.claim_work(table, Work::Scan)];
            out.push(claims::add(finding, claims));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    fn count(sql: &str) -> usize {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (id bigint);"), ("002.sql", sql)],
            &Setup { tables: "[rows]\nt = 3\n", ..Setup::default() },
        );
        of(&found, META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn fires_even_on_tiny_tables_and_only_without_a_default() {
        assert_eq!(count("ALTER TABLE t ADD COLUMN a int NOT NULL;"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN a int NOT NULL DEFAULT NULL;"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN k bigint PRIMARY KEY;"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN a int NOT NULL DEFAULT 0;"), 0);
        assert_eq!(count("ALTER TABLE t ADD COLUMN a int;"), 0);
        assert_eq!(count("ALTER TABLE t ADD COLUMN k bigint GENERATED ALWAYS AS IDENTITY;"), 0);
        assert_eq!(count("CREATE TABLE u (id int); ALTER TABLE u ADD COLUMN a int NOT NULL;"), 0);
    }
}

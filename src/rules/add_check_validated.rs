use super::claims::{self, Work};
use super::locks::Lock;
use super::{work, Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::ConstraintKind;

pub struct AddCheckValidated;

pub static META: RuleMeta = RuleMeta {
    id: "add-check-validated",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Adding a CHECK constraint without NOT VALID scans the table under ACCESS EXCLUSIVE",
    what: "Flags `ADD CONSTRAINT … CHECK (…)` (and `ADD COLUMN … CHECK`) without `NOT VALID` on a table that \
existed before this migration. Severity follows the table's size.",
    why: "PostgreSQL checks every existing row while holding ACCESS EXCLUSIVE: no reads or writes for the whole \
scan.",
    fix: "Add the constraint with `NOT VALID` (new writes are checked at once), then `VALIDATE CONSTRAINT` in a \
later migration, which scans under SHARE UPDATE EXCLUSIVE and lets traffic through.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, quantity int NOT NULL);
-- migration: 002_quantity_positive.sql
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_quantity_positive CHECK (quantity > 0);",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, quantity int NOT NULL);
-- migration: 002_quantity_positive.sql
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_quantity_positive CHECK (quantity > 0) NOT VALID;
-- migration: 003_validate_quantity_positive.sql
SET lock_timeout = '5s';
SET statement_timeout = '30min';
ALTER TABLE orders VALIDATE CONSTRAINT orders_quantity_positive;",
    equivalents: "squawk: constraint-missing-not-valid; strong_migrations: add_check_constraint; eugene: E1",
};

impl Rule for AddCheckValidated {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        for (table, c, column) in cx.added_constraints() {
            let ConstraintKind::Check { expression } = &c.kind else {
                continue;
            };
            if !work::validates_existing_rows(c, column) {
                continue;
            }
            let name = cx.added_constraint_name(table, c);
            let message = format!(
                "CHECK constraint {name} ({expression}) on existing table {table} is validated immediately: every row is scanned under ACCESS EXCLUSIVE"
            );
            let claims = [cx.claim_lock(table, Lock::AccessExclusive), cx.claim_work(table, Work::Scan)];
            out.extend(cx.lock_finding(&META, table, message).map(|f| claims::add(f, claims)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    fn count(sql: &str) -> usize {
        of(&lint_files(&[("001.sql", "CREATE TABLE t (id bigint, a int);"), ("002.sql", sql)], ""), META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn not_valid_and_new_tables_pass() {
        assert_eq!(count("ALTER TABLE t ADD CHECK (a > 0);"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN b int CHECK (b > 0);"), 1);
        assert_eq!(count("ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0) NOT VALID;"), 0);
        assert_eq!(count("CREATE TABLE u (a int); ALTER TABLE u ADD CHECK (a > 0);"), 0);
    }
}

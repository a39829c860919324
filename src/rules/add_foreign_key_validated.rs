use super::claims::{self, Work};
use super::locks::Lock;
use super::{work, Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::ConstraintKind;

pub struct AddForeignKeyValidated;

pub static META: RuleMeta = RuleMeta {
    id: "add-foreign-key-validated",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "Adding a foreign key without NOT VALID scans the table while blocking writes on both tables",
    what: "Flags `ADD CONSTRAINT … FOREIGN KEY` (and `ADD COLUMN … REFERENCES`) without `NOT VALID` on a table \
that existed before this migration. A column added with `REFERENCES` and no `DEFAULT` is not flagged: every \
existing row holds NULL there, so PostgreSQL skips the check and marks the constraint valid (PostgreSQL 15's \
`transformAlterTableStmt`: only a column with a default makes it validate; observed with \
`pg_stat_xact_user_tables` on PostgreSQL 15, where any `DEFAULT`, even `DEFAULT NULL`, makes it scan). Its \
locks remain, for `missing-lock-timeout`. Severity follows the table's size.",
    why: "Validation checks every existing row against the referenced table while holding SHARE ROW EXCLUSIVE on \
both: writes to both tables stop for the whole scan.",
    fix: "Add the constraint with `NOT VALID` (only new writes are checked; the lock is brief), then run \
`VALIDATE CONSTRAINT` in a later migration: it scans under SHARE UPDATE EXCLUSIVE, which lets writes through.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE customers (id bigint PRIMARY KEY);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint);
-- migration: 002_orders_customer_fk.sql
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id);",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE customers (id bigint PRIMARY KEY);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint);
-- migration: 002_orders_customer_fk.sql
SET lock_timeout = '5s';
ALTER TABLE orders ADD CONSTRAINT orders_customer_fk FOREIGN KEY (customer_id) REFERENCES customers (id) NOT VALID;
-- migration: 003_validate_orders_customer_fk.sql
SET lock_timeout = '5s';
SET statement_timeout = '30min';
ALTER TABLE orders VALIDATE CONSTRAINT orders_customer_fk;",
    equivalents: "squawk: adding-foreign-key-constraint; strong_migrations: add_foreign_key; eugene: E1",
};

impl Rule for AddForeignKeyValidated {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        for (table, c, column) in cx.added_constraints() {
            let ConstraintKind::ForeignKey { references, .. } = &c.kind else {
                continue;
            };
            if !work::validates_existing_rows(c, column) {
                continue;
            }
            let name = cx.added_constraint_name(table, c);
            let message = format!(
                "foreign key {name} on existing table {table} is validated immediately: every row is checked against {references} while writes to both tables are blocked"
            );
            let claims = [
                cx.claim_lock(table, Lock::ShareRowExclusive),
                cx.claim_lock(references, Lock::ShareRowExclusive),
                cx.claim_work(table, Work::Scan),
            ];
            out.extend(cx.lock_finding(&META, table, message).map(|f| claims::add(f, claims)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, lint_with, of, Setup};

    /// Issue 37: 40 of one history's 55 findings said "every row is checked" of a column added
    /// with REFERENCES and no default, where PostgreSQL checks none (its scan counters stay put).
    #[test]
    fn a_column_added_without_a_default_holds_only_nulls_and_is_not_validated() {
        assert_eq!(count("ALTER TABLE t ADD COLUMN q_id bigint REFERENCES p (id);"), 0);
        assert_eq!(
            count("ALTER TABLE t ADD COLUMN q_id bigint DEFAULT NULL REFERENCES p (id);"),
            1,
            "any DEFAULT validates"
        );
        assert_eq!(count("ALTER TABLE t ADD COLUMN q_id bigint, ADD FOREIGN KEY (p_id) REFERENCES p (id);"), 1);
        // Its locks remain: ACCESS EXCLUSIVE on t, SHARE ROW EXCLUSIVE on p, with no scan.
        let all = lint_with(
            &[
                ("001.sql", "CREATE TABLE p (id bigint PRIMARY KEY); CREATE TABLE t (id bigint, p_id bigint); CREATE TABLE u (id bigint);"),
                ("002.sql", "ALTER TABLE u ADD COLUMN n int;\nALTER TABLE t ADD COLUMN q_id bigint REFERENCES p (id);"),
            ],
            &Setup { in_transaction: true, ..Setup::default() },
        );
        let timeout = of(&all, "missing-lock-timeout");
        let claims: Vec<String> = timeout
            .iter()
            .flat_map(|f| crate::rules::claims::of(f))
            .filter(|c| c["line"] == 2)
            .map(|c| format!("{} {}", c["lock"].as_str().unwrap_or(""), c["table"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(claims, ["ACCESS EXCLUSIVE t", "SHARE ROW EXCLUSIVE p"]);
        assert!(of(&all, "lock-held-across-statements").is_empty(), "no scan keeps u's lock: {all:#?}");
    }

    fn count(sql: &str) -> usize {
        of(
            &lint_files(
                &[
                    ("001.sql", "CREATE TABLE p (id bigint PRIMARY KEY); CREATE TABLE t (id bigint, p_id bigint);"),
                    ("002.sql", sql),
                ],
                "",
            ),
            META.id,
        )
        .len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn constraint_and_column_forms() {
        assert_eq!(count("ALTER TABLE t ADD FOREIGN KEY (p_id) REFERENCES p (id);"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN q_id bigint DEFAULT 1 REFERENCES p (id);"), 1);
        assert_eq!(count("ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (p_id) REFERENCES p (id) NOT VALID;"), 0);
        assert_eq!(count("CREATE TABLE c (id bigint, p_id bigint REFERENCES p (id)); ALTER TABLE c ADD FOREIGN KEY (id) REFERENCES p (id);"), 0);
    }
}

use super::claims::{self, Work};
use super::locks::Lock;
use super::work::{self, NotNullProof};
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::names::shown;

pub struct SetNotNull;

pub static META: RuleMeta = RuleMeta {
    id: "set-not-null",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "SET NOT NULL scans the whole table under ACCESS EXCLUSIVE",
    what: "Flags `ALTER COLUMN … SET NOT NULL` on an existing table, unless a validated \
`CHECK (col IS NOT NULL)` constraint already exists and `postgres_version` is 12 or later (PostgreSQL then \
skips the scan). Before 12 there is no scan-free way, and the rule always fires. A column that is NOT NULL \
already (declared so, or in a primary key) is not scanned: the statement only takes a brief ACCESS EXCLUSIVE, \
which `missing-lock-timeout` covers (PostgreSQL 15's `ATExecSetNotNull` asks for the check only when the \
column was nullable; observed with `pg_stat_xact_user_tables` on PostgreSQL 15). Severity follows the table's size.",
    why: "PostgreSQL verifies every row while holding ACCESS EXCLUSIVE: the table is unreadable and unwritable \
for the length of a full scan.",
    fix: "Add `CHECK (col IS NOT NULL) NOT VALID` (instant), `VALIDATE CONSTRAINT` in a later migration (scans \
under SHARE UPDATE EXCLUSIVE, which lets reads and writes through), then `SET NOT NULL` (PostgreSQL 12+ uses the \
validated check and skips the scan) and drop the now redundant check.",
    bad: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, email text);
-- migration: 002_email_required.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ALTER COLUMN email SET NOT NULL;",
    good: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, email text);
-- migration: 002_email_not_null_check.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ADD CONSTRAINT accounts_email_not_null CHECK (email IS NOT NULL) NOT VALID;
-- migration: 003_validate_email_check.sql
SET lock_timeout = '5s';
SET statement_timeout = '30min';
ALTER TABLE accounts VALIDATE CONSTRAINT accounts_email_not_null;
-- migration: 004_email_required.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ALTER COLUMN email SET NOT NULL;
ALTER TABLE accounts DROP CONSTRAINT accounts_email_not_null;",
    equivalents: "squawk: adding-not-nullable-field; strong_migrations: change_column_null; eugene: E2",
};

impl Rule for SetNotNull {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        for action in actions {
            let AlterAction::SetNotNull { column } = action else {
                continue;
            };
            let version = cx.facts.postgres_version;
            let named = format!("{}.{}", shown(table), shown(column));
            let message = match work::set_not_null_proven(cx.schema, table, column, version) {
                Some(proof) if proof.skips_scan() => continue,
                Some(NotNullProof::CheckBefore12(check)) => format!(
                    "SET NOT NULL on {named} scans the whole table under ACCESS EXCLUSIVE: PostgreSQL {version} cannot use the validated check {check} (12+ can)"
                ),
                Some(NotNullProof::CheckNotValid(check)) => format!(
                    "SET NOT NULL on {named} scans the whole table under ACCESS EXCLUSIVE: the check {check} is NOT VALID yet; VALIDATE it in an earlier migration"
                ),
                _ => format!("SET NOT NULL on {named} scans the whole table under ACCESS EXCLUSIVE to verify every row"),
            };
            let claims = [cx.claim_lock(table, Lock::AccessExclusive), cx.claim_work(table, Work::Scan)];
            out.extend(
                cx.lock_finding(&META, table, message)
                    .map(|f| claims::add(f.fact("postgres version", version.to_string()), claims)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    const TABLE: &str = "CREATE TABLE t (id bigint, a int);";
    const CHECK: &str = "ALTER TABLE t ADD CONSTRAINT a_nn CHECK ((a IS NOT NULL)) NOT VALID;";

    fn count(files: &[(&str, &str)], version: u32) -> usize {
        of(&lint_with(files, &Setup { postgres_version: Some(version), ..Setup::default() }), META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn a_validated_check_avoids_the_scan_from_postgres_12() {
        let set = "ALTER TABLE t ALTER COLUMN a SET NOT NULL;";
        let validated = [
            ("001.sql", TABLE),
            ("002.sql", CHECK),
            ("003.sql", "ALTER TABLE t VALIDATE CONSTRAINT a_nn;"),
            ("004.sql", set),
        ];
        assert_eq!(count(&validated, 12), 0);
        assert_eq!(count(&validated, 11), 1, "PostgreSQL 11 scans anyway");
        assert_eq!(count(&[("001.sql", TABLE), ("002.sql", CHECK), ("003.sql", set)], 15), 1, "not validated yet");
        assert_eq!(count(&[("001.sql", TABLE), ("002.sql", set)], 15), 1);
        assert_eq!(count(&[("001.sql", &format!("{TABLE} {set}"))], 15), 0);
    }

    /// Issue 37: a column NOT NULL already is not checked again (PostgreSQL 15's scan counters do
    /// not move); the statement still takes a brief ACCESS EXCLUSIVE.
    #[test]
    fn a_column_that_is_not_null_already_is_not_scanned() {
        let table = "CREATE TABLE t (id bigint PRIMARY KEY, a int NOT NULL, b int, c serial, d int GENERATED ALWAYS AS IDENTITY);";
        for column in ["id", "a", "c", "d"] {
            let set = format!("ALTER TABLE t ALTER COLUMN {column} SET NOT NULL;");
            let all = lint_with(&[("001.sql", table), ("002.sql", &set)], &Setup::default());
            assert!(of(&all, META.id).is_empty(), "{set}");
            assert!(of(&all, "missing-lock-timeout")[0].message.starts_with("takes ACCESS EXCLUSIVE on t"), "{set}");
        }
        let set = "ALTER TABLE t ALTER COLUMN b SET NOT NULL;";
        assert_eq!(count(&[("001.sql", table), ("002.sql", set)], 15), 1);
        // Set NOT NULL once, dropped again: the next SET NOT NULL scans.
        let again = [
            ("001.sql", table),
            ("002.sql", set),
            ("003.sql", "ALTER TABLE t ALTER COLUMN b DROP NOT NULL;"),
            ("004.sql", set),
        ];
        assert_eq!(count(&again, 15), 2);
        let twice = [("001.sql", table), ("002.sql", set), ("003.sql", set)];
        assert_eq!(count(&twice, 15), 1, "the second finds it NOT NULL already");
    }

    /// Issue 37: a validated check on a quoted mixed-case column is the same column.
    #[test]
    fn quoted_mixed_case_columns_are_followed() {
        let table = "CREATE TABLE \"Account\" (id bigint, \"isPaused\" boolean);";
        let check = "ALTER TABLE \"Account\" ADD CONSTRAINT paused_nn CHECK (\"isPaused\" IS NOT NULL) NOT VALID;";
        let set = "ALTER TABLE \"Account\" ALTER COLUMN \"isPaused\" SET NOT NULL;";
        let validated = [
            ("001.sql", table),
            ("002.sql", check),
            ("003.sql", "ALTER TABLE \"Account\" VALIDATE CONSTRAINT paused_nn;"),
            ("004.sql", set),
        ];
        assert_eq!(count(&validated, 15), 0);
        let found = lint_with(&[("001.sql", table), ("002.sql", set)], &Setup::default());
        assert!(of(&found, META.id)[0].message.starts_with("SET NOT NULL on \"Account\".\"isPaused\" scans"));
        let folded =
            [("001.sql", table), ("002.sql", &check.replace("\"isPaused\" IS", "isPaused IS")), ("003.sql", set)];
        assert_eq!(count(&folded, 15), 1, "unquoted, the check reads ispaused, another column");
    }
}

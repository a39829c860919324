use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl};

pub struct SetNotNull;

pub static META: RuleMeta = RuleMeta {
    id: "set-not-null",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "SET NOT NULL scans the whole table under ACCESS EXCLUSIVE",
    what: "Flags `ALTER COLUMN … SET NOT NULL` on an existing table, unless a validated \
`CHECK (col IS NOT NULL)` constraint already exists and `postgres_version` is 12 or later (PostgreSQL then \
skips the scan). Before 12 there is no scan-free way, and the rule always fires. Severity follows the table's \
size.",
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

/// `col IS NOT NULL`, however it was written.
fn is_not_null_check(expression: &str, column: &str) -> bool {
    let normalized: String =
        expression.chars().filter(|c| !matches!(c, '(' | ')' | '"')).collect::<String>().to_lowercase();
    normalized.split_whitespace().collect::<Vec<_>>() == [column, "is", "not", "null"]
}

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
            let check = cx.schema.table(table).and_then(|t| {
                t.constraints.iter().find(|c| matches!(&c.kind, ConstraintKind::Check { expression } if is_not_null_check(expression, column)))
            });
            let version = cx.facts.postgres_version;
            let message = match check {
                Some(c) if !c.not_valid && version >= 12 => continue,
                Some(c) if !c.not_valid => format!(
                    "SET NOT NULL on {table}.{column} scans the whole table under ACCESS EXCLUSIVE: PostgreSQL {version} cannot use the validated check {} (12+ can)",
                    c.name
                ),
                Some(c) => format!(
                    "SET NOT NULL on {table}.{column} scans the whole table under ACCESS EXCLUSIVE: the check {} is NOT VALID yet; VALIDATE it in an earlier migration",
                    c.name
                ),
                None => format!("SET NOT NULL on {table}.{column} scans the whole table under ACCESS EXCLUSIVE to verify every row"),
            };
            out.extend(cx.lock_finding(&META, table, message).map(|f| f.fact("postgres version", version.to_string())));
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
}

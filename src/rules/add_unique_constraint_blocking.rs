use super::claims::{self, Work};
use super::locks::Lock;
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::ConstraintKind;

pub struct AddUniqueConstraintBlocking;

pub static META: RuleMeta = RuleMeta {
    id: "add-unique-constraint-blocking",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ADD UNIQUE builds its index under ACCESS EXCLUSIVE",
    what: "Flags `ADD [CONSTRAINT …] UNIQUE (…)` and `ADD COLUMN … UNIQUE` on a table that existed before this \
migration. `ADD CONSTRAINT … UNIQUE USING INDEX` is the fix and is not flagged. Severity follows the table's \
size. (Whether the uniqueness itself is right is `domain-identity-unique`'s and \
`unique-constraint-on-existing-table`'s concern.)",
    why: "The unique index is built while ACCESS EXCLUSIVE is held: reads and writes stop for the whole build.",
    fix: "Build the index first with `CREATE UNIQUE INDEX CONCURRENTLY`, then attach it with \
`ALTER TABLE … ADD CONSTRAINT … UNIQUE USING INDEX …`, which only takes a brief lock.",
    bad: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, email text NOT NULL);
-- migration: 002_unique_email.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ADD CONSTRAINT accounts_email_key UNIQUE (email);",
    good: "\
-- migration: 001_accounts.sql
CREATE TABLE accounts (id bigint PRIMARY KEY, email text NOT NULL);
-- migration: 002_unique_email_index.sql
SET lock_timeout = '5s';
-- sluice:ignore unique-constraint-on-existing-table -- e-mail addresses identify accounts, reviewed with the domain team
CREATE UNIQUE INDEX CONCURRENTLY accounts_email_idx ON accounts (email);
-- migration: 003_unique_email.sql
SET lock_timeout = '5s';
ALTER TABLE accounts ADD CONSTRAINT accounts_email_key UNIQUE USING INDEX accounts_email_idx;",
    equivalents: "squawk: disallowed-unique-constraint; strong_migrations: add_unique_constraint; eugene: E7",
};

impl Rule for AddUniqueConstraintBlocking {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        for (table, c, _) in cx.added_constraints() {
            let ConstraintKind::Unique { columns, .. } = &c.kind else {
                continue;
            };
            let name = cx.added_constraint_name(table, c);
            let message = format!(
                "UNIQUE constraint {name} ({}) on existing table {table} builds its index under ACCESS EXCLUSIVE, blocking reads and writes",
                columns.join(", ")
            );
            let claims = [
                cx.claim_lock(table, Lock::AccessExclusive),
                cx.claim_work(table, Work::Build).on_index(name.as_str()),
            ];
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
    fn using_index_and_new_tables_pass() {
        assert_eq!(count("ALTER TABLE t ADD UNIQUE (a);"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN b int UNIQUE;"), 1);
        assert_eq!(count("CREATE UNIQUE INDEX CONCURRENTLY t_a ON t (a); ALTER TABLE t ADD CONSTRAINT t_a_key UNIQUE USING INDEX t_a;"), 0);
        assert_eq!(count("ALTER TABLE t ADD PRIMARY KEY (id);"), 0, "primary keys are add-primary-key-blocking's");
        assert_eq!(count("CREATE TABLE u (a int); ALTER TABLE u ADD UNIQUE (a);"), 0);
    }
}

use super::{Context, MigrationState, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::locks::table_locks;
use crate::rules::Category;
use crate::schema::Schema;
use crate::sql::ddl::{AlterAction, Ddl};

pub struct LockHeldAcrossStatements;

pub static META: RuleMeta = RuleMeta {
    id: "lock-held-across-statements",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "More work runs in a transaction that already holds ACCESS EXCLUSIVE on an existing table",
    what: "Flags the first statement that does real work (touches another existing table, reads or writes rows, \
builds an index, validates or rewrites) after a statement took ACCESS EXCLUSIVE on an existing table in the same \
transaction — an explicit `BEGIN … COMMIT` or the runner's per-file transaction. Quick catalog-only changes to \
the same table, new tables, views, functions, comments and SET are not flagged. Severity follows the locked \
table's size.",
    why: "Locks are held until COMMIT: the table stays unreadable and unwritable for the duration of everything \
that follows, not just the quick ALTER, and locking further tables while holding it invites deadlocks.",
    fix: "Commit right after the statement that takes ACCESS EXCLUSIVE: put the slow work (backfills, index \
builds, validations, changes to other tables) in its own transaction or migration.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
CREATE TABLE customers (id bigint PRIMARY KEY, tier text);
-- migration: 002_tiers.sql
SET lock_timeout = '5s';
BEGIN;
ALTER TABLE orders ADD COLUMN tier text;
ALTER TABLE customers ALTER COLUMN tier SET DEFAULT 'basic';
COMMIT;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
CREATE TABLE customers (id bigint PRIMARY KEY, tier text);
-- migration: 002_tiers.sql
SET lock_timeout = '5s';
BEGIN;
ALTER TABLE orders ADD COLUMN tier text;
COMMIT;
BEGIN;
ALTER TABLE customers ALTER COLUMN tier SET DEFAULT 'basic';
COMMIT;",
    equivalents: "squawk: none; strong_migrations: none; eugene: E4",
};

/// Catalog-only changes: instant once the lock is held.
fn is_quick(action: &AlterAction) -> bool {
    match action {
        AlterAction::AddColumn { column, .. } => {
            super::add_column_volatile_default::rewrite_reason(column, u32::MAX).is_none()
                && column
                    .constraints
                    .iter()
                    .all(|c| c.not_valid || !matches!(c.kind, crate::sql::ddl::ConstraintKind::Check { .. }))
                && column.constraints.iter().all(|c| !c.is_unique())
        }
        AlterAction::AddConstraint(c) => c.not_valid,
        AlterAction::SetDefault { default, .. } => !default.volatile,
        AlterAction::DropColumn { .. }
        | AlterAction::RenameColumn { .. }
        | AlterAction::RenameTable { .. }
        | AlterAction::DropNotNull { .. }
        | AlterAction::DropDefault { .. }
        | AlterAction::DropConstraint { .. }
        | AlterAction::RenameConstraint { .. } => true,
        _ => false,
    }
}

/// Whether `ddl`, run while `state` holds ACCESS EXCLUSIVE on a table, keeps that lock held for real work.
pub fn prolongs_lock(ddl: &Ddl, schema: &Schema, state: &MigrationState) -> bool {
    let Some(held) = &state.exclusive_lock else {
        return false;
    };
    let existing = |t: &str| state.may_exist(t, schema);
    match ddl {
        Ddl::Set { .. } | Ddl::Reset { .. } | Ddl::Begin | Ddl::Commit | Ddl::Rollback => false,
        Ddl::CreateView { .. } | Ddl::CreateFunction { .. } | Ddl::CreateTable { .. } => false,
        Ddl::Other(keywords) => !keywords.starts_with("COMMENT"),
        Ddl::Comment(_) => false,
        Ddl::Update { table, .. } | Ddl::Delete { table, .. } | Ddl::Insert { table } => existing(table),
        Ddl::Query => true,
        Ddl::AlterTable { table, actions, .. } if *table == held.table => {
            !actions.iter().all(is_quick)
                || table_locks(ddl, schema).iter().any(|(t, _)| *t != held.table && existing(t))
        }
        _ => table_locks(ddl, schema).iter().any(|(t, _)| existing(t)),
    }
}

impl Rule for LockHeldAcrossStatements {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        let Some(held) = &state.exclusive_lock else { return };
        if state.statements_under_lock > 0 || !prolongs_lock(&cx.statement.ddl, cx.schema, state) {
            return;
        }
        let message = format!(
            "runs while this transaction still holds the ACCESS EXCLUSIVE lock taken on {} at line {}: reads and writes of {} stay blocked until COMMIT",
            held.table, held.line, held.table
        );
        out.extend(
            cx.lock_finding(&META, &held.table, message).map(|f| f.fact("lock taken at line", held.line.to_string())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    fn lines(sql: &str, runner: bool) -> Vec<usize> {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE a (id int, x int); CREATE TABLE b (id int);"), ("002.sql", sql)],
            &Setup { in_transaction: runner, ..Setup::default() },
        );
        of(&found, META.id).iter().map(|f| f.line).collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn first_real_statement_under_the_lock() {
        assert_eq!(
            lines("BEGIN;\nALTER TABLE a ADD COLUMN y int;\nUPDATE a SET y = 1;\nUPDATE a SET y = 2;\nCOMMIT;", false),
            [3]
        );
        assert_eq!(
            lines("ALTER TABLE a ADD COLUMN y int;\nCREATE INDEX a_y ON a (y);", true),
            [2],
            "the runner's transaction"
        );
        assert_eq!(
            lines("ALTER TABLE a ADD COLUMN y int;\nCREATE INDEX a_y ON a (y);", false),
            Vec::<usize>::new(),
            "autocommit"
        );
        assert_eq!(
            lines("BEGIN;\nALTER TABLE a ADD COLUMN y int;\nALTER TABLE a RENAME COLUMN x TO z;\nCREATE TABLE c (id int);\nCOMMENT ON TABLE c IS 'c';\nCREATE INDEX c_id ON c (id);\nCOMMIT;", false),
            Vec::<usize>::new(),
            "quick changes and new tables"
        );
        assert_eq!(
            lines("BEGIN;\nALTER TABLE a ADD COLUMN y int;\nCOMMIT;\nALTER TABLE b ADD COLUMN y int;", false),
            Vec::<usize>::new()
        );
        assert_eq!(
            lines("BEGIN;\nCREATE INDEX a_x ON a (x);\nUPDATE a SET x = 1;\nCOMMIT;", false),
            Vec::<usize>::new(),
            "SHARE is not ACCESS EXCLUSIVE"
        );
    }
}

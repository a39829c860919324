use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl, ObjectKind, ReindexKind};

pub struct ConcurrentlyInTransaction;

pub static META: RuleMeta = RuleMeta {
    id: "concurrently-in-transaction",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "CREATE/DROP INDEX CONCURRENTLY or REINDEX CONCURRENTLY inside a transaction fails",
    what: "Flags `CREATE INDEX CONCURRENTLY`, `DROP INDEX CONCURRENTLY`, `REINDEX … CONCURRENTLY`, `REINDEX \
SCHEMA | DATABASE | SYSTEM` and `ALTER TABLE … DETACH PARTITION … CONCURRENTLY` inside `BEGIN … COMMIT`, inside \
a `DO` block (which runs as one statement in a transaction), or anywhere in a file the migration runner wraps in \
a transaction. Whether the runner does \
comes from `[migrations] transaction_per_file` in `sluice.toml`, else the layout (diesel folders and Flyway \
wrap each file; dbmate files with `-- migrate:up` do too), and the per-file opt-outs runners honour: dbmate's \
`-- migrate:up transaction:false`, a diesel `metadata.toml` with `run_in_transaction = false`.",
    why: "PostgreSQL refuses to run them in a transaction block (`ERROR: CREATE INDEX CONCURRENTLY cannot run \
inside a transaction block`): the deploy fails halfway, and whatever ran before in autocommit mode stays applied.",
    fix: "Put the concurrent statement in its own migration file that runs outside a transaction: remove the \
BEGIN/COMMIT, or opt the file out of the runner's transaction (`-- migrate:up transaction:false` for dbmate, \
`run_in_transaction = false` in diesel's `metadata.toml`, `executeInTransaction=false` for Flyway).",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL);
-- migration: 002_index_customer.sql
BEGIN;
SET LOCAL lock_timeout = '5s';
CREATE INDEX CONCURRENTLY orders_customer_id ON orders (customer_id);
COMMIT;",
    good: super::create_index_non_concurrently::BUILT_CONCURRENTLY,
    equivalents: "squawk: ban-concurrent-index-creation-in-transaction; strong_migrations: disable_ddl_transaction!; eugene: none",
};

impl Rule for ConcurrentlyInTransaction {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        if !state.in_transaction() {
            return;
        }
        let detach_concurrently = matches!(&cx.statement.ddl, Ddl::AlterTable { actions, .. }
            if actions.iter().any(|a| matches!(a, AlterAction::DetachPartition { concurrently: true, .. })));
        let what = match &cx.statement.ddl {
            Ddl::CreateIndex(i) if i.concurrently => "CREATE INDEX CONCURRENTLY",
            Ddl::Drop { kind: ObjectKind::Index, concurrently: true, .. } => "DROP INDEX CONCURRENTLY",
            Ddl::Reindex { concurrently: true, .. } => "REINDEX CONCURRENTLY",
            Ddl::Reindex { kind: ReindexKind::Schema, .. } => "REINDEX SCHEMA",
            Ddl::Reindex { kind: ReindexKind::Database, .. } => "REINDEX DATABASE",
            Ddl::Reindex { kind: ReindexKind::System, .. } => "REINDEX SYSTEM",
            _ if detach_concurrently => "DETACH PARTITION CONCURRENTLY",
            _ => return,
        };
        let why = state.transaction_phrase().unwrap_or_default();
        out.push(
            cx.finding(
                &META,
                format!("{what} {why}: PostgreSQL rejects it in a transaction block and the migration fails"),
            )
            .fact("transaction", cx.transaction_fact()),
        );
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
    fn explicit_and_runner_transactions() {
        let table = "CREATE TABLE t (a int); CREATE INDEX t_a ON t (a);";
        let in_tx = |sql: &str, runner: bool| {
            let found = lint_with(
                &[("001.sql", table), ("002.sql", sql)],
                &Setup { in_transaction: runner, ..Setup::default() },
            );
            of(&found, META.id).len()
        };
        assert_eq!(in_tx("DROP INDEX CONCURRENTLY t_a;", true), 1);
        assert_eq!(in_tx("DROP INDEX CONCURRENTLY t_a;", false), 0);
        assert_eq!(in_tx("REINDEX INDEX CONCURRENTLY t_a;", true), 1);
        assert_eq!(
            in_tx(
                "BEGIN; CREATE INDEX CONCURRENTLY t_b ON t (a); COMMIT; CREATE INDEX CONCURRENTLY t_c ON t (a);",
                false
            ),
            1
        );
        assert_eq!(in_tx("START TRANSACTION; REINDEX TABLE CONCURRENTLY t; ROLLBACK;", false), 1);
        assert_eq!(in_tx("REINDEX (CONCURRENTLY) INDEX t_a;", true), 1);
        assert_eq!(in_tx("REINDEX SCHEMA public;", true), 1, "REINDEX SCHEMA cannot run in a transaction block either");
        assert_eq!(in_tx("REINDEX SCHEMA public;", false), 0);
        assert_eq!(in_tx("DO $$ BEGIN CREATE INDEX CONCURRENTLY t_d ON t (a); END $$;", false), 1);
    }

    #[test]
    fn detach_partition_concurrently() {
        let found = lint_with(
            &[
                ("001.sql", "CREATE TABLE p (a int) PARTITION BY RANGE (a); CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (10);"),
                ("002.sql", "BEGIN; ALTER TABLE p DETACH PARTITION p1 CONCURRENTLY; COMMIT;"),
            ],
            &Setup::default(),
        );
        let f = of(&found, META.id);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.starts_with("DETACH PARTITION CONCURRENTLY inside BEGIN"), "{}", f[0].message);
    }
}

use super::{Context, Rule, RuleMeta, TableSize};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};

pub struct MissingStatementTimeout;

pub static META: RuleMeta = RuleMeta {
    id: "missing-statement-timeout",
    severity: Severity::Info,
    category: Category::MigrationSafety,
    summary: "A backfill or VALIDATE CONSTRAINT runs with no statement_timeout set",
    what: "Flags `UPDATE`/`DELETE` of an existing table and `VALIDATE CONSTRAINT` when no `SET statement_timeout` \
(or `SET LOCAL` in the current transaction) precedes it in the file. Any explicit value counts, `0` included: \
the point is a decision. Info by default — concurrent index builds and validations may legitimately run long; \
raise it in `sluice.toml [rules]` if your team wants a hard limit. Silent on tiny tables.",
    why: "A backfill that runs far longer than expected holds row locks and bloats the table with nobody noticing \
until the deploy pipeline times out — or never does.",
    fix: "Set `statement_timeout` explicitly before the statement, to the longest run you accept (`'0'` if you \
deliberately allow any duration).",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
-- migration: 002_backfill_status.sql
UPDATE orders SET status = 'new' WHERE id BETWEEN 1 AND 10000 AND status IS NULL;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
-- migration: 002_backfill_status.sql
SET statement_timeout = '60s';
UPDATE orders SET status = 'new' WHERE id BETWEEN 1 AND 10000 AND status IS NULL;",
    equivalents: "squawk: require-statement-timeout; strong_migrations: statement_timeout (config); eugene: none",
};

impl Rule for MissingStatementTimeout {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        if state.has_statement_timeout() {
            return;
        }
        let (table, what) = match &cx.statement.ddl {
            Ddl::Update { table, .. } => (table, "UPDATE"),
            Ddl::Delete { table, .. } => (table, "DELETE"),
            Ddl::AlterTable { table, actions, .. }
                if actions.iter().any(|a| matches!(a, AlterAction::ValidateConstraint { .. })) =>
            {
                (table, "VALIDATE CONSTRAINT")
            }
            _ => return,
        };
        if !cx.is_existing_table(table) || matches!(cx.table_size(table), TableSize::Tiny(_)) {
            return;
        }
        out.push(
            cx.finding(&META, format!("{what} on existing table {table} runs with no statement_timeout set"))
                .fact("table", table.as_str())
                .fact("table rows", cx.size_fact(table)),
        );
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
    fn backfills_and_validations() {
        let count = |sql: &str| {
            of(
                &lint_files(
                    &[("001.sql", "CREATE TABLE t (a int, CONSTRAINT c CHECK (a > 0));"), ("002.sql", sql)],
                    "",
                ),
                META.id,
            )
            .len()
        };
        assert_eq!(count("DELETE FROM t WHERE a < 0;"), 1);
        assert_eq!(count("ALTER TABLE t VALIDATE CONSTRAINT c;"), 1);
        assert_eq!(count("SET statement_timeout = 0; ALTER TABLE t VALIDATE CONSTRAINT c;"), 0);
        assert_eq!(count("BEGIN; SET LOCAL statement_timeout = '1min'; COMMIT; UPDATE t SET a = 1 WHERE a = 0;"), 1);
        assert_eq!(count("CREATE TABLE u (a int); UPDATE u SET a = 1;"), 0);
    }
}

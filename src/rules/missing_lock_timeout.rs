use super::{Context, Rule, RuleMeta, TableSize};
use crate::finding::{Finding, Severity};
use crate::rules::locks::table_locks;
use crate::rules::Category;

pub struct MissingLockTimeout;

pub static META: RuleMeta = RuleMeta {
    id: "missing-lock-timeout",
    severity: Severity::Warning,
    category: Category::MigrationSafety,
    summary: "A statement takes a write-blocking lock on an existing table with no lock_timeout set",
    what: "Flags a statement that takes ACCESS EXCLUSIVE, SHARE ROW EXCLUSIVE or SHARE on a table that existed \
before this migration (ALTER TABLE, CREATE INDEX, DROP INDEX/TABLE, TRUNCATE, foreign keys) when no \
`SET lock_timeout` (or `SET LOCAL lock_timeout` in the current transaction) precedes it in the file. One finding \
per statement. Warning; error on tables at or above `large_table_rows`; silent on tiny ones.",
    why: "The lock waits behind any long-running query on the table, and every query that arrives afterwards \
queues behind the waiting lock: a one-millisecond ALTER becomes a full outage for as long as the slowest \
transaction runs.",
    fix: "Start the migration with `SET lock_timeout = '5s';` (or `SET LOCAL` inside the transaction) and retry \
on timeout: failing fast beats blocking production.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, note text);
-- migration: 002_drop_default.sql
ALTER TABLE orders ALTER COLUMN note SET DEFAULT '';",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, note text);
-- migration: 002_drop_default.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN note SET DEFAULT '';",
    equivalents: "squawk: require-lock-timeout; strong_migrations: lock_timeout (config); eugene: E9",
};

impl Rule for MissingLockTimeout {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        if state.has_lock_timeout() {
            return;
        }
        let mut worst: Option<(Severity, String, &'static str)> = None;
        let mut tables = Vec::new();
        for (table, lock) in table_locks(&cx.statement.ddl, cx.schema) {
            if !lock.blocks_writes() || !cx.is_existing_table(&table) {
                continue;
            }
            let severity = match cx.table_size(&table) {
                TableSize::Tiny(_) => continue,
                TableSize::Large(_) => Severity::Error,
                TableSize::Medium(_) | TableSize::Unknown => Severity::Warning,
            };
            tables.push(format!("{table}: {}", cx.size_fact(&table)));
            if worst.as_ref().is_none_or(|(s, _, _)| severity > *s) {
                worst = Some((severity, table, lock.as_str()));
            }
        }
        let Some((severity, table, lock)) = worst else { return };
        let mut finding = cx
            .finding(
                &META,
                format!(
                    "takes {lock} on {table} with no lock_timeout set: if it waits behind a long query, every query on {table} queues behind it"
                ),
            )
            .fact("table rows", tables.join("; "))
            .fact("transaction", cx.transaction_fact());
        finding.severity = severity;
        out.push(finding);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    fn found(sql: &str, tables: &str, runner: bool) -> Vec<Severity> {
        let all = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint, a int); CREATE TABLE p (id bigint PRIMARY KEY);"),
                ("002.sql", sql),
            ],
            &Setup { tables, in_transaction: runner, ..Setup::default() },
        );
        of(&all, META.id).iter().map(|f| f.severity).collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn once_per_statement_with_severity_by_size() {
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int, ADD COLUMN c int;", "", false), [Severity::Warning]);
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int;", "[rows]\nt = 1000000\n", false), [Severity::Error]);
        assert_eq!(found("ALTER TABLE t ADD COLUMN b int;", "[rows]\nt = 10\n", false), Vec::<Severity>::new());
        assert_eq!(
            found(
                "ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES p (id) NOT VALID;",
                "[rows]\nt = 10\np = 5000000\n",
                false
            ),
            [Severity::Error],
            "the referenced table is locked too"
        );
        assert_eq!(
            found("CREATE INDEX CONCURRENTLY t_a ON t (a);", "", false),
            Vec::<Severity>::new(),
            "concurrent builds do not block writes"
        );
        assert_eq!(found("UPDATE t SET a = 1 WHERE id = 1;", "", false), Vec::<Severity>::new());
    }

    #[test]
    fn set_local_lasts_until_the_transaction_ends() {
        let w = [Severity::Warning];
        assert_eq!(
            found("BEGIN; SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int; COMMIT;", "", false),
            Vec::<Severity>::new()
        );
        assert_eq!(
            found("BEGIN; SET LOCAL lock_timeout = '2s'; COMMIT; ALTER TABLE t ADD COLUMN b int;", "", false),
            w
        );
        assert_eq!(
            found("SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int;", "", false),
            w,
            "no transaction: no effect"
        );
        assert_eq!(
            found("SET LOCAL lock_timeout = '2s'; ALTER TABLE t ADD COLUMN b int;", "", true),
            Vec::<Severity>::new(),
            "the runner's transaction"
        );
        assert_eq!(found("SET lock_timeout = '2s'; BEGIN; ALTER TABLE t ADD COLUMN b int; COMMIT; ALTER TABLE t ADD COLUMN c int;", "", false), Vec::<Severity>::new());
        assert_eq!(found("SET lock_timeout = 0; ALTER TABLE t ADD COLUMN b int;", "", false), w, "0 disables it");
        assert_eq!(found("SET lock_timeout = '2s'; RESET lock_timeout; ALTER TABLE t ADD COLUMN b int;", "", false), w);
    }
}

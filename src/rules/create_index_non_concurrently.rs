use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::Ddl;

pub struct CreateIndexNonConcurrently;

/// The index built the safe way, outside a transaction: this rule's fix, and
/// `concurrently-in-transaction`'s.
pub(super) const BUILT_CONCURRENTLY: &str = "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL);
-- migration: 002_index_customer.sql
SET lock_timeout = '5s';
CREATE INDEX CONCURRENTLY orders_customer_id ON orders (customer_id);";

pub static META: RuleMeta = RuleMeta {
    id: "create-index-non-concurrently",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "CREATE INDEX without CONCURRENTLY on an existing table blocks writes for the whole build",
    what: "Flags `CREATE [UNIQUE] INDEX` without `CONCURRENTLY` on a table that existed before this migration. \
Indexes on tables created earlier in the same migration are not flagged. Severity follows the table's size \
(`policies/tables.toml`): error on large or unknown tables, warning on medium ones, nothing on tiny ones.",
    why: "A plain CREATE INDEX holds a SHARE lock for the whole build: every INSERT, UPDATE and DELETE on the \
table waits, for minutes on a large table, and the requests behind them time out.",
    fix: "Build it with `CREATE INDEX CONCURRENTLY` (outside a transaction), with a `SET lock_timeout` before it. \
If the build fails it leaves an INVALID index: drop it with `DROP INDEX CONCURRENTLY` and retry.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL);
-- migration: 002_index_customer.sql
CREATE INDEX orders_customer_id ON orders (customer_id);",
    good: BUILT_CONCURRENTLY,
    equivalents: "squawk: require-concurrent-index-creation; strong_migrations: add_index; eugene: E6",
};

impl Rule for CreateIndexNonConcurrently {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::CreateIndex(index) = &cx.statement.ddl else {
            return;
        };
        if index.concurrently {
            return;
        }
        let name = cx.schema.index_name(index);
        let message = format!(
            "CREATE INDEX {name} on existing table {} without CONCURRENTLY holds a SHARE lock that blocks all writes for the whole build",
            index.table
        );
        out.extend(cx.lock_finding(&META, &index.table, message).map(|f| f.fact("index", name.as_str())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    const TABLE: &str = "CREATE TABLE t (id bigint PRIMARY KEY, a int);";

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn severity_follows_the_table_size() {
        let sql = "SET lock_timeout = '1s'; CREATE INDEX t_a ON t (a);";
        let run = |tables: &str| {
            let found = lint_with(&[("001.sql", TABLE), ("002.sql", sql)], &Setup { tables, ..Setup::default() });
            of(&found, META.id).iter().map(|f| f.severity).collect::<Vec<_>>()
        };
        assert_eq!(run(""), [Severity::Error], "unknown size is an error");
        assert_eq!(run("[rows]\nt = 5000000\n"), [Severity::Error]);
        assert_eq!(run("[rows]\nt = 5000\n"), [Severity::Warning]);
        assert_eq!(run("[rows]\nt = 50\n"), Vec::<Severity>::new(), "tiny tables are silent");
        assert_eq!(run("large_table_rows = 1000\nsmall_table_rows = 10\n[rows]\nt = 50\n"), [Severity::Warning]);
    }

    #[test]
    fn explain_facts_name_size_index_and_transaction() {
        let found = lint_with(
            &[("001.sql", TABLE), ("002.sql", "CREATE INDEX t_a ON t (a);")],
            &Setup { tables: "[rows]\nt = 2000000\n", ..Setup::default() },
        );
        let f = of(&found, META.id)[0];
        let fact = |n: &str| f.facts.iter().find(|x| x.name == n).map(|x| x.value.clone()).unwrap_or_default();
        assert_eq!(fact("table rows"), "2000000 (policies/tables.toml)");
        assert_eq!(fact("index"), "t_a");
        assert!(fact("transaction").contains("no transaction"), "{:?}", f.facts);
    }

    #[test]
    fn tables_created_in_the_same_migration_are_exempt() {
        let found = lint_with(&[("001.sql", "CREATE TABLE t (a int); CREATE INDEX t_a ON t (a); ALTER TABLE t RENAME TO u; CREATE INDEX u_a ON u (a);")], &Setup::default());
        assert!(of(&found, META.id).is_empty(), "{found:?}");
        let found = lint_with(
            &[("001.sql", TABLE), ("002.sql", "CREATE UNIQUE INDEX CONCURRENTLY t_a ON t (a);")],
            &Setup::default(),
        );
        assert!(of(&found, META.id).is_empty());
    }
}

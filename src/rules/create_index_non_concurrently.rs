use super::claims::{self, Claim, Work};
use super::locks::{with_partitions, Lock};
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::RelationKind;
use crate::sql::ddl::{CreateIndex, Ddl, Name};

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
Indexes on tables created earlier in the same migration are not flagged. On a partitioned table the index is \
built on each partition (under SHARE on each): the finding names the partitions and gives PostgreSQL's own \
procedure, since it refuses CONCURRENTLY there; `CREATE INDEX … ON ONLY` the partitioned table builds nothing and \
is not flagged, nor is an index every partition already has (PostgreSQL attaches theirs; both read from \
`pg_locks` and `relfilenode` on PostgreSQL 15, and the CREATE INDEX documentation, Notes). Severity follows the \
table's size (`policies/tables.toml`): error on large or unknown tables, warning on medium ones, nothing on tiny \
ones.",
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
        let table = &index.table;
        let partitioned = cx.schema.table(table).is_some_and(|t| t.kind == RelationKind::PartitionedTable);
        if partitioned {
            return partitioned_build(cx, index, &name, out);
        }
        let message = format!(
            "CREATE INDEX {name} on existing table {table} without CONCURRENTLY holds a SHARE lock that blocks all writes for the whole build"
        );
        let claims = [cx.claim_lock(table, Lock::Share), cx.claim_work(table, Work::Build).on_index(name.as_str())];
        out.extend(cx.lock_finding(&META, table, message).map(|f| claims::add(f.fact("index", name.as_str()), claims)));
    }
}

/// The fix on a partitioned table, where PostgreSQL refuses `CREATE INDEX CONCURRENTLY`.
const PARTITIONED_FIX: &str = "PostgreSQL refuses CONCURRENTLY on a partitioned table. Create the index `ON ONLY` \
the partitioned table (instant: it builds nothing and stays invalid), build each partition's index with `CREATE \
INDEX CONCURRENTLY` (outside a transaction), then `ALTER INDEX parent_index ATTACH PARTITION partition_index` for \
each: the parent's index becomes valid once every partition's is attached (PostgreSQL docs, CREATE INDEX, Notes).";

/// `CREATE INDEX` on a partitioned table: built on each partition that has no equivalent index
/// yet, under SHARE on it (and on the parent), with PostgreSQL's own procedure as the fix. `ON
/// ONLY` builds nothing, and neither does an index every partition already has (PostgreSQL
/// attaches theirs: "metadata only"); their brief lock is `missing-lock-timeout`'s.
fn partitioned_build(cx: &Context, index: &CreateIndex, name: &str, out: &mut Vec<Finding>) {
    if index.only {
        return;
    }
    let table = &index.table;
    let partitions = with_partitions(cx.schema, table);
    let built: Vec<&Name> = partitions
        .iter()
        .filter(|p| cx.schema.table(p).is_some_and(|t| t.kind != RelationKind::PartitionedTable))
        .filter(|p| !cx.schema.has_equivalent_index(p, &index.keys, index.predicate.as_deref(), index.unique))
        .collect();
    if built.is_empty() {
        return;
    }
    let list: Vec<&str> = built.iter().map(|p| p.as_str()).collect();
    let message = format!(
        "CREATE INDEX {name} on existing partitioned table {table} builds it on {} partition(s) ({}) under SHARE, which blocks all writes to each for the whole build; CONCURRENTLY is not the fix here: PostgreSQL refuses it on a partitioned table",
        built.len(),
        list.join(", ")
    );
    let claims: Vec<Claim> = partitions
        .iter()
        .map(|p| cx.claim_lock(p, Lock::Share))
        .chain(std::iter::once(cx.claim_work(table, Work::Build).on_index(name)))
        .collect();
    out.extend(
        cx.lock_finding(&META, table, message)
            .map(|f| claims::add(f.fact("index", name).help(PARTITIONED_FIX), claims)),
    );
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

    /// Issue 37: read from `pg_locks` and `relfilenode` on PostgreSQL 15.
    #[test]
    fn partitioned_tables_get_postgresql_s_own_procedure() {
        let history = "CREATE TABLE p (id bigint, at date) PARTITION BY RANGE (at);
            CREATE TABLE p1 PARTITION OF p FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
            CREATE TABLE p2 PARTITION OF p FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');";
        let run = |sql: &str| lint_with(&[("001.sql", history), ("002.sql", sql)], &Setup::default());
        let build = run("CREATE INDEX p_id ON p (id);");
        let found = of(&build, META.id);
        assert_eq!(found.len(), 1);
        assert!(found[0].message.contains("builds it on 2 partition(s) (p1, p2) under SHARE"), "{}", found[0].message);
        assert!(found[0].help.contains("`ON ONLY`") && found[0].help.contains("ATTACH PARTITION"), "{}", found[0].help);
        let locks: Vec<String> = claims::of(found[0])
            .iter()
            .filter_map(|c| Some(format!("{} {}", c["lock"].as_str()?, c["table"])))
            .collect();
        assert_eq!(locks, ["SHARE \"p\"", "SHARE \"p1\"", "SHARE \"p2\""]);
        // ON ONLY builds nothing: only its brief SHARE on p remains, for missing-lock-timeout.
        let only = run("CREATE INDEX p_id ON ONLY p (id);");
        assert!(of(&only, META.id).is_empty(), "{only:#?}");
        assert!(of(&only, "missing-lock-timeout")[0].message.starts_with("takes SHARE on p "), "{only:#?}");
        // The documented procedure lints clean.
        let procedure = "SET lock_timeout = '5s';\nCREATE INDEX p_id ON ONLY p (id);\nCREATE INDEX CONCURRENTLY p1_id ON p1 (id);\n\
            CREATE INDEX CONCURRENTLY p2_id ON p2 (id);\nALTER INDEX p_id ATTACH PARTITION p1_id;\nALTER INDEX p_id ATTACH PARTITION p2_id;";
        let loud: Vec<_> = run(procedure).into_iter().filter(|f| f.severity >= Severity::Warning).collect();
        assert!(loud.is_empty(), "{loud:#?}");
        // An index every partition already has is attached, not built ("metadata only").
        let adopted = run("CREATE INDEX CONCURRENTLY p1_id ON p1 (id);\nCREATE INDEX CONCURRENTLY p2_id ON p2 (id);\nCREATE INDEX p_id ON p (id);");
        assert!(of(&adopted, META.id).is_empty(), "{adopted:#?}");
        let half = run("CREATE INDEX CONCURRENTLY p1_id ON p1 (id);\nCREATE INDEX p_id ON p (id);");
        assert!(of(&half, META.id)[0].message.contains("on 1 partition(s) (p2)"));
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

use super::claims;
use super::locks::Lock;
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::locks::{index_lock_target, with_partitions};
use crate::rules::Category;
use crate::schema::RelationKind;
use crate::sql::ddl::{Ddl, ObjectKind};

pub struct DropIndexNonConcurrently;

pub static META: RuleMeta = RuleMeta {
    id: "drop-index-non-concurrently",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "DROP INDEX without CONCURRENTLY takes an ACCESS EXCLUSIVE lock on the index's table",
    what: "Flags `DROP INDEX` without `CONCURRENTLY` when the index belongs to a table that existed before this \
migration (or to a table the history never showed). Severity follows the table's size. A `DROP INDEX` of an \
index the history already dropped (explicitly, or with its table, view or materialized view) is an error: \
PostgreSQL stops the migration there.",
    why: "A plain DROP INDEX takes ACCESS EXCLUSIVE on the table. It is quick once granted, but it queues behind \
any long-running query on the table, and every read and write queues behind it: a brief outage on a busy table.",
    fix: "Use `DROP INDEX CONCURRENTLY` (outside a transaction), with a `SET lock_timeout` before it.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL);
CREATE INDEX ON orders (status);
-- migration: 002_drop_status_index.sql
DROP INDEX orders_status_idx;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL);
CREATE INDEX ON orders (status);
-- migration: 002_drop_status_index.sql
SET lock_timeout = '5s';
DROP INDEX CONCURRENTLY orders_status_idx;",
    equivalents:
        "squawk: require-concurrent-index-deletion; strong_migrations: remove_index (algorithm: :concurrently)",
};

impl Rule for DropIndexNonConcurrently {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::Drop { kind: ObjectKind::Index, names, concurrently: false, if_exists, .. } = &cx.statement.ddl else {
            return;
        };
        // `DROP INDEX IF EXISTS` of an index the history never created does nothing.
        for name in names.iter().filter(|n| !if_exists || cx.schema.indexes.contains_key(*n)) {
            if let Some(gone) = dropped_earlier(cx, name) {
                let help = "Remove this DROP INDEX (or make it DROP INDEX IF EXISTS): what it drops is already gone.";
                out.push(cx.finding(&META, gone).help(help).fact("index", name.as_str()));
                continue;
            }
            let table = index_lock_target(cx.schema, name);
            let partitioned = cx.schema.table(&table).is_some_and(|t| t.kind == RelationKind::PartitionedTable);
            let locked = if partitioned { with_partitions(cx.schema, &table) } else { vec![table.clone()] };
            let mut message = if partitioned {
                format!(
                    "DROP INDEX {name} takes an ACCESS EXCLUSIVE lock on partitioned table {table} and each of its partitions ({}), blocking reads and writes while it waits and runs; PostgreSQL has no concurrent drop for a partitioned index",
                    locked[1..].join(", ")
                )
            } else {
                format!(
                    "DROP INDEX {name} without CONCURRENTLY takes an ACCESS EXCLUSIVE lock on {table}, blocking reads and writes while it waits and runs"
                )
            };
            if !cx.schema.indexes.contains_key(name) {
                message.push_str(&format!(
                    "; the migration history never created index {name}, so its table and that table's size are unknown"
                ));
            }
            let claims: Vec<_> = locked.iter().map(|t| cx.claim_lock(t, Lock::AccessExclusive)).collect();
            let help = partitioned.then_some(PARTITIONED_FIX);
            out.extend(cx.lock_finding(&META, &table, message).map(|f| {
                let f = f.fact("index", name.as_str());
                claims::add(if let Some(help) = help { f.help(help) } else { f }, claims)
            }));
        }
    }
}

/// The fix for a partitioned index, which PostgreSQL cannot drop concurrently.
const PARTITIONED_FIX: &str = "PostgreSQL refuses DROP INDEX CONCURRENTLY on a partitioned index (and a partition's \
attached index cannot be dropped alone): drop it in a migration of its own, with `SET lock_timeout = '5s';` before \
it and a retry on timeout, at a quiet hour.";

/// The message for an index the history created and already dropped: PostgreSQL stops the
/// migration with `index "…" does not exist`.
fn dropped_earlier(cx: &Context, name: &str) -> Option<String> {
    if cx.schema.indexes.contains_key(name) {
        return None;
    }
    let dropped = cx.schema.dropped_indexes.get(name)?;
    let at = format!("{}:{}", dropped.at.file, dropped.at.line);
    let how = match &dropped.with {
        Some(what) => format!("it was dropped with {what} at {at}"),
        None => format!("the DROP INDEX at {at} dropped it"),
    };
    Some(format!(
        "DROP INDEX {name} fails: the index no longer exists ({how}), so PostgreSQL stops the migration with `index \"{name}\" does not exist`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    /// Issue 37: read from `pg_locks` on PostgreSQL 15, which refuses the concurrent form here.
    #[test]
    fn a_partitioned_index_locks_every_partition_and_has_no_concurrent_drop() {
        let history = "CREATE TABLE p (id bigint, at date) PARTITION BY RANGE (at);
            CREATE TABLE p1 PARTITION OF p FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
            CREATE INDEX p_at ON p (at);";
        let found = lint_with(&[("001.sql", history), ("002.sql", "DROP INDEX p_at;")], &Setup::default());
        let f = of(&found, META.id);
        assert!(f[0].message.contains("partitioned table p and each of its partitions (p1)"), "{}", f[0].message);
        assert!(f[0].help.contains("refuses DROP INDEX CONCURRENTLY on a partitioned index"), "{}", f[0].help);
        let tables: Vec<String> = crate::rules::claims::of(f[0]).iter().map(|c| c["table"].to_string()).collect();
        assert_eq!(tables, ["\"p\"", "\"p1\""]);
        let concurrent =
            lint_with(&[("001.sql", history), ("002.sql", "DROP INDEX CONCURRENTLY p_at;")], &Setup::default());
        assert_eq!(of(&concurrent, "runner-rejects-migration").len(), 1);
    }

    #[test]
    fn finds_the_table_through_the_index_and_fails_closed_on_unknown_indexes() {
        let base = "CREATE TABLE t (a int); CREATE INDEX t_a ON t (a);";
        let found = lint_with(
            &[("001.sql", base), ("002.sql", "DROP INDEX t_a;")],
            &Setup { tables: "[rows]\nt = 5000\n", ..Setup::default() },
        );
        let f = of(&found, META.id);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        let found = lint_with(&[("001.sql", "DROP INDEX mystery_idx;")], &Setup::default());
        let f = of(&found, META.id);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("the migration history never created index mystery_idx"), "{}", f[0].message);
        assert!(!f[0].message.contains('('), "no placeholder: {}", f[0].message);
        // The names PostgreSQL gives: generated for an unnamed index, truncated to 63 bytes.
        let found = lint_with(
            &[
                ("001.sql", "CREATE TABLE reserved_crate_names (name text);\nCREATE UNIQUE INDEX ON reserved_crate_names (canon_crate_name(name));"),
                ("002.sql", "DROP INDEX reserved_crate_names_canon_crate_name_idx;"),
                ("003.sql", "CREATE TABLE post_aggregates (a int);\nCREATE INDEX idx_post_aggregates_featured_community_newest_comment_time_necro ON post_aggregates (a);"),
                ("004.sql", "DROP INDEX idx_post_aggregates_featured_community_newest_comment_time_necr;"),
            ],
            &Setup::default(),
        );
        let messages: Vec<&str> = of(&found, META.id).iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 2);
        assert!(messages[0].contains("ACCESS EXCLUSIVE lock on reserved_crate_names,"), "{}", messages[0]);
        assert!(messages[1].contains("ACCESS EXCLUSIVE lock on post_aggregates,"), "{}", messages[1]);
        // An index dropped with its materialized view, or by an earlier DROP INDEX, is not unknown.
        let found = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint, a int);\nCREATE MATERIALIZED VIEW mv AS SELECT id, a FROM t;\nCREATE INDEX mv_a ON mv (a);\nCREATE INDEX t_a ON t (a);"),
                ("002.sql", "DROP MATERIALIZED VIEW mv;\nDROP INDEX mv_a;"),
                ("003.sql", "DROP INDEX CONCURRENTLY t_a;"),
                ("004.sql", "DROP INDEX t_a;"),
            ],
            &Setup::default(),
        );
        let messages: Vec<&str> = of(&found, META.id).iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(
            messages[0],
            "DROP INDEX mv_a fails: the index no longer exists (it was dropped with materialized view mv at 002.sql:1), so PostgreSQL stops the migration with `index \"mv_a\" does not exist`"
        );
        assert!(messages[1]
            .starts_with("DROP INDEX t_a fails: the index no longer exists (the DROP INDEX at 003.sql:1 dropped it)"));
        assert!(of(&found, META.id).iter().all(|f| f.severity == Severity::Error && f.help.starts_with("Remove")));
        // Issue 37: an index that went with its table, column or constraint is not "never created".
        let found = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint PRIMARY KEY, a int, b int);\nCREATE INDEX t_a ON t (a);\nCREATE TABLE u (x int);\nCREATE INDEX u_x ON u (x);"),
                ("002.sql", "ALTER TABLE t DROP COLUMN a;\nALTER TABLE t DROP CONSTRAINT t_pkey;\nDROP TABLE u;"),
                ("003.sql", "DROP INDEX t_a;\nDROP INDEX t_pkey;\nDROP INDEX u_x;"),
            ],
            &Setup::default(),
        );
        let messages: Vec<&str> = of(&found, META.id).iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("(it was dropped with column t.a at 002.sql:1)"), "{}", messages[0]);
        assert!(messages[1].contains("(it was dropped with constraint t_pkey on t at 002.sql:2)"), "{}", messages[1]);
        assert!(messages[2].contains("(it was dropped with table u at 002.sql:3)"), "{}", messages[2]);
        // IF EXISTS of an index the history never created: PostgreSQL does nothing.
        let found = lint_with(&[("001.sql", "DROP INDEX IF EXISTS mystery_idx;")], &Setup::default());
        assert!(of(&found, META.id).is_empty());
        // Same migration: the table is new.
        let found = lint_with(&[("001.sql", &format!("{base} DROP INDEX t_a;"))], &Setup::default());
        assert!(of(&found, META.id).is_empty());
    }
}

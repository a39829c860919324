use super::claims::{self, Claim, Work};
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::locks::{reindexed_tables, Lock};
use crate::rules::Category;
use crate::sql::ddl::{Ddl, Name, ReindexKind};

pub struct ReindexNonConcurrently;

pub static META: RuleMeta = RuleMeta {
    id: "reindex-non-concurrently",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary:
        "REINDEX without CONCURRENTLY blocks writes to the table, and the queries planned on it, for the whole rebuild",
    what: "Flags `REINDEX INDEX | TABLE | SCHEMA | DATABASE` without `CONCURRENTLY` (neither the keyword nor \
`(CONCURRENTLY)` in the options) on a table that existed before this migration, or on an index of one. For \
SCHEMA and DATABASE every table the history created in it counts (`REINDEX SYSTEM` only touches the system \
catalogs). Indexes of tables created earlier in \
the same migration are not flagged. Severity follows the table's size, like the other lock rules: error on large \
tables or tables of unknown size, warning on medium ones, nothing on tiny ones.",
    why: "REINDEX holds a SHARE lock on the table, so every INSERT, UPDATE and DELETE waits for the whole rebuild, \
and an ACCESS EXCLUSIVE lock on each index it rebuilds, which blocks the reads that would use it. PostgreSQL's \
documentation adds that the planner takes a lock on every index of a table it plans a query for, so in practice \
REINDEX blocks nearly every query on the table (PostgreSQL docs, REINDEX, Notes).",
    fix: "Use `REINDEX … CONCURRENTLY` (PostgreSQL 12+), in a migration that runs outside a transaction, with a \
`SET lock_timeout` before it. It builds the new index beside the old one and swaps them with brief locks. If it \
fails it leaves an invalid index named `…_ccnew`: drop it with `DROP INDEX CONCURRENTLY` and retry.",
    bad: "\
-- migration: 001_comments.sql
CREATE TABLE comments (id bigint PRIMARY KEY, post_id bigint NOT NULL);
CREATE INDEX ON comments (post_id);
-- migration: 002_rebuild.sql
SET lock_timeout = '5s';
REINDEX TABLE comments;",
    good: "\
-- migration: 001_comments.sql
CREATE TABLE comments (id bigint PRIMARY KEY, post_id bigint NOT NULL);
CREATE INDEX ON comments (post_id);
-- migration: 002_rebuild.sql
SET lock_timeout = '5s';
REINDEX INDEX CONCURRENTLY comments_post_id_idx;",
    equivalents: "squawk: require-concurrent-reindex; strong_migrations: none; eugene: none",
};

impl Rule for ReindexNonConcurrently {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::Reindex { kind, name, concurrently: false } = &cx.statement.ddl else {
            return;
        };
        let target = match kind {
            ReindexKind::Index => format!("index {name}"),
            ReindexKind::Table => format!("the indexes of {name}"),
            ReindexKind::Schema => format!("every index in schema {name}"),
            ReindexKind::Database => "every index of the database".to_string(),
            ReindexKind::System => return,
        };
        // One finding per statement, on its worst table.
        let blocked: Vec<(Severity, Name)> = reindexed_tables(cx.schema, *kind, name)
            .into_iter()
            .filter_map(|table| cx.lock_severity(&table).map(|s| (s, table)))
            .collect();
        let Some((_, table)) = blocked.iter().max_by_key(|(severity, _)| *severity).cloned() else { return };
        let claims: Vec<Claim> = blocked
            .iter()
            .flat_map(|(_, t)| {
                let rebuild = cx.claim_work(t, Work::Rebuild);
                let rebuild = if *kind == ReindexKind::Index { rebuild.on_index(name.as_str()) } else { rebuild };
                [cx.claim_lock(t, Lock::Share), rebuild]
            })
            .collect();
        let message = format!(
            "REINDEX {} {name} without CONCURRENTLY rebuilds {target} while holding SHARE on {table} (writes wait) and ACCESS EXCLUSIVE on each index (queries planned on {table} wait too)",
            kind.as_str()
        );
        out.extend(
            cx.lock_finding(&META, &table, message)
                .map(|f| claims::add(f.fact("reindex", format!("{} {name}", kind.as_str())), claims)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    const TABLES: &str = "CREATE TABLE t (id bigint PRIMARY KEY, a int); CREATE INDEX t_a ON t (a);";

    fn found(sql: &str, tables: &str) -> Vec<(Severity, String)> {
        let all = lint_with(&[("001.sql", TABLES), ("002.sql", sql)], &Setup { tables, ..Setup::default() });
        of(&all, META.id).iter().map(|f| (f.severity, f.message.clone())).collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn every_kind_of_reindex_on_an_existing_table() {
        for sql in [
            "REINDEX TABLE t;",
            "REINDEX INDEX t_a;",
            "REINDEX (VERBOSE) INDEX t_pkey;",
            "REINDEX SCHEMA public;",
            "REINDEX DATABASE app;",
        ] {
            let f = found(sql, "");
            assert_eq!(f.len(), 1, "{sql}: {f:?}");
            assert_eq!(f[0].0, Severity::Error, "unknown size is an error");
            assert!(f[0].1.contains("SHARE on t"), "{}", f[0].1);
        }
    }

    #[test]
    fn concurrently_new_tables_and_tiny_tables_are_not_flagged() {
        assert!(found("REINDEX TABLE CONCURRENTLY t;", "").is_empty());
        assert!(found("REINDEX (CONCURRENTLY) INDEX t_a;", "").is_empty());
        assert!(found("CREATE TABLE u (a int); CREATE INDEX u_a ON u (a); REINDEX TABLE u;", "").is_empty());
        assert!(found("REINDEX TABLE t;", "[rows]\nt = 10\n").is_empty());
        assert_eq!(found("REINDEX TABLE t;", "[rows]\nt = 5000\n")[0].0, Severity::Warning);
    }
}

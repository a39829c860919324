//! `runner-rejects-migration`: the migration tool itself would refuse or mis-run this file, or
//! PostgreSQL would refuse a statement of it. The tool's findings come from the migration-tool
//! layer (`schema::tools`), which replays each tool's own parsing; the statements PostgreSQL
//! refuses whatever the tool (a form it never accepts, or syntax the configured
//! `postgres_version` does not have yet) are found here.

use crate::finding::{Finding, Severity};
use crate::rules::{Category, Context, Rule, RuleMeta};
use crate::schema::RelationKind;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, ObjectKind, ReindexKind};

pub static META: RuleMeta = RuleMeta {
    id: "runner-rejects-migration",
    severity: Severity::Error,
    category: Category::Meta,
    summary: "The migration tool would refuse this file, cut a statement in the wrong place, or skip it",
    what: "Replays the migration tool's own reading of each file and reports what it would refuse or break: \
a goose file without `-- +goose Up`, a statement goose cuts at a line ending in `;` inside a function body, \
a dbmate file without a `-- migrate:down` section or with statements before `-- migrate:up`, a Flyway script \
mixing `CREATE INDEX CONCURRENTLY` with transactional statements (Flyway refuses it unless `mixed = true`), a \
Liquibase changeset without `author:id`, an Atlas `txmode` it does not accept. Files the tool would skip or \
could not be checked (a Drizzle file missing from `meta/_journal.json`, a file missing from `atlas.sum`, a goose \
Go migration, a Liquibase XML changeset) are reported as warnings. Also the statements PostgreSQL itself refuses, \
whatever the tool: `CREATE INDEX CONCURRENTLY` on a partitioned table and `DROP INDEX CONCURRENTLY` of a \
partitioned index (refused by every version up to 17: \"cannot create index on partitioned table … \
concurrently\"), and syntax the configured `postgres_version` does not have yet: a subquery in FROM without an \
alias (accepted from 16; before, \"subquery in FROM must have an alias\"), `NULLS NOT DISTINCT` (15), \
`DETACH PARTITION … CONCURRENTLY` (14), `REINDEX CONCURRENTLY` (12), `GENERATED … STORED` columns (12), per \
each version's release notes, and observed on PostgreSQL 15.",
    why: "The deploy fails on the tool's own error, or runs something other than what the file says (a function \
body cut in two), or silently leaves out a migration reviewers saw: in each case the reviewed SQL is not what \
production gets.",
    fix: "Follow the message: add the missing section or annotation, wrap a function in `-- +goose StatementBegin` / \
`-- +goose StatementEnd`, give `CREATE INDEX CONCURRENTLY` a script of its own, list the file in the journal or \
`atlas.sum` (`atlas migrate hash`). For a statement PostgreSQL refuses, write the form it accepts (an alias for \
the subquery), or set `postgres_version` in `sluice.toml` to the version production runs.",
    bad: "",
    good: "",
    equivalents: "None of squawk, strong_migrations or eugene read the migration tool's own file format; Atlas lint \
checks its own directory's integrity.",
};

pub struct RunnerRejectsMigration;

impl Rule for RunnerRejectsMigration {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        let version = cx.facts.postgres_version;
        let refusal = refused_form(cx).or_else(|| {
            let (feature, since) = newer_syntax(cx).filter(|(_, since)| version < *since)?;
            Some(format!(
                "PostgreSQL {version} rejects this statement: {feature} only from PostgreSQL {since}, so the migration stops here (set `postgres_version` to the version production runs)"
            ))
        });
        out.extend(refusal.map(|message| cx.finding(&META, message).fact("postgres version", version.to_string())));
    }
}

/// A form PostgreSQL refuses in any version: a concurrent index build or drop on a partitioned table.
fn refused_form(cx: &Context) -> Option<String> {
    let partitioned = |table: &str| cx.schema.table(table).is_some_and(|t| t.kind == RelationKind::PartitionedTable);
    match &cx.statement.ddl {
        Ddl::CreateIndex(index) if index.concurrently && partitioned(&index.table) => Some(format!(
            "PostgreSQL rejects this statement: it cannot create an index on partitioned table {} concurrently (`ERROR: cannot create index on partitioned table \"{}\" concurrently`); create it ON ONLY {0}, build each partition's index with CREATE INDEX CONCURRENTLY, then ALTER INDEX … ATTACH PARTITION each",
            index.table,
            crate::sql::names::split(&index.table).1
        )),
        Ddl::Drop { kind: ObjectKind::Index, names, concurrently: true, .. } => names.iter().find_map(|name| {
            let table = cx.schema.indexes.get(name)?.table.clone();
            partitioned(&table).then(|| format!(
                "PostgreSQL rejects this statement: it cannot drop partitioned index {name} (on {table}) concurrently (`ERROR: cannot drop partitioned index \"{}\" concurrently`); drop it without CONCURRENTLY, under a lock_timeout: it takes ACCESS EXCLUSIVE on {table} and each partition",
                crate::sql::names::split(name).1
            ))
        }),
        _ => None,
    }
}

/// Syntax this statement uses that PostgreSQL accepts only from some version on, with that
/// version (the release notes of each).
fn newer_syntax(cx: &Context) -> Option<(&'static str, u32)> {
    let nulls_not_distinct =
        |c: &crate::sql::ddl::Constraint| matches!(c.kind, ConstraintKind::Unique { nulls_not_distinct: true, .. });
    let newer = match &cx.statement.ddl {
        Ddl::CreateIndex(index) if index.nulls_not_distinct => Some(("NULLS NOT DISTINCT is accepted", 15)),
        Ddl::Reindex { concurrently: true, kind, .. } if *kind != ReindexKind::System => {
            Some(("REINDEX CONCURRENTLY is accepted", 12))
        }
        Ddl::CreateTable { columns, constraints, .. } => {
            if columns.iter().flat_map(|c| &c.constraints).chain(constraints).any(nulls_not_distinct) {
                Some(("NULLS NOT DISTINCT is accepted", 15))
            } else if columns.iter().any(|c| c.generated_stored) {
                Some(("GENERATED … STORED columns are accepted", 12))
            } else {
                None
            }
        }
        Ddl::AlterTable { actions, .. } => actions.iter().find_map(|a| match a {
            AlterAction::DetachPartition { concurrently: true, .. } => {
                Some(("DETACH PARTITION … CONCURRENTLY is accepted", 14))
            }
            AlterAction::AddConstraint(c) if nulls_not_distinct(c) => Some(("NULLS NOT DISTINCT is accepted", 15)),
            AlterAction::AddColumn { column, .. } if column.generated_stored => {
                Some(("GENERATED … STORED columns are accepted", 12))
            }
            AlterAction::AddColumn { column, .. } if column.constraints.iter().any(nulls_not_distinct) => {
                Some(("NULLS NOT DISTINCT is accepted", 15))
            }
            _ => None,
        }),
        _ => None,
    };
    newer.or_else(|| {
        cx.statement
            .ast
            .as_deref()
            .is_some_and(has_unaliased_subquery)
            .then_some(("a subquery in FROM without an alias is accepted", 16))
    })
}

/// Whether a query of `statement` reads a subquery in FROM that has no alias.
fn has_unaliased_subquery(statement: &sqlparser::ast::Statement) -> bool {
    use sqlparser::ast::{TableFactor, Visit, Visitor};
    use std::ops::ControlFlow;
    struct Find;
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Derived { alias: None, .. } => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    statement.visit(&mut Find).is_break()
}

#[cfg(test)]
mod tests {
    use super::META;
    use crate::rules::testing::{lint_with, of, Setup};

    fn rejected(history: &str, sql: &str, version: u32) -> Vec<String> {
        let found = lint_with(
            &[("001.sql", history), ("002.sql", sql)],
            &Setup { postgres_version: Some(version), ..Setup::default() },
        );
        of(&found, META.id).iter().map(|f| f.message.clone()).collect()
    }

    /// Issue 37: the statements PostgreSQL 15 refused when a real history written for 16 was
    /// replayed on it, and the concurrent forms it refuses on partitioned tables.
    #[test]
    fn statements_postgresql_refuses_are_what_the_runner_rejects() {
        let history = "CREATE TABLE a (id int, n int);
            CREATE TABLE p (id int, at date) PARTITION BY RANGE (at);
            CREATE TABLE p1 PARTITION OF p FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
            CREATE INDEX p_at ON p (at);";
        let unaliased = "CREATE TABLE b AS SELECT max(n) AS n, id FROM (SELECT id, n FROM a UNION ALL SELECT id, n FROM a) GROUP BY id;";
        let on_15 = rejected(history, unaliased, 15);
        assert!(
            on_15.len() == 1
                && on_15[0].contains("a subquery in FROM without an alias is accepted only from PostgreSQL 16"),
            "{on_15:?}"
        );
        assert!(rejected(history, unaliased, 16).is_empty());
        assert!(rejected(history, "CREATE TABLE b AS SELECT id FROM (SELECT id FROM a) AS s;", 15).is_empty());
        assert!(
            rejected(history, "INSERT INTO a SELECT * FROM (SELECT 1, 2);", 15)[0].contains("PostgreSQL 15 rejects")
        );
        assert!(rejected(history, "CREATE UNIQUE INDEX a_n ON a (n) NULLS NOT DISTINCT;", 14)[0]
            .contains("from PostgreSQL 15"));
        assert!(rejected(history, "CREATE UNIQUE INDEX a_n ON a (n) NULLS NOT DISTINCT;", 15).is_empty());
        let concurrent = rejected(history, "CREATE INDEX CONCURRENTLY p_id ON p (id);", 15);
        assert!(
            concurrent[0].contains("cannot create index on partitioned table \"p\" concurrently"),
            "{concurrent:?}"
        );
        assert!(
            rejected(history, "CREATE INDEX CONCURRENTLY p1_id ON p1 (id);", 15).is_empty(),
            "a partition is a table"
        );
        let drop = rejected(history, "DROP INDEX CONCURRENTLY p_at;", 15);
        assert!(drop[0].contains("cannot drop partitioned index \"p_at\" concurrently"), "{drop:?}");
    }

    #[test]
    fn registered_with_docs() {
        let meta = crate::rules::find(META.id).expect("listed in REGISTRY");
        assert!(std::ptr::eq(meta, &META));
        assert!(!meta.what.is_empty() && !meta.why.is_empty() && !meta.fix.is_empty());
    }
}

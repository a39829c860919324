//! Which table-level locks a statement takes, from PostgreSQL's documentation of each command
//! ("Explicit Locking", and the Notes of ALTER TABLE / CREATE INDEX / DROP INDEX).

use crate::schema::Schema;
pub use crate::sql::ddl::Lock;
use crate::sql::ddl::{
    other_action_lock, AlterAction, CommentTarget, ConstraintKind, Ddl, IndexAction, Name, ObjectKind, ReindexKind,
};

/// The table an index belongs to, if the history created the index.
pub fn index_table(schema: &Schema, index: &str) -> Option<Name> {
    schema.indexes.get(index).map(|i| i.table.clone())
}

/// The table a lock on an index's table falls on: the table, or — for an index the history never
/// created — a description of it that reads as a table name in messages ("the table of index x").
pub fn index_lock_target(schema: &Schema, index: &str) -> Name {
    index_table(schema, index).unwrap_or_else(|| format!("{UNKNOWN_INDEX_TABLE}{index}"))
}

const UNKNOWN_INDEX_TABLE: &str = "the table of index ";

/// Whether `table` stands for the unknown table of an index the history never showed.
pub fn is_unknown_index_table(table: &str) -> bool {
    table.starts_with(UNKNOWN_INDEX_TABLE)
}

fn action_lock(action: &AlterAction) -> Lock {
    match action {
        AlterAction::ValidateConstraint { .. } => Lock::ShareUpdateExclusive,
        AlterAction::AddConstraint(c) if matches!(c.kind, ConstraintKind::ForeignKey { .. }) => Lock::ShareRowExclusive,
        AlterAction::AttachPartition { .. } => Lock::ShareUpdateExclusive,
        AlterAction::DetachPartition { concurrently: true, .. } => Lock::ShareUpdateExclusive,
        // Unknown sub-commands fail closed: most of ALTER TABLE takes ACCESS EXCLUSIVE.
        AlterAction::Other(text) => other_action_lock(text).unwrap_or(Lock::AccessExclusive),
        _ => Lock::AccessExclusive,
    }
}

/// The tables (and views) a statement locks and the strongest mode it takes on each. A statement
/// that does nothing (`IF [NOT] EXISTS` on an object that is, or is not, there) locks nothing.
pub fn table_locks(ddl: &Ddl, schema: &Schema) -> Vec<(Name, Lock)> {
    let mut out: Vec<(Name, Lock)> = Vec::new();
    if schema.no_op(ddl).is_some() {
        return out;
    }
    let mut add = |table: Name, lock: Lock| match out.iter_mut().find(|(t, _)| *t == table) {
        Some((_, held)) => *held = (*held).max(lock),
        None => out.push((table, lock)),
    };
    let exists = |kind: ObjectKind, name: &Name, if_exists: bool| !if_exists || schema.object_exists(kind, name);
    match ddl {
        Ddl::CreateIndex(index) => {
            add(index.table.clone(), if index.concurrently { Lock::ShareUpdateExclusive } else { Lock::Share })
        }
        Ddl::Drop { kind: ObjectKind::Index, names, concurrently, if_exists, .. } => {
            for name in names.iter().filter(|n| exists(ObjectKind::Index, n, *if_exists)) {
                add(
                    index_lock_target(schema, name),
                    if *concurrently { Lock::ShareUpdateExclusive } else { Lock::AccessExclusive },
                );
            }
        }
        // Views are relations too: dropping or replacing one waits for every query reading it.
        Ddl::Drop {
            kind: kind @ (ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView),
            names,
            if_exists,
            ..
        } => {
            for name in names.iter().filter(|n| exists(*kind, n, *if_exists)) {
                add(name.clone(), Lock::AccessExclusive);
            }
        }
        Ddl::CreateView { name, .. } if schema.views.contains_key(name) => add(name.clone(), Lock::AccessExclusive),
        // CREATE TRIGGER takes SHARE ROW EXCLUSIVE; DROP TRIGGER removes it under ACCESS EXCLUSIVE.
        Ddl::Trigger { table, drop } => {
            add(table.clone(), if *drop { Lock::AccessExclusive } else { Lock::ShareRowExclusive })
        }
        Ddl::Truncate { tables } => {
            for name in tables {
                add(name.clone(), Lock::AccessExclusive);
            }
        }
        Ddl::LockTable { tables, mode } => {
            if let Some(lock) = Lock::from_mode(mode) {
                for name in tables {
                    add(name.clone(), lock);
                }
            }
        }
        Ddl::RefreshMaterializedView { name, concurrently } => {
            add(name.clone(), if *concurrently { Lock::Exclusive } else { Lock::AccessExclusive })
        }
        Ddl::Reindex { kind, name, concurrently } => {
            let lock = if *concurrently { Lock::ShareUpdateExclusive } else { Lock::Share };
            for table in reindexed_tables(schema, *kind, name) {
                add(table, lock);
            }
        }
        Ddl::CreateStatistics { table, .. } => add(table.clone(), Lock::ShareUpdateExclusive),
        Ddl::Comment(CommentTarget::Relation { kind: ObjectKind::Index, name }) => {
            add(index_lock_target(schema, name), Lock::ShareUpdateExclusive)
        }
        Ddl::Comment(CommentTarget::Relation { kind: ObjectKind::Table | ObjectKind::MaterializedView, name }) => {
            add(name.clone(), Lock::ShareUpdateExclusive)
        }
        Ddl::Comment(CommentTarget::Column { table, .. }) => add(table.clone(), Lock::ShareUpdateExclusive),
        Ddl::AlterIndex { name, action: IndexAction::SetTablespace } => {
            add(index_lock_target(schema, name), Lock::AccessExclusive)
        }
        Ddl::AlterTable { table, actions, .. } => {
            for action in actions.iter().filter(|a| schema.action_no_op(table, a).is_none()) {
                add(table.clone(), action_lock(action));
                let constraints: Vec<&crate::sql::ddl::Constraint> = match action {
                    AlterAction::AddConstraint(c) => vec![c],
                    AlterAction::AddColumn { column, .. } => column.constraints.iter().collect(),
                    _ => Vec::new(),
                };
                for c in constraints {
                    if let ConstraintKind::ForeignKey { references, .. } = &c.kind {
                        if references != table {
                            add(references.clone(), Lock::ShareRowExclusive);
                        }
                    }
                }
                match action {
                    AlterAction::AttachPartition { partition } => add(partition.clone(), Lock::AccessExclusive),
                    AlterAction::DetachPartition { partition, concurrently } => add(
                        partition.clone(),
                        if *concurrently { Lock::ShareUpdateExclusive } else { Lock::AccessExclusive },
                    ),
                    _ => {}
                }
            }
        }
        // A new table's foreign keys lock the tables they reference (adding the checking triggers).
        Ddl::CreateTable { name, columns, constraints, .. } => {
            for c in columns.iter().flat_map(|c| &c.constraints).chain(constraints) {
                if let ConstraintKind::ForeignKey { references, .. } = &c.kind {
                    if references != name {
                        add(references.clone(), Lock::ShareRowExclusive);
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// The tables whose indexes a `REINDEX` rebuilds.
pub fn reindexed_tables(schema: &Schema, kind: ReindexKind, name: &str) -> Vec<Name> {
    match kind {
        ReindexKind::Index => vec![index_lock_target(schema, name)],
        ReindexKind::Table => {
            let partitions: Vec<Name> = schema.partitions_of(name).map(|t| t.name.clone()).collect();
            if partitions.is_empty() {
                vec![name.to_string()]
            } else {
                partitions
            }
        }
        ReindexKind::Schema => schema
            .tables
            .values()
            .filter(|t| crate::sql::names::split(&t.name).0.unwrap_or("public") == name)
            .map(|t| t.name.clone())
            .collect(),
        ReindexKind::Database => schema.tables.keys().cloned().collect(),
        // Only the system catalogs.
        ReindexKind::System => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    fn locks(sql: &str) -> Vec<(Name, Lock)> {
        let file = parse_file(sql.to_string());
        table_locks(&file.statements[0].ddl, &Schema::default())
    }

    #[test]
    fn lock_modes_follow_the_postgres_documentation() {
        assert_eq!(locks("CREATE INDEX i ON t (a)"), [("t".into(), Lock::Share)]);
        assert_eq!(locks("CREATE INDEX CONCURRENTLY i ON t (a)"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert_eq!(locks("ALTER TABLE t VALIDATE CONSTRAINT c"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert_eq!(
            locks("ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (o) REFERENCES orgs (id) NOT VALID"),
            [("t".into(), Lock::ShareRowExclusive), ("orgs".into(), Lock::ShareRowExclusive)]
        );
        assert_eq!(
            locks("ALTER TABLE t ADD COLUMN o bigint REFERENCES orgs (id), ALTER COLUMN a SET NOT NULL"),
            [("t".into(), Lock::AccessExclusive), ("orgs".into(), Lock::ShareRowExclusive)]
        );
        assert_eq!(locks("DROP INDEX CONCURRENTLY i"), [("the table of index i".into(), Lock::ShareUpdateExclusive)]);
        assert!(locks("DROP INDEX IF EXISTS never_created").is_empty(), "a no-op locks nothing");
        assert_eq!(
            locks("DROP TABLE a, b"),
            [("a".into(), Lock::AccessExclusive), ("b".into(), Lock::AccessExclusive)]
        );
        assert!(locks("UPDATE t SET a = 1").is_empty());
        assert_eq!(
            locks("CREATE TRIGGER t_audit AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION audit()"),
            [("t".into(), Lock::ShareRowExclusive)]
        );
        assert_eq!(locks("DROP TRIGGER IF EXISTS t_audit ON t"), [("t".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("DROP VIEW v, w"), [("v".into(), Lock::AccessExclusive), ("w".into(), Lock::AccessExclusive)]);
        assert!(locks("CREATE OR REPLACE VIEW v AS SELECT 1").is_empty(), "a view the schema does not have is new");
        assert_eq!(
            locks("CREATE TABLE t (id bigint PRIMARY KEY, o bigint REFERENCES orgs, p bigint REFERENCES t, FOREIGN KEY (o) REFERENCES users (id))"),
            [("orgs".into(), Lock::ShareRowExclusive), ("users".into(), Lock::ShareRowExclusive)],
            "a new table's foreign keys lock what they reference"
        );
    }

    #[test]
    fn lock_modes_of_the_statements_the_recognizer_reads_match_pg_locks() {
        // Each mode was read from pg_locks on PostgreSQL 15 inside a transaction.
        assert_eq!(locks("ALTER TABLE t ALTER CONSTRAINT t_fk DEFERRABLE"), [("t".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("CREATE STATISTICS s ON a, b FROM t"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert_eq!(locks("COMMENT ON TABLE t IS 'x'"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert!(locks("COMMENT ON CONSTRAINT c ON t IS 'x'").is_empty(), "ACCESS SHARE only");
        assert!(locks("ALTER SEQUENCE s RESTART WITH 10").is_empty(), "the sequence only");
        assert_eq!(locks("ALTER TABLE t ALTER a SET STATISTICS 100"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert_eq!(locks("ALTER TABLE t SET (fillfactor = 70)"), [("t".into(), Lock::ShareUpdateExclusive)]);
        assert_eq!(locks("ALTER TABLE t ENABLE TRIGGER ALL"), [("t".into(), Lock::ShareRowExclusive)]);
        assert_eq!(locks("ALTER TABLE t ALTER COLUMN a SET STORAGE PLAIN"), [("t".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("ALTER TABLE t REPLICA IDENTITY FULL"), [("t".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("REFRESH MATERIALIZED VIEW mv"), [("mv".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("REFRESH MATERIALIZED VIEW CONCURRENTLY mv"), [("mv".into(), Lock::Exclusive)]);
        assert_eq!(locks("REINDEX TABLE t"), [("t".into(), Lock::Share)]);
        assert_eq!(locks("LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE"), [("t".into(), Lock::ShareRowExclusive)]);
        assert!(locks("LOCK TABLE t IN ACCESS SHARE MODE").is_empty());
        assert_eq!(
            locks("ALTER TABLE p DETACH PARTITION p1"),
            [("p".into(), Lock::AccessExclusive), ("p1".into(), Lock::AccessExclusive)]
        );
    }
}

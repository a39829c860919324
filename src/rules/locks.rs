//! Which table-level locks a statement takes, from PostgreSQL's documentation of each command
//! ("Explicit Locking", and the Notes of ALTER TABLE / CREATE INDEX / DROP INDEX).

use crate::schema::Schema;
pub use crate::sql::ddl::Lock;
use crate::sql::ddl::{
    other_action_lock, AlterAction, CommentTarget, ConstraintKind, Ddl, IndexAction, Name, ObjectKind, ReindexKind,
    TriggerAction, TriggerEvent,
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

/// The tables (and views) a statement locks and the strongest mode it takes on each. Most
/// statements that do nothing lock nothing (`DROP … IF EXISTS` of what is not there, `CREATE
/// TABLE IF NOT EXISTS` of what is), but PostgreSQL 15 takes the lock before it looks in three
/// cases (read from `pg_locks`): `CREATE INDEX IF NOT EXISTS` of an existing index (SHARE),
/// `CREATE STATISTICS IF NOT EXISTS` of an existing one (SHARE UPDATE EXCLUSIVE), and `ALTER TABLE`
/// sub-commands with `IF [NOT] EXISTS` that find nothing to do (`ADD COLUMN IF NOT EXISTS`, `DROP
/// COLUMN | CONSTRAINT IF EXISTS`: ACCESS EXCLUSIVE, as if they ran). Each queues behind an open
/// transaction like any other lock.
pub fn table_locks(ddl: &Ddl, schema: &Schema) -> Vec<(Name, Lock)> {
    let mut out: Vec<(Name, Lock)> = Vec::new();
    let locks_anyway = match ddl {
        Ddl::CreateIndex(_) | Ddl::CreateStatistics { .. } => true,
        Ddl::AlterTable { table, if_exists, .. } => !*if_exists || schema.tables.contains_key(table),
        _ => false,
    };
    if !locks_anyway && schema.no_op(ddl).is_some() {
        return out;
    }
    let mut add = |table: Name, lock: Lock| match out.iter_mut().find(|(t, _)| *t == table) {
        Some((_, held)) => *held = (*held).max(lock),
        None => out.push((table, lock)),
    };
    let exists = |kind: ObjectKind, name: &Name, if_exists: bool| !if_exists || schema.object_exists(kind, name);
    match ddl {
        // On a partitioned table, the index is built on each partition under the same lock,
        // unless it is `ON ONLY` the parent.
        Ddl::CreateIndex(index) => {
            let lock = if index.concurrently { Lock::ShareUpdateExclusive } else { Lock::Share };
            let tables = if index.only { vec![index.table.clone()] } else { with_partitions(schema, &index.table) };
            for table in tables {
                add(table, lock);
            }
        }
        // A partitioned index goes with its partitions' indexes: every partition is locked too.
        Ddl::Drop { kind: ObjectKind::Index, names, concurrently, if_exists, .. } => {
            let lock = if *concurrently { Lock::ShareUpdateExclusive } else { Lock::AccessExclusive };
            for name in names.iter().filter(|n| exists(ObjectKind::Index, n, *if_exists)) {
                match index_table(schema, name) {
                    Some(table) => with_partitions(schema, &table).into_iter().for_each(|t| add(t, lock)),
                    None => add(index_lock_target(schema, name), lock),
                }
            }
        }
        // Views are relations too: dropping or replacing one waits for every query reading it.
        Ddl::Drop {
            kind: kind @ (ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView),
            names,
            if_exists,
            cascade,
            ..
        } => {
            for name in names.iter().filter(|n| exists(*kind, n, *if_exists)) {
                dropped_relation(schema, name, *cascade, &mut add);
            }
        }
        // The triggers that call a function go with it (CASCADE), and each locks its table.
        Ddl::Drop { kind: ObjectKind::Function, names, cascade: true, .. } => {
            for trigger in schema.triggers.iter().filter(|t| names.contains(&t.function)) {
                add(trigger.table.clone(), Lock::AccessExclusive);
            }
        }
        Ddl::Drop { kind: ObjectKind::Schema, names, cascade: true, .. } => {
            for name in names {
                let in_schema = |n: &str| crate::sql::names::split(n).0 == Some(name.as_str());
                let relations = schema.tables.keys().chain(schema.views.keys()).filter(|n| in_schema(n));
                for relation in relations {
                    dropped_relation(schema, relation, true, &mut add);
                }
                for trigger in schema.triggers.iter().filter(|t| in_schema(&t.function)) {
                    add(trigger.table.clone(), Lock::AccessExclusive);
                }
            }
        }
        Ddl::CreateView { name, .. } if schema.views.contains_key(name) => add(name.clone(), Lock::AccessExclusive),
        // CREATE TRIGGER takes SHARE ROW EXCLUSIVE; DROP and ALTER TRIGGER … RENAME take ACCESS EXCLUSIVE.
        Ddl::Trigger { table, action, .. } => add(
            table.clone(),
            if matches!(action, TriggerAction::Create { .. }) {
                Lock::ShareRowExclusive
            } else {
                Lock::AccessExclusive
            },
        ),
        Ddl::Truncate { tables, cascade } => {
            let mut truncated: Vec<Name> = tables.clone();
            let mut i = 0;
            // CASCADE truncates the tables whose foreign keys reference a truncated one, in turn.
            while *cascade && i < truncated.len() {
                for referencing in referencing_tables(schema, &truncated[i].clone(), None) {
                    if !truncated.contains(&referencing) {
                        truncated.push(referencing);
                    }
                }
                i += 1;
            }
            for name in truncated {
                fired_triggers(schema, &name, TriggerEvent::Truncate, &mut add);
                add(name, Lock::AccessExclusive);
            }
        }
        Ddl::Insert { table } => fired_triggers(schema, table, TriggerEvent::Insert, &mut add),
        Ddl::Update { table, .. } => fired_triggers(schema, table, TriggerEvent::Update, &mut add),
        Ddl::Delete { table, .. } => fired_triggers(schema, table, TriggerEvent::Delete, &mut add),
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
        Ddl::Analyze { tables } => {
            for table in tables {
                add(table.clone(), Lock::ShareUpdateExclusive);
            }
        }
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
            for action in actions {
                add(table.clone(), action_lock(action));
                if schema.action_no_op(table, action).is_some() {
                    continue;
                }
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
                for partner in foreign_key_partners(schema, table, action) {
                    add(partner, Lock::AccessExclusive);
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

/// `table` and its partitions, theirs in turn (a partitioned table's rows live in them).
pub fn with_partitions(schema: &Schema, table: &str) -> Vec<Name> {
    let mut out = vec![table.to_string()];
    let mut i = 0;
    while i < out.len() {
        let next: Vec<Name> = schema.partitions_of(&out[i]).map(|t| t.name.clone()).collect();
        out.extend(next.into_iter().filter(|n| !out.contains(n)).collect::<Vec<_>>());
        i += 1;
    }
    out
}

/// The locks the functions of `table`'s triggers on `event` take when they fire (a trigger that
/// refreshes a materialized view takes its lock in the statement that writes the table).
fn fired_triggers(schema: &Schema, table: &str, event: TriggerEvent, add: &mut impl FnMut(Name, Lock)) {
    for trigger in schema.triggers.iter().filter(|t| t.table == table && t.events.contains(&event)) {
        for (locked, lock) in schema.functions.get(&trigger.function).map(|f| f.locks.as_slice()).unwrap_or_default() {
            add(locked.clone(), *lock);
        }
    }
}

/// What dropping the relation `name` locks (ACCESS EXCLUSIVE, each): itself and its partitions;
/// the tables its foreign keys reference (their checking triggers are dropped); with CASCADE, the
/// views that read it, its inheritance children and the tables whose foreign keys reference it
/// (those constraints are dropped), in turn. Read from `pg_locks` on PostgreSQL 15.
fn dropped_relation(schema: &Schema, name: &str, cascade: bool, add: &mut impl FnMut(Name, Lock)) {
    let mut dropped: Vec<Name> = vec![name.to_string()];
    let mut i = 0;
    while i < dropped.len() {
        let current = dropped[i].clone();
        i += 1;
        add(current.clone(), Lock::AccessExclusive);
        let mut next: Vec<Name> = schema.partitions_of(&current).map(|t| t.name.clone()).collect();
        for partner in referenced_tables(schema, &current, None) {
            add(partner, Lock::AccessExclusive);
        }
        if cascade {
            next.extend(schema.views.values().filter(|v| v.depends_on.contains(&current)).map(|v| v.name.clone()));
            next.extend(schema.tables.values().filter(|t| t.inherits.contains(&current)).map(|t| t.name.clone()));
            for referencing in referencing_tables(schema, &current, None) {
                add(referencing, Lock::AccessExclusive);
            }
        }
        for relation in next {
            if !dropped.contains(&relation) {
                dropped.push(relation);
            }
        }
    }
}

/// The other tables that `table`'s foreign keys reference — those on `column` only, when given.
fn referenced_tables(schema: &Schema, table: &str, column: Option<&str>) -> Vec<Name> {
    let Some(t) = schema.table(table) else { return Vec::new() };
    t.constraints
        .iter()
        .filter_map(|c| match &c.kind {
            ConstraintKind::ForeignKey { columns, references, .. }
                if references != table && column.is_none_or(|col| columns.iter().any(|c| c == col)) =>
            {
                Some(references.clone())
            }
            _ => None,
        })
        .collect()
}

/// The other tables whose foreign keys reference `table` — its `column` only, when given (a
/// foreign key naming no columns references the primary key).
fn referencing_tables(schema: &Schema, table: &str, column: Option<&str>) -> Vec<Name> {
    let primary_key: Vec<&Name> = schema
        .table(table)
        .into_iter()
        .flat_map(|t| &t.constraints)
        .filter_map(|c| match &c.kind {
            ConstraintKind::PrimaryKey { columns } => Some(columns),
            _ => None,
        })
        .flatten()
        .collect();
    let mut out: Vec<Name> = Vec::new();
    for t in schema.tables.values().filter(|t| t.name != table) {
        let references_it = t.constraints.iter().any(|c| match &c.kind {
            ConstraintKind::ForeignKey { references, referenced_columns, .. } if references == table => column
                .is_none_or(|col| {
                    referenced_columns.iter().any(|c| c == col)
                        || (referenced_columns.is_empty() && primary_key.iter().any(|c| *c == col))
                }),
            _ => false,
        });
        if references_it && !out.contains(&t.name) {
            out.push(t.name.clone());
        }
    }
    out
}

/// The other tables an `ALTER TABLE` sub-command on `table` takes ACCESS EXCLUSIVE on through
/// foreign keys (read from `pg_locks` on PostgreSQL 15): dropping a foreign key, or the column
/// it is on, drops its checking triggers on the referenced table; changing a column's type
/// drops and re-adds the foreign keys on it and to it; with CASCADE, dropping a column or a
/// unique key other tables' foreign keys reference drops those.
fn foreign_key_partners(schema: &Schema, table: &str, action: &AlterAction) -> Vec<Name> {
    let Some(t) = schema.table(table) else { return Vec::new() };
    match action {
        AlterAction::DropConstraint { name, cascade, .. } => match t.constraint(name).map(|c| &c.kind) {
            Some(ConstraintKind::ForeignKey { references, .. }) if references != table => vec![references.clone()],
            Some(ConstraintKind::PrimaryKey { columns } | ConstraintKind::Unique { columns, .. }) if *cascade => {
                columns.iter().flat_map(|c| referencing_tables(schema, table, Some(c))).collect()
            }
            _ => Vec::new(),
        },
        AlterAction::DropColumn { name, cascade, .. } => {
            let mut out = referenced_tables(schema, table, Some(name));
            if *cascade {
                out.extend(referencing_tables(schema, table, Some(name)));
            }
            out
        }
        AlterAction::SetType { column, .. } => {
            let mut out = referenced_tables(schema, table, Some(column));
            out.extend(referencing_tables(schema, table, Some(column)));
            out
        }
        _ => Vec::new(),
    }
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
        assert_eq!(
            locks("DROP TRIGGER IF EXISTS t_audit ON t"),
            [("t".into(), Lock::AccessExclusive)],
            "a table the history never showed may have that trigger"
        );
        assert_eq!(locks("ALTER TRIGGER t_audit ON t RENAME TO t_log"), [("t".into(), Lock::AccessExclusive)]);
        assert_eq!(locks("DROP VIEW v, w"), [("v".into(), Lock::AccessExclusive), ("w".into(), Lock::AccessExclusive)]);
        assert!(locks("CREATE OR REPLACE VIEW v AS SELECT 1").is_empty(), "a view the schema does not have is new");
        assert_eq!(
            locks("CREATE TABLE t (id bigint PRIMARY KEY, o bigint REFERENCES orgs, p bigint REFERENCES t, FOREIGN KEY (o) REFERENCES users (id))"),
            [("orgs".into(), Lock::ShareRowExclusive), ("users".into(), Lock::ShareRowExclusive)],
            "a new table's foreign keys lock what they reference"
        );
    }

    /// The locks of `sql` after the statements of `history`.
    fn locks_after(history: &str, sql: &str) -> Vec<(Name, Lock)> {
        let mut schema = Schema::default();
        schema.apply_all(&parse_file(history.to_string()).statements, "001.sql", Some(0));
        table_locks(&parse_file(sql.to_string()).statements[0].ddl, &schema)
    }

    /// Each case was read from `pg_locks` on PostgreSQL 15: what a statement does to a foreign key
    /// (its checking triggers live on both tables) locks the other table too.
    #[test]
    fn foreign_keys_lock_the_other_table_when_they_go() {
        let history = "CREATE TABLE r (id int PRIMARY KEY, u int UNIQUE);
            CREATE TABLE c (id int, r int REFERENCES r, s int CONSTRAINT c_s_fkey REFERENCES r (u));
            CREATE TABLE d (id int, r int REFERENCES r);
            CREATE VIEW v AS SELECT * FROM d; CREATE MATERIALIZED VIEW mv AS SELECT * FROM v;";
        let ae = |t: &str| (t.to_string(), Lock::AccessExclusive);
        assert_eq!(locks_after(history, "ALTER TABLE c DROP COLUMN r"), [ae("c"), ae("r")]);
        assert_eq!(locks_after(history, "ALTER TABLE c DROP COLUMN id"), [ae("c")]);
        assert_eq!(locks_after(history, "ALTER TABLE c DROP CONSTRAINT c_s_fkey"), [ae("c"), ae("r")]);
        assert_eq!(locks_after(history, "ALTER TABLE c ALTER COLUMN r TYPE bigint"), [ae("c"), ae("r")]);
        assert_eq!(locks_after(history, "ALTER TABLE r ALTER COLUMN id TYPE bigint"), [ae("r"), ae("c"), ae("d")]);
        assert_eq!(locks_after(history, "ALTER TABLE r DROP CONSTRAINT r_u_key CASCADE"), [ae("r"), ae("c")]);
        assert_eq!(locks_after(history, "ALTER TABLE r DROP COLUMN id CASCADE"), [ae("r"), ae("c"), ae("d")]);
        assert_eq!(locks_after(history, "DROP TABLE c"), [ae("c"), ae("r")]);
        assert_eq!(locks_after(history, "DROP TABLE r CASCADE"), [ae("r"), ae("c"), ae("d")]);
        assert_eq!(locks_after(history, "DROP TABLE d CASCADE"), [ae("d"), ae("r"), ae("v"), ae("mv")]);
        assert_eq!(locks_after(history, "DROP VIEW v CASCADE"), [ae("v"), ae("mv")]);
        assert_eq!(locks_after(history, "TRUNCATE r CASCADE"), [ae("r"), ae("c"), ae("d")]);
        assert_eq!(locks_after(history, "TRUNCATE r"), [ae("r")]);
        assert_eq!(locks_after(history, "ALTER TABLE c RENAME COLUMN r TO rr"), [ae("c")]);
        assert_eq!(
            locks_after(history, "ALTER TABLE c DROP COLUMN IF EXISTS nothing"),
            [ae("c")],
            "a no-op still locks"
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

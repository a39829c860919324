//! Which table-level locks a statement takes, from PostgreSQL's documentation of each command
//! ("Explicit Locking", and the Notes of ALTER TABLE / CREATE INDEX / DROP INDEX).

use crate::schema::Schema;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, Name, ObjectKind};

/// The lock modes migrations care about, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lock {
    /// Concurrent index builds, VALIDATE CONSTRAINT: reads and writes go on.
    ShareUpdateExclusive,
    /// CREATE INDEX: blocks writes.
    Share,
    /// Foreign keys (both tables), triggers: blocks writes.
    ShareRowExclusive,
    /// Most of ALTER TABLE, DROP, TRUNCATE: blocks reads and writes.
    AccessExclusive,
}

impl Lock {
    pub fn as_str(self) -> &'static str {
        match self {
            Lock::ShareUpdateExclusive => "SHARE UPDATE EXCLUSIVE",
            Lock::Share => "SHARE",
            Lock::ShareRowExclusive => "SHARE ROW EXCLUSIVE",
            Lock::AccessExclusive => "ACCESS EXCLUSIVE",
        }
    }

    /// Blocks the application's writes (or reads too) while held or queued.
    pub fn blocks_writes(self) -> bool {
        self >= Lock::Share
    }
}

/// The table a dropped index belongs to; an index the history never showed is named as such.
pub fn index_table(schema: &Schema, index: &str) -> Name {
    schema.indexes.get(index).map(|i| i.table.clone()).unwrap_or_else(|| format!("{UNKNOWN_INDEX_TABLE}{index})"))
}

const UNKNOWN_INDEX_TABLE: &str = "(table of index ";

/// Whether `table` stands for the unknown table of an index the history never showed.
pub fn is_unknown_index_table(table: &str) -> bool {
    table.starts_with(UNKNOWN_INDEX_TABLE)
}

fn action_lock(action: &AlterAction) -> Lock {
    match action {
        AlterAction::ValidateConstraint { .. } => Lock::ShareUpdateExclusive,
        AlterAction::AddConstraint(c) if matches!(c.kind, ConstraintKind::ForeignKey { .. }) => Lock::ShareRowExclusive,
        AlterAction::Other(text) if text.to_lowercase().contains("set statistics") => Lock::ShareUpdateExclusive,
        _ => Lock::AccessExclusive,
    }
}

/// The tables (and views) a statement locks and the strongest mode it takes on each.
pub fn table_locks(ddl: &Ddl, schema: &Schema) -> Vec<(Name, Lock)> {
    let mut out: Vec<(Name, Lock)> = Vec::new();
    let mut add = |table: Name, lock: Lock| match out.iter_mut().find(|(t, _)| *t == table) {
        Some((_, held)) => *held = (*held).max(lock),
        None => out.push((table, lock)),
    };
    match ddl {
        Ddl::CreateIndex(index) => {
            add(index.table.clone(), if index.concurrently { Lock::ShareUpdateExclusive } else { Lock::Share })
        }
        Ddl::Drop { kind: ObjectKind::Index, names, concurrently, .. } => {
            for name in names {
                add(
                    index_table(schema, name),
                    if *concurrently { Lock::ShareUpdateExclusive } else { Lock::AccessExclusive },
                );
            }
        }
        // Views are relations too: dropping or replacing one waits for every query reading it.
        Ddl::Drop { kind: ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView, names, .. } => {
            for name in names {
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
        Ddl::AlterTable { table, actions, .. } => {
            for action in actions {
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
        assert_eq!(locks("DROP INDEX CONCURRENTLY i"), [("(table of index i)".into(), Lock::ShareUpdateExclusive)]);
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
}

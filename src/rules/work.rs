//! What an `ALTER TABLE` does to the rows already in a table besides locking it — the scan of a
//! validation, `SET NOT NULL`'s check — as PostgreSQL 15 decides it (`tablecmds.c`, phase 3 of
//! ALTER TABLE; `parse_utilcmd.c` for the validations it skips). One place for the rules that
//! report the work (`add-foreign-key-validated`, `add-check-validated`, `set-not-null`) and the
//! one that reports what keeps a lock held (`lock-held-across-statements`); each case was read
//! off the scan counters (`pg_stat_xact_user_tables`) of a real PostgreSQL 15.

use crate::schema::{Schema, UNKNOWN_TYPE};
use crate::sql::ddl::{Column, Constraint, ConstraintKind, IndexKey, Name};
use crate::sql::types::{change_cost, Coercion, Cost};

/// Whether adding `constraint` reads every row already in the table: a CHECK or a foreign key
/// without `NOT VALID`, except a foreign key on a column added (`added_with`) with no `DEFAULT`
/// and no generated value — every value is NULL, so PostgreSQL skips the check and marks the
/// constraint valid (`transformAlterTableStmt`: "If the column has a non-null default, we can't
/// skip validation of foreign keys"; any `DEFAULT` clause counts, even `DEFAULT NULL`). A CHECK
/// on a new column is checked either way.
pub fn validates_existing_rows(constraint: &Constraint, added_with: Option<&Column>) -> bool {
    if constraint.not_valid {
        return false;
    }
    match &constraint.kind {
        ConstraintKind::Check { .. } => true,
        ConstraintKind::ForeignKey { .. } => {
            added_with.is_none_or(|column| column.default.is_some() || column.generated_stored || column.identity)
        }
        _ => false,
    }
}

/// Why `SET NOT NULL` on `table.column` needs no scan, if it needs none: the column is NOT NULL
/// already (a catalog no-op, under a brief ACCESS EXCLUSIVE), or — from PostgreSQL 12 — a
/// validated `CHECK (column IS NOT NULL)` proves it (`NotNullImpliedByRelConstraints`).
pub fn set_not_null_proven(schema: &Schema, table: &str, column: &str, postgres_version: u32) -> Option<NotNullProof> {
    let t = schema.table(table)?;
    if t.column(column).is_some_and(|c| c.not_null) {
        return Some(NotNullProof::AlreadyNotNull);
    }
    let check = t
        .constraints
        .iter()
        .find(|c| matches!(&c.kind, ConstraintKind::Check { expression } if is_not_null_check(expression, column)))?;
    Some(if check.not_valid {
        NotNullProof::CheckNotValid(check.name.clone())
    } else if postgres_version >= 12 {
        NotNullProof::ValidatedCheck(check.name.clone())
    } else {
        NotNullProof::CheckBefore12(check.name.clone())
    })
}

/// What the schema says about a column about to be `SET NOT NULL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotNullProof {
    /// NOT NULL already: nothing to check.
    AlreadyNotNull,
    /// A validated `CHECK (c IS NOT NULL)`, which PostgreSQL 12+ uses instead of a scan.
    ValidatedCheck(String),
    /// The same check before PostgreSQL 12: not used, the table is scanned.
    CheckBefore12(String),
    /// The check is `NOT VALID` yet: not used, the table is scanned.
    CheckNotValid(String),
}

impl NotNullProof {
    /// Whether PostgreSQL skips the scan.
    pub fn skips_scan(&self) -> bool {
        matches!(self, NotNullProof::AlreadyNotNull | NotNullProof::ValidatedCheck(_))
    }
}

/// What `ALTER COLUMN … TYPE` does to an existing table and its indexes.
pub struct TypeChange {
    /// The column's type before, if the history shows it.
    pub old: Option<String>,
    /// What it costs: a rewrite (of the table and every index), rebuilt indexes only, or nothing.
    pub cost: Cost,
    /// The case of `sql::types::COERCIONS` that spared the rewrite.
    pub coercion: Option<&'static Coercion>,
    /// Without a rewrite, the indexes PostgreSQL builds anew.
    pub rebuilt: Vec<Name>,
    /// `COLLATE` names another collation than the column's.
    pub collation_changes: bool,
}

/// The changes to one column's type that PostgreSQL 15 makes in `ALTER TABLE … ALTER COLUMN
/// column TYPE data_type [COLLATE collation] [USING using]` (`ATColumnChangeRequiresRewrite`;
/// `TryReuseIndex` and `CheckIndexCompatible` for the indexes): a rewrite unless the change is
/// binary-coercible (or the `USING` expression is the column itself); without a rewrite, every
/// index whose expressions or predicate read the column is still built anew — even for a change
/// to the same type — and so are its plain indexes when their operator class changes (the
/// coercion says so) or the collation does. Each case was read off `relfilenode` on
/// PostgreSQL 15 (`varchar(10)` → `text` rebuilds an index on `lower(name)` and a partial index
/// over the column, not a plain one; `COLLATE "C"` rebuilds the plain one too).
#[allow(clippy::too_many_arguments)]
pub fn type_change(
    schema: &Schema,
    table: &str,
    column: &str,
    data_type: &str,
    using: Option<&str>,
    through: &[String],
    collation: Option<&str>,
    postgres_version: u32,
    utc: bool,
) -> TypeChange {
    // A column of a type the history does not show (`CREATE TABLE … AS` over what Sluice cannot
    // follow) is of unknown type, not of a type named "unknown".
    let before = schema.table(table).and_then(|t| t.column(column)).filter(|c| c.data_type != UNKNOWN_TYPE);
    let old = before.map(|c| c.data_type.clone());
    let rewrite = |old: Option<String>| TypeChange {
        old,
        cost: Cost::Rewrite,
        coercion: None,
        rebuilt: Vec::new(),
        collation_changes: false,
    };
    let Some(old_type) = old.as_deref() else { return rewrite(old) };
    if using.is_some() {
        return rewrite(old);
    }
    // Cast through other types, each step must be free: text → an enum is a function call.
    let steps: Vec<&str> =
        std::iter::once(old_type).chain(through.iter().map(String::as_str)).chain([data_type]).collect();
    let mut cost = Cost::Nothing;
    let mut coercion = None;
    for step in steps.windows(2) {
        let (step_cost, step_coercion) = change_cost(step[0], step[1], postgres_version, utc);
        cost = cost.max(step_cost);
        coercion = coercion.or(step_coercion);
    }
    if cost == Cost::Rewrite {
        return TypeChange { coercion, ..rewrite(old) };
    }
    let collation_changes = before.is_some_and(|c| c.collation.as_deref() != collation);
    let plain_rebuilt = cost == Cost::IndexRebuild || collation_changes;
    let rebuilt: Vec<Name> = schema
        .with_descendants(table)
        .iter()
        .flat_map(|t| schema.indexes_on(t))
        .filter(|index| {
            let computed = index.keys.iter().any(|k| matches!(k, IndexKey::Expression(_))) || index.predicate.is_some();
            index.reads_column(column) && (computed || plain_rebuilt)
        })
        .map(|index| index.name.clone())
        .collect();
    let cost = if rebuilt.is_empty() { Cost::Nothing } else { Cost::IndexRebuild };
    TypeChange { old, cost, coercion, rebuilt, collation_changes }
}

/// `col IS NOT NULL`, however it was written. `expression` is normalized (`names::expression`:
/// keywords lower case, a name that needs quotes quoted, as `"isPaused"`).
pub fn is_not_null_check(expression: &str, column: &str) -> bool {
    let bare: String = expression.chars().filter(|c| !matches!(c, '(' | ')')).collect();
    let words: Vec<&str> = bare.split_whitespace().collect();
    matches!(words.as_slice(), [name, "is", "not", "null"] if name.trim_matches('"') == column)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::{AlterAction, Ddl};
    use crate::sql::parse::parse_file;

    fn added(sql: &str) -> Vec<bool> {
        let file = parse_file(sql.to_string());
        let Ddl::AlterTable { actions, .. } = &file.statements[0].ddl else { panic!("{sql}") };
        actions
            .iter()
            .flat_map(|a| match a {
                AlterAction::AddConstraint(c) => vec![validates_existing_rows(c, None)],
                AlterAction::AddColumn { column, .. } => {
                    column.constraints.iter().map(|c| validates_existing_rows(c, Some(column))).collect()
                }
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn validations_follow_the_scan_counters_of_postgresql_15() {
        // Each case was run on PostgreSQL 15 against a table with rows, reading
        // pg_stat_xact_user_tables.seq_scan before and after.
        assert_eq!(added("ALTER TABLE t ADD COLUMN c bigint REFERENCES p (id)"), [false], "every value is NULL");
        assert_eq!(added("ALTER TABLE t ADD COLUMN c bigint DEFAULT NULL REFERENCES p (id)"), [true]);
        assert_eq!(added("ALTER TABLE t ADD COLUMN c bigint DEFAULT 1 REFERENCES p (id)"), [true]);
        assert_eq!(added("ALTER TABLE t ADD COLUMN c int CHECK (c > 0)"), [true], "a CHECK is checked anyway");
        assert_eq!(added("ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES p (id)"), [true]);
        assert_eq!(added("ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES p (id) NOT VALID"), [false]);
        assert_eq!(
            added("ALTER TABLE t ADD COLUMN z int DEFAULT 0, ADD COLUMN c bigint REFERENCES p (id)"),
            [false],
            "each sub-command is decided on its own"
        );
    }
}

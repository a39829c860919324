//! The names PostgreSQL chooses for what it creates unnamed — indexes, constraints, sequences —
//! checked for collisions against the model as PostgreSQL checks them against its catalogs
//! (`ChooseRelationName`, `ChooseIndexName` in `src/backend/commands/indexcmds.c`;
//! `ChooseConstraintName` in `src/backend/catalog/pg_constraint.c`). `tests/postgres_names.rs`
//! compares them with a real server.

use super::model::Schema;
use crate::sql::ddl::{Constraint, ConstraintKind, CreateIndex, Name};
use crate::sql::names::{self, beside, make_object_name, name_addition};
use std::collections::BTreeSet;

/// Names an `ALTER TABLE`'s own drops free before its additions are named: PostgreSQL runs the
/// drops first (`AT_PASS_DROP`), so `DROP COLUMN id, ADD PRIMARY KEY (uuid)` gives the new key
/// the name the old one had. Worked out by `Schema::freed_by_drops`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Freed {
    /// Indexes (qualified names) the drops remove.
    pub indexes: BTreeSet<Name>,
    /// Sequences (qualified names) the drops remove.
    pub sequences: BTreeSet<Name>,
    /// The altered table, and the positions in its list of the constraints the drops remove.
    pub table: Name,
    pub constraints: BTreeSet<usize>,
}

impl Schema {
    /// [`Schema::relation_exists`] once `freed` is gone.
    fn relation_exists_after(&self, name: &str, freed: &Freed) -> bool {
        self.tables.contains_key(name)
            || self.views.contains_key(name)
            || (self.indexes.contains_key(name) && !freed.indexes.contains(name))
            || (self.sequences.contains_key(name) && !freed.sequences.contains(name))
    }

    /// [`Schema::constraint_name_taken`] once `freed` is gone.
    fn constraint_name_taken_after(&self, table: &str, name: &str, freed: &Freed) -> bool {
        if freed.constraints.is_empty() || !self.constraint_names_seen.contains(name) {
            return self.constraint_name_taken(table, name);
        }
        let schema = names::split(table).0;
        self.tables.values().filter(|t| names::split(&t.name).0 == schema).any(|t| {
            let kept = |at: &usize| t.name != freed.table || !freed.constraints.contains(at);
            t.constraints.iter().enumerate().any(|(at, c)| c.name == name && kept(&at))
        })
    }
}

/// What an index is for, which decides the label PostgreSQL gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexPurpose {
    /// `CREATE INDEX` without a name: `_idx`.
    Plain,
    /// A PRIMARY KEY: `<table>_pkey`, whatever the columns.
    PrimaryKey,
    /// A UNIQUE constraint: `_key`.
    Unique,
    /// An EXCLUDE constraint: `_excl`.
    Exclusion,
}

impl Schema {
    /// `ChooseRelationName`: `name1_name2_label`, then `label1`, `label2`… until no relation of
    /// that name exists in the schema of `table` (nor, for constraints, a constraint).
    /// `taken` are names chosen earlier in the same command. Returns the qualified name.
    /// Names `freed` by the statement's own drops count as free.
    pub fn choose_relation_name(
        &self,
        table: &str,
        name2: Option<&str>,
        label: &str,
        is_constraint: bool,
        taken: &[Name],
        freed: &Freed,
    ) -> Name {
        let name1 = names::split(table).1;
        let mut pass = 0;
        loop {
            let label = if pass == 0 { label.to_string() } else { format!("{label}{pass}") };
            let candidate = make_object_name(name1, name2, Some(&label));
            let qualified = beside(table, &candidate);
            let collides = self.relation_exists_after(&qualified, freed)
                || taken.contains(&qualified)
                || (is_constraint && self.constraint_name_taken_after(table, &candidate, freed));
            if !collides {
                return qualified;
            }
            pass += 1;
        }
    }

    /// `ChooseIndexName`: the name of an index built for `purpose` on `table` whose columns
    /// PostgreSQL names `columns` (see `names::index_column_names`).
    pub fn choose_index_name(&self, table: &str, columns: &[Name], purpose: IndexPurpose, taken: &[Name]) -> Name {
        self.choose_index_name_after(table, columns, purpose, taken, &Freed::default())
    }

    fn choose_index_name_after(
        &self,
        table: &str,
        columns: &[Name],
        purpose: IndexPurpose,
        taken: &[Name],
        freed: &Freed,
    ) -> Name {
        let addition = name_addition(columns);
        let (name2, label, is_constraint) = match purpose {
            IndexPurpose::PrimaryKey => (None, "pkey", true),
            IndexPurpose::Exclusion => (Some(addition.as_str()), "excl", true),
            IndexPurpose::Unique => (Some(addition.as_str()), "key", true),
            IndexPurpose::Plain => (Some(addition.as_str()), "idx", false),
        };
        self.choose_relation_name(table, name2, label, is_constraint, taken, freed)
    }

    /// `ChooseConstraintName`: a CHECK (`label` "check") or foreign key ("fkey") name unique
    /// among the constraints of the schema of `table` and `others` (chosen earlier in the same
    /// command). Constraint names are not qualified.
    /// Names `freed` by the statement's own drops count as free.
    pub fn choose_constraint_name(
        &self,
        table: &str,
        columns: &[Name],
        label: &str,
        others: &[Name],
        freed: &Freed,
    ) -> Name {
        let name1 = names::split(table).1;
        let addition = (!columns.is_empty()).then(|| name_addition(columns));
        let mut pass = 0;
        loop {
            let label = if pass == 0 { label.to_string() } else { format!("{label}{pass}") };
            let candidate = make_object_name(name1, addition.as_deref(), Some(&label));
            if !others.contains(&candidate) && !self.constraint_name_taken_after(table, &candidate, freed) {
                return candidate;
            }
            pass += 1;
        }
    }

    /// The name of the index `CREATE INDEX` builds: its own (in its table's schema), or the one
    /// PostgreSQL generates. Qualified like every relation name of the model.
    pub fn index_name(&self, index: &CreateIndex) -> Name {
        match &index.name {
            Some(name) => names::beside(&index.table, name),
            None => self.choose_index_name(&index.table, &index.key_names, IndexPurpose::Plain, &[]),
        }
    }

    /// The name a constraint added to `table` gets: its own, or the one PostgreSQL generates
    /// (`chosen` are names generated earlier in the same command). For PRIMARY KEY, UNIQUE and
    /// EXCLUDE it is also the name of the index built for it.
    pub fn constraint_name(&self, table: &str, constraint: &Constraint, chosen: &[Name]) -> Name {
        self.constraint_name_after(table, constraint, chosen, &Freed::default())
    }

    /// [`constraint_name`](Self::constraint_name) once `freed` is gone: the name a constraint
    /// added by an `ALTER TABLE` gets after that statement's own drops.
    pub fn constraint_name_after(&self, table: &str, constraint: &Constraint, chosen: &[Name], freed: &Freed) -> Name {
        if let Some(name) = &constraint.name {
            return name.clone();
        }
        let index = |purpose| {
            let name = self.choose_index_name_after(table, &constraint.naming, purpose, &[], freed);
            names::split(&name).1.to_string()
        };
        let named = |label| self.choose_constraint_name(table, &constraint.naming, label, chosen, freed);
        match &constraint.kind {
            ConstraintKind::PrimaryKey { .. } => index(IndexPurpose::PrimaryKey),
            ConstraintKind::Unique { .. } => index(IndexPurpose::Unique),
            ConstraintKind::Exclusion => index(IndexPurpose::Exclusion),
            ConstraintKind::UsingIndex { index, .. } => names::split(index).1.to_string(),
            ConstraintKind::ForeignKey { .. } => named("fkey"),
            ConstraintKind::Check { .. } | ConstraintKind::Other => named("check"),
        }
    }

    /// The sequence behind a `serial` or identity column: `<table>_<column>_seq`.
    pub fn choose_sequence_name(&self, table: &str, column: &str, taken: &[Name]) -> Name {
        self.choose_relation_name(table, Some(column), "seq", false, taken, &Freed::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::{Origin, RelationKind, Table};

    fn schema_with(tables: &[&str]) -> Schema {
        let mut schema = Schema::default();
        for t in tables {
            schema.tables.insert(t.to_string(), Table::new(t.to_string(), RelationKind::Table, Origin::default()));
        }
        schema
    }

    #[test]
    fn names_like_postgres() {
        let schema = schema_with(&["reserved_crate_names"]);
        assert_eq!(
            schema.choose_index_name("reserved_crate_names", &["canon_crate_name".into()], IndexPurpose::Plain, &[]),
            "reserved_crate_names_canon_crate_name_idx"
        );
        assert_eq!(schema.choose_index_name("t", &["a".into()], IndexPurpose::PrimaryKey, &[]), "t_pkey");
        assert_eq!(
            schema.choose_index_name("app.t", &["a".into(), "b".into()], IndexPurpose::Unique, &[]),
            "app.t_a_b_key"
        );
        assert_eq!(schema.choose_sequence_name("t", "id", &[]), "t_id_seq");
    }

    #[test]
    fn collisions_get_a_number_on_the_label() {
        let mut schema = schema_with(&["t"]);
        let first = schema.choose_index_name("t", &["a".into()], IndexPurpose::Plain, &[]);
        schema.sequences.insert(
            first.clone(),
            crate::schema::model::Sequence { name: first.clone(), owned_by: None, origin: Origin::default() },
        );
        assert_eq!(first, "t_a_idx");
        assert_eq!(schema.choose_index_name("t", &["a".into()], IndexPurpose::Plain, &[]), "t_a_idx1");
        assert_eq!(
            schema.choose_constraint_name("t", &["a".into()], "check", &["t_a_check".into()], &Freed::default()),
            "t_a_check1"
        );
    }

    #[test]
    fn long_names_are_shortened_longer_part_first() {
        let table = "a_rather_long_table_name_that_goes_on_and_on";
        let schema = schema_with(&[table]);
        let name =
            schema.choose_index_name(table, &["and_an_equally_long_column_name_too".into()], IndexPurpose::Plain, &[]);
        assert_eq!(name.len(), 63);
        assert_eq!(name, "a_rather_long_table_name_that_and_an_equally_long_column_na_idx");
    }
}

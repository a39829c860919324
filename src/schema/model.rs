//! The schema as a plain value: tables, columns, indexes, constraints, views.

use crate::sql::ddl::{ConstraintKind, IndexKey, Name};
use crate::sql::query::{Catalog, ColumnUse};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where an object was defined: file, line, and which migration (in replay order) did it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub file: String,
    pub line: usize,
    /// Position of the migration in replay order; `None` for a schema dump.
    pub migration: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnInfo {
    pub name: Name,
    pub data_type: String,
    pub not_null: bool,
    pub has_default: bool,
    /// The database generates its values (identity, serial, a sequence or UUID default): a surrogate key.
    pub generated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstraintInfo {
    pub name: Name,
    pub kind: ConstraintKind,
    pub not_valid: bool,
    /// The unique index PostgreSQL built for a PRIMARY KEY or UNIQUE constraint.
    pub index: Option<Name>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub name: Name,
    pub columns: Vec<ColumnInfo>,
    pub constraints: Vec<ConstraintInfo>,
    pub origin: Origin,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&ColumnInfo> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn column_mut(&mut self, name: &str) -> Option<&mut ColumnInfo> {
        self.columns.iter_mut().find(|c| c.name == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub name: Name,
    pub table: Name,
    pub unique: bool,
    pub keys: Vec<IndexKey>,
    pub predicate: Option<String>,
    /// The constraint this index backs, if any.
    pub constraint: Option<Name>,
    pub origin: Origin,
}

impl Index {
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.keys.iter().map(IndexKey::display).collect::<Vec<_>>().join(", "))
    }

    pub fn leading_column(&self) -> Option<&str> {
        self.keys.first().and_then(IndexKey::column)
    }

    pub fn has_key_column(&self, column: &str) -> bool {
        self.keys.iter().any(|k| k.column() == Some(column))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    pub name: Name,
    /// The columns its query compares, resolved when it was defined.
    pub uses: Vec<ColumnUse>,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub tables: BTreeMap<Name, Table>,
    pub indexes: BTreeMap<Name, Index>,
    pub views: BTreeMap<Name, View>,
    pub functions: BTreeMap<Name, Origin>,
}

impl Schema {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(name)
    }

    pub fn indexes_on<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a Index> + 'a {
        self.indexes.values().filter(move |i| i.table == table)
    }
}

impl Catalog for Schema {
    fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|t| t.column(column).is_some())
    }
}

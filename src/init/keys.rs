//! The tables whose rows something already declares unique: every table with a primary key,
//! a unique constraint or a unique index in the schema the history builds. Those are the
//! tables whose domain identity `policies/identity.toml` should state.

use crate::schema::{Index, Schema};
use crate::sql::ddl::{ConstraintKind, IndexKey};
use std::collections::BTreeMap;

/// One uniqueness the schema enforces today, described for a person deciding the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueKey {
    /// `primary key`, `unique constraint orders_number_key`, `unique index users_lower_email`.
    pub kind: String,
    /// The key's columns and expressions, as written (`site_id`, `(lower(email))`).
    pub keys: Vec<String>,
    pub predicate: Option<String>,
    /// Key columns the database generates (identity, serial, UUID default): surrogates.
    pub generated: Vec<String>,
}

/// Table name → its unique keys, tables in name order, keys primary key first.
pub fn keyed_tables(schema: &Schema) -> BTreeMap<String, Vec<UniqueKey>> {
    let mut out: BTreeMap<String, Vec<UniqueKey>> = BTreeMap::new();
    for index in schema.indexes.values().filter(|i| i.unique) {
        out.entry(index.table.clone()).or_default().push(describe(schema, index));
    }
    for keys in out.values_mut() {
        keys.sort_by_key(|k| (k.kind != "primary key", k.kind.clone()));
    }
    out
}

fn describe(schema: &Schema, index: &Index) -> UniqueKey {
    let table = schema.table(&index.table);
    let constraint =
        index.constraint.as_ref().and_then(|name| table.and_then(|t| t.constraints.iter().find(|c| &c.name == name)));
    let kind = match constraint.map(|c| &c.kind) {
        Some(ConstraintKind::PrimaryKey { .. } | ConstraintKind::UsingIndex { primary_key: true, .. }) => {
            "primary key".to_string()
        }
        Some(_) => format!("unique constraint {}", index.constraint.as_deref().unwrap_or(&index.name)),
        None => format!("unique index {}", index.name),
    };
    let generated = index
        .keys
        .iter()
        .filter_map(IndexKey::column)
        .filter(|c| table.and_then(|t| t.column(c)).is_some_and(|c| c.generated))
        .map(str::to_string)
        .collect();
    UniqueKey {
        kind,
        keys: index.keys.iter().map(IndexKey::display).collect(),
        predicate: index.predicate.clone(),
        generated,
    }
}

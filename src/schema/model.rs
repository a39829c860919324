//! The schema as a plain value: tables (and the other relations that hold rows: partitioned
//! tables, materialized views), columns, indexes, constraints, views, sequences, functions and
//! schemas. Names are normalized: folded, truncated to 63 bytes, `public.` dropped.

use crate::sql::ddl::{ConstraintKind, IndexKey, Lock, Name, TriggerEvent, Volatility};
use crate::sql::names;
use crate::sql::query::{Catalog, ColumnUse};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
    /// `COLLATE name`; `None`: its type's default collation.
    #[serde(default)]
    pub collation: Option<Name>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConstraintInfo {
    pub name: Name,
    pub kind: ConstraintKind,
    pub not_valid: bool,
    /// The unique index PostgreSQL built for a PRIMARY KEY, UNIQUE or EXCLUDE constraint.
    pub index: Option<Name>,
}

/// What kind of relation a [`Table`] is: every relation that holds rows and can be indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelationKind {
    Table,
    /// `PARTITION BY`: its rows live in its partitions.
    PartitionedTable,
    MaterializedView,
}

impl RelationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::PartitionedTable => "partitioned table",
            RelationKind::MaterializedView => "materialized view",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub name: Name,
    pub kind: RelationKind,
    pub columns: Vec<ColumnInfo>,
    pub constraints: Vec<ConstraintInfo>,
    pub origin: Origin,
    /// The partitioned table this is a partition of.
    pub partition_of: Option<Name>,
    /// `INHERITS` parents.
    pub inherits: Vec<Name>,
}

/// The most columns a PostgreSQL table has (`MaxHeapAttributeNumber`, `htup_details.h`).
pub const MAX_COLUMNS: usize = 1600;

impl Table {
    pub fn new(name: Name, kind: RelationKind, origin: Origin) -> Table {
        Table {
            name,
            kind,
            columns: Vec::new(),
            constraints: Vec::new(),
            origin,
            partition_of: None,
            inherits: Vec::new(),
        }
    }

    pub fn column(&self, name: &str) -> Option<&ColumnInfo> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn column_mut(&mut self, name: &str) -> Option<&mut ColumnInfo> {
        self.columns.iter_mut().find(|c| c.name == name)
    }

    pub fn constraint(&self, name: &str) -> Option<&ConstraintInfo> {
        self.constraints.iter().find(|c| c.name == name)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub name: Name,
    pub table: Name,
    pub unique: bool,
    pub keys: Vec<IndexKey>,
    /// Its column names (`pg_attribute` of the index): the key column or the expression's name,
    /// then INCLUDE columns. PostgreSQL names copies of the index (partitions, `LIKE`) from them.
    pub key_names: Vec<Name>,
    pub predicate: Option<String>,
    /// The constraint this index backs, if any.
    pub constraint: Option<Name>,
    pub origin: Origin,
    /// A B-tree: what the rules that reason about searching an index from its leading keys
    /// (`function-on-indexed-column`) know. An EXCLUDE constraint's index is taken for none
    /// (GiST in practice: any of its keys can be searched, and a range's bounds never are).
    #[serde(default = "a_btree")]
    pub btree: bool,
    /// `NULLS NOT DISTINCT` (PostgreSQL 15): one NULL per key, so `IS NULL` finds at most one row.
    #[serde(default)]
    pub nulls_not_distinct: bool,
}

fn a_btree() -> bool {
    true
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

    /// Whether a key reads `column`, as a plain column or inside an expression.
    pub fn reads_column(&self, column: &str) -> bool {
        self.keys.iter().any(|k| match k {
            IndexKey::Column(c) => c == column,
            IndexKey::Expression(e) => mentions(e, column),
        }) || self.predicate.as_deref().is_some_and(|p| mentions(p, column))
    }
}

/// Whether normalized expression text mentions `word` as a whole identifier.
pub fn mentions(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !is_ident(c) && c != '\'');
        let after = text[at + word.len()..].chars().next().is_none_or(|c| !is_ident(c) && c != '(');
        before && after
    })
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    pub name: Name,
    pub materialized: bool,
    /// The columns its query compares, resolved when it was defined.
    pub uses: Vec<ColumnUse>,
    /// The relations its query reads: dropping one with CASCADE drops the view.
    pub depends_on: Vec<Name>,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequence {
    pub name: Name,
    /// The column whose drop drops it (`serial`, identity, `OWNED BY`).
    pub owned_by: Option<(Name, Name)>,
    pub origin: Origin,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    pub name: Name,
    pub volatility: Volatility,
    /// The table locks its body takes when it runs (see `Ddl::CreateFunction`).
    pub locks: Vec<(Name, Lock)>,
    pub origin: Origin,
}

/// How an index the history created went away.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDrop {
    /// What took it along ("table t", "column t.c", "constraint c on t"); `None`: a `DROP INDEX`.
    pub with: Option<String>,
    /// The statement that dropped it.
    pub at: Origin,
}

/// A trigger: dropping its function with CASCADE drops it, and locks its table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    pub table: Name,
    pub name: Name,
    pub function: Name,
    pub events: Vec<TriggerEvent>,
    /// `FOR EACH ROW`: fires once per row the statement touches (not at all for none).
    pub per_row: bool,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub tables: BTreeMap<Name, Table>,
    pub indexes: BTreeMap<Name, Index>,
    pub views: BTreeMap<Name, View>,
    pub sequences: BTreeMap<Name, Sequence>,
    pub functions: BTreeMap<Name, Function>,
    pub triggers: Vec<Trigger>,
    /// Extensions the history created: the functions they install have a known volatility.
    pub extensions: BTreeSet<Name>,
    /// Schemas the history created (`public` always exists).
    pub schemas: BTreeSet<Name>,
    /// Extended statistics objects and their table.
    pub statistics: BTreeMap<Name, Name>,
    /// Every name a table was given as a partition's or an inheritance child's parent (and the
    /// names such a parent was renamed to): a superset of the tables that have descendants, so
    /// that ALTER TABLE and CREATE INDEX scan every table for descendants only on those (a scan
    /// per statement made histories with one partitioned table quadratic).
    pub parents: BTreeSet<Name>,
    /// Indexes the history created and then dropped, with what took them along and where: a
    /// later `DROP INDEX` of one fails, and the finding says why rather than calling the index
    /// unknown.
    pub dropped_indexes: BTreeMap<Name, IndexDrop>,
    /// Every constraint name any table ever had, in any schema: a superset of the names taken,
    /// so that choosing a name for a new constraint — which must be unique in its schema — need
    /// not scan every table unless the name was ever used (a scan per generated name made long
    /// histories quadratic).
    pub constraint_names_seen: BTreeSet<String>,
}

/// System catalogs are never "existing tables" a migration could block: `pg_catalog.*`,
/// `information_schema.*`, and unqualified `pg_*` names the history never created (PostgreSQL
/// searches `pg_catalog` first).
pub fn is_system_catalog(name: &str) -> bool {
    match names::split(name) {
        (Some(schema), _) => schema == "pg_catalog" || schema == "information_schema" || schema.starts_with("pg_"),
        (None, rel) => rel.starts_with("pg_"),
    }
}

/// The tables migration tools keep their own bookkeeping in (golang-migrate and dbmate
/// `schema_migrations`, diesel `__diesel_schema_migrations`, Flyway `flyway_schema_history`,
/// sqlx `_sqlx_migrations`, goose `goose_db_version`, refinery `refinery_schema_history`, Prisma
/// `_prisma_migrations`, Liquibase `databasechangelog[lock]`, Drizzle and Atlas in their own
/// schemas): the tool creates them, so they are not unknown, and only the tool uses them, so
/// locking them blocks no application traffic.
pub fn is_tool_table(name: &str) -> bool {
    const TABLES: &[&str] = &[
        "schema_migrations",
        "__diesel_schema_migrations",
        "flyway_schema_history",
        "_sqlx_migrations",
        "goose_db_version",
        "refinery_schema_history",
        "_prisma_migrations",
        "databasechangelog",
        "databasechangeloglock",
        "drizzle.__drizzle_migrations",
        "atlas_schema_revisions.atlas_schema_revisions",
    ];
    TABLES.contains(&name)
}

impl Schema {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(name)
    }

    pub fn trigger(&self, table: &str, name: &str) -> Option<&Trigger> {
        self.triggers.iter().find(|t| t.table == table && t.name == name)
    }

    pub fn indexes_on<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a Index> + 'a {
        self.indexes.values().filter(move |i| i.table == table)
    }

    /// Where a relation that holds rows (table, partitioned table, materialized view) or a
    /// view was created.
    pub fn relation_origin(&self, name: &str) -> Option<&Origin> {
        self.tables.get(name).map(|t| &t.origin).or_else(|| self.views.get(name).map(|v| &v.origin))
    }

    /// Whether `name` is taken in `pg_class`: a table, view, index or sequence of that name
    /// exists (they share one namespace per schema).
    pub fn relation_exists(&self, name: &str) -> bool {
        self.tables.contains_key(name)
            || self.views.contains_key(name)
            || self.indexes.contains_key(name)
            || self.sequences.contains_key(name)
    }

    /// What kind of relation `name` is, for messages.
    pub fn relation_kind(&self, name: &str) -> Option<&'static str> {
        if let Some(t) = self.tables.get(name) {
            Some(t.kind.as_str())
        } else if self.views.contains_key(name) {
            Some("view")
        } else if self.indexes.contains_key(name) {
            Some("index")
        } else if self.sequences.contains_key(name) {
            Some("sequence")
        } else {
            None
        }
    }

    /// Whether a schema exists: `public`, one the history created, or one that holds objects
    /// the history created (a schema dump may create it implicitly).
    pub fn schema_exists(&self, schema: &str) -> bool {
        schema == "public"
            || self.schemas.contains(schema)
            || self.tables.keys().chain(self.views.keys()).any(|n| names::split(n).0 == Some(schema))
    }

    /// Whether any table in `schema` (the one `table` is in) has a constraint named `name`:
    /// PostgreSQL keeps generated constraint names unique per schema.
    pub fn constraint_name_taken(&self, table: &str, name: &str) -> bool {
        let in_schema_of_table = || {
            let schema = names::split(table).0;
            self.tables.values().filter(|t| names::split(&t.name).0 == schema).any(|t| t.constraint(name).is_some())
        };
        if !self.constraint_names_seen.contains(name) {
            // The tests replay thousands of statements: any place that names a constraint
            // without recording it shows up here.
            debug_assert!(!in_schema_of_table(), "constraint `{name}` exists but was not recorded as seen");
            return false;
        }
        in_schema_of_table()
    }

    /// Records a name a constraint now has (see `constraint_names_seen`).
    pub(crate) fn saw_constraint_name(&mut self, name: &str) {
        if !self.constraint_names_seen.contains(name) {
            self.constraint_names_seen.insert(name.to_string());
        }
    }

    /// The declared volatility of a function the history created.
    pub fn function_volatility(&self, name: &str) -> Option<Volatility> {
        self.functions.get(name).map(|f| f.volatility)
    }

    /// The extension the history created that installs `name` (qualified by the schema it was
    /// created in, or not), and the function's volatility there.
    pub fn extension_function(&self, name: &str) -> Option<(&str, Volatility)> {
        let bare = names::split(name).1;
        self.extensions.iter().find_map(|e| Some((e.as_str(), crate::sql::catalog::extension_volatility(e, bare)?)))
    }

    /// The partitions of a partitioned table.
    pub fn partitions_of<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a Table> + 'a {
        let candidates = self.parents.contains(table).then(|| self.tables.values());
        candidates.into_iter().flatten().filter(move |t| t.partition_of.as_deref() == Some(table))
    }

    /// Resolves an unqualified relation name through `search_path` (schemas in order): the first
    /// schema that holds a relation of that name, else the name in the first schema that exists
    /// (where PostgreSQL would create it). Qualified names are returned as they are.
    pub fn resolve(&self, name: &str, search_path: &[String]) -> Name {
        if names::split(name).0.is_some() || is_system_catalog(name) {
            return name.to_string();
        }
        let in_schema = |schema: &str| if schema == "public" { name.to_string() } else { format!("{schema}.{name}") };
        let candidates: Vec<&String> =
            search_path.iter().filter(|s| !s.starts_with('$') && !s.starts_with("pg_")).collect();
        candidates
            .iter()
            .map(|s| in_schema(s))
            .find(|n| self.relation_exists(n))
            .or_else(|| candidates.iter().find(|s| self.schema_exists(s)).map(|s| in_schema(s)))
            .unwrap_or_else(|| name.to_string())
    }
}

impl Catalog for Schema {
    fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|t| t.column(column).is_some())
    }

    fn column_type(&self, table: &str, column: &str) -> Option<&str> {
        self.tables.get(table)?.column(column).map(|c| c.data_type.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_catalogs_are_recognized() {
        assert!(is_system_catalog("pg_catalog.pg_class"));
        assert!(is_system_catalog("pg_enum"));
        assert!(is_system_catalog("information_schema.columns"));
        assert!(!is_system_catalog("app.users"));
        assert!(!is_system_catalog("users"));
    }

    #[test]
    fn mentions_whole_identifiers_only() {
        assert!(mentions("lower(email)", "email"));
        assert!(!mentions("lower(email_hash)", "email"));
        assert!(!mentions("lower(email)", "lower"));
        assert!(!mentions("status = 'email'", "email"));
    }
}

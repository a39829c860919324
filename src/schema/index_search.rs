//! Whether an index can be searched for what a statement's predicates compare: the question
//! `function-on-indexed-column` (is the wrapper what keeps the index out?) and
//! `drop-index-in-use` (does another index still serve the query?) both ask.
//!
//! A B-tree is searched from its leading keys: equalities on a prefix of them, then the next key
//! compared by equality or a range, bound the part of the index read; a key after one the query
//! leaves free is at best checked on every entry of a whole-index scan (PostgreSQL documentation,
//! 11.3 "Multicolumn Indexes"). A partial index serves only a query that implies its predicate
//! (11.8 "Partial Indexes").

use super::{Index, Schema};
use crate::sql::ddl::IndexKey;
use crate::sql::query::{canonical_expression, predicate_uses, ColumnUse, Comparison};
use sqlparser::ast;
use std::collections::BTreeMap;

/// How the keys before the one searched for must be constrained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// Compared at all: whether the query says anything that could narrow them (what
    /// `function-on-indexed-column` needs: the wrapper is blamed only when the keys before the
    /// column are not what leaves the index unsearchable).
    Compared,
    /// Compared by equality (`=`, `IN`, `= ANY`, `IS NULL`, a join equality): only then does the
    /// search narrow down to the key after them.
    Equal,
}

/// An index as a search sees it: a table's index in a schema, or one a later statement creates.
#[derive(Debug, Clone, Copy)]
pub struct IndexShape<'a> {
    pub table: &'a str,
    pub keys: &'a [IndexKey],
    pub predicate: Option<&'a str>,
    /// A UNIQUE index (or a PRIMARY KEY or UNIQUE constraint's): an equality on every key finds
    /// at most one row.
    pub unique: bool,
    /// `NULLS NOT DISTINCT`: `IS NULL` on a key is one place, not every row with a NULL.
    pub nulls_not_distinct: bool,
}

impl<'a> From<&'a Index> for IndexShape<'a> {
    fn from(index: &'a Index) -> Self {
        IndexShape {
            table: &index.table,
            keys: &index.keys,
            predicate: index.predicate.as_deref(),
            unique: index.unique,
            nulls_not_distinct: index.nulls_not_distinct,
        }
    }
}

/// Which of `indexes` finds at most one row of the statement's relation `relation` (a table
/// named in its FROM or JOIN, see [`ColumnUse::relation`]) of `table`: a unique index PostgreSQL
/// may use whose every key the statement compares bare, by equality with a value known before
/// the scan (a parameter, a literal), outside any OR. The planner reads that row through it and
/// checks every other predicate on the relation as a filter, whatever other index would serve
/// them; a join then runs from that row through the other side's index (synapse's
/// `access_tokens … WHERE token = ?`, lakekeeper's `tabular … WHERE warehouse_id = $1 AND
/// tabular_id = $2 AND typ = $4` under the primary key `(tabular_id)`; tests/query_precision.rs
/// reads the plans).
pub fn one_row_through<'i>(
    indexes: impl IntoIterator<Item = IndexShape<'i>>,
    uses: &[ColumnUse],
    table: &str,
    relation: usize,
    constrained: &Constrained,
) -> Option<usize> {
    // `IS NULL` pins a key only where NULLs are not distinct: a plain UNIQUE index holds any
    // number of rows with a NULL key (documentation, 11.6 "Unique Indexes").
    let compared_by_value = |column: &str, nulls_not_distinct: bool| {
        uses.iter().any(|u| {
            u.relation == relation
                && u.table == table
                && u.column == column
                && u.optional.is_none()
                && u.search() == Comparison::Equality
                && (!u.is_null || nulls_not_distinct)
        })
    };
    indexes.into_iter().position(|i| {
        i.unique
            && i.table == table
            && !i.keys.is_empty()
            && constrained.usable(i)
            && i.keys.iter().all(|k| k.column().is_some_and(|c| compared_by_value(c, i.nulls_not_distinct)))
    })
}

/// What one statement's predicates constrain, per (table, key): columns compared bare and
/// expressions compared (canonical, see [`canonical_expression`]), each with the strongest
/// comparison seen and whether an equality compares it with a value rather than another
/// table's column.
#[derive(Debug, Default)]
pub struct Constrained {
    columns: BTreeMap<(String, String), Strength>,
    expressions: BTreeMap<(String, String), Strength>,
    /// The statement's text, as [`comparable`] writes it, for partial index predicates.
    statement: String,
}

#[derive(Debug, Default, Clone, Copy)]
struct Strength {
    equal: bool,
    /// Compared by equality with a parameter, a literal or an expression: the planner can reach
    /// the table's rows through an index on it without another table driving the search.
    equal_to_value: bool,
}

impl Constrained {
    /// What `uses` (one statement's) constrain; `statement` is its text (`""` when unknown:
    /// then no partial index serves it).
    pub fn of(uses: &[ColumnUse], statement: &str, catalog: &Schema) -> Constrained {
        let mut constrained = Constrained { statement: comparable(statement), ..Constrained::default() };
        // A comparison within one row (`a = b` of one table) constrains no search.
        for u in uses.iter().filter(|u| !u.against_own_row) {
            let strength = match &u.wrapped {
                None => constrained.columns.entry((u.table.clone(), u.column.clone())).or_default(),
                Some(w) => constrained
                    .expressions
                    .entry((u.table.clone(), canonical_expression(&w.expression, &u.table, catalog)))
                    .or_default(),
            };
            if u.comparison == Comparison::Equality {
                strength.equal = true;
                strength.equal_to_value |= !u.against_columns;
            }
        }
        constrained
    }

    /// What a parsed statement constrains, its columns resolved in `catalog`.
    pub fn of_statement(statement: &ast::Statement, text: &str, catalog: &Schema) -> (Vec<ColumnUse>, Constrained) {
        let uses = predicate_uses(statement, catalog, 0);
        let constrained = Constrained::of(&uses, text, catalog);
        (uses, constrained)
    }

    fn strength(&self, table: &str, key: &IndexKey, catalog: &Schema) -> Option<Strength> {
        match key {
            IndexKey::Column(c) => self.columns.get(&(table.to_string(), c.clone())).copied(),
            IndexKey::Expression(e) => {
                self.expressions.get(&(table.to_string(), canonical_expression(e, table, catalog))).copied()
            }
        }
    }

    /// Whether the statement constrains `key` of `table` as `prefix` asks.
    pub fn key(&self, table: &str, key: &IndexKey, catalog: &Schema, prefix: Prefix) -> bool {
        self.strength(table, key, catalog).is_some_and(|s| prefix == Prefix::Compared || s.equal)
    }

    /// Whether the statement compares `key` of `table` by equality with a value (not a join).
    pub fn equal_to_value(&self, table: &str, key: &IndexKey, catalog: &Schema) -> bool {
        self.strength(table, key, catalog).is_some_and(|s| s.equal_to_value)
    }

    /// Whether `index` can be searched for its key at `at`: the statement constrains every key
    /// before it as `prefix` asks.
    pub fn reaches(&self, index: IndexShape, at: usize, catalog: &Schema, prefix: Prefix) -> bool {
        index.keys[..at].iter().all(|k| self.key(index.table, k, catalog, prefix))
    }

    /// Whether `index` is one PostgreSQL may use for the statement as far as its predicate goes
    /// (see [`usable_partial`]).
    pub fn usable(&self, index: IndexShape) -> bool {
        usable_partial(index.predicate, &self.statement)
    }

    /// Where `index` can be searched for `key` (of `index.table`) for this statement: the
    /// position of the key, when the keys before it are compared by equality and its predicate,
    /// if partial, is implied.
    pub fn searchable_at(&self, index: IndexShape, key: &IndexKey, catalog: &Schema) -> Option<usize> {
        if !self.usable(index) {
            return None;
        }
        let at = index.keys.iter().position(|k| same_key(k, key, index.table, catalog))?;
        self.reaches(index, at, catalog, Prefix::Equal).then_some(at)
    }
}

/// Whether two index keys of `table` are the same: the same column, or the same expression
/// after PostgreSQL's normalization of casts.
pub fn same_key(a: &IndexKey, b: &IndexKey, table: &str, catalog: &Schema) -> bool {
    match (a, b) {
        (IndexKey::Column(a), IndexKey::Column(b)) => a == b,
        (IndexKey::Expression(a), IndexKey::Expression(b)) => {
            a == b || canonical_expression(a, table, catalog) == canonical_expression(b, table, catalog)
        }
        _ => false,
    }
}

/// Whether an index with `predicate` can serve the statement (`statement` as [`comparable`]
/// writes it) as far as its predicate goes: a partial index is one PostgreSQL uses only when
/// the query implies its `WHERE` (documentation, 11.8 "Partial Indexes"). Implied is read here
/// as written in the query (`deleted_at IS NULL` in both), so a partial index the query says
/// nothing about serves nothing (hatchet's `v1_task_event_event_key_unique_idx … WHERE
/// event_key IS NOT NULL`).
pub fn usable_partial(predicate: Option<&str>, statement: &str) -> bool {
    match predicate {
        None => true,
        Some(predicate) => {
            let predicate = comparable(predicate);
            !predicate.is_empty() && statement.contains(&predicate)
        }
    }
}

/// Text compared for [`usable_partial`]: lowercase, without parentheses or double quotes, one
/// space between words.
pub fn comparable(text: &str) -> String {
    let kept: String = text.chars().filter(|c| !matches!(c, '(' | ')' | '"')).collect();
    kept.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

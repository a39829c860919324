//! What a rule sees when it checks a statement.

use super::RuleMeta;
use crate::finding::Finding;
use crate::policy::Policies;
use crate::schema::migrations::Migration;
use crate::schema::Schema;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, IndexKey, Name};
use crate::sql::parse::{ParsedFile, Statement};
use crate::sql::query::Position;
use std::collections::BTreeSet;

/// A parsed file and the path findings name.
#[derive(Debug)]
pub struct SourceFile {
    /// Relative to the repository root (or the working directory), with `/`.
    pub display: String,
    pub parsed: ParsedFile,
}

impl SourceFile {
    pub fn parse(display: impl Into<String>, text: String) -> SourceFile {
        SourceFile {
            display: display.into(),
            parsed: crate::sql::parse::parse_file(text),
        }
    }
}

/// Project-wide facts every rule may use.
#[derive(Debug)]
pub struct Facts<'a> {
    pub postgres_version: u32,
    pub policies: &'a Policies,
    /// Every query file, parsed: the queries the application runs.
    pub queries: &'a [SourceFile],
}

/// Where a migration file stands as its statements are checked one by one.
#[derive(Debug, Clone, Default)]
pub struct MigrationState {
    /// Position in replay order.
    pub index: usize,
    pub migration: Option<Migration>,
    /// Tables created earlier in this file: lock and rewrite rules do not apply to them.
    pub created_tables: BTreeSet<Name>,
    /// The migration runner wraps the whole file in a transaction.
    pub runner_transaction: bool,
    /// Inside an explicit `BEGIN … COMMIT`.
    pub explicit_transaction: bool,
    pub lock_timeout_set: bool,
    pub statement_timeout_set: bool,
}

impl MigrationState {
    pub fn in_transaction(&self) -> bool {
        self.runner_transaction || self.explicit_transaction
    }

    /// Whether `table` existed before this migration (so locking it blocks production traffic).
    pub fn is_existing(&self, table: &str, schema: &Schema) -> bool {
        !self.created_tables.contains(table)
            && schema
                .table(table)
                .is_some_and(|t| t.origin.migration != Some(self.index))
    }

    /// Updates the state after `statement` ran.
    pub fn observe(&mut self, statement: &Statement) {
        match &statement.ddl {
            Ddl::CreateTable { name, .. } => {
                self.created_tables.insert(name.clone());
            }
            Ddl::AlterTable { table, actions, .. } => {
                for action in actions {
                    if let AlterAction::RenameTable { to } = action {
                        if self.created_tables.remove(table) {
                            self.created_tables.insert(to.clone());
                        }
                    }
                }
            }
            Ddl::Begin => self.explicit_transaction = true,
            Ddl::Commit | Ddl::Rollback => {
                self.explicit_transaction = false;
                // SET LOCAL ends with the transaction; plain SET lasts the session.
            }
            Ddl::Set { name, .. } if name == "lock_timeout" => self.lock_timeout_set = true,
            Ddl::Set { name, .. } if name == "statement_timeout" => self.statement_timeout_set = true,
            _ => {}
        }
    }
}

/// Whether the statement comes from a migration or from a query file.
#[derive(Debug, Clone, Copy)]
pub enum Role<'a> {
    Migration(&'a MigrationState),
    Query,
}

pub struct Context<'a> {
    pub file: &'a SourceFile,
    pub statement: &'a Statement,
    /// The schema just before this statement.
    pub schema: &'a Schema,
    pub role: Role<'a>,
    pub facts: &'a Facts<'a>,
}

/// A uniqueness a statement adds: a UNIQUE or PRIMARY KEY constraint, or a unique index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueAddition {
    pub table: Name,
    pub keys: Vec<IndexKey>,
    /// "UNIQUE constraint", "PRIMARY KEY", "unique index".
    pub what: &'static str,
    pub name: Option<Name>,
    /// Added by the CREATE TABLE of its own table.
    pub with_new_table: bool,
}

impl UniqueAddition {
    pub fn columns(&self) -> Vec<&str> {
        self.keys.iter().filter_map(IndexKey::column).collect()
    }

    pub fn describe_keys(&self) -> String {
        self.keys.iter().map(IndexKey::display).collect::<Vec<_>>().join(", ")
    }
}

impl<'a> Context<'a> {
    pub fn migration(&self) -> Option<&'a MigrationState> {
        match self.role {
            Role::Migration(state) => Some(state),
            Role::Query => None,
        }
    }

    pub fn statement_text(&self) -> &'a str {
        self.file.parsed.statement_text(self.statement)
    }

    /// A finding on the whole statement, with its text as the excerpt.
    pub fn finding(&self, meta: &RuleMeta, message: impl Into<String>) -> Finding {
        let span = &self.statement.span;
        Finding::new(meta.id, meta.severity, self.file.display.clone(), message)
            .at(span.line, span.column, span.end_line, span.end_column)
            .snippet(span.line, self.snippet_text())
            .help(meta.fix.trim())
    }

    /// A finding at a position inside the statement.
    pub fn finding_at(&self, meta: &RuleMeta, position: Position, message: impl Into<String>) -> Finding {
        let mut finding = self.finding(meta, message);
        finding = finding.at(position.line, position.column, position.end_line, position.end_column);
        finding
    }

    /// The statement's lines in full (from the start of its first line), for excerpts.
    fn snippet_text(&self) -> String {
        let text = &self.file.parsed.text;
        let span = &self.statement.span;
        let start = text[..span.start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let end = text[span.end..].find('\n').map(|i| span.end + i).unwrap_or(text.len());
        text[start..end].to_string()
    }

    /// The uniqueness this statement adds, if any.
    pub fn unique_additions(&self) -> Vec<UniqueAddition> {
        let columns = |cols: &[Name]| cols.iter().cloned().map(IndexKey::Column).collect::<Vec<_>>();
        let from_constraint =
            |table: &Name, c: &crate::sql::ddl::Constraint, with_new_table: bool| -> Option<UniqueAddition> {
                let (keys, what) = match &c.kind {
                    ConstraintKind::PrimaryKey { columns: cols } => (columns(cols), "PRIMARY KEY"),
                    ConstraintKind::Unique { columns: cols, .. } => (columns(cols), "UNIQUE constraint"),
                    ConstraintKind::UsingIndex { index, primary_key } => (
                        self.schema
                            .indexes
                            .get(index)
                            .map(|i| i.keys.clone())
                            .unwrap_or_default(),
                        if *primary_key {
                            "PRIMARY KEY"
                        } else {
                            "UNIQUE constraint"
                        },
                    ),
                    _ => return None,
                };
                Some(UniqueAddition {
                    table: table.clone(),
                    keys,
                    what,
                    name: c.name.clone(),
                    with_new_table,
                })
            };
        match &self.statement.ddl {
            Ddl::CreateIndex(index) if index.unique => vec![UniqueAddition {
                table: index.table.clone(),
                keys: index.keys.clone(),
                what: "unique index",
                name: index.name.clone(),
                with_new_table: false,
            }],
            Ddl::AlterTable { table, actions, .. } => actions
                .iter()
                .flat_map(|a| match a {
                    AlterAction::AddConstraint(c) => from_constraint(table, c, false).into_iter().collect::<Vec<_>>(),
                    AlterAction::AddColumn { column, .. } => column
                        .constraints
                        .iter()
                        .filter_map(|c| from_constraint(table, c, false))
                        .collect(),
                    _ => Vec::new(),
                })
                .collect(),
            Ddl::CreateTable {
                name,
                columns: cols,
                constraints,
                ..
            } => cols
                .iter()
                .flat_map(|c| c.constraints.iter())
                .chain(constraints.iter())
                .filter_map(|c| from_constraint(name, c, true))
                .collect(),
            _ => Vec::new(),
        }
    }
}

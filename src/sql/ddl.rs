//! The small typed view of a statement that the schema model and the rules work with.
//! Built from sqlparser's AST when the statement parses, or by the token-level recognizer
//! when it does not; either way rules see the same values.

use serde::{Deserialize, Serialize};

/// A normalized relation or object name: unquoted identifiers lowercased, `public.` dropped.
pub type Name = String;

/// One key of an index or constraint: a plain column, or an expression in normalized text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IndexKey {
    Column(Name),
    Expression(String),
}

impl IndexKey {
    pub fn column(&self) -> Option<&str> {
        match self {
            IndexKey::Column(c) => Some(c),
            IndexKey::Expression(_) => None,
        }
    }

    pub fn display(&self) -> String {
        match self {
            IndexKey::Column(c) => c.clone(),
            IndexKey::Expression(e) => format!("({e})"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateIndex {
    pub name: Option<Name>,
    pub table: Name,
    pub unique: bool,
    pub concurrently: bool,
    pub if_not_exists: bool,
    pub keys: Vec<IndexKey>,
    /// Normalized `WHERE` predicate of a partial index.
    pub predicate: Option<String>,
    pub nulls_not_distinct: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConstraintKind {
    PrimaryKey {
        columns: Vec<Name>,
    },
    Unique {
        columns: Vec<Name>,
        nulls_not_distinct: bool,
    },
    ForeignKey {
        columns: Vec<Name>,
        references: Name,
        referenced_columns: Vec<Name>,
    },
    Check {
        expression: String,
    },
    /// `ADD CONSTRAINT n UNIQUE USING INDEX idx` / `PRIMARY KEY USING INDEX idx`.
    UsingIndex {
        index: Name,
        primary_key: bool,
    },
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub name: Option<Name>,
    pub kind: ConstraintKind,
    pub not_valid: bool,
}

impl Constraint {
    /// Whether PostgreSQL builds a unique index for it.
    pub fn is_unique(&self) -> bool {
        matches!(
            self.kind,
            ConstraintKind::PrimaryKey { .. } | ConstraintKind::Unique { .. } | ConstraintKind::UsingIndex { .. }
        )
    }

    pub fn unique_columns(&self) -> Option<&[Name]> {
        match &self.kind {
            ConstraintKind::PrimaryKey { columns } | ConstraintKind::Unique { columns, .. } => Some(columns),
            _ => None,
        }
    }
}

/// A column default, with what the rules need to know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Default {
    pub expression: String,
    /// Calls a volatile function (`random()`, `clock_timestamp()`, `gen_random_uuid()`, `nextval()`…).
    pub volatile: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: Name,
    /// Normalized type, lowercased (`bigint`, `character varying(20)`, `timestamp`).
    pub data_type: String,
    pub not_null: bool,
    pub default: Option<Default>,
    /// `GENERATED ALWAYS AS (…) STORED`.
    pub generated_stored: bool,
    /// `GENERATED … AS IDENTITY`, or a `serial` type.
    pub identity: bool,
    /// Column-level PRIMARY KEY / UNIQUE / REFERENCES / CHECK.
    pub constraints: Vec<Constraint>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlterAction {
    AddColumn {
        column: Column,
        if_not_exists: bool,
    },
    DropColumn {
        name: Name,
        if_exists: bool,
    },
    RenameColumn {
        from: Name,
        to: Name,
    },
    RenameTable {
        to: Name,
    },
    SetType {
        column: Name,
        data_type: String,
        using: Option<String>,
    },
    SetNotNull {
        column: Name,
    },
    DropNotNull {
        column: Name,
    },
    SetDefault {
        column: Name,
        default: Default,
    },
    DropDefault {
        column: Name,
    },
    AddConstraint(Constraint),
    DropConstraint {
        name: Name,
        if_exists: bool,
    },
    ValidateConstraint {
        name: Name,
    },
    RenameConstraint {
        from: Name,
        to: Name,
    },
    /// Anything else (`SET LOGGED`, `OWNER TO`, `ALTER CONSTRAINT … DEFERRABLE`…), by its text.
    Other(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    Index,
    View,
    MaterializedView,
    Sequence,
    Function,
    Schema,
    Other,
}

/// What a statement does, as far as Sluice cares.
#[derive(Clone, Debug, PartialEq)]
pub enum Ddl {
    CreateTable {
        name: Name,
        if_not_exists: bool,
        columns: Vec<Column>,
        constraints: Vec<Constraint>,
        from_query: bool,
    },
    AlterTable {
        table: Name,
        if_exists: bool,
        actions: Vec<AlterAction>,
    },
    CreateIndex(CreateIndex),
    Drop {
        kind: ObjectKind,
        names: Vec<Name>,
        if_exists: bool,
        concurrently: bool,
        cascade: bool,
    },
    Rename {
        kind: ObjectKind,
        from: Name,
        to: Name,
    },
    /// A view or materialized view; its query is checked like a query file.
    CreateView {
        name: Name,
        materialized: bool,
    },
    /// A function; `body` holds SQL we can check when the language is SQL.
    CreateFunction {
        name: Name,
        sql_body: Option<String>,
    },
    Set {
        name: String,
        value: String,
        local: bool,
    },
    Reset {
        name: String,
    },
    Begin,
    Commit,
    Rollback,
    Update {
        table: Name,
        has_where: bool,
    },
    Delete {
        table: Name,
        has_where: bool,
    },
    Insert {
        table: Name,
    },
    Reindex {
        concurrently: bool,
        target: String,
    },
    Truncate {
        tables: Vec<Name>,
    },
    /// `CREATE [OR REPLACE] TRIGGER … ON table` or `DROP TRIGGER … ON table`: a lock on the table.
    Trigger {
        table: Name,
        drop: bool,
    },
    /// A plain query (`SELECT`, `WITH`, `VALUES`).
    Query,
    /// Something else, by its leading keywords (`CREATE EXTENSION`, `COMMENT ON`, `DO`…).
    Other(String),
}

impl Ddl {
    /// Whether this view says everything Sluice needs about the statement, so its syntax tree
    /// need not be kept (the trees of DDL are most of a migration history's memory). Statements
    /// that contain queries — views, functions, DML, `CREATE TABLE … AS` — keep theirs.
    pub fn is_complete(&self) -> bool {
        match self {
            Ddl::CreateTable { from_query, .. } => !from_query,
            Ddl::AlterTable { .. }
            | Ddl::CreateIndex(_)
            | Ddl::Drop { .. }
            | Ddl::Rename { .. }
            | Ddl::Set { .. }
            | Ddl::Reset { .. }
            | Ddl::Begin
            | Ddl::Commit
            | Ddl::Rollback
            | Ddl::Truncate { .. }
            | Ddl::Trigger { .. } => true,
            _ => false,
        }
    }
}

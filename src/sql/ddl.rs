//! The small typed view of a statement that the schema model and the rules work with.
//! Built from sqlparser's AST when the statement parses, or by the token-level recognizer
//! when it does not; either way rules see the same values.

use serde::{Deserialize, Serialize};

/// A normalized relation or object name: unquoted identifiers lowercased, `public.` dropped.
pub type Name = String;

/// The table-level lock modes migrations care about, weakest first (PostgreSQL's "Explicit
/// Locking" chapter). ACCESS SHARE, ROW SHARE and ROW EXCLUSIVE never block the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Lock {
    /// Concurrent index builds, VALIDATE CONSTRAINT, CREATE STATISTICS: reads and writes go on.
    ShareUpdateExclusive,
    /// CREATE INDEX, REINDEX (on the table): blocks writes.
    Share,
    /// Foreign keys (both tables), triggers: blocks writes.
    ShareRowExclusive,
    /// REFRESH MATERIALIZED VIEW CONCURRENTLY: blocks writes (and everything but plain reads).
    Exclusive,
    /// Most of ALTER TABLE, DROP, TRUNCATE, REFRESH MATERIALIZED VIEW: blocks reads and writes.
    AccessExclusive,
}

impl Lock {
    pub fn as_str(self) -> &'static str {
        match self {
            Lock::ShareUpdateExclusive => "SHARE UPDATE EXCLUSIVE",
            Lock::Share => "SHARE",
            Lock::ShareRowExclusive => "SHARE ROW EXCLUSIVE",
            Lock::Exclusive => "EXCLUSIVE",
            Lock::AccessExclusive => "ACCESS EXCLUSIVE",
        }
    }

    /// Blocks the application's writes (or reads too) while held or queued.
    pub fn blocks_writes(self) -> bool {
        self >= Lock::Share
    }

    /// The mode named in `LOCK TABLE … IN <mode> MODE`; `None` for the modes that never block
    /// the application (ACCESS SHARE, ROW SHARE, ROW EXCLUSIVE).
    pub fn from_mode(mode: &str) -> Option<Lock> {
        match mode.trim().to_ascii_uppercase().as_str() {
            "SHARE UPDATE EXCLUSIVE" => Some(Lock::ShareUpdateExclusive),
            "SHARE" => Some(Lock::Share),
            "SHARE ROW EXCLUSIVE" => Some(Lock::ShareRowExclusive),
            "EXCLUSIVE" => Some(Lock::Exclusive),
            "ACCESS EXCLUSIVE" => Some(Lock::AccessExclusive),
            _ => None,
        }
    }
}

/// The lock an `ALTER TABLE` sub-command kept as text ([`AlterAction::Other`]) takes, per
/// PostgreSQL 15's `AlterTableGetLockLevel` (checked against `pg_locks` on a real server);
/// `None` for a sub-command Sluice does not know.
pub fn other_action_lock(text: &str) -> Option<Lock> {
    let words: Vec<String> = text.split_whitespace().map(|w| w.to_ascii_uppercase()).collect();
    let mut rest: &[String] = &words;
    // `ALTER [COLUMN] name …` sub-commands: look past the column name.
    if rest.first().is_some_and(|w| w == "ALTER") {
        rest = &rest[1..];
        if rest.first().is_some_and(|w| w == "COLUMN") {
            rest = &rest[1..];
        }
        rest = rest.get(1..).unwrap_or(&[]);
        let starts = |p: &[&str]| rest.len() >= p.len() && p.iter().zip(rest).all(|(a, b)| b.starts_with(a));
        return if starts(&["SET", "STATISTICS"]) || starts(&["SET", "("]) || starts(&["RESET", "("]) {
            Some(Lock::ShareUpdateExclusive)
        } else if starts(&["SET", "STORAGE"])
            || starts(&["SET", "COMPRESSION"])
            || starts(&["DROP", "IDENTITY"])
            || starts(&["SET", "GENERATED"])
            || starts(&["RESTART"])
            || starts(&["SET", "INCREMENT"])
            || starts(&["SET", "START"])
            || starts(&["DROP", "EXPRESSION"])
            || starts(&["OPTIONS"])
        {
            Some(Lock::AccessExclusive)
        } else {
            None
        };
    }
    let starts = |p: &[&str]| rest.len() >= p.len() && p.iter().zip(rest).all(|(a, b)| b.starts_with(a));
    if starts(&["SET", "("]) || starts(&["RESET", "("]) || starts(&["CLUSTER", "ON"]) || starts(&["SET", "WITHOUT"]) {
        Some(Lock::ShareUpdateExclusive)
    } else if starts(&["ENABLE", "TRIGGER"])
        || starts(&["DISABLE", "TRIGGER"])
        || starts(&["ENABLE", "ALWAYS", "TRIGGER"])
        || starts(&["ENABLE", "REPLICA", "TRIGGER"])
    {
        Some(Lock::ShareRowExclusive)
    } else if starts(&["OWNER", "TO"])
        || starts(&["SET", "SCHEMA"])
        || starts(&["SET", "TABLESPACE"])
        || starts(&["SET", "LOGGED"])
        || starts(&["SET", "UNLOGGED"])
        || starts(&["SET", "ACCESS", "METHOD"])
        || starts(&["REPLICA", "IDENTITY"])
        || starts(&["ENABLE", "ROW"])
        || starts(&["DISABLE", "ROW"])
        || starts(&["FORCE", "ROW"])
        || starts(&["NO", "FORCE"])
        || starts(&["ENABLE", "RULE"])
        || starts(&["DISABLE", "RULE"])
        || starts(&["ENABLE", "ALWAYS", "RULE"])
        || starts(&["ENABLE", "REPLICA", "RULE"])
        || starts(&["OF"])
        || starts(&["NOT", "OF"])
        || starts(&["OPTIONS"])
    {
        Some(Lock::AccessExclusive)
    } else {
        None
    }
}

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
    /// `ON ONLY table`: on a partitioned table, the index of the parent alone (invalid until
    /// each partition's index is attached), built on no partition.
    pub only: bool,
    pub keys: Vec<IndexKey>,
    /// The names PostgreSQL derives from each key and INCLUDE column when it names an unnamed
    /// index (`ChooseIndexColumnNames`): the column, an expression's function name, else `expr`.
    pub key_names: Vec<Name>,
    /// Normalized `WHERE` predicate of a partial index.
    pub predicate: Option<String>,
    pub nulls_not_distinct: bool,
    /// Built with the B-tree access method (no `USING`, or `USING btree`).
    pub btree: bool,
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
    /// `EXCLUDE USING gist (…)`: backed by an index, like UNIQUE.
    Exclusion,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub name: Option<Name>,
    pub kind: ConstraintKind,
    pub not_valid: bool,
    /// What PostgreSQL puts between the table name and the label when it names the constraint
    /// itself: the key (and INCLUDE) columns of PRIMARY KEY / UNIQUE / EXCLUDE, the referencing
    /// columns of a foreign key, the one column a CHECK reads (none when it reads several).
    pub naming: Vec<Name>,
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
    /// The functions it calls, normalized (`random`, `audit.next_code`): whether one is volatile
    /// depends on the schema (user functions) and the built-in catalogue.
    pub functions: Vec<Name>,
    /// Calls a volatile built-in or well-known extension function (`random()`, `nextval()`…).
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
    /// Declared `serial`/`bigserial`/`smallserial`: `data_type` holds the real type
    /// (`integer`, `bigint`, `smallint`) and a sequence default fills it.
    pub serial: bool,
    /// Column-level PRIMARY KEY / UNIQUE / REFERENCES / CHECK.
    pub constraints: Vec<Constraint>,
    /// `COLLATE name`; `None`: the type's default collation.
    pub collation: Option<Name>,
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
        /// `CASCADE`: what depends on the column goes too (other tables' foreign keys to it).
        cascade: bool,
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
        /// A `USING` expression other than the column through casts (normalized).
        using: Option<String>,
        /// For `USING col::a::b::new_type`, the types the value is cast through on the way
        /// (`a`, `b`): the change is binary-coercible only if each step is.
        through: Vec<String>,
        /// `COLLATE name`; `None`: the new type's default collation.
        collation: Option<Name>,
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
        /// `CASCADE`: other tables' foreign keys to a dropped unique key go too.
        cascade: bool,
    },
    ValidateConstraint {
        name: Name,
    },
    RenameConstraint {
        from: Name,
        to: Name,
    },
    /// `ALTER CONSTRAINT c [NOT] DEFERRABLE [INITIALLY …]`.
    AlterConstraint {
        name: Name,
    },
    /// `ALTER COLUMN c ADD GENERATED … AS IDENTITY`: a sequence fills new rows; no rewrite.
    AddIdentity {
        column: Name,
    },
    /// `ALTER COLUMN c DROP IDENTITY`.
    DropIdentity {
        column: Name,
    },
    /// `ATTACH PARTITION p FOR VALUES …`.
    AttachPartition {
        partition: Name,
    },
    /// `DETACH PARTITION p [CONCURRENTLY | FINALIZE]`.
    DetachPartition {
        partition: Name,
        concurrently: bool,
    },
    /// `INHERIT parent` / `NO INHERIT parent`.
    Inherit {
        parent: Name,
        inherit: bool,
    },
    /// Anything else (`SET LOGGED`, `OWNER TO`, `SET (fillfactor = …)`…), by its text.
    Other(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    Index,
    View,
    MaterializedView,
    Sequence,
    Function,
    Schema,
    Statistics,
    Type,
    Extension,
    Other,
}

impl ObjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Table => "table",
            ObjectKind::Index => "index",
            ObjectKind::View => "view",
            ObjectKind::MaterializedView => "materialized view",
            ObjectKind::Sequence => "sequence",
            ObjectKind::Function => "function",
            ObjectKind::Schema => "schema",
            ObjectKind::Statistics => "statistics object",
            ObjectKind::Type => "type",
            ObjectKind::Extension => "extension",
            ObjectKind::Other => "object",
        }
    }
}

/// How a table relates to others when it is created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableLineage {
    /// `PARTITION OF parent`.
    pub partition_of: Option<Name>,
    /// `INHERITS (parent, …)`.
    pub inherits: Vec<Name>,
    /// `PARTITION BY …`: a partitioned table, which holds no rows itself.
    pub partitioned: bool,
    /// `(LIKE source …)`: the columns are copied from it.
    pub like: Option<Name>,
    /// `INCLUDING INDEXES` (or `ALL`): its indexes and PRIMARY KEY / UNIQUE / EXCLUDE constraints too.
    pub like_indexes: bool,
    /// `INCLUDING CONSTRAINTS` (or `ALL`): its CHECK constraints too.
    pub like_constraints: bool,
}

/// What an `ALTER INDEX` other than a rename does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexAction {
    /// `ATTACH PARTITION child_index`: catalog only.
    AttachPartition,
    /// `SET TABLESPACE`: copies the index under ACCESS EXCLUSIVE.
    SetTablespace,
    /// `SET (…)`, `RESET (…)`, `ALTER COLUMN n SET STATISTICS`: SHARE UPDATE EXCLUSIVE.
    Options,
}

/// What `REINDEX` rebuilds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReindexKind {
    Index,
    Table,
    Schema,
    Database,
    System,
}

impl ReindexKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReindexKind::Index => "INDEX",
            ReindexKind::Table => "TABLE",
            ReindexKind::Schema => "SCHEMA",
            ReindexKind::Database => "DATABASE",
            ReindexKind::System => "SYSTEM",
        }
    }
}

/// A function's declared volatility (`VOLATILE` when none is declared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Volatility {
    Immutable,
    Stable,
    Volatile,
}

impl Volatility {
    pub fn as_str(self) -> &'static str {
        match self {
            Volatility::Immutable => "IMMUTABLE",
            Volatility::Stable => "STABLE",
            Volatility::Volatile => "VOLATILE",
        }
    }
}

/// What fires a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerEvent {
    Insert,
    Update,
    Delete,
    Truncate,
}

/// What a trigger statement does to its trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TriggerAction {
    /// Created (or replaced), calling `function` on `events`, once per row or per statement.
    Create {
        function: Name,
        events: Vec<TriggerEvent>,
        per_row: bool,
    },
    Drop {
        if_exists: bool,
    },
    Rename {
        to: Name,
    },
}

/// What a `COMMENT ON` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommentTarget {
    /// A table, view, materialized view, index, sequence…: locks it (SHARE UPDATE EXCLUSIVE).
    Relation { kind: ObjectKind, name: Name },
    /// `COMMENT ON COLUMN t.c`: locks the table (SHARE UPDATE EXCLUSIVE).
    Column { table: Name, column: Name },
    /// `COMMENT ON CONSTRAINT c ON t`: ACCESS SHARE on the table only.
    Constraint { table: Name, name: Name },
    /// Functions, types, schemas, extensions…: no table lock.
    Other { kind: String, name: Name },
}

/// What a statement does, as far as Sluice cares.
#[derive(Clone, Debug, PartialEq)]
pub enum Ddl {
    CreateTable {
        name: Name,
        if_not_exists: bool,
        columns: Vec<Column>,
        constraints: Vec<Constraint>,
        /// `CREATE TABLE … AS`, `SELECT … INTO`: the columns come from the query.
        from_query: bool,
        lineage: Box<TableLineage>,
    },
    AlterTable {
        table: Name,
        if_exists: bool,
        actions: Vec<AlterAction>,
    },
    CreateIndex(Box<CreateIndex>),
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
        /// `ALTER INDEX IF EXISTS …`: nothing happens when it is not there.
        if_exists: bool,
    },
    AlterIndex {
        name: Name,
        action: IndexAction,
    },
    /// A view or materialized view; its query is checked like a query file.
    CreateView {
        name: Name,
        materialized: bool,
        or_replace: bool,
        if_not_exists: bool,
        /// Column names given after the view name, if any.
        columns: Vec<Name>,
    },
    /// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name`.
    RefreshMaterializedView {
        name: Name,
        concurrently: bool,
    },
    /// A function or procedure; `body` holds SQL we can check when the language is SQL.
    CreateFunction {
        name: Name,
        sql_body: Option<String>,
        volatility: Volatility,
        /// The table locks its body takes when it runs (`REFRESH MATERIALIZED VIEW`, `LOCK TABLE`,
        /// `TRUNCATE`): a trigger calling it takes them in the statement that fires it.
        locks: Vec<(Name, Lock)>,
    },
    CreateSequence {
        name: Name,
        if_not_exists: bool,
    },
    /// `ALTER SEQUENCE … RESTART / AS / OWNED BY / MAXVALUE / …`: locks only the sequence.
    AlterSequence {
        name: Name,
        if_exists: bool,
        /// `OWNED BY table.column` (`None` inside for `OWNED BY NONE`).
        owned_by: Option<Option<Box<(Name, Name)>>>,
    },
    CreateSchema {
        name: Name,
        if_not_exists: bool,
    },
    /// `CREATE EXTENSION [IF NOT EXISTS] name`: the functions it installs become known.
    CreateExtension {
        name: Name,
        if_not_exists: bool,
    },
    /// `CREATE STATISTICS name ON … FROM table`: SHARE UPDATE EXCLUSIVE on the table.
    CreateStatistics {
        name: Option<Name>,
        table: Name,
        if_not_exists: bool,
    },
    Comment(CommentTarget),
    /// `DO $$ … $$`: the statements of its body are checked one by one (see `Statement::block`).
    Do,
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
        kind: ReindexKind,
        /// The index, table, schema or database.
        name: Name,
        concurrently: bool,
    },
    Truncate {
        tables: Vec<Name>,
        /// `CASCADE`: the tables whose foreign keys reference them are truncated too.
        cascade: bool,
    },
    /// `ANALYZE [VERBOSE] [table [(columns)], …]` (every table when none is named): SHARE UPDATE
    /// EXCLUSIVE on each, which lets reads and writes through.
    Analyze {
        tables: Vec<Name>,
    },
    /// `LOCK TABLE … IN <mode> MODE` (ACCESS EXCLUSIVE when no mode is given).
    LockTable {
        tables: Vec<Name>,
        /// The mode as PostgreSQL spells it: `ACCESS EXCLUSIVE`, `SHARE ROW EXCLUSIVE`…
        mode: String,
    },
    /// `CREATE [OR REPLACE] TRIGGER name … ON table`, `DROP TRIGGER [IF EXISTS] name ON table`,
    /// `ALTER TRIGGER name ON table RENAME TO new`: a lock on the table.
    Trigger {
        table: Name,
        name: Name,
        action: TriggerAction,
    },
    /// A plain query (`SELECT`, `WITH`, `VALUES`).
    Query,
    /// Something else, by its leading keywords (`CREATE EXTENSION`, `COMMENT ON`, `DO`…).
    Other(String),
    /// Not kept: the lint engine let go of the typed view of a statement that is not being
    /// checked (see `Statement::release`). Rules never see it: the engine parses a statement
    /// again before checking it, and whole-file rules read only what [`Ddl::read_by_whole_file`]
    /// keeps.
    NotKept,
}

impl Constraint {
    fn map_relation_names(&mut self, f: &mut dyn FnMut(&mut Name)) {
        if let ConstraintKind::ForeignKey { references, .. } = &mut self.kind {
            f(references);
        }
    }
}

impl Ddl {
    /// Calls `f` on every relation name the statement names (tables, views, indexes,
    /// sequences), so they can be resolved through a `search_path`.
    pub fn map_relation_names(&mut self, f: &mut dyn FnMut(&mut Name)) {
        let relation_kind = |k: &ObjectKind| {
            matches!(
                k,
                ObjectKind::Table
                    | ObjectKind::Index
                    | ObjectKind::View
                    | ObjectKind::MaterializedView
                    | ObjectKind::Sequence
            )
        };
        match self {
            Ddl::CreateTable { name, columns, constraints, lineage, .. } => {
                f(name);
                lineage
                    .partition_of
                    .iter_mut()
                    .chain(lineage.inherits.iter_mut())
                    .chain(lineage.like.iter_mut())
                    .for_each(&mut *f);
                columns
                    .iter_mut()
                    .flat_map(|c| c.constraints.iter_mut())
                    .chain(constraints.iter_mut())
                    .for_each(|c| c.map_relation_names(f));
            }
            Ddl::AlterTable { table, actions, .. } => {
                f(table);
                for action in actions {
                    match action {
                        AlterAction::AddConstraint(c) => c.map_relation_names(f),
                        AlterAction::AddColumn { column, .. } => {
                            column.constraints.iter_mut().for_each(|c| c.map_relation_names(f))
                        }
                        AlterAction::AttachPartition { partition } | AlterAction::DetachPartition { partition, .. } => {
                            f(partition)
                        }
                        AlterAction::Inherit { parent, .. } => f(parent),
                        _ => {}
                    }
                }
            }
            Ddl::CreateIndex(index) => f(&mut index.table),
            Ddl::Drop { kind, names, .. } if relation_kind(kind) => names.iter_mut().for_each(&mut *f),
            Ddl::Rename { kind, from, .. } if relation_kind(kind) => f(from),
            Ddl::AlterIndex { name, .. }
            | Ddl::CreateView { name, .. }
            | Ddl::RefreshMaterializedView { name, .. }
            | Ddl::CreateSequence { name, .. } => f(name),
            Ddl::AlterSequence { name, owned_by, .. } => {
                f(name);
                if let Some(Some(owner)) = owned_by {
                    f(&mut owner.0);
                }
            }
            Ddl::CreateStatistics { table, .. } => f(table),
            Ddl::Comment(target) => match target {
                CommentTarget::Relation { name, .. } => f(name),
                CommentTarget::Column { table, .. } | CommentTarget::Constraint { table, .. } => f(table),
                CommentTarget::Other { .. } => {}
            },
            Ddl::Update { table, .. } | Ddl::Delete { table, .. } | Ddl::Insert { table } => f(table),
            Ddl::Truncate { tables, .. } | Ddl::LockTable { tables, .. } | Ddl::Analyze { tables } => {
                tables.iter_mut().for_each(&mut *f)
            }
            Ddl::Trigger { table, .. } => f(table),
            Ddl::Reindex { kind: ReindexKind::Index | ReindexKind::Table, name, .. } => f(name),
            _ => {}
        }
    }

    /// Whether this view says everything Sluice needs about the statement, so its syntax tree
    /// need not be kept (the trees of DDL are most of a migration history's memory). Statements
    /// that contain queries — views, functions, DML, `CREATE TABLE … AS` — keep theirs.
    /// The statements whole-file rules read besides the one being checked, whose typed view
    /// is kept by `Statement::release`: transaction boundaries (`missing-lock-timeout` groups
    /// its findings by transaction) and views (`rename-table` looks for a compatibility view
    /// later in the file), and the indexes and keys `drop-index-in-use` looks for as a dropped
    /// index's replacement later in the file. A rule that reads other statements of its file
    /// must add them here.
    pub fn read_by_whole_file(&self) -> bool {
        match self {
            Ddl::Begin | Ddl::Commit | Ddl::Rollback | Ddl::CreateView { .. } | Ddl::CreateIndex(_) => true,
            Ddl::AlterTable { actions, .. } => actions.iter().any(|a| {
                matches!(
                    a,
                    AlterAction::AddConstraint(Constraint {
                        kind: ConstraintKind::PrimaryKey { .. } | ConstraintKind::Unique { .. },
                        ..
                    })
                )
            }),
            _ => false,
        }
    }

    pub fn is_complete(&self) -> bool {
        match self {
            Ddl::CreateTable { from_query, .. } => !from_query,
            Ddl::AlterTable { .. }
            | Ddl::RefreshMaterializedView { .. }
            | Ddl::CreateSequence { .. }
            | Ddl::AlterSequence { .. }
            | Ddl::CreateSchema { .. }
            | Ddl::CreateExtension { .. }
            | Ddl::CreateStatistics { .. }
            | Ddl::Comment(_)
            | Ddl::Reindex { .. }
            | Ddl::LockTable { .. }
            | Ddl::AlterIndex { .. }
            | Ddl::Do
            | Ddl::CreateIndex(_)
            | Ddl::Drop { .. }
            | Ddl::Rename { .. }
            | Ddl::Set { .. }
            | Ddl::Reset { .. }
            | Ddl::Begin
            | Ddl::Commit
            | Ddl::Rollback
            | Ddl::Truncate { .. }
            | Ddl::Analyze { .. }
            | Ddl::Trigger { .. } => true,
            _ => false,
        }
    }
}

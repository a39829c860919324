//! What a rule sees when it checks a statement.

use super::meta::RuleMeta;
use crate::finding::{Finding, Severity, Snippet};
use crate::policy::tables::Rows;
use crate::policy::Policies;
pub use crate::runner::RunnerTransaction;
use crate::schema::migrations::Migration;
use crate::schema::naming::Freed;
use crate::schema::{is_system_catalog, is_tool_table, Schema};
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, IndexKey, Name};
use crate::sql::parse::Statement;
use crate::sql::plpgsql::Branch;
use crate::sql::query::Position;
pub use crate::sql::source::SourceFile;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// Project-wide facts every rule may use.
#[derive(Debug)]
pub struct Facts<'a> {
    pub postgres_version: u32,
    pub policies: &'a Policies,
    /// The queries the application runs (query files, sqlc's, SQL in code), parsed.
    pub queries: Queries<'a>,
    /// Checking a change under review (`sluice check`) rather than a whole project.
    pub under_review: bool,
}

/// The application's queries as the rules read them. Reading them (every access goes through
/// `Deref`) marks the reader when [`marking`](Self::marking) asked: a query whose rules read
/// the other queries (a `DROP INDEX` looks for the queries that need the index) has findings
/// that depend on them, which the query cache must know. The lint engine parses a query only
/// when a rule first reads it (`ParsedQuery::unparsed`); [`parsed`](Self::parsed) parses them
/// all at once, in parallel, for a rule about to read every syntax tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct Queries<'a> {
    all: &'a [crate::queries::ParsedQuery],
    read: Option<&'a std::sync::atomic::AtomicBool>,
}

impl<'a> Queries<'a> {
    pub fn new(all: &'a [crate::queries::ParsedQuery]) -> Queries<'a> {
        Queries { all, read: None }
    }

    /// The same queries, setting `read` when a rule reads them.
    pub fn marking(self, read: &'a std::sync::atomic::AtomicBool) -> Queries<'a> {
        Queries { read: Some(read), ..self }
    }
}

impl std::ops::Deref for Queries<'_> {
    type Target = [crate::queries::ParsedQuery];

    fn deref(&self) -> &Self::Target {
        if let Some(read) = self.read {
            read.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.all
    }
}

impl Queries<'_> {
    /// Every query, parsed (those not parsed yet in parallel).
    pub fn parsed(&self) -> &[crate::queries::ParsedQuery] {
        use rayon::prelude::*;
        let all: &[crate::queries::ParsedQuery] = self;
        if !all.iter().all(crate::queries::ParsedQuery::is_parsed) {
            all.par_iter().for_each(|query| {
                query.file();
            });
        }
        all
    }
}

/// A migration's rollback, parsed the first time a rule asks what it drops: most migrations add
/// nothing a rollback must undo, and parsing every down file cost a tenth of linting a history
/// that has them.
#[derive(Debug, Clone, Default)]
pub struct Rollback {
    /// The down file's text; `None`: the migration has no rollback.
    text: Option<Arc<str>>,
    drops: OnceLock<Vec<Ddl>>,
}

impl Rollback {
    pub fn new(text: Option<Arc<str>>) -> Rollback {
        Rollback { text, drops: OnceLock::new() }
    }

    /// The rollback's `DROP …` statements, and its `ALTER …` ones that say DROP, as their typed
    /// view (what can undo an addition), or `None` when there is no rollback. Only those are
    /// tokenized and parsed: down files are mostly views and functions re-created as they were.
    pub fn drops(&self) -> Option<&[Ddl]> {
        let text = self.text.as_ref()?;
        let drops = self.drops.get_or_init(|| {
            // Only a DROP, or an ALTER that says DROP somewhere, can undo an addition (see
            // `constraint_without_rollback::undone_by`): the other ALTERs of a rollback (columns
            // added back, defaults restored) were more than a quarter of the work on Lemmy's.
            let split = crate::sql::split::split_where(text, |statement| {
                let first = statement.split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
                first.eq_ignore_ascii_case("drop")
                    || (first.eq_ignore_ascii_case("alter")
                        && statement.as_bytes().windows(4).any(|word| word.eq_ignore_ascii_case(b"drop")))
            });
            let parsed = crate::sql::parse::parse_split(Arc::clone(text), split);
            parsed.statements.into_iter().map(|statement| statement.ddl).collect()
        });
        Some(drops)
    }
}

/// Where a migration file stands as its statements are checked one by one.
#[derive(Debug, Clone, Default)]
pub struct MigrationState {
    /// Position in replay order.
    pub index: usize,
    pub migration: Option<Migration>,
    /// Tables created earlier in this file: lock and rewrite rules do not apply to them.
    pub created_tables: BTreeSet<Name>,
    /// Columns added earlier in this file, as (table, column): every existing row holds their default.
    pub added_columns: BTreeSet<(Name, Name)>,
    /// Those of them whose (last) `ADD COLUMN` filled every existing row with a value: a non-null
    /// default, an identity or a generated column.
    pub filled_columns: BTreeSet<(Name, Name)>,
    /// Indexes an earlier migration created that this file dropped earlier (directly or with
    /// their constraint), by name, as they were: what production still has until this
    /// migration runs. Bounded by the schema, however many times the file drops what it created.
    pub dropped_indexes: BTreeMap<Name, crate::schema::Index>,
    /// Names this file dropped earlier, as written: indexes (`DROP INDEX`) and constraints as
    /// (table, constraint) (`ALTER TABLE … DROP CONSTRAINT`). An object of that name the file
    /// creates again existed before it.
    pub dropped_index_names: BTreeSet<Name>,
    pub dropped_constraints: BTreeSet<(Name, Name)>,
    /// The transaction the migration tool puts this statement in (its BEGIN … COMMIT around the
    /// file, a changeset or every migration; or the implicit one of a multi-statement query
    /// string), besides the file's own BEGIN … COMMIT. Set per statement by the engine.
    pub runner_transaction: Option<Arc<RunnerTransaction>>,
    /// The tool's transaction (by key) that a COMMIT in the file already ended: the rest of its
    /// unit runs outside any transaction.
    pub committed_runner: Option<usize>,
    /// Inside an explicit `BEGIN … COMMIT`.
    pub explicit_transaction: bool,
    /// `SET lock_timeout` (session-wide) ran earlier in the file.
    pub lock_timeout_set: bool,
    pub statement_timeout_set: bool,
    /// `SET LOCAL lock_timeout` in the current transaction (ends at COMMIT / ROLLBACK).
    pub lock_timeout_local: bool,
    pub statement_timeout_local: bool,
    /// The strongest write-blocking lock (SHARE or stronger) on an existing table taken earlier in
    /// the current transaction: held until COMMIT.
    pub held_lock: Option<HeldLock>,
    /// Some migration of the layout has a down (rollback) migration.
    pub layout_has_down: bool,
    /// This migration's rollback (a down file, or dbmate's `-- migrate:down` section).
    pub down: Rollback,
    /// Settings `SET` earlier in the file; they last for the file (the session).
    pub session: SessionSettings,
    /// Settings `SET LOCAL` in the current transaction; they end with it.
    pub local: SessionSettings,
    /// Checking the statements of a DO block: they run as one statement, in one transaction,
    /// under this condition.
    pub do_block: Option<Branch>,
    /// The scopes `missing-lock-timeout` has reported in this file.
    pub lock_timeout_scopes: std::cell::RefCell<super::lock_timeout_scopes::Scopes>,
}

/// Session settings that change what PostgreSQL does with a statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// `SET timezone = …` / `SET TIME ZONE …`.
    pub timezone: Option<String>,
    /// `SET search_path = …`, schemas in order.
    pub search_path: Option<Vec<String>>,
}

/// `app, "$user", public` or `'app,public'` → the schema names, folded like identifiers.
fn search_path(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => s.trim_matches('\'').to_ascii_lowercase(),
        })
        .collect()
}

/// Whether a time zone setting has a fixed offset of zero (`UTC`, `Etc/UTC`, `GMT`, `Zulu`,
/// `0`, `+00:00`…): the zones in which PostgreSQL 12+ changes timestamp ↔ timestamptz without a
/// rewrite (`TimestampTimestampTzRequiresRewrite`).
pub fn is_utc(zone: &str) -> bool {
    let zone = zone.trim().trim_matches('\'').to_ascii_lowercase();
    let zone = zone.strip_prefix("etc/").unwrap_or(&zone);
    const ZERO: &[&str] = &[
        "utc",
        "uct",
        "gmt",
        "zulu",
        "universal",
        "greenwich",
        "gmt0",
        "gmt+0",
        "gmt-0",
        "utc0",
        "z",
        "0",
        "+0",
        "-0",
        "00:00",
        "+00:00",
        "-00:00",
        "+00",
        "-00",
        "interval '0'",
    ];
    ZERO.contains(&zone)
}

/// A lock held until the transaction ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    pub table: Name,
    pub mode: super::locks::Lock,
    /// Line and column of the statement that took it.
    pub line: usize,
    pub column: usize,
}

/// `SET x = 0` / `SET x TO DEFAULT` turn a timeout off.
fn timeout_on(value: &str) -> bool {
    let v = value.trim().trim_matches('\'').to_lowercase();
    !(v.is_empty() || v == "default" || v.trim_end_matches(|c: char| c.is_ascii_alphabetic()).trim() == "0")
}

impl MigrationState {
    pub fn in_transaction(&self) -> bool {
        self.runner_transaction.is_some() || self.explicit_transaction || self.do_block.is_some()
    }

    /// The session time zone, if the migration set one (`SET LOCAL` wins while it lasts).
    pub fn timezone(&self) -> Option<&str> {
        self.local.timezone.as_deref().or(self.session.timezone.as_deref())
    }

    /// The `search_path` the migration set, if any.
    pub fn search_path(&self) -> Option<&[String]> {
        self.local.search_path.as_deref().or(self.session.search_path.as_deref())
    }

    /// `statement` with its relation names resolved through the `search_path` the migration
    /// set; borrowed unchanged when it set none (the default path resolves to `public`).
    pub fn resolve<'s>(&self, statement: &'s Statement, schema: &Schema) -> std::borrow::Cow<'s, Statement> {
        match self.search_path() {
            Some(path) if path.iter().any(|s| s != "public" && !s.starts_with('$')) => {
                let mut resolved = statement.clone();
                resolved.ddl.map_relation_names(&mut |name: &mut Name| *name = schema.resolve(name, path));
                std::borrow::Cow::Owned(resolved)
            }
            _ => std::borrow::Cow::Borrowed(statement),
        }
    }

    /// The end of a DO block: its transaction ends with it unless an outer one goes on.
    pub fn end_do_block(&mut self) {
        self.do_block = None;
        if !self.in_transaction() {
            self.held_lock = None;
        }
    }

    /// Where the statement runs, completing "CREATE INDEX CONCURRENTLY …": inside BEGIN … COMMIT,
    /// or the tool's (or the implicit) transaction; `None` outside any.
    pub fn transaction_phrase(&self) -> Option<String> {
        if self.do_block.is_some() {
            return Some("inside a DO block, which runs as one statement in a transaction".into());
        }
        if self.explicit_transaction {
            return Some("inside BEGIN … COMMIT".into());
        }
        self.runner_transaction.as_ref().map(|t| t.phrase.clone())
    }

    /// Moves to the transaction the tool puts the next statement in: when it differs from the
    /// current one, the current one has ended (the tool committed, or the query string ended),
    /// and with it the locks and `SET LOCAL`s it held. A BEGIN inside a query string outlives it.
    pub fn enter_runner_transaction(&mut self, next: Option<Arc<RunnerTransaction>>) {
        let key = |t: &Option<Arc<RunnerTransaction>>| t.as_ref().map(|t| t.key);
        if self.committed_runner.is_some() && self.committed_runner == key(&next) {
            return;
        }
        self.committed_runner = None;
        if key(&self.runner_transaction) != key(&next) {
            if self.runner_transaction.is_some() && !self.explicit_transaction {
                self.end_transaction();
            }
            self.runner_transaction = next;
        }
    }

    pub fn has_lock_timeout(&self) -> bool {
        self.lock_timeout_set || self.lock_timeout_local
    }

    pub fn has_statement_timeout(&self) -> bool {
        self.statement_timeout_set || self.statement_timeout_local
    }

    /// Whether `table` (or materialized view) existed before this migration (so locking it
    /// blocks production traffic).
    pub fn is_existing(&self, table: &str, schema: &Schema) -> bool {
        !self.created_tables.contains(table)
            && schema.relation_origin(table).is_some_and(|o| o.migration != Some(self.index))
    }

    /// Like [`is_existing`](Self::is_existing), but a table the history never showed counts as
    /// existing: the gate fails closed on what it cannot see. System catalogs (`pg_*`,
    /// `information_schema`) and the migration tool's own bookkeeping table are never tables a
    /// migration could block the application on.
    pub fn may_exist(&self, table: &str, schema: &Schema) -> bool {
        let origin = schema.relation_origin(table);
        if origin.is_none() && (is_system_catalog(table) || is_tool_table(table)) {
            return false;
        }
        !self.created_tables.contains(table) && origin.is_none_or(|o| o.migration != Some(self.index))
    }

    fn end_transaction(&mut self) {
        self.explicit_transaction = false;
        // SET LOCAL ends with the transaction; plain SET lasts the session.
        self.lock_timeout_local = false;
        self.statement_timeout_local = false;
        self.local = SessionSettings::default();
        self.held_lock = None;
    }

    /// Updates the state after `statement` ran; `schema` is the schema before it.
    pub fn observe(&mut self, statement: &Statement, schema: &Schema) {
        if self.in_transaction() {
            let strongest = super::locks::table_locks(&statement.ddl, schema)
                .into_iter()
                // A lock on a view blocks only the queries reading it while it is replaced: not held work.
                .filter(|(t, l)| l.blocks_writes() && self.may_exist(t, schema) && !schema.views.contains_key(t))
                .min_by_key(|(_, l)| std::cmp::Reverse(*l));
            if let Some((table, mode)) = strongest {
                if self.held_lock.as_ref().is_none_or(|held| mode > held.mode) {
                    self.held_lock =
                        Some(HeldLock { table, mode, line: statement.span.line, column: statement.span.column });
                }
            }
        }
        let does_something = schema.no_op(&statement.ddl).is_none();
        for index in dropped_indexes(&statement.ddl, schema) {
            if index.origin.migration != Some(self.index) {
                self.dropped_indexes.entry(index.name.clone()).or_insert(index);
            }
        }
        match &statement.ddl {
            Ddl::CreateTable { name, .. } | Ddl::CreateView { name, materialized: true, .. } if does_something => {
                self.created_tables.insert(name.clone());
            }
            Ddl::Drop { kind: crate::sql::ddl::ObjectKind::Index, names, .. } => {
                self.dropped_index_names.extend(names.iter().cloned());
            }
            Ddl::AlterTable { table, actions, .. } => {
                for action in actions {
                    match action {
                        AlterAction::RenameTable { to } if self.created_tables.remove(table) => {
                            self.created_tables.insert(to.clone());
                        }
                        AlterAction::DropConstraint { name, .. } => {
                            self.dropped_constraints.insert((table.clone(), name.clone()));
                        }
                        AlterAction::AddColumn { column, .. } => {
                            let added = (table.clone(), column.name.clone());
                            if fills_existing_rows(column) {
                                self.filled_columns.insert(added.clone());
                            } else {
                                self.filled_columns.remove(&added);
                            }
                            self.added_columns.insert(added);
                        }
                        _ => {}
                    }
                }
            }
            Ddl::Begin => self.explicit_transaction = true,
            Ddl::Commit | Ddl::Rollback => {
                self.end_transaction();
                // COMMIT ends the tool's BEGIN … COMMIT too: what follows in the unit autocommits.
                // In a multi-statement string, PostgreSQL opens a new implicit transaction instead.
                if let Some(t) = self.runner_transaction.as_ref().filter(|t| !t.implicit) {
                    self.committed_runner = Some(t.key);
                    self.runner_transaction = None;
                }
            }
            Ddl::Set { name, value, local } => {
                let on = timeout_on(value);
                let in_transaction = self.in_transaction();
                let settings = if *local { &mut self.local } else { &mut self.session };
                match name.as_str() {
                    // Outside a transaction SET LOCAL has no effect.
                    _ if *local && !in_transaction => {}
                    "timezone" | "time zone" => {
                        settings.timezone = (!value.eq_ignore_ascii_case("default")
                            && !value.eq_ignore_ascii_case("local"))
                        .then(|| value.trim_matches('\'').to_string())
                    }
                    "search_path" => {
                        settings.search_path = (!value.eq_ignore_ascii_case("default")).then(|| search_path(value))
                    }
                    _ => {}
                }
                match (name.as_str(), local) {
                    ("lock_timeout", false) => self.lock_timeout_set = on,
                    // Any explicit statement_timeout, even 0 (no limit), is a deliberate choice.
                    ("statement_timeout", false) => self.statement_timeout_set = true,
                    // Outside a transaction SET LOCAL has no effect.
                    ("lock_timeout", true) => self.lock_timeout_local = on && self.in_transaction(),
                    ("statement_timeout", true) => self.statement_timeout_local = self.in_transaction(),
                    _ => {}
                }
            }
            Ddl::Reset { name } => {
                for settings in [&mut self.session, &mut self.local] {
                    if name == "timezone" || name == "all" {
                        settings.timezone = None;
                    }
                    if name == "search_path" || name == "all" {
                        settings.search_path = None;
                    }
                }
                if name == "lock_timeout" || name == "all" {
                    self.lock_timeout_set = false;
                    self.lock_timeout_local = false;
                }
                if name == "statement_timeout" || name == "all" {
                    self.statement_timeout_set = false;
                    self.statement_timeout_local = false;
                }
            }
            _ => {}
        }
    }
}

/// Whether adding `column` gives every existing row a value: a non-null default, an identity or
/// a generated column.
fn fills_existing_rows(column: &crate::sql::ddl::Column) -> bool {
    column.identity
        || column.generated_stored
        || column.default.as_ref().is_some_and(|d| !d.expression.eq_ignore_ascii_case("null"))
}

/// The indexes `ddl` drops, as `schema` (before it) has them: `DROP INDEX`, or dropping the
/// constraint an index backs.
fn dropped_indexes(ddl: &Ddl, schema: &Schema) -> Vec<crate::schema::Index> {
    let names: Vec<&Name> = match ddl {
        Ddl::Drop { kind: crate::sql::ddl::ObjectKind::Index, names, .. } => names.iter().collect(),
        Ddl::AlterTable { table, actions, .. } => actions
            .iter()
            .filter_map(|a| match a {
                AlterAction::DropConstraint { name, .. } => schema
                    .table(table)
                    .and_then(|t| t.constraints.iter().find(|c| &c.name == name))
                    .and_then(|c| c.index.as_ref()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    names.into_iter().filter_map(|n| schema.indexes.get(n).cloned()).collect()
}

/// Whether the statement comes from a migration or from a query file.
#[derive(Debug, Clone, Copy)]
pub enum Role<'a> {
    Migration(&'a MigrationState),
    Query,
}

pub struct Context<'a> {
    pub file: &'a SourceFile,
    /// The statement as PostgreSQL will run it: without the `ALTER TABLE` sub-commands that do
    /// nothing (see `Schema::without_no_op_actions`).
    pub statement: &'a Statement,
    /// The statement as written, with those sub-commands: they still take their locks.
    written: &'a Statement,
    /// Its table locks, worked out once (every claim of a lock reads them).
    locks: OnceLock<Vec<(Name, super::locks::Lock)>>,
    /// The schema just before this statement.
    pub schema: &'a Schema,
    pub role: Role<'a>,
    pub facts: &'a Facts<'a>,
    /// The names the statement's own drops free (see `Schema::freed_by_drops`), worked out on
    /// first use, for every rule naming an added constraint.
    freed_by_drops: OnceLock<Option<Freed>>,
    /// The schema after the statement's own drops (see `Schema::before_additions`), for the
    /// drops `freed_by_drops` cannot follow: a copy of the whole schema, made at most once.
    before_additions: OnceLock<Option<Schema>>,
    unique_additions: OnceLock<Vec<UniqueAddition>>,
    declared_columns: OnceLock<Vec<DeclaredColumn>>,
    /// The statement's text in ASCII lowercase, for placing findings on the names in it.
    lowercase_text: OnceLock<String>,
}

/// A table's size class per `policies/tables.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSize<'a> {
    Tiny(&'a Rows),
    Medium(&'a Rows),
    Large(&'a Rows),
    Unknown,
}

/// A column a statement declares (CREATE TABLE, ADD COLUMN) or retypes (ALTER COLUMN … TYPE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredColumn {
    pub table: Name,
    pub name: Name,
    /// Lowercased, as written (`character varying(20)`, `timestamp(3)`).
    pub data_type: String,
    pub primary_key: bool,
}

impl DeclaredColumn {
    /// The type's name without modifiers or array brackets: `varchar(20)[]` → `varchar`.
    pub fn base_type(&self) -> &str {
        self.data_type.split(['(', '[']).next().unwrap_or("").trim()
    }
}

/// A uniqueness a statement adds: a UNIQUE or PRIMARY KEY constraint, or a unique index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueAddition {
    pub table: Name,
    pub keys: Vec<IndexKey>,
    /// "UNIQUE constraint", "PRIMARY KEY", "unique index".
    pub what: &'static str,
    /// The name the statement gives it; `None` when PostgreSQL generates one.
    pub name: Option<Name>,
    /// Where its name in the database comes from (see [`Context::describe_addition`]).
    naming: AdditionNaming,
    /// Added by the CREATE TABLE of its own table.
    pub with_new_table: bool,
}

/// The name a uniqueness has in the database, or what it is worked out from: only a finding
/// needs it, and naming a constraint after the statement's own drops copies the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AdditionNaming {
    Known(Name),
    Constraint(crate::sql::ddl::Constraint),
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
    pub fn new(
        file: &'a SourceFile,
        statement: &'a Statement,
        schema: &'a Schema,
        role: Role<'a>,
        facts: &'a Facts<'a>,
    ) -> Self {
        Context {
            file,
            statement,
            written: statement,
            locks: OnceLock::new(),
            schema,
            role,
            facts,
            freed_by_drops: OnceLock::new(),
            before_additions: OnceLock::new(),
            unique_additions: OnceLock::new(),
            declared_columns: OnceLock::new(),
            lowercase_text: OnceLock::new(),
        }
    }

    /// The same context for `statement` as written, when the one checked leaves out sub-commands
    /// that do nothing (their locks are still taken).
    pub fn written_as(mut self, written: &'a Statement) -> Self {
        self.written = written;
        self
    }

    /// The tables this statement locks and the mode it takes on each, as written (see
    /// `locks::table_locks`).
    pub fn table_locks(&self) -> &[(Name, super::locks::Lock)] {
        self.locks.get_or_init(|| super::locks::table_locks(&self.written.ddl, self.schema))
    }

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
            .excerpt(self.excerpt())
            .help(meta.fix.trim())
    }

    /// A claim that this statement takes `lock` on `table` (see [`super::claims`]), or the
    /// stronger lock another part of the statement takes on it: PostgreSQL holds the strongest.
    pub fn claim_lock(&self, table: &str, lock: super::locks::Lock) -> super::claims::Claim {
        let statement_lock = self.table_locks().iter().find(|(t, _)| t == table).map(|(_, l)| *l);
        let lock = statement_lock.map_or(lock, |l| l.max(lock));
        super::claims::Claim::lock(self.statement.span.line, self.statement.span.column, table, lock)
    }

    /// A claim that this statement does `work` on `table` (see [`super::claims`]).
    pub fn claim_work(&self, table: &str, work: super::claims::Work) -> super::claims::Claim {
        super::claims::Claim::work(self.statement.span.line, self.statement.span.column, table, work)
    }

    /// A finding at a position inside the statement.
    pub fn finding_at(&self, meta: &RuleMeta, position: Position, message: impl Into<String>) -> Finding {
        let mut finding = self.finding(meta, message);
        finding = finding.at(position.line, position.column, position.end_line, position.end_column);
        finding
    }

    /// The statement's lines in full, for excerpts; on a line too long to show (a file of one
    /// line), the statement alone. Looks no further than `LINE_CONTEXT` bytes either side, so
    /// a finding costs the same however long its line.
    fn excerpt(&self) -> Snippet {
        const LINE_CONTEXT: usize = 512;
        let text = &self.file.parsed.text;
        let span = &self.statement.span;
        let before = floor_char_boundary(text, span.start.saturating_sub(LINE_CONTEXT));
        let (start, column) = match text[before..span.start].rfind('\n') {
            Some(i) => (before + i + 1, 1),
            None if before == 0 => (0, 1),
            None => (span.start, span.column),
        };
        let after = floor_char_boundary(text, (span.end + LINE_CONTEXT).min(text.len()));
        let end = match text[span.end..after].find('\n') {
            Some(i) => span.end + i,
            None if after == text.len() => text.len(),
            None => span.end,
        };
        Snippet::shared(span.line, column, text, start..end)
    }

    /// Whether `table` is one production already has: this is a migration, and the table was
    /// not created earlier in it. Tables the history never showed count as existing (fail closed).
    pub fn is_existing_table(&self, table: &str) -> bool {
        self.migration().is_some_and(|state| state.may_exist(table, self.schema))
    }

    /// How big `table` is in production, per `policies/tables.toml`.
    pub fn table_size(&self, table: &str) -> TableSize<'a> {
        let policy = &self.facts.policies.tables;
        match policy.rows(table) {
            None => TableSize::Unknown,
            Some(rows) if rows.rows < policy.small_table_rows => TableSize::Tiny(rows),
            Some(rows) if rows.rows < policy.large_table_rows => TableSize::Medium(rows),
            Some(rows) => TableSize::Large(rows),
        }
    }

    /// The one place table size turns into severity for lock and rewrite rules: errors on large
    /// tables and tables of unknown size, warnings below `large_table_rows`, nothing for tables
    /// below `small_table_rows` or created earlier in this migration.
    pub fn lock_severity(&self, table: &str) -> Option<Severity> {
        if !self.is_existing_table(table) {
            return None;
        }
        match self.table_size(table) {
            TableSize::Tiny(_) => None,
            TableSize::Medium(_) => Some(Severity::Warning),
            TableSize::Large(_) | TableSize::Unknown => Some(Severity::Error),
        }
    }

    /// "12000000 (policies/tables.toml)" or "unknown (…)", for `--explain`.
    pub fn size_fact(&self, table: &str) -> String {
        match self.table_size(table) {
            TableSize::Unknown => "unknown (not in policies/tables.toml or its statistics snapshot)".into(),
            TableSize::Tiny(r) | TableSize::Medium(r) | TableSize::Large(r) => format!("{} ({})", r.rows, r.source),
        }
    }

    /// How the statement runs: inside the runner's transaction, an explicit one, or on its own.
    pub fn transaction_fact(&self) -> String {
        match self.migration() {
            Some(s) if s.do_block.is_some() => "inside a DO block (one statement, one transaction)".into(),
            Some(s) if s.explicit_transaction => "inside an explicit BEGIN … COMMIT".into(),
            Some(MigrationState { runner_transaction: Some(t), .. }) => t.fact.clone(),
            Some(_) => "no transaction (each statement commits on its own)".into(),
            None => "not a migration".into(),
        }
    }

    /// A lock or rewrite finding on `table`, with the severity its size gives and the facts used;
    /// `None` when the table is new in this migration or known to be tiny.
    pub fn lock_finding(&self, meta: &RuleMeta, table: &str, message: impl Into<String>) -> Option<Finding> {
        let severity = self.lock_severity(table)?;
        let mut finding = self.finding(meta, message).fact("table", table).fact("table rows", self.size_fact(table));
        finding.severity = severity;
        Some(finding.fact("transaction", self.transaction_fact()))
    }

    /// A finding on the line that declares `column` (its name's first mention after the table's),
    /// or on the whole statement when the name cannot be found in the text.
    pub fn column_finding(&self, meta: &RuleMeta, column: &DeclaredColumn, message: impl Into<String>) -> Finding {
        let finding = self.finding(meta, message);
        // ASCII case folding keeps byte offsets, and is what PostgreSQL does to unquoted names.
        let lower = self.lowercase_text.get_or_init(|| self.statement_text().to_ascii_lowercase());
        let is_word = |at: usize, len: usize| {
            let before = lower[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            let after = lower[at + len..].chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            before && after
        };
        let find_word = |word: &str, from: usize| {
            lower[from..].match_indices(word).map(|(i, _)| from + i).find(|&at| is_word(at, word.len()))
        };
        let table = column.table.rsplit('.').next().unwrap_or(&column.table).to_ascii_lowercase();
        let after_table = find_word(&table, 0).map(|at| at + table.len()).unwrap_or(0);
        let Some(at) = find_word(&column.name.to_ascii_lowercase(), after_table) else { return finding };
        // Counted from the statement's start, not the file's: a file of many findings would
        // otherwise be read from its start for each.
        let before = &lower[..at];
        let line = self.statement.span.line + before.matches('\n').count();
        let column_number = match before.rfind('\n') {
            Some(newline) => before[newline + 1..].chars().count() + 1,
            None => self.statement.span.column + before.chars().count(),
        };
        let end = column_number + column.name.chars().count();
        finding.at(line, column_number, line, end)
    }

    /// The columns this statement declares or retypes, for the type-advice rules (worked out
    /// once: four rules ask).
    pub fn declared_columns(&self) -> &[DeclaredColumn] {
        self.declared_columns.get_or_init(|| self.find_declared_columns())
    }

    fn find_declared_columns(&self) -> Vec<DeclaredColumn> {
        let pk_columns = |constraints: &[crate::sql::ddl::Constraint]| -> Vec<Name> {
            constraints
                .iter()
                .filter_map(|c| match &c.kind {
                    ConstraintKind::PrimaryKey { columns } => Some(columns.clone()),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        let from_column = |table: &Name, c: &crate::sql::ddl::Column, table_pk: &[Name]| DeclaredColumn {
            table: table.clone(),
            name: c.name.clone(),
            data_type: c.data_type.clone(),
            primary_key: table_pk.contains(&c.name) || !pk_columns(&c.constraints).is_empty(),
        };
        match &self.statement.ddl {
            Ddl::CreateTable { name, columns, constraints, .. } => {
                let pk = pk_columns(constraints);
                columns.iter().map(|c| from_column(name, c, &pk)).collect()
            }
            Ddl::AlterTable { table, actions, .. } => actions
                .iter()
                .flat_map(|a| match a {
                    AlterAction::AddColumn { column, .. } => vec![from_column(table, column, &[])],
                    AlterAction::SetType { column, data_type, .. } => vec![DeclaredColumn {
                        table: table.clone(),
                        name: column.clone(),
                        data_type: data_type.clone(),
                        primary_key: false,
                    }],
                    AlterAction::AddConstraint(c) => pk_columns(std::slice::from_ref(c))
                        .into_iter()
                        .filter_map(|col| {
                            let info = self.schema.table(table)?.column(&col)?;
                            Some(DeclaredColumn {
                                table: table.clone(),
                                name: col,
                                data_type: info.data_type.clone(),
                                primary_key: true,
                            })
                        })
                        .collect(),
                    _ => Vec::new(),
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The constraints an `ALTER TABLE` adds (`ADD CONSTRAINT`, or inline on `ADD COLUMN`), with the
    /// table and, for an inline one, the column it is added with.
    pub fn added_constraints(
        &self,
    ) -> Vec<(&'a Name, &'a crate::sql::ddl::Constraint, Option<&'a crate::sql::ddl::Column>)> {
        let Ddl::AlterTable { table, actions, .. } = &self.statement.ddl else {
            return Vec::new();
        };
        actions
            .iter()
            .flat_map(|action| match action {
                AlterAction::AddConstraint(c) => vec![(table, c, None)],
                AlterAction::AddColumn { column, .. } => {
                    column.constraints.iter().map(|c| (table, c, Some(column))).collect()
                }
                _ => Vec::new(),
            })
            .collect()
    }

    /// The name PostgreSQL gives a constraint this statement adds to `table` (after the
    /// statement's own drops, which PostgreSQL runs first).
    pub fn added_constraint_name(&self, table: &str, constraint: &crate::sql::ddl::Constraint) -> Name {
        if let Some(name) = &constraint.name {
            return name.clone();
        }
        let name = self.schema.constraint_name(table, constraint, &[]);
        let Ddl::AlterTable { table: altered, actions, .. } = &self.statement.ddl else { return name };
        // The drops only free names: a first choice (nothing had taken it) stays PostgreSQL's
        // choice after them. Only a collision needs to know what they free.
        if name == Schema::default().constraint_name(table, constraint, &[]) {
            return name;
        }
        if let Some(freed) = self.freed_by_drops.get_or_init(|| self.schema.freed_by_drops(altered, actions)) {
            return self.schema.constraint_name_after(table, constraint, &[], freed);
        }
        match self.before_additions.get_or_init(|| self.schema.before_additions(altered, actions)) {
            Some(after_drops) => after_drops.constraint_name(table, constraint, &[]),
            None => name,
        }
    }

    /// `UNIQUE constraint accounts_email_key (email)`: what this statement adds, the name it has
    /// in the database, its keys.
    pub fn describe_addition(&self, addition: &UniqueAddition) -> String {
        let name = match &addition.naming {
            AdditionNaming::Known(name) => name.clone(),
            AdditionNaming::Constraint(constraint) => self.added_constraint_name(&addition.table, constraint),
        };
        format!("{} {} ({})", addition.what, name, addition.describe_keys())
    }

    /// The uniqueness this statement adds, if any (worked out once: three rules ask).
    pub fn unique_additions(&self) -> &[UniqueAddition] {
        self.unique_additions.get_or_init(|| self.find_unique_additions())
    }

    fn find_unique_additions(&self) -> Vec<UniqueAddition> {
        let columns = |cols: &[Name]| cols.iter().cloned().map(IndexKey::Column).collect::<Vec<_>>();
        let from_constraint =
            |table: &Name, c: &crate::sql::ddl::Constraint, with_new_table: bool| -> Option<UniqueAddition> {
                let (keys, what) = match &c.kind {
                    ConstraintKind::PrimaryKey { columns: cols } => (columns(cols), "PRIMARY KEY"),
                    ConstraintKind::Unique { columns: cols, .. } => (columns(cols), "UNIQUE constraint"),
                    ConstraintKind::UsingIndex { index, primary_key } => (
                        self.schema.indexes.get(index).map(|i| i.keys.clone()).unwrap_or_default(),
                        if *primary_key { "PRIMARY KEY" } else { "UNIQUE constraint" },
                    ),
                    _ => return None,
                };
                let naming = AdditionNaming::Constraint(c.clone());
                Some(UniqueAddition { table: table.clone(), keys, what, name: c.name.clone(), naming, with_new_table })
            };
        match &self.statement.ddl {
            Ddl::CreateIndex(index) if index.unique => vec![UniqueAddition {
                table: index.table.clone(),
                keys: index.keys.clone(),
                what: "unique index",
                name: index.name.clone(),
                naming: AdditionNaming::Known(self.schema.index_name(index)),
                with_new_table: false,
            }],
            Ddl::AlterTable { table, actions, .. } => actions
                .iter()
                .flat_map(|a| match a {
                    AlterAction::AddConstraint(c) => from_constraint(table, c, false).into_iter().collect::<Vec<_>>(),
                    AlterAction::AddColumn { column, .. } => {
                        column.constraints.iter().filter_map(|c| from_constraint(table, c, false)).collect()
                    }
                    _ => Vec::new(),
                })
                .collect(),
            Ddl::CreateTable { name, columns: cols, constraints, .. } => cols
                .iter()
                .flat_map(|c| c.constraints.iter())
                .chain(constraints.iter())
                .filter_map(|c| from_constraint(name, c, true))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The largest char boundary of `text` at or before `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{lint_files, lint_with, Setup};

    #[test]
    fn reading_the_queries_marks_the_reader_and_parses_them_when_asked() {
        use crate::queries::{ParsedQuery, Query, Source};
        let queries: Vec<ParsedQuery> = ["SELECT 1", "SELECT * FROM t WHERE a = ?"]
            .iter()
            .enumerate()
            .map(|(i, sql)| ParsedQuery::unparsed(Query::whole_file(format!("q{i}.sql"), *sql, Source::QueryFile)))
            .collect();
        let read = std::sync::atomic::AtomicBool::new(false);
        let all = Queries::new(&queries).marking(&read);
        assert!(!queries.iter().any(ParsedQuery::is_parsed) && !read.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(all.len(), 2);
        assert!(read.load(std::sync::atomic::Ordering::Relaxed), "the reader is marked");
        assert!(!queries.iter().any(ParsedQuery::is_parsed), "counting them parses none");
        assert_eq!(all.parsed().len(), 2);
        assert!(queries.iter().all(ParsedQuery::is_parsed), "parsed, all at once");
        assert_eq!(
            queries[1].file().parsed.statement_text(&queries[1].file().parsed.statements[0]),
            "SELECT * FROM t WHERE a = $1"
        );
    }

    fn rules_on(files: &[(&str, &str)]) -> Vec<(String, usize, String)> {
        lint_with(files, &Setup::default()).into_iter().map(|f| (f.rule, f.line, f.message)).collect()
    }

    #[test]
    fn utc_zones_are_those_with_a_fixed_zero_offset() {
        for zone in ["UTC", "'utc'", "Etc/UTC", "GMT", "Zulu", "0", "+00:00", "Etc/Universal"] {
            assert!(is_utc(zone), "{zone}");
        }
        for zone in ["Europe/London", "America/New_York", "CET", "+01:00", "local"] {
            assert!(!is_utc(zone), "{zone}");
        }
    }

    #[test]
    fn search_path_is_followed() {
        let base =
            "CREATE SCHEMA app; CREATE TABLE app.orders (id bigint, status text); CREATE TABLE orders (id bigint);";
        let found = rules_on(&[
            ("001.sql", base),
            ("002.sql", "SET search_path = app, public;\nCREATE INDEX orders_status ON orders (status);"),
        ]);
        let index = found.iter().find(|(r, ..)| r == "create-index-non-concurrently").expect("flagged");
        assert!(index.2.contains("existing table app.orders"), "{}", index.2);
        // Without the SET, the same name is public.orders, which has no status column but exists.
        let found = rules_on(&[("001.sql", base), ("002.sql", "CREATE INDEX orders_status ON orders (status);")]);
        let index = found.iter().find(|(r, ..)| r == "create-index-non-concurrently").expect("flagged");
        assert!(index.2.contains("existing table orders"), "{}", index.2);
        // A table created through the path in the same migration is new.
        let found = rules_on(&[
            ("001.sql", "CREATE SCHEMA app;"),
            (
                "002.sql",
                "SET search_path TO app;\nCREATE TABLE events (id bigint);\nCREATE INDEX events_id ON events (id);",
            ),
        ]);
        assert!(of_rule(&found, "create-index-non-concurrently").is_empty(), "{found:?}");
    }

    fn of_rule<'f>(found: &'f [(String, usize, String)], rule: &str) -> Vec<&'f (String, usize, String)> {
        found.iter().filter(|(r, ..)| r == rule).collect()
    }

    #[test]
    fn statements_that_do_nothing_are_not_flagged_but_may_still_lock() {
        let base = "CREATE TABLE t (id bigint, a int); CREATE INDEX t_a ON t (a);";
        // What each no-op locks on PostgreSQL 15 (pg_locks inside a transaction): it checks for
        // the object after taking the lock in the first three, before taking any in the rest.
        for (sql, lock) in [
            ("CREATE INDEX IF NOT EXISTS t_a ON t (a);", Some("SHARE")),
            ("ALTER TABLE t ADD COLUMN IF NOT EXISTS a int NOT NULL DEFAULT random();", Some("ACCESS EXCLUSIVE")),
            ("ALTER TABLE t DROP COLUMN IF EXISTS b;", Some("ACCESS EXCLUSIVE")),
            ("ALTER TABLE t DROP CONSTRAINT IF EXISTS t_b_check;", Some("ACCESS EXCLUSIVE")),
            ("DROP INDEX IF EXISTS never_created;", None),
            ("DROP TABLE IF EXISTS never_created;", None),
            ("ALTER TABLE IF EXISTS never_created ADD COLUMN b int DEFAULT random();", None),
            ("CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY);", None),
        ] {
            let loud: Vec<_> = lint_files(&[("001.sql", base), ("002.sql", sql)], "")
                .into_iter()
                .filter(|f| f.severity >= crate::finding::Severity::Warning)
                .map(|f| (f.rule, f.message))
                .collect();
            match lock {
                Some(lock) => {
                    assert_eq!(loud.len(), 1, "{sql}: {loud:?}");
                    assert_eq!(loud[0].0, "missing-lock-timeout", "only the lock counts: {sql}: {loud:?}");
                    assert!(loud[0].1.starts_with(&format!("takes {lock} on t ")), "{sql}: {loud:?}");
                }
                None => assert!(loud.is_empty(), "{sql}: {loud:?}"),
            }
        }
        // A no-op's lock is held until COMMIT like any other.
        let found = lint_with(
            &[("001.sql", &format!("{base} CREATE TABLE u (id bigint);")), ("002.sql", "SET lock_timeout = '1s';\nALTER TABLE t ADD COLUMN IF NOT EXISTS a int;\nCREATE INDEX u_id ON u (id);")],
            &Setup { in_transaction: true, ..Setup::default() },
        );
        let held: Vec<&Finding> = found.iter().filter(|f| f.rule == "lock-held-across-statements").collect();
        assert!(
            held.len() == 1 && held[0].message.contains("holds ACCESS EXCLUSIVE on t (taken at line 2)"),
            "{held:#?}"
        );
        // The table a no-op CREATE TABLE IF NOT EXISTS names is still the existing one.
        let found = rules_on(&[
            ("001.sql", base),
            ("002.sql", "CREATE TABLE IF NOT EXISTS t (id bigint);\nCREATE INDEX t_id ON t (id);"),
        ]);
        assert_eq!(of_rule(&found, "create-index-non-concurrently").len(), 1, "{found:?}");
        // Only the sub-commands that do nothing are left out.
        let found = rules_on(&[
            ("001.sql", base),
            ("002.sql", "ALTER TABLE t ADD COLUMN IF NOT EXISTS a int DEFAULT random(), ADD COLUMN IF NOT EXISTS r float8 DEFAULT random();"),
        ]);
        let volatile = of_rule(&found, "add-column-volatile-default");
        assert_eq!(volatile.len(), 1);
        assert!(volatile[0].2.contains("column r"), "{volatile:?}");
    }

    #[test]
    fn relations_created_in_the_migration_are_new_whatever_their_kind() {
        let base = "CREATE TABLE t (id bigint, a int);";
        for sql in [
            "CREATE MATERIALIZED VIEW mv AS SELECT id, a FROM t WITH NO DATA;\nCREATE UNIQUE INDEX ON mv (id);",
            "CREATE TABLE t2 AS SELECT * FROM t;\nCREATE INDEX ON t2 (a);",
            "SELECT id, a INTO t3 FROM t;\nCREATE INDEX ON t3 (a);",
            "CREATE TABLE p (id bigint, a int) PARTITION BY RANGE (a);\nCREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (10);\nCREATE INDEX ON p1 (id);",
            "CREATE TABLE child (b int) INHERITS (t);\nCREATE INDEX ON child (b);",
        ] {
            let found = rules_on(&[("001.sql", base), ("002.sql", sql)]);
            assert!(of_rule(&found, "create-index-non-concurrently").is_empty(), "{sql}: {found:?}");
        }
        // In a later migration they exist.
        let found = rules_on(&[
            ("001.sql", "CREATE TABLE t (id bigint, a int); CREATE MATERIALIZED VIEW mv AS SELECT id, a FROM t;"),
            ("002.sql", "SET lock_timeout = '1s';\nCREATE UNIQUE INDEX ON mv (id);\nREFRESH MATERIALIZED VIEW mv;"),
        ]);
        let index = of_rule(&found, "create-index-non-concurrently");
        assert!(index[0].2.contains("mv_id_idx on existing table mv"), "{index:?}");
    }

    #[test]
    fn refresh_without_concurrently_takes_access_exclusive() {
        let found = lint_with(
            &[
                ("001.sql", "CREATE TABLE t (id bigint); CREATE MATERIALIZED VIEW mv AS SELECT id FROM t;"),
                ("002.sql", "REFRESH MATERIALIZED VIEW mv;"),
                ("003.sql", "REFRESH MATERIALIZED VIEW CONCURRENTLY mv;"),
            ],
            &Setup::default(),
        );
        let timeouts: Vec<(&str, &str)> = found
            .iter()
            .filter(|f| f.rule == "missing-lock-timeout")
            .map(|f| (f.file.as_str(), f.message.as_str()))
            .collect();
        assert!(
            timeouts.iter().any(|(file, m)| *file == "002.sql" && m.contains("takes ACCESS EXCLUSIVE on mv")),
            "{timeouts:?}"
        );
        assert!(
            timeouts.iter().any(|(file, m)| *file == "003.sql" && m.contains("takes EXCLUSIVE on mv")),
            "{timeouts:?}"
        );
    }

    #[test]
    fn system_catalogs_and_tool_tables_are_never_existing_tables() {
        let found = rules_on(&[(
            "001.sql",
            "LOCK TABLE pg_catalog.pg_class IN ACCESS EXCLUSIVE MODE;\nALTER TABLE schema_migrations ADD COLUMN data_version int;\nTRUNCATE pg_statistic;",
        )]);
        assert!(found.iter().all(|(r, ..)| r != "missing-lock-timeout"), "{found:?}");
    }

    #[test]
    fn statements_inside_do_blocks_are_checked_and_marked() {
        let found = rules_on(&[
            ("001.sql", "CREATE TABLE t (id bigint, a int);"),
            (
                "002.sql",
                "DO $$\nBEGIN\n  IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 't_a') THEN\n    CREATE INDEX t_a ON t (a);\n  END IF;\nEND $$;",
            ),
        ]);
        let index = of_rule(&found, "create-index-non-concurrently");
        assert_eq!(index.len(), 1, "{found:?}");
        assert_eq!(index[0].1, 4, "the finding points at the statement inside the block");
        assert!(
            index[0].2.ends_with("(inside a DO block, conditionally: only when its IF/CASE branch is taken)"),
            "{}",
            index[0].2
        );
        assert!(of_rule(&found, "unparsed-statement").is_empty(), "fully checked: {found:?}");
    }
}

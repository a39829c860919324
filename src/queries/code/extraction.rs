//! What a host file yields: the SQL at its database calls with a map back to the host's lines
//! and columns, and what could not be read.

use super::signs::{Evidence, OtherDatabase};
use serde::{Deserialize, Serialize};

/// What one host file yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extraction {
    pub queries: Vec<EmbeddedQuery>,
    /// SQL at a known database call that cannot be read exactly.
    pub unreadable: Vec<Unreadable>,
    /// Query text that is deliberately not SQL (JPQL without `nativeQuery = true`).
    pub skipped: Vec<Skipped>,
    /// Statements for another database, not checked: a MyBatis statement's `databaseId`, or
    /// the whole file once [`Extraction::set_aside`] finds its code is another database's.
    pub other_database: Vec<OtherDatabase>,
    /// What the file shows of the database its SQL is for (the drivers it imports): decides,
    /// alone or with its Go package, whether the file is set aside.
    pub databases: Vec<Evidence>,
    /// Why the file is migration code, when its text shows it (a goose Go migration), or, once
    /// [`Extraction::set_aside_as_migration`] has set it aside, why it was.
    pub migration: Option<String>,
    /// The statements of migration code, not checked.
    pub migration_statements: usize,
    /// A Go file's package-level SQL constants and the names it passes that it does not define:
    /// answered by the other files of its package ([`super::go_package::resolve`]).
    pub go_package: Option<GoPackageSide>,
}

/// One SQL statement (or several, as the driver sends them) found in a host file. Serializable:
/// the code scan cache keeps a file's queries so that an unchanged file is not parsed again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedQuery {
    /// The SQL as the driver receives it, escapes resolved and compile-time concatenations
    /// joined; placeholders as the driver's style writes them (`$1`, `?`, `:name`, `#{x}`);
    /// a host-language interpolation that is a parameter (`${…}` in a Prisma tagged template)
    /// becomes `$n`.
    pub sql: String,
    /// The construct it came from, for findings: `sqlx query!`, `pgx QueryRow`,
    /// `MyBatis select byName`, `Spring @Query(nativeQuery = true)`.
    pub source: String,
    /// Where each byte of `sql` stands in the host file.
    pub map: SourceMap,
}

/// A 1-based line and column (in characters) in the host file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HostPosition {
    pub line: usize,
    pub column: usize,
}

impl Extraction {
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
            && self.unreadable.is_empty()
            && self.skipped.is_empty()
            && self.other_database.is_empty()
            && self.migration_statements == 0
    }

    /// Sets the file's SQL aside as `other`'s (its queries, and the SQL it could not read):
    /// counted, never checked.
    pub fn set_aside(&mut self, mut other: OtherDatabase) {
        other.statements = self.queries.len() + self.unreadable.len();
        self.queries.clear();
        self.unreadable.clear();
        if other.statements > 0 {
            self.other_database.push(other);
        }
    }

    /// Sets the file's SQL aside as migration code (`why`: "in a `migrations` directory").
    pub fn set_aside_as_migration(&mut self, why: String) {
        self.migration_statements = self.queries.len() + self.unreadable.len();
        self.queries.clear();
        self.unreadable.clear();
        self.migration = Some(why);
    }

    /// Counts one statement for `database` (shown by `shown_by`), set aside where it stands.
    pub fn count_other_database(&mut self, database: &str, shown_by: String) {
        match self.other_database.iter_mut().find(|o| o.shown_by == shown_by) {
            Some(other) => other.statements += 1,
            None => self.other_database.push(OtherDatabase { database: database.to_string(), shown_by, statements: 1 }),
        }
    }

    /// What the file's Go package adds to it: the queries its constants are in other files,
    /// the names of its calls the package cannot answer.
    pub fn add_package_queries(&mut self, queries: Vec<EmbeddedQuery>, unreadable: Vec<Unreadable>) {
        self.queries.extend(queries);
        self.queries.sort_by_key(|q| q.map.start());
        self.unreadable.extend(unreadable);
        self.unreadable.sort_by_key(|u| u.at);
    }

    /// Statements for another database.
    pub fn other_database_statements(&self) -> usize {
        self.other_database.iter().map(|o| o.statements).sum()
    }
}

/// The host positions of a query's text: a list of runs, each a range of the SQL whose bytes
/// stand one for one on the host's text from `start` on (a literal's text between escapes).
/// A byte outside every run (an escape's result, a joined `+`) takes the position of the run
/// before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceMap {
    pub(super) runs: Vec<Run>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Run {
    pub(super) sql_start: usize,
    pub(super) start: HostPosition,
}

impl SourceMap {
    /// Records that the SQL from byte `sql_start` on reads the host text from `start` on,
    /// newlines included (runs are pushed in increasing `sql_start`).
    pub fn push(&mut self, sql_start: usize, start: HostPosition) {
        debug_assert!(self.runs.last().is_none_or(|r| r.sql_start <= sql_start));
        self.runs.push(Run { sql_start, start });
    }

    /// The host position of the query's first byte.
    pub fn start(&self) -> HostPosition {
        self.runs.first().map_or(HostPosition { line: 1, column: 1 }, |run| run.start)
    }

    /// The host position of byte `offset` of `sql` (the text the map was built for).
    pub fn position(&self, sql: &str, offset: usize) -> HostPosition {
        let index = self.runs.partition_point(|r| r.sql_start <= offset);
        let Some(run) = index.checked_sub(1).map(|i| self.runs[i]) else {
            return HostPosition { line: 1, column: 1 };
        };
        let offset = offset.min(sql.len());
        let between = sql.get(run.sql_start..offset).unwrap_or("");
        match between.rfind('\n') {
            None => HostPosition { line: run.start.line, column: run.start.column + between.chars().count() },
            Some(newline) => HostPosition {
                line: run.start.line + between.matches('\n').count(),
                column: between[newline + 1..].chars().count() + 1,
            },
        }
    }
}

/// SQL at a known database call that is built at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub at: HostPosition,
    /// The call, as in [`EmbeddedQuery::source`].
    pub source: String,
    /// Why it cannot be read: "identifier interpolated with fmt.Sprintf".
    pub reason: String,
}

/// Query text that is not SQL, counted so nothing is dropped without a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub at: HostPosition,
    pub reason: String,
}

/// What a Go file offers its package and asks of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoPackageSide {
    /// The `package` clause's name (`target`, `target_test`).
    pub package: String,
    /// Package-level `const` and `var` names defined once in the file whose value is SQL text.
    pub constants: Vec<PackageConstant>,
    /// Names passed as the SQL of a database call that the file does not define.
    pub uses: Vec<PackageUse>,
}

impl GoPackageSide {
    pub fn is_empty(&self) -> bool {
        self.constants.is_empty() && self.uses.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageConstant {
    pub name: String,
    pub sql: String,
    pub map: SourceMap,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageUse {
    pub name: String,
    /// The call's argument.
    pub at: HostPosition,
    /// The call, as in [`EmbeddedQuery::source`] (`pgx Query`).
    pub source: String,
    /// The call takes only SQL (a `[queries] calls` wrapper): a name the package does not define
    /// is reported as unreadable. A method other libraries share (`Query`, `Get`) is read only
    /// when the name is an SQL constant.
    pub certain: bool,
}

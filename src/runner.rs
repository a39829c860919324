//! What every layer knows of the migration tool: which one runs the history (its identity, as
//! `[migrations] layout` names it) and the transactions it opens around statements. The tools
//! themselves are `schema::tools`, one file each.

use serde::Deserialize;

/// The migration tool that runs the history: it decides the order, how a file is split into
/// statements and the transactions around them (see `schema::tools`, one file per tool).
/// `auto` detects it from the directory's marker files and says why under `--explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    #[default]
    Auto,
    /// Plain `*.sql` files in file-name order, each statement on its own (psql-style runners).
    Flat,
    Flyway,
    /// diesel's `<version>_name/up.sql` folders (`folder` is the old name).
    #[serde(alias = "folder")]
    Diesel,
    GolangMigrate,
    Goose,
    Sqlx,
    Refinery,
    Prisma,
    Drizzle,
    Liquibase,
    Sqitch,
    Atlas,
    Dbmate,
}

/// A transaction the migration tool opens, or PostgreSQL opens for a multi-statement string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerTransaction {
    /// Statements with the same key share the transaction.
    pub key: usize,
    /// PostgreSQL's implicit transaction of a multi-statement query string, not the tool's
    /// BEGIN … COMMIT: a COMMIT inside the string starts a new one for the statements after it.
    pub implicit: bool,
    /// Completes "CREATE INDEX CONCURRENTLY …": "in a file the migration runner wraps in a transaction".
    pub phrase: String,
    /// For `--explain`.
    pub fact: String,
}

impl RunnerTransaction {
    /// The tool wraps the whole file in BEGIN … COMMIT.
    pub fn whole_file() -> RunnerTransaction {
        RunnerTransaction {
            key: 0,
            implicit: false,
            phrase: "in a file the migration runner wraps in a transaction".into(),
            fact: "the migration runner wraps the file in a transaction".into(),
        }
    }
}

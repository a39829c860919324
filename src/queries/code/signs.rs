//! What a file shows of the database its SQL is for, and the statements set aside as another
//! database's: the values [`super::database`] finds and an extraction carries.

use serde::{Deserialize, Serialize};

pub const POSTGRESQL: &str = "PostgreSQL";

/// One sign of the database a file's SQL is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// "PostgreSQL", "MySQL", "SQLite", or a MyBatis `databaseId` as written.
    pub database: String,
    /// What showed it, as a verb phrase: "imports modernc.org/sqlite", "uses sqlx's SqlitePool".
    pub shown_by: String,
}

impl Evidence {
    pub fn new(database: &str, shown_by: String) -> Evidence {
        Evidence { database: database.to_string(), shown_by }
    }
}

/// Statements of a file that are for another database, not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherDatabase {
    pub database: String,
    /// Why: "the package imports modernc.org/sqlite", "MyBatis databaseId=\"mysql\"".
    pub shown_by: String,
    pub statements: usize,
}

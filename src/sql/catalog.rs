//! PostgreSQL's built-in functions and their volatility, from the `pg_proc` catalogue of
//! PostgreSQL 15 (`builtin_functions.tsv`, generated with
//! `SELECT proname, <most volatile provolatile> FROM pg_proc WHERE pronamespace =
//! 'pg_catalog'::regnamespace AND prokind IN ('f', 'w') GROUP BY proname`). Overloads that
//! differ keep the most volatile one, so a verdict built on it never errs on the safe side.
//! A test compares it with a real server (`tests/postgres_names.rs`).
//!
//! The functions `CREATE EXTENSION` installs, likewise (`extension_functions.tsv`, read from a
//! PostgreSQL 15 server with the extensions Debian's `postgresql-15` and `postgresql-15-postgis-3`
//! ship created: `SELECT e.extname, p.proname, <most volatile provolatile> FROM pg_depend d JOIN
//! pg_extension e ON e.oid = d.refobjid JOIN pg_proc p ON p.oid = d.objid WHERE d.classid =
//! 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND
//! p.prokind IN ('f', 'w') GROUP BY 1, 2`), also compared with a real server.

use super::ddl::Volatility;
use std::sync::OnceLock;

/// SQL-standard value functions: written without parentheses, STABLE, not in `pg_proc` by
/// these names.
pub const SQL_VALUE_FUNCTIONS: &[&str] = &[
    "current_timestamp",
    "current_date",
    "current_time",
    "localtime",
    "localtimestamp",
    "current_user",
    "current_role",
    "session_user",
    "user",
    "current_catalog",
    "current_schema",
];

const TABLE: &str = include_str!("builtin_functions.tsv");
const EXTENSIONS: &str = include_str!("extension_functions.tsv");

fn code(code: &str) -> Volatility {
    match code {
        "v" => Volatility::Volatile,
        "s" => Volatility::Stable,
        _ => Volatility::Immutable,
    }
}

fn rows(text: &'static str) -> impl Iterator<Item = Vec<&'static str>> {
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(|line| line.split('\t').collect())
}

fn table() -> &'static [(&'static str, Volatility)] {
    static PARSED: OnceLock<Vec<(&'static str, Volatility)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        let mut rows: Vec<(&'static str, Volatility)> =
            rows(TABLE).filter_map(|r| Some((*r.first()?, code(r.get(1)?)))).collect();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        rows
    })
}

/// (extension, function, volatility), sorted.
fn extension_table() -> &'static [(&'static str, &'static str, Volatility)] {
    static PARSED: OnceLock<Vec<(&'static str, &'static str, Volatility)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        let mut rows: Vec<(&'static str, &'static str, Volatility)> =
            rows(EXTENSIONS).filter_map(|r| Some((*r.first()?, *r.get(1)?, code(r.get(2)?)))).collect();
        rows.sort();
        rows
    })
}

/// The volatility of the function `name` (unqualified) that `extension` installs, or `None` when
/// it installs none of that name (or Sluice does not know the extension).
pub fn extension_volatility(extension: &str, name: &str) -> Option<Volatility> {
    let rows = extension_table();
    rows.binary_search_by(|(e, n, _)| (*e, *n).cmp(&(extension, name))).ok().map(|i| rows[i].2)
}

/// Every function of every extension Sluice knows, as (extension, function, volatility).
pub fn extension_functions() -> impl Iterator<Item = (&'static str, &'static str, Volatility)> {
    extension_table().iter().copied()
}

/// The volatility of the built-in function `name` (unqualified, as PostgreSQL spells it), or
/// `None` when PostgreSQL has no built-in function of that name.
pub fn volatility(name: &str) -> Option<Volatility> {
    let rows = table();
    rows.binary_search_by(|(n, _)| (*n).cmp(name)).ok().map(|i| rows[i].1)
}

/// Every built-in function, for the test that compares the table with a real server.
pub fn all() -> impl Iterator<Item = (&'static str, Volatility)> {
    table().iter().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_the_functions_migrations_use_in_defaults() {
        assert_eq!(volatility("random"), Some(Volatility::Volatile));
        assert_eq!(volatility("gen_random_uuid"), Some(Volatility::Volatile));
        assert_eq!(volatility("clock_timestamp"), Some(Volatility::Volatile));
        assert_eq!(volatility("nextval"), Some(Volatility::Volatile));
        assert_eq!(volatility("now"), Some(Volatility::Stable));
        assert_eq!(volatility("lower"), Some(Volatility::Immutable));
        assert_eq!(volatility("random_smallint"), None);
    }

    #[test]
    fn knows_what_extensions_install() {
        assert_eq!(extension_volatility("ltree", "text2ltree"), Some(Volatility::Immutable));
        assert_eq!(extension_volatility("uuid-ossp", "uuid_generate_v4"), Some(Volatility::Volatile));
        assert_eq!(extension_volatility("postgis", "st_makepoint"), Some(Volatility::Immutable));
        assert_eq!(extension_volatility("ltree", "uuid_generate_v4"), None);
        for extension in
            ["pg_trgm", "pgcrypto", "ltree", "uuid-ossp", "citext", "btree_gist", "pg_stat_statements", "postgis"]
        {
            assert!(extension_functions().any(|(e, _, _)| e == extension), "{extension}");
        }
    }
}

//! PostgreSQL's built-in functions and their volatility, from the `pg_proc` catalogue of
//! PostgreSQL 15 (`builtin_functions.tsv`, generated with
//! `SELECT proname, <most volatile provolatile> FROM pg_proc WHERE pronamespace =
//! 'pg_catalog'::regnamespace AND prokind IN ('f', 'w') GROUP BY proname`). Overloads that
//! differ keep the most volatile one, so a verdict built on it never errs on the safe side.
//! A test compares it with a real server (`tests/postgres_names.rs`).

use super::ddl::Volatility;
use std::sync::OnceLock;

const TABLE: &str = include_str!("builtin_functions.tsv");

fn table() -> &'static [(&'static str, Volatility)] {
    static PARSED: OnceLock<Vec<(&'static str, Volatility)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        let mut rows: Vec<(&'static str, Volatility)> = TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|line| {
                let (name, code) = line.split_once('\t')?;
                let volatility = match code {
                    "v" => Volatility::Volatile,
                    "s" => Volatility::Stable,
                    _ => Volatility::Immutable,
                };
                Some((name, volatility))
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(b.0));
        rows
    })
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
}

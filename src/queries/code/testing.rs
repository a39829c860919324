//! Assertions the extractors' tests share: a query found with its exact text, source and start,
//! and a source map that lands every byte copied from the host on that very character.

use super::extraction::{EmbeddedQuery, Extraction, HostPosition};

/// The query of `source` whose SQL is `sql`: asserts it exists, starts at `(line, column)` of
/// `host` and maps consistently (see [`assert_map_lands_on_host`]).
#[track_caller]
pub fn assert_query<'e>(
    found: &'e Extraction,
    host: &str,
    source: &str,
    sql: &str,
    (line, column): (usize, usize),
) -> &'e EmbeddedQuery {
    let query = found.queries.iter().find(|q| q.sql == sql).unwrap_or_else(|| {
        panic!("no query {sql:?}; found:\n{:#?}", found.queries.iter().map(|q| (&q.source, &q.sql)).collect::<Vec<_>>())
    });
    assert_eq!(query.source, source, "the source of {sql:?}");
    assert_eq!(query.map.position(&query.sql, 0), HostPosition { line, column }, "the start of {sql:?}");
    assert_map_lands_on_host(query, host);
    query
}

/// Every character of the query's SQL maps to a host position holding that same character,
/// except those that stand for other host text: an escape's value (the host has a backslash
/// there, or `&` for an XML entity), a `$n` parameter standing for `${…}`, a blank or line break
/// of an expansion, and the joints of a concatenation; a keyword a MyBatis element adds (`WHERE`
/// for `<where`) lands on the element's name, in any case.
#[track_caller]
pub fn assert_map_lands_on_host(query: &EmbeddedQuery, host: &str) {
    let lines: Vec<Vec<char>> = host.split('\n').map(|l| l.chars().collect()).collect();
    for (offset, expected) in query.sql.char_indices() {
        let at = query.map.position(&query.sql, offset);
        let actual = lines.get(at.line - 1).and_then(|l| l.get(at.column - 1)).copied().unwrap_or('\n');
        let stands_in =
            matches!(actual, '\\' | '&' | '$' | '#' | '{' | '<') || expected.is_whitespace() || expected == '$';
        assert!(
            actual.eq_ignore_ascii_case(&expected) || stands_in,
            "byte {offset} of {:?} ({expected:?}) maps to {}:{} which holds {actual:?}",
            query.sql,
            at.line,
            at.column
        );
    }
}

/// The unreadable notes as (line, reason).
pub fn unreadable_lines(found: &Extraction) -> Vec<(usize, String)> {
    found.unreadable.iter().map(|u| (u.at.line, u.reason.clone())).collect()
}

//! sqlx's offline data: the exact text of every checked macro query, as `cargo sqlx prepare`
//! writes it — one `.sqlx/query-<hash>.json` per query (sqlx 0.7 on: `db_name`, `query`,
//! `describe`, `hash`) or one `sqlx-data.json` keyed by hash (before: `db`, then
//! `"<hash>": { "query", "describe" }`). Data for another database is counted, not checked.
//!
//! The text is positioned on the JSON string it is read from, escapes included.

use super::extraction::Extraction;
use super::syntax::{Host, SqlText};
use crate::error::{Error, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Deserialize)]
struct QueryFile<'a> {
    db_name: Option<String>,
    #[serde(borrow)]
    query: &'a RawValue,
}

#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    query: &'a RawValue,
}

pub fn extract(path: &Path, text: &str) -> Result<Extraction> {
    let invalid = |e: serde_json::Error| Error::invalid(path, Some(e.line()), format!("not sqlx offline data: {e}"));
    let host = Host::new(text);
    let mut out = Extraction::default();
    let add = |database: Option<&str>, raw: &RawValue, out: &mut Extraction| -> Result<()> {
        let at = offset_in(text, raw.get());
        if let Some(database) = database.filter(|d| !d.eq_ignore_ascii_case("PostgreSQL")) {
            out.count_other_database(database, format!("sqlx offline data for {database}"));
            return Ok(());
        }
        let value: String = serde_json::from_str(raw.get()).map_err(|_| {
            Error::invalid(path, Some(host.position(at).line), "not sqlx offline data: `query` is not a string")
        })?;
        let text = json_string(&host, at, raw.get());
        let text = if text.sql == value {
            text
        } else {
            let mut exact = SqlText::default();
            exact.stand_in(&host, at, &value);
            exact
        };
        out.queries.push(text.into_query("sqlx offline data".to_string()));
        Ok(())
    };
    if path.file_name().is_some_and(|n| n == "sqlx-data.json") {
        let entries: BTreeMap<&str, &RawValue> = serde_json::from_str(text).map_err(invalid)?;
        let database: Option<String> = match entries.get("db") {
            Some(db) => serde_json::from_str(db.get()).map_err(invalid)?,
            None => None,
        };
        let mut found: Vec<&RawValue> = Vec::new();
        for (key, value) in &entries {
            if *key != "db" {
                let entry: Entry = serde_json::from_str(value.get()).map_err(invalid)?;
                found.push(entry.query);
            }
        }
        found.sort_by_key(|raw| offset_in(text, raw.get()));
        for raw in found {
            add(database.as_deref(), raw, &mut out)?;
        }
    } else {
        let file: QueryFile = serde_json::from_str(text).map_err(invalid)?;
        add(file.db_name.as_deref(), file.query, &mut out)?;
    }
    Ok(out)
}

/// Where `part`, a slice of `text`, starts in it.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize).min(text.len())
}

/// A JSON string's characters with their host positions; `raw` (with its quotes) starts at
/// host byte `at`.
fn json_string(host: &Host, at: usize, raw: &str) -> SqlText {
    let mut text = SqlText::default();
    let body = &raw[1..raw.len().saturating_sub(1).max(1)];
    let mut copied = 0;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            continue;
        }
        text.verbatim(host, at + 1 + copied, at + 1 + i);
        let decoded = match chars.next().map(|(_, e)| e) {
            Some('n') => Some('\n'),
            Some('t') => Some('\t'),
            Some('r') => Some('\r'),
            Some('b') => Some('\u{8}'),
            Some('f') => Some('\u{c}'),
            Some('u') => {
                let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)
            }
            other => other,
        };
        // A surrogate pair (`\ud83d\ude00`) is left to the exact fallback above.
        text.stand_in(host, at + 1 + i, decoded.unwrap_or('\u{fffd}').encode_utf8(&mut [0; 4]));
        copied = chars.clone().next().map_or(body.len(), |(next, _)| next);
    }
    text.verbatim(host, at + 1 + copied, at + 1 + body.len());
    text
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_query;
    use super::extract;
    use std::path::Path;

    const QUERY_FILE: &str =
        include_str!("../../../fixtures/queries/sqlx_offline/.sqlx/query-5f3c9a1e0b7d4c2a8e6f1b3d9c7a5e2f4b6d8a0c1e3f5a7b9d2c4e6f8a0b1c3d.json");
    const DATA_FILE: &str = include_str!("../../../fixtures/queries/sqlx_offline/sqlx-data.json");

    #[test]
    fn the_exact_text_of_a_query_file_with_its_escapes() {
        let path = Path::new(".sqlx/query-5f3c.json");
        let found = extract(path, QUERY_FILE).unwrap();
        let sql = "SELECT id, name\n  FROM users\n WHERE \"email\" = $1";
        let query = assert_query(&found, QUERY_FILE, "sqlx offline data", sql, (3, 13));
        // Past the escaped quotes and line breaks, `$1` is still where the file has it.
        let at = query.map.position(&query.sql, query.sql.find("$1").unwrap());
        assert_eq!((at.line, at.column), (3, 63));
    }

    #[test]
    fn every_entry_of_the_older_single_file_and_errors_name_the_line() {
        let found = extract(Path::new("sqlx-data.json"), DATA_FILE).unwrap();
        assert_query(&found, DATA_FILE, "sqlx offline data", "DELETE FROM sessions WHERE user_id = $1", (4, 15));
        assert_query(&found, DATA_FILE, "sqlx offline data", "SELECT count(*) FROM orders", (12, 15));
        assert_eq!(found.queries.len(), 2);
        let error = extract(Path::new(".sqlx/query-1.json"), "{\n  \"query\": 3\n}").unwrap_err().to_string();
        assert!(error.starts_with(".sqlx/query-1.json:2: not sqlx offline data"), "{error}");
        let mysql = extract(Path::new(".sqlx/query-2.json"), r#"{"db_name": "MySQL", "query": "SELECT 1"}"#).unwrap();
        assert_eq!((mysql.queries.len(), mysql.other_database_statements()), (0, 1));
        assert_eq!(mysql.other_database[0].database, "MySQL");
    }
}

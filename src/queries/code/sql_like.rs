//! Whether a string handed to a method named like a database call is SQL.
//!
//! `Query`, `Exec`, `Get`, `Select`, `execute`, `query`, `raw` are common method names: gin's
//! `c.Query("page")` reads a URL parameter, `template.Execute` renders a page, `cache.Get(key)`
//! reads a cache, reqwest's `.query(&params)` builds a URL. Receivers' types are not known to a
//! syntax tree, so for those calls the text itself decides: it is SQL when, after blanks, SQL
//! comments and opening parentheses, it starts with a keyword that begins a PostgreSQL statement
//! followed by a word boundary, and
//!
//! - `SELECT` is followed by something (`SELECT 1` is SQL, a lone `select` is a parameter name),
//! - `INSERT` has an `INTO`, `UPDATE` a `SET`, `DELETE` a `FROM` (PostgreSQL requires each), and
//!   `WITH` one of `SELECT`, `INSERT`, `UPDATE`, `DELETE`, `MERGE` (so the English
//!   "Update the record" or "Delete item" is not SQL),
//! - any other statement keyword (`CREATE`, `ALTER`, `COPY`, `CALL`, `SET`, `LOCK`, …) is
//!   followed by another word, except the transaction-control words that stand alone
//!   (`BEGIN`, `COMMIT`, `ROLLBACK`, …) when written in capitals.
//!
//! Calls that can only take SQL (sqlx's `query!`, Spring's `@Query(nativeQuery = true)`, Prisma's
//! `$queryRaw`, JPA's `createNativeQuery`) skip this test. The same test decides whether a string
//! built at run time at such a call is reported as unreadable SQL: only when a literal part of it
//! looks like SQL (a `fmt.Sprintf` whose format starts `SELECT … FROM %s`), so an unknown
//! argument to an unrelated `Get` raises nothing.

/// Whether `text` reads as an SQL statement (see the module's documentation).
pub fn looks_like_sql(text: &str) -> bool {
    let rest = skip_blanks_and_comments(text);
    let word_end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
    let (word, after) = rest.split_at(word_end);
    if word.is_empty() || after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return false;
    }
    let upper = word.to_ascii_uppercase();
    let words = || after.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
    let has = |keyword: &str| words().any(|w| w.eq_ignore_ascii_case(keyword));
    let more = || !skip_blanks_and_comments(after).is_empty();
    match upper.as_str() {
        "SELECT" | "VALUES" | "TABLE" => more(),
        "INSERT" => has("INTO"),
        "UPDATE" => has("SET"),
        "DELETE" => has("FROM"),
        "WITH" => ["SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"].iter().any(|k| has(k)),
        "MERGE" => has("INTO") && has("USING"),
        "BEGIN" | "COMMIT" | "ROLLBACK" | "ABORT" | "END" | "START" | "SAVEPOINT" | "RELEASE" | "CHECKPOINT"
        | "VACUUM" | "ANALYZE" | "DISCARD" | "RESET" | "LISTEN" | "UNLISTEN" | "NOTIFY" => more() || word == upper,
        "CREATE" | "ALTER" | "DROP" | "TRUNCATE" | "COPY" | "CALL" | "DO" | "SET" | "SHOW" | "EXPLAIN" | "LOCK"
        | "GRANT" | "REVOKE" | "REFRESH" | "DECLARE" | "FETCH" | "MOVE" | "CLOSE" | "PREPARE" | "EXECUTE"
        | "DEALLOCATE" | "COMMENT" | "REINDEX" | "CLUSTER" | "IMPORT" | "SECURITY" | "REASSIGN" | "LOAD" => more(),
        _ => false,
    }
}

fn skip_blanks_and_comments(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(line) = trimmed.strip_prefix("--") {
            text = line.find('\n').map_or("", |end| &line[end..]);
        } else if let Some(block) = trimmed.strip_prefix("/*") {
            text = block.find("*/").map_or("", |end| &block[end + 2..]);
        } else {
            return trimmed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::looks_like_sql;

    #[test]
    fn statements_are_sql() {
        for sql in [
            "SELECT 1",
            "select id from users where id = $1",
            "  \n\tSELECT *\nFROM t",
            "(SELECT 1) UNION (SELECT 2)",
            "-- the newest first\nSELECT * FROM t ORDER BY id DESC",
            "/* hint */ DELETE FROM t WHERE id = ?",
            "INSERT INTO t (a) VALUES (:a)",
            "UPDATE t SET a = #{a}",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "COMMIT",
            "CREATE INDEX CONCURRENTLY i ON t (a)",
            "SET LOCAL statement_timeout = '1s'",
        ] {
            assert!(looks_like_sql(sql), "{sql:?}");
        }
    }

    #[test]
    fn words_and_parameter_names_are_not() {
        for text in [
            "",
            "page",
            "select",
            "selected",
            "Update the record",
            "Delete item",
            "insert_mode",
            "commit",
            "with love",
            "users",
            "https://example.com/select?x=1",
            "SELECTION",
            "set",
        ] {
            assert!(!looks_like_sql(text), "{text:?}");
        }
    }
}

//! Python: DB-API `execute` / `executemany` (psycopg, psycopg2, sqlite3 …), asyncpg's `fetch`,
//! `fetchrow`, `fetchval`, `execute`, `executemany`, SQLAlchemy's `text()` and
//! `exec_driver_sql`, and psycopg's `sql.SQL("…")` as the string it wraps.
//!
//! `text()` (in a file that imports SQLAlchemy; it also makes fragments such as a column
//! default) and the methods count when their text looks like SQL ([`super::sql_like`]). Strings
//! are read from literals (triple-quoted, raw, byte, with their escapes), implicit concatenation (`"a" "b"`), `+`, and names assigned once
//! in their scope. f-strings with replacement fields, `%`-formatting, `str.format` and
//! `sql.SQL(…).format(…)` are text built at run time: unreadable.

use super::extraction::Extraction;
use super::project_calls::ProjectCalls;
use super::syntax::{
    arguments, c_like_escape, concat, decode_body, descendants, parse, record, resolve_name, scope_of, syntax_errors,
    walk, Certainty, Escape, Eval, Host, LazyNames, Names, SqlText,
};
use tree_sitter::Node;

const STRINGS: [&str; 1] = ["string"];

fn is_scope(kind: &str) -> bool {
    matches!(kind, "module" | "function_definition" | "class_definition" | "lambda")
}

pub fn extract(text: &str, calls: &ProjectCalls) -> Extraction {
    let mut out = Extraction::default();
    if !["execute", "fetch", "text("].iter().any(|t| text.contains(t)) && !calls.may_be_called_in(text) {
        return out;
    }
    let tree = parse(&tree_sitter_python::LANGUAGE.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let imports = |module: &str| text.contains(&format!("import {module}")) || text.contains(&format!("from {module}"));
    let file = PythonFile {
        host: &host,
        names: LazyNames::new(|| names(root, &host)),
        asyncpg: imports("asyncpg") && !DB_API.iter().any(|m| imports(m)),
        sqlalchemy: imports("sqlalchemy"),
        calls,
    };
    walk(root, |node| {
        if node.kind() == "call" {
            file.call(node, &mut out);
        }
    });
    syntax_errors(root, &host, "Python", &STRINGS, &mut out);
    out
}

struct PythonFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    /// asyncpg is imported and no DB-API driver is: `execute` is asyncpg's.
    asyncpg: bool,
    sqlalchemy: bool,
    calls: &'a ProjectCalls,
}

const DB_API: [&str; 8] = ["psycopg", "sqlite3", "pymysql", "MySQLdb", "aiopg", "aiosqlite", "pg8000", "cx_Oracle"];

impl<'t> PythonFile<'_, 't> {
    fn call(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(function) = node.child_by_field_name("function") else { return };
        let name = match function.kind() {
            "attribute" => function.child_by_field_name("attribute").map_or("", |a| self.host.text_of(a)),
            "identifier" => self.host.text_of(function),
            _ => return,
        };
        let configured = self.calls.may_match(name).then(|| self.calls.matching(self.host.text_of(function))).flatten();
        let (source, certainty) = match name {
            _ if configured.is_some() => {
                (format!("{} (sluice.toml calls)", configured.unwrap_or(name)), Certainty::Sql)
            }
            // SQLAlchemy's `text()` also makes fragments (`server_default=text("now()")`).
            "text" if self.sqlalchemy && self.is_sqlalchemy_text(function) => {
                ("SQLAlchemy text()".to_string(), Certainty::IfSqlLike)
            }
            "execute" | "executemany" | "fetch" | "fetchrow" | "fetchval" if function.kind() == "attribute" => {
                let library = if self.asyncpg || name.starts_with("fetch") { "asyncpg" } else { "DB-API" };
                (format!("{library} {name}"), Certainty::IfSqlLike)
            }
            "exec_driver_sql" => ("SQLAlchemy exec_driver_sql".to_string(), Certainty::IfSqlLike),
            _ => return,
        };
        let Some(list) = node.child_by_field_name("arguments") else { return };
        let Some(first) = arguments(list).into_iter().find(|a| a.kind() != "keyword_argument") else { return };
        record(out, self.host, source, self.eval(first, 0), certainty);
    }

    /// `text(…)`, `sa.text(…)`, `sqlalchemy.text(…)`, `sqlalchemy.sql.text(…)`.
    fn is_sqlalchemy_text(&self, function: Node) -> bool {
        function.kind() == "identifier"
            || function.child_by_field_name("object").is_some_and(|o| {
                matches!(self.host.text_of(o), "sa" | "sqlalchemy" | "sql" | "sqlalchemy.sql" | "expression")
            })
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "string" => self.string(node),
            "concatenated_string" => concat(arguments(node).into_iter().map(|s| self.eval(s, depth + 1))),
            "binary_operator" => {
                let operator = node.child_by_field_name("operator").map_or("", |o| o.kind());
                let operand =
                    |field| node.child_by_field_name(field).map_or(Eval::NotText, |n| self.eval(n, depth + 1));
                match operator {
                    "+" => concat([operand("left"), operand("right")]),
                    "%" => Eval::runtime(
                        node.start_byte(),
                        "built at run time with %-formatting",
                        operand("left").sql_like(),
                    ),
                    _ => Eval::NotText,
                }
            }
            "parenthesized_expression" => arguments(node).first().map_or(Eval::NotText, |n| self.eval(*n, depth + 1)),
            "identifier" => {
                let name = self.host.text_of(node);
                resolve_name(self.names.get(), node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            "call" => {
                let function = node.child_by_field_name("function");
                let method = function
                    .map(|f| f.child_by_field_name("attribute").unwrap_or(f))
                    .map_or("", |m| self.host.text_of(m));
                let receiver = function.and_then(|f| f.child_by_field_name("object"));
                let first = node.child_by_field_name("arguments").and_then(|a| arguments(a).first().copied());
                match method {
                    // psycopg's `sql.SQL("…")` is the text it wraps; `text()` is a query of its own.
                    "SQL" => first.map_or(Eval::NotText, |f| self.eval(f, depth + 1)),
                    "text" if self.sqlalchemy => Eval::NotText,
                    "format" => {
                        let sql_like = receiver.is_some_and(|r| self.eval(r, depth + 1).sql_like());
                        Eval::runtime(node.start_byte(), "built at run time with format()", sql_like)
                    }
                    _ => Eval::runtime(node.start_byte(), format!("built at run time with {method}()"), false),
                }
            }
            _ => Eval::NotText,
        }
    }

    fn string(&self, node: Node<'t>) -> Eval {
        let parts = arguments(node);
        let (Some(start), Some(end)) = (parts.first(), parts.last()) else { return Eval::NotText };
        let prefix = self.host.text_of(*start).trim_end_matches(['"', '\'']).to_ascii_lowercase();
        let mut text = SqlText::default();
        if let Some(field) = descendants(node, "interpolation").first() {
            let mut before = SqlText::default();
            decode_body(self.host, &mut before, (start.end_byte(), field.start_byte()), &[], |_| Escape::Unknown);
            return Eval::runtime(
                field.start_byte(),
                "text interpolated in an f-string",
                super::looks_like_sql(&before.sql),
            );
        }
        let escapes = if prefix.contains('r') {
            descendants(node, "escape_interpolation")
        } else {
            let mut all = descendants(node, "escape_sequence");
            all.extend(descendants(node, "escape_interpolation"));
            all.sort_by_key(|n| n.start_byte());
            all
        };
        decode_body(self.host, &mut text, (start.end_byte(), end.start_byte()), &escapes, python_escape);
        Eval::Text(text)
    }
}

/// Python's escapes: the C-like ones, octal (`\101`), and an f-string's doubled braces.
fn python_escape(escape: &str) -> Escape {
    if escape == "{{" || escape == "}}" {
        return Escape::Char(escape.as_bytes()[0] as char);
    }
    let body = &escape[1..];
    if !body.is_empty() && body.len() <= 3 && body.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return u32::from_str_radix(body, 8).ok().and_then(char::from_u32).map_or(Escape::Unknown, Escape::Char);
    }
    c_like_escape(escape)
}

/// Assignments to a name (`x = …`, `x: str = …`); augmented ones are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| {
        let defines = match node.kind() {
            "assignment" => true,
            "augmented_assignment" => false,
            _ => return,
        };
        let (Some(left), Some(scope)) = (node.child_by_field_name("left"), scope_of(node, is_scope)) else { return };
        if left.kind() != "identifier" {
            return;
        }
        match node.child_by_field_name("right").filter(|_| defines) {
            Some(value) => names.define(scope, host.text_of(left), value),
            None => names.change(scope, host.text_of(left), left),
        }
    });
    names
}

#[cfg(test)]
mod tests {
    use super::super::extraction::Extraction;
    use super::super::testing::{assert_query, unreadable_lines};
    use super::ProjectCalls;

    fn extract(text: &str) -> Extraction {
        super::extract(text, &ProjectCalls::default())
    }

    const FIXTURE: &str = include_str!("../../../fixtures/queries/python/repository.py");

    #[test]
    fn a_name_reused_in_straight_line_code_reads_each_value_and_a_branch_does_not() {
        let text = "import asyncpg\nasync def f(con, a):\n    query = \"DELETE FROM a WHERE id = $1\"\n    await con.execute(query, a)\n    query = \"DELETE FROM b WHERE id = $1\"\n    await con.execute(query, a)\n    if a:\n        query = \"SELECT 1 FROM c\"\n    await con.fetch(query)\n";
        let found = extract(text);
        assert_query(&found, text, "asyncpg execute", "DELETE FROM a WHERE id = $1", (3, 14));
        assert_query(&found, text, "asyncpg execute", "DELETE FROM b WHERE id = $1", (5, 14));
        assert_eq!(found.queries.len(), 2);
        assert_eq!(
            unreadable_lines(&found),
            vec![(9, "`query` is set in more than one place (lines 3, 5, 8)".to_string())]
        );
    }

    #[test]
    fn db_api_asyncpg_and_sqlalchemy_text() {
        let found = extract(FIXTURE);
        assert_query(&found, FIXTURE, "DB-API execute", "SELECT id, email FROM users WHERE id = %s", (5, 15));
        let query = assert_query(
            &found,
            FIXTURE,
            "DB-API executemany",
            "INSERT INTO events (user_id, kind)\n        VALUES (%(user_id)s, %(kind)s)\n        ON CONFLICT DO NOTHING",
            (16, 16),
        );
        assert_eq!(query.map.position(&query.sql, query.sql.find("ON CONFLICT").unwrap()).line, 18);
        assert_query(
            &found,
            FIXTURE,
            "SQLAlchemy text()",
            "UPDATE users SET last_seen = now() WHERE id = :id",
            (24, 27),
        );
        assert_query(
            &found,
            FIXTURE,
            "asyncpg fetchval",
            "SELECT count(*) FROM \"orders\"\tWHERE user_id = $1",
            (30, 14),
        );
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(
            unreadable_lines(&found),
            vec![
                (37, "text interpolated in an f-string".to_string()),
                (41, "built at run time with %-formatting".to_string()),
            ]
        );
    }

    #[test]
    fn a_project_wrapper_named_in_calls_is_read() {
        let text = "from app import store\n\ndef find(email):\n    return store.run_sql(\"SELECT id FROM riders WHERE lower(email) = %s\", email)\n\ndef other():\n    cache.run_sql(\"not sql\")\n";
        let calls = ProjectCalls::new(["store.run_sql".to_string()]);
        let found = super::extract(text, &calls);
        assert_query(
            &found,
            text,
            "store.run_sql (sluice.toml calls)",
            "SELECT id FROM riders WHERE lower(email) = %s",
            (4, 27),
        );
        assert_eq!(found.queries.len(), 1, "{:#?}", found.queries);
        assert!(extract(text).queries.is_empty(), "not a known call without the setting");
    }
}

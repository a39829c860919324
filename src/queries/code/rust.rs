//! Rust: sqlx's `query!`, `query_as!`, `query_scalar!` (and their `_unchecked` forms), sqlx's
//! `query`, `query_as`, `query_scalar` functions, diesel's `sql_query`, and the methods
//! tokio-postgres's client has for SQL text (`query`, `query_one`, `query_opt`, `query_raw`,
//! `execute`, `prepare`, `prepare_typed`, `batch_execute`, `simple_query`).
//!
//! The macros and the functions called through a `sqlx::` or `diesel::` path take only SQL; the
//! unqualified functions and the methods count when their text looks like SQL
//! ([`super::sql_like`]). The SQL argument is read when it is a string literal (raw or not, with
//! its escapes and line continuations), a `+` of them (which the sqlx macros accept), a
//! `concat!`, or a `const`, `static` or `let` with a single definition in the file. `format!`
//! is reported as unreadable.

use super::extraction::Extraction;
use super::project_calls::ProjectCalls;
use super::syntax::{
    arguments, c_like_escape, concat, decode_body, descendants, is_plus, parse, plus, record, resolve_name, scope_of,
    syntax_errors, walk, Certainty, Escape, Eval, Host, LazyNames, Names, SqlText,
};
use tree_sitter::Node;

const MACROS: [&str; 6] =
    ["query", "query_as", "query_scalar", "query_unchecked", "query_as_unchecked", "query_scalar_unchecked"];
const FUNCTIONS: [&str; 6] = ["query", "query_as", "query_scalar", "query_with", "query_as_with", "sql_query"];
const METHODS: [&str; 9] = [
    "query",
    "query_one",
    "query_opt",
    "query_raw",
    "execute",
    "prepare",
    "prepare_typed",
    "batch_execute",
    "simple_query",
];
const STRINGS: [&str; 2] = ["string_literal", "raw_string_literal"];

fn is_scope(kind: &str) -> bool {
    matches!(kind, "source_file" | "mod_item" | "function_item" | "closure_expression" | "impl_item")
}

pub fn extract(text: &str, calls: &ProjectCalls) -> Extraction {
    let mut out = Extraction::default();
    if !["query", "execute", "prepare"].iter().any(|m| text.contains(m)) && !calls.may_be_called_in(text) {
        return out;
    }
    let tree = parse(&tree_sitter_rust::LANGUAGE.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let client =
        if text.contains("tokio_postgres") || text.contains("deadpool_postgres") || text.contains("bb8_postgres") {
            "tokio-postgres"
        } else if text.contains("sqlx") {
            "sqlx"
        } else {
            "Rust"
        };
    let file = RustFile { host: &host, names: LazyNames::new(|| names(root, &host)), client, calls };
    walk(root, |node| match node.kind() {
        "macro_invocation" => file.macro_call(node, &mut out),
        "call_expression" => file.call(node, &mut out),
        _ => {}
    });
    syntax_errors(root, &host, "Rust", &STRINGS, &mut out);
    out
}

struct RustFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    /// Whose methods `query`, `execute` … are, by what the file names.
    client: &'static str,
    calls: &'a ProjectCalls,
}

impl<'t> RustFile<'_, 't> {
    fn macro_call(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(name) = node.child_by_field_name("macro").map(|m| last_segment(self.host.text_of(m))) else { return };
        if !MACROS.contains(&name) {
            self.calls_in_tokens(node, out);
            return;
        }
        let Some(tokens) = token_tree(node) else { return };
        let groups = split_commas(tokens);
        let index = usize::from(name.starts_with("query_as"));
        let Some(group) = groups.get(index) else { return };
        let value = self.eval_tokens(group);
        record(out, self.host, format!("sqlx {name}!"), value, Certainty::Sql);
    }

    fn call(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(function) = node.child_by_field_name("function") else { return };
        let Some(first) = node.child_by_field_name("arguments").and_then(|a| arguments(a).first().copied()) else {
            return;
        };
        // `db.run_sql(…)`, `store::fetch_rows(…)`: the callee as written, `::` read as `.`.
        let written = self.host.text_of(function).split("::<").next().unwrap_or("").replace("::", ".");
        let name = written.rsplit('.').next().unwrap_or("");
        if let Some(call) = self.calls.may_match(name).then(|| self.calls.matching(&written)).flatten() {
            record(out, self.host, format!("{call} (sluice.toml calls)"), self.eval(first, 0), Certainty::Sql);
            return;
        }
        let (source, certainty) = match function.kind() {
            "field_expression" => {
                let Some(method) = function.child_by_field_name("field").map(|f| self.host.text_of(f)) else { return };
                if !METHODS.contains(&method) {
                    return;
                }
                (format!("{} {method}", self.client), Certainty::IfSqlLike)
            }
            "identifier" | "scoped_identifier" | "generic_function" => {
                let path = self.host.text_of(function);
                let path = path.split("::<").next().unwrap_or(path);
                let name = last_segment(path);
                if !FUNCTIONS.contains(&name) {
                    return;
                }
                let library = if name == "sql_query" { "diesel" } else { "sqlx" };
                let qualified = path.starts_with("sqlx::") || path.starts_with("diesel::");
                (format!("{library} {name}"), if qualified { Certainty::Sql } else { Certainty::IfSqlLike })
            }
            _ => return,
        };
        record(out, self.host, source, self.eval(first, 0), certainty);
    }

    /// Calls inside another macro's tokens (`assert_ok!(diesel::sql_query("…").execute(&mut c))`,
    /// `tokio::join!(client.query("…", &[]))`), which the grammar leaves unparsed: a function or
    /// method name followed by a token tree whose first argument is string literals.
    fn calls_in_tokens(&self, node: Node<'t>, out: &mut Extraction) {
        for tree in descendants(node, "token_tree") {
            let mut cursor = tree.walk();
            let tokens: Vec<Node> = tree.children(&mut cursor).collect();
            for (i, token) in tokens.iter().enumerate() {
                let Some(arguments) = tokens.get(i + 1).filter(|t| t.kind() == "token_tree") else { continue };
                let name = self.host.text_of(*token);
                let before = |back: usize| i.checked_sub(back).map(|j| self.host.text_of(tokens[j]));
                let (source, certainty) = if FUNCTIONS.contains(&name) && before(1) == Some("::") {
                    let library = if name == "sql_query" { "diesel" } else { "sqlx" };
                    let qualified = matches!(before(2), Some("sqlx" | "diesel"));
                    (format!("{library} {name}"), if qualified { Certainty::Sql } else { Certainty::IfSqlLike })
                } else if METHODS.contains(&name) && before(1) == Some(".") {
                    (format!("{} {name}", self.client), Certainty::IfSqlLike)
                } else {
                    continue;
                };
                let Some(first) = split_commas(*arguments).into_iter().next() else { continue };
                if first.first().is_some_and(|t| STRINGS.contains(&t.kind())) {
                    record(out, self.host, source, self.eval_tokens(&first), certainty);
                }
            }
        }
    }

    /// A macro argument: string literals joined by `+`.
    fn eval_tokens(&self, tokens: &[Node<'t>]) -> Eval {
        let operands = tokens.iter().filter(|t| t.kind() != "+");
        if tokens.iter().step_by(2).any(|t| !STRINGS.contains(&t.kind())) || tokens.is_empty() {
            let at = tokens.first().map_or(0, |t| t.start_byte());
            return Eval::runtime(at, "the SQL of the macro is not a string literal", false);
        }
        concat(operands.map(|t| self.eval(*t, 0)))
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "string_literal" => {
                let mut text = SqlText::default();
                let (Some(open), Some(close)) =
                    (node.child(0), node.child(node.child_count().saturating_sub(1) as u32))
                else {
                    return Eval::NotText;
                };
                let escapes = descendants(node, "escape_sequence");
                decode_body(self.host, &mut text, (open.end_byte(), close.start_byte()), &escapes, rust_escape);
                Eval::Text(text)
            }
            "raw_string_literal" => {
                let mut text = SqlText::default();
                if let Some(content) = descendants(node, "string_content").first() {
                    text.verbatim(self.host, content.start_byte(), content.end_byte());
                }
                Eval::Text(text)
            }
            "identifier" => {
                let name = self.host.text_of(node);
                resolve_name(self.names.get(), node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            "reference_expression" | "parenthesized_expression" => node
                .child_by_field_name("value")
                .or_else(|| arguments(node).first().copied())
                .map_or(Eval::NotText, |inner| self.eval(inner, depth + 1)),
            "binary_expression" if is_plus(node) => plus(node, |n| self.eval(n, depth + 1)),
            // `"…".to_string()`, `q.as_str()`: the same text.
            "call_expression" => {
                let function = node.child_by_field_name("function");
                let method = function.and_then(|f| f.child_by_field_name("field")).map(|f| self.host.text_of(f));
                match (method, function.and_then(|f| f.child_by_field_name("value"))) {
                    (Some("as_str" | "to_string" | "to_owned" | "into" | "as_ref" | "clone"), Some(receiver)) => {
                        self.eval(receiver, depth + 1)
                    }
                    _ => Eval::runtime(
                        node.start_byte(),
                        format!("built at run time with {}", function.map_or("a call", |f| self.host.text_of(f))),
                        false,
                    ),
                }
            }
            "macro_invocation" => {
                let name = node.child_by_field_name("macro").map_or("", |m| last_segment(self.host.text_of(m)));
                let tokens = token_tree(node).map(split_commas).unwrap_or_default();
                let literals: Vec<Node> = tokens.iter().flatten().copied().collect();
                match name {
                    "concat" if literals.iter().all(|t| STRINGS.contains(&t.kind())) => {
                        concat(literals.iter().map(|t| self.eval(*t, depth + 1)))
                    }
                    _ => {
                        let sql_like = literals.first().is_some_and(|t| self.eval(*t, depth + 1).sql_like());
                        Eval::runtime(node.start_byte(), format!("built at run time with {name}!"), sql_like)
                    }
                }
            }
            _ => Eval::NotText,
        }
    }
}

fn rust_escape(escape: &str) -> Escape {
    match c_like_escape(escape) {
        Escape::LineContinuation { .. } => Escape::LineContinuation { skip_blanks: true },
        other => other,
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path).trim()
}

fn token_tree(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    let tree = node.children(&mut cursor).find(|c| c.kind() == "token_tree");
    tree
}

/// A token tree's tokens between its delimiters, cut at its top-level commas.
fn split_commas(tree: Node) -> Vec<Vec<Node>> {
    let mut groups = vec![Vec::new()];
    let mut cursor = tree.walk();
    let count = tree.child_count();
    for (i, token) in tree.children(&mut cursor).enumerate() {
        if i == 0 || i + 1 == count || token.kind().contains("comment") {
            continue;
        }
        if token.kind() == "," {
            groups.push(Vec::new());
        } else if let Some(group) = groups.last_mut() {
            group.push(token);
        }
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// `const`, `static` and `let` definitions; assignments are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| {
        let (name, value) = match node.kind() {
            "const_item" | "static_item" => (node.child_by_field_name("name"), node.child_by_field_name("value")),
            "let_declaration" => (node.child_by_field_name("pattern"), node.child_by_field_name("value")),
            "assignment_expression" | "compound_assignment_expr" => {
                if let (Some(left), Some(scope)) = (node.child_by_field_name("left"), scope_of(node, is_scope)) {
                    names.change(scope, host.text_of(left), left);
                }
                return;
            }
            _ => return,
        };
        let (Some(name), Some(value), Some(scope)) = (name, value, scope_of(node, is_scope)) else { return };
        let name = host.text_of(name);
        names.define(scope, name.strip_prefix("mut ").unwrap_or(name), value);
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

    const FIXTURE: &str = include_str!("../../../fixtures/queries/rust/users.rs");

    #[test]
    fn sqlx_macros_functions_tokio_postgres_and_diesel() {
        let found = extract(FIXTURE);
        assert_query(&found, FIXTURE, "sqlx query_as!", "SELECT id, name FROM users WHERE id = $1", (13, 10));
        assert_query(
            &found,
            FIXTURE,
            "sqlx query!",
            "UPDATE users\n           SET name = $1\n         WHERE id = $2",
            (21, 21),
        );
        assert_query(
            &found,
            FIXTURE,
            "sqlx query_scalar!",
            "SELECT count(*) FROM \"orders\" WHERE user_id = $1",
            (31, 10),
        );
        assert_query(&found, FIXTURE, "sqlx query", "DELETE FROM sessions WHERE user_id = $1", (6, 23));
        assert_query(&found, FIXTURE, "tokio-postgres query_one", "SELECT total FROM orders WHERE id = $1", (47, 14));
        assert_query(&found, FIXTURE, "diesel sql_query", "SELECT * FROM users ORDER BY id", (55, 24));
        assert_eq!(found.queries.len(), 6, "{:#?}", found.queries);
    }

    #[test]
    fn calls_inside_other_macros_are_read() {
        let text = "async fn t(conn: &mut C) {\n    assert_ok!(diesel::sql_query(\"SET default_transaction_read_only = 't'\").execute(conn).await);\n}\n";
        let found = extract(text);
        assert_query(&found, text, "diesel sql_query", "SET default_transaction_read_only = 't'", (2, 35));
        assert_eq!(found.queries.len(), 1);
    }

    #[test]
    fn format_is_unreadable_and_other_query_methods_are_not_sql() {
        let found = extract(FIXTURE);
        assert_eq!(unreadable_lines(&found), vec![(61, "built at run time with format!".to_string())]);
    }

    #[test]
    fn a_project_wrapper_named_in_calls_is_read() {
        let text = "fn f(db: &Db) {\n    store::fetch_rows(db, \"SELECT id FROM riders WHERE lower(email) = $1\");\n    db.fetch_rows(\"x\");\n}\n";
        let calls = ProjectCalls::new(["store.fetch_rows".to_string()]);
        let found = super::extract(text, &calls);
        assert_eq!(found.queries.len(), 0, "the SQL is the first argument: {:#?}", found.queries);
        let text = text.replace("(db, ", "(");
        let found = super::extract(&text, &calls);
        assert_query(
            &found,
            &text,
            "store.fetch_rows (sluice.toml calls)",
            "SELECT id FROM riders WHERE lower(email) = $1",
            (2, 24),
        );
        assert_eq!(found.queries.len(), 1, "{:#?}", found.queries);
        assert!(extract(&text).queries.is_empty(), "not a known call without the setting");
    }
}

//! Go: the SQL passed to database/sql, pgx and sqlx calls.
//!
//! Methods (on any receiver; see [`super::sql_like`] for how a non-database `Get` or `Query` is
//! told apart): `Query`, `QueryRow`, `Exec`, `Prepare` and their `Context` forms (database/sql,
//! sqlx; pgx's take the context first without the suffix), sqlx's `Get`, `Select`, `NamedExec`,
//! `NamedQuery`, `MustExec`, `Queryx`, `QueryRowx` and their `Context` forms, scany's
//! `pgxscan.Get`/`Select(ctx, db, &dst, sql)`, pgx's `Batch.Queue`, and `Raw(sql, args…)` (beego's
//! ORM, GORM). beego's `QueryTable` and GORM's `Where`/`Find` builders write no SQL text and are
//! not read.
//!
//! The SQL argument is read when it is a string literal (interpreted or raw), a `+` of them, or
//! a name with a single definition in the file (a package-level or local `const`, a `var` or
//! `:=` never assigned again) whose value is one of these. `fmt.Sprintf` and names changed at
//! run time are reported as unreadable when a literal part of them looks like SQL. A name the
//! file does not define is asked of its package: the file's package-level SQL constants and the
//! names it passes are kept, and joined with the other files' once all are read
//! ([`super::go_package`]).

use super::extraction::{Extraction, GoPackageSide, PackageConstant, PackageUse};
use super::project_calls::ProjectCalls;
use super::sql_like::looks_like_sql;
use super::syntax::{
    arguments, c_like_escape, is_plus, parse, plus, quoted_literal, record, resolve_name, scope_of, syntax_errors,
    walk, Certainty, Escape, Eval, Host, LazyNames, Names, Resolved, SqlText,
};
use tree_sitter::Node;

/// Method names whose SQL argument is read, with where it stands.
fn sql_argument(method: &str, arguments: &[Node], context_first: bool) -> Option<usize> {
    Some(match method {
        "Query" | "QueryRow" | "Exec" | "Prepare" => usize::from(context_first && arguments.len() > 1),
        "QueryContext" | "QueryRowContext" | "ExecContext" | "PrepareContext" => 1,
        "Queryx" | "QueryRowx" | "MustExec" | "NamedExec" | "NamedQuery" | "Preparex" | "PrepareNamed" => 0,
        "QueryxContext"
        | "QueryRowxContext"
        | "MustExecContext"
        | "NamedExecContext"
        | "NamedQueryContext"
        | "PreparexContext"
        | "PrepareNamedContext" => 1,
        // sqlx's `Get(&dest, sql, …)`; scany's `pgxscan.Get(ctx, db, &dest, sql, …)`.
        "Get" | "Select" if context_first => 3,
        "Get" | "Select" => 1,
        "GetContext" | "SelectContext" => 2,
        "Queue" => 0,
        // beego's ORM `o.Raw(sql, args…)` (a `RawSeter`, run by `.Exec()`, `.QueryRow(…)`,
        // `.QueryRows(…)`) and GORM's `db.Raw(sql, values…)`: the SQL first, in both.
        "Raw" => 0,
        _ => return None,
    })
}

const STRINGS: [&str; 2] = ["interpreted_string_literal", "raw_string_literal"];

fn is_scope(kind: &str) -> bool {
    matches!(kind, "source_file" | "function_declaration" | "method_declaration" | "func_literal")
}

pub fn extract(text: &str, calls: &ProjectCalls) -> Extraction {
    let mut out = Extraction::default();
    let known = ["Query", "Exec", "Get", "Select", "Queue", "Prepare", "Raw"].iter().any(|m| text.contains(m));
    // A file of SQL constants (a `query.go`) has no call: its package's other files pass them.
    let constants = ["SELECT", "select ", "INSERT", "insert into", "UPDATE ", "update ", "DELETE", "delete from"]
        .iter()
        .any(|k| text.contains(k));
    if !known && !constants && !calls.may_be_called_in(text) {
        return out;
    }
    let tree = parse(&tree_sitter_go::LANGUAGE.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let file =
        GoFile { host: &host, names: LazyNames::new(|| names(root, &host)), libraries: libraries(root, &host), calls };
    walk(root, |node| {
        if node.kind() == "call_expression" {
            file.call(node, &mut out);
        }
    });
    let package = file.package_side(root, out.go_package.take().map(|side| side.uses).unwrap_or_default());
    out.go_package = Some(package).filter(|side| !side.is_empty());
    syntax_errors(root, &host, "Go", &STRINGS, &mut out);
    out
}

struct GoFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    libraries: Vec<&'static str>,
    calls: &'a ProjectCalls,
}

impl<'t> GoFile<'_, 't> {
    fn call(&self, call: Node<'t>, out: &mut Extraction) {
        if self.project_call(call, out) {
            return;
        }
        let Some(function) = call.child_by_field_name("function").filter(|f| f.kind() == "selector_expression") else {
            return;
        };
        let Some(method) = function.child_by_field_name("field").map(|f| self.host.text_of(f)) else { return };
        let Some(list) = call.child_by_field_name("arguments") else { return };
        let args = arguments(list);
        let context_first = args.first().is_some_and(|first| {
            let text = self.host.text_of(*first).to_ascii_lowercase();
            text.contains("ctx") || text.contains("context")
        });
        let Some(index) = sql_argument(method, &args, context_first) else { return };
        let Some(&argument) = args.get(index) else { return };
        let source = format!("{} {method}", self.library(method, context_first));
        if self.asked_of_package(argument, &source, false, out) {
            return;
        }
        record(out, self.host, source, self.eval(argument, 0), Certainty::IfSqlLike);
    }

    /// Whether `argument` is a name the file does not define: then it is kept for the package
    /// to answer ([`super::go_package::resolve`]).
    fn asked_of_package(&self, argument: Node<'t>, source: &str, certain: bool, out: &mut Extraction) -> bool {
        if argument.kind() != "identifier" {
            return false;
        }
        let name = self.host.text_of(argument);
        if !matches!(self.names.get().resolve(name, argument, is_scope), Resolved::NotFound)
            || self.bound_locally(argument, name)
        {
            return false;
        }
        let used = PackageUse {
            name: name.to_string(),
            at: self.host.position(argument.start_byte()),
            source: source.to_string(),
            certain,
        };
        out.go_package.get_or_insert_with(GoPackageSide::default).uses.push(used);
        true
    }

    /// Whether `name` at `at` is bound by an enclosing function's parameters, receiver or
    /// results, or by an enclosing `for … range` (which the names table does not record): a
    /// wrapper's `query string` parameter is no package constant of that name.
    fn bound_locally(&self, at: Node<'t>, name: &str) -> bool {
        let binds = |list: Option<Node<'t>>| {
            let mut found = false;
            if let Some(list) = list {
                walk(list, |n| found |= n.kind() == "identifier" && self.host.text_of(n) == name);
            }
            found
        };
        let mut node = at.parent();
        while let Some(ancestor) = node {
            let bound = match ancestor.kind() {
                "function_declaration" | "method_declaration" | "func_literal" => {
                    ["parameters", "receiver", "result"].iter().any(|f| binds(ancestor.child_by_field_name(f)))
                }
                "for_statement" => {
                    let mut cursor = ancestor.walk();
                    let range = ancestor.children(&mut cursor).find(|c| c.kind() == "range_clause");
                    binds(range.and_then(|r| r.child_by_field_name("left")))
                }
                _ => false,
            };
            if bound {
                return true;
            }
            node = ancestor.parent();
        }
        false
    }

    /// The file's `package` name and its package-level SQL constants: `const` and `var` names
    /// defined once and never assigned in the file, whose value is SQL text (a `var` assigned in
    /// another file of the package is not seen: none of the applications read does that).
    fn package_side(&self, root: Node<'t>, uses: Vec<PackageUse>) -> GoPackageSide {
        let mut side = GoPackageSide { uses, ..GoPackageSide::default() };
        let mut cursor = root.walk();
        if let Some(clause) = root.children(&mut cursor).find(|n| n.kind() == "package_clause") {
            side.package = arguments(clause).first().map_or("", |n| self.host.text_of(*n)).to_string();
        }
        // A package-level `var` assigned in a function of the file is no constant (the names
        // table sees such an assignment in the function's scope only).
        let mut assigned = Vec::new();
        walk(root, |node| {
            if node.kind() == "assignment_statement" {
                let left = node.child_by_field_name("left").map(arguments).unwrap_or_default();
                assigned.extend(left.iter().map(|n| self.host.text_of(*n)));
            }
        });
        walk(root, |node| {
            if !matches!(node.kind(), "const_spec" | "var_spec") || scope_of(node, is_scope) != Some(root) {
                return;
            }
            let mut cursor = node.walk();
            let declared: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
            let values = node.child_by_field_name("value").map(arguments).unwrap_or_default();
            for (name, value) in declared.into_iter().zip(values) {
                let name = self.host.text_of(name);
                if node.kind() == "var_spec" && assigned.contains(&name) {
                    continue;
                }
                let single =
                    matches!(self.names.get().resolve(name, value, is_scope), Resolved::Value(v) if v == value);
                if let (true, Eval::Text(text)) = (single, self.eval(value, 0)) {
                    if looks_like_sql(&text.sql) {
                        side.constants.push(PackageConstant { name: name.to_string(), sql: text.sql, map: text.map });
                    }
                }
            }
        });
        side
    }

    /// A call of one of the project's wrappers (`[queries] calls`): its first argument is SQL,
    /// after a context and the destinations written `&dest` (zdb's `zdb.Get(ctx, &u, query, …)`,
    /// as sqlx's `GetContext`). Whether it was one.
    fn project_call(&self, call: Node<'t>, out: &mut Extraction) -> bool {
        let Some(function) = call.child_by_field_name("function") else { return false };
        let Some(name) = self.calls.matching(self.host.text_of(function)) else { return false };
        let args = call.child_by_field_name("arguments").map(arguments).unwrap_or_default();
        let context_first = args.len() > 1 && {
            let first = self.host.text_of(args[0]).to_ascii_lowercase();
            first.contains("ctx") || first.contains("context")
        };
        let destination = |node: &Node| node.kind() == "unary_expression" && self.host.text_of(*node).starts_with('&');
        let sql = args.iter().skip(usize::from(context_first)).find(|a| !destination(a));
        if let Some(&argument) = sql {
            let source = format!("{name} (sluice.toml calls)");
            if !self.asked_of_package(argument, &source, true, out) {
                record(out, self.host, source, self.eval(argument, 0), Certainty::Sql);
            }
        }
        true
    }

    /// The library a call belongs to: pgx's methods take the context first without a `Context`
    /// suffix, sqlx adds its own, and the file's imports decide the rest.
    fn library(&self, method: &str, context_first: bool) -> &'static str {
        let has = |library| self.libraries.contains(&library);
        let plain = matches!(method, "Query" | "QueryRow" | "Exec" | "Prepare");
        match method {
            "Queue" => "pgx",
            "Raw" if has("beego") => "beego orm",
            "Raw" if has("gorm") => "GORM",
            "Raw" => "Go",
            "Get" | "Select" if context_first => "scany",
            _ if plain && context_first => "pgx",
            _ if has("sqlx") => "sqlx",
            _ if has("database/sql") => "database/sql",
            _ if has("pgx") => "pgx",
            _ => "Go",
        }
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "interpreted_string_literal" => quoted_literal(self.host, node, go_escape),
            "raw_string_literal" => {
                // Carriage returns are dropped from raw strings (the Go specification, "String literals").
                let mut text = SqlText::default();
                let (start, end) =
                    (node.start_byte() + 1, node.end_byte().saturating_sub(1).max(node.start_byte() + 1));
                let mut at = start;
                for (i, _) in self.host.text[start..end].match_indices('\r') {
                    text.verbatim(self.host, at, start + i);
                    at = start + i + 1;
                }
                text.verbatim(self.host, at, end);
                Eval::Text(text)
            }
            "binary_expression" if is_plus(node) => plus(node, |n| self.eval(n, depth + 1)),
            "parenthesized_expression" => arguments(node).first().map_or(Eval::NotText, |n| self.eval(*n, depth + 1)),
            "identifier" => {
                let name = self.host.text_of(node);
                resolve_name(self.names.get(), node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            "call_expression" => {
                let function = node.child_by_field_name("function").map_or("", |f| self.host.text_of(f));
                let first = node.child_by_field_name("arguments").and_then(|a| arguments(a).first().copied());
                let sql_like = first.is_some_and(|f| self.eval(f, depth + 1).sql_like());
                Eval::runtime(node.start_byte(), format!("built at run time with {function}"), sql_like)
            }
            "selector_expression" => Eval::runtime(
                node.start_byte(),
                format!("`{}` is defined in another package", self.host.text_of(node)),
                false,
            ),
            _ => Eval::NotText,
        }
    }
}

/// Go's escapes: the C-like ones, octal bytes (`\101`) and no line continuation.
fn go_escape(escape: &str) -> Escape {
    let body = &escape[1..];
    if body.len() == 3 && body.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return u8::from_str_radix(body, 8)
            .ok()
            .filter(u8::is_ascii)
            .map_or(Escape::Unknown, |b| Escape::Char(b as char));
    }
    match c_like_escape(escape) {
        Escape::LineContinuation { .. } => Escape::Unknown,
        other => other,
    }
}

/// Package-level and local `const`, `var` and `:=` definitions; assignments are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| match node.kind() {
        "const_spec" | "var_spec" => {
            let Some(scope) = scope_of(node, is_scope) else { return };
            let mut cursor = node.walk();
            let declared: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
            let values = node.child_by_field_name("value").map(arguments).unwrap_or_default();
            for (name, value) in declared.iter().zip(values) {
                names.define(scope, host.text_of(*name), value);
            }
        }
        "short_var_declaration" | "assignment_statement" => {
            let Some(scope) = scope_of(node, is_scope) else { return };
            let left = node.child_by_field_name("left").map(arguments).unwrap_or_default();
            let right = node.child_by_field_name("right").map(arguments).unwrap_or_default();
            let defines = node.kind() == "short_var_declaration";
            for (i, name) in left.iter().enumerate().filter(|(_, n)| n.kind() == "identifier") {
                match right.get(i).filter(|_| defines && left.len() == right.len()) {
                    Some(value) => names.define(scope, host.text_of(*name), *value),
                    None => names.change(scope, host.text_of(*name), *name),
                }
            }
        }
        _ => {}
    });
    names
}

/// The database libraries the file imports.
fn libraries(root: Node, host: &Host) -> Vec<&'static str> {
    let mut found = Vec::new();
    walk(root, |node| {
        if node.kind() == "import_spec" {
            let path = node.child_by_field_name("path").map_or("", |p| host.text_of(p)).trim_matches('"');
            let library = match path {
                "database/sql" => Some("database/sql"),
                p if p.starts_with("github.com/jackc/pgx") => Some("pgx"),
                p if p.starts_with("github.com/jmoiron/sqlx") => Some("sqlx"),
                p if p.starts_with("github.com/beego/beego") || p.starts_with("github.com/astaxie/beego") => {
                    Some("beego")
                }
                p if p == "gorm.io/gorm" || p.starts_with("github.com/jinzhu/gorm") => Some("gorm"),
                _ => None,
            };
            if let Some(library) = library.filter(|l| !found.contains(l)) {
                found.push(library);
            }
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_query, unreadable_lines};
    use super::extract;
    use super::ProjectCalls;

    const FIXTURE: &str = include_str!("../../../fixtures/queries/go/store.go");

    #[test]
    fn literals_constants_and_concatenations_at_database_calls() {
        let found = extract(FIXTURE, &ProjectCalls::default());
        assert_query(&found, FIXTURE, "pgx QueryRow", "SELECT id, name FROM users WHERE id = $1", (12, 19));
        assert_query(&found, FIXTURE, "pgx Exec", "UPDATE users SET name = $1 WHERE id = $2", (14, 21));
        assert_query(
            &found,
            FIXTURE,
            "pgx Query",
            "SELECT id, total\n\t  FROM orders\n\t WHERE user_id = $1\n\t   AND total > 100",
            (33, 28),
        );
        assert_query(&found, FIXTURE, "pgx Queue", "DELETE FROM sessions WHERE user_id = $1", (41, 15));
        assert_query(&found, FIXTURE, "sqlx Get", "SELECT count(*) FROM \"orders\"\nWHERE user_id = $1", (46, 22));
        assert_query(&found, FIXTURE, "sqlx NamedExec", "INSERT INTO audit (who, what) VALUES (:who, :what)", (52, 28));
    }

    #[test]
    fn what_is_built_at_run_time_is_unreadable_and_other_calls_are_not_sql() {
        let found = extract(FIXTURE, &ProjectCalls::default());
        assert_eq!(
            unreadable_lines(&found),
            vec![
                (57, "built at run time with fmt.Sprintf".into()),
                (66, "`q` is changed at run time (line 64)".into())
            ]
        );
        // gin's c.Query("page") and cache.Get(key) are not database calls.
        assert!(found.queries.iter().all(|q| q.sql != "page"));
        assert_eq!(found.queries.len(), 6);
    }

    #[test]
    fn beego_raw_is_read_and_its_query_builder_is_not() {
        let beego = include_str!("../../../fixtures/queries/go/beego.go");
        let found = extract(beego, &ProjectCalls::default());
        assert_query(&found, beego, "beego orm Raw", "SELECT id FROM artifact WHERE repository_name = ?", (14, 8));
        assert_query(&found, beego, "beego orm Raw", "DELETE FROM artifact_trash WHERE creation_time <= ?", (19, 10));
        assert_eq!(unreadable_lines(&found), vec![(25, "built at run time with fmt.Sprintf".into())]);
        // `QueryTable("artifact")` and a `Raw` of a non-SQL string are not queries.
        assert_eq!(found.queries.len(), 2);
    }

    #[test]
    fn a_file_offers_its_package_sql_constants_and_asks_for_the_names_it_does_not_define() {
        let text = "package store\n\nconst byID = `SELECT * FROM t WHERE id = $1`\n\nvar (\n\tlater = \"SELECT 1 FROM t\"\n\tlabel = \"not sql\"\n)\n\nfunc f() {\n\tlater = \"SELECT 2 FROM t\"\n\tdb.QueryRow(ctx, elsewhere, 1)\n\tdb.QueryRow(ctx, byID, 1)\n}\n";
        let found = extract(text, &ProjectCalls::default());
        let side = found.go_package.expect("a package side");
        assert_eq!(side.package, "store");
        // `later` is assigned again in f: not a constant; `label` is no SQL.
        assert_eq!(side.constants.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["byID"]);
        assert_eq!(side.uses.iter().map(|u| (u.name.as_str(), u.at.line)).collect::<Vec<_>>(), [("elsewhere", 12)]);
        assert_eq!(found.queries.len(), 1, "byID is read in its own file");
        // A parameter or a range variable of the name is no package constant.
        let text = "package store\n\nfunc (d *DB) Run(ctx context.Context, query string) {\n\td.pool.Exec(ctx, query)\n\tfor _, q := range all {\n\t\td.pool.Exec(ctx, q)\n\t}\n}\n";
        assert!(extract(text, &ProjectCalls::default()).go_package.is_none());
    }

    #[test]
    fn a_project_call_reads_its_sql_after_a_context_and_destinations() {
        // goatcounter's zdb: `zdb.Get(ctx, &u, query, args…)`, `zdb.Exec(ctx, query, args…)`.
        let text = "package goatcounter\n\nfunc f(ctx context.Context) {\n\tzdb.Get(ctx, &u, `select * from users where email = $1`, email)\n\tzdb.Exec(ctx, `delete from users where id = $1`, id)\n\trun(`select 1 from users`)\n}\n";
        let calls = ProjectCalls::new(["zdb.Get".to_string(), "zdb.Exec".to_string(), "run".to_string()]);
        let found = extract(text, &calls);
        let sql: Vec<&str> = found.queries.iter().map(|q| q.sql.as_str()).collect();
        assert_eq!(
            sql,
            ["select * from users where email = $1", "delete from users where id = $1", "select 1 from users"],
            "{found:#?}"
        );
        assert!(found.unreadable.is_empty(), "{:#?}", found.unreadable);
    }

    #[test]
    fn a_file_without_database_calls_is_not_parsed() {
        assert!(extract("package main\nfunc main() { println(\"SELECT 1\") }\n", &ProjectCalls::default()).is_empty());
    }
}

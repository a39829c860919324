//! TypeScript and JavaScript: node-postgres's `query` (a string or `{ text }`), Sequelize's
//! `query` (`:name` replacements), Knex's `raw`, and Prisma's `$queryRaw` / `$executeRaw`
//! (tagged templates or `Prisma.sql`, each `${…}` a parameter `$1`, `$2` …; a nested
//! `Prisma.sql` fragment is read in place, `Prisma.raw` is text interpolated at run time) and
//! `$queryRawUnsafe` / `$executeRawUnsafe`.
//!
//! Prisma's calls take only SQL; `query` and `raw` count when their text looks like SQL
//! ([`super::sql_like`]). Strings are read from literals, templates without substitutions,
//! `+`, and `const`/`let`/`var` names with a single definition in the file; a template with
//! `${…}` passed to `query` is text built at run time: unreadable.

use super::extraction::Extraction;
use super::language::Language;
use super::project_calls::ProjectCalls;
use super::syntax::{
    arguments, c_like_escape, decode_body, descendants, is_plus, parse, plus, quoted_literal, record, resolve_name,
    scope_of, syntax_errors, walk, Certainty, Eval, Host, LazyNames, Names, Resolved, SqlText,
};
use tree_sitter::Node;

const STRINGS: [&str; 2] = ["string", "template_string"];

fn is_scope(kind: &str) -> bool {
    matches!(
        kind,
        "program"
            | "function_declaration"
            | "function_expression"
            | "arrow_function"
            | "method_definition"
            | "generator_function_declaration"
            | "class_body"
    )
}

pub fn extract(language: Language, text: &str, calls: &ProjectCalls) -> Extraction {
    let mut out = Extraction::default();
    if !["query", "Raw", "raw("].iter().any(|t| text.contains(t)) && !calls.may_be_called_in(text) {
        return out;
    }
    let grammar = match language {
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
        _ => tree_sitter_javascript::LANGUAGE,
    };
    let tree = parse(&grammar.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let client = if text.contains("sequelize") || text.contains("Sequelize") {
        "Sequelize"
    } else if ["'pg'", "\"pg\"", "'pg-pool'", "\"pg-pool\""].iter().any(|m| text.contains(m)) {
        "node-postgres"
    } else {
        "JavaScript"
    };
    let file = ScriptFile { host: &host, names: LazyNames::new(|| names(root, &host)), client, calls };
    walk(root, |node| match node.kind() {
        "call_expression" => file.call(node, &mut out),
        "binary_expression" => file.misread_generic_tag(node, &mut out),
        _ => {}
    });
    syntax_errors(root, &host, language.name(), &STRINGS, &mut out);
    out
}

struct ScriptFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    /// Whose `query` method the file calls, by what it imports.
    client: &'static str,
    calls: &'a ProjectCalls,
}

impl<'t> ScriptFile<'_, 't> {
    /// The callee as written, or, for a name destructured from an object in an enclosing scope
    /// (umami's `const { rawQuery } = prisma;` … `rawQuery(…)`), `object.name`: how a
    /// `[queries] calls` path (`prisma.rawQuery`) tells one wrapper from another of the same name.
    fn callee_path(&self, call: Node<'t>, function: Node<'t>) -> String {
        let written = self.host.text_of(function);
        if function.kind() != "identifier" {
            return written.to_string();
        }
        let mut scope = scope_of(call, is_scope);
        while let Some(body) = scope {
            let mut from = None;
            walk(body, |node| {
                if from.is_some() || node.kind() != "variable_declarator" || scope_of(node, is_scope) != Some(body) {
                    return;
                }
                let (Some(pattern), Some(value)) =
                    (node.child_by_field_name("name"), node.child_by_field_name("value"))
                else {
                    return;
                };
                let binds = pattern.kind() == "object_pattern"
                    && arguments(pattern).iter().any(|p| {
                        p.kind() == "shorthand_property_identifier_pattern" && self.host.text_of(*p) == written
                    });
                if binds && matches!(value.kind(), "identifier" | "member_expression") {
                    from = Some(self.host.text_of(value));
                }
            });
            if let Some(object) = from {
                return format!("{object}.{written}");
            }
            scope = scope_of(body, is_scope);
        }
        written.to_string()
    }

    fn call(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(mut function) = node.child_by_field_name("function") else { return };
        // `prisma.$queryRaw<User[]>`…``: the callee under its type arguments; the grammar reads
        // `await db.query<T>(…)` as a call of `await db.query`.
        while matches!(function.kind(), "instantiation_expression" | "non_null_expression" | "await_expression") {
            let parts = arguments(function);
            let inner = if function.kind() == "instantiation_expression" { parts.first() } else { parts.last() };
            let Some(&inner) = inner else { return };
            function = inner;
        }
        let name = match function.kind() {
            "member_expression" => function.child_by_field_name("property").map_or("", |p| self.host.text_of(p)),
            "identifier" => self.host.text_of(function),
            _ => return,
        };
        let Some(list) = node.child_by_field_name("arguments") else { return };
        let prisma = matches!(name, "$queryRaw" | "$executeRaw");
        if list.kind() == "template_string" {
            if prisma {
                let mut numbering = 0;
                record(out, self.host, format!("Prisma {name}"), self.prisma(list, &mut numbering, 0), Certainty::Sql);
            }
            return;
        }
        let Some(first) = arguments(list).first().copied() else { return };
        // Resolving the path walks the enclosing scopes: only for a name an entry ends in (a
        // minified bundle holds hundreds of thousands of calls).
        let configured = self.calls.may_match(name).then(|| self.callee_path(node, function));
        if let Some(call) = configured.as_deref().and_then(|path| self.calls.matching(path)) {
            record(out, self.host, format!("{call} (sluice.toml calls)"), self.eval(first, 0), Certainty::Sql);
            return;
        }
        let (source, certainty, value) = match name {
            "$queryRaw" | "$executeRaw" => (format!("Prisma {name}"), Certainty::Sql, self.prisma_argument(first)),
            "$queryRawUnsafe" | "$executeRawUnsafe" => (format!("Prisma {name}"), Certainty::Sql, self.eval(first, 0)),
            "query" => {
                let text = if first.kind() == "object" { self.property(first, "text") } else { Some(first) };
                let Some(text) = text else { return };
                (format!("{} query", self.client), Certainty::IfSqlLike, self.eval(text, 0))
            }
            "raw" => ("Knex raw".to_string(), Certainty::IfSqlLike, self.eval(first, 0)),
            _ => return,
        };
        record(out, self.host, source, value, certainty);
    }

    /// The grammar reads `await prisma.$queryRaw<T>`…`` (a type argument before a tagged template,
    /// after `await`) as the comparisons `(await prisma.$queryRaw < T) > `…``: read it as the tag.
    fn misread_generic_tag(&self, node: Node<'t>, out: &mut Extraction) {
        let operator = |n: Node, o: &str| n.child_by_field_name("operator").is_some_and(|op| op.kind() == o);
        let (Some(left), Some(template)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
            return;
        };
        if !operator(node, ">")
            || template.kind() != "template_string"
            || left.kind() != "binary_expression"
            || !operator(left, "<")
        {
            return;
        }
        let Some(mut tag) = left.child_by_field_name("left") else { return };
        while tag.kind() == "await_expression" {
            let Some(inner) = arguments(tag).last().copied() else { return };
            tag = inner;
        }
        let name = tag
            .child_by_field_name("property")
            .filter(|_| tag.kind() == "member_expression")
            .map(|p| self.host.text_of(p));
        if let Some(name @ ("$queryRaw" | "$executeRaw")) = name {
            record(out, self.host, format!("Prisma {name}"), self.prisma(template, &mut 0, 0), Certainty::Sql);
        }
    }

    /// `$queryRaw(Prisma.sql`…`)` or a name for one.
    fn prisma_argument(&self, argument: Node<'t>) -> Eval {
        match self.sql_tag(argument, 0) {
            Some(template) => self.prisma(template, &mut 0, 0),
            None => Eval::runtime(argument.start_byte(), "the SQL is not a Prisma.sql template of this file", false),
        }
    }

    /// The template of a `Prisma.sql`…`` (or `sql`…``) tagged template, through names.
    fn sql_tag(&self, node: Node<'t>, depth: usize) -> Option<Node<'t>> {
        match node.kind() {
            "call_expression" => {
                let tag = node.child_by_field_name("function").map(|f| self.host.text_of(f))?;
                let template = node.child_by_field_name("arguments").filter(|a| a.kind() == "template_string")?;
                matches!(tag, "Prisma.sql" | "sql").then_some(template)
            }
            "identifier" if depth < super::syntax::MAX_DEPTH => {
                match self.names.get().resolve(self.host.text_of(node), node, is_scope) {
                    Resolved::Value(value) => self.sql_tag(value, depth + 1),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A Prisma template: its text with each `${…}` a parameter `$n` (numbered on from
    /// `numbering`), nested `Prisma.sql` fragments in place, `Prisma.empty` nothing.
    fn prisma(&self, template: Node<'t>, numbering: &mut usize, depth: usize) -> Eval {
        let mut text = SqlText::default();
        let mut at = template.start_byte() + 1;
        for part in arguments(template) {
            if part.kind() != "template_substitution" {
                continue;
            }
            self.template_text(&mut text, at, part.start_byte(), template);
            at = part.end_byte();
            let Some(expression) = arguments(part).first().copied() else { continue };
            let written = self.host.text_of(expression);
            if written == "Prisma.empty" {
                continue;
            }
            if let Some(fragment) = self.sql_tag(expression, 0).filter(|_| depth < super::syntax::MAX_DEPTH) {
                match self.prisma(fragment, numbering, depth + 1) {
                    Eval::Text(inner) => text.append(inner),
                    other => return other,
                }
                continue;
            }
            let callee = (expression.kind() == "call_expression")
                .then(|| expression.child_by_field_name("function").map_or("", |f| self.host.text_of(f)));
            if callee == Some("Prisma.raw") || expression.kind() == "ternary_expression" {
                let reason = if callee.is_some() {
                    "text interpolated with Prisma.raw"
                } else {
                    "a fragment chosen at run time"
                };
                return Eval::runtime(part.start_byte(), reason, super::looks_like_sql(&text.sql));
            }
            *numbering += 1;
            text.stand_in(self.host, part.start_byte(), &format!("${numbering}"));
        }
        self.template_text(&mut text, at, template.end_byte() - 1, template);
        Eval::Text(text)
    }

    /// Host bytes `start..end` of a template, its escapes read.
    fn template_text(&self, text: &mut SqlText, start: usize, end: usize, template: Node<'t>) {
        decode_body(self.host, text, (start, end.max(start)), &descendants(template, "escape_sequence"), c_like_escape);
    }

    /// The value of property `key` of an object literal.
    fn property(&self, object: Node<'t>, key: &str) -> Option<Node<'t>> {
        arguments(object).into_iter().find_map(|pair| {
            let name = pair.child_by_field_name("key").map(|k| self.host.text_of(k).trim_matches(['"', '\'']))?;
            (pair.kind() == "pair" && name == key).then(|| pair.child_by_field_name("value")).flatten()
        })
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "string" => quoted_literal(self.host, node, c_like_escape),
            "template_string" => {
                let mut text = SqlText::default();
                let substitution = arguments(node).into_iter().find(|p| p.kind() == "template_substitution");
                let end = substitution.map_or(node.end_byte() - 1, |s| s.start_byte());
                self.template_text(&mut text, node.start_byte() + 1, end, node);
                match substitution {
                    Some(s) => {
                        Eval::runtime(s.start_byte(), "text interpolated with ${…}", super::looks_like_sql(&text.sql))
                    }
                    None => Eval::Text(text),
                }
            }
            "binary_expression" if is_plus(node) => plus(node, |n| self.eval(n, depth + 1)),
            "parenthesized_expression" | "as_expression" | "satisfies_expression" | "non_null_expression" => {
                arguments(node).first().map_or(Eval::NotText, |n| self.eval(*n, depth + 1))
            }
            "identifier" => {
                let name = self.host.text_of(node);
                resolve_name(self.names.get(), node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            "call_expression" => {
                let function = node.child_by_field_name("function").map_or("a call", |f| self.host.text_of(f));
                Eval::runtime(node.start_byte(), format!("built at run time with {function}"), false)
            }
            _ => Eval::NotText,
        }
    }
}

/// `const`, `let` and `var` declarators; assignments are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| match node.kind() {
        "variable_declarator" => {
            let (Some(name), Some(value), Some(scope)) =
                (node.child_by_field_name("name"), node.child_by_field_name("value"), scope_of(node, is_scope))
            else {
                return;
            };
            if name.kind() == "identifier" {
                names.define(scope, host.text_of(name), value);
            }
        }
        "assignment_expression" | "augmented_assignment_expression" => {
            if let (Some(left), Some(scope)) = (node.child_by_field_name("left"), scope_of(node, is_scope)) {
                names.change(scope, host.text_of(left), left);
            }
        }
        _ => {}
    });
    names
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_query, unreadable_lines};
    use super::super::Language;
    use super::extract;
    use super::ProjectCalls;

    const PRISMA: &str = include_str!("../../../fixtures/queries/typescript/reports.ts");
    const PG: &str = include_str!("../../../fixtures/queries/typescript/accounts.js");
    const SEQUELIZE: &str = include_str!("../../../fixtures/queries/typescript/sequelize.js");

    #[test]
    fn prisma_tagged_templates_number_their_parameters() {
        let found = extract(Language::TypeScript, PRISMA, &ProjectCalls::default());
        let query = assert_query(
            &found,
            PRISMA,
            "Prisma $queryRaw",
            "SELECT id, email\n      FROM users\n     WHERE created_at > $1 AND plan = $2",
            (6, 35),
        );
        let at = query.map.position(&query.sql, query.sql.find("$2").unwrap());
        assert_eq!((at.line, at.column), (8, 45));
        assert_query(
            &found,
            PRISMA,
            "Prisma $executeRaw",
            "UPDATE users SET plan = 'free' WHERE id = ANY($1)",
            (12, 28),
        );
        assert_query(
            &found,
            PRISMA,
            "Prisma $queryRaw",
            "SELECT * FROM orders WHERE user_id = $1 AND total > $2",
            (16, 32),
        );
        assert_query(&found, PRISMA, "Prisma $queryRawUnsafe", "SELECT * FROM users WHERE id = $1", (21, 34));
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(unreadable_lines(&found), vec![(25, "text interpolated with Prisma.raw".to_string())]);
    }

    #[test]
    fn node_postgres_sequelize_and_knex() {
        let found = extract(Language::JavaScript, PG, &ProjectCalls::default());
        assert_query(&found, PG, "node-postgres query", "SELECT balance FROM accounts WHERE id = $1", (3, 18));
        assert_query(
            &found,
            PG,
            "node-postgres query",
            "UPDATE accounts SET balance = balance - $1 WHERE id = $2",
            (9, 12),
        );
        assert_query(
            &found,
            PG,
            "node-postgres query",
            "INSERT INTO ledger (account_id, amount)\nVALUES ($1, $2)",
            (14, 6),
        );
        assert_query(&found, PG, "Knex raw", "SELECT 'it''s' AS quote", (18, 33));
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(unreadable_lines(&found), vec![(24, "text interpolated with ${…}".to_string())]);
    }

    #[test]
    fn a_generic_tagged_template_under_await_is_read() {
        let text = "const rows = await prisma.$queryRaw<Row[]>`\n  SELECT id FROM users WHERE id = ${id}`;\n";
        let sql = "\n  SELECT id FROM users WHERE id = $1";
        assert_query(
            &extract(Language::TypeScript, text, &ProjectCalls::default()),
            text,
            "Prisma $queryRaw",
            sql,
            (1, 44),
        );
    }

    #[test]
    fn a_generic_call_under_await_is_read() {
        let text = "const rows = await sequelize.query<{ id: string }>(`SELECT id FROM teams`, {});\n";
        assert_query(
            &extract(Language::TypeScript, text, &ProjectCalls::default()),
            text,
            "Sequelize query",
            "SELECT id FROM teams",
            (1, 53),
        );
    }

    #[test]
    fn sequelize_replacements_stay_named() {
        let found = extract(Language::JavaScript, SEQUELIZE, &ProjectCalls::default());
        let sql = "SELECT * FROM projects WHERE owner_id = :ownerId AND archived = false";
        assert_query(&found, SEQUELIZE, "Sequelize query", sql, (6, 6));
        assert_eq!(found.queries.len(), 1);
    }

    #[test]
    fn a_project_wrapper_named_in_sluice_toml_is_read() {
        // umami's `rawQuery(sql, params)` around Prisma's `$queryRawUnsafe`.
        let text = "const { rawQuery } = prisma;\nexport function f(id) {\n  return rawQuery(`select id from website where website_id = {{websiteId::uuid}}`, { websiteId: id });\n}\nexport function g(q) {\n  return prisma.rawQuery(`select id from ${q}`, {});\n}\nfunction h(x) { return rawQueryAll('select 1', x); }\n";
        assert!(extract(Language::TypeScript, text, &ProjectCalls::default()).is_empty(), "not a known call");
        let found = extract(Language::TypeScript, text, &ProjectCalls::new(["rawQuery".to_string()]));
        let sql = "select id from website where website_id = {{websiteId::uuid}}";
        assert_query(&found, text, "rawQuery (sluice.toml calls)", sql, (3, 20));
        assert_eq!(found.queries.len(), 1, "rawQueryAll is another function");
        assert_eq!(found.unreadable.len(), 1, "the interpolated table is built at run time");
        assert_eq!(found.unreadable[0].at.line, 6);
        // A path tells umami's two wrappers apart: `prisma`'s, not `clickhouse`'s.
        let both = "function a() {\n  const { rawQuery } = prisma;\n  return rawQuery(`select 1 from session`, {});\n}\nfunction b() {\n  const { rawQuery } = clickhouse;\n  return rawQuery(`select 2 from session`, {});\n}\n";
        let found = extract(Language::TypeScript, both, &ProjectCalls::new(["prisma.rawQuery".to_string()]));
        let sqls: Vec<&str> = found.queries.iter().map(|q| q.sql.as_str()).collect();
        assert_eq!(sqls, ["select 1 from session"]);
    }
}

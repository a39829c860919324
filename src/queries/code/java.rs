//! Java: Spring Data's `@Query` (SQL when `nativeQuery = true`, and always for Spring Data JDBC
//! and R2DBC; JPQL otherwise, which is not SQL and is counted as skipped), MyBatis's `@Select`,
//! `@Insert`, `@Update`, `@Delete`, JPA's `@NamedNativeQuery` and `createNativeQuery`, the SQL
//! methods of `JdbcTemplate` and `NamedParameterJdbcTemplate` (`query`, `queryForObject`,
//! `queryForList`, `queryForMap`, `queryForRowSet`, `queryForStream`, `update`, `batchUpdate`,
//! `execute`), `JdbcClient.sql` and JDBC's `prepareStatement`, `prepareCall`, `executeQuery`,
//! `executeUpdate`, `addBatch`.
//!
//! Annotations and `createNativeQuery` take only SQL; the methods count when their text looks
//! like SQL ([`super::sql_like`]). The SQL is read when it is a string literal or a text block
//! (its incidental indentation stripped and escapes read as JLS 3.10.6 says), a `+` of them,
//! or a name with a single definition in the file (`static final String SQL = …`, a local
//! never assigned again). `String.format`, `formatted` and builders are reported as unreadable.
//! [`spring`] is shared with the Kotlin extractor.

use super::extraction::Extraction;
use super::project_calls::ProjectCalls;
use super::syntax::{
    arguments, c_like_escape, concat, is_plus, parse, plus, quoted_literal, record, resolve_name, scope_of,
    syntax_errors, walk, Certainty, Escape, Eval, Host, LazyNames, Names, SqlText,
};
use tree_sitter::Node;

const STRINGS: [&str; 1] = ["string_literal"];

fn is_scope(kind: &str) -> bool {
    matches!(
        kind,
        "program"
            | "class_body"
            | "interface_body"
            | "enum_body"
            | "method_declaration"
            | "constructor_declaration"
            | "lambda_expression"
    )
}

pub fn extract(text: &str, calls: &ProjectCalls) -> Extraction {
    let mut out = Extraction::default();
    if !spring::TRIGGERS.iter().any(|t| text.contains(t)) && !calls.may_be_called_in(text) {
        return out;
    }
    let tree = parse(&tree_sitter_java::LANGUAGE.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let names = LazyNames::new(|| names(root, &host));
    let file = JavaFile { host: &host, names, imports: spring::Imports::of(text), calls };
    walk(root, |node| match node.kind() {
        "annotation" => file.annotation(node, &mut out),
        "method_invocation" => file.call(node, &mut out),
        _ => {}
    });
    syntax_errors(root, &host, "Java", &STRINGS, &mut out);
    out
}

struct JavaFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    imports: spring::Imports,
    calls: &'a ProjectCalls,
}

impl<'t> JavaFile<'_, 't> {
    fn annotation(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(name) = node.child_by_field_name("name").map(|n| self.host.text_of(n)) else { return };
        let Some(list) = node.child_by_field_name("arguments") else { return };
        let mut elements: Vec<(Option<&str>, Node)> = Vec::new();
        for argument in arguments(list) {
            if argument.kind() == "element_value_pair" {
                let key = argument.child_by_field_name("key").map(|k| self.host.text_of(k));
                if let Some(value) = argument.child_by_field_name("value") {
                    elements.push((key, value));
                }
            } else {
                elements.push((None, argument));
            }
        }
        let native =
            elements.iter().any(|(key, value)| *key == Some("nativeQuery") && self.host.text_of(*value) == "true");
        let values = elements.iter().map(|(key, value)| (key.unwrap_or("value"), *value));
        spring::annotation(name, native, &self.imports, values, out, self.host, |value| self.eval(value, 0));
    }

    fn call(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(method) = node.child_by_field_name("name").map(|n| self.host.text_of(n)) else { return };
        let callee = || {
            let object = node.child_by_field_name("object").map(|o| format!("{}.", self.host.text_of(o)));
            format!("{}{method}", object.unwrap_or_default())
        };
        let configured = self.calls.may_match(method).then(|| self.calls.matching(&callee())).flatten();
        let known = match configured {
            Some(call) => Some((format!("{call} (sluice.toml calls)"), Certainty::Sql)),
            None => spring::method(method, &self.imports),
        };
        let Some((source, certainty)) = known else { return };
        let Some(first) = node.child_by_field_name("arguments").and_then(|a| arguments(a).first().copied()) else {
            return;
        };
        record(out, self.host, source, self.eval(first, 0), certainty);
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "string_literal" if self.host.text_of(node).starts_with("\"\"\"") => {
                let mut text = SqlText::default();
                text_block(self.host, node.start_byte() + 3, node.end_byte().saturating_sub(3), &mut text);
                Eval::Text(text)
            }
            "string_literal" => quoted_literal(self.host, node, java_escape),
            "decimal_integer_literal" => {
                let mut text = SqlText::default();
                text.verbatim(self.host, node.start_byte(), node.end_byte());
                Eval::Text(text)
            }
            "binary_expression" if is_plus(node) => plus(node, |n| self.eval(n, depth + 1)),
            "parenthesized_expression" => arguments(node).first().map_or(Eval::NotText, |n| self.eval(*n, depth + 1)),
            "identifier" | "field_access" => {
                let name_node = node.child_by_field_name("field").unwrap_or(node);
                let name = self.host.text_of(name_node);
                resolve_name(self.names.get(), name_node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            "method_invocation" => {
                let method = node.child_by_field_name("name").map_or("", |n| self.host.text_of(n));
                let object = node.child_by_field_name("object");
                let first = node.child_by_field_name("arguments").and_then(|a| arguments(a).first().copied());
                match method {
                    "concat" => concat([object, first].map(|n| n.map_or(Eval::NotText, |n| self.eval(n, depth + 1)))),
                    "trim" | "strip" | "stripIndent" | "intern" => {
                        object.map_or(Eval::NotText, |object| self.eval(object, depth + 1))
                    }
                    _ => {
                        // `String.format("SELECT … %s", t)`, `"SELECT … %s".formatted(t)`.
                        let format = if method == "formatted" { object } else { first };
                        let sql_like = format.is_some_and(|f| self.eval(f, depth + 1).sql_like());
                        Eval::runtime(node.start_byte(), format!("built at run time with {method}"), sql_like)
                    }
                }
            }
            _ => Eval::NotText,
        }
    }
}

/// Java's escapes: the C-like ones, `\s` (a space) and octal (`\0` to `\377`).
fn java_escape(escape: &str) -> Escape {
    let body = &escape[1..];
    if body == "s" {
        return Escape::Char(' ');
    }
    if !body.is_empty() && body.len() <= 3 && body.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return u32::from_str_radix(body, 8).ok().and_then(char::from_u32).map_or(Escape::Unknown, Escape::Char);
    }
    c_like_escape(escape)
}

/// A text block's content, host bytes `start..end` between its delimiters, as JLS 3.10.6 reads
/// it: the line after the opening delimiter on; the smallest indentation of its non-blank lines
/// (and of the closing delimiter's line) removed from each; trailing blanks removed; escapes
/// read last, a backslash at a line's end joining it to the next.
pub(super) fn text_block(host: &Host, start: usize, end: usize, out: &mut SqlText) {
    let raw = &host.text[start..end];
    let Some(first_break) = raw.find('\n') else { return };
    let content_start = start + first_break + 1;
    let content = &host.text[content_start..end];
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut at = content_start;
    for line in content.split('\n') {
        lines.push((at, line.strip_suffix('\r').unwrap_or(line)));
        at += line.len() + 1;
    }
    let indent = |line: &str| line.len() - line.trim_start_matches([' ', '\t']).len();
    let last = lines.len() - 1;
    let margin = lines
        .iter()
        .enumerate()
        .filter(|(i, (_, line))| *i == last || !line.trim().is_empty())
        .map(|(_, (_, line))| indent(line))
        .min()
        .unwrap_or(0);
    for (i, (line_start, line)) in lines.iter().enumerate() {
        if i == last {
            // The closing delimiter's line: its text before `"""` (blank, or the last content).
            if !line.trim().is_empty() {
                escapes_in(
                    host,
                    line_start + margin.min(line.len()),
                    line_start + line.trim_end_matches([' ', '\t']).len(),
                    out,
                );
            }
            break;
        }
        let kept_end = line_start + line.trim_end_matches([' ', '\t']).len();
        let kept_start = (line_start + margin).min(kept_end);
        let joined = escapes_in(host, kept_start, kept_end, out);
        if !joined {
            out.stand_in(host, kept_end.max(kept_start), "\n");
        }
    }
}

/// Appends host bytes `start..end` with Java's escapes read; true when they end with a
/// backslash that joins the next line.
fn escapes_in(host: &Host, start: usize, end: usize, out: &mut SqlText) -> bool {
    let text = &host.text[start..end];
    let mut copied = start;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            continue;
        }
        let at = start + i;
        out.verbatim(host, copied, at);
        let Some(&(_, next)) = chars.peek() else {
            return true;
        };
        let mut escape = String::from('\\');
        escape.push(next);
        chars.next();
        while next.is_digit(8) && escape.len() < 4 && chars.peek().is_some_and(|&(_, d)| d.is_digit(8)) {
            escape.push(chars.next().map_or('0', |(_, d)| d));
        }
        match java_escape(&escape) {
            Escape::Char(c) => out.stand_in(host, at, c.encode_utf8(&mut [0; 4])),
            _ => out.verbatim(host, at, at + escape.len()),
        }
        copied = at + escape.len();
    }
    out.verbatim(host, copied, end);
    false
}

/// Fields and locals (`variable_declarator`s); assignments are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| match node.kind() {
        "variable_declarator" => {
            let (Some(name), Some(value), Some(scope)) =
                (node.child_by_field_name("name"), node.child_by_field_name("value"), scope_of(node, is_scope))
            else {
                return;
            };
            if matches!(scope.kind(), "class_body" | "interface_body" | "enum_body") {
                names.define_field(scope, host.text_of(name), value);
            } else {
                names.define(scope, host.text_of(name), value);
            }
        }
        "assignment_expression" => {
            let Some(left) = node.child_by_field_name("left") else { return };
            let left = left.child_by_field_name("field").unwrap_or(left);
            if let Some(scope) = scope_of(node, is_scope) {
                names.change(scope, host.text_of(left), left);
            }
        }
        _ => {}
    });
    names
}

/// What Java and Kotlin share: which annotations and methods carry SQL, by the file's imports.
pub(super) mod spring {
    use super::super::syntax::{record, Certainty, Eval, Host};
    use super::super::{Extraction, Skipped};
    use tree_sitter::Node;

    /// Words without which a file has none of the calls below (a file without them is not parsed).
    pub const TRIGGERS: [&str; 10] =
        ["@Select", "@Insert", "@Delete", "Query", "query", "pdate", "execute", "prepare", "addBatch", ".sql("];

    /// What the file imports that decides how its annotations read.
    pub struct Imports {
        /// `org.springframework.data.jdbc…Query` or `…r2dbc…Query`: `@Query` is SQL.
        pub spring_data_sql: Option<&'static str>,
        /// A `Query` of another store (MongoDB, Neo4j, Cassandra …): not SQL at all.
        pub other_store_query: bool,
        pub mybatis: bool,
        pub spring_jdbc: bool,
    }

    impl Imports {
        pub fn of(text: &str) -> Imports {
            let imported =
                |prefix: &str| text.match_indices(prefix).any(|(i, _)| text[..i].trim_end().ends_with("import"));
            let spring_data_sql = if imported("org.springframework.data.jdbc.repository.query") {
                Some("Spring Data JDBC")
            } else if imported("org.springframework.data.r2dbc.repository") {
                Some("Spring Data R2DBC")
            } else {
                None
            };
            let other_store_query = ["mongodb", "neo4j", "cassandra", "couchbase", "elasticsearch", "aerospike"]
                .iter()
                .any(|store| imported(&format!("org.springframework.data.{store}")));
            Imports {
                spring_data_sql,
                other_store_query: other_store_query && !imported("org.springframework.data.jpa"),
                mybatis: imported("org.apache.ibatis"),
                spring_jdbc: imported("org.springframework.jdbc"),
            }
        }
    }

    /// Reads annotation `name` whose elements are `values` (key, value; a lone value is
    /// `value`), `native` when it says `nativeQuery = true`.
    pub fn annotation<'k, 't>(
        name: &str,
        native: bool,
        imports: &Imports,
        values: impl Iterator<Item = (&'k str, Node<'t>)>,
        out: &mut Extraction,
        host: &Host,
        eval: impl Fn(Node<'t>) -> Eval,
    ) {
        let name = name.rsplit('.').next().unwrap_or(name);
        let keys: &[&str] = match name {
            "Query" => &["value", "countQuery"],
            "Select" | "Insert" | "Update" | "Delete" if imports.mybatis => &["value"],
            "NamedNativeQuery" => &["query"],
            _ => return,
        };
        let source = match name {
            "Query" if native => "Spring @Query(nativeQuery = true)".to_string(),
            "Query" => match imports.spring_data_sql {
                Some(store) => format!("{store} @Query"),
                None if imports.other_store_query => return,
                None => {
                    for (_, value) in values.filter(|(key, _)| *key == "value") {
                        let at = host.position(value.start_byte());
                        let reason = "JPQL (Spring @Query without nativeQuery = true): not SQL".to_string();
                        out.skipped.push(Skipped { at, reason });
                    }
                    return;
                }
            },
            "NamedNativeQuery" => "JPA @NamedNativeQuery".to_string(),
            mybatis => format!("MyBatis @{mybatis}"),
        };
        let mybatis = matches!(name, "Select" | "Insert" | "Update" | "Delete");
        for (key, value) in values.filter(|(key, _)| keys.contains(key)) {
            let source = if key == "countQuery" { format!("{source} countQuery") } else { source.clone() };
            match annotation_value(value, &eval) {
                Eval::Text(text) if mybatis && text.sql.trim_start().starts_with("<script>") => {
                    super::super::mybatis::script(&text, source, out)
                }
                value => record(out, host, source, value, Certainty::Sql),
            }
        }
    }

    /// An annotation's value; MyBatis joins the strings of an array with a blank.
    fn annotation_value<'t>(value: Node<'t>, eval: &impl Fn(Node<'t>) -> Eval) -> Eval {
        if !matches!(value.kind(), "element_value_array_initializer" | "collection_literal") {
            return eval(value);
        }
        let mut cursor = value.walk();
        let items: Vec<Node> = value.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
        let mut joined = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                joined.push(Eval::Text(super::super::syntax::SqlText { sql: " ".into(), map: Default::default() }));
            }
            joined.push(eval(item));
        }
        super::super::syntax::concat(joined)
    }

    /// A method whose first argument is SQL: its source and how sure that is.
    pub fn method(name: &str, imports: &Imports) -> Option<(String, Certainty)> {
        let template = if imports.spring_jdbc { "JdbcTemplate" } else { "JDBC" };
        let library = match name {
            "createNativeQuery" => return Some(("JPA createNativeQuery".into(), Certainty::Sql)),
            "query" | "queryForObject" | "queryForList" | "queryForMap" | "queryForRowSet" | "queryForStream"
            | "queryForLong" | "queryForInt" | "update" | "batchUpdate" | "execute" => template,
            "sql" => "JdbcClient",
            "prepareStatement" | "prepareCall" | "executeQuery" | "executeUpdate" | "executeLargeUpdate"
            | "addBatch" => "JDBC",
            _ => return None,
        };
        Some((format!("{library} {name}"), Certainty::IfSqlLike))
    }
}

#[cfg(test)]
mod tests {
    use super::super::extraction::Extraction;
    use super::super::testing::{assert_query, unreadable_lines};
    use super::ProjectCalls;

    fn extract(text: &str) -> Extraction {
        super::extract(text, &ProjectCalls::default())
    }

    #[test]
    fn a_file_whose_only_call_is_batch_update_is_read() {
        let text = "class R {\n  static final String UP = \"UPDATE t SET a = ?\";\n  void f() { jdbc.batchUpdate(UP, rows); }\n}\n";
        assert_query(&extract(text), text, "JDBC batchUpdate", "UPDATE t SET a = ?", (2, 29));
    }

    const REPOSITORY: &str = include_str!("../../../fixtures/queries/java/OrderRepository.java");
    const DAO: &str = include_str!("../../../fixtures/queries/java/OrderDao.java");

    #[test]
    fn native_queries_text_blocks_and_concatenation_in_spring_data_repositories() {
        let found = extract(REPOSITORY);
        let native = "Spring @Query(nativeQuery = true)";
        assert_query(&found, REPOSITORY, native, "SELECT * FROM orders WHERE status = :status", (11, 18));
        let block = "SELECT o.*\n  FROM orders o\n WHERE o.customer_id = ?1\n   AND o.created_at > now() - interval '30 days'\n";
        let query = assert_query(&found, REPOSITORY, native, block, (16, 13));
        let at = query.map.position(&query.sql, query.sql.find("o.customer_id").unwrap());
        assert_eq!((at.line, at.column), (18, 20));
        assert_query(&found, REPOSITORY, native, "SELECT count(*) FROM orders WHERE total > 100", (24, 21));
        assert_query(
            &found,
            REPOSITORY,
            "Spring @Query(nativeQuery = true) countQuery",
            "SELECT count(*) FROM orders",
            (26, 21),
        );
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(found.skipped.iter().map(|s| s.at.line).collect::<Vec<_>>(), vec![29]);
    }

    const SCRIPTS: &str = include_str!("../../../fixtures/queries/mybatis/SessionMapper.java");

    #[test]
    fn mybatis_scripts_in_annotations_expand_like_mappers() {
        let found = extract(SCRIPTS);
        let purge = assert_query(
            &found,
            SCRIPTS,
            "MyBatis @Delete",
            "DELETE FROM sessions WHERE client_id IN  ( #{id} )  AND kind = #{kind}",
            (11, 15),
        );
        // Each part lands on its own line of the annotation.
        let at = |sql: &str| purge.map.position(&purge.sql, purge.sql.find(sql).unwrap());
        assert_eq!((at("#{id}").line, at("#{id}").column), (12, 84));
        assert_eq!(at("kind =").line, 13);
        // `&lt;` is XML's `<`; <where> adds its keyword.
        assert_query(
            &found,
            SCRIPTS,
            "MyBatis @Select",
            "SELECT * FROM sessions WHERE id = #{id} AND expires_at < now()",
            (17, 22),
        );
        assert_eq!(found.queries.len(), 2, "{:#?}", found.queries);
        let broken = unreadable_lines(&found);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert_eq!(broken[0].0, 20);
        assert!(broken[0].1.starts_with("not a well-formed MyBatis <script>"), "{broken:?}");
    }

    #[test]
    fn jdbc_template_constants_and_what_is_built_at_run_time() {
        let found = extract(DAO);
        assert_query(&found, DAO, "JdbcTemplate queryForObject", "SELECT total FROM orders WHERE id = ?", (10, 42));
        assert_query(&found, DAO, "JdbcTemplate update", "UPDATE orders SET status = :status WHERE id = :id", (18, 14));
        assert_query(&found, DAO, "JdbcTemplate query", "SELECT id FROM orders\tWHERE \"status\" = 'open'", (23, 23));
        assert_query(&found, DAO, "MyBatis @Select", "SELECT * FROM orders WHERE id = #{id} FOR UPDATE", (33, 19));
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(unreadable_lines(&found), vec![(28, "built at run time with format".to_string())]);
    }

    #[test]
    fn a_project_wrapper_named_in_calls_is_read() {
        let text = "class R {\n  void f() { db.runSql(\"SELECT id FROM riders WHERE lower(email) = ?\", e); other.runSql(\"x\"); }\n}\n";
        let calls = ProjectCalls::new(["db.runSql".to_string()]);
        let found = super::extract(text, &calls);
        assert_query(
            &found,
            text,
            "db.runSql (sluice.toml calls)",
            "SELECT id FROM riders WHERE lower(email) = ?",
            (2, 25),
        );
        assert_eq!(found.queries.len(), 1, "{:#?}", found.queries);
        assert!(extract(text).queries.is_empty(), "not a known call without the setting");
    }
}

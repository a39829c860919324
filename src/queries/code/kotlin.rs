//! Kotlin: the annotations and methods of [`super::java`] (Spring Data `@Query`, MyBatis
//! `@Select` …, `JdbcTemplate`, `NamedParameterJdbcTemplate`, `JdbcClient.sql`, JDBC), read from
//! Kotlin's syntax: string templates whose `${'$'}` is a dollar sign (how Kotlin writes `$1`),
//! raw strings, `+`, `trimIndent()` and `trimMargin()`, and `val`/`const val` definitions
//! (a companion object's constants included). A `$name` or `${expression}` template is text
//! built at run time: unreadable.

use super::extraction::Extraction;
use super::java::spring;
use super::syntax::{
    arguments, c_like_escape, is_plus, parse, plus, record, resolve_name, scope_of, syntax_errors, walk, Escape, Eval,
    Host, LazyNames, Names, SqlText,
};
use tree_sitter::Node;

const STRINGS: [&str; 2] = ["string_literal", "multiline_string_literal"];

fn is_scope(kind: &str) -> bool {
    matches!(kind, "source_file" | "class_body" | "function_declaration" | "lambda_literal" | "anonymous_initializer")
}

pub fn extract(text: &str) -> Extraction {
    let mut out = Extraction::default();
    if !spring::TRIGGERS.iter().any(|t| text.contains(t)) {
        return out;
    }
    let tree = parse(&tree_sitter_kotlin_ng::LANGUAGE.into(), text);
    let host = Host::new(text);
    let root = tree.root_node();
    let file =
        KotlinFile { host: &host, names: LazyNames::new(|| names(root, &host)), imports: spring::Imports::of(text) };
    walk(root, |node| match node.kind() {
        "annotation" => file.annotation(node, &mut out),
        "call_expression" => file.call(node, &mut out),
        _ => {}
    });
    syntax_errors(root, &host, "Kotlin", &STRINGS, &mut out);
    out
}

struct KotlinFile<'a, 't> {
    host: &'a Host<'a>,
    names: LazyNames<'t>,
    imports: spring::Imports,
}

impl<'t> KotlinFile<'_, 't> {
    fn annotation(&self, node: Node<'t>, out: &mut Extraction) {
        let Some(invocation) = arguments(node).into_iter().find(|n| n.kind() == "constructor_invocation") else {
            return;
        };
        let parts = arguments(invocation);
        let Some(name) = parts.iter().find(|n| n.kind() == "user_type").map(|n| self.host.text_of(*n)) else { return };
        let Some(list) = parts.iter().find(|n| n.kind() == "value_arguments") else { return };
        let elements: Vec<(Option<&str>, Node)> =
            arguments(*list).into_iter().filter_map(|a| self.value_argument(a)).collect();
        let native =
            elements.iter().any(|(key, value)| *key == Some("nativeQuery") && self.host.text_of(*value) == "true");
        let values = elements.iter().map(|(key, value)| (key.unwrap_or("value"), *value));
        spring::annotation(name, native, &self.imports, values, out, self.host, |value| self.eval(value, 0));
    }

    /// A `value_argument`'s name (when written `name = value`) and value.
    fn value_argument(&self, argument: Node<'t>) -> Option<(Option<&str>, Node<'t>)> {
        let parts = arguments(argument);
        let value = *parts.last()?;
        let named = parts.len() > 1 && parts[0].kind() == "identifier";
        Some((named.then(|| self.host.text_of(parts[0])), value))
    }

    fn call(&self, node: Node<'t>, out: &mut Extraction) {
        let parts = arguments(node);
        let Some(method) =
            parts.first().filter(|p| p.kind() == "navigation_expression").and_then(|n| arguments(*n).last().copied())
        else {
            return;
        };
        let Some((source, certainty)) = spring::method(self.host.text_of(method), &self.imports) else { return };
        let Some(list) = parts.iter().find(|n| n.kind() == "value_arguments") else { return };
        let Some((_, first)) = arguments(*list).first().and_then(|a| self.value_argument(*a)) else { return };
        record(out, self.host, source, self.eval(first, 0), certainty);
    }

    fn eval(&self, node: Node<'t>, depth: usize) -> Eval {
        match node.kind() {
            "string_literal" | "multiline_string_literal" => self.template(node, depth),
            "binary_expression" if is_plus(node) => plus(node, |n| self.eval(n, depth + 1)),
            "parenthesized_expression" => arguments(node).first().map_or(Eval::NotText, |n| self.eval(*n, depth + 1)),
            "identifier" => {
                let name = self.host.text_of(node);
                resolve_name(self.names.get(), node, name, is_scope, depth, |value, depth| self.eval(value, depth))
            }
            // `Queries.FIND`: the constant `FIND` of the file.
            "navigation_expression" => match arguments(node).last() {
                Some(field) if field.kind() == "identifier" => {
                    let name = self.host.text_of(*field);
                    resolve_name(self.names.get(), *field, name, is_scope, depth, |value, depth| {
                        self.eval(value, depth)
                    })
                }
                _ => Eval::NotText,
            },
            "call_expression" => self.call_value(node, depth),
            _ => Eval::NotText,
        }
    }

    /// `"""…""".trimIndent()`, `.trimMargin()`; anything else called is built at run time.
    fn call_value(&self, node: Node<'t>, depth: usize) -> Eval {
        let parts = arguments(node);
        let navigation = parts.first().filter(|p| p.kind() == "navigation_expression");
        let members = navigation.map(|n| arguments(*n)).unwrap_or_default();
        let method = members.last().map_or("", |m| self.host.text_of(*m));
        let receiver = members.first().copied();
        let list = parts.iter().find(|n| n.kind() == "value_arguments").map(|l| arguments(*l)).unwrap_or_default();
        let first = list.first().and_then(|a| self.value_argument(*a)).map(|(_, v)| v);
        match (method, receiver) {
            ("trimIndent", Some(receiver)) => match self.eval(receiver, depth + 1) {
                Eval::Text(text) => Eval::Text(text.trim_indent(None)),
                other => other,
            },
            ("trimMargin", Some(receiver)) => {
                let prefix = match first.map(|f| self.eval(f, depth + 1)) {
                    None => "|".to_string(),
                    Some(Eval::Text(prefix)) => prefix.sql,
                    Some(_) => {
                        return Eval::runtime(node.start_byte(), "trimMargin with a prefix built at run time", false)
                    }
                };
                match self.eval(receiver, depth + 1) {
                    Eval::Text(text) => Eval::Text(text.trim_indent(Some(&prefix))),
                    other => other,
                }
            }
            _ => {
                let format = if method == "format" && receiver.is_some_and(|r| self.host.text_of(r) != "String") {
                    receiver
                } else {
                    first
                };
                let sql_like = format.is_some_and(|f| self.eval(f, depth + 1).sql_like());
                let called = if method.is_empty() { "a call".to_string() } else { method.to_string() };
                Eval::runtime(node.start_byte(), format!("built at run time with {called}"), sql_like)
            }
        }
    }

    /// A string template: its text, escapes read, `${'$'}` a dollar sign; any other template is
    /// built at run time.
    fn template(&self, node: Node<'t>, depth: usize) -> Eval {
        let mut text = SqlText::default();
        let parts = {
            let mut cursor = node.walk();
            node.children(&mut cursor).collect::<Vec<_>>()
        };
        for (i, part) in parts.iter().enumerate() {
            match part.kind() {
                "string_content" => {
                    // The grammar leaves `$name` as a `$` content before the name's.
                    let dollar = self.host.text_of(*part) == "$";
                    let next = parts.get(i + 1).filter(|n| n.kind() == "string_content").map(|n| self.host.text_of(*n));
                    if dollar && next.is_some_and(|n| n.starts_with(|c: char| c.is_alphabetic() || c == '_')) {
                        let reason = "text interpolated with a $name template";
                        return Eval::runtime(part.start_byte(), reason, looks_like(&text));
                    }
                    text.verbatim(self.host, part.start_byte(), part.end_byte());
                }
                "escape_sequence" => match c_like_escape(self.host.text_of(*part)) {
                    Escape::Char(c) => text.stand_in(self.host, part.start_byte(), c.encode_utf8(&mut [0; 4])),
                    _ => text.verbatim(self.host, part.start_byte(), part.end_byte()),
                },
                "interpolation" => {
                    let inner = arguments(*part);
                    let constant = match inner.as_slice() {
                        [literal] if literal.kind() == "character_literal" => {
                            Some(self.host.text_of(*literal).trim_matches('\'').to_string())
                        }
                        [literal] => match self.eval(*literal, depth + 1) {
                            Eval::Text(value) => Some(value.sql),
                            _ => None,
                        },
                        _ => None,
                    };
                    match constant {
                        Some(value) => text.stand_in(self.host, part.start_byte(), &value),
                        None => {
                            let reason = "text interpolated with a ${…} template";
                            return Eval::runtime(part.start_byte(), reason, looks_like(&text));
                        }
                    }
                }
                _ => {}
            }
        }
        Eval::Text(text)
    }
}

fn looks_like(text: &SqlText) -> bool {
    super::looks_like_sql(&text.sql)
}

/// `val`, `var` and `const val` definitions; assignments are changes.
fn names<'t>(root: Node<'t>, host: &Host<'t>) -> Names<'t> {
    let mut names = Names::default();
    walk(root, |node| match node.kind() {
        "property_declaration" => {
            let parts = arguments(node);
            let Some(position) = parts.iter().position(|p| p.kind() == "variable_declaration") else { return };
            let (Some(name), Some(value), Some(scope)) =
                (arguments(parts[position]).first().copied(), parts.get(position + 1), scope_of(node, is_scope))
            else {
                return;
            };
            if scope.kind() == "class_body" {
                names.define_field(scope, host.text_of(name), *value);
            } else {
                names.define(scope, host.text_of(name), *value);
            }
        }
        "assignment" => {
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
    use super::extract;

    const FIXTURE: &str = include_str!("../../../fixtures/queries/kotlin/InvoiceRepository.kt");

    #[test]
    fn spring_queries_dollar_templates_and_trim_indent() {
        let found = extract(FIXTURE);
        let native = "Spring @Query(nativeQuery = true)";
        assert_query(&found, FIXTURE, native, "SELECT * FROM invoices WHERE customer_id = :customerId", (15, 21));
        let query = assert_query(
            &found,
            FIXTURE,
            native,
            "\n        SELECT id, total\n          FROM invoices\n         WHERE due < now() AND paid = false\n        ",
            (20, 20),
        );
        assert_eq!(query.map.position(&query.sql, query.sql.find("due").unwrap()).line, 23);
        assert_query(&found, FIXTURE, "JdbcTemplate update", "UPDATE invoices SET paid = true WHERE id = $1", (8, 32));
        assert_query(
            &found,
            FIXTURE,
            "JdbcTemplate queryForList",
            "SELECT id\n  FROM invoices\n WHERE total > ?",
            (36, 13),
        );
        assert_eq!(found.queries.len(), 4, "{:#?}", found.queries);
        assert_eq!(found.skipped.len(), 1);
        assert_eq!(unreadable_lines(&found), vec![(45, "text interpolated with a $name template".to_string())]);
    }
}

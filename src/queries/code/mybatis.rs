//! MyBatis XML mappers: each `<select>`, `<insert>`, `<update>` and `<delete>` of a `<mapper>`,
//! expanded to one statement with every optional fragment present, as MyBatis would build it
//! when every condition holds:
//!
//! - `<include refid>` is replaced by the mapper's `<sql id>` fragment (a fragment of another
//!   mapper is not read: unreadable);
//! - `<if>` and `<when>` keep their content; a `<choose>` takes its first `<when>` (the
//!   branches exclude each other: all of them together are no statement MyBatis sends), or its
//!   `<otherwise>`;
//! - `<where>`, `<set>` and `<trim>` add their prefix and drop the leading `AND`/`OR` or trailing
//!   comma (`prefixOverrides`, `suffixOverrides`) as MyBatis's `TrimSqlNode` does;
//! - `<foreach>` is one item: `open`, the body, `close`;
//! - `<selectKey>` is a statement of its own; `<bind>` adds nothing.
//!
//! `#{x}` is a parameter and stays as written. `${x}` is text pasted in before the statement is
//! sent: in a value position (after a comparison, `LIKE`, `LIMIT`, `OFFSET`, `IN (`, or inside
//! quotes) it stays; anywhere else (a table, a column, an `ORDER BY`) the statement cannot be read
//! and is reported as unreadable. Statements for another database (`databaseId="mysql"`, any id but
//! `postgresql`, `postgres…`, `pg`, `pgsql`) are counted, never read; one without `databaseId`
//! is read.
//!
//! The same dynamic SQL in an annotation (`@Delete("<script>… <foreach …>#{id}</foreach></script>")`,
//! MyBatis's `XMLLanguageDriver`) is read by [`script`], positioned in the Java file.

use super::extraction::{Extraction, HostPosition, Unreadable};
use super::syntax::{Host, SqlText};
use crate::error::{Error, Result};
use roxmltree::{Document, Node, ParsingOptions};
use std::collections::HashMap;
use std::path::Path;

const STATEMENTS: [&str; 4] = ["select", "insert", "update", "delete"];
/// How deep `<include>` may nest fragments (a cycle is an error of the mapper, reported).
const MAX_INCLUDES: usize = 16;

pub fn extract(path: &Path, text: &str) -> Result<Extraction> {
    let mut out = Extraction::default();
    if !text.contains("<mapper") {
        return Ok(out);
    }
    let options = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    let document = Document::parse_with_options(text, options).map_err(|e| {
        Error::invalid(path, Some(e.pos().row as usize), format!("not a well-formed MyBatis mapper: {e}"))
    })?;
    let root = document.root_element();
    if root.tag_name().name() != "mapper" {
        return Ok(out);
    }
    let namespace = root.attribute("namespace").unwrap_or("");
    let fragments: HashMap<&str, Node> =
        root.children().filter(|n| n.has_tag_name("sql")).filter_map(|n| n.attribute("id").map(|id| (id, n))).collect();
    let mapper = Mapper { host: Host::new(text), fragments, namespace };
    for statement in root.children().filter(|n| STATEMENTS.contains(&n.tag_name().name())) {
        mapper.statement(statement, &mut out);
        for key in statement.children().filter(|n| n.has_tag_name("selectKey")) {
            mapper.statement(key, &mut out);
        }
    }
    Ok(out)
}

/// A MyBatis annotation's value that is a `<script>` (`literal`, read out of the Java file): its
/// dynamic SQL expanded as a mapper's statement is. `<include>` names fragments of an XML mapper
/// this does not see: unreadable, as is a script that is not well-formed XML.
pub fn script(literal: &SqlText, source: String, out: &mut Extraction) {
    let host = Host::within(literal);
    let document = match Document::parse(&literal.sql) {
        Ok(document) => document,
        Err(e) => {
            let at = host.position(literal.sql.len() - literal.sql.trim_start().len());
            out.unreadable.push(Unreadable { at, source, reason: format!("not a well-formed MyBatis <script>: {e}") });
            return;
        }
    };
    let mapper = Mapper { host, fragments: HashMap::new(), namespace: "" };
    mapper.read(document.root_element(), source, out);
}

struct Mapper<'a, 'input> {
    host: Host<'a>,
    fragments: HashMap<&'a str, Node<'a, 'input>>,
    namespace: &'a str,
}

/// Why a statement cannot be read: where and what.
struct Unread {
    at: HostPosition,
    reason: String,
}

impl<'a, 'input> Mapper<'a, 'input> {
    fn statement(&self, node: Node<'a, 'input>, out: &mut Extraction) {
        let kind = node.tag_name().name();
        let id = node.attribute("id").or_else(|| node.parent_element().and_then(|p| p.attribute("id"))).unwrap_or("");
        let source = format!("MyBatis {kind} {id}");
        if let Some(database) = node.attribute("databaseId").filter(|d| !is_postgres(d)) {
            out.count_other_database(database, format!("databaseId=\"{database}\""));
            return;
        }
        self.read(node, source, out);
    }

    /// The statement `node` holds, expanded, or why it cannot be read.
    fn read(&self, node: Node<'a, 'input>, source: String, out: &mut Extraction) {
        let mut text = SqlText::default();
        let read = self.expand(node, &mut text, 0).and_then(|()| text_interpolation(&text));
        match read {
            Ok(()) => {
                let (start, end) = trimmed(&text.sql);
                out.queries.push(text.slice(start, end).into_query(source));
            }
            Err(unread) => out.unreadable.push(Unreadable { at: unread.at, source, reason: unread.reason }),
        }
    }

    fn expand(&self, node: Node<'a, 'input>, out: &mut SqlText, depth: usize) -> Result<(), Unread> {
        for child in node.children() {
            if child.is_text() {
                self.text(child, out);
                continue;
            }
            if !child.is_element() {
                continue;
            }
            let attribute = |name| child.attribute(name).unwrap_or("");
            match child.tag_name().name() {
                "include" => self.include(child, out, depth)?,
                "choose" => {
                    let branch = child
                        .children()
                        .find(|n| n.has_tag_name("when"))
                        .or_else(|| child.children().find(|n| n.has_tag_name("otherwise")));
                    if let Some(branch) = branch {
                        self.expand(branch, out, depth)?;
                    }
                }
                "where" => self.trim(child, out, depth, "WHERE", "AND |OR ", "", "")?,
                "set" => self.trim(child, out, depth, "SET", "", "", ",")?,
                "trim" => self.trim(
                    child,
                    out,
                    depth,
                    attribute("prefix"),
                    attribute("prefixOverrides"),
                    attribute("suffix"),
                    attribute("suffixOverrides"),
                )?,
                "foreach" => {
                    self.attribute_text(child, "open", out);
                    self.expand(child, out, depth)?;
                    self.attribute_text(child, "close", out);
                }
                "selectKey" | "bind" => {}
                _ => self.expand(child, out, depth)?,
            }
        }
        Ok(())
    }

    /// Attribute `name` of `node` between blanks, at the attribute's value.
    fn attribute_text(&self, node: Node<'a, 'input>, name: &str, out: &mut SqlText) {
        if let Some(attribute) = node.attribute_node(name) {
            let at = attribute.range_value().start;
            out.stand_in(&self.host, at, " ");
            out.stand_in(&self.host, at, attribute.value());
            out.stand_in(&self.host, at + attribute.value().len(), " ");
        }
    }

    fn include(&self, node: Node<'a, 'input>, out: &mut SqlText, depth: usize) -> Result<(), Unread> {
        let refid = node.attribute("refid").unwrap_or("");
        let local = refid.strip_prefix(self.namespace).and_then(|r| r.strip_prefix('.')).unwrap_or(refid);
        let at = self.host.position(node.range().start);
        let Some(fragment) = self.fragments.get(local) else {
            return Err(Unread {
                at,
                reason: format!("<include refid=\"{refid}\"> names no <sql> fragment of this mapper"),
            });
        };
        if depth >= MAX_INCLUDES {
            return Err(Unread {
                at,
                reason: format!("<include refid=\"{refid}\"> nests more than {MAX_INCLUDES} deep"),
            });
        }
        out.stand_in(&self.host, node.range().start, " ");
        self.expand(*fragment, out, depth + 1)?;
        out.stand_in(&self.host, node.range().end.saturating_sub(1), " ");
        Ok(())
    }

    /// MyBatis's `TrimSqlNode`: the content, blanks trimmed, without a leading `prefix_overrides`
    /// or trailing `suffix_overrides` word (`|`-separated, any case), between `prefix` and
    /// `suffix`; nothing when the content is empty.
    #[allow(clippy::too_many_arguments)]
    fn trim(
        &self,
        node: Node<'a, 'input>,
        out: &mut SqlText,
        depth: usize,
        prefix: &str,
        prefix_overrides: &str,
        suffix: &str,
        suffix_overrides: &str,
    ) -> Result<(), Unread> {
        let mut inner = SqlText::default();
        self.expand(node, &mut inner, depth)?;
        let (mut start, mut end) = trimmed(&inner.sql);
        let upper = inner.sql.to_ascii_uppercase();
        if let Some(cut) = prefix_overrides
            .split('|')
            .filter(|p| !p.is_empty())
            .find(|p| upper[start..end].starts_with(&p.to_ascii_uppercase()))
        {
            start += cut.len();
        }
        if let Some(cut) = suffix_overrides
            .split('|')
            .filter(|p| !p.is_empty())
            .find(|p| upper[start..end].ends_with(&p.to_ascii_uppercase()))
        {
            end -= cut.len();
        }
        if start >= end {
            return Ok(());
        }
        let at = node.range().start;
        out.stand_in(&self.host, at, &format!(" {prefix} "));
        out.append(inner.slice(start, end));
        out.stand_in(&self.host, node.range().end.saturating_sub(1), &format!(" {suffix} "));
        Ok(())
    }

    /// A text node's characters with their host positions: entities and CDATA read as XML
    /// reads them (`&lt;` is `<`).
    fn text(&self, node: Node<'a, 'input>, out: &mut SqlText) {
        let range = node.range();
        let raw = &self.host.text[range.clone()];
        let expected = node.text().unwrap_or("");
        if raw == expected {
            out.verbatim(&self.host, range.start, range.end);
            return;
        }
        let mut piece = SqlText::default();
        let mut at = 0;
        while at < raw.len() {
            let rest = &raw[at..];
            let start = range.start + at;
            if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
                let length = cdata.find("]]>").unwrap_or(cdata.len());
                piece.verbatim(&self.host, start + 9, start + 9 + length);
                at += 9 + length + 3;
            } else if rest.starts_with('&') && rest.contains(';') {
                let end = rest.find(';').unwrap_or(0);
                let decoded = match &rest[1..end] {
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "amp" => Some('&'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    code => code
                        .strip_prefix("#x")
                        .map(|h| u32::from_str_radix(h, 16))
                        .or_else(|| code.strip_prefix('#').map(str::parse))
                        .and_then(|n| n.ok())
                        .and_then(char::from_u32),
                };
                match decoded {
                    Some(c) => piece.stand_in(&self.host, start, c.encode_utf8(&mut [0; 4])),
                    None => piece.verbatim(&self.host, start, start + end + 1),
                }
                at += end + 1;
            } else if rest.starts_with('\r') {
                at += 1;
            } else {
                let next = rest[1..].find(['<', '&', '\r']).map_or(rest.len(), |n| n + 1);
                piece.verbatim(&self.host, start, start + next);
                at += next;
            }
        }
        if piece.sql == expected {
            out.append(piece);
        } else {
            // Text this reader does not follow byte for byte: the right text, positioned at its start.
            out.stand_in(&self.host, range.start, expected);
        }
    }
}

fn is_postgres(database: &str) -> bool {
    let database = database.to_ascii_lowercase();
    database.starts_with("postgres") || database == "pg" || database == "pgsql"
}

/// The range of `text` without leading and trailing blanks.
fn trimmed(text: &str) -> (usize, usize) {
    let start = text.len() - text.trim_start().len();
    (start, text.trim_end().len().max(start))
}

/// Checks each `${x}` of a statement: text pasted in a value position stays (see the module's
/// documentation); anywhere else the statement cannot be read.
fn text_interpolation(text: &SqlText) -> Result<(), Unread> {
    let sql = &text.sql;
    for (at, _) in sql.match_indices("${") {
        let before = &sql[..at];
        let after = sql[at..].find('}').map_or("", |end| &sql[at + end + 1..]);
        let glued = before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.')
            || after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.');
        let quoted = before.matches('\'').count() % 2 == 1;
        let previous = before.trim_end();
        let word = previous.rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("").to_ascii_uppercase();
        let value = quoted
            || (!glued
                && (previous.ends_with(['=', '<', '>'])
                    || matches!(word.as_str(), "LIKE" | "ILIKE" | "LIMIT" | "OFFSET")
                    || previous.strip_suffix('(').is_some_and(|p| p.trim_end().to_ascii_uppercase().ends_with(" IN"))));
        if !value {
            let name = sql[at..].split('}').next().unwrap_or("");
            return Err(Unread {
                at: text.map.position(sql, at),
                reason: format!("{name}}} is text pasted into the statement where a name or SQL goes"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_query, unreadable_lines};
    use super::extract;
    use std::path::Path;

    const FIXTURE: &str = include_str!("../../../fixtures/queries/mybatis/OrderMapper.xml");

    #[test]
    fn statements_expand_with_includes_and_every_optional_fragment() {
        let found = extract(Path::new("OrderMapper.xml"), FIXTURE).unwrap();
        let sql = "SELECT  id, customer_id, status, total  FROM orders WHERE id = #{id}";
        let query = assert_query(&found, FIXTURE, "MyBatis select byId", sql, (8, 5));
        // The fragment's columns map to the <sql> element, the rest to the statement.
        assert_eq!(query.map.position(&query.sql, query.sql.find("customer_id").unwrap()).line, 5);
        assert_eq!(query.map.position(&query.sql, query.sql.find("FROM").unwrap()).line, 8);
        let search = "SELECT  id, customer_id, status, total \n      FROM orders\n     WHERE status = #{status}\n      \
                      AND total >= #{minTotal}\n      \n        AND id IN\n         ( #{id} )  \n    ORDER BY created_at DESC";
        let query = assert_query(&found, FIXTURE, "MyBatis select search", search, (12, 5));
        let at = |needle: &str| query.map.position(&query.sql, query.sql.find(needle).unwrap());
        assert_eq!((at("total >=").line, at("total >=").column), (16, 39));
        assert_eq!((at("ORDER BY").line, at("ORDER BY").column), (23, 32));
        let update = "UPDATE orders\n     SET status = #{status},\n      total = #{total}  \n    WHERE id = #{id}";
        assert_query(&found, FIXTURE, "MyBatis update update", update, (29, 5));
        let insert = "INSERT INTO orders (id, customer_id, total) VALUES (#{id}, #{customerId}, #{total})";
        assert_query(&found, FIXTURE, "MyBatis insert insert", insert, (39, 5));
        assert_query(&found, FIXTURE, "MyBatis selectKey insert", "SELECT nextval('orders_id_seq')", (38, 66));
    }

    #[test]
    fn text_interpolation_is_read_only_in_a_value_position() {
        let found = extract(Path::new("OrderMapper.xml"), FIXTURE).unwrap();
        let cdata = "DELETE FROM orders WHERE created_at < #{cutoff} AND note LIKE '%${marker}%'";
        assert_query(&found, FIXTURE, "MyBatis delete purgeOlderThan", cdata, (43, 5));
        let reason = "${column} is text pasted into the statement where a name or SQL goes";
        assert_eq!(unreadable_lines(&found), vec![(47, reason.to_string())]);
        assert_eq!(found.unreadable[0].at.column, 35);
        assert_eq!(found.queries.len(), 6);
        // `byIdMysql` is for MySQL: counted, not read.
        assert!(found.skipped.is_empty());
        let other: Vec<_> =
            found.other_database.iter().map(|o| (o.database.as_str(), o.shown_by.as_str(), o.statements)).collect();
        assert_eq!(other, vec![("mysql", "databaseId=\"mysql\"", 1)]);
    }

    #[test]
    fn a_broken_mapper_is_an_error_naming_its_line_and_other_xml_is_nothing() {
        let error = extract(
            Path::new("m/Broken.xml"),
            "<mapper namespace=\"x\">\n<select id=\"a\">SELECT 1</selec>\n</mapper>",
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("m/Broken.xml:2: not a well-formed MyBatis mapper"), "{error}");
        assert!(extract(Path::new("pom.xml"), "<project><select>x</select></project>").unwrap().is_empty());
        let include =
            "<mapper namespace=\"a\"><select id=\"s\">SELECT <include refid=\"b.cols\"/> FROM t</select></mapper>";
        let found = extract(Path::new("A.xml"), include).unwrap();
        assert_eq!(found.unreadable[0].reason, "<include refid=\"b.cols\"> names no <sql> fragment of this mapper");
    }
}

//! What the tree-sitter extractors share: parsing on a thread's own parser, host positions,
//! SQL text built with its source map, string values evaluated from syntax (literals,
//! compile-time concatenation, names resolved to their single definition) and the rule that
//! turns a call's argument into a query, an unreadable note or nothing.

use super::extraction::{EmbeddedQuery, Extraction, HostPosition, SourceMap, Unreadable};
use super::sql_like::looks_like_sql;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use tree_sitter::{Language as Grammar, Node, Parser, Tree};

/// How deep names may refer to names (`A = B + "…"`, `B = C`): deeper is reported, never followed.
pub const MAX_DEPTH: usize = 24;

/// Parses `text` with `grammar` on this thread's parser (one per worker, reused for every file).
pub fn parse(grammar: &Grammar, text: &str) -> Tree {
    thread_local! {
        static PARSER: RefCell<Parser> = RefCell::new(Parser::new());
    }
    PARSER.with(|parser| {
        let mut parser = parser.borrow_mut();
        // Only fails for a grammar of another ABI version, fixed at build time (a unit test per
        // language parses with it).
        parser.set_language(grammar).expect("a tree-sitter grammar of the core's ABI");
        // Only fails on cancellation or a timeout, neither of which is set.
        parser.parse(text, None).expect("tree-sitter parses without a timeout")
    })
}

/// The host file's text and its line starts (computed once, when a position is first asked).
pub struct Host<'a> {
    pub text: &'a str,
    line_starts: OnceCell<Vec<usize>>,
    /// Where `text` itself stands when it is a literal read out of a host file (a MyBatis
    /// `<script>` in a Java annotation): positions are that file's.
    within: Option<&'a SourceMap>,
}

impl<'a> Host<'a> {
    pub fn new(text: &'a str) -> Self {
        Host { text, line_starts: OnceCell::new(), within: None }
    }

    /// The text of `literal`, a string read out of a host file, positioned in that file.
    pub fn within(literal: &'a SqlText) -> Self {
        Host { text: &literal.sql, line_starts: OnceCell::new(), within: Some(&literal.map) }
    }

    /// The 1-based line and column (in characters) of byte `offset`.
    pub fn position(&self, offset: usize) -> HostPosition {
        if let Some(map) = self.within {
            return map.position(self.text, offset);
        }
        let starts = self
            .line_starts
            .get_or_init(|| std::iter::once(0).chain(self.text.match_indices('\n').map(|(i, _)| i + 1)).collect());
        let line = starts.partition_point(|&start| start <= offset);
        let start = starts[line - 1];
        let column = self.text.get(start..offset).map_or(offset - start, |s| s.chars().count()) + 1;
        HostPosition { line, column }
    }

    pub fn text_of(&self, node: Node) -> &'a str {
        &self.text[node.byte_range()]
    }
}

/// SQL text as it is assembled from a host file, with the map of where each piece stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SqlText {
    pub sql: String,
    pub map: SourceMap,
}

impl SqlText {
    /// Host bytes `start..end`, copied as they are.
    pub fn verbatim(&mut self, host: &Host, start: usize, end: usize) {
        if start < end {
            self.map.push(self.sql.len(), host.position(start));
            // A literal's text is no one run of its file: each piece keeps its own start.
            for run in host.within.iter().flat_map(|map| &map.runs).filter(|r| r.sql_start > start && r.sql_start < end)
            {
                self.map.push(self.sql.len() + run.sql_start - start, run.start);
            }
            self.sql.push_str(&host.text[start..end]);
        }
    }

    /// `text` standing for the host text at byte `at` (an escape's value, a placeholder).
    pub fn stand_in(&mut self, host: &Host, at: usize, text: &str) {
        self.map.push(self.sql.len(), host.position(at));
        self.sql.push_str(text);
    }

    /// Appends `other` (the next operand of a concatenation).
    pub fn append(&mut self, other: SqlText) {
        let shift = self.sql.len();
        for run in other.map.runs {
            self.map.push(run.sql_start + shift, run.start);
        }
        self.sql.push_str(&other.sql);
    }

    /// Bytes `start..end` of the SQL, with their positions.
    pub fn slice(&self, start: usize, end: usize) -> SqlText {
        let mut sliced = SqlText::default();
        if start >= end {
            return sliced;
        }
        sliced.map.push(0, self.map.position(&self.sql, start));
        for run in self.map.runs.iter().filter(|r| r.sql_start > start && r.sql_start < end) {
            sliced.map.push(run.sql_start - start, run.start);
        }
        sliced.sql.push_str(&self.sql[start..end]);
        sliced
    }

    /// Kotlin's `trimIndent()` (`margin` None) or `trimMargin(margin)`: the first and last lines
    /// dropped when blank, and the common indentation (or the blanks and the margin prefix) of
    /// every line removed, blank lines emptied.
    pub fn trim_indent(&self, margin: Option<&str>) -> SqlText {
        let mut lines: Vec<(usize, &str)> = Vec::new();
        let mut at = 0;
        for line in self.sql.split('\n') {
            lines.push((at, line));
            at += line.len() + 1;
        }
        if lines.first().is_some_and(|(_, l)| l.trim().is_empty()) {
            lines.remove(0);
        }
        if lines.len() > 1 && lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
            lines.pop();
        }
        let indent = |line: &str| line.len() - line.trim_start().len();
        let common = lines.iter().filter(|(_, l)| !l.trim().is_empty()).map(|(_, l)| indent(l)).min().unwrap_or(0);
        let mut out = SqlText::default();
        for (i, (start, line)) in lines.iter().enumerate() {
            if i > 0 {
                out.sql.push('\n');
            }
            if line.trim().is_empty() {
                continue;
            }
            let cut = match margin {
                None => common,
                Some(prefix) => {
                    let blank = indent(line);
                    if line[blank..].starts_with(prefix) {
                        blank + prefix.len()
                    } else {
                        0
                    }
                }
            };
            out.append(self.slice(start + cut, start + line.len()));
        }
        out
    }

    pub fn into_query(self, source: String) -> EmbeddedQuery {
        EmbeddedQuery { sql: self.sql, source, map: self.map }
    }
}

/// What an escape sequence stands for.
pub enum Escape {
    Char(char),
    /// A backslash before a line break: nothing; `skip_blanks` also drops the next line's leading
    /// blanks (Rust's string continuation).
    LineContinuation {
        skip_blanks: bool,
    },
    /// Not an escape this decoder knows: the text stays as written.
    Unknown,
}

/// Appends the body of a string literal, host bytes `start..end`, whose `escapes` (nodes, in
/// order, inside that range) are decoded by `decode`; the rest is copied as it is.
pub fn decode_body(
    host: &Host,
    out: &mut SqlText,
    (start, end): (usize, usize),
    escapes: &[Node],
    decode: impl Fn(&str) -> Escape,
) {
    let mut at = start;
    for escape in escapes {
        let range = escape.byte_range();
        if range.start < at || range.end > end {
            continue;
        }
        out.verbatim(host, at, range.start);
        at = range.end;
        match decode(&host.text[range.clone()]) {
            Escape::Char(c) => out.stand_in(host, range.start, c.encode_utf8(&mut [0; 4])),
            Escape::LineContinuation { skip_blanks } => {
                if skip_blanks {
                    let rest = &host.text[at..end];
                    at += rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
                }
            }
            Escape::Unknown => out.verbatim(host, range.start, range.end),
        }
    }
    out.verbatim(host, at, end);
}

/// The common C-like escapes (`\n`, `\t`, `\\`, quotes, `\xHH`, `\u{…}`/`\uHHHH`) and a backslash
/// before a line break; each language adds or removes a few.
pub fn c_like_escape(escape: &str) -> Escape {
    let body = &escape[1..];
    let hex = |digits: &str| u32::from_str_radix(digits, 16).ok().and_then(char::from_u32);
    let decoded = match body.chars().next() {
        Some('n') => Some('\n'),
        Some('t') => Some('\t'),
        Some('r') => Some('\r'),
        Some('0') if body.len() == 1 => Some('\0'),
        Some('\\') => Some('\\'),
        Some('\'') => Some('\''),
        Some('"') => Some('"'),
        Some('`') => Some('`'),
        Some('$') => Some('$'),
        Some('a') => Some('\u{7}'),
        Some('b') => Some('\u{8}'),
        Some('f') => Some('\u{c}'),
        Some('v') => Some('\u{b}'),
        Some('x') => hex(&body[1..]),
        Some('u') | Some('U') => hex(body[1..].trim_start_matches('{').trim_end_matches('}')),
        Some('\n') | Some('\r') => return Escape::LineContinuation { skip_blanks: false },
        _ => None,
    };
    decoded.map_or(Escape::Unknown, Escape::Char)
}

/// A literal between one-character delimiters (`"…"`, `'…'`), its `escape_sequence` nodes read
/// by `decode`.
pub fn quoted_literal(host: &Host, node: Node, decode: impl Fn(&str) -> Escape) -> Eval {
    let mut text = SqlText::default();
    let body = (node.start_byte() + 1, node.end_byte().saturating_sub(1).max(node.start_byte() + 1));
    decode_body(host, &mut text, body, &descendants(node, "escape_sequence"), decode);
    Eval::Text(text)
}

/// `left + right` (a `binary_expression` whose operator is `+`) as a concatenation of the
/// operands' values.
pub fn plus<'t>(node: Node<'t>, eval: impl Fn(Node<'t>) -> Eval) -> Eval {
    let operand = |field| node.child_by_field_name(field).map_or(Eval::NotText, &eval);
    concat([operand("left"), operand("right")])
}

/// Whether `node` is a `+` binary expression.
pub fn is_plus(node: Node) -> bool {
    node.child_by_field_name("operator").is_some_and(|o| o.kind() == "+")
}

/// A string value read from syntax.
#[derive(Debug)]
pub enum Eval {
    Text(SqlText),
    /// Built at run time.
    Runtime(Runtime),
    /// Not a string (a context, a number, a closure).
    NotText,
}

#[derive(Debug)]
pub struct Runtime {
    /// Host byte where the part that cannot be read starts.
    pub at: usize,
    pub reason: String,
    /// A literal part of it looks like SQL: the call is taken for a database call.
    pub sql_like: bool,
}

impl Eval {
    pub fn runtime(at: usize, reason: impl Into<String>, sql_like: bool) -> Eval {
        Eval::Runtime(Runtime { at, reason: reason.into(), sql_like })
    }

    /// Whether a literal part of the value looks like SQL.
    pub fn sql_like(&self) -> bool {
        match self {
            Eval::Text(text) => looks_like_sql(&text.sql),
            Eval::Runtime(runtime) => runtime.sql_like,
            Eval::NotText => false,
        }
    }
}

/// Joins the operands of a compile-time concatenation (`"a" + "b"`, `"a" "b"`): text when every
/// operand is text, else the first operand that is not, noted with whether the text before
/// it looks like SQL.
pub fn concat(operands: impl IntoIterator<Item = Eval>) -> Eval {
    let mut joined = SqlText::default();
    for operand in operands {
        match operand {
            Eval::Text(text) => joined.append(text),
            Eval::Runtime(runtime) => {
                let sql_like = runtime.sql_like || looks_like_sql(&joined.sql);
                return Eval::Runtime(Runtime { sql_like, ..runtime });
            }
            Eval::NotText => return Eval::NotText,
        }
    }
    Eval::Text(joined)
}

/// The single definitions of names in a file, by scope: a name defined once in its scope and
/// never assigned again there is a constant; anything else is built at run time.
#[derive(Default)]
pub struct Names<'t> {
    definitions: HashMap<(usize, &'t str), Vec<Node<'t>>>,
    changes: HashMap<(usize, &'t str), Vec<Node<'t>>>,
    /// Definitions in class bodies, by name: a constant of another class of the file
    /// (`Queries.FIND`, a companion object's `const val`) resolves when it is the only one.
    fields: HashMap<&'t str, Vec<Node<'t>>>,
}

/// [`Names`] collected on first use: most files the prefilter lets through hold no database
/// call whose argument is a name, and collecting walks the whole tree.
pub struct LazyNames<'t> {
    cell: OnceCell<Names<'t>>,
    collect: Box<dyn Fn() -> Names<'t> + 't>,
}

impl<'t> LazyNames<'t> {
    pub fn new(collect: impl Fn() -> Names<'t> + 't) -> Self {
        LazyNames { cell: OnceCell::new(), collect: Box::new(collect) }
    }

    pub fn get(&self) -> &Names<'t> {
        self.cell.get_or_init(|| (self.collect)())
    }
}

pub enum Resolved<'t> {
    /// Its only value.
    Value(Node<'t>),
    /// Defined more than once or assigned again: the first definition (for whether it looks like
    /// SQL) and why it is not a constant.
    Changed {
        first: Option<Node<'t>>,
        reason: String,
    },
    NotFound,
}

impl<'t> Names<'t> {
    pub fn define(&mut self, scope: Node<'t>, name: &'t str, value: Node<'t>) {
        self.definitions.entry((scope.id(), name)).or_default().push(value);
    }

    /// A definition in a class body: also found from outside that class (see `fields`).
    pub fn define_field(&mut self, scope: Node<'t>, name: &'t str, value: Node<'t>) {
        self.define(scope, name, value);
        self.fields.entry(name).or_default().push(value);
    }

    pub fn change(&mut self, scope: Node<'t>, name: &'t str, at: Node<'t>) {
        self.changes.entry((scope.id(), name)).or_default().push(at);
    }

    /// Resolves `name` as used at `at`, from the innermost scope (a node whose kind
    /// `is_scope`) out.
    pub fn resolve(&self, name: &str, at: Node<'t>, is_scope: impl Fn(&str) -> bool) -> Resolved<'t> {
        let mut scope = Some(at);
        while let Some(node) = scope {
            if is_scope(node.kind()) {
                let key = (node.id(), name);
                let definitions = self.definitions.get(&key).map_or(&[][..], Vec::as_slice);
                let changes = self.changes.get(&key).map_or(&[][..], Vec::as_slice);
                match (definitions, changes) {
                    ([], []) => {}
                    ([value], []) => return Resolved::Value(*value),
                    _ if reaching(definitions, changes, at).is_some() => {
                        return reaching(definitions, changes, at).map_or(Resolved::NotFound, Resolved::Value);
                    }
                    _ => {
                        let lines = |nodes: &[Node]| {
                            nodes
                                .iter()
                                .map(|n| (n.start_position().row + 1).to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        };
                        let reason = if changes.is_empty() {
                            format!("`{name}` is set in more than one place (lines {})", lines(definitions))
                        } else {
                            format!("`{name}` is changed at run time (line {})", lines(changes))
                        };
                        return Resolved::Changed { first: definitions.first().copied(), reason };
                    }
                }
            }
            scope = node.parent();
        }
        match self.fields.get(name).map(Vec::as_slice) {
            Some([value]) => Resolved::Value(*value),
            _ => Resolved::NotFound,
        }
    }
}

/// The definition that reaches `at` in straight-line code: the last assignment before it is a
/// definition (not a change such as `q += …`) that sits in no branch or loop the use is outside
/// of (`query = "…"; fetch(query); query = "…"; fetch(query)` reads each; a `q += …` under an `if`
/// makes `q` unreadable after it).
fn reaching<'t>(definitions: &[Node<'t>], changes: &[Node<'t>], at: Node<'t>) -> Option<Node<'t>> {
    let last_definition =
        definitions.iter().filter(|d| d.end_byte() <= at.start_byte()).max_by_key(|d| d.start_byte())?;
    if changes.iter().any(|c| c.start_byte() > last_definition.start_byte() && c.start_byte() < at.start_byte()) {
        return None;
    }
    let mut node = last_definition.parent();
    while let Some(ancestor) = node {
        if ancestor.start_byte() <= at.start_byte() && at.end_byte() <= ancestor.end_byte() {
            return Some(*last_definition);
        }
        let branch = ancestor.kind().split('_').any(|word| {
            matches!(
                word,
                "if" | "elif"
                    | "else"
                    | "for"
                    | "while"
                    | "loop"
                    | "switch"
                    | "case"
                    | "match"
                    | "try"
                    | "catch"
                    | "except"
                    | "finally"
                    | "select"
                    | "ternary"
                    | "conditional"
                    | "do"
            )
        });
        if branch {
            return None;
        }
        node = ancestor.parent();
    }
    None
}

/// The value of the name `node` (text `name`) through its single definition, evaluated by `eval`
/// one level deeper; a name set in several places, changed, not found or too deep is built at
/// run time.
pub fn resolve_name<'t>(
    names: &Names<'t>,
    node: Node<'t>,
    name: &str,
    is_scope: impl Fn(&str) -> bool,
    depth: usize,
    eval: impl Fn(Node<'t>, usize) -> Eval,
) -> Eval {
    if depth >= MAX_DEPTH {
        return Eval::runtime(node.start_byte(), format!("`{name}` refers to names more than {MAX_DEPTH} deep"), false);
    }
    match names.resolve(name, node, is_scope) {
        Resolved::Value(value) => eval(value, depth + 1),
        Resolved::Changed { first, reason } => {
            let sql_like = first.is_some_and(|first| eval(first, depth + 1).sql_like());
            Eval::runtime(node.start_byte(), reason, sql_like)
        }
        Resolved::NotFound => {
            Eval::runtime(node.start_byte(), format!("`{name}` is not a constant of this file"), false)
        }
    }
}

/// The nearest ancestor of `node` (itself excluded) whose kind `is_scope`.
pub fn scope_of<'t>(node: Node<'t>, is_scope: impl Fn(&str) -> bool) -> Option<Node<'t>> {
    let mut parent = node.parent();
    while let Some(p) = parent {
        if is_scope(p.kind()) {
            return Some(p);
        }
        parent = p.parent();
    }
    None
}

/// Every node of the tree in document order, without recursion.
pub fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>)) {
    let mut cursor = root.walk();
    loop {
        visit(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The descendants of `node` whose kind is `kind`, in order.
pub fn descendants<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    walk(node, |n| {
        if n.kind() == kind && n.id() != node.id() {
            found.push(n);
        }
    });
    found
}

/// The named children of `node` (comments excluded).
pub fn arguments<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).filter(|c| !c.kind().contains("comment")).collect()
}

/// How a call's SQL argument becomes part of the extraction.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// The call takes only SQL (`query!`, `@Query(nativeQuery = true)`, `$queryRaw`): its text is
    /// a query, and what cannot be read is reported.
    Sql,
    /// A method name other libraries use too: only SQL-looking text counts (see [`super::sql_like`]).
    IfSqlLike,
}

/// Adds what `value`, the SQL argument of a call named by `source`, yields.
pub fn record(out: &mut Extraction, host: &Host, source: String, value: Eval, certainty: Certainty) {
    match value {
        Eval::Text(text) if certainty == Certainty::Sql || looks_like_sql(&text.sql) => {
            out.queries.push(text.into_query(source));
        }
        Eval::Runtime(runtime) if certainty == Certainty::Sql || runtime.sql_like => {
            out.unreadable.push(Unreadable { at: host.position(runtime.at), source, reason: runtime.reason });
        }
        _ => {}
    }
}

/// One note per region the grammar could not read that holds an SQL-looking string: a database
/// call inside it may have been missed, and the gate says so.
pub fn syntax_errors(root: Node, host: &Host, language: &str, string_kinds: &[&str], out: &mut Extraction) {
    if !root.has_error() {
        return;
    }
    walk(root, |node| {
        if node.kind() != "ERROR" {
            return;
        }
        let mut sql_inside = false;
        walk(node, |inner| {
            if string_kinds.contains(&inner.kind()) {
                let text = host.text_of(inner).trim_start_matches(|c: char| c.is_alphabetic() || "\"'`#@$".contains(c));
                sql_inside |= looks_like_sql(text);
            }
        });
        if sql_inside {
            out.unreadable.push(Unreadable {
                at: host.position(node.start_byte()),
                source: format!("{language} file"),
                reason: format!("the {language} parser could not read this part of the file; SQL in it is not checked"),
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters_from_the_line_start() {
        let host = Host::new("ab\nçé = 'x'\n");
        assert_eq!(host.position(0), HostPosition { line: 1, column: 1 });
        assert_eq!(host.position(3), HostPosition { line: 2, column: 1 });
        // `=` is byte 8 (ç and é are two bytes each) and character 4.
        assert_eq!(host.position(8), HostPosition { line: 2, column: 4 });
    }

    #[test]
    fn appended_text_keeps_its_positions() {
        let host = Host::new("x = \"SELECT 1 \" +\n    \"FROM t\"");
        let mut first = SqlText::default();
        first.verbatim(&host, 5, 14);
        let mut second = SqlText::default();
        second.verbatim(&host, 23, 29);
        first.append(second);
        assert_eq!(first.sql, "SELECT 1 FROM t");
        assert_eq!(first.map.position(&first.sql, 9), HostPosition { line: 2, column: 6 });
    }
}

//! Query parameters in every style applications write them, turned into PostgreSQL's own `$n`
//! so that a parameter is read as a parameter: `?` (JDBC, ActiveRecord), `:name` and psql's
//! `:name` / `:'name'` / `:"name"`, `@name` and `sqlc.arg(x)` / `sqlc.narg(x)` /
//! `sqlc.slice(x)` (sqlc), `%s` / `%(name)s` (psycopg), `#{x}` (MyBatis). Read as PostgreSQL
//! reads the text, `@id` is the absolute-value operator applied to the column `id` and
//! `sqlc.arg(id)` a function wrapping it, and `?` or `%s` do not parse at all.
//!
//! The text is read with [`super::lex`] (so nothing inside a string, a quoted identifier, a
//! dollar quote or a comment is touched) and the rewrite keeps every line where it was: a
//! parameter written across lines (`#{\n id}`) keeps its newlines. Columns move on the lines
//! that hold a rewritten parameter; [`Rewrite::original`] maps a byte of the new text back.
//!
//! Each statement numbers its own parameters, after the highest `$n` it already has; a named
//! parameter keeps its number wherever it appears in the statement (sqlc: `@id` and
//! `sqlc.arg(id)` are the same parameter).

use super::lex::{Kind, Lexeme, Lexer};
use std::borrow::Cow;
use std::collections::HashMap;

/// The text with its parameters written `$n`, and the way back to the text as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewrite {
    /// The rewritten text; `None` when there was nothing to rewrite (the text as written).
    text: Option<String>,
    edits: Vec<Edit>,
    /// Every parameter rewritten, in text order.
    pub parameters: Vec<Parameter>,
}

/// One replacement: `old` of the text as written became `new` of the rewritten text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Edit {
    old: (usize, usize),
    new: (usize, usize),
}

/// A parameter as the application wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    /// `$n` in the rewritten statement.
    pub number: usize,
    /// The name of a named parameter (`id` for `@id`, `:id`, `sqlc.arg(id)`, `#{id}`).
    pub name: Option<String>,
    /// As written: `@id`, `?`, `sqlc.narg('email')`.
    pub written: String,
    /// Byte offset in the text as written.
    pub at: usize,
}

impl Rewrite {
    /// The rewritten text (`written` itself when nothing was rewritten).
    pub fn text<'a>(&'a self, written: &'a str) -> &'a str {
        self.text.as_deref().unwrap_or(written)
    }

    /// The rewritten text, owned or borrowed.
    pub fn into_text(self, written: &str) -> Cow<'_, str> {
        match self.text {
            Some(text) => Cow::Owned(text),
            None => Cow::Borrowed(written),
        }
    }

    pub fn is_identity(&self) -> bool {
        self.text.is_none()
    }

    /// The byte of the text as written that byte `offset` of the rewritten text stands for
    /// (any byte of a rewritten parameter stands for the parameter's first byte).
    pub fn original(&self, offset: usize) -> usize {
        let index = self.edits.partition_point(|e| e.new.0 <= offset);
        match index.checked_sub(1).map(|i| self.edits[i]) {
            None => offset,
            Some(edit) if offset < edit.new.1 => edit.old.0,
            Some(edit) => offset - edit.new.1 + edit.old.1,
        }
    }
}

/// Rewrites every parameter of `text` as `$n` (see the module's documentation).
pub fn rewrite(text: &str) -> Rewrite {
    // Most query files have none of the characters a non-`$n` parameter starts with.
    if !text.bytes().any(|b| matches!(b, b'?' | b'@' | b':' | b'%' | b'#')) && !contains_sqlc(text) {
        return Rewrite::default();
    }
    let lexemes: Vec<Lexeme> = Lexer::new(text).map_while(Result::ok).collect();
    let mut out = Rewrite::default();
    let mut new_text = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    for statement in lexemes.split(|l| l.kind == Kind::Semicolon) {
        let found = Statement::new(text, statement).parameters();
        if found.is_empty() {
            continue;
        }
        let mut numbers = Numbers::after(highest_dollar_parameter(text, statement));
        for (start, end, replacement) in found {
            let number = match &replacement {
                Replacement::Parameter(name) | Replacement::List(name) => numbers.of(name.as_deref()),
                Replacement::Text(_) => 0,
            };
            new_text.push_str(&text[copied..start]);
            let new_start = new_text.len();
            match &replacement {
                Replacement::Parameter(name) | Replacement::List(name) => {
                    let list = matches!(replacement, Replacement::List(_));
                    new_text.push_str(if list { "($" } else { "$" });
                    new_text.push_str(&number.to_string());
                    if list {
                        new_text.push(')');
                    }
                    out.parameters.push(Parameter {
                        number,
                        name: name.clone(),
                        written: text[start..end].to_string(),
                        at: start,
                    });
                }
                Replacement::Text(text) => new_text.push_str(text),
            }
            // Written against a name or another parameter (`:'v'ALL`, `:'v':'v'`), `$n` would run
            // on into it (`$1ALL`, `$1$1`: a tokenizer error); the value put there would not.
            if text[end..].bytes().next().is_some_and(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b':' | b'?' | b'@' | b'%' | b'#') || b >= 0x80
            }) {
                new_text.push(' ');
            }
            // The lines stay where they were.
            new_text.extend(text[start..end].chars().filter(|&c| c == '\n'));
            out.edits.push(Edit { old: (start, end), new: (new_start, new_text.len()) });
            copied = end;
        }
    }
    if out.edits.is_empty() {
        return Rewrite::default();
    }
    new_text.push_str(&text[copied..]);
    out.text = Some(new_text);
    out
}

fn contains_sqlc(text: &str) -> bool {
    text.as_bytes().windows(5).any(|w| w.eq_ignore_ascii_case(b"sqlc."))
}

/// `$n` numbers for a statement's parameters: positional ones in order, named ones once.
struct Numbers {
    next: usize,
    named: HashMap<String, usize>,
}

impl Numbers {
    fn after(highest: usize) -> Numbers {
        Numbers { next: highest + 1, named: HashMap::new() }
    }

    fn of(&mut self, name: Option<&str>) -> usize {
        let fresh = |next: &mut usize| {
            *next += 1;
            *next - 1
        };
        match name {
            None => fresh(&mut self.next),
            Some(name) => match self.named.get(name) {
                Some(&n) => n,
                None => {
                    let n = fresh(&mut self.next);
                    self.named.insert(name.to_string(), n);
                    n
                }
            },
        }
    }
}

fn highest_dollar_parameter(text: &str, statement: &[Lexeme]) -> usize {
    statement
        .iter()
        .filter_map(|l| text[l.start.byte..l.end.byte].strip_prefix('$')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0)
}

enum Replacement {
    /// A parameter, with its name if it has one.
    Parameter(Option<String>),
    /// A parameter right after `IN` (`IN :ids`, JPA's and Spring's collection parameter;
    /// psycopg's `IN %s` with a tuple): the driver expands it to a parenthesized list, so it
    /// is read `IN ($n)`.
    List(Option<String>),
    /// Text that stands for what sqlc writes there (`sqlc.embed(t)` → `t.*`).
    Text(String),
}

/// The significant lexemes of one statement (no spaces or comments), with the text.
struct Statement<'a> {
    text: &'a str,
    lexemes: Vec<Lexeme>,
}

/// Characters PostgreSQL's operators are made of (`scan.l`'s `op_chars`).
fn is_operator_char(b: u8) -> bool {
    b"~!@#^&|`?+-*/%<>=".contains(&b)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

/// Keywords after which an expression starts: a `?` there is a parameter, not the jsonb operator.
const BEFORE_EXPRESSION: &[&str] = &[
    "all",
    "and",
    "any",
    "array",
    "between",
    "by",
    "case",
    "distinct",
    "else",
    "from",
    "having",
    "ilike",
    "in",
    "is",
    "like",
    "limit",
    "not",
    "offset",
    "on",
    "or",
    "return",
    "returning",
    "select",
    "set",
    "similar",
    "some",
    "then",
    "to",
    "using",
    "values",
    "when",
    "where",
    "with",
    "fetch",
    "first",
    "next",
    "into",
    "escape",
];

impl<'a> Statement<'a> {
    fn new(text: &'a str, lexemes: &[Lexeme]) -> Statement<'a> {
        let lexemes = lexemes
            .iter()
            .copied()
            .filter(|l| !matches!(l.kind, Kind::Space | Kind::LineComment | Kind::BlockComment))
            .collect();
        Statement { text, lexemes }
    }

    fn str(&self, i: usize) -> &'a str {
        self.lexemes.get(i).map_or("", |l| &self.text[l.start.byte..l.end.byte])
    }

    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.text.as_bytes().get(offset).copied()
    }

    /// Lexeme `i + 1` starts right where `i` ends.
    fn adjacent(&self, i: usize) -> bool {
        matches!((self.lexemes.get(i), self.lexemes.get(i + 1)), (Some(a), Some(b)) if a.end.byte == b.start.byte)
    }

    /// Whether lexeme `i` ends an operand (a `?` after it is an operator).
    fn ends_operand(&self, i: usize) -> bool {
        let lexeme = &self.lexemes[i];
        let text = self.str(i);
        match lexeme.kind {
            Kind::CloseParen => true,
            Kind::Word => !BEFORE_EXPRESSION.iter().any(|k| text.eq_ignore_ascii_case(k)),
            Kind::Other => text.starts_with(['\'', '"', '$', ']']) || text.as_bytes()[0].is_ascii_alphanumeric(),
            _ => false,
        }
    }

    /// The parameters found, as (start, end, replacement), in text order.
    fn parameters(&self) -> Vec<(usize, usize, Replacement)> {
        let mut out = Vec::new();
        let mut brackets = 0usize;
        let mut i = 0;
        while i < self.lexemes.len() {
            let text = self.str(i);
            let start = self.lexemes[i].start.byte;
            match text {
                "[" => brackets += 1,
                "]" => brackets = brackets.saturating_sub(1),
                _ => {}
            }
            if let Some((last, replacement)) = self.parameter_at(i, brackets > 0) {
                let after_in = i.checked_sub(1).is_some_and(|p| self.str(p).eq_ignore_ascii_case("in"));
                let replacement = match replacement {
                    Replacement::Parameter(name) if after_in => Replacement::List(name),
                    other => other,
                };
                out.push((start, self.lexemes[last].end.byte, replacement));
                i = last + 1;
                continue;
            }
            i += 1;
        }
        out
    }

    /// Whether lexeme `i` follows a comparison operator with nothing between them.
    fn comparison_right_before(&self, i: usize) -> bool {
        i.checked_sub(1).is_some_and(|p| {
            self.lexemes[p].end.byte == self.lexemes[i].start.byte
                && matches!(self.str(p), "=" | "<>" | "!=" | "<" | ">" | "<=" | ">=")
        })
    }

    /// Whether lexeme `i` follows `=`, `<>` or `!=` with nothing between them.
    fn equality_right_before(&self, i: usize) -> bool {
        i.checked_sub(1).is_some_and(|p| {
            self.lexemes[p].end.byte == self.lexemes[i].start.byte && matches!(self.str(p), "=" | "<>" | "!=")
        })
    }

    /// The parameter starting at lexeme `i`, if any: the index of its last lexeme and what
    /// replaces it.
    fn parameter_at(&self, i: usize, in_brackets: bool) -> Option<(usize, Replacement)> {
        let lexeme = self.lexemes[i];
        let before = lexeme.start.byte.checked_sub(1).and_then(|b| self.byte_at(b));
        let after = self.byte_at(lexeme.end.byte);
        let part_of_operator = |b: Option<u8>| b.is_some_and(is_operator_char);
        let named = |s: &str| Replacement::Parameter(Some(unquote(s)));
        match self.str(i) {
            // `id=?` (boundary's `where dkv.private_id=?`): a comparison right before it, and no
            // PostgreSQL type has an `=?` operator.
            "?" if (!part_of_operator(before) || self.comparison_right_before(i)) && !part_of_operator(after) => {
                let operand_before = i.checked_sub(1).is_some_and(|p| self.ends_operand(p));
                // SQLite's numbered `?NNN`: the same number is the same parameter.
                let number = self.str(i + 1);
                let numbered = self.adjacent(i) && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
                let replacement = match numbered {
                    true => (i + 1, Replacement::Parameter(Some(format!("?{number}")))),
                    false => (i, Replacement::Parameter(None)),
                };
                (!operand_before).then_some(replacement)
            }
            // `public_id=@public_id` (boundary): no PostgreSQL operator is `=@` (but `<@` is).
            "@" if (!part_of_operator(before) || self.equality_right_before(i))
                && after.is_some_and(is_ident_start)
                && self.adjacent(i) =>
            {
                Some((i + 1, named(self.str(i + 1))))
            }
            ":" if !in_brackets && before != Some(b':') && !matches!(after, Some(b':' | b'=')) && self.adjacent(i) => {
                let next = self.str(i + 1);
                let is_name = self.lexemes[i + 1].kind == Kind::Word || next.starts_with(['\'', '"']);
                is_name.then(|| (i + 1, named(next)))
            }
            "%" if before != Some(b'%') && self.adjacent(i) => self.psycopg(i),
            "#" if after == Some(b'{') => self.mybatis(i),
            word if word.eq_ignore_ascii_case("sqlc") && self.str(i + 1) == "." => self.sqlc(i),
            _ => None,
        }
    }

    /// `%s` (also psycopg 3's `%b` and `%t`) and `%(name)s`.
    fn psycopg(&self, i: usize) -> Option<(usize, Replacement)> {
        let is_format = |s: &str| matches!(s, "s" | "b" | "t");
        if is_format(self.str(i + 1)) {
            return Some((i + 1, Replacement::Parameter(None)));
        }
        let chained = (i..i + 4).all(|j| self.adjacent(j));
        (chained && self.str(i + 1) == "(" && self.str(i + 3) == ")" && is_format(self.str(i + 4)))
            .then(|| (i + 4, Replacement::Parameter(Some(self.str(i + 2).to_string()))))
    }

    /// `#{name}` and `#{name, jdbcType=VARCHAR}`: up to the closing brace.
    fn mybatis(&self, i: usize) -> Option<(usize, Replacement)> {
        let close = (i + 1..self.lexemes.len()).find(|&j| self.str(j) == "}")?;
        let from = self.lexemes[i].end.byte + 1;
        let inside = &self.text[from..self.lexemes[close].start.byte];
        let name = inside.split(',').next().unwrap_or("").trim();
        Some((close, Replacement::Parameter(Some(name.to_string()))))
    }

    /// `sqlc.arg(name)`, `sqlc.narg(name)`, `sqlc.slice(name)` (names bare, quoted or as a
    /// string) and `sqlc.embed(table)`, which sqlc expands to the table's columns.
    fn sqlc(&self, i: usize) -> Option<(usize, Replacement)> {
        let function = self.str(i + 2).to_ascii_lowercase();
        if self.str(i + 3) != "(" || self.str(i + 5) != ")" {
            return None;
        }
        let argument = unquote(self.str(i + 4));
        match function.as_str() {
            "arg" | "narg" | "slice" => Some((i + 5, Replacement::Parameter(Some(argument)))),
            "embed" => Some((i + 5, Replacement::Text(format!("{}.*", self.str(i + 4))))),
            _ => None,
        }
    }
}

/// `'email'` or `"email"` → `email`.
fn unquote(s: &str) -> String {
    let quoted = s.len() >= 2 && (s.starts_with('\'') && s.ends_with('\'') || s.starts_with('"') && s.ends_with('"'));
    if quoted {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> String {
        rewrite(text).text(text).to_string()
    }

    #[test]
    fn every_style_becomes_a_numbered_parameter() {
        assert_eq!(rewritten("SELECT * FROM t WHERE a = ? AND b = ?"), "SELECT * FROM t WHERE a = $1 AND b = $2");
        assert_eq!(rewritten("WHERE id = @id AND org = @org OR id = @id"), "WHERE id = $1 AND org = $2 OR id = $1");
        assert_eq!(rewritten("WHERE id = sqlc.arg(id) AND e = sqlc.narg('e')"), "WHERE id = $1 AND e = $2");
        assert_eq!(rewritten("WHERE id IN (sqlc.slice(ids)) AND x = @ids"), "WHERE id IN ($1) AND x = $1");
        assert_eq!(rewritten("WHERE a = %s AND b = %(name)s AND c = %(name)s"), "WHERE a = $1 AND b = $2 AND c = $2");
        assert_eq!(rewritten("WHERE a = #{id} AND b = #{name,jdbcType=VARCHAR}"), "WHERE a = $1 AND b = $2");
        assert_eq!(rewritten("WHERE a = :id AND b = :'name' AND c = :\"col\""), "WHERE a = $1 AND b = $2 AND c = $3");
        assert_eq!(rewritten("SELECT sqlc.embed(users), 1 FROM users"), "SELECT users.*, 1 FROM users");
        // Without blanks (boundary's `where dkv.private_id=?`): one operator to the lexer.
        assert_eq!(rewritten("WHERE a=? AND b<>? AND c>=?"), "WHERE a=$1 AND b<>$2 AND c>=$3");
        assert_eq!(rewritten("WHERE id=@id AND r <@ @range AND s<@t"), "WHERE id=$1 AND r <@ $2 AND s<@t");
    }

    #[test]
    fn sqlite_numbered_parameters_keep_their_identity() {
        assert_eq!(rewritten("SELECT * FROM store WHERE id = ?1"), "SELECT * FROM store WHERE id = $1");
        assert_eq!(rewritten("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?4)"), "INSERT INTO t VALUES ($1, $2, $3, $4, $4)");
        assert_eq!(rewritten("WHERE b = ?2 AND a = ?1 OR a = ?1"), "WHERE b = $1 AND a = $2 OR a = $2");
        // The jsonb operators stay operators.
        assert_eq!(
            rewritten("WHERE tags ? 'x' AND d ?| array['a'] AND e = ?"),
            "WHERE tags ? 'x' AND d ?| array['a'] AND e = $1"
        );
    }

    #[test]
    fn a_parameter_never_runs_on_into_what_follows_it() {
        assert_eq!(rewritten("SELECT :'v':'v' UNION SELECT 1"), "SELECT $1 $1 UNION SELECT 1");
        assert_eq!(rewritten("SELECT :'v'ALL SELECT 1"), "SELECT $1 ALL SELECT 1");
        assert_eq!(rewritten("SELECT a FROM t WHERE a = ?"), "SELECT a FROM t WHERE a = $1");
        let text = "SELECT :'v'AS x";
        let r = rewrite(text);
        let new = r.text(text);
        assert_eq!(new, "SELECT $1 AS x");
        assert_eq!(r.original(new.find("AS").unwrap()), text.find("AS").unwrap());
    }

    #[test]
    fn a_parameter_right_after_in_is_the_list_the_driver_expands() {
        // ThingsBoard's Spring Data queries: `WHERE entity_id in :entityIds`.
        assert_eq!(
            rewritten("SELECT k FROM kv WHERE entity_id in :entityIds AND t = :t ORDER BY k"),
            "SELECT k FROM kv WHERE entity_id in ($1) AND t = $2 ORDER BY k"
        );
        assert_eq!(rewritten("WHERE a IN ? AND b NOT IN %s"), "WHERE a IN ($1) AND b NOT IN ($2)");
        // Already in parentheses, or an array: as it is.
        assert_eq!(rewritten("WHERE a IN (:ids) AND b = ANY(:arr)"), "WHERE a IN ($1) AND b = ANY($2)");
        let text = "SELECT 1 FROM t WHERE a in :ids AND lower(b) = ?";
        let r = rewrite(text);
        let new = r.text(text);
        let at = new.find("lower").unwrap();
        assert_eq!(&text[r.original(at)..r.original(at) + 5], "lower");
    }

    #[test]
    fn numbering_continues_after_dollar_parameters_and_restarts_per_statement() {
        assert_eq!(rewritten("WHERE a = $2 AND b = ?; SELECT ?"), "WHERE a = $2 AND b = $3; SELECT $1");
    }

    #[test]
    fn operators_casts_strings_and_comments_are_left_alone() {
        for text in [
            "SELECT data ? 'key', data ?| array['a'], data ?& b FROM t",
            "SELECT @ -5, tags @> $1, tags <@ array[1], x @@ q FROM t",
            "SELECT a::text, b := 1, arr[1:n], arr[lo:hi] FROM t",
            "SELECT a % b, a %s2 FROM t",
            "SELECT '?', ':x', '@id', \"sqlc.arg(x)\" -- ? @id :x\n/* %s */ FROM t",
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT @x $$",
            "SELECT a # b, sqlc.other(x) FROM t",
        ] {
            assert_eq!(rewritten(text), text);
            assert!(rewrite(text).is_identity(), "{text}");
        }
    }

    #[test]
    fn lines_stay_and_offsets_map_back() {
        let text = "SELECT *\nFROM t WHERE a = #{\n  id} AND lower(b) = ?";
        let r = rewrite(text);
        let new = r.text(text);
        assert_eq!(new, "SELECT *\nFROM t WHERE a = $1\n AND lower(b) = $2");
        assert_eq!(new.lines().count(), text.lines().count());
        let at = new.find("lower").unwrap();
        assert_eq!(&text[r.original(at)..r.original(at) + 5], "lower");
        // Inside a parameter: its first byte.
        assert_eq!(r.original(new.find("$2").unwrap() + 1), text.find('?').unwrap());
        assert_eq!(r.parameters.iter().map(|p| p.written.as_str()).collect::<Vec<_>>(), ["#{\n  id}", "?"]);
        assert_eq!(r.parameters[0].name.as_deref(), Some("id"));
    }
}

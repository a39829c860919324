//! Tokens of plain statements, read a byte at a time.
//!
//! sqlparser's tokenizer walks a statement a character at a time through a peekable iterator and
//! builds every word one character at a time: a third of linting a history went there. Most
//! migration DDL is plain — ASCII words, quoted names, integers, strings, dollar-quoted bodies,
//! parentheses, commas, casts, comparisons, `+ - ||` and `--` comments — and this reads those
//! statements into exactly the tokens and positions sqlparser gives them. Anything else (block
//! comments, escape strings and backslashes, parameters, other operators, non-ASCII text outside
//! strings, bodies and comments, numbers with fractions or exponents) makes
//! [`tokenize`] return `None`, and sqlparser's tokenizer reads the statement as before. Debug
//! builds (the test suite) read every statement both ways and require the same tokens, with the
//! same spans.

use sqlparser::ast::DollarQuotedString;
use sqlparser::keywords::{Keyword, ALL_KEYWORDS, ALL_KEYWORDS_INDEX};
use sqlparser::tokenizer::{Location, Span, Token, TokenWithSpan, Word};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The tokens of `statement` without whitespace, or `None` when it is not plain. They are
/// positioned in the file (line and column 1-based, columns in characters): the statement
/// starts at `start`, so its first line's columns count from there.
pub fn tokenize(statement: &str, start: Location) -> Option<Vec<TokenWithSpan>> {
    let bytes = statement.as_bytes();
    // COPY … FROM STDIN carries data sqlparser's tokenizer treats specially.
    if bytes.len() >= 4 && bytes[..4].eq_ignore_ascii_case(b"copy") {
        return None;
    }
    // About a token per five bytes of DDL; a long string or body is one token, so no more up front.
    let mut tokens = Vec::with_capacity((bytes.len() / 5 + 1).min(4096));
    let mut reader = Reader { bytes, at: 0, line: start.line, column: start.column };
    while let Some(&b) = bytes.get(reader.at) {
        match b {
            b' ' | b'\t' => {
                reader.advance_ascii(1);
                continue;
            }
            b'\n' => {
                reader.advance_newline();
                continue;
            }
            _ => {}
        }
        let start = reader.location();
        let (token, len) = match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let len = reader.run(is_word_byte);
                // `E'…'`, `N'…'`, `U&'…'` and the like are strings, `$` continues a name.
                if matches!(reader.after(len), Some(b'\'' | b'"' | b'$' | b'&'))
                    || !reader.after(len).is_none_or(|b| b.is_ascii())
                {
                    return None;
                }
                (word(&statement[reader.at..reader.at + len]), len)
            }
            b'0'..=b'9' => {
                let len = reader.run(|b| b.is_ascii_digit());
                if reader.after(len).is_some_and(|b| is_word_byte(b) || matches!(b, b'.' | b'$') || !b.is_ascii()) {
                    return None;
                }
                (Token::Number(statement[reader.at..reader.at + len].to_string(), false), len)
            }
            b'"' => {
                let len = 1 + bytes[reader.at + 1..].iter().position(|&b| b == b'"')? + 1;
                let value = &statement[reader.at + 1..reader.at + len - 1];
                if reader.after(len) == Some(b'"')
                    || value.is_empty()
                    || !value.bytes().all(|b| b.is_ascii() && b != b'\n')
                {
                    return None;
                }
                (
                    Token::Word(Word { value: value.to_string(), quote_style: Some('"'), keyword: Keyword::NoKeyword }),
                    len,
                )
            }
            b'\'' => {
                // `''` stands for one quote; a backslash is left to sqlparser (escape strings).
                let mut value = String::new();
                let mut at = reader.at + 1;
                loop {
                    let close = at + bytes[at..].iter().position(|&b| b == b'\'')?;
                    value.push_str(&statement[at..close]);
                    at = close + 1;
                    if bytes.get(at) != Some(&b'\'') {
                        break;
                    }
                    value.push('\'');
                    at += 1;
                }
                if value.contains('\\') {
                    return None;
                }
                (Token::SingleQuotedString(value), at - reader.at)
            }
            b'$' => {
                // `$$…$$` or `$tag$…$tag$`: the body runs to the first closing delimiter.
                let tag = bytes[reader.at + 1..].iter().take_while(|&&b| is_word_byte(b)).count();
                let opening = statement.get(reader.at..reader.at + tag + 2)?;
                if !opening.ends_with('$') || opening.as_bytes()[1].is_ascii_digit() {
                    return None; // a parameter (`$1`), or not dollar quoting
                }
                let body_start = reader.at + opening.len();
                let body_len = statement[body_start..].find(opening)?;
                let quoted = DollarQuotedString {
                    value: statement[body_start..body_start + body_len].to_string(),
                    tag: (tag > 0).then(|| opening[1..opening.len() - 1].to_string()),
                };
                (Token::DollarQuotedString(quoted), 2 * opening.len() + body_len)
            }
            b'(' => (Token::LParen, 1),
            b')' => (Token::RParen, 1),
            b'[' => (Token::LBracket, 1),
            b']' => (Token::RBracket, 1),
            b',' => (Token::Comma, 1),
            b'*' => (Token::Mul, 1),
            // After a name, before a name: `schema.table`, `table.column` (never a fraction).
            b'.' if matches!(tokens.last(), Some(TokenWithSpan { token: Token::Word(_), .. }))
                && reader.after(1).is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'"' | b'*')) =>
            {
                (Token::Period, 1)
            }
            b':' if reader.after(1) == Some(b':') => (Token::DoubleColon, 2),
            b'-' if reader.after(1) == Some(b'-') => {
                // A comment runs to the end of the line (the newline is whitespace).
                let len = reader.run(|b| b != b'\n');
                if bytes[reader.at..reader.at + len].contains(&b'\r') {
                    return None;
                }
                reader.advance(len);
                continue;
            }
            b'+' => (Token::Plus, 1),
            b'!' if reader.after(1) == Some(b'=') => (Token::Neq, 2),
            b'=' | b'<' | b'>' | b'-' | b'|' => {
                let (token, len) = match (b, reader.after(1)) {
                    (b'<', Some(b'=')) => (Token::LtEq, 2),
                    (b'<', Some(b'>')) => (Token::Neq, 2),
                    (b'>', Some(b'=')) => (Token::GtEq, 2),
                    (b'|', Some(b'|')) => (Token::StringConcat, 2),
                    (b'|', _) => return None,
                    (b'<', _) => (Token::Lt, 1),
                    (b'>', _) => (Token::Gt, 1),
                    (b'-', _) => (Token::Minus, 1),
                    _ => (Token::Eq, 1),
                };
                // Operator characters after it make a longer or a custom operator.
                if !reader.after(len).is_none_or(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b' ' | b'\t' | b'\n' | b'(' | b'\'' | b'"' | b'_')
                }) {
                    return None;
                }
                (token, len)
            }
            _ => return None,
        };
        match token {
            Token::SingleQuotedString(_) | Token::DollarQuotedString(_) => reader.advance(len),
            // Words, numbers, quoted names (checked above) and punctuation: ASCII on one line.
            _ => reader.advance_ascii(len),
        }
        tokens.push(TokenWithSpan::new(token, Span::new(start, reader.location())));
    }
    Some(tokens)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// An unquoted word, with the keyword sqlparser's tokenizer would give it.
fn word(text: &str) -> Token {
    let mut upper = [0u8; 64];
    let keyword = match upper.get_mut(..text.len()) {
        Some(buffer) => {
            buffer.copy_from_slice(text.as_bytes());
            buffer.make_ascii_uppercase();
            keywords().get(&*buffer).copied().unwrap_or(Keyword::NoKeyword)
        }
        None => Keyword::NoKeyword,
    };
    Token::Word(Word { value: text.to_string(), quote_style: None, keyword })
}

/// sqlparser's keywords by their uppercase spelling: a hash lookup, where a binary search of the
/// sorted list compared ten strings a word.
fn keywords() -> &'static HashMap<&'static [u8], Keyword, foldhash::fast::FixedState> {
    static KEYWORDS: OnceLock<HashMap<&'static [u8], Keyword, foldhash::fast::FixedState>> = OnceLock::new();
    KEYWORDS.get_or_init(|| {
        ALL_KEYWORDS.iter().zip(ALL_KEYWORDS_INDEX).map(|(word, keyword)| (word.as_bytes(), *keyword)).collect()
    })
}

/// A position in the statement; tokens start and end on ASCII bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    line: u64,
    column: u64,
}

impl Reader<'_> {
    fn location(&self) -> Location {
        Location { line: self.line, column: self.column }
    }

    /// The byte `offset` bytes after the current one.
    fn after(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.at + offset).copied()
    }

    /// How many bytes from the current one satisfy `keep`.
    fn run(&self, keep: impl Fn(u8) -> bool) -> usize {
        self.bytes[self.at..].iter().take_while(|&&b| keep(b)).count()
    }

    /// Moves `len` bytes of ASCII without a newline on: as many columns.
    fn advance_ascii(&mut self, len: usize) {
        self.at += len;
        self.column += len as u64;
    }

    /// Moves past a newline.
    fn advance_newline(&mut self) {
        self.at += 1;
        self.line += 1;
        self.column = 1;
    }

    /// Moves `len` bytes on, counting lines and characters (a UTF-8 continuation byte is not one).
    fn advance(&mut self, len: usize) {
        for &b in &self.bytes[self.at..self.at + len] {
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                self.column += 1;
            }
        }
        self.at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn sqlparser_tokens(sql: &str) -> Vec<(Token, Span)> {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).map(|t| (t.token, t.span)).collect()
    }

    fn plain(sql: &str) -> Option<Vec<(Token, Span)>> {
        tokenize(sql, Location::new(1, 1)).map(|tokens| tokens.into_iter().map(|t| (t.token, t.span)).collect())
    }

    #[test]
    fn tokens_are_positioned_where_the_statement_starts_in_its_file() {
        // A statement at line 3, column 5: its first line's columns count from 5, later lines'
        // from 1, whatever a string spanning lines does to the count.
        let tokens = tokenize("a 'x\ny'\n  b", Location::new(3, 5)).unwrap();
        let starts: Vec<(u64, u64)> = tokens.iter().map(|t| (t.span.start.line, t.span.start.column)).collect();
        assert_eq!(starts, [(3, 5), (3, 7), (5, 3)]);
        assert_eq!((tokens[1].span.end.line, tokens[1].span.end.column), (4, 3));
    }

    #[test]
    fn plain_ddl_reads_as_sqlparser_reads_it() {
        for sql in [
            "CREATE TABLE public.\"Users\" (id bigint PRIMARY KEY, name varchar(255) NOT NULL DEFAULT 'x', tags text[])",
            "ALTER TABLE t ADD COLUMN c integer,\n\tADD CONSTRAINT c_positive CHECK (c >= 0 AND c <> 7 OR c <= 2)",
            "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_a ON t USING btree (a, lower(b)) WHERE a > 1 AND b < 'z'",
            "ALTER TABLE t ALTER COLUMN d SET DEFAULT '{}'::jsonb",
            "SELECT t.* FROM t WHERE t.a = 1",
            "DROP INDEX t_a",
            "COMMENT ON COLUMN t.c IS 'v12'",
            "select current_timestamp, _x1, a_b_c from t",
            "-- leading\nSELECT a || 'x', -1, 2 + 3, a - b FROM t -- é, and more\nWHERE a != 1 --\n",
            "COMMENT ON TABLE t IS 'it''s ''quoted'', été\nand more' || 'x''' || '' || ''''",
            "CREATE FUNCTION f() RETURNS int AS $$ SELECT 'é'; $x$ $ $$ LANGUAGE sql",
            "CREATE FUNCTION f() RETURNS int AS $body$\nBEGIN RETURN $$1$$; END\n$body$ LANGUAGE plpgsql",
            "SELECT $$a$$, $$$$, 'b'",
        ] {
            assert_eq!(plain(sql), Some(sqlparser_tokens(sql)), "{sql}");
        }
    }

    #[test]
    fn every_keyword_is_known_in_any_case() {
        for keyword in ALL_KEYWORDS.iter().chain(&["users", "a_b", "x1"]) {
            for spelling in [keyword.to_string(), keyword.to_lowercase()] {
                assert_eq!(word(&spelling), Token::make_word(&spelling, None), "{spelling}");
            }
        }
    }

    #[test]
    fn anything_else_is_left_to_sqlparser() {
        for sql in [
            "SELECT 1 -- comment\r\n",
            "SELECT /* c */ 1",
            "SELECT E'a\\nb'",
            "SELECT 'a\\b'",
            "SELECT $1",
            "SELECT $1$ x $1$",
            "SELECT $$ unterminated",
            "SELECT $a$ x $b$",
            "SELECT 1.5",
            "SELECT 1e5",
            "SELECT 0x1F",
            "SELECT a->>'b' FROM t",
            "SELECT a <-> b FROM t",
            "SELECT a <=> b FROM t",
            "SELECT -> 1",
            "SELECT a | b",
            "SELECT a ||/ b",
            "SELECT a !! b",
            "SELECT café FROM t",
            "SELECT \"a\"\"b\"",
            "SELECT n'x'",
            "SELECT a$b",
            "SELECT a :b",
            "COPY t FROM STDIN",
            "SELECT 1\r\n",
        ] {
            assert_eq!(plain(sql), None, "{sql}");
        }
    }

    #[test]
    fn positions_count_lines_and_columns_as_sqlparser_does() {
        let sql = "CREATE TABLE t (\n\ta int,\n    b text DEFAULT 'x y'\n)";
        let tokens = plain(sql).unwrap();
        assert_eq!(tokens, sqlparser_tokens(sql));
        let b = tokens.iter().find(|(t, _)| matches!(t, Token::Word(w) if w.value == "b")).unwrap();
        assert_eq!((b.1.start.line, b.1.start.column, b.1.end.column), (3, 5, 6));
    }
}

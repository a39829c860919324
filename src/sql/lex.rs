//! A lexer with PostgreSQL's own lexical rules (`src/backend/parser/scan.l`), exactly as fine
//! as finding statement boundaries needs: strings of every kind, quoted identifiers, dollar
//! quotes, nested comments, words and punctuation. It reads each byte once, never fails on
//! what PostgreSQL accepts, and says where an unterminated string or comment starts.
//!
//! Why not sqlparser's tokenizer: it rejects some valid PostgreSQL (`U&'\' UESCAPE '!'`, custom
//! operators such as `|>`), and a statement it cannot read must never hide the statements after
//! it. The splitter finds boundaries with this lexer and gives sqlparser one statement at a time.

/// A place in the text: byte offset and 1-based line and column (columns count characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub byte: usize,
    pub line: usize,
    pub column: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Space,
    LineComment,
    BlockComment,
    /// An unquoted identifier or keyword.
    Word,
    Semicolon,
    OpenParen,
    CloseParen,
    /// Strings, quoted identifiers, numbers, parameters, operators and other punctuation.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lexeme {
    pub kind: Kind,
    pub start: Position,
    pub end: Position,
}

/// What was left open at the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unterminated {
    BlockComment,
    String,
    QuotedIdentifier,
    DollarQuote,
    /// A routine's `BEGIN ATOMIC` body with no matching `END` (found by the splitter, not the
    /// lexer: psql reads to the end of the file for it, and PostgreSQL rejects what it sends).
    RoutineBody,
}

impl Unterminated {
    pub fn describe(self) -> &'static str {
        match self {
            Unterminated::BlockComment => "/* comment",
            Unterminated::String => "quoted string",
            Unterminated::QuotedIdentifier => "quoted identifier",
            Unterminated::DollarQuote => "dollar-quoted string",
            Unterminated::RoutineBody => "`BEGIN ATOMIC` routine body (no matching END)",
        }
    }
}

/// Yields the lexemes of a text in order; after an unterminated string or comment, yields
/// that error (with where it starts) and stops.
pub struct Lexer<'a> {
    source: &'a str,
    text: &'a [u8],
    at: Position,
    done: bool,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer { source: text, text: text.as_bytes(), at: Position { byte: 0, line: 1, column: 1 }, done: false }
    }

    fn byte(&self, i: usize) -> Option<u8> {
        self.text.get(i).copied()
    }

    fn starts_with(&self, i: usize, prefix: &[u8]) -> bool {
        self.text.get(i..).is_some_and(|rest| rest.starts_with(prefix))
    }

    /// Moves to `byte`, counting lines and characters on the way (continuation bytes of a
    /// multi-byte character do not start a column).
    fn advance_to(&mut self, byte: usize) -> Position {
        for &b in &self.text[self.at.byte..byte] {
            if b == b'\n' {
                self.at.line += 1;
                self.at.column = 1;
            } else if is_character_start(b) {
                self.at.column += 1;
            }
        }
        self.at.byte = byte;
        self.at
    }

    /// The end of the lexeme starting at `i`, and its kind; `Err` when it never ends.
    fn lexeme_end(&self, i: usize) -> Result<(usize, Kind), Unterminated> {
        let b = self.text[i];
        let rest = |from: usize, kind| Ok((from, kind));
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => {
                rest(self.skip_while(i + 1, |b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C)), Kind::Space)
            }
            b'-' if self.byte(i + 1) == Some(b'-') => {
                rest(self.skip_while(i + 2, |b| b != b'\n' && b != b'\r'), Kind::LineComment)
            }
            b'/' if self.byte(i + 1) == Some(b'*') => self.block_comment(i + 2).map(|end| (end, Kind::BlockComment)),
            b'\'' => self.quoted(i + 1, b'\'', false).map(|end| (end, Kind::Other)),
            b'"' => self.quoted(i + 1, b'"', false).map(|end| (end, Kind::Other)),
            b'$' => self.dollar(i),
            b';' => rest(i + 1, Kind::Semicolon),
            b'(' => rest(i + 1, Kind::OpenParen),
            b')' => rest(i + 1, Kind::CloseParen),
            b'0'..=b'9' => {
                rest(self.skip_while(i + 1, |b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'), Kind::Other)
            }
            b if is_ident_start(b) => self.word(i),
            _ => rest(i + 1, Kind::Other),
        }
    }

    fn skip_while(&self, mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
        while self.byte(i).is_some_and(&keep) {
            i += 1;
        }
        i
    }

    /// A word, or the string or identifier it prefixes: `E'…'` (backslash escapes), `U&'…'`, `U&"…"`.
    fn word(&self, i: usize) -> Result<(usize, Kind), Unterminated> {
        let end = self.skip_while(i + 1, is_ident_cont);
        if end == i + 1 {
            match (self.text[i].to_ascii_lowercase(), self.byte(end), self.byte(end + 1)) {
                (b'e', Some(b'\''), _) => return self.quoted(end + 1, b'\'', true).map(|e| (e, Kind::Other)),
                (b'u', Some(b'&'), Some(q @ (b'\'' | b'"'))) => {
                    return self.quoted(end + 2, q, false).map(|e| (e, Kind::Other))
                }
                _ => {}
            }
        }
        Ok((end, Kind::Word))
    }

    /// From just inside an opening `quote` to just after the closing one; a doubled quote is
    /// part of the text, and so is any byte after a backslash when `backslash_escapes`.
    fn quoted(&self, mut i: usize, quote: u8, backslash_escapes: bool) -> Result<usize, Unterminated> {
        let unterminated = if quote == b'"' { Unterminated::QuotedIdentifier } else { Unterminated::String };
        loop {
            match self.byte(i) {
                None => return Err(unterminated),
                Some(b'\\') if backslash_escapes => i += 2,
                Some(b) if b == quote => {
                    if self.byte(i + 1) == Some(quote) {
                        i += 2;
                    } else {
                        return Ok(i + 1);
                    }
                }
                Some(_) => i += 1,
            }
        }
    }

    /// From just inside `/*` to just after the matching `*/`; comments nest.
    fn block_comment(&self, mut i: usize) -> Result<usize, Unterminated> {
        let mut depth = 1usize;
        while i < self.text.len() {
            if self.starts_with(i, b"/*") {
                depth += 1;
                i += 2;
            } else if self.starts_with(i, b"*/") {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Ok(i);
                }
            } else {
                i += 1;
            }
        }
        Err(Unterminated::BlockComment)
    }

    /// `$tag$ … $tag$` (the tag may be empty), a parameter `$1`, or a lone `$`.
    fn dollar(&self, i: usize) -> Result<(usize, Kind), Unterminated> {
        let tag_end = match self.byte(i + 1) {
            Some(b'$') => Some(i + 2),
            Some(b) if is_ident_start(b) => {
                let end = self.skip_while(i + 2, |b| is_ident_start(b) || b.is_ascii_digit());
                (self.byte(end) == Some(b'$')).then_some(end + 1)
            }
            _ => None,
        };
        let Some(body) = tag_end else {
            return Ok((self.skip_while(i + 1, |b| b.is_ascii_digit()), Kind::Other));
        };
        // `str::find` is linear (two-way search), whatever the tag's length.
        let delimiter = &self.source[i..body];
        match self.source[body..].find(delimiter) {
            Some(at) => Ok((body + at + delimiter.len(), Kind::Other)),
            None => Err(Unterminated::DollarQuote),
        }
    }
}

/// Whether `b` starts a character: any byte but a UTF-8 continuation byte.
fn is_character_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

/// How many characters `bytes` holds.
fn characters(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| is_character_start(b)).count()
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_ident_cont(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit() || b == b'$'
}

impl Iterator for Lexer<'_> {
    type Item = Result<Lexeme, (Unterminated, Position)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at.byte >= self.text.len() {
            return None;
        }
        let start = self.at;
        match self.lexeme_end(start.byte) {
            Ok((end, kind)) => {
                let end = end.min(self.text.len());
                let end = match kind {
                    // No newline in these: only columns to count.
                    Kind::Word | Kind::Semicolon | Kind::OpenParen | Kind::CloseParen => {
                        self.at.column += characters(&self.text[start.byte..end]);
                        self.at.byte = end;
                        self.at
                    }
                    _ => self.advance_to(end),
                };
                Some(Ok(Lexeme { kind, start, end }))
            }
            Err(what) => {
                self.done = true;
                Some(Err((what, start)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, &str)> {
        Lexer::new(text).map(|l| l.unwrap()).map(|l| (l.kind, &text[l.start.byte..l.end.byte])).collect()
    }

    fn unterminated(text: &str) -> (Unterminated, usize, usize) {
        let (what, at) = Lexer::new(text).find_map(Result::err).expect("unterminated");
        (what, at.line, at.column)
    }

    #[test]
    fn strings_follow_postgresql_not_sqlparser() {
        // standard_conforming_strings: a backslash is an ordinary character in '…' and U&'…'.
        assert_eq!(kinds("U&' \\' UESCAPE '!'")[0], (Kind::Other, "U&' \\'"));
        assert_eq!(kinds("'\\'")[0], (Kind::Other, "'\\'"));
        assert_eq!(kinds("E'\\';'")[0], (Kind::Other, "E'\\';'"));
        assert_eq!(kinds("'it''s;'")[0], (Kind::Other, "'it''s;'"));
        assert_eq!(kinds("\"a\"\"b;\"")[0], (Kind::Other, "\"a\"\"b;\""));
        // Only a lone E prefixes an escape string.
        assert_eq!(kinds("xe'\\'")[..2], [(Kind::Word, "xe"), (Kind::Other, "'\\'")]);
    }

    #[test]
    fn dollar_quotes_match_their_own_tag() {
        assert_eq!(kinds("$f$ a $$ ; $f$;")[0], (Kind::Other, "$f$ a $$ ; $f$"));
        assert_eq!(kinds("$1;")[..2], [(Kind::Other, "$1"), (Kind::Semicolon, ";")]);
        assert_eq!(kinds("a$b$c;")[0], (Kind::Word, "a$b$c"));
    }

    #[test]
    fn comments_nest_and_operators_stop_at_them() {
        assert_eq!(kinds("/* a /* b */ ; */x")[0], (Kind::BlockComment, "/* a /* b */ ; */"));
        assert_eq!(kinds("1--c;\n")[1], (Kind::LineComment, "--c;"));
        assert_eq!(kinds("*/*c*/")[..2], [(Kind::Other, "*"), (Kind::BlockComment, "/*c*/")]);
    }

    #[test]
    fn says_where_an_unterminated_token_starts() {
        assert_eq!(unterminated("SELECT 1;\n  SELECT $x$ a;"), (Unterminated::DollarQuote, 2, 10));
        assert_eq!(unterminated("/* /* */"), (Unterminated::BlockComment, 1, 1));
        assert_eq!(unterminated("é 'x"), (Unterminated::String, 1, 3));
        assert_eq!(unterminated("U&\"x"), (Unterminated::QuotedIdentifier, 1, 1));
        assert_eq!(unterminated("E'\\'"), (Unterminated::String, 1, 1));
    }

    #[test]
    fn positions_count_characters_and_lines() {
        let lexemes: Vec<Lexeme> = Lexer::new("é;\nab").map(|l| l.unwrap()).collect();
        assert_eq!(lexemes[1].start, Position { byte: 2, line: 1, column: 2 });
        assert_eq!(lexemes[3].start, Position { byte: 4, line: 2, column: 1 });
        assert_eq!(lexemes[3].end, Position { byte: 6, line: 2, column: 3 });
    }
}

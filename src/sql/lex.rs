//! A lexer with PostgreSQL's own lexical rules (`src/backend/parser/scan.l`), exactly as fine
//! as finding statement boundaries needs: strings of every kind, quoted identifiers, dollar
//! quotes, nested comments, words and punctuation. It reads each byte once, never fails on
//! what PostgreSQL accepts, and says where an unterminated string or comment starts.
//!
//! Why not sqlparser's tokenizer: it rejects some valid PostgreSQL (`U&'\' UESCAPE '!'`, custom
//! operators such as `|>`), and a statement it cannot read must never hide the statements after
//! it. The splitter finds boundaries with this lexer and gives sqlparser one statement at a time.
//!
//! Two things change how a text is read, as they change it for PostgreSQL and psql:
//! - `standard_conforming_strings` ([`Strings`]): when it is off, a backslash escapes the next
//!   character in `'…'` as it does in `E'…'`, so `'a\''` ends at a different quote. The
//!   splitter follows `SET standard_conforming_strings` and says where it changes
//!   ([`Lexer::set_strings`]).
//! - psql (`psqlscan.l`, `psqlscanslash.l`): a backslash outside quotes starts a meta-command
//!   that runs to the end of its line, `:name`, `:'name'`, `:"name"` and `:{?name}` are
//!   variables psql replaces before it sends the text, and `\;` is a semicolon that does not
//!   send.
//!
//! What is not SQL at all is a lexeme of its own too: template placeholders (`{{ … }}`,
//! `{% … %}`, `<%= … %>`), which a template engine fills in before any runner sees the file.

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
    /// A `'…'` string that Sluice's SQL parser would not read as PostgreSQL does: under
    /// [`Strings::Unknown`], one that would end at another quote if the setting were off (an odd
    /// run of backslashes before a quote in it); under [`Strings::Off`], one holding a backslash.
    StringDependingOnSetting,
    /// psql: a meta-command and its arguments, from the backslash to the end of the line (or to
    /// the `\\` that ends its arguments, or to the next backslash command).
    MetaCommand,
    /// psql: a variable psql replaces before sending (`:name`, `:'name'`, `:"name"`, `:{?name}`).
    Variable,
    /// A template placeholder: `{{ … }}` (Go templates, Jinja, Handlebars), `{% … %}` (Jinja,
    /// Liquid), `<%= … %>` (ERB, EJS).
    Template,
}

/// The value of `standard_conforming_strings` a text is read under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strings {
    /// PostgreSQL's default since 9.1: a backslash in `'…'` is an ordinary character.
    #[default]
    On,
    /// A backslash in `'…'` escapes the next character, as in `E'…'`.
    Off,
    /// It may be either: read as `On`, and a string whose end would move is
    /// [`Kind::StringDependingOnSetting`].
    Unknown,
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
    strings: Strings,
    psql: bool,
    /// psql: COPY … FROM STDIN statements whose data starts on the next line (see
    /// [`Lexer::copy_data_follows`]).
    copy_blocks: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer {
            source: text,
            text: text.as_bytes(),
            at: Position { byte: 0, line: 1, column: 1 },
            done: false,
            strings: Strings::On,
            psql: false,
            copy_blocks: 0,
        }
    }

    /// A lexer of the text psql reads (`psql -f`): meta-commands, variables and COPY data.
    pub fn psql(text: &'a str) -> Self {
        Lexer { psql: true, ..Lexer::new(text) }
    }

    /// Reads the strings from here on under `strings`.
    pub fn set_strings(&mut self, strings: Strings) {
        self.strings = strings;
    }

    /// What the strings are read under now.
    pub fn strings(&self) -> Strings {
        self.strings
    }

    /// psql: a `COPY … FROM STDIN` has just been sent; its data is the lines after this one, up
    /// to a line `\.` (psql reads them from the file and sends them as data, then goes on with
    /// the rest of the COPY's own line, which stays SQL).
    pub fn copy_data_follows(&mut self) {
        self.copy_blocks += 1;
    }

    /// The end of the COPY data starting at `start` (a line start): just past the line `\.`,
    /// or the end of the text.
    fn copy_data_end(&self, start: usize) -> usize {
        let mut line = start;
        while line < self.text.len() {
            let end = memchr::memchr(b'\n', &self.text[line..]).map_or(self.text.len(), |at| line + at + 1);
            let content = self.text[line..end].strip_suffix(b"\n").unwrap_or(&self.text[line..end]);
            if content.strip_suffix(b"\r").unwrap_or(content) == b"\\." {
                return end;
            }
            line = end;
        }
        self.text.len()
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
            b'\'' => self.standard_string(i + 1),
            b'\\' if self.psql => Ok(self.backslash(i)),
            b':' if self.psql => Ok(self.colon(i)),
            b'{' if matches!(self.byte(i + 1), Some(b'{' | b'%')) => Ok(self.template(i, 2)),
            b'<' if self.byte(i + 1) == Some(b'%') && self.is_template_tag(i) => Ok(self.template(i, 2)),
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

    /// A `'…'` string from just inside its quote, as `standard_conforming_strings` says.
    fn standard_string(&self, i: usize) -> Result<(usize, Kind), Unterminated> {
        match self.strings {
            Strings::On => self.quoted(i, b'\'', false).map(|end| (end, Kind::Other)),
            Strings::Off => {
                let end = self.quoted(i, b'\'', true)?;
                // Read right here, but Sluice's SQL parser reads strings as with the setting on.
                let escapes = memchr::memchr(b'\\', &self.text[i..end]).is_some();
                Ok((end, if escapes { Kind::StringDependingOnSetting } else { Kind::Other }))
            }
            Strings::Unknown => {
                let end = self.quoted(i, b'\'', false)?;
                // An odd run of backslashes before a quote escapes that quote when the setting is off.
                let body = &self.text[i..end];
                let mut run = 0usize;
                let moves = body.iter().any(|&b| match b {
                    b'\\' => {
                        run += 1;
                        false
                    }
                    b'\'' => std::mem::take(&mut run) % 2 == 1,
                    _ => {
                        run = 0;
                        false
                    }
                });
                Ok((end, if moves { Kind::StringDependingOnSetting } else { Kind::Other }))
            }
        }
    }

    /// psql: a backslash outside quotes. `\\;` and `\\:` are a semicolon and a colon psql keeps
    /// in the query (the semicolon does not send it); anything else starts a meta-command, whose
    /// arguments run to the end of the line, to `\\\\` or to the next unquoted backslash
    /// (`psqlscanslash.l`).
    fn backslash(&self, i: usize) -> (usize, Kind) {
        match self.byte(i + 1) {
            Some(b';') => return (i + 2, Kind::Semicolon),
            Some(b':') => return (i + 2, Kind::Other),
            _ => {}
        }
        // The command's name: up to a space or a backslash (`\\\\` names the separator itself).
        let mut at = i + 1;
        if self.byte(at) == Some(b'\\') {
            return (at + 1, Kind::MetaCommand);
        }
        while self.byte(at).is_some_and(|b| !b.is_ascii_whitespace() && b != b'\\') {
            at += 1;
        }
        let mut quote = None;
        while let Some(b) = self.byte(at) {
            match (quote, b) {
                (_, b'\n') => break,
                (None, b'\'' | b'"' | b'`') => quote = Some(b),
                (Some(q), _) if b == q => quote = None,
                (Some(b'\''), b'\\') => at += 1,
                (None, b'\\') if self.byte(at + 1) == Some(b'\\') => return (at + 2, Kind::MetaCommand),
                (None, b'\\') => break,
                _ => {}
            }
            at += 1;
        }
        (at.min(self.text.len()), Kind::MetaCommand)
    }

    /// psql: `::` (a cast) and `:=` stay SQL; `:name`, `:'name'`, `:"name"` and `:{?name}` are
    /// variables. A name starting with a digit is left out: `a[1:2]` is an array slice, and psql
    /// replaces it only if someone set a variable named `2`.
    fn colon(&self, i: usize) -> (usize, Kind) {
        let name_end = |from: usize| self.skip_while(from, |b| is_ident_start(b) || b.is_ascii_digit());
        match self.byte(i + 1) {
            Some(b':') => (i + 2, Kind::Other),
            Some(q @ (b'\'' | b'"')) => {
                let end = name_end(i + 2);
                if end > i + 2 && self.byte(end) == Some(q) {
                    (end + 1, Kind::Variable)
                } else {
                    (i + 1, Kind::Other)
                }
            }
            Some(b'{') if self.byte(i + 2) == Some(b'?') => {
                let end = name_end(i + 3);
                if self.byte(end) == Some(b'}') {
                    (end + 1, Kind::Variable)
                } else {
                    (i + 1, Kind::Other)
                }
            }
            Some(b) if is_ident_start(b) => (name_end(i + 1), Kind::Variable),
            _ => (i + 1, Kind::Other),
        }
    }

    /// `<%` starts an ERB/EJS tag as `<%=`, `<%-`, `<%#`, or first on its line: elsewhere it may
    /// be an operator (pg_trgm's `<%`).
    fn is_template_tag(&self, i: usize) -> bool {
        if matches!(self.byte(i + 2), Some(b'=' | b'-' | b'#')) {
            return true;
        }
        let line_start = self.text[..i].iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        self.text[line_start..i].iter().all(|b| *b == b' ' || *b == b'\t')
    }

    /// A template placeholder from its opening (`open` bytes) to its closing on the same line
    /// (`}}`, `%}`, `%>`), or to the end of the line.
    fn template(&self, i: usize, open: usize) -> (usize, Kind) {
        let line_end = memchr::memchr(b'\n', &self.text[i..]).map_or(self.text.len(), |at| i + at);
        let closing: &[u8] = match self.text[i + 1] {
            b'{' => b"}}",
            b'%' if self.text[i] == b'{' => b"%}",
            _ => b"%>",
        };
        let end = memchr::memmem::find(&self.text[i + open..line_end], closing)
            .map_or(line_end, |at| i + open + at + closing.len());
        (end, Kind::Template)
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
                let mut end = end.min(self.text.len());
                if self.copy_blocks > 0 && kind == Kind::Space {
                    // COPY data starts on the line after: the space ends with its first newline,
                    // and the data is skipped as the space's (it is not SQL).
                    if let Some(newline) = memchr::memchr(b'\n', &self.text[start.byte..end]) {
                        let mut data = start.byte + newline + 1;
                        while self.copy_blocks > 0 {
                            data = self.copy_data_end(data);
                            self.copy_blocks -= 1;
                        }
                        end = data;
                    }
                }
                let end = match kind {
                    // No newline in these: only columns to count.
                    Kind::Word | Kind::Semicolon | Kind::OpenParen | Kind::CloseParen | Kind::Variable => {
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

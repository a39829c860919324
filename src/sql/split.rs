//! Splits a SQL file into statements with byte spans and 1-based line/column. Boundaries come
//! from a lexer with PostgreSQL's own rules ([`super::lex`]), so dollar-quoted bodies, strings,
//! comments and nested `/* */` never split a statement in the wrong place; sqlparser's tokenizer
//! then reads each statement on its own, so one it cannot read hides nothing after it.

pub use super::lex::Strings;
use super::lex::{Kind, Lexeme, Lexer, Position, Unterminated};
use super::psql::{Effect, MetaCommand};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Span as TokenSpan, Token, TokenWithSpan, Tokenizer};

/// Where a statement (or anything else) sits in its file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// Byte offsets into the file text, end exclusive.
    pub start: usize,
    pub end: usize,
    /// 1-based line and column (columns count characters).
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// A `--` or `/* */` comment found between statements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub line: usize,
    pub text: String,
}

/// One statement as written: its text and tokens, not yet parsed.
#[derive(Clone, Debug)]
pub struct RawStatement {
    pub span: Span,
    /// Tokens of the statement without the terminating `;`, whitespace and comments.
    pub tokens: Vec<TokenWithSpan>,
    /// Comments between the previous statement and this one (where `sluice:ignore` lives).
    pub leading_comments: Vec<Comment>,
}

/// Text Sluice could not read, and why: it was not checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unread {
    pub span: Span,
    pub reason: Unreadable,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// sqlparser's tokenizer rejected one statement (valid PostgreSQL it does not know, such as
    /// a custom operator). The statement's boundaries are known: the rest of the file was read.
    Tokenizer { message: String, line: usize, column: usize },
    /// A string or comment opened at `line:column` never ends: PostgreSQL rejects the file,
    /// and everything from the statement it is in to the end of the file is unread.
    Unterminated { what: Unterminated, line: usize, column: usize },
    /// What the client (psql) does at `line:column` runs or changes SQL Sluice cannot see: a
    /// variable, `\gexec`, `\if`, a shell command, a meta-command inside a statement.
    Client { what: String, line: usize, column: usize },
    /// A template placeholder: the file is filled in by a template engine before it runs.
    Template { engine: &'static str, text: String, line: usize, column: usize },
    /// A string at `line:column` whose end depends on `standard_conforming_strings`, which may be
    /// off here (an earlier migration names it); or, `off`, the setting is off and the string
    /// holds a backslash, which Sluice's SQL parser would read as the default setting does.
    Strings { line: usize, column: usize, off: bool },
}

impl Unreadable {
    /// Where the reason is: the string, comment, command or placeholder, not the statement.
    pub fn at(&self) -> Option<(usize, usize)> {
        match self {
            Unreadable::Tokenizer { .. } => None,
            Unreadable::Unterminated { line, column, .. }
            | Unreadable::Client { line, column, .. }
            | Unreadable::Template { line, column, .. }
            | Unreadable::Strings { line, column, .. } => Some((*line, *column)),
        }
    }
}

/// A psql `\i` / `\ir` (and `\include`, `\include_relative`): psql runs the SQL of the file it
/// names at this point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Include {
    /// The file as written.
    pub path: String,
    /// Relative to the including file's directory (`\ir`), not psql's working directory (`\i`).
    pub relative: bool,
    pub line: usize,
    pub column: usize,
    /// Where the command starts in the file: statements before it run before the file.
    pub byte: usize,
}

impl Unread {
    /// The same text with every position mapped by `move_span` (a piece of a larger file moved
    /// to the file's coordinates).
    pub fn moved(self, move_span: impl Fn(Span) -> Span) -> Unread {
        let at = |line, column| {
            let moved = move_span(Span { line, column, end_line: line, end_column: column, ..Span::default() });
            (moved.line, moved.column)
        };
        let reason = match self.reason {
            Unreadable::Tokenizer { message, line, column } => {
                let (line, column) = at(line, column);
                Unreadable::Tokenizer { message, line, column }
            }
            Unreadable::Unterminated { what, line, column } => {
                let (line, column) = at(line, column);
                Unreadable::Unterminated { what, line, column }
            }
            Unreadable::Client { what, line, column } => {
                let (line, column) = at(line, column);
                Unreadable::Client { what, line, column }
            }
            Unreadable::Template { engine, text, line, column } => {
                let (line, column) = at(line, column);
                Unreadable::Template { engine, text, line, column }
            }
            Unreadable::Strings { line, column, off } => {
                let (line, column) = at(line, column);
                Unreadable::Strings { line, column, off }
            }
        };
        Unread { span: move_span(self.span), reason }
    }

    /// What a finding about it says.
    pub fn message(&self) -> String {
        // A span ending at the start of a line (after a final newline) ends on the line before.
        let last = if self.span.end_column == 1 && self.span.end_line > self.span.line {
            self.span.end_line - 1
        } else {
            self.span.end_line
        };
        let lines = if self.span.line == last {
            format!("line {}", self.span.line)
        } else {
            format!("lines {}-{last}", self.span.line)
        };
        match &self.reason {
            Unreadable::Tokenizer { message, line, column } => format!(
                "Sluice could not read this statement ({lines}) and did not check it: sqlparser's tokenizer \
                 stopped at line {line}, column {column}: {message}"
            ),
            Unreadable::Unterminated { what, line, column } => format!(
                "unterminated {} starting at line {line}, column {column}: PostgreSQL rejects it, and \
                 nothing from the statement it is in to the end of what was sent was checked ({lines})",
                what.describe()
            ),
            Unreadable::Client { what, .. } => format!("{what}; Sluice did not check what it runs ({lines})"),
            Unreadable::Template { engine, text, line, column } => format!(
                "template placeholder `{text}` at line {line}, column {column} ({engine}): the file is not SQL \
                 until a template engine fills it in, so Sluice did not check it ({lines})"
            ),
            Unreadable::Strings { line, column, off: false } => format!(
                "the string at line {line}, column {column} ends at another quote when standard_conforming_strings \
                 is off, and it may be off here (a migration names the setting): where this statement ends, and \
                 which statements follow, depend on a value Sluice cannot know; it did not check this one ({lines})"
            ),
            Unreadable::Strings { line, column, off: true } => format!(
                "standard_conforming_strings is off here, so the backslash in the string at line {line}, column \
                 {column} escapes the character after it; Sluice's SQL parser reads strings as with the setting \
                 on, so it did not check this statement ({lines})"
            ),
        }
    }
}

/// The split of a file, and the text that could not be read.
#[derive(Debug, Default)]
pub struct Split {
    pub statements: Vec<RawStatement>,
    /// Every comment in the file, for file-level directives.
    pub comments: Vec<Comment>,
    /// In file order. Never empty when something was not read.
    pub unread: Vec<Unread>,
    /// psql: the files the text includes, in order.
    pub includes: Vec<Include>,
}

impl Split {
    /// Adds the split of the text that follows.
    fn append(&mut self, part: Split) {
        self.statements.extend(part.statements);
        self.comments.extend(part.comments);
        self.unread.extend(part.unread);
        self.includes.extend(part.includes);
    }

    /// The unterminated string or comment that ends what could be read, if any.
    pub fn unterminated(&self) -> Option<&Unread> {
        self.unread.iter().find(|u| matches!(u.reason, Unreadable::Unterminated { .. }))
    }

    /// Every statement's span in file order, including those sqlparser could not tokenize
    /// (PostgreSQL itself can run them).
    pub fn statement_spans(&self) -> Vec<Span> {
        let tokenizer_rejected =
            self.unread.iter().filter(|u| matches!(u.reason, Unreadable::Tokenizer { .. })).map(|u| u.span);
        let mut spans: Vec<Span> = self.statements.iter().map(|s| s.span).chain(tokenizer_rejected).collect();
        spans.sort_by_key(|s| s.start);
        spans
    }
}

fn span(start: Position, end: Position) -> Span {
    Span {
        start: start.byte,
        end: end.byte,
        line: start.line,
        column: start.column,
        end_line: end.line,
        end_column: end.column,
    }
}

/// psql's rule for where a statement ends inside a routine body (`psqlscan.l`): in `CREATE [OR
/// REPLACE] FUNCTION|PROCEDURE`, outside parentheses, `BEGIN` opens a block, `CASE` inside a
/// block opens one too, `END` closes one; a `;` inside a block does not end the statement.
#[derive(Default)]
struct RoutineBlocks {
    /// First letters of the statement's first four words, when they are create/or/replace/function/procedure.
    words: [u8; 4],
    count: usize,
    parens: usize,
    depth: usize,
    /// Where the outermost open block's `BEGIN` is.
    opened: Option<Position>,
}

impl RoutineBlocks {
    fn observe(&mut self, kind: Kind, text: &str, at: Position) {
        match kind {
            Kind::OpenParen => self.parens += 1,
            Kind::CloseParen => self.parens = self.parens.saturating_sub(1),
            Kind::Word => {
                let is = |keyword: &str| text.eq_ignore_ascii_case(keyword);
                if self.count < self.words.len() {
                    if let Some(word) = ["create", "or", "replace", "function", "procedure"].into_iter().find(|w| is(w))
                    {
                        self.words[self.count] = word.as_bytes()[0];
                    }
                }
                self.count += 1;
                let routine = matches!(self.words, [b'c', b'f' | b'p', ..] | [b'c', b'o', b'r', b'f' | b'p']);
                if routine && self.parens == 0 {
                    if is("begin") || (is("case") && self.depth >= 1) {
                        if self.depth == 0 {
                            self.opened = Some(at);
                        }
                        self.depth += 1;
                    } else if is("end") {
                        self.depth = self.depth.saturating_sub(1);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The statement being collected.
#[derive(Default)]
struct Pending {
    /// Where its first token starts and its last one ends.
    bounds: Option<(Position, Position)>,
    leading_comments: Vec<Comment>,
    blocks: RoutineBlocks,
    words: StatementWords,
    /// Why it cannot be read, when it cannot (the first reason found).
    unread: Option<Unreadable>,
}

impl Pending {
    fn extend(&mut self, lexeme: &Lexeme, comments_before: &mut Vec<Comment>) {
        match &mut self.bounds {
            Some((_, end)) => *end = lexeme.end,
            None => {
                self.bounds = Some((lexeme.start, lexeme.end));
                self.leading_comments = std::mem::take(comments_before);
            }
        }
    }

    fn cannot_read(&mut self, reason: Unreadable) {
        self.unread.get_or_insert(reason);
    }
}

/// The first words of a statement, as far as the splitter needs them: whether it sets
/// `standard_conforming_strings` (or names it at all), and whether it is a `COPY … FROM STDIN`.
#[derive(Default)]
struct StatementWords {
    /// Lowercased, of a statement starting with SET, RESET or COPY: its first few words and
    /// strings (quotes dropped).
    first: Vec<String>,
    count: usize,
    /// The statement names the setting anywhere else (`set_config(…)`, `ALTER DATABASE … SET`).
    names_setting: bool,
    /// COPY … FROM STDIN: psql reads its data from the lines after it.
    from_stdin: bool,
}

const SETTING: &str = "standard_conforming_strings";

impl StatementWords {
    fn observe(&mut self, kind: Kind, text: &str) {
        if text.len() >= SETTING.len() && text.to_ascii_lowercase().contains(SETTING) {
            self.names_setting = true;
        }
        let word = match kind {
            Kind::Word => text.to_ascii_lowercase(),
            Kind::Other if text.starts_with('\'') => text.trim_matches('\'').to_ascii_lowercase(),
            Kind::Other => text.to_string(),
            _ => return,
        };
        self.count += 1;
        let interesting = |first: &str| matches!(first, "set" | "reset" | "copy");
        if self.count == 1 && !interesting(&word) {
            return;
        }
        if self.first.first().is_some_and(|w| w == "copy") {
            self.from_stdin |=
                self.first.last().is_some_and(|w| w == "from") && matches!(word.as_str(), "stdin" | "pstdin");
            if self.first.len() < 64 {
                self.first.push(word);
            }
        } else if self.count <= 6 && (self.count == 1 || !self.first.is_empty()) {
            self.first.push(word);
        }
    }

    /// What the statement sets the setting to, when it is a SET or RESET of it: `Some(None)`
    /// for a value Sluice cannot tell.
    fn sets(&self, session_start: Strings) -> Option<Strings> {
        let words: Vec<&str> = self.first.iter().map(String::as_str).collect();
        let value = match words.as_slice() {
            ["reset", SETTING] | ["reset", "all"] => return Some(session_start),
            ["set", "session", SETTING, "to" | "=", value] | ["set", SETTING, "to" | "=", value] => *value,
            // Until the transaction ends, then back: not one value for what follows.
            ["set", "local", SETTING, ..] => return Some(Strings::Unknown),
            _ if self.names_setting => return Some(Strings::Unknown),
            _ => return None,
        };
        // PostgreSQL's parse_bool: on/off, true/false, yes/no, 1/0 and unique prefixes.
        let is = |full: &str, shortest: usize| value.len() >= shortest && full.starts_with(value);
        Some(if value == "default" {
            session_start
        } else if is("on", 2) || is("true", 1) || is("yes", 1) || value == "1" {
            Strings::On
        } else if is("off", 2) || is("false", 1) || is("no", 1) || value == "0" {
            Strings::Off
        } else {
            Strings::Unknown
        })
    }
}

/// How a text reaches PostgreSQL, for the splitter: which client lexes it, whether it is one
/// query string, and the `standard_conforming_strings` its strings are read under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// psql reads it (`psql -f`): meta-commands, variables and COPY data are psql's.
    pub psql: bool,
    /// The text is sent as one query string, which PostgreSQL lexes whole before it runs any of
    /// it: a `SET standard_conforming_strings` in it changes how the text after the string is
    /// read, not the rest of the string.
    pub one_string: bool,
    /// The value the text starts under; once split, the value after it.
    pub strings: Strings,
    /// What `RESET` goes back to: the value the session started with.
    pub session_start: Strings,
}

impl Reading {
    /// A text the server reads, under PostgreSQL's default.
    pub const SERVER: Reading =
        Reading { psql: false, one_string: false, strings: Strings::On, session_start: Strings::On };
}

/// How much statement text [`split_each`] hands over at a time: a large file's tokens are held
/// a window (1 MB of statements) at a time, not the whole file's at once.
const WINDOW: usize = 1 << 20;

pub fn split(text: &str) -> Split {
    split_where(text, |_| true)
}

/// [`split`] as `reading` says the text is read; `reading.strings` becomes the value after it.
pub fn split_reading(text: &str, reading: &mut Reading) -> Split {
    let mut out = Split::default();
    *reading = split_in_windows(text, *reading, usize::MAX, &|_| true, |part| out.append(part));
    out
}

/// [`split`] keeping only the statements whose text `keep` accepts: the others are neither
/// tokenized nor reported, not even as unread.
pub fn split_where(text: &str, keep: impl Fn(&str) -> bool) -> Split {
    let mut out = Split::default();
    split_in_windows(text, Reading::SERVER, usize::MAX, &keep, |part| out.append(part));
    out
}

/// [`split_reading`], handing over the statements a window at a time (in the file's
/// coordinates), so a caller can parse them and let their tokens go before the next window is
/// tokenized.
pub fn split_each(text: &str, reading: &mut Reading, each: impl FnMut(Split)) {
    *reading = split_in_windows(text, *reading, WINDOW, &|_| true, each)
}

/// The lexer reads the whole text once; the statements found are handed to `each` whenever
/// those collected since the last hand-over span `window` bytes or more, and at the end.
/// Returns the reading the text leaves behind (its `standard_conforming_strings`).
fn split_in_windows(
    text: &str,
    reading: Reading,
    window: usize,
    keep: &dyn Fn(&str) -> bool,
    mut each: impl FnMut(Split),
) -> Reading {
    let mut splitter = Splitter {
        text,
        out: Split::default(),
        tokenizer: StatementTokenizer { keep, buffer: Vec::new() },
        lexer: if reading.psql { Lexer::psql(text) } else { Lexer::new(text) },
        reading,
    };
    splitter.lexer.set_strings(reading.strings);
    let mut window_start = 0;
    let mut pending = Pending::default();
    // Comments since the last statement ended: they lead the next one (where `sluice:ignore` lives).
    let mut comments_before: Vec<Comment> = Vec::new();
    while let Some(lexeme) = splitter.lexer.next() {
        let lexeme = match lexeme {
            Ok(lexeme) => lexeme,
            Err((what, at)) => {
                let start = pending.bounds.map_or(at, |(start, _)| start);
                let reason = Unreadable::Unterminated { what, line: at.line, column: at.column };
                splitter.out.unread.push(Unread { span: span(start, end_of(text)), reason });
                each(splitter.out);
                return Reading { strings: Strings::Unknown, ..splitter.reading };
            }
        };
        let source = &text[lexeme.start.byte..lexeme.end.byte];
        let at = |lexeme: &Lexeme| (lexeme.start.line, lexeme.start.column);
        match lexeme.kind {
            Kind::Space => {}
            Kind::LineComment | Kind::BlockComment => {
                let comment = Comment { line: lexeme.start.line, text: source.trim_end().to_string() };
                splitter.out.comments.push(comment.clone());
                if pending.bounds.is_none() {
                    comments_before.push(comment);
                }
            }
            Kind::Semicolon if pending.blocks.depth == 0 => {
                splitter.end_statement(std::mem::take(&mut pending));
                if lexeme.end.byte - window_start >= window {
                    each(std::mem::take(&mut splitter.out));
                    window_start = lexeme.end.byte;
                }
            }
            Kind::MetaCommand => {
                let command = MetaCommand::read(source);
                let (line, column) = at(&lexeme);
                let inside = pending.bounds.is_some();
                match command.effect() {
                    Effect::Sends | Effect::SendsAndRunsResult if inside => {
                        splitter.end_statement(std::mem::take(&mut pending));
                    }
                    _ if inside => {
                        // psql keeps building the statement across the meta-command (verified with
                        // psql 15): the text it sends is not the text as written.
                        pending.extend(&lexeme, &mut comments_before);
                        pending.cannot_read(Unreadable::Client {
                            what: format!(
                                "psql's `\\{}` inside a statement: psql builds the statement around it, and Sluice \
                                 does not read statements assembled across meta-commands",
                                command.name
                            ),
                            line,
                            column,
                        });
                        continue;
                    }
                    _ => {}
                }
                let unread = |what: String| Unread {
                    span: span(lexeme.start, lexeme.end),
                    reason: Unreadable::Client { what, line, column },
                };
                match command.effect() {
                    Effect::SendsAndRunsResult => splitter.out.unread.push(unread(
                        "psql's `\\gexec` runs each value its query returns as SQL, which Sluice cannot read".into(),
                    )),
                    Effect::Includes { path, relative } => {
                        if path.is_empty() {
                            splitter.out.unread.push(unread(format!("psql's `\\{}` names no file", command.name)));
                        } else {
                            splitter.out.includes.push(Include {
                                path,
                                relative,
                                line,
                                column,
                                byte: lexeme.start.byte,
                            });
                        }
                    }
                    Effect::Unreadable(why) => splitter.out.unread.push(unread(why)),
                    Effect::Sends | Effect::Nothing => {}
                }
            }
            kind => {
                pending.extend(&lexeme, &mut comments_before);
                let (line, column) = at(&lexeme);
                match kind {
                    Kind::Variable => pending.cannot_read(Unreadable::Client {
                        what: format!(
                            "psql variable `{source}`: psql puts a value Sluice does not know in its place before \
                             sending the statement"
                        ),
                        line,
                        column,
                    }),
                    Kind::Template => pending.cannot_read(Unreadable::Template {
                        engine: template_engine(source),
                        text: source.chars().take(60).collect(),
                        line,
                        column,
                    }),
                    Kind::StringDependingOnSetting => {
                        let off = splitter.lexer.strings() == Strings::Off;
                        pending.cannot_read(Unreadable::Strings { line, column, off })
                    }
                    _ => {}
                }
                pending.blocks.observe(kind, source, lexeme.start);
                pending.words.observe(kind, source);
            }
        }
    }
    match (pending.bounds, pending.blocks.opened.filter(|_| pending.blocks.depth > 0)) {
        // psql keeps reading for the END to the end of the file, and PostgreSQL rejects what it sends.
        (Some((start, _)), Some(at)) => {
            let reason = Unreadable::Unterminated { what: Unterminated::RoutineBody, line: at.line, column: at.column };
            splitter.out.unread.push(Unread { span: span(start, end_of(text)), reason });
        }
        _ => splitter.end_statement(pending),
    }
    each(splitter.out);
    splitter.reading
}

/// The template engines a placeholder's delimiters belong to.
fn template_engine(placeholder: &str) -> &'static str {
    if placeholder.starts_with("{{") {
        "Go templates, Jinja, Handlebars or Mustache"
    } else if placeholder.starts_with("{%") {
        "Jinja or Liquid"
    } else {
        "ERB or EJS"
    }
}

/// The splitting of one text: the lexer, what has been found, and the reading in effect.
struct Splitter<'t, 'k> {
    text: &'t str,
    out: Split,
    tokenizer: StatementTokenizer<'k>,
    lexer: Lexer<'t>,
    reading: Reading,
}

impl Splitter<'_, '_> {
    /// A statement ends (`;`, a psql command that sends, or the end of the text): tokenized, or
    /// recorded as unread, then what it does to how the text after it is read.
    fn end_statement(&mut self, pending: Pending) {
        let Some((start, end)) = pending.bounds else { return };
        let sets = pending.words.sets(self.reading.session_start);
        if pending.words.from_stdin && self.reading.psql {
            self.lexer.copy_data_follows();
        }
        match pending.unread {
            Some(reason) if (self.tokenizer.keep)(&self.text[start.byte..end.byte]) => {
                self.out.unread.push(Unread { span: span(start, end), reason });
            }
            Some(_) => {}
            None => self.tokenizer.finish(self.text, pending, &mut self.out),
        }
        if let Some(strings) = sets {
            // PostgreSQL lexes a query string whole before it runs it: the new value reads the
            // next string, which for a statement sent on its own is the next statement.
            self.reading.strings = strings;
            if !self.reading.one_string {
                self.lexer.set_strings(strings);
            }
        }
    }
}

/// The position just past the end of `text` (for spans that run to the end of the file).
fn end_of(text: &str) -> Position {
    let line = 1 + text.matches('\n').count();
    let last_line = text.rsplit('\n').next().unwrap_or("");
    Position { byte: text.len(), line, column: last_line.chars().count() + 1 }
}

/// A buffer grown past this many tokens (a huge `INSERT`) is let go rather than kept beside the
/// statement's own tokens.
const LARGEST_REUSED_BUFFER: usize = 1 << 16;

/// Tokenizes finished statements: plain ones with [`super::plain_tokens`], the rest with
/// sqlparser's tokenizer.
struct StatementTokenizer<'k> {
    keep: &'k dyn Fn(&str) -> bool,
    /// sqlparser's tokens with whitespace and comments, reused from statement to statement: grown
    /// one token at a time for every statement, it cost a tenth of parsing a history.
    buffer: Vec<TokenWithSpan>,
}

impl StatementTokenizer<'_> {
    /// Tokenizes a finished statement, or records it as unread.
    fn finish(&mut self, text: &str, pending: Pending, out: &mut Split) {
        let Some((start, end)) = pending.bounds else { return };
        let statement = &text[start.byte..end.byte];
        if !(self.keep)(statement) {
            return;
        }
        let span = span(start, end);
        let at = Location::new(start.line as u64, start.column as u64);
        if let Some(tokens) = super::plain_tokens::tokenize(statement, at) {
            #[cfg(debug_assertions)]
            same_as_sqlparser(statement, start, &tokens);
            out.statements.push(RawStatement { span, tokens, leading_comments: pending.leading_comments });
            return;
        }
        self.buffer.clear();
        match Tokenizer::new(&PostgreSqlDialect {}, statement).tokenize_with_location_into_buf(&mut self.buffer) {
            Ok(()) => {
                // The parser and the recognizer skip whitespace and comments: keeping them would only cost memory.
                let mut tokens = Vec::with_capacity(self.buffer.iter().filter(|t| !is_trivia(&t.token)).count());
                tokens.extend(self.buffer.drain(..).filter(|t| !is_trivia(&t.token)).map(|t| moved(t, start)));
                if self.buffer.capacity() > LARGEST_REUSED_BUFFER {
                    self.buffer = Vec::new();
                }
                out.statements.push(RawStatement { span, tokens, leading_comments: pending.leading_comments });
            }
            Err(e) => {
                let at = moved_location(e.location, start);
                let reason =
                    Unreadable::Tokenizer { message: e.message, line: at.line as usize, column: at.column as usize };
                out.unread.push(Unread { span, reason });
            }
        }
    }
}

/// Debug builds (every test) check the plain reading against sqlparser's own tokenizer.
#[cfg(debug_assertions)]
fn same_as_sqlparser(statement: &str, start: Position, plain: &[TokenWithSpan]) {
    let expected: Vec<(Token, TokenSpan)> = Tokenizer::new(&PostgreSqlDialect {}, statement)
        .tokenize_with_location()
        .unwrap_or_else(|e| panic!("sqlparser rejects a plain statement ({e}): {statement}"))
        .into_iter()
        .filter(|t| !is_trivia(&t.token))
        .map(|t| moved(t, start))
        .map(|t| (t.token, t.span))
        .collect();
    let plain: Vec<(Token, TokenSpan)> = plain.iter().map(|t| (t.token.clone(), t.span)).collect();
    assert_eq!(plain, expected, "plain tokens differ from sqlparser's for: {statement}");
}

/// A location in a statement's own text, as a location in the file the statement starts at `base` in.
fn moved_location(location: Location, base: Position) -> Location {
    if location.line == 1 {
        Location { line: base.line as u64, column: location.column + base.column as u64 - 1 }
    } else {
        Location { line: location.line + base.line as u64 - 1, column: location.column }
    }
}

fn moved(token: TokenWithSpan, base: Position) -> TokenWithSpan {
    let span = TokenSpan::new(moved_location(token.span.start, base), moved_location(token.span.end, base));
    TokenWithSpan { token: token.token, span }
}

/// Where a part of a file starts (a migration tool's piece): byte offset, 1-based line and
/// column. Moves what was found in the part to the file's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    offset: usize,
    line: usize,
    column: usize,
}

impl Origin {
    /// The start of a file.
    pub const START: Origin = Origin { offset: 0, line: 1, column: 1 };

    /// Where `span` starts.
    pub fn at(span: &Span) -> Origin {
        Origin { offset: span.start, line: span.line, column: span.column }
    }

    /// Where byte `offset` of `text` is.
    pub fn of(text: &str, offset: usize) -> Origin {
        Origin::START.advance(&text[..offset])
    }

    /// Where the text after `part` starts, `part` starting here.
    pub fn advance(&self, part: &str) -> Origin {
        let newlines = part.bytes().filter(|b| *b == b'\n').count();
        let column = match part.rfind('\n') {
            Some(i) => part[i + 1..].chars().count() + 1,
            None => self.column + part.chars().count(),
        };
        Origin { offset: self.offset + part.len(), line: self.line + newlines, column }
    }

    pub fn span(&self, span: Span) -> Span {
        let column = |line: usize, column: usize| if line == 1 { column + self.column - 1 } else { column };
        Span {
            start: span.start + self.offset,
            end: span.end + self.offset,
            line: span.line + self.line - 1,
            column: column(span.line, span.column),
            end_line: span.end_line + self.line - 1,
            end_column: column(span.end_line, span.end_column),
        }
    }

    fn location(&self, location: &mut Location) {
        if location.line == 0 {
            return;
        }
        if location.line == 1 {
            location.column += self.column as u64 - 1;
        }
        location.line += self.line as u64 - 1;
    }

    pub fn comment(&self, comment: Comment) -> Comment {
        Comment { line: comment.line + self.line - 1, text: comment.text }
    }

    /// Moves a split of the part's text to the file's coordinates, appending it to `into`.
    pub fn shift(&self, split: Split, into: &mut Split) {
        for mut statement in split.statements {
            statement.span = self.span(statement.span);
            for token in &mut statement.tokens {
                self.location(&mut token.span.start);
                self.location(&mut token.span.end);
            }
            statement.leading_comments = statement.leading_comments.into_iter().map(|c| self.comment(c)).collect();
            into.statements.push(statement);
        }
        into.comments.extend(split.comments.into_iter().map(|c| self.comment(c)));
        into.unread.extend(split.unread.into_iter().map(|u| u.moved(|span| self.span(span))));
        into.includes.extend(split.includes.into_iter().map(|include| {
            let at = self.span(Span {
                start: include.byte,
                end: include.byte,
                line: include.line,
                column: include.column,
                end_line: include.line,
                end_column: include.column,
            });
            Include { line: at.line, column: at.column, byte: at.start, ..include }
        }));
    }
}

fn is_trivia(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<String> {
        split(sql).statements.iter().map(|s| sql[s.span.start..s.span.end].to_string()).collect()
    }

    #[test]
    fn splits_on_semicolons_outside_strings_comments_and_dollar_quotes() {
        let sql = "SELECT ';';\n-- a; comment\nCREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n/* a /* nested; */ c */ SELECT 2";
        assert_eq!(
            texts(sql),
            vec!["SELECT ';'", "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql", "SELECT 2"]
        );
    }

    #[test]
    fn reports_lines_and_columns_one_based() {
        let sql = "SELECT 1;\n\n  UPDATE t SET a = 1\n  WHERE b = 2;";
        let split = split(sql);
        let second = &split.statements[1].span;
        assert_eq!((second.line, second.column, second.end_line, second.end_column), (3, 3, 4, 14));
    }

    #[test]
    fn positions_on_a_long_line_match_a_walk_from_its_start() {
        let sql = "SELECT 'é';\n".to_string() + &"SELECT 'ü', 1; ".repeat(3000) + "\nSELECT 2;";
        for statement in split(&sql).statements {
            let span = statement.span;
            let line_start = sql[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let line = sql[..span.start].matches('\n').count() + 1;
            assert_eq!((span.line, span.column), (line, sql[line_start..span.start].chars().count() + 1));
            assert!(sql[span.start..span.end].starts_with("SELECT"), "{span:?}");
        }
    }

    #[test]
    fn a_large_file_split_a_window_at_a_time_is_split_as_a_whole() {
        let block = "-- sluice:ignore drop-table -- ok\nCREATE TABLE t (a text DEFAULT 'x; y', b int);\n\
                     CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;\n\
                     DO $$ BEGIN PERFORM 1; END $$; /* ü; */ SELECT 'é'; SELECT 3;\n";
        let sql = block.repeat(2 * WINDOW / block.len() + 7) + "SELECT 'unterminated";
        assert!(sql.len() > 2 * WINDOW);
        let mut windowed = Split::default();
        let mut windows = 0;
        split_each(&sql, &mut { Reading::SERVER }, |part| {
            windows += 1;
            windowed.append(part);
        });
        assert!(windows > 2, "{windows} windows");
        let whole = split(&sql);
        assert_eq!(windowed.statements.len(), whole.statements.len());
        assert_eq!(format!("{windowed:?}"), format!("{whole:?}"));
    }

    #[test]
    fn keeps_begin_atomic_bodies_whole() {
        let sql = "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;\nSELECT 3;";
        assert_eq!(texts(sql).len(), 2);
    }

    fn psql(sql: &str) -> Split {
        split_reading(sql, &mut Reading { psql: true, ..Reading::SERVER })
    }

    fn statement_texts<'a>(sql: &'a str, split: &Split) -> Vec<&'a str> {
        split.statements.iter().map(|s| &sql[s.span.start..s.span.end]).collect()
    }

    fn unread_reasons(split: &Split) -> Vec<String> {
        split.unread.iter().map(|u| u.message()).collect()
    }

    #[test]
    fn psql_meta_commands_are_not_sql_and_the_ones_that_send_end_a_statement() {
        let sql = "\\set ON_ERROR_STOP on\nSELECT 1 \\g\nSELECT 2 \\; SELECT 3;\n\\echo 'a; b'\nSELECT 4;";
        let split = psql(sql);
        assert_eq!(statement_texts(sql, &split), ["SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"]);
        assert!(split.unread.is_empty(), "{:?}", split.unread);
        // Read by the server (any other runner), a backslash is no meta-command.
        assert_eq!(split_reading(sql, &mut { Reading::SERVER }).statements.len(), 3);
    }

    #[test]
    fn psql_includes_are_recorded_where_they_run() {
        let sql = "SELECT 1;\n  \\ir lib/a.sql\n\\include 'b c.sql'\nSELECT 2;";
        let split = psql(sql);
        let includes: Vec<(&str, bool, usize, usize)> =
            split.includes.iter().map(|i| (i.path.as_str(), i.relative, i.line, i.column)).collect();
        assert_eq!(includes, [("lib/a.sql", true, 2, 3), ("b c.sql", false, 3, 1)]);
        assert_eq!(&sql[split.includes[0].byte..split.includes[0].byte + 3], "\\ir");
    }

    #[test]
    fn what_psql_runs_but_sluice_cannot_read_is_unread() {
        // Each made psql 15 create an index Sluice never read (issue 38, item 2).
        let cases = [
            ("\\set s 'CREATE INDEX i ON t (a)'\n:s;", "psql variable `:s`"),
            ("SELECT 'CREATE INDEX i ON t (a)' \\gexec", "`\\gexec` runs each value"),
            ("\\if true\nCREATE INDEX i ON t (a);\n\\endif", "psql's `\\if`"),
            ("CREATE INDEX i\n\\echo x\nON t (a);", "`\\echo` inside a statement"),
            ("\\! psql -c 'CREATE INDEX i ON t (a)'", "`\\!` runs a shell command"),
            ("SELECT * FROM t WHERE a = :'v';", "psql variable `:'v'`"),
        ];
        for (sql, reason) in cases {
            let split = psql(sql);
            let reasons = unread_reasons(&split);
            assert!(reasons.iter().any(|r| r.contains(reason)), "{sql}: {reasons:?}");
        }
        // Casts, assignments and array slices are no variables.
        let sql = "SELECT a::int, b[1:2] FROM t; SELECT f(x := 1);";
        assert!(psql(sql).unread.is_empty());
    }

    #[test]
    fn psql_copy_data_is_skipped_and_the_rest_of_the_copy_line_is_sql() {
        // psql 15 ran `CREATE INDEX i1` after loading the data, then `i2`.
        let sql = "COPY t FROM stdin; CREATE INDEX i1 ON t (a);\n1\t'x\n\\.\nCREATE INDEX i2 ON t (b);\n";
        let split = psql(sql);
        assert_eq!(
            statement_texts(sql, &split),
            ["COPY t FROM stdin", "CREATE INDEX i1 ON t (a)", "CREATE INDEX i2 ON t (b)"]
        );
        assert!(split.unread.is_empty(), "{:?}", split.unread);
        assert_eq!(split.statements[2].span.line, 4);
    }

    #[test]
    fn standard_conforming_strings_changes_where_strings_end() {
        // With the setting off, `'a\''` is the string a'; PostgreSQL 15 ran the CREATE INDEX
        // that a reading with the setting on took for the inside of a string (issue 38, item 3).
        let sql = "SET standard_conforming_strings = off;\nSELECT 'a\\'';\nCREATE INDEX i ON t (a);\nRESET standard_conforming_strings;\nSELECT 'b\\';";
        let split = split(sql);
        assert_eq!(
            statement_texts(sql, &split),
            [
                "SET standard_conforming_strings = off",
                "CREATE INDEX i ON t (a)",
                "RESET standard_conforming_strings",
                "SELECT 'b\\'"
            ]
        );
        assert!(
            matches!(split.unread[..], [Unread { reason: Unreadable::Strings { line: 2, off: true, .. }, .. }]),
            "{:?}",
            split.unread
        );
        // One query string is lexed whole before it runs: its own SET changes the next string only.
        let mut reading = Reading { one_string: true, ..Reading::SERVER };
        let one = "SET standard_conforming_strings TO 'off'; SELECT 'a\\'; SELECT 1;";
        assert_eq!(split_reading(one, &mut reading).statements.len(), 3);
        assert_eq!(reading.strings, Strings::Off);
    }

    #[test]
    fn a_string_whose_end_depends_on_an_unknown_setting_is_unread() {
        let sql = "SELECT 'c:\\dir\\';\nCREATE INDEX i ON t (a);\nSELECT 'x\\\\', 'y';";
        let mut reading = Reading { strings: Strings::Unknown, ..Reading::SERVER };
        let split = split_reading(sql, &mut reading);
        assert_eq!(
            statement_texts(sql, &split),
            ["CREATE INDEX i ON t (a)", "SELECT 'x\\\\', 'y'"],
            "an even run ends the same"
        );
        assert!(unread_reasons(&split)[0].contains("may be off here"), "{:?}", split.unread);
        for (set, after) in [
            ("SET LOCAL standard_conforming_strings = on", Strings::Unknown),
            ("SELECT set_config('standard_conforming_strings', 'on', false)", Strings::Unknown),
            ("SET standard_conforming_strings = true", Strings::On),
            ("RESET ALL", Strings::On),
        ] {
            let mut reading = Reading { strings: Strings::Off, ..Reading::SERVER };
            split_reading(&format!("{set};"), &mut reading);
            assert_eq!(reading.strings, after, "{set}");
        }
    }

    #[test]
    fn template_placeholders_are_not_sql() {
        let sql = "CREATE TABLE {{ index .Options \"Namespace\" }}.t (a int);\nSELECT '{{ not a placeholder }}';\n<% if x %>\nSELECT 1;\nSELECT a <% b FROM t;";
        let split = split(sql);
        assert_eq!(statement_texts(sql, &split), ["SELECT '{{ not a placeholder }}'", "SELECT a <% b FROM t"]);
        let reasons = unread_reasons(&split);
        assert!(
            reasons[0].contains("`{{ index .Options \"Namespace\" }}` at line 1, column 14 (Go templates"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("`<% if x %>` at line 3, column 1 (ERB or EJS)"), "{reasons:?}");
    }

    #[test]
    fn an_unterminated_begin_atomic_body_is_unread_to_the_end() {
        // It swallowed the rest of the file with a warning that claimed the rest was checked (issue 38, item 6).
        let sql = "SELECT 1;\nCREATE FUNCTION f() RETURNS int LANGUAGE sql\n  BEGIN ATOMIC SELECT 1;\nCREATE INDEX i ON t (a);\n";
        let split = split(sql);
        assert_eq!(texts(sql), ["SELECT 1"]);
        let unread = split.unterminated().expect("unterminated");
        assert_eq!((unread.span.line, unread.span.end), (2, sql.len()));
        assert!(matches!(
            unread.reason,
            Unreadable::Unterminated { what: Unterminated::RoutineBody, line: 3, column: 3 }
        ));
        assert!(unread.message().contains("unterminated `BEGIN ATOMIC` routine body"), "{}", unread.message());
    }

    #[test]
    fn attaches_leading_comments_to_the_next_statement() {
        let sql = "SELECT 1;\n-- sluice:ignore x -- because\nSELECT 2;";
        let split = split(sql);
        assert!(split.statements[0].leading_comments.is_empty());
        assert_eq!(split.statements[1].leading_comments[0].text, "-- sluice:ignore x -- because");
        assert_eq!(split.statements[1].leading_comments[0].line, 2);
    }

    #[test]
    fn a_semicolon_inside_an_unterminated_comment_is_not_a_boundary() {
        for sql in ["/* never closed\nSELECT 1;", "SELECT 1;\n/* a; b; c;", "SELECT 'a;b;c", "SELECT $$ x; y;"] {
            let split = split(sql);
            assert!(split.unterminated().is_some(), "{sql}");
            assert!(split.statements.len() <= 1, "{sql}");
        }
    }

    #[test]
    fn an_unterminated_string_keeps_the_statements_before_it() {
        let sql = "SELECT 1;\nSELECT 'oops;\nSELECT 3;";
        let split = split(sql);
        assert_eq!(split.statements.len(), 1);
        let unread = split.unterminated().expect("unterminated");
        assert_eq!((unread.span.line, unread.span.column, unread.span.end_line), (2, 1, 3));
        assert_eq!(unread.span.end, sql.len());
        assert!(matches!(unread.reason, Unreadable::Unterminated { line: 2, column: 8, .. }));
    }

    #[test]
    fn a_statement_the_tokenizer_rejects_hides_nothing_after_it() {
        // Valid PostgreSQL that sqlparser's tokenizer rejects (issue 16, item 4).
        for bad in ["SELECT U&' \\' UESCAPE '!'", "SELECT a |> b FROM t"] {
            let sql = format!("SELECT 1;\n{bad};\nCREATE INDEX i ON t (a);\n");
            let split = split(&sql);
            assert_eq!(texts(&sql), vec!["SELECT 1", "CREATE INDEX i ON t (a)"], "{bad}");
            assert_eq!(split.unread.len(), 1, "{bad}");
            let unread = &split.unread[0];
            assert_eq!(&sql[unread.span.start..unread.span.end], bad);
            assert!(unread.message().contains("line 2"), "{}", unread.message());
            assert_eq!(split.statement_spans().len(), 3);
        }
    }

    #[test]
    fn split_where_reads_only_the_statements_kept() {
        let sql =
            "SELECT a |> b FROM t;\n/* c */ DROP INDEX i;\nCREATE VIEW v AS SELECT 1;\n  alter TABLE t DROP COLUMN a;";
        let split = split_where(sql, |s| s.starts_with("DROP") || s.starts_with("alter"));
        let kept: Vec<&str> = split.statements.iter().map(|s| &sql[s.span.start..s.span.end]).collect();
        assert_eq!(kept, ["DROP INDEX i", "alter TABLE t DROP COLUMN a"]);
        assert_eq!((split.statements[1].span.line, split.statements[1].tokens[0].span.start.column), (4, 3));
        assert!(split.unread.is_empty(), "the statement the tokenizer rejects was not kept: {:?}", split.unread);
    }

    #[test]
    fn tokens_carry_their_place_in_the_file() {
        let sql = "SELECT 1;\n  SELECT a,\n    b";
        let split = split(sql);
        let tokens = &split.statements[1].tokens;
        assert_eq!((tokens[0].span.start.line, tokens[0].span.start.column), (2, 3));
        assert_eq!((tokens[1].span.start.line, tokens[1].span.start.column), (2, 10));
        assert_eq!((tokens[3].span.start.line, tokens[3].span.start.column), (3, 5));
    }

    #[test]
    fn routine_bodies_follow_psql() {
        let sql = "CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; SELECT 2; END;\nSELECT 3;";
        assert_eq!(texts(sql).len(), 2);
        // From PostgreSQL's create_function_sql regression test.
        let sql = "CREATE FUNCTION functest_S_3a() RETURNS boolean\n    BEGIN ATOMIC\n        ;;RETURN false;;\n    END;\nSELECT 1;";
        assert_eq!(texts(sql).len(), 2);
        // BEGIN outside a routine is a transaction.
        assert_eq!(texts("BEGIN; SELECT 1; END;").len(), 3);
    }

    #[test]
    fn unterminated_input_is_linear() {
        // 32,000 statements then an unterminated dollar quote took 52 s when every prefix was
        // tokenized again (issue 16, item 12).
        let sql = format!("{}SELECT $$ x;\n", "SELECT 1;\n".repeat(32_000));
        let started = std::time::Instant::now();
        let split = split(&sql);
        assert_eq!(split.statements.len(), 32_000);
        assert_eq!(split.unterminated().unwrap().span.line, 32_001);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    }
}

//! Splits a SQL file into statements with byte spans and 1-based line/column, using
//! sqlparser's tokenizer so dollar-quoted bodies, strings, comments and nested `/* */`
//! never split a statement in the wrong place.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};
use std::cell::Cell;

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

/// The split of a file, and whatever stopped the tokenizer (an unterminated string…).
#[derive(Debug, Default)]
pub struct Split {
    pub statements: Vec<RawStatement>,
    /// Every comment in the file, for file-level directives.
    pub comments: Vec<Comment>,
    /// The tokenizer's complaint and where the rest of the file (which could not be split) starts.
    pub tokenizer_error: Option<(String, Span)>,
}

/// Maps sqlparser's (line, column) locations back to byte offsets, walking forward only.
struct Offsets<'a> {
    text: &'a str,
    line_starts: Vec<usize>,
    /// The last position resolved: a later one on the same line is counted from it, so a line
    /// holding thousands of statements is walked once, not once per statement.
    mark: Cell<Mark>,
}

/// A byte offset with its 1-based line and column.
#[derive(Clone, Copy)]
struct Mark {
    byte: usize,
    line: usize,
    column: usize,
}

impl<'a> Offsets<'a> {
    fn new(text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Offsets { text, line_starts, mark: Cell::new(Mark { byte: 0, line: 1, column: 1 }) }
    }

    fn byte(&self, line: u64, column: u64) -> usize {
        let (line, column) = (line as usize, (column as usize).max(1));
        let Some(&start) = self.line_starts.get(line.saturating_sub(1)) else {
            return self.text.len();
        };
        let mark = self.mark.get();
        let from = if mark.line == line && mark.byte >= start && mark.column <= column {
            mark
        } else {
            Mark { byte: start, line, column: 1 }
        };
        let rest = &self.text[from.byte..];
        let byte = from.byte + rest.char_indices().nth(column - from.column).map(|(b, _)| b).unwrap_or(rest.len());
        self.mark.set(Mark { byte, line, column });
        byte
    }

    fn location(&self, byte: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= byte);
        let start = self.line_starts[line - 1];
        let mark = self.mark.get();
        let (from, column) = if mark.line == line && (start..=byte).contains(&mark.byte) {
            (mark.byte, mark.column)
        } else {
            (start, 1)
        };
        let column = column + self.text[from..byte].chars().count();
        self.mark.set(Mark { byte, line, column });
        (line, column)
    }

    fn span(&self, start: usize, end: usize) -> Span {
        let (line, column) = self.location(start);
        let (end_line, end_column) = self.location(end);
        Span { start, end, line, column, end_line, end_column }
    }
}

/// Where a part of a file starts (a migration tool's piece, a window of a large file): byte
/// offset, 1-based line and column. Moves what was found in the part to the file's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    offset: usize,
    line: usize,
    column: usize,
}

impl Origin {
    /// The start of a file.
    pub const START: Origin = Origin { offset: 0, line: 1, column: 1 };

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

    fn location(&self, location: &mut sqlparser::tokenizer::Location) {
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
        if into.tokenizer_error.is_none() {
            into.tokenizer_error = split.tokenizer_error.map(|(message, span)| (message, self.span(span)));
        }
    }
}

fn is_trivia(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_))
}

fn comment_text(token: &Token) -> Option<String> {
    match token {
        Token::Whitespace(Whitespace::SingleLineComment { comment, prefix }) => {
            Some(format!("{prefix}{}", comment.trim_end()))
        }
        Token::Whitespace(Whitespace::MultiLineComment(c)) => Some(format!("/*{c}*/")),
        _ => None,
    }
}

fn keyword(token: &Token) -> Option<Keyword> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    }
}

/// How much text is tokenized at once: a large file is split a window at a time, each ending
/// after the last statement that ends in it, so memory holds one window's tokens, not the file's.
const WINDOW: usize = 1 << 20;

pub fn split(text: &str) -> Split {
    let mut out = Split::default();
    split_each(text, |part| {
        out.statements.extend(part.statements);
        out.comments.extend(part.comments);
        out.tokenizer_error = out.tokenizer_error.take().or(part.tokenizer_error);
    });
    out
}

/// [`split`], handing over the statements a window at a time (in the file's coordinates), so a
/// caller can parse them and let their tokens go before the next window is read.
pub fn split_each(text: &str, mut each: impl FnMut(Split)) {
    let mut start = 0;
    let mut origin = Origin::START;
    let mut window = WINDOW;
    while text.len() - start > window {
        let end = floor_char_boundary(text, start + window);
        let Some((cut, tokens)) = complete_statements(&text[start..end]) else {
            // No statement ends in the window (one very long statement): a larger one.
            window *= 2;
            continue;
        };
        let mut part = Split::default();
        origin.shift(split_tokens(&text[start..start + cut], tokens), &mut part);
        each(part);
        origin = origin.advance(&text[start..start + cut]);
        start += cut;
        window = WINDOW;
    }
    let mut part = Split::default();
    origin.shift(split_whole(&text[start..]), &mut part);
    each(part);
}

/// The tokens of `window` up to and including the last `;` that ends a statement, with the
/// byte offset just after it; `None` when no statement ends there. Only tokens that end well
/// before the window does are trusted: the last ones may be cut short by its end.
fn complete_statements(window: &str) -> Option<(usize, Vec<TokenWithSpan>)> {
    let mut tokens = Vec::new();
    // An error (an unterminated string cut by the window's end) keeps the tokens before it.
    let _ = Tokenizer::new(&PostgreSqlDialect {}, window).tokenize_with_location_into_buf(&mut tokens);
    let trusted = tokens.len().saturating_sub(2);
    let mut atomic_depth = 0usize;
    let mut previous_keyword = None;
    let mut last_end = None;
    for (index, token) in tokens[..trusted].iter().enumerate() {
        match &token.token {
            Token::SemiColon if atomic_depth == 0 => last_end = Some(index),
            t if !is_trivia(t) => {
                let kw = keyword(t);
                match (previous_keyword, kw) {
                    (Some(Keyword::BEGIN), Some(Keyword::ATOMIC)) => atomic_depth += 1,
                    (_, Some(Keyword::END)) if atomic_depth > 0 => atomic_depth -= 1,
                    _ => {}
                }
                previous_keyword = kw;
            }
            _ => {}
        }
    }
    let last = last_end?;
    let end = &tokens[last].span.end;
    let cut = Offsets::new(window).byte(end.line, end.column);
    tokens.truncate(last + 1);
    Some((cut, tokens))
}

/// The largest char boundary of `text` at or before `index`.
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Splits `text` tokenized whole.
fn split_whole(text: &str) -> Split {
    let offsets = Offsets::new(text);
    let dialect = PostgreSqlDialect {};
    let (tokens, tokenizer_error) = match Tokenizer::new(&dialect, text).tokenize_with_location() {
        Ok(tokens) => (tokens, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut out = Split::default();
    if let Some(e) = tokenizer_error {
        // Keep the statements before the trouble: cut at the last `;` before the error and
        // tokenize that part again, moving the cut back (strictly) until it reads cleanly —
        // a `;` inside the unterminated string or comment itself must not be trusted.
        let mut limit = offsets.byte(e.location.line, e.location.column);
        let cut = loop {
            let cut = text[..limit].rfind(';').map(|i| i + 1).unwrap_or(0);
            if cut == 0 {
                break 0;
            }
            match Tokenizer::new(&dialect, &text[..cut]).tokenize_with_location() {
                Ok(_) => break cut,
                Err(again) => {
                    limit = Offsets::new(&text[..cut]).byte(again.location.line, again.location.column).min(cut - 1)
                }
            }
        };
        let head = if cut > 0 { split_whole(&text[..cut]) } else { Split::default() };
        out.statements = head.statements;
        out.comments = head.comments;
        let start = cut + (text[cut..].len() - text[cut..].trim_start().len());
        out.tokenizer_error = Some((e.message.clone(), offsets.span(start, text.len())));
        return out;
    }
    split_tokens(text, tokens)
}

/// Cuts `text`'s tokens into statements.
fn split_tokens(text: &str, tokens: Vec<TokenWithSpan>) -> Split {
    let offsets = Offsets::new(text);
    let mut out = Split::default();
    let mut current: Vec<TokenWithSpan> = Vec::new();
    let mut pending_comments: Vec<Comment> = Vec::new();
    let mut leading: Vec<Comment> = Vec::new();
    // `BEGIN ATOMIC … END` bodies (SQL-standard function bodies) contain semicolons.
    let mut atomic_depth = 0usize;
    let mut previous_keyword: Option<Keyword> = None;

    let finish = |current: &mut Vec<TokenWithSpan>, leading: &mut Vec<Comment>, out: &mut Split| {
        let first = current.iter().position(|t| !is_trivia(&t.token));
        let last = current.iter().rposition(|t| !is_trivia(&t.token));
        if let (Some(first), Some(last)) = (first, last) {
            let start = offsets.byte(current[first].span.start.line, current[first].span.start.column);
            let end = offsets.byte(current[last].span.end.line, current[last].span.end.column);
            // The parser and the recognizer skip whitespace and comments: keeping them would only cost memory.
            let tokens: Vec<TokenWithSpan> = current.drain(first..=last).filter(|t| !is_trivia(&t.token)).collect();
            out.statements.push(RawStatement {
                span: offsets.span(start, end),
                tokens,
                leading_comments: std::mem::take(leading),
            });
        }
        current.clear();
    };

    for token in tokens {
        if let Some(text) = comment_text(&token.token) {
            let comment = Comment { line: token.span.start.line as usize, text };
            out.comments.push(comment.clone());
            if current.iter().all(|t| is_trivia(&t.token)) {
                pending_comments.push(comment);
            }
        }
        match &token.token {
            Token::SemiColon if atomic_depth == 0 => {
                if current.iter().any(|t| !is_trivia(&t.token)) {
                    finish(&mut current, &mut leading, &mut out);
                }
                continue;
            }
            Token::EOF => continue,
            t if !is_trivia(t) => {
                if current.iter().all(|t| is_trivia(&t.token)) {
                    leading = std::mem::take(&mut pending_comments);
                }
                let kw = keyword(t);
                match (previous_keyword, kw) {
                    (Some(Keyword::BEGIN), Some(Keyword::ATOMIC)) => atomic_depth += 1,
                    (_, Some(Keyword::END)) if atomic_depth > 0 => atomic_depth -= 1,
                    _ => {}
                }
                previous_keyword = kw;
            }
            _ => {}
        }
        current.push(token);
    }
    finish(&mut current, &mut leading, &mut out);
    out
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
        let (windowed, whole) = (split(&sql), split_whole(&sql));
        assert_eq!(windowed.statements.len(), whole.statements.len());
        assert_eq!(format!("{windowed:?}"), format!("{whole:?}"));
    }

    #[test]
    fn keeps_begin_atomic_bodies_whole() {
        let sql = "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END;\nSELECT 3;";
        assert_eq!(texts(sql).len(), 2);
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
            assert!(split.tokenizer_error.is_some(), "{sql}");
            assert!(split.statements.len() <= 1, "{sql}");
        }
    }

    #[test]
    fn an_unterminated_string_keeps_the_statements_before_it() {
        let sql = "SELECT 1;\nSELECT 'oops;\nSELECT 3;";
        let split = split(sql);
        assert_eq!(split.statements.len(), 1);
        let (_, span) = split.tokenizer_error.expect("tokenizer error");
        assert_eq!(span.line, 2);
    }
}

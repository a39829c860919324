//! The SQL statements inside a `DO $$ … $$` block: PL/pgSQL's block structure (DECLARE, BEGIN …
//! END, IF / ELSIF / ELSE, CASE, LOOP / WHILE / FOR / FOREACH, EXCEPTION handlers) is read token
//! by token, and every SQL statement in it is parsed like a statement of the file, with its own
//! position. What cannot be checked — `EXECUTE` of SQL built at run time, `CALL` of a procedure —
//! is listed so the report can say exactly what was not checked.

use super::split::{RawStatement, Span};
use super::statement::Statement;
pub use super::statement::{Block, BlockStatement, Branch, Unchecked};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Word};

/// How deeply the blocks, IFs, CASEs and loops of a DO block may nest before Sluice stops
/// reading it: reading them recurses, and 200,000 nested IFs overflowed the stack (issue 38,
/// item 6). Far beyond any real block.
pub const NESTING_LIMIT: usize = 200;

/// Turns (line, column) locations inside one statement of a file into byte offsets of the file
/// and back. Only the statement's own lines are indexed: indexing the whole file for each DO
/// block made a file of many blocks quadratic (issue 38, item 8).
struct Lines<'a> {
    text: &'a str,
    /// Where the statement starts: byte offset, 1-based line and column.
    start: usize,
    line: usize,
    column: usize,
    /// Byte offsets of the starts of the statement's later lines (its second line first).
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, span: &Span) -> Self {
        let starts = text[span.start..span.end].match_indices('\n').map(|(i, _)| span.start + i + 1).collect();
        Lines { text, start: span.start, line: span.line, column: span.column, starts }
    }

    /// The byte where `line` starts and the column it starts at (the statement's first line
    /// starts at the statement).
    fn line_start(&self, line: usize) -> Option<(usize, usize)> {
        match line.checked_sub(self.line)? {
            0 => Some((self.start, self.column)),
            later => self.starts.get(later - 1).map(|&start| (start, 1)),
        }
    }

    fn byte(&self, location: Location) -> usize {
        let Some((start, first_column)) = self.line_start(location.line as usize) else {
            return self.text.len();
        };
        let rest = &self.text[start..];
        start
            + rest
                .char_indices()
                .nth((location.column as usize).saturating_sub(first_column))
                .map(|(b, _)| b)
                .unwrap_or(rest.len())
    }

    fn location(&self, byte: usize) -> (usize, usize) {
        let later = self.starts.partition_point(|&s| s <= byte);
        let (start, column) = self.line_start(self.line + later).unwrap_or((self.start, self.column));
        (self.line + later, self.text[start..byte].chars().count() + column)
    }

    fn span(&self, start: usize, end: usize) -> Span {
        let (line, column) = self.location(start);
        let (end_line, end_column) = self.location(end);
        Span { start, end, line, column, end_line, end_column }
    }
}

/// Reads the body of the DO statement at `span` of `text`, each statement in it parsed by
/// `parse` (the statement parser that met the DO statement, so a DO inside is read the same
/// way). `None` when its body is not a dollar-quoted string (a single-quoted body stays
/// unchecked).
pub fn read(text: &str, span: &Span, parse: StatementParser) -> Option<Block> {
    let statement = &text[span.start..span.end];
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, statement).tokenize_with_location().ok()?;
    let (token, body) = tokens.iter().find_map(|t| match &t.token {
        Token::DollarQuotedString(d) => Some((t, d)),
        _ => None,
    })?;
    let opener = body.tag.as_ref().map_or(0, |t| t.len()) + 2;
    let in_statement = Span { start: 0, end: statement.len(), line: 1, column: 1, ..Span::default() };
    let start = span.start + Lines::new(statement, &in_statement).byte(token.span.start) + opener;
    let end = start + body.value.len();
    let lines = Lines::new(text, span);
    let (line, column) = lines.location(start);
    let shift = |mut location: Location| {
        if location.line == 1 {
            location.column += column as u64 - 1;
        }
        location.line += line as u64 - 1;
        location
    };
    let body_tokens: Vec<TokenWithSpan> = Tokenizer::new(&PostgreSqlDialect {}, &text[start..end])
        .tokenize_with_location()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .map(|mut t| {
            t.span.start = shift(t.span.start);
            t.span.end = shift(t.span.end);
            t
        })
        .collect();
    let mut reader = Reader { text, lines, tokens: body_tokens, pos: 0, depth: 0, block: Block::default(), parse };
    reader.statements(Branch::Always, &[]);
    Some(reader.block)
}

/// Parses one statement of `text` from its tokens.
pub type StatementParser = fn(&str, RawStatement) -> Statement;

struct Reader<'a> {
    text: &'a str,
    lines: Lines<'a>,
    tokens: Vec<TokenWithSpan>,
    pos: usize,
    /// How many control structures enclose the statement being read.
    depth: usize,
    block: Block,
    parse: StatementParser,
}

fn word(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

impl Reader<'_> {
    fn peek_word(&self, ahead: usize) -> Option<String> {
        self.tokens.get(self.pos + ahead).and_then(|t| word(&t.token))
    }

    fn sees(&self, words: &[&str]) -> bool {
        words.iter().enumerate().all(|(i, w)| self.peek_word(i).as_deref() == Some(*w))
    }

    fn eat(&mut self, words: &[&str]) -> bool {
        let seen = self.sees(words);
        if seen {
            self.pos += words.len();
        }
        seen
    }

    fn line(&self) -> usize {
        self.tokens.get(self.pos).map_or(0, |t| t.span.start.line as usize)
    }

    /// Skips to just past the next `;` outside parentheses.
    fn skip_statement(&mut self) -> (usize, usize) {
        let first = self.pos;
        let mut depth = 0i32;
        while let Some(t) = self.tokens.get(self.pos) {
            self.pos += 1;
            match t.token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::SemiColon if depth <= 0 => return (first, self.pos - 1),
                _ => {}
            }
        }
        (first, self.pos)
    }

    /// Skips a control header (an IF condition, a loop's range) up to and including `until`,
    /// stepping over CASE … END inside it.
    fn skip_header(&mut self, until: &[&str]) {
        let mut depth = 0i32;
        let mut cases = 0;
        while let Some(t) = self.tokens.get(self.pos) {
            match (&t.token, word(&t.token).as_deref()) {
                (Token::LParen, _) => depth += 1,
                (Token::RParen, _) => depth -= 1,
                (_, Some("CASE")) => cases += 1,
                (_, Some("END")) if cases > 0 => cases -= 1,
                (_, Some(w)) if depth == 0 && cases == 0 && until.contains(&w) => {
                    self.pos += 1;
                    return;
                }
                (Token::SemiColon, _) if depth == 0 => return,
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Reads statements until one of `stops` (left for the caller) or the end.
    fn statements(&mut self, branch: Branch, stops: &[&[&str]]) {
        while self.pos < self.tokens.len() {
            if stops.iter().any(|s| self.sees(s)) {
                return;
            }
            self.statement(branch);
        }
    }

    fn statement(&mut self, branch: Branch) {
        if self.depth >= NESTING_LIMIT {
            let line = self.line();
            self.block.too_deep = true;
            self.block.unchecked.push(Unchecked {
                line,
                what: format!(
                    "everything from here on: its control structures nest deeper than {NESTING_LIMIT} levels"
                ),
            });
            self.pos = self.tokens.len();
            return;
        }
        self.depth += 1;
        self.statement_within(branch);
        self.depth -= 1;
    }

    fn statement_within(&mut self, branch: Branch) {
        // `<<label>>`
        if self.tokens.get(self.pos).is_some_and(|t| t.token == Token::ShiftLeft) {
            self.pos += 3;
            return;
        }
        let Some(first) = self.peek_word(0) else {
            self.leaf(branch);
            return;
        };
        match first.as_str() {
            "DECLARE" | "BEGIN" => self.block(branch),
            "IF" => {
                self.pos += 1;
                self.skip_header(&["THEN"]);
                let inner = branch.within(Branch::Conditional);
                loop {
                    self.statements(inner, &[&["ELSIF"], &["ELSEIF"], &["ELSE"], &["END", "IF"]]);
                    if self.eat(&["ELSIF"]) || self.eat(&["ELSEIF"]) {
                        self.skip_header(&["THEN"]);
                    } else if self.eat(&["ELSE"]) {
                        continue;
                    } else {
                        self.eat(&["END", "IF"]);
                        self.skip_statement();
                        return;
                    }
                }
            }
            "CASE" => {
                self.pos += 1;
                let inner = branch.within(Branch::Conditional);
                self.skip_header(&["WHEN"]);
                loop {
                    self.skip_header(&["THEN"]);
                    self.statements(inner, &[&["WHEN"], &["ELSE"], &["END", "CASE"]]);
                    if self.eat(&["WHEN"]) {
                        continue;
                    }
                    if self.eat(&["ELSE"]) {
                        self.statements(inner, &[&["END", "CASE"]]);
                    }
                    self.eat(&["END", "CASE"]);
                    self.skip_statement();
                    return;
                }
            }
            "LOOP" | "WHILE" | "FOR" | "FOREACH" => {
                if first != "LOOP" {
                    self.skip_header(&["LOOP"]);
                } else {
                    self.pos += 1;
                }
                self.statements(branch.within(Branch::Loop), &[&["END", "LOOP"]]);
                self.eat(&["END", "LOOP"]);
                self.skip_statement();
            }
            "EXECUTE" => {
                let line = self.line();
                let (from, to) = self.skip_statement();
                let sql = self.source(from, to);
                self.block
                    .unchecked
                    .push(Unchecked { line, what: format!("`{}` runs SQL built at run time", shorten(&sql)) });
            }
            "CALL" => {
                let line = self.line();
                let (from, to) = self.skip_statement();
                let sql = self.source(from, to);
                self.block.unchecked.push(Unchecked {
                    line,
                    what: format!("`{}` runs a procedure whose statements Sluice does not read", shorten(&sql)),
                });
            }
            "RAISE" | "RETURN" | "NULL" | "CONTINUE" | "EXIT" | "ASSERT" | "GET" | "OPEN" | "FETCH" | "MOVE"
            | "CLOSE" => {
                self.skip_statement();
            }
            _ if self.is_assignment() => {
                self.skip_statement();
            }
            _ => self.leaf(branch),
        }
    }

    /// `[DECLARE …] BEGIN … [EXCEPTION WHEN … THEN …] END [label];`
    fn block(&mut self, branch: Branch) {
        if self.eat(&["DECLARE"]) {
            while self.pos < self.tokens.len() && !self.sees(&["BEGIN"]) {
                self.skip_statement();
            }
        }
        if !self.eat(&["BEGIN"]) {
            return;
        }
        self.statements(branch, &[&["EXCEPTION"], &["END"]]);
        if self.eat(&["EXCEPTION"]) {
            let handler = branch.within(Branch::OnError);
            while self.eat(&["WHEN"]) {
                self.skip_header(&["THEN"]);
                self.statements(handler, &[&["WHEN"], &["END"]]);
            }
        }
        self.eat(&["END"]);
        self.skip_statement();
    }

    /// `name := …` or `name = …` (also `rec.field`, `arr[i]`).
    fn is_assignment(&self) -> bool {
        let token = |i: usize| self.tokens.get(i).map(|t| &t.token);
        let mut i = self.pos;
        if !matches!(token(i), Some(Token::Word(_))) {
            return false;
        }
        i += 1;
        while token(i) == Some(&Token::Period) && matches!(token(i + 1), Some(Token::Word(_))) {
            i += 2;
        }
        if token(i) == Some(&Token::LBracket) {
            while token(i).is_some_and(|t| *t != Token::RBracket) {
                i += 1;
            }
            i += 1;
        }
        matches!(token(i), Some(Token::Assignment | Token::Eq))
    }

    fn source(&self, from: usize, to: usize) -> String {
        let (Some(first), Some(last)) = (self.tokens.get(from), self.tokens.get(to.max(from + 1) - 1)) else {
            return String::new();
        };
        let start = self.lines.byte(first.span.start);
        let end = self.lines.byte(last.span.end).max(start);
        self.text[start..end].to_string()
    }

    /// A SQL statement: parsed like a statement of the file.
    fn leaf(&mut self, branch: Branch) {
        let (from, to) = self.skip_statement();
        if from >= to {
            return;
        }
        let mut tokens: Vec<TokenWithSpan> = self.tokens[from..to].to_vec();
        // `PERFORM f()` is `SELECT f()` whose result is thrown away.
        if let Some(first) = tokens.first_mut().filter(|t| word(&t.token).as_deref() == Some("PERFORM")) {
            first.token = Token::Word(Word {
                value: "SELECT".into(),
                quote_style: None,
                keyword: sqlparser::keywords::Keyword::SELECT,
            });
        }
        strip_returning_into(&mut tokens);
        let start = self.lines.byte(tokens[0].span.start);
        let end = self.lines.byte(tokens[tokens.len() - 1].span.end);
        let raw = RawStatement { span: self.lines.span(start, end), tokens, leading_comments: Vec::new() };
        let mut statement = (self.parse)(self.text, raw);
        // In PL/pgSQL, `SELECT … INTO v` fills a variable: it creates no table.
        if matches!(statement.ddl, super::ddl::Ddl::CreateTable { from_query: true, .. })
            && self.peek_word_at(from).is_some_and(|w| w == "SELECT" || w == "WITH" || w == "PERFORM")
        {
            statement.ddl = super::ddl::Ddl::Query;
        }
        self.block.statements.push(BlockStatement { statement, branch });
    }

    fn peek_word_at(&self, i: usize) -> Option<String> {
        self.tokens.get(i).and_then(|t| word(&t.token))
    }
}

/// `INSERT … RETURNING id INTO v`: the `INTO` fills a PL/pgSQL variable; SQL has no such clause.
fn strip_returning_into(tokens: &mut Vec<TokenWithSpan>) {
    let first = tokens.first().and_then(|t| word(&t.token));
    if !matches!(first.as_deref(), Some("INSERT" | "UPDATE" | "DELETE")) {
        return;
    }
    let returning = tokens.iter().position(|t| word(&t.token).as_deref() == Some("RETURNING"));
    if let Some(returning) = returning {
        if let Some(into) = tokens[returning..].iter().position(|t| word(&t.token).as_deref() == Some("INTO")) {
            tokens.truncate(returning + into);
        }
    }
}

fn shorten(sql: &str) -> String {
    let collapsed = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > 80 {
        format!("{}…", collapsed.chars().take(79).collect::<String>())
    } else {
        collapsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::Ddl;
    use crate::sql::parse::parse_file;

    fn block(sql: &str) -> (Vec<(String, Branch, usize)>, Vec<Unchecked>) {
        let file = parse_file(sql.to_string());
        let statement = file.statements.iter().find(|s| s.ddl == Ddl::Do).expect("a DO statement");
        let block = statement.block.as_deref().expect("a block");
        let statements = block
            .statements
            .iter()
            .map(|b| (file.statement_text(&b.statement).to_string(), b.branch, b.statement.span.line))
            .collect();
        (statements, block.unchecked.clone())
    }

    #[test]
    fn reads_statements_in_branches_loops_and_handlers() {
        let sql = "SELECT 1;
DO $$
DECLARE
    r RECORD;
BEGIN
    ALTER TABLE t ADD COLUMN a int;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'c') THEN
        ALTER TABLE t ADD CONSTRAINT c UNIQUE (a);
    ELSIF 1 = 2 THEN
        NULL;
    ELSE
        x := 1;
    END IF;
    FOR r IN SELECT * FROM t LOOP
        UPDATE t SET a = r.a WHERE id = r.id;
    END LOOP;
    PERFORM pg_sleep(0);
    EXECUTE format('DROP INDEX %I', 'i');
EXCEPTION WHEN duplicate_object THEN
    RAISE NOTICE 'exists';
    DROP TABLE t;
END $$;";
        let (statements, unchecked) = block(sql);
        let summary: Vec<(&str, Branch, usize)> =
            statements.iter().map(|(text, branch, line)| (text.as_str(), *branch, *line)).collect();
        assert_eq!(
            summary,
            [
                ("ALTER TABLE t ADD COLUMN a int", Branch::Always, 6),
                ("ALTER TABLE t ADD CONSTRAINT c UNIQUE (a)", Branch::Conditional, 8),
                ("UPDATE t SET a = r.a WHERE id = r.id", Branch::Loop, 15),
                ("PERFORM pg_sleep(0)", Branch::Always, 17),
                ("DROP TABLE t", Branch::OnError, 21),
            ]
        );
        assert_eq!(unchecked.len(), 1);
        assert_eq!(unchecked[0].line, 18);
        assert!(unchecked[0].what.contains("format('DROP INDEX %I', 'i')"), "{:?}", unchecked);
    }

    #[test]
    fn select_into_a_variable_creates_no_table() {
        let file = parse_file("DO $$ DECLARE n int; BEGIN SELECT count(*) INTO n FROM t; END $$;".into());
        let block = file.statements[0].block.as_deref().unwrap();
        assert_eq!(block.statements[0].statement.ddl, Ddl::Query);
    }

    #[test]
    fn positions_are_those_of_the_file() {
        let sql = "DO $body$ BEGIN CREATE INDEX i ON t (a); END $body$;";
        let (statements, _) = block(sql);
        assert_eq!(statements[0].0, "CREATE INDEX i ON t (a)");
        let file = parse_file(sql.to_string());
        let inner = &file.statements[0].block.as_deref().unwrap().statements[0].statement;
        assert_eq!((inner.span.line, inner.span.column), (1, 17));
    }
}

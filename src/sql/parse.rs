//! Parses a file statement by statement, so one statement sqlparser cannot read never hides
//! the rest of the file; unparsed statements still go through the token-level recognizer, and
//! so do statements too deep to parse safely ([`super::depth`]).

use super::ddl::{Ddl, Lock};
use super::depth::{self, TooDeep};
use super::split::{split, split_each, Comment, Origin, RawStatement, Reading, Span, Split, Unread};
pub use super::statement::Statement;
use super::{from_ast, parser_gaps, plpgsql, recognize};
use rayon::prelude::*;
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};
use std::sync::Arc;

#[derive(Debug)]
pub struct ParsedFile {
    /// Shared with the findings that quote it (see [`crate::finding::Snippet`]).
    pub text: Arc<str>,
    pub statements: Vec<Statement>,
    pub comments: Vec<Comment>,
    /// Text that could not be read at all (a statement sqlparser cannot tokenize, everything
    /// after an unterminated string or comment): never checked, always reported.
    pub unread: Vec<Unread>,
}

impl ParsedFile {
    pub fn statement_text(&self, statement: &Statement) -> &str {
        &self.text[statement.span.start..statement.span.end]
    }
}

pub fn parse_file(text: String) -> ParsedFile {
    parse_shared(text.into())
}

/// [`parse_file`] of text already shared (a migration's text, kept once for every finding on it).
pub fn parse_shared(text: Arc<str>) -> ParsedFile {
    parse_shared_keeping(text, Keep::ALL)
}

/// How much of each statement a parse keeps. A migration waits, parsed, for its turn to be
/// replayed, and a file of millions of statements cannot hold them all whole: the first
/// `trees` keep their syntax trees (kilobytes each), the first `whole` keep everything; the
/// others are [released](Statement::release), and the engine parses them again when their turn
/// comes ([`Statement::restore`]).
#[derive(Clone, Copy, Debug)]
pub struct Keep {
    pub trees: usize,
    pub whole: usize,
}

impl Keep {
    pub const ALL: Keep = Keep { trees: usize::MAX, whole: usize::MAX };

    /// What is left to keep after `count` statements.
    fn after(self, count: usize) -> Keep {
        Keep { trees: self.trees.saturating_sub(count), whole: self.whole.saturating_sub(count) }
    }
}

/// [`parse_shared`], keeping of each statement only what `keep` says.
pub fn parse_shared_keeping(text: Arc<str>, keep: Keep) -> ParsedFile {
    parse_reading_keeping(text, &mut { Reading::SERVER }, keep)
}

/// [`parse_shared_keeping`] of a text read as `reading` says (psql's, or under another
/// `standard_conforming_strings`); `reading` becomes what the text leaves behind.
pub fn parse_reading_keeping(text: Arc<str>, reading: &mut Reading, keep: Keep) -> ParsedFile {
    let mut parsed =
        ParsedFile { text: Arc::clone(&text), statements: Vec::new(), comments: Vec::new(), unread: Vec::new() };
    // A window of the file at a time: its tokens are gone before the next is read.
    split_each(&text, reading, |part| {
        let part = parse_split_keeping(Arc::clone(&text), part, keep.after(parsed.statements.len()));
        reserve_projected(&mut parsed.statements, part.statements.len(), &part.statements, text.len());
        parsed.statements.extend(part.statements);
        parsed.comments.extend(part.comments);
        parsed.unread.extend(part.unread);
    });
    parsed
}

/// Makes room for `more` statements, growing to the count the text read so far projects for the
/// whole file rather than by doubling: a file of millions of statements would otherwise hold up
/// to twice the records it needs, and both copies at once while growing.
fn reserve_projected(statements: &mut Vec<Statement>, more: usize, last: &[Statement], text_len: usize) {
    let needed = statements.len() + more;
    if needed <= statements.capacity() {
        return;
    }
    let read = last.last().map_or(text_len, |s| s.span.end).max(1);
    let projected = needed.saturating_mul(text_len) / read;
    // At least a quarter more each time, so that a projection that keeps falling short still
    // grows geometrically.
    let capacity = (projected + projected / 8).max(needed + needed / 4);
    statements.reserve_exact(capacity - statements.len());
}

/// Parses the statements of a split made elsewhere (a migration tool's pieces of `text`, each
/// split on its own: see `schema::tools::script`); spans are offsets into `text`.
pub fn parse_split(text: impl Into<Arc<str>>, split: super::split::Split) -> ParsedFile {
    parse_split_keeping(text, split, Keep::ALL)
}

/// [`parse_split`], keeping of each statement only what `keep` says: a file of a million
/// queries would otherwise hold a million trees at once. A statement whose tree was dropped
/// gets it back from [`syntax_tree`] when it is checked.
///
/// On rayon's workers (the lint engine's parsing), the statements are parsed in parallel, not
/// only the files: the engine parses a chunk of migrations while it replays the one before, and
/// a chunk of a few large files (Lemmy's early migrations, a hundred views each) kept one core
/// parsing them while the other, its replay done, waited (a tenth of a whole lint of Lemmy).
/// Elsewhere they are parsed on the calling thread, whose stack its caller chose for the depth
/// limits (see [`depth::with_stack`]); the workers' is set by [`depth::configure_thread_pool`].
pub fn parse_split_keeping(text: impl Into<Arc<str>>, split: super::split::Split, keep: Keep) -> ParsedFile {
    let text = text.into();
    let parse = |(index, raw): (usize, RawStatement)| {
        let mut statement = parse_statement(&text, raw);
        if index >= keep.whole {
            statement.release();
        } else if index >= keep.trees {
            statement.ast = None;
        }
        statement
    };
    let statements = if rayon::current_thread_index().is_some() {
        split.statements.into_par_iter().enumerate().map(parse).collect()
    } else {
        split.statements.into_iter().enumerate().map(parse).collect()
    };
    ParsedFile { text, statements, comments: split.comments, unread: split.unread }
}

impl Statement {
    /// Parsed, and its typed view alone does not describe it, yet it holds no syntax tree: the
    /// tree was dropped to save memory (see [`parse_split_keeping`]).
    pub fn lacks_syntax_tree(&self) -> bool {
        self.ast.is_none() && self.parse_error.is_none() && !self.ddl.is_complete()
    }

    /// Lets go of what only checking the statement needs: its syntax tree, the statements of a
    /// DO block, and its typed view unless whole-file rules read it
    /// ([`Ddl::read_by_whole_file`]). Its place, its comments and whether it parsed stay.
    pub fn release(&mut self) {
        self.ast = None;
        self.block = None;
        if !self.ddl.read_by_whole_file() {
            self.ddl = Ddl::NotKept;
        }
    }

    /// Makes a statement whole again before it is checked: parses it again if it was
    /// [released](Self::release), or gets back its dropped syntax tree. `text` is its file's.
    pub fn restore(&mut self, text: &str) {
        if matches!(self.ddl, Ddl::NotKept) {
            let mut again = Split::default();
            Origin::at(&self.span).shift(split(&text[self.span.start..self.span.end]), &mut again);
            let leading_comments = std::mem::take(&mut self.leading_comments);
            *self = match (again.statements.pop(), again.statements.is_empty() && again.unread.is_empty()) {
                // The statement's own text splits into that statement alone, where it was.
                (Some(mut raw), true) if raw.span == self.span => {
                    raw.leading_comments = leading_comments.into_vec();
                    parse_statement(text, raw)
                }
                // Never seen; if it were, the statement is reported as not checked.
                _ => {
                    let error = "Sluice could not read this statement again on its own".to_string();
                    let tokens = retokenize(text, &self.span);
                    unparsed(text, self.span, &tokens, Refused { error, too_deep: None }, leading_comments)
                }
            };
            return;
        }
        if self.lacks_syntax_tree() {
            self.ast = syntax_tree(text, &self.span);
        }
    }
}

/// The syntax tree of the statement at `span` of `text`, parsed again, with the file's positions.
pub fn syntax_tree(text: &str, span: &Span) -> Option<Box<ast::Statement>> {
    let shift = |location: &mut sqlparser::tokenizer::Location| {
        if location.line == 1 {
            location.column += span.column as u64 - 1;
        }
        location.line += span.line as u64 - 1;
    };
    let mut tokens = retokenize(text, span);
    for token in &mut tokens {
        shift(&mut token.span.start);
        shift(&mut token.span.end);
    }
    // As the first parse did: within the depth limits, exactly one statement.
    parse_alone(tokens, false, 0).ok().map(Box::new)
}

/// Why a statement did not become a syntax tree.
struct Refused {
    error: String,
    too_deep: Option<TooDeep>,
}

pub(crate) fn parse_statement(text: &str, raw: RawStatement) -> Statement {
    let leading = recognize::leading_keywords(&raw.tokens);
    let drop_index_concurrently = is_drop_index_concurrently(&raw.tokens);
    // Too deep: not parsed at all, and the tokens are still here for the recognizer.
    let nesting = match depth::check(&raw.tokens) {
        Ok(nesting) => nesting,
        Err(too_deep) => {
            return unparsed(
                text,
                raw.span,
                &raw.tokens,
                Refused { error: too_deep.to_string(), too_deep: Some(too_deep) },
                raw.leading_comments,
            )
        }
    };
    let raw_tokens = if drop_index_concurrently { raw.tokens.clone() } else { Vec::new() };
    match parse_alone(parser_gaps::bridge(raw.tokens), drop_index_concurrently, nesting) {
        Ok(statement) => {
            let mut ddl = from_ast::ddl(&statement, &leading);
            with_body_locks(&mut ddl, text, &raw.span);
            let ast = (!ddl.is_complete()).then(|| Box::new(statement));
            Statement {
                span: raw.span,
                ast,
                parse_error: None,
                too_deep: None,
                ddl,
                fully_recognized: false,
                leading_comments: raw.leading_comments.into(),
                block: None,
            }
        }
        Err(refused) => {
            // The parser consumed the tokens; failures are rare, so tokenize the text again.
            let tokens = if drop_index_concurrently { raw_tokens } else { retokenize(text, &raw.span) };
            unparsed(text, raw.span, &tokens, refused, raw.leading_comments)
        }
    }
}

/// Fills in the table locks a function's body takes when it runs: those of its `REFRESH
/// MATERIALIZED VIEW`, `LOCK TABLE` and `TRUNCATE` statements (the statements that lock tables
/// other than by reading and writing rows), read from its dollar-quoted body as the statements of
/// a DO block are.
fn with_body_locks(ddl: &mut Ddl, text: &str, span: &Span) {
    let Ddl::CreateFunction { locks, .. } = ddl else { return };
    // Most bodies take no such lock: look for the words before reading the body (`LOCK` inside
    // `person_block` is not one).
    let statement = &text.as_bytes()[span.start..span.end];
    let is_word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let has_word = |word: &[u8]| {
        statement.windows(word.len()).enumerate().any(|(at, window)| {
            window.eq_ignore_ascii_case(word)
                && (at == 0 || !is_word_byte(statement[at - 1]))
                && statement.get(at + word.len()).is_none_or(|b| !is_word_byte(*b))
        })
    };
    if ![b"REFRESH".as_slice(), b"LOCK", b"TRUNCATE"].iter().any(|w| has_word(w)) {
        return;
    }
    let Some(body) = plpgsql::read(text, span, parse_statement) else { return };
    for inner in body.statements {
        match inner.statement.ddl {
            Ddl::RefreshMaterializedView { name, concurrently } => {
                locks.push((name, if concurrently { Lock::Exclusive } else { Lock::AccessExclusive }))
            }
            Ddl::LockTable { tables, mode } => locks
                .extend(Lock::from_mode(&mode).into_iter().flat_map(|l| tables.iter().map(move |t| (t.clone(), l)))),
            Ddl::Truncate { tables, .. } => locks.extend(tables.into_iter().map(|t| (t, Lock::AccessExclusive))),
            _ => {}
        }
    }
}

/// A statement only the recognizer read (and, for a `DO` block, the statements of its body).
fn unparsed(
    text: &str,
    span: Span,
    tokens: &[TokenWithSpan],
    refused: Refused,
    leading_comments: impl Into<Box<[Comment]>>,
) -> Statement {
    let mut recognized = recognize::recognize(tokens);
    with_body_locks(&mut recognized.ddl, text, &span);
    let block =
        (recognized.ddl == Ddl::Do).then(|| plpgsql::read(text, &span, parse_statement)).flatten().map(Box::new);
    let complete =
        recognized.complete && (recognized.ddl != Ddl::Do || block.as_ref().is_some_and(|b| b.fully_checked()));
    Statement {
        span,
        ast: None,
        parse_error: Some(refused.error.into()),
        too_deep: refused.too_deep,
        ddl: recognized.ddl,
        fully_recognized: complete,
        leading_comments: leading_comments.into(),
        block,
    }
}

/// Parses exactly one statement: text after it (which sqlparser would silently leave unread)
/// is an error. `nesting` is how deep the statement nests (see [`depth::is_too_deep`]).
fn parse_alone(
    tokens: Vec<TokenWithSpan>,
    drop_index_concurrently: bool,
    nesting: usize,
) -> Result<ast::Statement, Refused> {
    let refused = |error: ParserError| {
        let too_deep = depth::is_too_deep(&error, nesting).then_some(TooDeep::Nesting);
        let error = match (error, &too_deep) {
            (_, Some(too_deep)) => too_deep.to_string(),
            (other, None) => other.to_string().trim_start_matches("sql parser error: ").to_string(),
        };
        Refused { too_deep, error }
    };
    #[cfg(debug_assertions)]
    let reference = depth::reference_parser(tokens.clone()).parse_statement();
    let mut parser = depth::parser(tokens);
    let parsed = parser.parse_statement();
    #[cfg(debug_assertions)]
    assert_eq!(
        parsed, reference,
        "sluice's dialect and its reference (PostgreSqlDialect but for the deliberate answers) disagree"
    );
    let statement = parsed.map_err(refused)?;
    let next = parser.peek_token();
    // `CREATE MATERIALIZED VIEW / TABLE … AS … WITH [NO] DATA`: sqlparser stops before the
    // clause, which only says whether the relation is filled now; the statement is whole.
    let mut rest = Vec::new();
    let after = loop {
        match parser.next_token().token {
            Token::Word(w) => rest.push(w.value.to_ascii_uppercase()),
            other => break other,
        }
    };
    let with_data = after == Token::EOF && (rest == ["WITH", "DATA"] || rest == ["WITH", "NO", "DATA"]);
    if next.token != Token::EOF && !with_data {
        return Err(refused(ParserError::ParserError(format!(
            "Expected: end of statement, found: {} at Line: {}, Column: {}",
            next.token, next.span.start.line, next.span.start.column
        ))));
    }
    statement_alone(drop_index_concurrently, statement).map_err(refused)
}

fn is_drop_index_concurrently(tokens: &[TokenWithSpan]) -> bool {
    const WORDS: [&str; 3] = ["DROP", "INDEX", "CONCURRENTLY"];
    // PostgreSQL folds only the ASCII letters of keywords (`downcase_identifier`, scansup.c).
    let is = |token: &TokenWithSpan, keyword: &str| match &token.token {
        Token::Word(w) => w.quote_style.is_none() && w.value.eq_ignore_ascii_case(keyword),
        _ => false,
    };
    tokens.len() >= WORDS.len() && tokens.iter().zip(WORDS).all(|(token, keyword)| is(token, keyword))
}

fn retokenize(text: &str, span: &Span) -> Vec<TokenWithSpan> {
    Tokenizer::new(&PostgreSqlDialect {}, &text[span.start..span.end])
        .tokenize_with_location()
        .map(|tokens| tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect())
        .unwrap_or_default()
}

/// sqlparser 0.64 misreads `DROP INDEX CONCURRENTLY name` as an index named CONCURRENTLY:
/// treat it as unparsed so the recognizer reads it right.
fn statement_alone(drop_index_concurrently: bool, statement: ast::Statement) -> Result<ast::Statement, ParserError> {
    if drop_index_concurrently {
        return Err(ParserError::ParserError("DROP INDEX CONCURRENTLY is not supported by the SQL parser".into()));
    }
    Ok(statement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::split::split;

    #[test]
    fn one_bad_statement_does_not_hide_the_rest() {
        let file =
            parse_file("CREATE TABLE t (a int);\nREINDEX TABLE CONCURRENTLY t;\nCREATE INDEX i ON t (a);".into());
        assert_eq!(file.statements.len(), 3);
        assert!(file.statements[0].parse_error.is_none());
        assert!(file.statements[1].parse_error.is_some());
        assert!(matches!(file.statements[1].ddl, Ddl::Reindex { concurrently: true, .. }));
        assert!(matches!(file.statements[2].ddl, Ddl::CreateIndex(_)));
    }

    #[test]
    fn a_released_statement_is_restored_exactly_as_first_parsed() {
        let text =
            "CREATE TABLE t (a int);\n-- sluice:ignore drop-column -- kept\n  ALTER TABLE t\n    DROP COLUMN a;\n\
                    CREATE VIEW v AS SELECT a FROM t WHERE a > 1;\nREINDEX TABLE CONCURRENTLY t;\nBEGIN;\n\
                    DO $$ BEGIN CREATE INDEX i ON t (a); END $$;\nCOMMIT;\nSELECT 1; SELECT 'x;y';";
        let whole = parse_file(text.to_string());
        let mut released = parse_shared_keeping(Arc::from(text), Keep { trees: 0, whole: 0 });
        assert_eq!(released.statements.len(), whole.statements.len());
        for (statement, expected) in released.statements.iter_mut().zip(&whole.statements) {
            // What whole-file rules read survives the release.
            assert_eq!(statement.span, expected.span);
            assert_eq!(statement.leading_comments, expected.leading_comments);
            assert_eq!(statement.parse_error, expected.parse_error);
            assert_eq!(statement.ddl.read_by_whole_file(), statement.ddl != Ddl::NotKept);
            statement.restore(text);
            assert_eq!(format!("{statement:?}"), format!("{expected:?}"), "{}", whole.statement_text(expected));
        }
    }

    #[test]
    fn statements_parsed_in_parallel_come_out_as_parsed_in_order() {
        let text: String = (0..300)
            .map(|n| match n % 4 {
                0 => format!("CREATE TABLE t{n} (a int);\n"),
                1 => format!("-- sluice:ignore drop-column\nALTER TABLE t{} DROP COLUMN a;\n", n - 1),
                2 => format!("CREATE VIEW v{n} AS SELECT a FROM t{} WHERE a > {n};\n", n - 2),
                _ => "REINDEX TABLE CONCURRENTLY t0; SELECT 'x;y';\n".to_string(),
            })
            .collect();
        let keep = Keep { trees: 100, whole: 200 };
        let on_this_thread = parse_shared_keeping(Arc::from(text.as_str()), keep);
        assert!(rayon::current_thread_index().is_none(), "the test thread parses alone");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).stack_size(depth::STACK_BYTES).build().unwrap();
        let in_the_pool = pool.install(|| {
            assert!(rayon::current_thread_index().is_some(), "the pool's worker parses in parallel");
            parse_shared_keeping(Arc::from(text.as_str()), keep)
        });
        assert_eq!(on_this_thread.statements.len(), 375);
        assert_eq!(format!("{:?}", in_the_pool.statements), format!("{:?}", on_this_thread.statements));
        assert_eq!(in_the_pool.comments, on_this_thread.comments);
        // The keep limits count statements in file order, whichever worker parsed them: views
        // 97 and 102 on either side of the trees kept, the ALTER TABLE 201 past the whole ones.
        let views = [97, 102].map(|at| &in_the_pool.statements[at]);
        assert!(views.iter().all(|view| matches!(view.ddl, Ddl::CreateView { .. })));
        assert!(views[0].ast.is_some() && views[1].ast.is_none());
        assert_eq!(in_the_pool.statements[201].ddl, Ddl::NotKept);
    }

    #[test]
    fn a_dropped_syntax_tree_parses_again_with_the_same_positions() {
        let text = "SELECT 1;\n  UPDATE t SET a = 1\n  WHERE b = 2;";
        let kept = parse_file(text.to_string());
        let dropped = parse_split_keeping(Arc::from(text), split(text), Keep { trees: 1, whole: usize::MAX });
        assert!(!kept.statements[1].lacks_syntax_tree());
        assert!(dropped.statements[1].lacks_syntax_tree());
        let again = syntax_tree(text, &dropped.statements[1].span).expect("parses");
        assert_eq!(Some(again), kept.statements[1].ast, "same tree, same spans");
    }

    #[test]
    fn drop_index_concurrently_is_not_an_index_named_concurrently() {
        let file = parse_file("DROP INDEX CONCURRENTLY idx;".into());
        match &file.statements[0].ddl {
            Ddl::Drop { names, concurrently, .. } => {
                assert_eq!(names, &vec!["idx".to_string()]);
                assert!(concurrently);
            }
            other => panic!("{other:?}"),
        }
    }
}

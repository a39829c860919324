//! What Sluice must guarantee for any input, whatever it is: shared by the seeded mutation test
//! (`tests/mutation.rs`) and the cargo-fuzz targets (`fuzz/fuzz_targets/`), which include this
//! file. Each check returns what went wrong instead of panicking, so a caller can print the input.

use sluice::finding::Severity;
use sluice::lint::{lint, MigrationSource, Settings, Sources};
use sluice::queries::{ParsedQuery, Query, Source};
use sluice::rules::SourceFile;
use sluice::schema::migrations::Migration;
use sluice::sql::split::{split, Span, Split, Unreadable};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::path::PathBuf;

/// The splitter accounts for every byte: each one is in a statement, in a range reported as
/// unread, or in what lies between statements (whitespace, comments, `;`). Spans are in order,
/// disjoint, on character boundaries, and their lines and columns match their byte offsets.
pub fn check_split(text: &str) -> Result<Split, String> {
    let split = split(text);
    let mut pieces: Vec<(Span, &str)> = split.statements.iter().map(|s| (s.span, "statement")).collect();
    pieces.extend(split.unread.iter().map(|u| (u.span, "unread")));
    pieces.sort_by_key(|(span, _)| span.start);
    let mut covered = 0;
    for (span, what) in &pieces {
        if span.start < covered || span.end < span.start || span.end > text.len() {
            return Err(format!("{what} span {span:?} overlaps or runs out of the text (covered up to {covered})"));
        }
        if !text.is_char_boundary(span.start) || !text.is_char_boundary(span.end) {
            return Err(format!("{what} span {span:?} splits a character"));
        }
        if (span.line, span.column) != location(text, span.start)
            || (span.end_line, span.end_column) != location(text, span.end)
        {
            return Err(format!("{what} span {span:?}: lines and columns do not match its bytes"));
        }
        between_statements(&text[covered..span.start])?;
        covered = span.end;
    }
    between_statements(&text[covered..])?;
    for unread in &split.unread {
        if let Unreadable::Unterminated { .. } = unread.reason {
            if unread.span.end != text.len() {
                return Err(format!("unterminated text {:?} does not run to the end of the file", unread.span));
            }
        }
    }
    for statement in &split.statements {
        let first = statement.tokens.first().map(|t| (t.span.start.line as usize, t.span.start.column as usize));
        if first.is_some_and(|first| first != (statement.span.line, statement.span.column)) {
            return Err(format!("statement {:?}: its first token is at {first:?}", statement.span));
        }
    }
    Ok(split)
}

/// Text between statements holds nothing but whitespace, comments and semicolons, by
/// sqlparser's reading too (an independent lexer).
fn between_statements(gap: &str) -> Result<(), String> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, gap)
        .tokenize()
        .map_err(|e| format!("text between statements is not only comments: {gap:?}: {e}"))?;
    match tokens.iter().find(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon)) {
        Some(token) => Err(format!("text between statements was neither read nor reported: {token} in {gap:?}")),
        None => Ok(()),
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn location(text: &str, byte: usize) -> (usize, usize) {
    let before = &text[..byte];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// Lints the text as a migration after another migration and as a query file: nothing panics,
/// and every range the splitter could not read is an `unread-text` error, whatever directives
/// the text holds. On threads with the stack the binary gives its own.
pub fn check_lint(text: &str) -> Result<(), String> {
    sluice::sql::depth::configure_thread_pool().map_err(|e| format!("cannot start the worker threads: {e}"))?;
    sluice::sql::depth::with_stack(|| lint_and_check(text))
}

fn lint_and_check(text: &str) -> Result<(), String> {
    let first = SourceFile::parse("migrations/001_setup.sql", "CREATE TABLE t (a int, b text);".to_string());
    let migration = SourceFile::parse("migrations/002_fuzz.sql", text.to_string());
    let query = ParsedQuery::parse(Query::whole_file("queries/fuzz.sql", text, Source::QueryFile));
    let expected: Vec<String> = migration
        .parsed
        .unread
        .iter()
        .map(|u| format!("{}:{}-{}:{}", u.span.line, u.span.column, u.span.end_line, u.span.end_column))
        .collect();
    let sources = Sources {
        migrations: vec![setup_migration(first, "001"), setup_migration(migration, "002")],
        queries: vec![query],
        ..Sources::default()
    };
    let settings = Settings { postgres_version: 15, ..Settings::default() };
    let report = lint(&sources, &settings, &|_| true);
    for file in ["migrations/002_fuzz.sql", "queries/fuzz.sql"] {
        let reported: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.file == file && f.rule == "unread-text" && f.severity == Severity::Error)
            .filter_map(|f| f.facts.iter().find(|fact| fact.name == "unread").map(|fact| fact.value.as_str()))
            .collect();
        if reported != expected {
            return Err(format!("{file}: unread ranges {expected:?}, reported {reported:?}"));
        }
    }
    Ok(())
}

fn setup_migration(up: SourceFile, version: &str) -> MigrationSource {
    let migration = Migration {
        version: version.into(),
        name: up.display.clone(),
        up: PathBuf::from(&up.display),
        ..Migration::default()
    };
    MigrationSource::whole_file(migration, up, None, false)
}

//! How a migration tool runs one file: the pieces of text it sends to PostgreSQL, whether it
//! sends a piece statement by statement or as one query string, and the transaction it wraps a
//! piece in.
//!
//! A layer around [`crate::sql::split`]: each piece is split on its own, so a tool's boundaries
//! (goose blocks and line ends, Drizzle breakpoints, Liquibase and Atlas delimiters, dbmate and
//! goose sections, Liquibase changesets) are statement boundaries, and text the tool never sends
//! (down sections, rollback comments, markers, delimiters) is never replayed. Positions stay
//! those of the file: findings point at the line the reviewer sees.

use super::tree::{normalize, Tree};
use crate::error::Result;
use crate::runner::RunnerTransaction;
use crate::sql::parse::{parse_reading_keeping, parse_split_keeping, Keep};
use crate::sql::source::SourceFile;
use crate::sql::split::{split, split_reading, Origin, Reading, Span, Split, Strings, Unread, Unreadable};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How a tool runs one migration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The stretches of the file the tool sends, in file order, not overlapping.
    pub pieces: Vec<Piece>,
    /// The rollback this file carries itself (goose `Down`, dbmate `migrate:down`, Liquibase
    /// `--rollback`): the file's text with everything else blanked, so lines stay the file's.
    pub rollback: Option<String>,
    /// What the tool would refuse or break in this file, by line.
    pub problems: Vec<Problem>,
    /// The runner is psql (`psql -f`): its meta-commands, variables and COPY data are read as
    /// psql reads them ([`crate::sql::psql`]).
    pub psql: bool,
    /// psql: the files the script's `\i` / `\ir` run, where they run them (see [`Included`]).
    pub includes: Vec<Included>,
    /// psql: includes Sluice could not follow (a file not in the migrations directory, an
    /// absolute path, a loop): unread, as the gate never passes what it did not read.
    pub unread: Vec<Unread>,
}

/// A file psql runs at a point of the script (`\i`, `\ir`), read from the migrations directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Included {
    /// Where the include command is in the including file: what comes before it runs first.
    pub at: usize,
    /// How findings name the file.
    pub display: String,
    pub text: Arc<str>,
    /// Its own script: one piece, statement by statement, and the files it includes.
    pub script: Script,
}

/// A stretch of the file sent to PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Byte range in the file.
    pub range: Range<usize>,
    pub sending: Sending,
    /// The transaction the tool opens around the piece, if any.
    pub transaction: Option<Wrap>,
}

/// How the tool hands a piece to the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sending {
    /// One statement per call: no statement shares a transaction it did not ask for.
    EachStatement,
    /// The whole piece as one query string. PostgreSQL runs a string holding several statements
    /// as one implicit transaction (CREATE INDEX CONCURRENTLY in it fails, and locks taken early
    /// are held to its end); a string holding one statement runs in autocommit. `what` says who
    /// sends what, to complete "in …": "a file golang-migrate sends".
    OneString { what: String },
    /// Prisma ≥ 7.4: one statement per call when its SQL parser reads every statement of the
    /// piece, else the whole piece as one string (`what` as for [`Sending::OneString`]).
    EachStatementIfParsed { what: String },
}

/// A transaction the tool opens (BEGIN … COMMIT around a file, a changeset, every migration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrap {
    /// Pieces with the same key share one transaction.
    pub key: usize,
    /// Completes "CREATE INDEX CONCURRENTLY …": "in a file the migration runner wraps in a transaction".
    pub phrase: String,
    /// For `--explain`: "goose wraps each file in a transaction (no `-- +goose NO TRANSACTION`)".
    pub fact: String,
}

/// Something the tool refuses or breaks, at a line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

impl Script {
    /// The whole file as one piece.
    pub fn whole(text: &str, sending: Sending, transaction: Option<Wrap>) -> Script {
        Script { pieces: vec![Piece { range: 0..text.len(), sending, transaction }], ..Script::default() }
    }

    /// How psql runs a file (`psql -f`): the whole file, each statement sent on its own, and
    /// the files its `\\i` and `\\ir` run, read from `tree` (`path` is the file's place in it).
    pub fn psql(path: &Path, text: &str, tree: &dyn Tree, transaction: Option<Wrap>) -> Result<Script> {
        let mut script = Script { psql: true, ..Script::whole(text, Sending::EachStatement, transaction) };
        follow_includes(&mut script, path, text, tree, &mut vec![path.to_path_buf()])?;
        Ok(script)
    }

    /// Every file this script runs, itself first, as (display, text) for those it includes.
    pub fn included_texts(&self) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        for included in &self.includes {
            out.push((included.display.as_str(), &*included.text));
            out.extend(included.script.included_texts());
        }
        out
    }
}

/// How deep psql includes may nest before Sluice stops following them: psql follows a loop
/// until it runs out of file handles.
const INCLUDE_DEPTH: usize = 16;

/// Reads the files the `\\i` / `\\ir` commands of `text` (the file at `path` of `tree`) run, and
/// theirs, into `script`; `chain` is the files including this one, itself last.
fn follow_includes(
    script: &mut Script,
    path: &Path,
    text: &str,
    tree: &dyn Tree,
    chain: &mut Vec<PathBuf>,
) -> Result<()> {
    if !text.contains('\\') {
        return Ok(());
    }
    let split = split_reading(text, &mut Reading { psql: true, ..Reading::SERVER });
    for include in split.includes {
        let not_followed = |why: String| {
            let at = Span {
                start: include.byte,
                end: include.byte,
                line: include.line,
                column: include.column,
                end_line: include.line,
                end_column: include.column,
            };
            Unread {
                span: at,
                reason: Unreadable::Client {
                    what: format!("psql's include of `{}`: {why}", include.path),
                    line: include.line,
                    column: include.column,
                },
            }
        };
        let written = Path::new(&include.path);
        let base = if include.relative { path.parent().unwrap_or(Path::new("")) } else { Path::new("") };
        let resolved = if written.is_absolute() { None } else { normalize(&base.join(written)) };
        let Some(resolved) = resolved else {
            script
                .unread
                .push(not_followed("the file is outside the migrations directory, where Sluice cannot read it".into()));
            continue;
        };
        if chain.len() > INCLUDE_DEPTH || chain.contains(&resolved) {
            script.unread.push(not_followed(format!(
                "includes nest more than {INCLUDE_DEPTH} deep or loop back to a file that includes it"
            )));
            continue;
        }
        let Some(included_text) = tree.read(&resolved)? else {
            let why = if include.relative {
                format!("there is no {} in the migrations directory", tree.display(&resolved))
            } else {
                format!(
                    "there is no {} in the migrations directory; psql reads `\\i` from the directory it runs in, \
                     which Sluice does not know (`\\ir` reads beside the including file)",
                    tree.display(&resolved)
                )
            };
            script.unread.push(not_followed(why));
            continue;
        };
        let mut included = Script { psql: true, ..Script::whole(&included_text, Sending::EachStatement, None) };
        chain.push(resolved.clone());
        follow_includes(&mut included, &resolved, &included_text, tree, chain)?;
        chain.pop();
        script.includes.push(Included {
            at: include.byte,
            display: tree.display(&resolved),
            text: included_text.into(),
            script: included,
        });
    }
    Ok(())
}

impl Wrap {
    /// The tool wraps the whole file (key 0) in BEGIN … COMMIT.
    pub fn file(fact: impl Into<String>) -> Wrap {
        Wrap { key: 0, phrase: "in a file the migration runner wraps in a transaction".into(), fact: fact.into() }
    }
}

/// 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// `text` with every byte outside `keep` blanked (newlines kept), so positions stay the file's.
pub fn keep_only(text: &str, keep: &[Range<usize>]) -> String {
    let mut out: Vec<u8> = text.bytes().map(|b| if b == b'\n' { b'\n' } else { b' ' }).collect();
    for range in keep {
        out[range.clone()].copy_from_slice(&text.as_bytes()[range.clone()]);
    }
    // Only whole UTF-8 sequences were copied or blanked (ranges start and end on char boundaries).
    String::from_utf8(out).unwrap_or_default()
}

/// The byte ranges of `text`'s lines, each with its newline.
pub fn lines(text: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    let mut start = 0;
    text.split_inclusive('\n').map(move |line| {
        let range = start..start + line.len();
        start += line.len();
        (range, line)
    })
}

/// Parses the pieces of `text` the script sends, each on its own; comments in the text between
/// them are kept (for `sluice:ignore-file`), their statements are not (the tool does not run them).
pub fn parse(display: String, text: Arc<str>, script: &Script) -> SourceFile {
    parse_keeping(display, text, script, Strings::On, Keep::ALL)
}

/// How the script's runner reads a piece, its strings starting under `strings`.
fn reading(script: &Script, piece: &Piece, strings: Strings, session_start: Strings) -> Reading {
    Reading { psql: script.psql, one_string: !matches!(piece.sending, Sending::EachStatement), strings, session_start }
}

/// [`parse`], the file's strings starting under `strings` (see `lint::initial_strings`), keeping
/// of each statement only what `keep` says (see [`Keep`]).
pub fn parse_keeping(display: String, text: Arc<str>, script: &Script, strings: Strings, keep: Keep) -> SourceFile {
    if let [piece] = script.pieces.as_slice() {
        if piece.range == (0..text.len()) {
            let mut reading = reading(script, piece, strings, strings);
            let mut parsed = parse_reading_keeping(text, &mut reading, keep);
            if !script.unread.is_empty() {
                parsed.unread.extend(script.unread.iter().cloned());
                parsed.unread.sort_by_key(|u| u.span.start);
            }
            return SourceFile { display, parsed };
        }
    }
    let mut combined = Split::default();
    let mut at = 0;
    let mut current = strings;
    for piece in &script.pieces {
        comments_only(&text, at..piece.range.start, &mut combined);
        let origin = Origin::of(&text, piece.range.start);
        let mut reading = reading(script, piece, current, strings);
        origin.shift(split_reading(&text[piece.range.clone()], &mut reading), &mut combined);
        current = reading.strings;
        at = piece.range.end;
    }
    comments_only(&text, at..text.len(), &mut combined);
    combined.comments.sort_by_key(|c| c.line);
    combined.unread.extend(script.unread.iter().cloned());
    combined.unread.sort_by_key(|u| u.span.start);
    SourceFile { display, parsed: parse_split_keeping(text, combined, keep) }
}

/// The comments of a stretch the tool does not send (markers, down sections, rollback lines).
fn comments_only(text: &str, range: Range<usize>, into: &mut Split) {
    if range.is_empty() || text[range.clone()].trim().is_empty() {
        return;
    }
    let origin = Origin::of(text, range.start);
    into.comments.extend(split(&text[range]).comments.into_iter().map(|c| origin.comment(c)));
}

/// The transaction each statement of `file` runs in, as the rules see it (see
/// [`crate::rules::MigrationState::runner_transaction`]): the tool's BEGIN … COMMIT around its
/// piece, else the implicit transaction of a multi-statement string, else none.
pub fn transactions(file: &SourceFile, script: &Script) -> Vec<Option<Arc<RunnerTransaction>>> {
    let statements = &file.parsed.statements;
    let piece_of = |start: usize| script.pieces.iter().position(|p| p.range.contains(&start) || p.range.start == start);
    let mut per_piece: Vec<Option<Arc<RunnerTransaction>>> = Vec::with_capacity(script.pieces.len());
    for (index, piece) in script.pieces.iter().enumerate() {
        let transaction = match (&piece.transaction, &piece.sending) {
            (Some(wrap), _) => Some(RunnerTransaction {
                key: wrap.key,
                implicit: false,
                phrase: wrap.phrase.clone(),
                fact: wrap.fact.clone(),
            }),
            (None, Sending::OneString { what }) | (None, Sending::EachStatementIfParsed { what }) => {
                let in_piece = || statements.iter().filter(|s| piece_of(s.span.start) == Some(index));
                let count = in_piece().count();
                let whole = match piece.sending {
                    Sending::EachStatementIfParsed { .. } => in_piece().any(|s| s.parse_error.is_some()),
                    _ => true,
                };
                (whole && count > 1).then(|| RunnerTransaction {
                    // Implicit transactions never span pieces: keys above every wrap key.
                    key: usize::MAX / 2 + index,
                    implicit: true,
                    phrase: format!("in {what} as one query string, which PostgreSQL runs as one implicit transaction"),
                    fact: format!(
                        "{what} as one query string; PostgreSQL runs its {count} statements as one implicit \
                         transaction"
                    ),
                })
            }
            (None, Sending::EachStatement) => None,
        };
        per_piece.push(transaction.map(Arc::new));
    }
    statements.iter().map(|s| piece_of(s.span.start).and_then(|i| per_piece[i].clone())).collect()
}

/// The statements a tool sends, as (1-based line, byte range), and the first unterminated
/// string or comment in its pieces as (message, line).
pub type Deployed = (Vec<(usize, Range<usize>)>, Option<(String, usize)>);

/// The text of the statements a tool sends, with their 1-based lines: what `sluice plan`
/// applies to build its fixture.
pub fn deployed_statements(text: &str, script: &Script) -> Deployed {
    let mut out = Vec::new();
    let mut error = None;
    let mut strings = Strings::On;
    for piece in &script.pieces {
        let origin = Origin::of(text, piece.range.start);
        let mut reading = reading(script, piece, strings, Strings::On);
        let piece_split = split_reading(&text[piece.range.clone()], &mut reading);
        strings = reading.strings;
        // Statements sqlparser cannot tokenize are still PostgreSQL's to run.
        for span in piece_split.statement_spans() {
            let span = origin.span(span);
            out.push((span.line, span.start..span.end));
        }
        if error.is_none() {
            error = piece_split.unterminated().map(|u| {
                let unread = u.clone().moved(|span| origin.span(span));
                (unread.message(), unread.span.line)
            });
        }
    }
    (out, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::ddl::Ddl;

    fn piece(text: &str, from: &str, to: &str, sending: Sending) -> Piece {
        let start = text.find(from).unwrap();
        let end = text.find(to).unwrap() + to.len();
        Piece { range: start..end, sending, transaction: None }
    }

    #[test]
    fn pieces_are_split_on_their_own_and_keep_the_file_positions() {
        let text = "-- head\nCREATE TABLE a (x int)\n--> statement-breakpoint\n  CREATE TABLE b (y int);\n";
        let script = Script {
            pieces: vec![
                piece(text, "CREATE TABLE a", "(x int)", Sending::EachStatement),
                piece(text, "CREATE TABLE b", "(y int);", Sending::EachStatement),
            ],
            ..Script::default()
        };
        let file = parse("m.sql".into(), text.into(), &script);
        let statements = &file.parsed.statements;
        assert_eq!(statements.len(), 2, "the breakpoint ends the first statement though it has no `;`");
        assert_eq!((statements[1].span.line, statements[1].span.column), (4, 3));
        assert_eq!(file.parsed.statement_text(&statements[1]), "CREATE TABLE b (y int)");
        assert!(matches!(statements[0].ddl, Ddl::CreateTable { .. }));
        assert!(file.parsed.comments.iter().any(|c| c.line == 1 && c.text == "-- head"));
        assert!(file.parsed.comments.iter().any(|c| c.line == 3), "the breakpoint comment is kept");
    }

    #[test]
    fn a_multi_statement_string_is_one_implicit_transaction_and_a_single_one_is_not() {
        let what = Sending::OneString { what: "a file golang-migrate sends".into() };
        for (text, expected) in [
            ("SET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY i ON t (a);", true),
            ("CREATE INDEX CONCURRENTLY i ON t (a);", false),
        ] {
            let script = Script::whole(text, what.clone(), None);
            let file = parse("m.sql".into(), text.into(), &script);
            let transactions = transactions(&file, &script);
            assert!(transactions.iter().all(|t| t.is_some() == expected), "{text}");
            if expected {
                assert!(transactions[1].as_ref().unwrap().implicit);
                assert!(transactions[1].as_ref().unwrap().fact.contains("2 statements"));
            }
        }
    }

    #[test]
    fn only_the_pieces_are_deployed() {
        let text = "-- migrate:up\nCREATE TABLE t (a int);\n-- migrate:down\nDROP TABLE t;\n";
        let start = text.find("CREATE").unwrap();
        let end = text.find("-- migrate:down").unwrap();
        let script = Script {
            pieces: vec![Piece { range: start..end, sending: Sending::EachStatement, transaction: None }],
            ..Script::default()
        };
        let (statements, error) = deployed_statements(text, &script);
        assert!(error.is_none());
        let texts: Vec<(usize, &str)> = statements.iter().map(|(line, r)| (*line, &text[r.clone()])).collect();
        assert_eq!(texts, [(2, "CREATE TABLE t (a int)")], "`sluice plan` never applies the down section");
    }

    #[test]
    fn psql_includes_are_followed_inside_the_migrations_directory_and_what_is_not_is_unread() {
        use super::super::testing::MemTree;
        let tree = MemTree::new(&[
            ("002_x.sql", "\\ir lib/a.inc\n\\i lib/b.inc\n\\ir missing.sql\n\\ir ../up.sql\n\\i /etc/x.sql\n"),
            ("lib/a.inc", "CREATE INDEX i ON t (a);\n\\ir a.inc\n"),
            ("lib/b.inc", "SELECT 1;\n"),
        ]);
        let text = &tree.texts[Path::new("002_x.sql")];
        let script = Script::psql(Path::new("002_x.sql"), text, &tree, None).unwrap();
        let included: Vec<(&str, &str)> = script.included_texts();
        assert_eq!(
            included,
            [
                ("migrations/lib/a.inc", "CREATE INDEX i ON t (a);\n\\ir a.inc\n"),
                ("migrations/lib/b.inc", "SELECT 1;\n")
            ]
        );
        assert_eq!(script.includes[0].at, 0);
        let unread: Vec<String> = script.unread.iter().map(|u| u.message()).collect();
        assert_eq!(unread.len(), 3, "{unread:#?}");
        assert!(unread[0].contains("no migrations/missing.sql in the migrations directory"), "{}", unread[0]);
        assert!(unread[1].contains("`../up.sql`: the file is outside the migrations directory"), "{}", unread[1]);
        assert!(unread[2].contains("`/etc/x.sql`"), "{}", unread[2]);
        assert!(script.includes[0].script.unread[0].message().contains("loop back"), "a file including itself");
        let file = parse("002_x.sql".into(), text.as_str().into(), &script);
        assert_eq!(file.parsed.unread.len(), 3, "the includes not followed are the file's unread text");
    }

    #[test]
    fn keep_only_blanks_everything_else_but_newlines() {
        let text = "a é\n--rollback DROP TABLE t;\nb\n";
        let start = text.find("DROP").unwrap();
        let rollback = start..start + "DROP TABLE t;".len();
        let kept = keep_only(text, std::slice::from_ref(&rollback));
        assert_eq!(kept.lines().nth(1).unwrap().trim(), "DROP TABLE t;");
        assert_eq!(kept.len(), text.len(), "é (two bytes) became two spaces: byte offsets stay the file's");
    }
}

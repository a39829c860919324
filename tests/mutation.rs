//! A seeded corpus-mutation test (issue 16): the repository's SQL, mutated with the tokens that
//! broke Sluice before (unterminated quotes and comments, `U&'\'`, custom operators, deep
//! chains, byte-order marks, suppression directives), must never panic or overflow the stack,
//! and every range the splitter could not read must be reported as an `unread-text` error.
//!
//! Deterministic: the seed is fixed, so a failure names the case that reproduces it. The open-
//! ended search is `fuzz/` (cargo-fuzz); this bounded run keeps the invariants in `cargo test`.

mod support;

use std::path::{Path, PathBuf};
use support::invariants::{check_lint, check_split};

const SEED: u64 = 16;
const CASES: usize = 1_500;

/// Pieces that broke, or could break, the splitter, the parser or the suppression logic.
const DICTIONARY: &[&str] = &[
    "'",
    "\"",
    "$$",
    "$body$",
    "/*",
    "*/",
    "--",
    "\n",
    "\r",
    ";",
    "(",
    ")",
    "[",
    "]",
    "[]",
    "\\",
    "E'\\'",
    "U&'",
    "U&' \\' UESCAPE '!'",
    "U&\"",
    "|>",
    "::int",
    "$1",
    "é",
    "\u{feff}",
    "\0",
    "BEGIN ATOMIC",
    "END",
    "CASE WHEN true THEN 1 END",
    "CREATE FUNCTION f() RETURNS int LANGUAGE sql ",
    " UNION ALL SELECT a FROM t",
    " OR a = 1",
    "-- sluice:ignore-file unparsed-statement -- vendored\n",
    "-- sluice:ignore-file unread-text -- vendored\n",
    "-- sluice:ignore unread-text -- x\n",
    "-- migrate:down\n",
    // psql's own language and the setting that changes where strings end (issue 38 items 2, 3).
    "\\ir other.sql\n",
    "\\i other.sql\n",
    "\\include_relative other.sql\n",
    "\\gexec\n",
    "\\set v 'x'\n",
    ":v",
    ":'v'",
    ":\"v\"",
    "\\if true\n",
    "\\elif false\n",
    "\\else\n",
    "\\endif\n",
    "COPY t FROM stdin;\n1\tx\n\\.\n",
    "COPY t FROM stdin;\n",
    "\\.\n",
    "SET standard_conforming_strings = off;\n",
    "SET standard_conforming_strings = on;\n",
    "RESET standard_conforming_strings;\n",
    "'a\\''",
    "CREATE UNIQUE INDEX CONCURRENTLY i ON t (a)",
    "DROP INDEX i",
    "ALTER TABLE t ADD CONSTRAINT c UNIQUE (a)",
    "(SELECT a FROM t WHERE a IN ",
    "UPDATE t SET a = 1 WHERE b = ",
    "NOT ",
];

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect_sql(&root.join("fixtures"), &mut files);
    // The cargo-fuzz seeds: the lexical corner cases, psql's meta-commands, the string settings.
    collect_sql(&root.join("fuzz/seeds/sql"), &mut files);
    files.sort();
    let mut texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).expect("fixture")).collect();
    // The small pathological cases; the large ones would only slow each mutation down.
    texts.extend(support::pathological::SQL.iter().map(|(_, sql)| sql()).filter(|sql| sql.len() <= 20_000));
    assert!(texts.len() > 50, "the corpus is the repository's SQL; found {} files", texts.len());
    texts
}

fn collect_sql(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("fixtures directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            collect_sql(&path, out);
        } else if path.extension().is_some_and(|e| e == "sql") {
            out.push(path);
        }
    }
}

/// A character boundary of `text`, uniformly at random.
fn boundary(rng: &mut fastrand::Rng, text: &str) -> usize {
    floor(text, rng.usize(..=text.len()))
}

/// The character boundary at or before `at`.
fn floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn mutate(rng: &mut fastrand::Rng, corpus: &[String]) -> String {
    let mut text = corpus[rng.usize(..corpus.len())].clone();
    for _ in 0..rng.usize(1..=4) {
        let (a, b) = {
            let (x, y) = (boundary(rng, &text), boundary(rng, &text));
            (x.min(y), x.max(y))
        };
        match rng.u8(..6) {
            0 | 1 => text.insert_str(a, DICTIONARY[rng.usize(..DICTIONARY.len())]),
            2 => text.replace_range(a..floor(&text, b.min(a + 64)), ""),
            3 => {
                let piece = text[a..floor(&text, b.min(a + 256))].to_string();
                text.insert_str(b, &piece);
            }
            4 => {
                // Long enough to cross the depth limits now and then.
                let piece = DICTIONARY[rng.usize(..DICTIONARY.len())].repeat(rng.usize(1..1_200));
                text.insert_str(a, &piece);
            }
            _ => {
                let other = &corpus[rng.usize(..corpus.len())];
                let cut = boundary(rng, other);
                text.truncate(a);
                text.push_str(&other[cut..]);
            }
        }
    }
    text
}

#[test]
fn mutated_sql_never_panics_and_never_hides_unread_text() {
    let corpus = corpus();
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut unread = 0;
    for case in 0..CASES {
        let text = mutate(&mut rng, &corpus);
        let outcome = std::panic::catch_unwind(|| {
            let split = check_split(&text)?;
            check_lint(&text)?;
            Ok::<usize, String>(split.unread.len())
        });
        match outcome {
            Ok(Ok(n)) => unread += n,
            Ok(Err(problem)) => panic!("case {case} (seed {SEED}): {problem}\ninput: {text:?}"),
            Err(_) => panic!("case {case} (seed {SEED}) panicked\ninput: {text:?}"),
        }
    }
    // The mutations reach the paths under test.
    assert!(unread > CASES / 10, "only {unread} unread ranges in {CASES} cases");
}

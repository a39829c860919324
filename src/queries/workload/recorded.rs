//! A statement as `pg_stat_statements` recorded it, prepared for the rules: the statement
//! inside a SQL-level `PREPARE … AS`, each `$n` cast to the type the PREPARE declares or the
//! typed literal it replaced (`INTERVAL $1`), and utility or transaction-control statements
//! told apart (they are counted, not checked).

use crate::sql::lex::{Kind, Lexeme, Lexer};

/// A recorded statement prepared for the rules.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Prepared {
    pub sql: String,
    /// Why it is not checked (`BEGIN`, `SET`, `pg_stat_statements`); `None` for a query.
    pub skipped: Option<String>,
}

/// What `pg_stat_statements` shows for another role's statement to a role without
/// `pg_read_all_stats`.
const HIDDEN: &str = "<insufficient privilege>";

/// What the rules check: statements that read or write rows.
const QUERY_WORDS: &[&str] = &["select", "insert", "update", "delete", "with", "values", "table", "merge"];

/// Type names a constant can follow as a typed literal, whose place a parameter took.
const TYPED_LITERALS: &[&str] = &["interval", "date", "time", "timestamp", "timestamptz", "timetz"];

/// The statement as the rules should read it: inside its PREPARE, with parameter types the
/// text states written as casts.
pub(super) fn prepare(recorded: &str) -> Prepared {
    let lexemes: Vec<Lexeme> = Lexer::new(recorded)
        .map_while(|l| l.ok())
        .filter(|l| !matches!(l.kind, Kind::Space | Kind::LineComment | Kind::BlockComment))
        .collect();
    let word = |l: &Lexeme| recorded[l.start.byte..l.end.byte].to_ascii_lowercase();
    let Some(first) = lexemes.first() else {
        return Prepared { sql: recorded.to_string(), skipped: Some("empty".into()) };
    };
    if recorded.trim() == HIDDEN {
        return Prepared {
            sql: recorded.to_string(),
            skipped: Some(format!("{HIDDEN} (grant pg_read_all_stats to the exporting role)")),
        };
    }
    let (body, types) = match unwrap_prepare(recorded, &lexemes) {
        Some((start, types)) => (start, types),
        None => (first.start.byte, Vec::new()),
    };
    let body_lexemes: Vec<&Lexeme> = lexemes.iter().filter(|l| l.start.byte >= body).collect();
    let Some(lead) = body_lexemes.first() else {
        return Prepared { sql: recorded.to_string(), skipped: Some("PREPARE".into()) };
    };
    let lead_word = word(lead);
    if lead.kind != Kind::Word || !QUERY_WORDS.contains(&lead_word.as_str()) {
        return Prepared { sql: recorded.to_string(), skipped: Some(lead_word.to_uppercase()) };
    }
    if body_lexemes.iter().any(|l| l.kind == Kind::Word && word(l).starts_with("pg_stat_statements")) {
        return Prepared { sql: recorded.to_string(), skipped: Some("pg_stat_statements".into()) };
    }
    // Edits of the body, in order: (range to replace, text).
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (i, l) in body_lexemes.iter().enumerate() {
        let Some(n) = parameter(&recorded[l.start.byte..l.end.byte]) else { continue };
        let previous = i.checked_sub(1).map(|p| body_lexemes[p]);
        match previous.filter(|p| p.kind == Kind::Word && TYPED_LITERALS.contains(&word(p).as_str())) {
            Some(type_word) => {
                edits.push((type_word.start.byte..l.end.byte, format!("${n}::{}", word(type_word))));
            }
            None => {
                if let Some(Some(declared)) = types.get(n - 1) {
                    edits.push((l.start.byte..l.end.byte, format!("(${n}::{declared})")));
                }
            }
        }
    }
    let mut sql = String::with_capacity(recorded.len() - body + 16);
    let mut at = body;
    for (range, text) in edits {
        sql.push_str(&recorded[at..range.start]);
        sql.push_str(&text);
        at = range.end;
    }
    sql.push_str(&recorded[at..]);
    Prepared { sql, skipped: None }
}

/// `$3` → 3.
fn parameter(token: &str) -> Option<usize> {
    token.strip_prefix('$')?.parse::<usize>().ok().filter(|n| *n > 0)
}

/// For `PREPARE name [(type, …)] AS statement`: where the statement starts, and the declared
/// type of each parameter.
fn unwrap_prepare(text: &str, lexemes: &[Lexeme]) -> Option<(usize, Vec<Option<String>>)> {
    let token = |i: usize| lexemes.get(i).map(|l| &text[l.start.byte..l.end.byte]);
    if !token(0)?.eq_ignore_ascii_case("prepare") {
        return None;
    }
    let mut i = 2; // after the name
    let mut types = Vec::new();
    if lexemes.get(i)?.kind == Kind::OpenParen {
        let open = lexemes[i].end.byte;
        let mut depth = 1;
        let mut start = open;
        i += 1;
        loop {
            let l = lexemes.get(i)?;
            match (l.kind, &text[l.start.byte..l.end.byte]) {
                (Kind::OpenParen, _) => depth += 1,
                (Kind::CloseParen, _) => {
                    depth -= 1;
                    if depth == 0 {
                        types.push(declared(&text[start..l.start.byte]));
                        i += 1;
                        break;
                    }
                }
                (Kind::Other, ",") if depth == 1 => {
                    types.push(declared(&text[start..l.start.byte]));
                    start = l.end.byte;
                }
                _ => {}
            }
            i += 1;
        }
    }
    token(i)?.eq_ignore_ascii_case("as").then(|| (lexemes.get(i + 1).map_or(text.len(), |l| l.start.byte), types))
}

/// A declared parameter type, spaces collapsed; `None` for `unknown` (left to PostgreSQL).
fn declared(text: &str) -> Option<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty() && !text.eq_ignore_ascii_case("unknown")).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_is_unwrapped_and_its_types_cast_the_parameters() {
        let p = prepare("prepare by_owner(bigint, text) as select * from t where owner = $1 and name = $2");
        assert_eq!(p.sql, "select * from t where owner = ($1::bigint) and name = ($2::text)");
        assert_eq!(p.skipped, None);
        let p = prepare("PREPARE p (numeric(10, 2)) AS SELECT $1 + 1");
        assert_eq!(p.sql, "SELECT ($1::numeric(10, 2)) + 1");
        let p = prepare("prepare q as delete from t where id = $1");
        assert_eq!(p.sql, "delete from t where id = $1");
    }

    #[test]
    fn a_parameter_in_a_typed_literal_is_cast_to_its_type() {
        let p = prepare("select * from events where at > now() - INTERVAL $1 limit $2");
        assert_eq!(p.sql, "select * from events where at > now() - $1::interval limit $2");
    }

    #[test]
    fn utility_and_transaction_control_are_skipped_by_name() {
        for (text, what) in [
            ("begin", "BEGIN"),
            ("COMMIT", "COMMIT"),
            ("SET application_name = $1", "SET"),
            ("/* c */ vacuum t", "VACUUM"),
            ("select pg_stat_statements_reset()", "pg_stat_statements"),
            ("prepare p as begin", "BEGIN"),
            ("<insufficient privilege>", "<insufficient privilege> (grant pg_read_all_stats to the exporting role)"),
        ] {
            assert_eq!(prepare(text).skipped.as_deref(), Some(what), "{text}");
        }
        assert_eq!(prepare("/* app */ with x as (select 1) select * from x").skipped, None);
    }
}

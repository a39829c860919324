//! PostgreSQL that sqlparser 0.64 refuses, bridged at the token level where what it refuses does
//! not matter to any rule: the tokens the parser is given leave it out, and the statement is
//! read (with its positions: every token keeps its span) instead of falling to the recognizer.
//!
//! - A trigger function's arguments, `EXECUTE FUNCTION f('a', 'b')` (or `PROCEDURE`): strings
//!   PostgreSQL hands the function in `TG_ARGV`, which sqlparser reads as a function declaration's
//!   argument types and refuses at the first literal
//!   ([apache/datafusion-sqlparser-rs#2446](https://github.com/apache/datafusion-sqlparser-rs/issues/2446),
//!   open). The parser is given `f()`: the trigger, its table, events and function are what the
//!   schema and the lock rules read.
//! - `FOR NO KEY UPDATE` and `FOR KEY SHARE`: sqlparser's row-lock clause knows `UPDATE` and
//!   `SHARE` only. The parser is given `FOR UPDATE` / `FOR SHARE`; no rule reads a query's row
//!   lock strength (memos' `… FOR KEY SHARE OF memo RETURNING …`).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// `tokens` (one statement's) as the parser is given them.
pub fn bridge(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let words: Vec<(usize, Keyword)> = tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match &t.token {
            Token::Word(w) => Some((i, w.keyword)),
            _ => None,
        })
        .collect();
    // `CREATE [OR REPLACE] [CONSTRAINT] TRIGGER`.
    let is_trigger = words.iter().take(5).any(|(_, k)| *k == Keyword::TRIGGER)
        && words.first().is_some_and(|(_, k)| *k == Keyword::CREATE);
    let mut dropped = vec![false; tokens.len()];
    for pair in words.windows(3) {
        let [(_, first), (second_at, second), (third_at, third)] = pair else { continue };
        match (first, second, third) {
            (Keyword::FOR, Keyword::NO, Keyword::KEY) => {
                dropped[*second_at] = true;
                dropped[*third_at] = true;
            }
            (Keyword::FOR, Keyword::KEY, Keyword::SHARE) => dropped[*second_at] = true,
            _ => {}
        }
    }
    if is_trigger {
        drop_trigger_arguments(&tokens, &words, &mut dropped);
    }
    if !dropped.contains(&true) {
        return tokens;
    }
    tokens.into_iter().zip(dropped).filter(|(_, dropped)| !dropped).map(|(t, _)| t).collect()
}

/// Marks what stands between the parentheses after `EXECUTE FUNCTION|PROCEDURE name`.
fn drop_trigger_arguments(tokens: &[TokenWithSpan], words: &[(usize, Keyword)], dropped: &mut [bool]) {
    let Some(at) = words
        .windows(2)
        .find(|w| w[0].1 == Keyword::EXECUTE && matches!(w[1].1, Keyword::FUNCTION | Keyword::PROCEDURE))
        .map(|w| w[1].0)
    else {
        return;
    };
    let Some(open) = (at + 1..tokens.len()).find(|&i| tokens[i].token == Token::LParen) else { return };
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            _ => {}
        }
        if i > open {
            dropped[i] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sql::parse::parse_file;

    fn parsed(sql: &str) -> bool {
        parse_file(sql.to_string()).statements.iter().all(|s| s.parse_error.is_none())
    }

    #[test]
    fn trigger_arguments_and_key_locks_are_read() {
        for sql in [
            "CREATE TRIGGER immutable BEFORE UPDATE ON t FOR EACH ROW EXECUTE PROCEDURE immutable_columns('id', 'name');",
            "CREATE OR REPLACE TRIGGER a AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION audit_row('api_key');",
            "CREATE CONSTRAINT TRIGGER c AFTER INSERT ON t DEFERRABLE FOR EACH ROW EXECUTE FUNCTION check_row('x');",
            "SELECT * FROM memo WHERE id = $1 FOR KEY SHARE OF memo;",
            "SELECT * FROM memo WHERE id = $1 FOR NO KEY UPDATE;",
        ] {
            assert!(parsed(sql), "{sql}");
        }
        // Everything else is left as it is: what sqlparser refuses is still refused.
        assert!(!parsed("SELECT * FROM memo FOR KEY NONSENSE;"));
    }
}

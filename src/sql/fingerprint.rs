//! A query's fingerprint: its text as PostgreSQL's lexer reads it, with what does not change
//! the query left out, so the same query written twice — or recorded twice by
//! `pg_stat_statements` — has one key.
//!
//! Left out: comments (sqlcommenter prefixes, `/* app:x */`), whitespace and case of keywords
//! and unquoted names, a trailing semicolon, the values of constants and parameters (`LIMIT 1`,
//! `LIMIT $4` and `LIMIT ?` read alike: `pg_stat_statements` writes every constant as `$n`, and
//! numbers them in order, so a longer IN list before it shifts every later number), and the
//! length of an IN list of values (`IN ($1, $2)`, `IN ($1, $2, $3)` and PostgreSQL 18's
//! squashed `IN ($1 /*, ... */)` are one query).

use super::lex::{Kind, Lexer};

/// What stands for a constant or a parameter in a fingerprint.
const VALUE: &str = "?";

/// The fingerprint of `text` (one statement). Text the lexer cannot finish (an unterminated
/// string) keeps its tail as written, so two different broken texts never collide.
pub fn fingerprint(text: &str) -> String {
    let mut tokens: Vec<&str> = Vec::new();
    let mut lexer = Lexer::new(text);
    for lexeme in lexer.by_ref() {
        let lexeme = match lexeme {
            Ok(lexeme) => lexeme,
            Err((_, at)) => {
                tokens.push(&text[at.byte..]);
                break;
            }
        };
        let token = &text[lexeme.start.byte..lexeme.end.byte];
        match lexeme.kind {
            Kind::Space | Kind::LineComment | Kind::BlockComment => {}
            Kind::Other if is_value(token) => tokens.push(VALUE),
            _ => tokens.push(token),
        }
    }
    while tokens.last() == Some(&";") {
        tokens.pop();
    }
    let tokens = squash_in_lists(tokens);
    let mut out = String::with_capacity(text.len());
    for token in tokens {
        if !out.is_empty() {
            out.push(' ');
        }
        // Unquoted names and keywords fold to lower case, as PostgreSQL folds them.
        if token.starts_with('"') {
            out.push_str(token);
        } else {
            out.extend(token.chars().flat_map(char::to_lowercase));
        }
    }
    out
}

/// A constant or a parameter: a number, a string of any kind (`'x'`, `E'x'`, `U&'x'`, `$$x$$`),
/// `$n`, or a placeholder of another style already read as one lexeme (`?`).
fn is_value(token: &str) -> bool {
    let first = token.as_bytes()[0];
    first.is_ascii_digit()
        || first == b'\''
        || token == "?"
        || (first == b'$' && token != "$")
        || ((first == b'E' || first == b'e') && token.as_bytes().get(1) == Some(&b'\''))
        || (token.len() > 2 && token[..2].eq_ignore_ascii_case("U&") && token.as_bytes()[2] == b'\'')
}

/// `in ( ? , ? , ? )` → `in ( ? )`: an IN list of values only, whatever its length.
fn squash_in_lists(tokens: Vec<&str>) -> Vec<&str> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        out.push(tokens[i]);
        if tokens[i].eq_ignore_ascii_case("in") && tokens.get(i + 1) == Some(&"(") {
            let mut j = i + 2;
            let mut values = 0;
            while tokens.get(j) == Some(&VALUE) {
                values += 1;
                match tokens.get(j + 1) {
                    Some(&",") => j += 2,
                    _ => {
                        j += 1;
                        break;
                    }
                }
            }
            if values > 0 && tokens.get(j) == Some(&")") {
                out.extend(["(", VALUE, ")"]);
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn comments_whitespace_and_case_do_not_count() {
        let recorded =
            "/* controller='users',action='show' */ select * from t\n  where upper(name) = upper($1) limit $2";
        let written = "SELECT *\nFROM t -- the lookup\nWHERE upper(name) = upper(?) LIMIT 1;";
        assert_eq!(fingerprint(recorded), fingerprint(written));
        assert_eq!(fingerprint(written), "select * from t where upper ( name ) = upper ( ? ) limit ?");
    }

    #[test]
    fn in_lists_of_any_length_are_one_query() {
        let two = fingerprint("select * from t where id in ($1,$2) and status = $3");
        let three = fingerprint("select * from t where id in ($1, $2, $3) and status = $4");
        let squashed = fingerprint("select * from t where id in ($1 /*, ... */) and status = $2");
        assert_eq!(two, three);
        assert_eq!(two, squashed);
        assert_eq!(two, "select * from t where id in ( ? ) and status = ?");
        // A subquery or a list of columns is not a list of values.
        assert_eq!(fingerprint("select 1 where a in (select b from u)"), "select ? where a in ( select b from u )");
        assert_eq!(fingerprint("select 1 where (a, b) in ((1, 2))"), "select ? where ( a , b ) in ( ( ? , ? ) )");
    }

    #[test]
    fn constants_of_every_kind_are_values() {
        assert_eq!(
            fingerprint("SELECT now() - INTERVAL '1 day', E'a\\'b', $$x$$, 1.5e3, U&'d'"),
            fingerprint("select now() - interval $1, $2, $3, $4, $5")
        );
    }

    #[test]
    fn quoted_names_keep_their_case() {
        assert_ne!(fingerprint("SELECT \"Name\" FROM t"), fingerprint("SELECT name FROM t"));
        assert_eq!(fingerprint("SELECT Name FROM T"), fingerprint("select name from t"));
    }

    #[test]
    fn an_unterminated_text_keeps_its_tail() {
        assert_ne!(fingerprint("select 'a"), fingerprint("select 'b"));
    }
}

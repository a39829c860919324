//! PostgreSQL's dialect as Sluice parses it: sqlparser's own, with a shorter way through the
//! most common expressions.
//!
//! Before it reads an expression, sqlparser tries to read it as a typed literal (`DATE
//! '2020-05-20'`, `int4 '1'`): it parses the first tokens as a type name, and when no string
//! follows, formats an error message, throws it away and starts again. Column names, function
//! calls and literals, most of the expressions in a view or an `UPDATE`, paid for that every
//! time: 7% of the instructions of a `lint` of Lemmy's history (348 million before this
//! dialect, 324 million with it).
//! When the tokens after a name make a typed literal impossible, [`Postgres::parse_prefix`]
//! returns what sqlparser returns after the failed attempt, and leaves every other case to it.
//!
//! One answer differs from `PostgreSqlDialect`'s on purpose, `is_select_item_alias`: a select or
//! `RETURNING` item takes as a bare alias (no `AS`) exactly the words PostgreSQL takes
//! ([`is_bare_label`]). sqlparser reserves words for other dialects (`SORT`, `TOP`, `VIEW`…:
//! `SELECT m.sort sort` failed) and takes words PostgreSQL reserves (`INSERT … SELECT
//! unnest($1) ON CONFLICT …` read `ON` as the last item's alias, then failed at `CONFLICT`).
//!
//! Everything else is sqlparser's `PostgreSqlDialect`, method by method. A wrapper must forward
//! each method that dialect overrides (or it parses like a generic dialect there): a test
//! compares the list with the `PostgreSqlDialect` of the sqlparser Sluice is built with, so an
//! upgrade names what to add. Debug builds (the test suite) parse every statement twice, with
//! this dialect and with its [reference](Postgres::reference) (the same answers without the
//! shortcut, so `PostgreSqlDialect` but for the alias above), and require the same tree or the
//! same error (`sql::parse`); a test lists what the deliberate answer changes.

use sqlparser::ast::{Expr, ObjectName};
use sqlparser::dialect::{BindPlaceholderStyle, Dialect, PostgreSqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Word};
use std::any::TypeId;

#[derive(Debug)]
pub struct Postgres {
    inner: PostgreSqlDialect,
    /// Whether [`Postgres::parse_prefix`] takes its shortcut (off in the reference).
    shortcut: bool,
}

impl Postgres {
    pub const fn new() -> Postgres {
        Postgres { inner: PostgreSqlDialect {}, shortcut: true }
    }

    /// This dialect without the shortcut through common expressions: `PostgreSqlDialect` but for
    /// the deliberate bare-alias answer. Debug builds parse every statement with it as well and
    /// require the same result, so the shortcut can change nothing.
    pub const fn reference() -> Postgres {
        Postgres { inner: PostgreSqlDialect {}, shortcut: false }
    }
}

impl Default for Postgres {
    fn default() -> Postgres {
        Postgres::new()
    }
}

/// The keywords PostgreSQL does not take as a bare column label: `SELECT 1 day` and `INSERT …
/// SELECT 1 ON CONFLICT …` read no alias (the first is an error), `SELECT 1 AS day` does. Every
/// other word, keyword or not, may follow a select item as its alias (`SELECT m.sort sort`,
/// `SELECT 1 end`). The keywords whose `BARE_LABEL` column is `AS_LABEL` in PostgreSQL's
/// `src/include/parser/kwlist.h` (`SELECT word FROM pg_get_keywords() WHERE NOT barelabel` on
/// PostgreSQL 15; the "SQL Key Words" appendix of its documentation): 39 of its 460 keywords.
const NOT_BARE_LABELS: [&str; 39] = [
    "array",
    "as",
    "char",
    "character",
    "create",
    "day",
    "except",
    "fetch",
    "filter",
    "for",
    "from",
    "grant",
    "group",
    "having",
    "hour",
    "intersect",
    "into",
    "isnull",
    "limit",
    "minute",
    "month",
    "notnull",
    "offset",
    "on",
    "order",
    "over",
    "overlaps",
    "precision",
    "returning",
    "second",
    "to",
    "union",
    "varying",
    "where",
    "window",
    "with",
    "within",
    "without",
    "year",
];

/// Whether PostgreSQL takes `word` as a select item's alias without `AS` (its grammar's
/// `BareColLabel`): a quoted identifier always, an unquoted word unless it is one of
/// [`NOT_BARE_LABELS`]. Compared by text, not by sqlparser's keyword: sqlparser has no keyword
/// for `isnull`, and many keywords PostgreSQL does not have.
pub fn is_bare_label(word: &Word) -> bool {
    word.quote_style.is_some() || !NOT_BARE_LABELS.iter().any(|label| word.value.eq_ignore_ascii_case(label))
}

/// An identifier sqlparser's typed-literal attempt cannot take further when this token follows
/// it: not `(` or `[` (type modifiers, arrays), `.` (a qualified type name), a literal (the
/// value of a typed literal), `ARRAY` (`int ARRAY`), or anything unusual.
fn ends_plain_identifier(next: &Token) -> bool {
    match next {
        Token::Comma
        | Token::RParen
        | Token::RBracket
        | Token::SemiColon
        | Token::EOF
        | Token::Eq
        | Token::Neq
        | Token::Lt
        | Token::Gt
        | Token::LtEq
        | Token::GtEq
        | Token::Plus
        | Token::Minus
        | Token::Mul
        | Token::Div
        | Token::Mod
        | Token::StringConcat
        | Token::DoubleColon => true,
        Token::Word(word) => !matches!(word.keyword, Keyword::ARRAY | Keyword::ZEROFILL),
        _ => false,
    }
}

/// What follows a name that cannot be a typed literal's type.
enum Ending {
    /// A column reference, qualified or not (`a`, `p.id`): sqlparser reads the first word here
    /// and the rest as a compound expression.
    Name,
    /// A function call with arguments (`f(a)`): a name with modifiers is no typed literal.
    /// An empty list is left to sqlparser (`f() '1'` is one). The one difference: text that
    /// makes the attempt an array type and then a literal (`f(a)[1] 'x'`) reads as a typed
    /// literal to sqlparser and as an error here; PostgreSQL rejects it.
    Call,
}

/// How the name at the parser's position ends, when no typed literal can begin there.
fn plain_name_ends(parser: &Parser) -> Option<Ending> {
    let mut at = 1;
    while parser.peek_nth_token_ref(at).token == Token::Period {
        if !matches!(parser.peek_nth_token_ref(at + 1).token, Token::Word(_)) {
            return None;
        }
        at += 2;
    }
    match &parser.peek_nth_token_ref(at).token {
        Token::LParen if at == 1 && parser.peek_nth_token_ref(2).token != Token::RParen => Some(Ending::Call),
        next if ends_plain_identifier(next) => Some(Ending::Name),
        _ => None,
    }
}

/// Methods answered by `PostgreSqlDialect`, written as their signatures.
macro_rules! forward {
    ($(fn $name:ident(&self $(, $arg:ident: $type:ty)*) -> $ret:ty;)*) => {
        $(fn $name(&self $(, $arg: $type)*) -> $ret {
            self.inner.$name($($arg),*)
        })*
    };
}

impl Dialect for Postgres {
    fn dialect(&self) -> TypeId {
        self.inner.dialect()
    }

    /// A bare alias is what PostgreSQL takes ([`is_bare_label`]); sqlparser consumed the word
    /// it asks about, so the word is the parser's current token.
    fn is_select_item_alias(&self, explicit: bool, _kw: &Keyword, parser: &mut Parser) -> bool {
        explicit || matches!(&parser.get_current_token().token, Token::Word(word) if is_bare_label(word))
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        if !self.shortcut {
            return None;
        }
        let current = parser.peek_token_ref();
        match &current.token {
            // `xml` followed by a value is an XML literal: left to sqlparser.
            Token::Word(word) if word.keyword == Keyword::NoKeyword && !word.value.eq_ignore_ascii_case("xml") => {
                match plain_name_ends(parser) {
                    Some(Ending::Name) => {
                        let ident = word.to_ident(current.span);
                        parser.advance_token();
                        Some(Ok(Expr::Identifier(ident)))
                    }
                    Some(Ending::Call) => {
                        let name = ObjectName::from(vec![word.to_ident(current.span)]);
                        parser.advance_token();
                        Some(parser.parse_function(name))
                    }
                    None => None,
                }
            }
            Token::Word(word)
                if matches!(word.keyword, Keyword::NULL | Keyword::TRUE | Keyword::FALSE)
                    && ends_plain_identifier(&parser.peek_nth_token_ref(1).token) =>
            {
                Some(parser.parse_value().map(Expr::Value))
            }
            Token::Number(..) | Token::SingleQuotedString(_) => Some(parser.parse_value().map(Expr::Value)),
            _ => None,
        }
    }

    forward! {
        fn supports_cte_materialization(&self) -> bool;
        fn ordered_bind_placeholder_style(&self) -> Option<BindPlaceholderStyle>;
        fn supports_unicode_string_literal(&self) -> bool;
        fn supports_filter_during_aggregation(&self) -> bool;
        fn supports_group_by_expr(&self) -> bool;
        fn supports_drop_group(&self) -> bool;
        fn supports_alter_user_as_alter_role(&self) -> bool;
        fn supports_create_group(&self) -> bool;
        fn supports_create_role_if_not_exists(&self) -> bool;
        fn allow_extract_custom(&self) -> bool;
        fn allow_extract_single_quotes(&self) -> bool;
        fn supports_create_index_with_clause(&self) -> bool;
        fn supports_sql_option_without_value(&self) -> bool;
        fn supports_explain_with_utility_options(&self) -> bool;
        fn supports_listen_notify(&self) -> bool;
        fn supports_exclude_constraint(&self) -> bool;
        fn supports_factorial_operator(&self) -> bool;
        fn supports_bitwise_shift_operators(&self) -> bool;
        fn supports_tilde_like_match_operator(&self) -> bool;
        fn supports_comparison_in_between_low_bound(&self) -> bool;
        fn supports_comment_on(&self) -> bool;
        fn supports_load_extension(&self) -> bool;
        fn supports_named_fn_args_with_colon_operator(&self) -> bool;
        fn supports_named_fn_args_with_expr_name(&self) -> bool;
        fn supports_named_fn_args_with_assignment_operator(&self) -> bool;
        fn supports_empty_projections(&self) -> bool;
        fn supports_nested_comments(&self) -> bool;
        fn supports_copy_from_stdin_data(&self) -> bool;
        fn supports_string_escape_constant(&self) -> bool;
        fn supports_numeric_literal_underscores(&self) -> bool;
        fn supports_non_decimal_integer_literals(&self) -> bool;
        fn supports_array_typedef_with_brackets(&self) -> bool;
        fn supports_geometric_types(&self) -> bool;
        fn supports_order_by_using_operator(&self) -> bool;
        fn supports_set_names(&self) -> bool;
        fn supports_alter_column_type_using(&self) -> bool;
        fn supports_left_associative_joins_without_parens(&self) -> bool;
        fn supports_notnull_operator(&self) -> bool;
        fn supports_interval_options(&self) -> bool;
        fn supports_insert_table_alias(&self) -> bool;
        fn supports_create_table_like_parenthesized(&self) -> bool;
        fn supports_select_wildcard_with_alias(&self) -> bool;
        fn supports_comma_separated_trim(&self) -> bool;
        fn supports_xml_expressions(&self) -> bool;
        fn supports_aliased_function_args(&self) -> bool;
        fn supports_comment_optimizer_hint(&self) -> bool;
        fn supports_add_column_if_not_exists(&self) -> bool;
        fn supports_attach_partition_of(&self) -> bool;
        fn supports_detach_partition_of(&self) -> bool;
        fn supports_table_inheritance_markers(&self) -> bool;
        fn supports_column_generic_options(&self) -> bool;
        fn identifier_quote_style(&self, identifier: &str) -> Option<char>;
        fn is_delimited_identifier_start(&self, ch: char) -> bool;
        fn is_identifier_start(&self, ch: char) -> bool;
        fn is_identifier_part(&self, ch: char) -> bool;
        fn is_reserved_for_identifier(&self, kw: Keyword) -> bool;
        fn is_table_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool;
        fn supports_string_literal_column_alias(&self, explicit: bool) -> bool;
        fn supports_string_literal_table_alias(&self, explicit: bool) -> bool;
        fn is_custom_operator_part(&self, ch: char) -> bool;
        fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>>;
        fn prec_value(&self, prec: Precedence) -> u8;
        fn is_interval_qualifier(&self, kw: Keyword) -> bool;
        fn is_custom_type_typed_string(&self, first_keyword: Keyword, qualified: bool) -> bool;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::tokenizer::Tokenizer;

    fn parse_with(dialect: &'static dyn Dialect, sql: &str) -> Result<Vec<sqlparser::ast::Statement>, ParserError> {
        let tokens = Tokenizer::new(dialect, sql).tokenize_with_location().unwrap();
        Parser::new(dialect).with_tokens_with_locations(tokens).parse_statements()
    }

    #[test]
    fn trees_and_errors_are_the_references() {
        static POSTGRES: Postgres = Postgres::new();
        let statements = [
            // Typed literals, which the shortcut must leave alone.
            "SELECT DATE '2020-05-20', int4 '1', pg_catalog.int4 '1', mytype 'x', s.mytype 'x', xml '<a/>', xml",
            "SELECT INTERVAL '1 day', interval, f() 'x', numeric(10, 2) '1.5', int ARRAY, t.a[1], a[1:2]",
            // What it takes: names, qualified names, calls, literals, NULL and booleans.
            "SELECT a, t.a, s.t.a, \"Quoted\".\"Col\", f(a, 1), count(*), coalesce(a, b) AS c FROM s.t t",
            "SELECT a::text, NULL::int, TRUE AND b, FALSE, 1 + a * 2 - c / 3 % 4, 'x' || y, a >= 1, b <> 2",
            "UPDATE t SET a = b + 1, c = NULL WHERE d = 'x' AND e IN (1, 2) RETURNING f",
            "CREATE VIEW v AS SELECT p.id, p.name, c.count FROM post p JOIN counts c ON c.post_id = p.id WHERE p.deleted = FALSE",
            "CREATE INDEX i ON t (lower(email), (a + 1)) WHERE archived IS NOT TRUE",
            "SELECT t.* , a.b.* FROM t, a.b WHERE x.y.z = 1 ORDER BY t.a DESC NULLS LAST",
            // Errors must read the same.
            "SELECT a b c d FROM",
            "SELECT f(a, FROM t",
            "SELECT t. FROM t",
            "SELECT 1 2",
        ];
        // Against the reference: `PostgreSqlDialect` but for the deliberate answers (`int ARRAY`
        // is no column `int` aliased `ARRAY` there: PostgreSQL takes no bare `ARRAY` label).
        static REFERENCE: Postgres = Postgres::reference();
        for sql in statements {
            let ours = parse_with(&POSTGRES, sql);
            let theirs = parse_with(&REFERENCE, sql);
            assert_eq!(ours, theirs, "{sql}");
        }
    }

    /// What the deliberate answer changes, each statement as PostgreSQL 15 reads it (checked with
    /// psql): what PostgreSQL accepts parses, what it refuses does not, and the reference (no
    /// shortcut) agrees with Sluice's dialect on every one.
    #[test]
    fn the_deliberate_answer_reads_what_postgresql_reads() {
        static POSTGRES: Postgres = Postgres::new();
        static REFERENCE: Postgres = Postgres::reference();
        // (statement, Sluice parses it: whether PostgreSQL accepts it but where a line says
        // otherwise, PostgreSqlDialect parses it)
        let cases = [
            // mall's MyBatis mappers: SORT is reserved by sqlparser for Hive's SORT BY.
            ("SELECT m.id id, m.sort sort, m.level level FROM ums_menu m", true, false),
            ("SELECT 1 top, 2 view, 3 lateral, 4 values, 5 minus, 6 cluster, 7 distribute, 8 exclude", true, false),
            ("SELECT 1 explain, 2 analyze, 3 end", true, false),
            // hatchet's sqlc queries: the last item took `ON` as its alias.
            (
                "INSERT INTO w (a, b) SELECT unnest($1::uuid[]), $2::uuid ON CONFLICT (a, b) DO UPDATE SET b = EXCLUDED.b",
                true,
                false,
            ),
            ("INSERT INTO w (a) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING", true, false),
            // Keywords PostgreSQL takes only after AS, which sqlparser took bare.
            ("SELECT 1 day", false, true),
            ("SELECT a to FROM t", false, true),
            ("SELECT a year, b month FROM t", false, true),
            ("SELECT 1 AS day, 2 AS on, 3 AS sort", true, true),
            ("SELECT a \"day\" FROM t", true, true),
            // Still unread, and not an alias's doing: hatchet's `(p).*`, a composite value's
            // columns. For a dialect that says it is PostgreSQL's, sqlparser's compound
            // expressions take `.*` after names only (`parse_compound_expr`), and no dialect
            // method is asked (`supports_select_expr_star` is not reached).
            ("WITH p AS (SELECT (p).* FROM f($1::date, $2::uuid) p) SELECT a::uuid FROM p", false, false),
            // sqlparser took FOR as the alias of a FROM-less select's last item.
            ("SELECT 1 FOR UPDATE", true, false),
            ("SELECT pg_advisory_xact_lock($1) FOR SHARE", true, false),
            // Unchanged.
            ("SELECT t.*, a b, c AS d FROM t FOR UPDATE", true, true),
            ("SELECT a FROM t WHERE b = 1 UNION SELECT c FROM u ORDER BY 1 LIMIT 2 OFFSET 3", true, true),
        ];
        for (sql, parses, postgresql_dialect_parses) in cases {
            let ours = parse_with(&POSTGRES, sql);
            assert_eq!(ours.is_ok(), parses, "{sql}: {ours:?}");
            assert_eq!(ours, parse_with(&REFERENCE, sql), "{sql}");
            let theirs = parse_with(&PostgreSqlDialect {}, sql);
            assert_eq!(theirs.is_ok(), postgresql_dialect_parses, "{sql}: {theirs:?}");
            if parses && postgresql_dialect_parses {
                assert_eq!(ours, theirs, "{sql}");
            }
        }
        let aliases = |sql: &str| match &parse_with(&POSTGRES, sql).unwrap()[0] {
            sqlparser::ast::Statement::Query(query) => match &*query.body {
                sqlparser::ast::SetExpr::Select(select) => select
                    .projection
                    .iter()
                    .map(|item| match item {
                        sqlparser::ast::SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                        other => panic!("{other:?}"),
                    })
                    .collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(aliases("SELECT m.sort sort, m.level level FROM m"), ["sort", "level"]);
    }

    /// Every keyword PostgreSQL 15 does not take as a bare label (`pg_get_keywords()`, `NOT
    /// barelabel`) is refused after a select item, and a word PostgreSQL does take is not.
    #[test]
    fn a_bare_alias_is_refused_exactly_where_postgresql_refuses_it() {
        static POSTGRES: Postgres = Postgres::new();
        // Whether the first item's alias is `word` (`a OVERLAPS FROM t` is no alias: sqlparser
        // reads the expression `a OVERLAPS "from"` aliased `t`, and PostgreSQL refuses it).
        let aliased = |sql: &str, word: &str| match parse_with(&POSTGRES, sql).as_deref() {
            Ok([sqlparser::ast::Statement::Query(q)]) => matches!(&*q.body, sqlparser::ast::SetExpr::Select(s)
                if matches!(&s.projection[0], sqlparser::ast::SelectItem::ExprWithAlias { alias, .. }
                    if alias.value.eq_ignore_ascii_case(word))),
            _ => false,
        };
        for word in NOT_BARE_LABELS {
            assert!(!aliased(&format!("SELECT a {word} FROM t"), word), "{word}");
            assert!(!aliased(&format!("SELECT a {} FROM t", word.to_uppercase()), word), "{word}");
            assert!(aliased(&format!("SELECT a \"{word}\" FROM t"), word), "{word}");
            assert!(aliased(&format!("SELECT a AS {word} FROM t"), word), "{word}");
        }
        for word in ["sort", "top", "end", "level", "name", "key", "value", "type", "user_id", "both", "only"] {
            assert!(aliased(&format!("SELECT a {word} FROM t"), word), "{word}");
        }
    }

    /// A wrapper that misses a method `PostgreSqlDialect` overrides parses like a generic
    /// dialect there: after an sqlparser upgrade, this names what to add.
    #[test]
    fn forwards_every_method_postgresql_dialect_overrides() {
        // Offline, for this platform only: every other platform's dependencies may be missing.
        let rustc = std::process::Command::new("rustc").arg("-vV").output().expect("rustc runs");
        let rustc = String::from_utf8(rustc.stdout).unwrap();
        let host = rustc.lines().find_map(|line| line.strip_prefix("host: ")).expect("rustc names its host");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let metadata = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--offline", "--locked", "--filter-platform", host])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(metadata.status.success(), "{}", String::from_utf8_lossy(&metadata.stderr));
        let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout).unwrap();
        let manifest = metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "sqlparser")
            .and_then(|p| p["manifest_path"].as_str())
            .expect("sqlparser is a dependency");
        let source = std::path::Path::new(manifest).parent().unwrap().join("src/dialect/postgresql.rs");
        let theirs = methods_of(&std::fs::read_to_string(&source).unwrap(), "impl Dialect for PostgreSqlDialect {");
        let ours = methods_of(include_str!("dialect.rs"), "impl Dialect for Postgres {");
        assert!(theirs.len() > 50, "found {} methods in {}", theirs.len(), source.display());
        let missing: Vec<&String> = theirs.iter().filter(|m| !ours.contains(m)).collect();
        assert!(missing.is_empty(), "not forwarded to PostgreSqlDialect: {missing:?}");
    }

    /// The names of the methods in the `impl` block that starts with `header`.
    fn methods_of(source: &str, header: &str) -> Vec<String> {
        let block = &source[source.find(header).expect(header)..];
        let block = &block[..block.find("\n}\n").unwrap()];
        block
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("fn ")?.split_once('('))
            .map(|(name, _)| name.to_string())
            .collect()
    }
}

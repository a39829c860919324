//! How deep a statement may be before Sluice refuses to parse it, so that no parse, walk or
//! drop of a syntax tree can overflow the stack (issue 16: 8,700 `[]` on a column type, a UNION
//! ALL of 43,900 branches).
//!
//! Two kinds of depth. Nesting (parentheses, subqueries, `NOT NOT …`) makes sqlparser recurse,
//! and its recursion limit bounds it. Chains (`a + b + …`, `… UNION ALL …`, `int[][]…`) are
//! parsed in a loop into a tree as deep as the chain is long, which every later recursive walk
//! (Sluice's, sqlparser's visitors, `Drop`) must descend: [`check`] counts them from the tokens,
//! before parsing, and refuses what is longer than [`CHAIN_LIMIT`].
//!
//! These limits and [`STACK_BYTES`] are the whole protection: sqlparser's own `recursive-protection`
//! feature (growing the stack on demand around every recursive call) is off (Cargo.toml).

use super::dialect::Postgres;
use sqlparser::ast;
use sqlparser::dialect::{Dialect, PostgreSqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// sqlparser's recursion limit (its default, set here so it is a decision): 50 nested levels is
/// about 25 nested subqueries, beyond any migration or query seen in practice.
pub const RECURSION_LIMIT: usize = 50;

/// The longest chain of operators, set operations and array brackets along any path through a
/// statement: real SQL stays far below it (the union chain that overflowed is 43,900 deep), and
/// a tree this deep walks within [`STACK_BYTES`].
pub const CHAIN_LIMIT: usize = 1_000;

/// The stack of every thread that parses or walks syntax trees. The deepest tree the limits
/// let through needs under 8 MiB in an unoptimized build (`Clone` and `Display` of an
/// expression take kilobytes per level there) and a fraction of that optimized; the rest is
/// margin. Only the pages used are ever committed.
pub const STACK_BYTES: usize = 32 << 20;

/// Runs `work` on a thread with [`STACK_BYTES`] of stack (on this one if none can be started).
pub fn with_stack<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let mut work = Some(work);
    let outcome = std::thread::scope(|scope| {
        let work = &mut work;
        std::thread::Builder::new()
            .name("sluice".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || (work.take().expect("runs once"))())
            .map(|thread| thread.join())
    });
    match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // No thread (a tight memory limit): the current stack will have to do.
        Err(_) => (work.take().expect("not run"))(),
    }
}

/// Gives rayon's workers (which parse files and check query files in parallel) the same stack.
/// An error when they cannot be started (a limit on threads or address space): rayon would
/// otherwise panic at the first parallel step.
pub fn configure_thread_pool() -> std::io::Result<()> {
    use std::error::Error as _;
    match rayon::ThreadPoolBuilder::new().stack_size(STACK_BYTES).build_global() {
        // Without a source, the pool already exists (a second call): it is already configured.
        Err(error) if error.source().is_some() => Err(std::io::Error::other(error.to_string())),
        _ => Ok(()),
    }
}

/// Why a statement was not given to the parser, or why the parser gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TooDeep {
    /// Operators, set operations or array brackets chained `length` long.
    Chain { length: u32 },
    /// Nested deeper than the parser's recursion limit.
    Nesting,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TooDeep::Chain { length } => write!(
                f,
                "it chains at least {length} operators, set operations or array brackets, more than Sluice's limit \
                 of {CHAIN_LIMIT}"
            ),
            TooDeep::Nesting => write!(
                f,
                "it is nested deeper than the SQL parser follows (parentheses, brackets or CASE; its limit is \
                 {RECURSION_LIMIT} levels of recursion)"
            ),
        }
    }
}

/// Tokens that extend a chain: operators and the keywords sqlparser parses as infix operators
/// or set operations. Array brackets count too (`int[][]`, `a[1][2]`).
fn extends_chain(token: &Token) -> bool {
    match token {
        Token::Word(w) => {
            w.quote_style.is_none()
                && matches!(
                    w.keyword,
                    Keyword::AND
                        | Keyword::OR
                        | Keyword::XOR
                        | Keyword::NOT
                        | Keyword::UNION
                        | Keyword::INTERSECT
                        | Keyword::EXCEPT
                        | Keyword::MINUS
                        | Keyword::IS
                        | Keyword::COLLATE
                        | Keyword::AT
                        | Keyword::LIKE
                        | Keyword::ILIKE
                        | Keyword::SIMILAR
                        | Keyword::BETWEEN
                        | Keyword::IN
                        | Keyword::OVERLAPS
                        | Keyword::OPERATOR
                )
        }
        Token::Number(..)
        | Token::Char(_)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::TripleSingleQuotedString(_)
        | Token::TripleDoubleQuotedString(_)
        | Token::DollarQuotedString(_)
        | Token::SingleQuotedByteStringLiteral(_)
        | Token::DoubleQuotedByteStringLiteral(_)
        | Token::TripleSingleQuotedByteStringLiteral(_)
        | Token::TripleDoubleQuotedByteStringLiteral(_)
        | Token::SingleQuotedRawStringLiteral(_)
        | Token::DoubleQuotedRawStringLiteral(_)
        | Token::TripleSingleQuotedRawStringLiteral(_)
        | Token::TripleDoubleQuotedRawStringLiteral(_)
        | Token::NationalStringLiteral(_)
        | Token::QuoteDelimitedStringLiteral(_)
        | Token::NationalQuoteDelimitedStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::UnicodeStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Comma
        | Token::Whitespace(_)
        | Token::LParen
        | Token::RParen
        | Token::RBracket
        | Token::LBrace
        | Token::RBrace
        | Token::Period
        | Token::SemiColon
        | Token::Placeholder(_)
        | Token::EOF => false,
        _ => true,
    }
}

/// Refuses a statement whose chains are longer than [`CHAIN_LIMIT`]; otherwise says how deeply
/// it nests parentheses, brackets and `CASE … END` (see [`is_too_deep`]). One pass over the
/// tokens: each parenthesis or bracket level keeps the chain length that led into it, a comma
/// starts a new sibling (list items do not deepen each other), and the deepest path is the sum of
/// the lengths along it.
pub fn check(tokens: &[TokenWithSpan]) -> Result<usize, TooDeep> {
    let mut enclosing: Vec<usize> = Vec::new();
    let mut enclosing_sum = 0usize;
    let mut current = 0usize;
    let (mut cases, mut nesting) = (0usize, 0usize);
    for token in tokens {
        match &token.token {
            Token::LParen | Token::LBracket => {
                if token.token == Token::LBracket {
                    current += 1;
                }
                enclosing.push(current);
                enclosing_sum += current;
                current = 0;
                nesting = nesting.max(enclosing.len() + cases);
            }
            Token::RParen | Token::RBracket => {
                if let Some(outer) = enclosing.pop() {
                    enclosing_sum -= outer;
                    current = outer;
                }
            }
            Token::Comma => current = 0,
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::CASE => {
                cases += 1;
                nesting = nesting.max(enclosing.len() + cases);
            }
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::END => cases = cases.saturating_sub(1),
            t if extends_chain(t) => current += 1,
            _ => {}
        }
        let length = enclosing_sum + current;
        if length > CHAIN_LIMIT {
            return Err(TooDeep::Chain { length: u32::try_from(length).unwrap_or(u32::MAX) });
        }
    }
    Ok(nesting)
}

/// A parser over `tokens` with Sluice's dialect ([`Postgres`]) and recursion limit.
pub fn parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    static POSTGRES: Postgres = Postgres::new();
    limited(&POSTGRES, tokens)
}

/// [`Postgres::reference`] over `tokens` (sqlparser's `PostgreSqlDialect` but for Sluice's two
/// deliberate answers), for debug builds to check [`Postgres`]'s shortcut against.
#[cfg(debug_assertions)]
pub fn reference_parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    static REFERENCE: Postgres = Postgres::reference();
    limited(&REFERENCE, tokens)
}

fn limited(dialect: &'static dyn Dialect, tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    Parser::new(dialect).with_recursion_limit(RECURSION_LIMIT).with_tokens_with_locations(tokens)
}

/// Whether sqlparser gave up for depth: it said so, or the statement it could not read nests
/// parentheses, brackets and `CASE … END` (`nesting`, from [`check`]) [`NESTING_SUSPECT`] deep
/// or more. sqlparser does not always say: where it tries one reading and falls back to another,
/// or stops early and leaves tokens unread, another error replaces the recursion limit's (a
/// `DEFAULT` nesting 50 `CASE`s fails with "Expected: end of statement, found: WHEN"); such a
/// statement was once a warning that hid a volatile default's table rewrite (issue 38, item 6).
pub fn is_too_deep(error: &ParserError, nesting: usize) -> bool {
    matches!(error, ParserError::RecursionLimitExceeded) || nesting >= NESTING_SUSPECT
}

/// A statement the parser could not read that nests this deep is taken to have met the
/// recursion limit: every level costs sqlparser at least one, and the statement around it a few.
pub const NESTING_SUSPECT: usize = RECURSION_LIMIT - 10;

/// Parses one expression (the recognizer's index keys and predicates) within the same limits;
/// `None` when it cannot.
pub fn parse_expression(text: &str) -> Option<ast::Expr> {
    let mut parser = bounded_parser(text)?;
    let expr = parser.parse_expr().ok()?;
    (parser.peek_token().token == Token::EOF).then_some(expr)
}

/// Parses exactly one statement (the recognizer's rewritten text), `;` after it allowed, within
/// the same limits; `None` when it cannot.
pub fn parse_statement(text: &str) -> Option<ast::Statement> {
    let mut parser = bounded_parser(text)?;
    let statement = parser.parse_statement().ok()?;
    while parser.consume_token(&Token::SemiColon) {}
    (parser.peek_token().token == Token::EOF).then_some(statement)
}

/// A parser over `text`, or `None` when it does not tokenize or is too deep to parse safely.
fn bounded_parser(text: &str) -> Option<Parser<'static>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize_with_location().ok()?;
    let tokens: Vec<TokenWithSpan> = tokens.into_iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).collect();
    check(&tokens).ok()?;
    Some(parser(tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(sql: &str) -> Vec<TokenWithSpan> {
        Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap()
    }

    fn chain(sql: &str) -> usize {
        match check(&tokens(sql)) {
            Ok(_) => 0,
            Err(TooDeep::Chain { length }) => length as usize,
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_chains_are_refused_before_parsing() {
        assert_eq!(chain(&format!("SELECT 1{}", " + 1".repeat(CHAIN_LIMIT))), 0);
        assert_eq!(chain(&format!("SELECT 1{}", " + 1".repeat(CHAIN_LIMIT + 1))), CHAIN_LIMIT + 1);
        assert_eq!(chain(&format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(CHAIN_LIMIT + 1))), CHAIN_LIMIT + 1);
        assert_eq!(chain(&format!("CREATE TABLE t (a int{})", "[]".repeat(CHAIN_LIMIT + 1))), CHAIN_LIMIT + 1);
        // A chain leading into a parenthesis continues inside it and after it.
        assert_eq!(chain(&format!("SELECT {}(1{})", "1 + ".repeat(600), " + 1".repeat(401))), CHAIN_LIMIT + 1);
        assert_eq!(chain(&format!("SELECT (1){}", " || ARRAY[1, 2]".repeat(501))), CHAIN_LIMIT + 1);
    }

    #[test]
    fn wide_statements_are_not_deep() {
        let values = format!("INSERT INTO t VALUES {}", vec!["(1, 'a' || 'b', 2 + 3)"; 20_000].join(", "));
        assert!(check(&tokens(&values)).is_ok());
        let columns: Vec<String> = (0..3_000).map(|i| format!("c{i} int NOT NULL DEFAULT 0")).collect();
        assert!(check(&tokens(&format!("CREATE TABLE t ({})", columns.join(", ")))).is_ok());
        let conditions = vec!["a = 1"; 400].join(" AND ");
        assert!(check(&tokens(&format!("SELECT * FROM t WHERE {conditions}"))).is_ok());
    }

    #[test]
    fn nesting_counts_parentheses_brackets_and_case() {
        let nesting = |sql: &str| check(&tokens(sql)).unwrap();
        let cases = (0..30).fold("1".to_string(), |e, _| format!("CASE WHEN true THEN {e} END"));
        assert_eq!(nesting(&format!("SELECT ({cases})")), 31);
        assert_eq!(nesting("SELECT a[1] + f((1), (2)) FROM t"), 2);
        assert_eq!(nesting("SELECT \"case\" FROM t"), 0, "a quoted identifier is no CASE");
    }

    #[test]
    fn expressions_parse_within_the_limits() {
        assert!(parse_expression("lower(email)").is_some());
        assert!(parse_expression(&format!("a{}", " + 1".repeat(CHAIN_LIMIT + 1))).is_none());
        assert!(parse_expression(&format!("{}1{}", "(".repeat(200), ")".repeat(200))).is_none());
        assert!(parse_expression("a b").is_none(), "trailing tokens are not an expression");
    }
}

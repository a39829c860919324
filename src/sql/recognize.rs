//! A token-level recognizer for the statements the gate must never miss, used when
//! sqlparser cannot parse a statement: index creation and removal, unique and primary
//! key constraints, renames. What it does not recognize becomes `Ddl::Other`.

use super::ddl::*;
use super::names;
use sqlparser::tokenizer::{Token, TokenWithSpan};

struct Cursor<'a> {
    tokens: Vec<&'a Token>,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(tokens: &'a [TokenWithSpan]) -> Self {
        Cursor {
            tokens: tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.pos).copied()
    }

    fn peek_word(&self) -> Option<String> {
        match self.peek() {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
            _ => None,
        }
    }

    /// Consumes the keyword sequence if it is next.
    fn eat(&mut self, words: &[&str]) -> bool {
        let matches = words.iter().enumerate().all(|(i, w)| match self.tokens.get(self.pos + i) {
            Some(Token::Word(t)) => t.quote_style.is_none() && t.value.eq_ignore_ascii_case(w),
            _ => false,
        });
        if matches {
            self.pos += words.len();
        }
        matches
    }

    fn eat_token(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A possibly qualified name: `a`, `s.a`, `"Quoted"`.
    fn name(&mut self) -> Option<Name> {
        let mut parts = Vec::new();
        while let Some(Token::Word(w)) = self.peek() {
            parts.push(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() });
            self.pos += 1;
            if !self.eat_token(&Token::Period) {
                break;
            }
        }
        (!parts.is_empty()).then(|| names::qualified(&parts))
    }

    /// The tokens inside the next balanced `( … )`, split on top-level commas.
    fn parenthesized_list(&mut self) -> Option<Vec<Vec<&'a Token>>> {
        if !self.eat_token(&Token::LParen) {
            return None;
        }
        let mut depth = 1;
        let mut items = vec![Vec::new()];
        while let Some(token) = self.peek() {
            self.pos += 1;
            match token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(items.into_iter().filter(|i| !i.is_empty()).collect());
                    }
                }
                Token::Comma if depth == 1 => {
                    items.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            items.last_mut().unwrap().push(token);
        }
        None
    }

    /// The remaining tokens as text; consumes them.
    fn rest_text(&mut self) -> String {
        let text = join(&self.tokens[self.pos.min(self.tokens.len())..]);
        self.pos = self.tokens.len();
        text
    }
}

fn join(tokens: &[&Token]) -> String {
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let text = t.to_string();
        let glue = i > 0
            && !matches!(t, Token::RParen | Token::Comma | Token::Period | Token::DoubleColon)
            && !matches!(tokens[i - 1], Token::LParen | Token::Period | Token::DoubleColon);
        if glue {
            out.push(' ');
        }
        out.push_str(&text);
    }
    out
}

const KEY_SUFFIXES: &[&str] = &["ASC", "DESC", "NULLS", "FIRST", "LAST"];

/// One index key from its tokens: a column or a normalized expression; sort options dropped.
fn index_key(tokens: &[&Token]) -> IndexKey {
    let mut end = tokens.len();
    while end > 1 {
        match tokens[end - 1] {
            Token::Word(w) if w.quote_style.is_none() && KEY_SUFFIXES.contains(&w.value.to_uppercase().as_str()) => {
                end -= 1
            }
            _ => break,
        }
    }
    let text = join(&tokens[..end]);
    match super::depth::parse_expression(&text) {
        Some(expr) => super::from_ast::index_key(&expr),
        None => IndexKey::Expression(names::text(&text)),
    }
}

fn create_index(c: &mut Cursor) -> Option<Ddl> {
    let unique = c.eat(&["UNIQUE"]);
    if !c.eat(&["INDEX"]) {
        return None;
    }
    let concurrently = c.eat(&["CONCURRENTLY"]);
    let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
    let name = if c.peek_word().as_deref() == Some("ON") {
        None
    } else {
        c.name().map(|n| n.rsplit('.').next().unwrap_or(&n).to_string())
    };
    if !c.eat(&["ON"]) {
        return None;
    }
    c.eat(&["ONLY"]);
    let table = c.name()?;
    if c.eat(&["USING"]) {
        c.name();
    }
    let keys = c.parenthesized_list()?.iter().map(|k| index_key(k)).collect();
    let mut nulls_not_distinct = false;
    let mut predicate = None;
    while let Some(word) = c.peek_word() {
        match word.as_str() {
            "INCLUDE" | "WITH" => {
                c.pos += 1;
                c.parenthesized_list();
            }
            "NULLS" => {
                c.pos += 1;
                nulls_not_distinct = c.eat(&["NOT"]);
                c.eat(&["DISTINCT"]);
            }
            "TABLESPACE" => {
                c.pos += 1;
                c.name();
            }
            "WHERE" => {
                c.pos += 1;
                let text = c.rest_text();
                predicate = Some(match super::depth::parse_expression(&text) {
                    Some(e) => names::expression(&e),
                    None => names::text(&text),
                });
                break;
            }
            _ => break,
        }
    }
    Some(Ddl::CreateIndex(CreateIndex {
        name,
        table,
        unique,
        concurrently,
        if_not_exists,
        keys,
        predicate,
        nulls_not_distinct,
    }))
}

fn columns(list: Vec<Vec<&Token>>) -> Vec<Name> {
    list.iter()
        .map(|k| match index_key(k) {
            IndexKey::Column(c) => c,
            IndexKey::Expression(e) => e,
        })
        .collect()
}

fn alter_table(c: &mut Cursor) -> Option<Ddl> {
    let if_exists = c.eat(&["IF", "EXISTS"]);
    c.eat(&["ONLY"]);
    let table = c.name()?;
    let action = if c.eat(&["ADD"]) {
        let name = if c.eat(&["CONSTRAINT"]) { c.name() } else { None };
        let kind = if c.eat(&["UNIQUE"]) {
            let nulls_not_distinct = c.eat(&["NULLS", "NOT", "DISTINCT"]);
            c.eat(&["NULLS", "DISTINCT"]);
            if c.eat(&["USING", "INDEX"]) {
                ConstraintKind::UsingIndex { index: c.name()?, primary_key: false }
            } else {
                ConstraintKind::Unique { columns: columns(c.parenthesized_list()?), nulls_not_distinct }
            }
        } else if c.eat(&["PRIMARY", "KEY"]) {
            if c.eat(&["USING", "INDEX"]) {
                ConstraintKind::UsingIndex { index: c.name()?, primary_key: true }
            } else {
                ConstraintKind::PrimaryKey { columns: columns(c.parenthesized_list()?) }
            }
        } else {
            return Some(Ddl::AlterTable { table, if_exists, actions: vec![AlterAction::Other(c.rest_text())] });
        };
        let mut not_valid = false;
        loop {
            if c.eat(&["NOT", "VALID"]) {
                not_valid = true;
            } else if !(c.eat(&["NOT", "DEFERRABLE"])
                || c.eat(&["DEFERRABLE"])
                || c.eat(&["INITIALLY", "DEFERRED"])
                || c.eat(&["INITIALLY", "IMMEDIATE"]))
            {
                break;
            }
        }
        AlterAction::AddConstraint(Constraint { name, kind, not_valid })
    } else if c.eat(&["RENAME", "CONSTRAINT"]) {
        let from = c.name()?;
        c.eat(&["TO"]);
        AlterAction::RenameConstraint { from, to: c.name()? }
    } else if c.eat(&["RENAME", "TO"]) {
        AlterAction::RenameTable { to: c.name()? }
    } else if c.eat(&["RENAME"]) {
        c.eat(&["COLUMN"]);
        let from = c.name()?;
        c.eat(&["TO"]);
        AlterAction::RenameColumn { from, to: c.name()? }
    } else {
        AlterAction::Other(c.rest_text())
    };
    Some(Ddl::AlterTable { table, if_exists, actions: vec![action] })
}

fn drop_index(c: &mut Cursor) -> Option<Ddl> {
    let concurrently = c.eat(&["CONCURRENTLY"]);
    let if_exists = c.eat(&["IF", "EXISTS"]);
    let mut names = vec![c.name()?];
    while c.eat_token(&Token::Comma) {
        names.push(c.name()?);
    }
    let cascade = c.eat(&["CASCADE"]);
    c.eat(&["RESTRICT"]);
    Some(Ddl::Drop { kind: ObjectKind::Index, names, if_exists, concurrently, cascade })
}

fn rename(c: &mut Cursor, kind: ObjectKind) -> Option<Ddl> {
    c.eat(&["IF", "EXISTS"]);
    let from = c.name()?;
    if !c.eat(&["RENAME", "TO"]) {
        return None;
    }
    Some(Ddl::Rename { kind, from, to: c.name()? })
}

/// What the recognizer made of a statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognized {
    pub ddl: Ddl,
    /// Every token was understood: nothing of the statement went unchecked.
    pub complete: bool,
}

/// Recognizes what it can of a statement sqlparser rejected.
pub fn recognize(tokens: &[TokenWithSpan]) -> Recognized {
    let mut c = Cursor::new(tokens);
    let leading = leading_keywords(tokens);
    let recognized = if c.eat(&["CREATE"]) {
        create_index(&mut c)
    } else if c.eat(&["ALTER", "TABLE"]) {
        alter_table(&mut c)
    } else if c.eat(&["DROP", "INDEX"]) {
        drop_index(&mut c)
    } else if c.eat(&["ALTER", "INDEX"]) {
        rename(&mut c, ObjectKind::Index)
    } else if c.eat(&["ALTER", "SEQUENCE"]) {
        rename(&mut c, ObjectKind::Sequence)
    } else if c.eat(&["ALTER", "VIEW"]) {
        rename(&mut c, ObjectKind::View)
    } else if c.eat(&["REINDEX"]) {
        c.parenthesized_list();
        c.name();
        let concurrently = c.eat(&["CONCURRENTLY"]);
        Some(Ddl::Reindex { concurrently, target: c.rest_text() })
    } else {
        None
    };
    let understood = match &recognized {
        Some(Ddl::Reindex { .. }) | None => false,
        Some(Ddl::AlterTable { actions, .. }) => !actions.iter().any(|a| matches!(a, AlterAction::Other(_))),
        Some(_) => true,
    };
    let complete = understood && c.pos >= c.tokens.len();
    Recognized { ddl: recognized.unwrap_or(Ddl::Other(leading)), complete }
}

/// The first two or three keywords of a statement (`CREATE STATISTICS`, `DO`), for messages.
pub fn leading_keywords(tokens: &[TokenWithSpan]) -> String {
    tokens
        .iter()
        .filter_map(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() && w.keyword != sqlparser::keywords::Keyword::NoKeyword => {
                Some(w.value.to_uppercase())
            }
            Token::Whitespace(_) => None,
            _ => Some(String::new()),
        })
        .take_while(|w| !w.is_empty())
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn rec(sql: &str) -> Ddl {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        recognize(&tokens).ddl
    }

    fn complete(sql: &str) -> bool {
        let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        recognize(&tokens).complete
    }

    #[test]
    fn knows_when_it_understood_everything() {
        assert!(complete("DROP INDEX CONCURRENTLY IF EXISTS a, b CASCADE"));
        assert!(complete("ALTER TABLE t ADD CONSTRAINT c UNIQUE NULLS NOT DISTINCT (a) DEFERRABLE INITIALLY DEFERRED"));
        assert!(!complete("ALTER TABLE t ALTER CONSTRAINT c DEFERRABLE"));
        assert!(!complete("DROP INDEX CONCURRENTLY a WITH (x)"));
        assert!(!complete("DO $$ BEGIN END $$"));
    }

    #[test]
    fn unique_nulls_not_distinct_in_alter_table() {
        let ddl =
            rec("ALTER TABLE observations ADD CONSTRAINT obs_uniq UNIQUE NULLS NOT DISTINCT (site_id, species_code)");
        let Ddl::AlterTable { table, actions, .. } = ddl else { panic!("{ddl:?}") };
        assert_eq!(table, "observations");
        assert_eq!(
            actions,
            vec![AlterAction::AddConstraint(Constraint {
                name: Some("obs_uniq".into()),
                kind: ConstraintKind::Unique {
                    columns: vec!["site_id".into(), "species_code".into()],
                    nulls_not_distinct: true
                },
                not_valid: false,
            })]
        );
    }

    #[test]
    fn drop_index_concurrently_if_exists() {
        assert_eq!(
            rec("DROP INDEX CONCURRENTLY IF EXISTS public.reports_day_idx"),
            Ddl::Drop {
                kind: ObjectKind::Index,
                names: vec!["reports_day_idx".into()],
                if_exists: true,
                concurrently: true,
                cascade: false
            }
        );
    }

    #[test]
    fn create_index_with_expressions_and_predicate() {
        let Ddl::CreateIndex(index) = rec("CREATE UNIQUE INDEX CONCURRENTLY u_email ON users USING btree (lower(email) DESC, id) WHERE deleted_at IS NULL") else {
            panic!()
        };
        assert!(index.unique && index.concurrently);
        assert_eq!(index.keys, vec![IndexKey::Expression("lower(email)".into()), IndexKey::Column("id".into())]);
        assert_eq!(index.predicate.as_deref(), Some("deleted_at is null"));
    }

    #[test]
    fn unknown_statements_keep_their_keywords() {
        assert_eq!(rec("CREATE STATISTICS s ON a, b FROM t"), Ddl::Other("CREATE STATISTICS".into()));
        assert_eq!(rec("DO $$ BEGIN END $$"), Ddl::Other("DO".into()));
    }
}

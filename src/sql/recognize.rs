//! The fallback for statements sqlparser cannot parse. First it retries sqlparser on the
//! statement without the clauses that do not matter to Sluice and that sqlparser does not know
//! (`WITH [NO] DATA`, `LIKE … INCLUDING ALL`, `ON ONLY`), and on each `ALTER TABLE` sub-command
//! alone; then it reads the statement token by token: index creation and removal, `ALTER TABLE`
//! sub-commands (constraints, identity, partitions, storage options), `ALTER SEQUENCE`, `ALTER
//! INDEX`, `CREATE STATISTICS`, `COMMENT ON`, `REINDEX`, `DO`. What it does not recognize
//! becomes `Ddl::Other`.

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

    fn from_tokens(tokens: Vec<&'a Token>) -> Self {
        Cursor { tokens, pos: 0 }
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

    fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    /// Whether the keyword sequence is next, without consuming it.
    fn sees(&self, words: &[&str]) -> bool {
        words.iter().enumerate().all(|(i, w)| match self.tokens.get(self.pos + i) {
            Some(Token::Word(t)) => t.quote_style.is_none() && t.value.eq_ignore_ascii_case(w),
            _ => false,
        })
    }

    /// Consumes the keyword sequence if it is next.
    fn eat(&mut self, words: &[&str]) -> bool {
        let matches = self.sees(words);
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

    /// A possibly qualified name: `a`, `s.a`, `"Quoted"`, folded and truncated like PostgreSQL.
    fn name(&mut self) -> Option<Name> {
        let mut parts = Vec::new();
        while let Some(Token::Word(w)) = self.peek() {
            let folded = if w.quote_style.is_some() { w.value.clone() } else { w.value.to_ascii_lowercase() };
            parts.push(names::truncate(&folded));
            self.pos += 1;
            if !self.eat_token(&Token::Period) {
                break;
            }
        }
        (!parts.is_empty()).then(|| names::qualified(&parts))
    }

    /// A name followed by an argument list, as `COMMENT ON FUNCTION f(int, text)` writes it.
    fn name_with_arguments(&mut self) -> Option<Name> {
        let name = self.name()?;
        if self.peek() == Some(&Token::LParen) {
            self.parenthesized_list()?;
        }
        Some(name)
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

    /// Skips one value: a word, number or string, possibly signed, or a parenthesized list.
    fn skip_value(&mut self) -> bool {
        if self.peek() == Some(&Token::LParen) {
            return self.parenthesized_list().is_some();
        }
        self.eat_token(&Token::Minus);
        match self.peek() {
            Some(Token::Word(_) | Token::Number(_, _) | Token::SingleQuotedString(_)) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
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

/// The recognizer's rewritten text, parsed within the depth limits (it can be as deep as the
/// statement it came from).
fn parse_one(text: &str) -> Option<sqlparser::ast::Statement> {
    super::depth::parse_statement(text)
}

const KEY_SUFFIXES: &[&str] = &["ASC", "DESC", "NULLS", "FIRST", "LAST"];

/// One index key from its tokens: a column or a normalized expression; sort options and the
/// operator class dropped. Also the name PostgreSQL derives from it.
fn index_key(tokens: &[&Token]) -> (IndexKey, Name) {
    let mut end = tokens.len();
    while end > 1 {
        match tokens[end - 1] {
            Token::Word(w) if w.quote_style.is_none() && KEY_SUFFIXES.contains(&w.value.to_uppercase().as_str()) => {
                end -= 1
            }
            _ => break,
        }
    }
    // `col opclass`: a trailing word after a complete key is its operator class.
    if end == 2 && matches!(tokens[0], Token::Word(_)) && matches!(tokens[1], Token::Word(_)) {
        end = 1;
    }
    let text = join(&tokens[..end]);
    match super::depth::parse_expression(&text) {
        Some(expr) => (super::from_ast::index_key(&expr), super::from_ast::key_name(&expr)),
        None => (IndexKey::Expression(names::text(&text)), "expr".into()),
    }
}

fn create_index(c: &mut Cursor) -> Option<Ddl> {
    let unique = c.eat(&["UNIQUE"]);
    if !c.eat(&["INDEX"]) {
        return None;
    }
    let concurrently = c.eat(&["CONCURRENTLY"]);
    let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
    let name =
        if c.peek_word().as_deref() == Some("ON") { None } else { c.name().map(|n| names::split(&n).1.to_string()) };
    if !c.eat(&["ON"]) {
        return None;
    }
    let only = c.eat(&["ONLY"]);
    let table = c.name()?;
    let mut btree = true;
    if c.eat(&["USING"]) {
        btree = c.name().is_some_and(|method| method.eq_ignore_ascii_case("btree"));
    }
    let (keys, mut raw_names): (Vec<IndexKey>, Vec<Name>) =
        c.parenthesized_list()?.iter().map(|k| index_key(k)).unzip();
    let mut nulls_not_distinct = false;
    let mut predicate = None;
    while let Some(word) = c.peek_word() {
        match word.as_str() {
            "INCLUDE" => {
                c.pos += 1;
                raw_names.extend(c.parenthesized_list()?.iter().map(|k| index_key(k).1));
            }
            "WITH" => {
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
    Some(Ddl::CreateIndex(Box::new(CreateIndex {
        name,
        table,
        unique,
        concurrently,
        if_not_exists,
        only,
        keys,
        key_names: names::index_column_names(&raw_names),
        predicate,
        nulls_not_distinct,
        btree,
    })))
}

fn columns(list: Vec<Vec<&Token>>) -> (Vec<Name>, Vec<Name>) {
    list.iter()
        .map(|k| {
            let (key, name) = index_key(k);
            let column = match key {
                IndexKey::Column(c) => c,
                IndexKey::Expression(e) => e,
            };
            (column, name)
        })
        .unzip()
}

/// `ADD [CONSTRAINT name] UNIQUE | PRIMARY KEY …` read token by token (sqlparser rejects
/// `NULLS NOT DISTINCT` here).
fn add_unique_or_primary_key(c: &mut Cursor) -> Option<AlterAction> {
    let name = if c.eat(&["CONSTRAINT"]) { c.name() } else { None };
    let (kind, mut naming) = if c.eat(&["UNIQUE"]) {
        let nulls_not_distinct = c.eat(&["NULLS", "NOT", "DISTINCT"]);
        c.eat(&["NULLS", "DISTINCT"]);
        if c.eat(&["USING", "INDEX"]) {
            (ConstraintKind::UsingIndex { index: c.name()?, primary_key: false }, Vec::new())
        } else {
            let (columns, naming) = columns(c.parenthesized_list()?);
            (ConstraintKind::Unique { columns, nulls_not_distinct }, naming)
        }
    } else if c.eat(&["PRIMARY", "KEY"]) {
        if c.eat(&["USING", "INDEX"]) {
            (ConstraintKind::UsingIndex { index: c.name()?, primary_key: true }, Vec::new())
        } else {
            let (columns, naming) = columns(c.parenthesized_list()?);
            (ConstraintKind::PrimaryKey { columns }, naming)
        }
    } else {
        return None;
    };
    if c.eat(&["INCLUDE"]) {
        naming.extend(columns(c.parenthesized_list()?).1);
    }
    let mut not_valid = false;
    loop {
        if c.eat(&["NOT", "VALID"]) {
            not_valid = true;
        } else if !(deferrability(c) || (c.eat(&["USING", "INDEX", "TABLESPACE"]) && c.name().is_some())) {
            break;
        }
    }
    Some(AlterAction::AddConstraint(Constraint { name, kind, not_valid, naming: names::index_column_names(&naming) }))
}

/// `[NOT] DEFERRABLE`, `INITIALLY DEFERRED|IMMEDIATE`, `[NO] INHERIT`, `[NOT] ENFORCED`.
fn deferrability(c: &mut Cursor) -> bool {
    c.eat(&["NOT", "DEFERRABLE"])
        || c.eat(&["DEFERRABLE"])
        || c.eat(&["INITIALLY", "DEFERRED"])
        || c.eat(&["INITIALLY", "IMMEDIATE"])
}

/// One `ALTER TABLE` sub-command read token by token.
fn alter_action(c: &mut Cursor) -> Option<AlterAction> {
    let start = c.pos;
    if c.sees(&["ADD"]) {
        c.pos += 1;
        c.eat(&["COLUMN"]);
        if let Some(action) = add_unique_or_primary_key(c) {
            return Some(action);
        }
    } else if c.eat(&["ALTER", "CONSTRAINT"]) {
        let name = c.name()?;
        while deferrability(c) {}
        return Some(AlterAction::AlterConstraint { name });
    } else if c.eat(&["RENAME", "CONSTRAINT"]) {
        let from = c.name()?;
        c.eat(&["TO"]);
        return Some(AlterAction::RenameConstraint { from, to: c.name()? });
    } else if c.eat(&["RENAME", "TO"]) {
        return Some(AlterAction::RenameTable { to: names::split(&c.name()?).1.to_string() });
    } else if c.eat(&["RENAME"]) {
        c.eat(&["COLUMN"]);
        let from = c.name()?;
        c.eat(&["TO"]);
        return Some(AlterAction::RenameColumn { from, to: c.name()? });
    } else if c.eat(&["ALTER"]) {
        c.eat(&["COLUMN"]);
        let column = c.name()?;
        if c.eat(&["ADD", "GENERATED"]) {
            c.eat(&["ALWAYS"]);
            c.eat(&["BY", "DEFAULT"]);
            if !c.eat(&["AS", "IDENTITY"]) {
                return None;
            }
            if c.peek() == Some(&Token::LParen) {
                c.parenthesized_list()?;
            }
            return Some(AlterAction::AddIdentity { column });
        }
        if c.eat(&["DROP", "IDENTITY"]) {
            c.eat(&["IF", "EXISTS"]);
            return Some(AlterAction::DropIdentity { column });
        }
    } else if c.eat(&["DETACH", "PARTITION"]) {
        let partition = c.name()?;
        let concurrently = c.eat(&["CONCURRENTLY"]);
        c.eat(&["FINALIZE"]);
        return Some(AlterAction::DetachPartition { partition, concurrently });
    } else if c.eat(&["ATTACH", "PARTITION"]) {
        let partition = c.name()?;
        c.rest_text();
        return Some(AlterAction::AttachPartition { partition });
    }
    c.pos = start;
    Some(AlterAction::Other(c.rest_text()))
}

/// The sub-commands of an `ALTER TABLE`, split on top-level commas.
fn split_actions<'a>(tokens: &[&'a Token]) -> Vec<Vec<&'a Token>> {
    let mut depth = 0;
    let mut out = vec![Vec::new()];
    for token in tokens {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                out.push(Vec::new());
                continue;
            }
            _ => {}
        }
        out.last_mut().unwrap().push(*token);
    }
    out.into_iter().filter(|a| !a.is_empty()).collect()
}

/// `ALTER TABLE [IF EXISTS] [ONLY] t action, …`: each sub-command through sqlparser alone when
/// it can read it, else token by token.
fn alter_table(c: &mut Cursor) -> Option<Ddl> {
    let if_exists = c.eat(&["IF", "EXISTS"]);
    c.eat(&["ONLY"]);
    let table_start = c.pos;
    let table = c.name()?;
    let table_text = join(&c.tokens[table_start..c.pos]);
    let mut actions = Vec::new();
    let parse_action = |tokens: &[&Token]| {
        parse_one(&format!("ALTER TABLE {table_text} {}", join(tokens))).and_then(|s| {
            match super::from_ast::ddl(&s, "") {
                Ddl::AlterTable { mut actions, .. } if actions.len() == 1 => actions.pop(),
                _ => None,
            }
        })
    };
    for action in split_actions(&c.tokens[c.pos..]) {
        let parsed = parse_action(&action).or_else(|| type_with_collation(&action, parse_action));
        let action = match parsed {
            Some(action) => action,
            None => {
                let mut sub = Cursor::from_tokens(action);
                let read = alter_action(&mut sub)?;
                if !sub.at_end() {
                    AlterAction::Other(join(&sub.tokens))
                } else {
                    read
                }
            }
        };
        actions.push(action);
    }
    c.pos = c.tokens.len();
    Some(Ddl::AlterTable { table, if_exists, actions })
}

/// `ALTER [COLUMN] c [SET DATA] TYPE t COLLATE name [USING …]`, which sqlparser cannot read: the
/// type change without the `COLLATE` clause, with the collation put back.
fn type_with_collation(
    action: &[&Token],
    parse_action: impl Fn(&[&Token]) -> Option<AlterAction>,
) -> Option<AlterAction> {
    let at = (0..action.len()).find(|&i| word_at(action, i, "COLLATE"))?;
    let name = match action.get(at + 1)? {
        Token::Word(w) if w.quote_style.is_some() => w.value.clone(),
        Token::Word(w) => w.value.to_ascii_lowercase(),
        _ => return None,
    };
    let without: Vec<&Token> = action[..at].iter().chain(&action[at + 2..]).copied().collect();
    match parse_action(&without)? {
        AlterAction::SetType { column, data_type, using, through, .. } => {
            Some(AlterAction::SetType { column, data_type, using, through, collation: Some(name) })
        }
        _ => None,
    }
}

/// `DROP INDEX` / `DROP STATISTICS` after those words: `[CONCURRENTLY]` (indexes only)
/// `[IF EXISTS] name [, …] [CASCADE | RESTRICT]`.
fn drop_named(c: &mut Cursor, kind: ObjectKind) -> Option<Ddl> {
    let concurrently = kind == ObjectKind::Index && c.eat(&["CONCURRENTLY"]);
    let if_exists = c.eat(&["IF", "EXISTS"]);
    let mut names = vec![c.name()?];
    while c.eat_token(&Token::Comma) {
        names.push(c.name()?);
    }
    let cascade = c.eat(&["CASCADE"]);
    c.eat(&["RESTRICT"]);
    Some(Ddl::Drop { kind, names, if_exists, concurrently, cascade })
}

fn rename(c: &mut Cursor, kind: ObjectKind) -> Option<Ddl> {
    let if_exists = c.eat(&["IF", "EXISTS"]);
    let from = c.name()?;
    if !c.eat(&["RENAME", "TO"]) {
        return None;
    }
    Some(Ddl::Rename { kind, from, to: names::split(&c.name()?).1.to_string(), if_exists })
}

/// `ALTER INDEX [IF EXISTS] name RENAME TO … | SET (…) | RESET (…) | SET TABLESPACE … |
/// ATTACH PARTITION … | ALTER [COLUMN] n SET STATISTICS …`.
fn alter_index(c: &mut Cursor) -> Option<Ddl> {
    let start = c.pos;
    if let Some(rename) = rename(c, ObjectKind::Index) {
        return Some(rename);
    }
    c.pos = start;
    c.eat(&["IF", "EXISTS"]);
    let name = c.name()?;
    let action = if c.eat(&["ATTACH", "PARTITION"]) {
        c.name()?;
        IndexAction::AttachPartition
    } else if c.eat(&["SET", "TABLESPACE"]) {
        c.name()?;
        IndexAction::SetTablespace
    } else if (c.eat(&["SET"]) || c.eat(&["RESET"])) && c.peek() == Some(&Token::LParen) {
        c.parenthesized_list()?;
        IndexAction::Options
    } else if c.eat(&["ALTER"]) {
        c.eat(&["COLUMN"]);
        c.skip_value();
        if !(c.eat(&["SET", "STATISTICS"]) && c.skip_value()) {
            return None;
        }
        IndexAction::Options
    } else {
        return None;
    };
    Some(Ddl::AlterIndex { name, action })
}

/// `ALTER SEQUENCE [IF EXISTS] name option …`: every option PostgreSQL 15 accepts.
fn alter_sequence(c: &mut Cursor) -> Option<Ddl> {
    let start = c.pos;
    if let Some(rename) = rename(c, ObjectKind::Sequence) {
        return Some(rename);
    }
    c.pos = start;
    let if_exists = c.eat(&["IF", "EXISTS"]);
    let name = c.name()?;
    let mut owned_by = None;
    while !c.at_end() {
        if c.eat(&["OWNED", "BY"]) {
            owned_by = Some(if c.eat(&["NONE"]) {
                None
            } else {
                let column = c.name()?;
                let (table, column) = column.rsplit_once('.')?;
                Some(Box::new((table.to_string(), column.to_string())))
            });
        } else if c.eat(&["AS"]) || c.eat(&["OWNER", "TO"]) || c.eat(&["SET", "SCHEMA"]) {
            c.name()?;
        } else if c.eat(&["RESTART"]) {
            if c.eat(&["WITH"]) || matches!(c.peek(), Some(Token::Number(_, _) | Token::Minus)) {
                c.skip_value();
            }
        } else if c.eat(&["INCREMENT"]) || c.eat(&["START"]) {
            c.eat(&["BY"]);
            c.eat(&["WITH"]);
            c.skip_value();
        } else if c.eat(&["MINVALUE"]) || c.eat(&["MAXVALUE"]) || c.eat(&["CACHE"]) {
            c.skip_value();
        } else if !(c.eat(&["NO", "MINVALUE"])
            || c.eat(&["NO", "MAXVALUE"])
            || c.eat(&["NO", "CYCLE"])
            || c.eat(&["CYCLE"])
            || c.eat(&["SET", "LOGGED"])
            || c.eat(&["SET", "UNLOGGED"]))
        {
            return None;
        }
    }
    Some(Ddl::AlterSequence { name, if_exists, owned_by })
}

/// `CREATE STATISTICS [IF NOT EXISTS] [name] [(kinds)] ON columns FROM table`.
fn create_statistics(c: &mut Cursor) -> Option<Ddl> {
    let if_not_exists = c.eat(&["IF", "NOT", "EXISTS"]);
    let name = if c.sees(&["ON"]) { None } else { c.name() };
    if c.peek() == Some(&Token::LParen) {
        c.parenthesized_list()?;
    }
    if !c.eat(&["ON"]) {
        return None;
    }
    while !c.at_end() && !c.sees(&["FROM"]) {
        if c.peek() == Some(&Token::LParen) {
            c.parenthesized_list()?;
        } else {
            c.pos += 1;
        }
    }
    if !c.eat(&["FROM"]) {
        return None;
    }
    Some(Ddl::CreateStatistics { name, table: c.name()?, if_not_exists })
}

/// Object kinds `COMMENT ON` accepts that take an argument list (`FUNCTION f(int)`).
const COMMENT_ROUTINES: &[&str] = &["FUNCTION", "PROCEDURE", "ROUTINE", "AGGREGATE"];
/// Object kinds named `… name ON table`.
const COMMENT_ON_TABLE: &[&str] = &["TRIGGER", "POLICY", "RULE"];

/// `COMMENT ON <kind> <name> [ON table] IS '…' | NULL`.
fn comment(c: &mut Cursor) -> Option<Ddl> {
    let target = if c.eat(&["CONSTRAINT"]) {
        let name = c.name()?;
        c.eat(&["ON"]);
        c.eat(&["DOMAIN"]);
        CommentTarget::Constraint { table: c.name()?, name }
    } else if c.eat(&["MATERIALIZED", "VIEW"]) {
        CommentTarget::Relation { kind: ObjectKind::MaterializedView, name: c.name()? }
    } else if c.eat(&["FOREIGN", "TABLE"]) {
        CommentTarget::Relation { kind: ObjectKind::Table, name: c.name()? }
    } else {
        let kind = c.peek_word()?;
        c.pos += 1;
        match kind.as_str() {
            "TABLE" => CommentTarget::Relation { kind: ObjectKind::Table, name: c.name()? },
            "VIEW" => CommentTarget::Relation { kind: ObjectKind::View, name: c.name()? },
            "INDEX" => CommentTarget::Relation { kind: ObjectKind::Index, name: c.name()? },
            "SEQUENCE" => CommentTarget::Relation { kind: ObjectKind::Sequence, name: c.name()? },
            "COLUMN" => {
                let full = c.name()?;
                let (table, column) = full.rsplit_once('.')?;
                CommentTarget::Column { table: table.to_string(), column: column.to_string() }
            }
            k if COMMENT_ROUTINES.contains(&k) => {
                CommentTarget::Other { kind: kind.clone(), name: c.name_with_arguments()? }
            }
            k if COMMENT_ON_TABLE.contains(&k) => {
                let name = c.name()?;
                if !c.eat(&["ON"]) {
                    return None;
                }
                let table = c.name()?;
                CommentTarget::Other { kind: kind.clone(), name: format!("{name} ON {table}") }
            }
            "CAST" => {
                let inner = c.parenthesized_list()?;
                CommentTarget::Other { kind, name: inner.iter().map(|t| join(t)).collect::<Vec<_>>().join(", ") }
            }
            _ => CommentTarget::Other { kind, name: c.name()? },
        }
    };
    if !c.eat(&["IS"]) {
        return None;
    }
    if !(c.eat(&["NULL"]) || matches!(c.peek(), Some(Token::SingleQuotedString(_) | Token::DollarQuotedString(_)))) {
        return None;
    }
    if !c.sees(&["NULL"]) {
        c.pos += 1;
    }
    Some(Ddl::Comment(target))
}

/// `REINDEX [(options)] INDEX|TABLE|SCHEMA|DATABASE|SYSTEM [CONCURRENTLY] name`.
fn reindex(c: &mut Cursor) -> Option<Ddl> {
    let mut concurrently = false;
    if c.peek() == Some(&Token::LParen) {
        for option in c.parenthesized_list()? {
            let words: Vec<String> = option.iter().map(|t| t.to_string().to_uppercase()).collect();
            if words.first().is_some_and(|w| w == "CONCURRENTLY") {
                concurrently = !words.get(1).is_some_and(|v| v == "FALSE" || v == "OFF" || v == "0");
            }
        }
    }
    let kind = match c.peek_word()?.as_str() {
        "INDEX" => ReindexKind::Index,
        "TABLE" => ReindexKind::Table,
        "SCHEMA" => ReindexKind::Schema,
        "DATABASE" => ReindexKind::Database,
        "SYSTEM" => ReindexKind::System,
        _ => return None,
    };
    c.pos += 1;
    concurrently |= c.eat(&["CONCURRENTLY"]);
    let name = c.name().unwrap_or_default();
    Some(Ddl::Reindex { kind, name, concurrently })
}

/// `ANALYZE [VERBOSE] [( options )] [table [(columns)] [, …]]` after `ANALYZE`: sqlparser reads
/// one table only.
fn analyze(c: &mut Cursor) -> Option<Ddl> {
    c.eat(&["VERBOSE"]);
    if c.peek() == Some(&Token::LParen) {
        c.parenthesized_list()?;
    }
    let mut tables = Vec::new();
    while !c.at_end() {
        tables.push(c.name()?);
        if c.peek() == Some(&Token::LParen) {
            c.parenthesized_list()?;
        }
        if !c.eat_token(&Token::Comma) {
            break;
        }
    }
    Some(Ddl::Analyze { tables })
}

/// Removes the tokens `skip` selects and hands the rest to sqlparser.
fn reparse_without(tokens: &[&Token], skip: impl Fn(&[&Token], usize) -> usize) -> Option<Ddl> {
    let mut kept: Vec<&Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    let mut removed = false;
    while i < tokens.len() {
        let n = skip(tokens, i);
        if n > 0 {
            i += n;
            removed = true;
        } else {
            kept.push(tokens[i]);
            i += 1;
        }
    }
    if !removed {
        return None;
    }
    let leading = leading_words(&kept);
    parse_one(&join(&kept)).map(|s| super::from_ast::ddl(&s, &leading))
}

fn word_at(tokens: &[&Token], i: usize, word: &str) -> bool {
    matches!(tokens.get(i), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Clauses that do not change what Sluice knows about a statement, and that sqlparser rejects.
fn reparse_without_noise(tokens: &[&Token]) -> Option<Ddl> {
    let n = tokens.len();
    // `CREATE MATERIALIZED VIEW … AS … WITH [NO] DATA`, `CREATE TABLE … AS … WITH [NO] DATA`.
    let with_data = reparse_without(tokens, |t, i| {
        if i + 2 == n && word_at(t, i, "WITH") && word_at(t, i + 1, "DATA") {
            2
        } else if i + 3 == n && word_at(t, i, "WITH") && word_at(t, i + 1, "NO") && word_at(t, i + 2, "DATA") {
            3
        } else {
            0
        }
    });
    if with_data.is_some() {
        return with_data;
    }
    // `CREATE FUNCTION … COST n | ROWS n`: the planner's estimates, which sqlparser does not read.
    let function = (1..4).any(|i| word_at(tokens, i, "FUNCTION") || word_at(tokens, i, "PROCEDURE"));
    if word_at(tokens, 0, "CREATE") && function {
        let estimates = reparse_without(tokens, |t, i| {
            let number = matches!(t.get(i + 1), Some(Token::Number(..)));
            if (word_at(t, i, "COST") || word_at(t, i, "ROWS")) && number {
                2
            } else {
                0
            }
        });
        if estimates.is_some() {
            return estimates;
        }
    }
    // `(LIKE source INCLUDING ALL EXCLUDING INDEXES)`: the options only say what else to copy.
    if word_at(tokens, 0, "CREATE") {
        let like = reparse_without(tokens, |t, i| {
            if (word_at(t, i, "INCLUDING") || word_at(t, i, "EXCLUDING")) && i + 1 < n {
                2
            } else {
                0
            }
        });
        if let Some(Ddl::CreateTable { mut lineage, name, if_not_exists, columns, constraints, from_query }) = like {
            // What `INCLUDING … / EXCLUDING …` say to copy besides the columns, in order.
            for i in 0..tokens.len() {
                let including = word_at(tokens, i, "INCLUDING");
                if !(including || word_at(tokens, i, "EXCLUDING")) {
                    continue;
                }
                let what = tokens.get(i + 1).map(|t| t.to_string().to_ascii_uppercase()).unwrap_or_default();
                if what == "ALL" || what == "INDEXES" {
                    lineage.like_indexes = including;
                }
                if what == "ALL" || what == "CONSTRAINTS" {
                    lineage.like_constraints = including;
                }
            }
            return Some(Ddl::CreateTable { name, if_not_exists, columns, constraints, from_query, lineage });
        }
        // `CREATE INDEX … ON ONLY parent`: the index on the partitioned table alone.
        return reparse_without(tokens, |t, i| {
            usize::from(
                word_at(t, i, "ONLY")
                    && i > 0
                    && word_at(t, i - 1, "ON")
                    && t.iter().take(i).all(|x| *x != &Token::LParen),
            )
        })
        .map(|ddl| match ddl {
            Ddl::CreateIndex(mut index) => {
                index.only = true;
                Ddl::CreateIndex(index)
            }
            other => other,
        });
    }
    None
}

fn leading_words(tokens: &[&Token]) -> String {
    tokens
        .iter()
        .map_while(|t| match t {
            Token::Word(w) if w.quote_style.is_none() && w.keyword != sqlparser::keywords::Keyword::NoKeyword => {
                Some(w.value.to_uppercase())
            }
            _ => None,
        })
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the recognizer made of a statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Recognized {
    pub ddl: Ddl,
    /// Every token was understood: nothing of the statement went unchecked.
    pub complete: bool,
}

/// Whether Sluice knows what the recognized statement does: its locks and its effect on the model.
fn understood(ddl: &Ddl) -> bool {
    match ddl {
        Ddl::Other(_) => false,
        Ddl::AlterTable { actions, .. } => actions.iter().all(|a| match a {
            AlterAction::Other(text) => other_action_lock(text).is_some(),
            AlterAction::AddConstraint(c) => c.kind != ConstraintKind::Other,
            _ => true,
        }),
        _ => true,
    }
}

/// Recognizes what it can of a statement sqlparser rejected.
pub fn recognize(tokens: &[TokenWithSpan]) -> Recognized {
    let mut c = Cursor::new(tokens);
    let leading = leading_keywords(tokens);
    if let Some(ddl) = reparse_without_noise(&c.tokens) {
        let complete = understood(&ddl);
        return Recognized { ddl, complete };
    }
    let recognized = if c.eat(&["CREATE", "STATISTICS"]) {
        create_statistics(&mut c)
    } else if c.eat(&["CREATE"]) {
        create_index(&mut c)
    } else if c.eat(&["ALTER", "TABLE"]) {
        alter_table(&mut c)
    } else if c.eat(&["DROP", "INDEX"]) {
        drop_named(&mut c, ObjectKind::Index)
    } else if c.eat(&["DROP", "STATISTICS"]) {
        drop_named(&mut c, ObjectKind::Statistics)
    } else if c.eat(&["ALTER", "INDEX"]) {
        alter_index(&mut c)
    } else if c.eat(&["ALTER", "SEQUENCE"]) {
        alter_sequence(&mut c)
    } else if c.eat(&["ALTER", "VIEW"]) {
        rename(&mut c, ObjectKind::View)
    } else if c.eat(&["ALTER", "MATERIALIZED", "VIEW"]) {
        rename(&mut c, ObjectKind::MaterializedView)
    } else if c.eat(&["COMMENT", "ON"]) {
        comment(&mut c)
    } else if c.eat(&["REINDEX"]) {
        reindex(&mut c)
    } else if c.eat(&["ANALYZE"]) || c.eat(&["ANALYSE"]) {
        analyze(&mut c)
    } else if c.eat(&["DO"]) {
        // The body is read by `plpgsql`; the statement itself is only the block.
        c.eat(&["LANGUAGE"]).then(|| c.name());
        if matches!(c.peek(), Some(Token::DollarQuotedString(_) | Token::SingleQuotedString(_))) {
            c.pos += 1;
        }
        c.eat(&["LANGUAGE"]).then(|| c.name());
        Some(Ddl::Do)
    } else {
        None
    };
    let complete = recognized.as_ref().is_some_and(understood) && c.at_end();
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

    fn tokens(sql: &str) -> Vec<TokenWithSpan> {
        Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap()
    }

    fn rec(sql: &str) -> Ddl {
        recognize(&tokens(sql)).ddl
    }

    fn complete(sql: &str) -> bool {
        recognize(&tokens(sql)).complete
    }

    #[test]
    fn knows_when_it_understood_everything() {
        assert!(complete("DROP INDEX CONCURRENTLY IF EXISTS a, b CASCADE"));
        assert!(complete("ALTER TABLE t ADD CONSTRAINT c UNIQUE NULLS NOT DISTINCT (a) DEFERRABLE INITIALLY DEFERRED"));
        assert!(complete("ALTER TABLE t ALTER CONSTRAINT c DEFERRABLE"));
        assert!(!complete("DROP INDEX CONCURRENTLY a WITH (x)"));
        assert!(!complete("CREATE FOOBAR x"));
        assert!(!complete("ALTER TABLE t FROBNICATE"));
    }

    #[test]
    fn statements_seen_in_real_histories_are_understood() {
        for sql in [
            "ALTER TABLE t ALTER CONSTRAINT t_fk NOT DEFERRABLE",
            "ALTER TABLE t ALTER CONSTRAINT t_fk DEFERRABLE INITIALLY IMMEDIATE",
            "ALTER SEQUENCE s RESTART WITH 10",
            "ALTER SEQUENCE s RESTART",
            "ALTER SEQUENCE s AS bigint",
            "ALTER SEQUENCE s OWNED BY t.a",
            "ALTER SEQUENCE IF EXISTS s MAXVALUE 100 NO CYCLE INCREMENT BY 2 CACHE 10",
            "ALTER SEQUENCE s OWNED BY NONE",
            "CREATE STATISTICS st ON a, b FROM t",
            "CREATE STATISTICS IF NOT EXISTS st (dependencies, ndistinct) ON a, (lower(b)) FROM app.t",
            "COMMENT ON FUNCTION f(int, text) IS 'x'",
            "COMMENT ON CONSTRAINT c ON t IS 'x'",
            "COMMENT ON TRIGGER tr ON t IS NULL",
            "ALTER TABLE t ALTER a ADD GENERATED ALWAYS AS IDENTITY (START WITH 10)",
            "ALTER TABLE t ALTER COLUMN a DROP IDENTITY IF EXISTS",
            "ALTER TABLE t ALTER COLUMN a SET STATISTICS 100, ALTER CONSTRAINT c DEFERRABLE",
            "ALTER TABLE t ALTER COLUMN a SET STORAGE PLAIN",
            "REINDEX TABLE t",
            "REINDEX (VERBOSE) INDEX CONCURRENTLY i",
            "CREATE MATERIALIZED VIEW mv AS SELECT a FROM t WITH NO DATA",
            "CREATE TABLE t2 (LIKE t INCLUDING ALL)",
            "CREATE INDEX i ON ONLY p (a)",
            "ALTER INDEX IF EXISTS i RENAME TO j",
            "ALTER INDEX p_i ATTACH PARTITION p1_i",
            "ALTER INDEX i SET (fillfactor = 80)",
            "DROP STATISTICS IF EXISTS st",
            "ANALYZE a, b",
            "ANALYZE VERBOSE app.a (x, y), b",
            "CREATE OR REPLACE FUNCTION f(a int) RETURNS int LANGUAGE sql IMMUTABLE COST 1 AS $$ SELECT a $$",
            "ALTER TABLE v ALTER COLUMN name TYPE varchar(20) COLLATE \"C\"",
        ] {
            assert!(complete(sql), "{sql}: {:?}", rec(sql));
        }
    }

    /// Issue 37: what these statements are, beyond being understood.
    #[test]
    fn analyze_cost_collate_and_only_are_read_whole() {
        assert_eq!(rec("ANALYZE a, app.b (x)"), Ddl::Analyze { tables: vec!["a".into(), "app.b".into()] });
        let Ddl::CreateFunction { name, volatility, .. } =
            rec("CREATE FUNCTION f() RETURNS int LANGUAGE sql STABLE COST 100 ROWS 5 AS 'SELECT 1'")
        else {
            panic!("a function")
        };
        assert_eq!((name.as_str(), volatility), ("f", Volatility::Stable));
        let Ddl::AlterTable { actions, .. } = rec("ALTER TABLE v ALTER COLUMN name TYPE text COLLATE \"C\" USING name")
        else {
            panic!("an ALTER TABLE")
        };
        assert!(
            matches!(&actions[0], AlterAction::SetType { collation: Some(c), using: None, .. } if c == "C"),
            "{actions:?}"
        );
        let Ddl::CreateIndex(index) = rec("CREATE INDEX i ON ONLY p (a)") else { panic!("an index") };
        assert!(index.only);
    }

    #[test]
    fn alter_table_keeps_every_sub_command() {
        let Ddl::AlterTable { table, actions, .. } =
            rec("ALTER TABLE ONLY app.t ALTER CONSTRAINT c DEFERRABLE, ADD COLUMN n int DEFAULT 0, ALTER a SET STATISTICS 50")
        else {
            panic!()
        };
        assert_eq!(table, "app.t");
        assert_eq!(actions.len(), 3);
        assert_eq!(actions[0], AlterAction::AlterConstraint { name: "c".into() });
        assert!(matches!(&actions[1], AlterAction::AddColumn { column, .. } if column.name == "n"));
        assert!(
            matches!(&actions[2], AlterAction::Other(text) if other_action_lock(text) == Some(Lock::ShareUpdateExclusive))
        );
    }

    #[test]
    fn sequences_record_their_owner() {
        assert_eq!(
            rec("ALTER SEQUENCE users_id_seq OWNED BY users.id"),
            Ddl::AlterSequence {
                name: "users_id_seq".into(),
                if_exists: false,
                owned_by: Some(Some(Box::new(("users".into(), "id".into()))))
            }
        );
    }

    #[test]
    fn reindex_kinds_and_options() {
        assert_eq!(
            rec("REINDEX (CONCURRENTLY) TABLE app.t"),
            Ddl::Reindex { kind: ReindexKind::Table, name: "app.t".into(), concurrently: true }
        );
        assert_eq!(
            rec("REINDEX INDEX i"),
            Ddl::Reindex { kind: ReindexKind::Index, name: "i".into(), concurrently: false }
        );
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
                naming: vec!["site_id".into(), "species_code".into()],
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
        let Ddl::CreateIndex(index) = rec("CREATE UNIQUE INDEX CONCURRENTLY u_email ON users USING btree (lower(email) DESC, id) INCLUDE (a) NULLS NOT DISTINCT WHERE deleted_at IS NULL") else {
            panic!()
        };
        assert!(index.unique && index.concurrently);
        assert_eq!(index.keys, vec![IndexKey::Expression("lower(email)".into()), IndexKey::Column("id".into())]);
        assert_eq!(index.key_names, vec!["lower", "id", "a"]);
        assert_eq!(index.predicate.as_deref(), Some("deleted_at is null"));
    }

    #[test]
    fn long_names_are_truncated_like_postgres() {
        let Ddl::Drop { names, .. } =
            rec("DROP INDEX CONCURRENTLY idx_post_aggregates_featured_community_newest_comment_time_necro_extra")
        else {
            panic!()
        };
        assert_eq!(names, vec!["idx_post_aggregates_featured_community_newest_comment_time_necr"]);
    }

    #[test]
    fn unknown_statements_keep_their_keywords() {
        assert_eq!(rec("CREATE FOOBAR s ON a, b FROM t"), Ddl::Other("CREATE".into()));
        assert_eq!(rec("DO $$ BEGIN END $$"), Ddl::Do);
    }
}

//! A statement as Sluice reads it, and the statements of a `DO` block inside it: `parse`
//! builds them, `plpgsql` reads a block's body with `parse`'s statement parser.

use super::ddl::Ddl;
use super::depth::TooDeep;
use super::split::{Comment, Span};
use sqlparser::ast;

#[derive(Debug, Clone)]
pub struct Statement {
    pub span: Span,
    /// The syntax tree, for statements that contain queries (views, functions, DML, plain
    /// queries). DDL is described completely by `ddl` and keeps none: see [`Ddl::is_complete`].
    /// Boxed: sqlparser's statement is kilobytes wide, and most statements keep none.
    pub ast: Option<Box<ast::Statement>>,
    /// Why sqlparser rejected it, when it did.
    pub parse_error: Option<Box<str>>,
    /// Set when it was refused for its depth: only the recognizer read it, and the gate fails closed.
    pub too_deep: Option<TooDeep>,
    pub ddl: Ddl,
    /// For unparsed statements: the recognizer understood every token.
    pub fully_recognized: bool,
    pub leading_comments: Box<[Comment]>,
    /// For `DO` blocks: the SQL statements of the body, each parsed on its own.
    pub block: Option<Box<Block>>,
}

/// Under what condition a statement of a DO block runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// Every time the block runs.
    Always,
    /// Only when an `IF`/`ELSIF`/`ELSE` or `CASE` branch is taken.
    Conditional,
    /// Inside a loop: any number of times, maybe none.
    Loop,
    /// Only when the block raises an error (an `EXCEPTION` handler).
    OnError,
}

impl Branch {
    /// The stronger condition of an outer and an inner construct.
    pub(super) fn within(self, inner: Branch) -> Branch {
        match (self, inner) {
            (Branch::Always, inner) => inner,
            (outer, Branch::Always) => outer,
            (Branch::OnError, _) | (_, Branch::OnError) => Branch::OnError,
            (Branch::Loop, _) | (_, Branch::Loop) => Branch::Loop,
            _ => Branch::Conditional,
        }
    }

    /// How a finding on such a statement says so.
    pub fn describe(self) -> &'static str {
        match self {
            Branch::Always => "inside a DO block",
            Branch::Conditional => "inside a DO block, conditionally: only when its IF/CASE branch is taken",
            Branch::Loop => "inside a loop of a DO block: it may run many times, or not at all",
            Branch::OnError => "inside an EXCEPTION handler of a DO block: only when the block fails",
        }
    }
}

/// A SQL statement of a DO block.
#[derive(Debug, Clone)]
pub struct BlockStatement {
    pub statement: Statement,
    pub branch: Branch,
}

/// Something in a DO block Sluice cannot check, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unchecked {
    pub line: usize,
    pub what: String,
}

/// What a DO block runs.
#[derive(Debug, Clone, Default)]
pub struct Block {
    pub statements: Vec<BlockStatement>,
    pub unchecked: Vec<Unchecked>,
    /// Its control structures nest deeper than `plpgsql::NESTING_LIMIT`: what is inside was
    /// not read, and the gate fails on it (`unparsed-statement`, an error).
    pub too_deep: bool,
}

impl Block {
    /// Nothing in it escaped the checks: no dynamic SQL, no procedure call, every statement read.
    pub fn fully_checked(&self) -> bool {
        self.unchecked.is_empty()
            && self.statements.iter().all(|s| s.statement.parse_error.is_none() || s.statement.fully_recognized)
    }
}

//! What a query does with columns in its predicates (WHERE, JOIN … ON) — in SELECT, UPDATE,
//! DELETE, CTEs and subqueries — with aliases and qualified names resolved to base tables.
//! `function-on-indexed-column` and `drop-index-in-use` stand on this.

use super::names::{self, expression, ident};
use serde::{Deserialize, Serialize};
use sqlparser::ast::{
    self, BinaryOperator, Expr, FromTable, JoinConstraint, JoinOperator, Query, SetExpr, Spanned, TableFactor,
    TableWithJoins, UnaryOperator,
};

/// Answers what the schema knows, so this module does not depend on it.
pub trait Catalog {
    fn has_column(&self, table: &str, column: &str) -> bool;
    /// The column's type as declared (`character varying(100)`), when known.
    fn column_type(&self, table: &str, column: &str) -> Option<&str>;
}

/// Whether casting a column of `column_type` to `target` leaves it what an index on it
/// holds, as PostgreSQL plans it (verified on PostgreSQL 15): a cast to the column's own type
/// (`"tenantId"::uuid` on a uuid column, `name::varchar` on varchar(100)) is dropped, and
/// `varchar` ↔ `text` is a binary-coercible relabelling that keeps the index's `text_ops`
/// (`upper((name)::text)` is how pg_dump writes `upper(name)` on a varchar column). A cast
/// that changes the length (`varchar(50)` on varchar(100)), to `char`, or to another type
/// (`id::int` on bigint, `uuid::text`) computes a new value: the index cannot serve it.
pub fn is_transparent_cast(column_type: &str, target: &ast::DataType) -> bool {
    let (column, column_modifier) = names::type_parts(column_type);
    let written = target.to_string();
    let (target, mut target_modifier) = names::type_parts(&written);
    // `char` alone is char(1) in a cast.
    if target == "bpchar" && target_modifier.is_empty() && !written.trim().eq_ignore_ascii_case("bpchar") {
        target_modifier = "(1)".into();
    }
    let same_modifier = target_modifier.is_empty() || target_modifier == column_modifier;
    let arrays = column_modifier.contains('[') || target_modifier.contains('[');
    if target == column {
        return same_modifier;
    }
    let text_family = |t: &str| t == "text" || t == "varchar";
    !arrays && target_modifier.is_empty() && text_family(&column) && text_family(&target)
}

/// `expression` (normalized text, as [`names::expression`] writes it; its columns are
/// `table`'s) with the casts PostgreSQL makes invisible dropped (see
/// [`is_transparent_cast`]): the form in which an index expression and a query's compare
/// equal when PostgreSQL's would (`upper(name::text)` and `upper(name)` on varchar).
pub fn canonical_expression(expression: &str, table: &str, catalog: &dyn Catalog) -> String {
    let Some(mut expr) = super::depth::parse_expression(expression) else { return expression.to_string() };
    let mut changed = false;
    let _ = ast::visit_expressions_mut(&mut expr, |e| {
        if let Expr::Cast { kind: ast::CastKind::Cast | ast::CastKind::DoubleColon, expr: inner, data_type, .. } = e {
            let column = column_parts(strip(inner)).and_then(|parts| parts.last().cloned());
            let transparent = column
                .and_then(|c| catalog.column_type(table, &c))
                .is_some_and(|column_type| is_transparent_cast(column_type, data_type));
            if transparent {
                *e = strip(inner).clone();
                changed = true;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if changed {
        names::expression(&expr)
    } else {
        expression.to_string()
    }
}

/// How a column is hidden from an index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WrapKind {
    Function(String),
    Cast,
    AtTimeZone,
    Arithmetic,
    Collate,
    Other,
}

impl WrapKind {
    pub fn describe(&self) -> String {
        match self {
            WrapKind::Function(name) => format!("a call to {name}(…)"),
            WrapKind::Cast => "a cast".into(),
            WrapKind::AtTimeZone => "AT TIME ZONE".into(),
            WrapKind::Arithmetic => "arithmetic".into(),
            WrapKind::Collate => "COLLATE".into(),
            WrapKind::Other => "an expression".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wrapping {
    pub kind: WrapKind,
    /// The whole side of the comparison, normalized like index expressions are.
    pub expression: String,
    /// As written, for messages.
    pub written: String,
}

/// Where in the file, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

/// A column a predicate compares, resolved to its base table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnUse {
    pub table: String,
    pub column: String,
    /// `None` when compared bare (an index can serve it).
    pub wrapped: Option<Wrapping>,
    pub position: Position,
    /// The parameter test (`$1 IS NULL`) this comparison is an alternative to, when it sits in
    /// an optional filter `($1 IS NULL OR …)`: PostgreSQL folds the test away in a plan made
    /// for the parameter's value (a custom plan), and a generic plan can use no index for it.
    #[serde(default)]
    pub optional: Option<String>,
    /// How the predicate compares it: what a B-tree search can do with it.
    #[serde(default)]
    pub comparison: Comparison,
    /// The other side of `column = other.column`, resolved: the join partner a planner can
    /// drive a nested loop from (and probe this column's index with each of its rows).
    #[serde(default)]
    pub joined_to: Option<(String, String)>,
    /// The other side reads a column (of a table, a CTE, a subquery's rows: `IN (SELECT …)`):
    /// the comparison's values come from other rows, not from a parameter or a literal.
    #[serde(default)]
    pub against_columns: bool,
    /// Which relation of the statement the column belongs to (one number per table named in a
    /// FROM or JOIN): two aliases of one table (`namespace n JOIN namespace p`) are two.
    #[serde(default)]
    pub relation: usize,
    /// The comparison is one alternative of an OR (`x = $1 OR y = $2`): the query's rows are not
    /// all found through it.
    #[serde(default)]
    pub alternative: bool,
    /// Its relation is the nullable side of an outer join (a LEFT JOIN's right, a RIGHT JOIN's
    /// left, either side of a FULL JOIN): the planner joins it after the side it is joined to,
    /// so its rows are never found first and the other side reached from them.
    #[serde(default)]
    pub outer: bool,
    /// The comparison is `IS NULL`: an equality for a search, but a plain UNIQUE index keeps any
    /// number of NULLs.
    #[serde(default)]
    pub is_null: bool,
    /// Every column the other side reads is of the same relation (`edge_count + 1 <=
    /// max_count`): a comparison within one row, which no index search can bound.
    #[serde(default)]
    pub against_own_row: bool,
}

impl ColumnUse {
    /// How a B-tree index on the column can be searched for this use on its own: the column
    /// compared bare, outside any OR, against a value known before the scan (a constant or a
    /// parameter, no column, no subquery). [`Comparison::Other`] otherwise. An optional filter
    /// searches only in a plan made for its parameter's value (see [`ColumnUse::optional`]).
    pub fn search(&self) -> Comparison {
        if self.wrapped.is_some() || self.alternative || self.against_columns {
            Comparison::Other
        } else {
            self.comparison
        }
    }
}

/// How a predicate compares a column, as a B-tree index search sees it (PostgreSQL
/// documentation, 11.2 and 11.3): equalities on a prefix of an index's keys, then one range,
/// bound the part of the index read; anything else is at best checked on each entry read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    /// `=`, `IN (…)`, `= ANY (…)`, `IS NULL`: each value is one place in the index.
    Equality,
    /// `<`, `<=`, `>`, `>=`, `BETWEEN`: a run of the index.
    Range,
    /// Anything else (`<>`, `LIKE`, `@>`, `IS NOT NULL` …), and what is not known (a use read
    /// from an older cache): never counted as narrowing a search.
    #[default]
    Other,
}

struct Relation {
    alias: String,
    /// `None` for CTEs and derived tables.
    table: Option<String>,
    /// See [`ColumnUse::relation`].
    id: usize,
}

struct Scope<'p> {
    relations: Vec<Relation>,
    ctes: Vec<String>,
    parent: Option<&'p Scope<'p>>,
}

impl Scope<'_> {
    fn is_cte(&self, name: &str) -> bool {
        self.ctes.iter().any(|c| c == name) || self.parent.is_some_and(|p| p.is_cte(name))
    }

    /// The base table and column a reference names, and the relation (see [`ColumnUse::relation`]).
    fn resolve(&self, parts: &[String], catalog: &dyn Catalog) -> Option<(String, String, usize)> {
        let (column, qualifier) = parts.split_last()?;
        if qualifier.is_empty() {
            let found = self
                .relations
                .iter()
                .filter_map(|r| Some((r.table.as_ref()?, r.id)))
                .find(|(t, _)| catalog.has_column(t, column))
                .map(|(t, id)| (t.clone(), column.clone(), id));
            return found.or_else(|| self.parent.and_then(|p| p.resolve(parts, catalog)));
        }
        let alias = names::qualified(qualifier);
        match self.relations.iter().find(|r| r.alias == alias || r.table.as_deref() == Some(alias.as_str())) {
            Some(r) => r.table.clone().map(|t| (t, column.clone(), r.id)),
            None => self.parent.and_then(|p| p.resolve(parts, catalog)),
        }
    }
}

struct Walker<'c> {
    catalog: &'c dyn Catalog,
    /// Added to every line: the statement was parsed out of a larger text (a function body).
    line_offset: usize,
    uses: Vec<ColumnUse>,
    /// The parameter test of the optional filter the current term sits in (see [`ColumnUse::optional`]).
    optional: Option<String>,
    /// The current term sits under a NOT: `NOT (a = 1)` searches no index for `a`.
    negated: bool,
    /// Whether the current term is one alternative of an OR (see [`ColumnUse::alternative`]).
    alternative: bool,
    /// The relations on the nullable side of an outer join (see [`ColumnUse::outer`]).
    nullable: std::collections::BTreeSet<usize>,
    /// Relations numbered so far (see [`ColumnUse::relation`]).
    relations: usize,
}

fn position(expr: &Expr, line_offset: usize) -> Position {
    let span = expr.span();
    Position {
        line: span.start.line as usize + line_offset,
        column: span.start.column as usize,
        end_line: span.end.line as usize + line_offset,
        end_column: span.end.column as usize,
    }
}

fn column_parts(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        Expr::Identifier(i) => Some(vec![ident(i)]),
        Expr::CompoundIdentifier(parts) => Some(parts.iter().map(ident).collect()),
        _ => None,
    }
}

fn strip(mut expr: &Expr) -> &Expr {
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

fn wrap_kind(expr: &Expr) -> WrapKind {
    match expr {
        Expr::Function(f) => WrapKind::Function(names::last(&f.name)),
        Expr::Cast { .. } => WrapKind::Cast,
        Expr::AtTimeZone { .. } => WrapKind::AtTimeZone,
        Expr::Extract { .. } => WrapKind::Function("extract".into()),
        Expr::Collate { .. } => WrapKind::Collate,
        Expr::BinaryOp { .. } | Expr::UnaryOp { .. } => WrapKind::Arithmetic,
        _ => WrapKind::Other,
    }
}

/// Column references in an expression, not descending into subqueries.
fn columns_in(expr: &Expr, out: &mut Vec<Vec<String>>) {
    if let Some(parts) = column_parts(expr) {
        out.push(parts);
        return;
    }
    match expr {
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::In { target: ast::InTarget::Subquery(_), .. } => {}
        Expr::Function(f) => {
            if let ast::FunctionArguments::List(list) = &f.args {
                for arg in &list.args {
                    let (ast::FunctionArg::Unnamed(a)
                    | ast::FunctionArg::Named { arg: a, .. }
                    | ast::FunctionArg::ExprNamed { arg: a, .. }) = arg;
                    if let ast::FunctionArgExpr::Expr(e) = a {
                        columns_in(e, out);
                    }
                }
            }
        }
        Expr::Cast { expr, .. } | Expr::Collate { expr, .. } | Expr::Extract { expr, .. } | Expr::Nested(expr) => {
            columns_in(expr, out)
        }
        Expr::UnaryOp { expr, .. } => columns_in(expr, out),
        Expr::AtTimeZone { timestamp, time_zone } => {
            columns_in(timestamp, out);
            columns_in(time_zone, out);
        }
        Expr::BinaryOp { left, right, .. } => {
            columns_in(left, out);
            columns_in(right, out);
        }
        Expr::Case { operand, conditions, else_result, .. } => {
            if let Some(o) = operand {
                columns_in(o, out);
            }
            for c in conditions {
                columns_in(&c.condition, out);
                columns_in(&c.result, out);
            }
            if let Some(e) = else_result {
                columns_in(e, out);
            }
        }
        Expr::Tuple(items) => items.iter().for_each(|i| columns_in(i, out)),
        _ => {}
    }
}

/// `$1 IS NULL` (or `sqlc.narg(x)::text[] IS NULL`, a cast of the parameter), as written:
/// the test of an optional filter.
fn parameter_null_test(expr: &Expr) -> Option<String> {
    let Expr::IsNull(tested) = strip(expr) else { return None };
    let mut tested = strip(tested);
    while let Expr::Cast { expr, .. } = tested {
        tested = strip(expr);
    }
    matches!(tested, Expr::Value(v) if matches!(v.value, ast::Value::Placeholder(_))).then(|| strip(expr).to_string())
}

fn is_arithmetic(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
            | BinaryOperator::StringConcat
    )
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::PGLikeMatch
            | BinaryOperator::PGILikeMatch
            | BinaryOperator::PGRegexMatch
            | BinaryOperator::PGRegexIMatch
            | BinaryOperator::AtArrow
            | BinaryOperator::ArrowAt
            | BinaryOperator::Question
    )
}

impl Walker<'_> {
    fn statement(&mut self, statement: &ast::Statement) {
        let root = Scope { relations: Vec::new(), ctes: Vec::new(), parent: None };
        match statement {
            ast::Statement::Query(q) => self.query(q, &root),
            ast::Statement::CreateView(v) => self.query(&v.query, &root),
            // What runs is the statement inside.
            ast::Statement::Prepare { statement, .. } | ast::Statement::Explain { statement, .. } => {
                self.statement(statement)
            }
            ast::Statement::Insert(i) => {
                if let Some(source) = &i.source {
                    self.query(source, &root)
                }
            }
            ast::Statement::Update(u) => {
                let mut relations = Vec::new();
                let mut ons = Vec::new();
                self.from(std::slice::from_ref(&u.table), &root, &mut relations, &mut ons);
                if let Some(ast::UpdateTableFromKind::BeforeSet(f) | ast::UpdateTableFromKind::AfterSet(f)) = &u.from {
                    self.from(f, &root, &mut relations, &mut ons);
                }
                let scope = Scope { relations, ctes: Vec::new(), parent: None };
                for on in ons.iter().copied().chain(u.selection.iter()) {
                    self.predicate(on, &scope);
                }
            }
            ast::Statement::Delete(d) => {
                let (FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables)) = &d.from;
                let mut relations = Vec::new();
                let mut ons = Vec::new();
                self.from(tables, &root, &mut relations, &mut ons);
                if let Some(using) = &d.using {
                    self.from(using, &root, &mut relations, &mut ons);
                }
                let scope = Scope { relations, ctes: Vec::new(), parent: None };
                for on in ons.iter().copied().chain(d.selection.iter()) {
                    self.predicate(on, &scope);
                }
            }
            _ => {}
        }
    }

    fn query(&mut self, query: &Query, outer: &Scope) {
        // A subquery's own predicates are not under the NOT or in the OR around it
        // (`NOT EXISTS (…)`): its WHERE searches its own tables.
        let negated = std::mem::replace(&mut self.negated, false);
        let alternative = std::mem::replace(&mut self.alternative, false);
        self.query_body(query, outer);
        self.negated = negated;
        self.alternative = alternative;
    }

    fn query_body(&mut self, query: &Query, outer: &Scope) {
        let mut ctes = Vec::new();
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.query(&cte.query, outer);
                ctes.push(ident(&cte.alias.name));
            }
        }
        let scope = Scope { relations: Vec::new(), ctes, parent: Some(outer) };
        self.set_expr(&query.body, &scope);
    }

    fn set_expr(&mut self, body: &SetExpr, outer: &Scope) {
        // A UNION chain is a tree as deep as the chain is long: walk it with a stack of its own,
        // left branch first, not by recursion.
        let mut pending = vec![body];
        while let Some(body) = pending.pop() {
            match body {
                SetExpr::Select(select) => {
                    let mut relations = Vec::new();
                    let mut ons = Vec::new();
                    self.from(&select.from, outer, &mut relations, &mut ons);
                    let scope = Scope { relations, ctes: Vec::new(), parent: Some(outer) };
                    for on in ons.iter().copied().chain(select.selection.iter()) {
                        self.predicate(on, &scope);
                    }
                }
                SetExpr::Query(q) => self.query(q, outer),
                SetExpr::SetOperation { left, right, .. } => {
                    pending.push(right);
                    pending.push(left);
                }
                _ => {}
            }
        }
    }

    fn from<'a>(
        &mut self,
        from: &'a [TableWithJoins],
        outer: &Scope,
        relations: &mut Vec<Relation>,
        ons: &mut Vec<&'a Expr>,
    ) {
        for twj in from {
            let first = self.relations + 1;
            self.factor(&twj.relation, outer, relations, ons);
            for join in &twj.joins {
                let before = self.relations + 1;
                self.factor(&join.relation, outer, relations, ons);
                let (left, right) = (first..before, before..self.relations + 1);
                let nullable = match &join.join_operator {
                    JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => vec![right],
                    JoinOperator::Right(_) | JoinOperator::RightOuter(_) => vec![left],
                    JoinOperator::FullOuter(_) => vec![left, right],
                    _ => Vec::new(),
                };
                self.nullable.extend(nullable.into_iter().flatten());
                let constraint = match &join.join_operator {
                    JoinOperator::Join(c)
                    | JoinOperator::Inner(c)
                    | JoinOperator::Left(c)
                    | JoinOperator::LeftOuter(c)
                    | JoinOperator::Right(c)
                    | JoinOperator::RightOuter(c)
                    | JoinOperator::FullOuter(c)
                    | JoinOperator::Semi(c)
                    | JoinOperator::LeftSemi(c)
                    | JoinOperator::RightSemi(c)
                    | JoinOperator::Anti(c)
                    | JoinOperator::LeftAnti(c)
                    | JoinOperator::RightAnti(c) => Some(c),
                    _ => None,
                };
                if let Some(JoinConstraint::On(on)) = constraint {
                    ons.push(on);
                }
            }
        }
    }

    fn factor<'a>(
        &mut self,
        factor: &'a TableFactor,
        outer: &Scope,
        relations: &mut Vec<Relation>,
        ons: &mut Vec<&'a Expr>,
    ) {
        match factor {
            TableFactor::Table { name, alias, .. } => {
                let table = names::object(name);
                let alias_name = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| names::last(name));
                let is_cte = name.0.len() == 1 && outer.is_cte(&table);
                self.relations += 1;
                relations.push(Relation { alias: alias_name, table: (!is_cte).then_some(table), id: self.relations });
            }
            TableFactor::Derived { subquery, alias, .. } => {
                self.query(subquery, outer);
                self.relations += 1;
                relations.push(Relation {
                    alias: alias.as_ref().map(|a| ident(&a.name)).unwrap_or_default(),
                    table: None,
                    id: self.relations,
                });
            }
            TableFactor::NestedJoin { table_with_joins, .. } => {
                self.from(std::slice::from_ref(table_with_joins), outer, relations, ons);
            }
            _ => {}
        }
    }

    /// Walks AND/OR/NOT down to comparisons; looks into subqueries with this scope as parent.
    /// With a stack of its own, left to right: a WHERE of 50,000 terms is a tree that deep, and
    /// each term is looked at once.
    fn predicate(&mut self, expr: &Expr, scope: &Scope) {
        let outer = (self.optional.clone(), self.negated, self.alternative);
        let mut pending = vec![(expr, outer.0.clone(), outer.1, outer.2)];
        while let Some((expr, optional, negated, alternative)) = pending.pop() {
            match expr {
                Expr::Nested(e) => pending.push((e, optional, negated, alternative)),
                Expr::UnaryOp { op: UnaryOperator::Not, expr } => pending.push((expr, optional, !negated, alternative)),
                Expr::BinaryOp { left, op: BinaryOperator::Or, right } => {
                    let test = parameter_null_test(left).or_else(|| parameter_null_test(right));
                    // `$1 IS NULL OR x = $1` is no alternative in a plan made for the parameter's
                    // value (see [`ColumnUse::optional`]); `x = $1 OR y = $2` is.
                    let alternative = alternative || test.is_none();
                    let optional = test.or(optional);
                    pending.push((right, optional.clone(), negated, alternative));
                    pending.push((left, optional, negated, alternative));
                }
                Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
                    pending.push((right, optional.clone(), negated, alternative));
                    pending.push((left, optional, negated, alternative));
                }
                term => {
                    self.optional = optional;
                    self.negated = negated;
                    self.alternative = alternative;
                    self.term(term, scope);
                }
            }
        }
        (self.optional, self.negated, self.alternative) = outer;
    }

    /// One term of a predicate: a comparison, and the subqueries in it.
    fn term(&mut self, expr: &Expr, scope: &Scope) {
        use Comparison::{Equality, Other, Range};
        // Under NOT the columns are still compared (the query needs them), but no comparison of
        // them narrows an index search: `NOT (a = 1)`.
        let negated = self.negated;
        let narrowing = |comparison| if negated { Other } else { comparison };
        match expr {
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                let comparison = narrowing(match op {
                    BinaryOperator::Eq => Equality,
                    BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => Range,
                    _ => Other,
                });
                let first = self.uses.len();
                self.side(left, scope, comparison);
                let middle = self.uses.len();
                self.side(right, scope, comparison);
                self.against(first..middle, right, scope);
                self.against(middle..self.uses.len(), left, scope);
                if comparison == Equality {
                    self.join_partners(first, middle);
                }
            }
            Expr::Between { expr, negated: false, .. } => self.side(expr, scope, narrowing(Range)),
            Expr::In { expr, target, negated: not_in, .. } => {
                let comparison = if *not_in { Other } else { narrowing(Equality) };
                match target {
                    ast::InTarget::Subquery(subquery) => {
                        let first = self.uses.len();
                        self.side(expr, scope, comparison);
                        self.uses[first..].iter_mut().for_each(|u| u.against_columns = true);
                        self.query(subquery, scope);
                    }
                    _ => self.side(expr, scope, comparison),
                }
            }
            Expr::Between { expr, .. }
            | Expr::Like { expr, .. }
            | Expr::ILike { expr, .. }
            | Expr::SimilarTo { expr, .. } => self.side(expr, scope, Other),
            Expr::IsNull(e) => {
                let first = self.uses.len();
                self.side(e, scope, narrowing(Equality));
                self.uses[first..].iter_mut().for_each(|u| u.is_null = true);
            }
            Expr::IsNotNull(e) | Expr::IsTrue(e) | Expr::IsFalse(e) => self.side(e, scope, Other),
            Expr::AnyOp { left, compare_op: BinaryOperator::Eq, right, .. } => {
                let first = self.uses.len();
                self.side(left, scope, narrowing(Equality));
                self.against(first..self.uses.len(), right, scope);
            }
            Expr::AnyOp { left, .. } | Expr::AllOp { left, .. } => self.side(left, scope, Other),
            Expr::Exists { subquery, .. } | Expr::Subquery(subquery) => self.query(subquery, scope),
            _ => {}
        }
        // Subqueries on either side of a comparison (`x = (SELECT …)`).
        if !matches!(
            expr,
            Expr::Exists { .. } | Expr::Subquery(_) | Expr::In { target: ast::InTarget::Subquery(_), .. }
        ) {
            let _ = ast::visit_expressions(expr, |e| {
                if let Expr::Subquery(q) | Expr::Exists { subquery: q, .. } = e {
                    self.query(q, scope);
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
        }
    }

    /// Marks `uses[range]` as compared against `other` when it reads a column or is a subquery,
    /// and against its own row when every column `other` reads is of the use's relation.
    fn against(&mut self, range: std::ops::Range<usize>, other: &Expr, scope: &Scope) {
        let mut refs = Vec::new();
        columns_in(other, &mut refs);
        if refs.is_empty() && !matches!(strip(other), Expr::Subquery(_)) {
            return;
        }
        let relations: Option<Vec<usize>> = match strip(other) {
            Expr::Subquery(_) => None,
            _ => refs.iter().map(|parts| scope.resolve(parts, self.catalog).map(|(_, _, r)| r)).collect(),
        };
        for u in &mut self.uses[range] {
            u.against_columns = true;
            u.against_own_row = relations.as_ref().is_some_and(|r| !r.is_empty() && r.iter().all(|&r| r == u.relation));
        }
    }

    /// `left = right` with one bare column on each side (`uses[first..middle]` and
    /// `uses[middle..]`): each is the other's join partner.
    fn join_partners(&mut self, first: usize, middle: usize) {
        let bare = |uses: &[ColumnUse]| match uses {
            [only] if only.wrapped.is_none() => Some((only.table.clone(), only.column.clone())),
            _ => None,
        };
        if let (Some(left), Some(right)) = (bare(&self.uses[first..middle]), bare(&self.uses[middle..])) {
            self.uses[first].joined_to = Some(right);
            self.uses[middle].joined_to = Some(left);
        }
    }

    fn side(&mut self, side: &Expr, scope: &Scope, comparison: Comparison) {
        let side = self.without_transparent_casts(strip(side), scope);
        if let Expr::Tuple(items) = side {
            // A row comparison `(a, b) = (…)` is one per item for an equality; a row range
            // bounds only its first item.
            let each = if comparison == Comparison::Equality { comparison } else { Comparison::Other };
            for item in items {
                self.side(item, scope, each);
            }
            return;
        }
        if let Some(parts) = column_parts(side) {
            if let Some((table, column, relation)) = scope.resolve(&parts, self.catalog) {
                self.uses.push(ColumnUse {
                    table,
                    column,
                    wrapped: None,
                    position: position(side, self.line_offset),
                    optional: self.optional.clone(),
                    comparison,
                    joined_to: None,
                    against_columns: false,
                    relation,
                    alternative: self.alternative,
                    outer: false,
                    is_null: false,
                    against_own_row: false,
                });
            }
            return;
        }
        let mut refs = Vec::new();
        columns_in(side, &mut refs);
        if refs.is_empty() {
            return;
        }
        let kind = match side {
            Expr::BinaryOp { op, .. } if !is_arithmetic(op) => WrapKind::Other,
            other => wrap_kind(other),
        };
        let wrapping = Wrapping { kind, expression: expression(side), written: side.to_string() };
        for parts in refs {
            if let Some((table, column, relation)) = scope.resolve(&parts, self.catalog) {
                self.uses.push(ColumnUse {
                    table,
                    column,
                    wrapped: Some(wrapping.clone()),
                    position: position(side, self.line_offset),
                    optional: self.optional.clone(),
                    comparison,
                    joined_to: None,
                    against_columns: false,
                    relation,
                    alternative: self.alternative,
                    outer: false,
                    is_null: false,
                    against_own_row: false,
                });
            }
        }
    }
}

impl Walker<'_> {
    /// A column under casts that leave it as it is (see [`is_transparent_cast`]): the column.
    fn without_transparent_casts<'e>(&self, mut side: &'e Expr, scope: &Scope) -> &'e Expr {
        while let Expr::Cast { kind: ast::CastKind::Cast | ast::CastKind::DoubleColon, expr, data_type, .. } = side {
            let inner = strip(expr);
            let Some(parts) = column_parts(inner) else { break };
            let column_type =
                scope.resolve(&parts, self.catalog).and_then(|(t, c, _)| self.catalog.column_type(&t, &c));
            if !column_type.is_some_and(|column_type| is_transparent_cast(column_type, data_type)) {
                break;
            }
            side = inner;
        }
        side
    }
}

/// The columns compared in a statement's predicates. `line_offset` is added to every line
/// (for statements parsed out of a larger text, such as a function body).
pub fn predicate_uses(statement: &ast::Statement, catalog: &dyn Catalog, line_offset: usize) -> Vec<ColumnUse> {
    let mut walker = Walker {
        catalog,
        line_offset,
        uses: Vec::new(),
        optional: None,
        negated: false,
        alternative: false,
        nullable: Default::default(),
        relations: 0,
    };
    walker.statement(statement);
    let nullable = walker.nullable;
    let mut uses = walker.uses;
    uses.iter_mut().for_each(|u| u.outer = nullable.contains(&u.relation));
    uses
}

/// Every table, view or CTE name a statement names (FROM, JOIN, subqueries, DML targets),
/// normalized like schema names: what a change to those objects can affect.
pub fn relations(statement: &ast::Statement) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let _ = ast::visit_relations(statement, |name| {
        out.insert(names::object(name));
        std::ops::ControlFlow::<()>::Continue(())
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    struct Tables(&'static [(&'static str, &'static [&'static str])]);

    impl Catalog for Tables {
        fn has_column(&self, table: &str, column: &str) -> bool {
            self.0.iter().any(|(t, cols)| *t == table && cols.contains(&column))
        }

        fn column_type(&self, table: &str, column: &str) -> Option<&str> {
            self.has_column(table, column).then_some(match column {
                "email" => "text",
                "id" | "route_id" => "bigint",
                "created_at" => "timestamptz",
                _ => "text",
            })
        }
    }

    const SCHEMA: Tables = Tables(&[
        ("stop_times", &["route_id", "service_date", "departure_time", "service_timezone", "trip_id"]),
        ("trips", &["id", "route_id"]),
        ("users", &["id", "email", "created_at"]),
    ]);

    fn uses(sql: &str) -> Vec<ColumnUse> {
        let file = parse_file(sql.to_string());
        predicate_uses(file.statements[0].ast.as_deref().expect("parses"), &SCHEMA, 0)
    }

    fn wrapped(sql: &str) -> Vec<(String, String)> {
        uses(sql).into_iter().filter(|u| u.wrapped.is_some()).map(|u| (u.table, u.column)).collect()
    }

    #[test]
    fn finds_the_transit_incident_through_aliases() {
        let sql = "SELECT st.trip_id FROM stop_times st JOIN trips t ON t.id = st.trip_id
                   WHERE st.route_id = $1 AND convert_timezone(st.service_timezone, st.departure_time) BETWEEN $2 AND $3";
        let found = wrapped(sql);
        assert!(found.contains(&("stop_times".into(), "departure_time".into())), "{found:?}");
    }

    #[test]
    fn the_nullable_side_of_an_outer_join_is_marked() {
        let outer = |sql: &str| -> Vec<(String, bool)> {
            uses(sql).into_iter().map(|u| (format!("{}.{}", u.table, u.column), u.outer)).collect()
        };
        let on = "ON t.id = st.trip_id WHERE st.route_id = $1 AND u.id = $2";
        let users = "JOIN users u ON u.id = t.id";
        let left = outer(&format!("SELECT 1 FROM stop_times st LEFT JOIN trips t {on}"));
        assert!(left.contains(&("trips.id".into(), true)) && left.contains(&("stop_times.route_id".into(), false)));
        let right = outer(&format!("SELECT 1 FROM stop_times st {users} RIGHT JOIN trips t {on}"));
        assert!(right.contains(&("trips.id".into(), false)), "{right:?}");
        assert!(right.contains(&("stop_times.route_id".into(), true)) && right.contains(&("users.id".into(), true)));
        let full = outer(&format!("SELECT 1 FROM stop_times st FULL JOIN trips t {on}"));
        assert!(full.iter().all(|(_, outer)| *outer), "{full:?}");
        let inner = outer(&format!("SELECT 1 FROM stop_times st JOIN trips t {on}"));
        assert!(inner.iter().all(|(_, outer)| !*outer), "{inner:?}");
    }

    #[test]
    fn a_comparison_within_one_row_is_marked() {
        let own = |sql: &str| -> Vec<(String, bool)> {
            uses(sql).into_iter().map(|u| (format!("{}.{}", u.table, u.column), u.against_own_row)).collect()
        };
        let found = own("SELECT 1 FROM users WHERE id + 1 <= created_at AND email = $1");
        assert!(
            found.contains(&("users.id".into(), true)) && found.contains(&("users.email".into(), false)),
            "{found:?}"
        );
        let joined = own("SELECT 1 FROM users u JOIN trips t ON u.id = t.id + 1");
        assert!(joined.iter().all(|(_, own)| !*own), "{joined:?}");
        let aliases = own("SELECT 1 FROM users u JOIN users v ON u.id = v.id");
        assert!(aliases.iter().all(|(_, own)| !*own), "two relations of one table: {aliases:?}");
    }

    #[test]
    fn bare_columns_and_constant_sides_are_not_wrapped() {
        assert!(wrapped("SELECT 1 FROM users WHERE created_at > now() - interval '1 day'").is_empty());
        assert!(wrapped("SELECT 1 FROM stop_times WHERE departure_time BETWEEN $1 AND $2").is_empty());
    }

    #[test]
    fn resolves_in_ctes_subqueries_updates_and_deletes() {
        assert_eq!(wrapped("WITH x AS (SELECT id FROM users WHERE lower(email) = $1) SELECT * FROM x").len(), 1);
        assert_eq!(wrapped("SELECT 1 FROM trips WHERE id IN (SELECT id FROM users WHERE email::citext = $1)").len(), 1);
        assert_eq!(wrapped("UPDATE users SET email = 'x' WHERE created_at::date = $1").len(), 1);
        assert_eq!(wrapped("DELETE FROM users u WHERE u.created_at AT TIME ZONE 'UTC' < $1").len(), 1);
        assert_eq!(wrapped("SELECT 1 FROM users WHERE email COLLATE \"C\" = $1").len(), 1);
        assert_eq!(wrapped("SELECT 1 FROM users WHERE id + 1 = $1").len(), 1);
    }

    #[test]
    fn a_cast_that_leaves_the_column_as_it_is_does_not_wrap_it() {
        // PostgreSQL 15 plans each of these as the bare column (an Index Scan on its index).
        assert!(
            wrapped("SELECT 1 FROM users WHERE id::bigint = $1 AND CAST(created_at AS timestamptz) > $2").is_empty()
        );
        assert!(wrapped("SELECT 1 FROM users WHERE email::text = $1 AND email::varchar = $2").is_empty());
        // These compute a new value: a Seq Scan.
        assert_eq!(wrapped("SELECT 1 FROM users WHERE id::int = $1").len(), 1);
        assert_eq!(wrapped("SELECT 1 FROM users WHERE email::varchar(20) = $1").len(), 1);
        assert_eq!(wrapped("SELECT 1 FROM users WHERE created_at::date = $1").len(), 1);
    }

    #[test]
    fn casts_follow_postgresql() {
        let cast = |column: &str, target: &str| {
            let expr = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
                .try_with_sql(&format!("x::{target}"))
                .unwrap()
                .parse_expr()
                .unwrap();
            let Expr::Cast { data_type, .. } = expr else { panic!("{target}") };
            is_transparent_cast(column, &data_type)
        };
        assert!(cast("uuid", "uuid") && cast("character varying(100)", "text") && cast("text", "varchar"));
        assert!(cast("varchar(100)", "character varying(100)") && cast("varchar(100)", "varchar"));
        assert!(
            cast("character(8)", "bpchar") && cast("bigint", "int8") && cast("timestamptz", "timestamp with time zone")
        );
        assert!(!cast("varchar(100)", "varchar(50)") && !cast("character(8)", "char") && !cast("character(8)", "text"));
        assert!(!cast("bigint", "int") && !cast("uuid", "text") && !cast("timestamptz", "date"));
        assert!(!cast("text", "text[]") && !cast("timestamp(3)", "timestamp(6)"));
    }

    #[test]
    fn canonical_expressions_drop_what_postgresql_drops() {
        struct Varchar;
        impl Catalog for Varchar {
            fn has_column(&self, _: &str, column: &str) -> bool {
                column == "name"
            }
            fn column_type(&self, _: &str, column: &str) -> Option<&str> {
                (column == "name").then_some("character varying(100)")
            }
        }
        let canonical = |e: &str| canonical_expression(e, "users", &Varchar);
        assert_eq!(canonical("upper(name::text)"), "upper(name)");
        assert_eq!(canonical("upper(name)"), "upper(name)");
        assert_eq!(canonical("lower(name::varchar(10))"), "lower(name::varchar(10))");
        assert_eq!(canonical("lower(other::text)"), "lower(other::text)");
    }

    #[test]
    fn looks_inside_prepare_and_explain() {
        assert_eq!(wrapped("PREPARE q AS SELECT 1 FROM users WHERE lower(email) = $1").len(), 1);
        assert_eq!(wrapped("EXPLAIN SELECT 1 FROM users WHERE lower(email) = $1").len(), 1);
        assert_eq!(wrapped("EXPLAIN (ANALYZE, BUFFERS) DELETE FROM users WHERE created_at::date = $1").len(), 1);
    }

    #[test]
    fn marks_comparisons_behind_a_parameter_null_test() {
        let optional = |sql: &str| -> Vec<(String, Option<String>)> {
            uses(sql).into_iter().filter(|u| u.wrapped.is_some()).map(|u| (u.column, u.optional)).collect()
        };
        let sql = "SELECT 1 FROM users WHERE id = $1 AND ($2::text IS NULL OR lower(email) = $2)";
        assert_eq!(optional(sql), vec![("email".to_string(), Some("$2::TEXT IS NULL".to_string()))]);
        let sql = "SELECT 1 FROM users WHERE (lower(email) = $1 OR $1 IS NULL) AND created_at::date = $2";
        assert_eq!(
            optional(sql),
            vec![("email".to_string(), Some("$1 IS NULL".to_string())), ("created_at".to_string(), None)]
        );
        // A column tested for NULL is not a parameter: the filter is not optional.
        assert_eq!(optional("SELECT 1 FROM users WHERE email IS NULL OR lower(email) = $1")[0].1, None);
    }

    #[test]
    fn marks_what_an_index_can_search_for_each_bare_comparison() {
        let search = |sql: &str| -> Vec<(String, Comparison)> {
            uses(sql).into_iter().filter(|u| u.wrapped.is_none()).map(|u| (u.column.clone(), u.search())).collect()
        };
        let e = |c: &str| (c.to_string(), Comparison::Equality);
        let r = |c: &str| (c.to_string(), Comparison::Range);
        let n = |c: &str| (c.to_string(), Comparison::Other);
        assert_eq!(search("SELECT 1 FROM users WHERE id = $1 AND email IN ('a', 'b')"), [e("id"), e("email")]);
        assert_eq!(search("SELECT 1 FROM users WHERE created_at >= now() - interval '1 day'"), [r("created_at")]);
        assert_eq!(search("SELECT 1 FROM users WHERE id BETWEEN 1 AND $2 AND email = ANY($1)"), [r("id"), e("email")]);
        // A join condition, <>, LIKE, NOT and OR alternatives search nothing known before the scan.
        assert_eq!(search("SELECT 1 FROM users u JOIN trips t ON t.id = u.id"), [n("id"), n("id")]);
        assert_eq!(
            search("SELECT 1 FROM users WHERE email IS NULL AND id <> 1 AND email LIKE $1"),
            [e("email"), n("id"), n("email")]
        );
        assert_eq!(search("SELECT 1 FROM users WHERE NOT id = 1 OR email = $1"), [n("id"), n("email")]);
        // An optional filter's test is no alternative; a subquery's WHERE is its own.
        assert_eq!(search("SELECT 1 FROM users WHERE ($1::text IS NULL OR email = $1)"), [e("email")]);
        assert_eq!(
            search("SELECT 1 FROM users WHERE email = $1 OR id IN (SELECT id FROM trips WHERE route_id = $2)"),
            [n("email"), n("id"), e("route_id")]
        );
    }

    #[test]
    fn tells_two_aliases_of_a_table_apart() {
        let found =
            uses("SELECT 1 FROM users a JOIN users b ON b.email = a.email WHERE a.id = $1 AND lower(b.email) = $2");
        let relation = |alias_use: usize| found[alias_use].relation;
        // b.email, a.email, a.id, lower(b.email)
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(relation(0), relation(3));
        assert_eq!(relation(1), relation(2));
        assert_ne!(relation(0), relation(1));
    }

    #[test]
    fn a_cte_shadows_a_table_of_the_same_name() {
        assert!(wrapped("WITH users AS (SELECT 1 AS id) SELECT * FROM users WHERE id::text = '1'").is_empty());
    }

    #[test]
    fn lists_the_relations_a_statement_reads() {
        let file = parse_file("WITH x AS (SELECT 1 FROM public.Users) SELECT * FROM trips t JOIN \"Stop_Times\" s ON true WHERE t.id IN (SELECT id FROM audit.log)".into());
        let found = relations(file.statements[0].ast.as_deref().expect("parses"));
        assert_eq!(found.into_iter().collect::<Vec<_>>(), ["Stop_Times", "audit.log", "trips", "users"]);
    }

    #[test]
    fn reports_positions() {
        let found = uses("SELECT 1\nFROM users\nWHERE lower(email) = $1");
        assert_eq!((found[0].position.line, found[0].position.column), (3, 7));
    }
}

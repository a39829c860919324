//! The columns of a relation defined by a query (`CREATE TABLE … AS`, `SELECT … INTO`,
//! `CREATE MATERIALIZED VIEW`): their names as PostgreSQL gives them and their types, as
//! PostgreSQL resolves them for what Sluice can follow — copied columns (from tables, subqueries
//! in FROM and WITH, through joins), casts, literals, comparisons, aggregates (`max` keeps its
//! argument's type, `sum` of integers is `bigint`, `count` is `bigint`…), `CASE` and
//! `coalesce`, and the branches of a `UNION` (a common type of the integer family is the
//! widest). A type Sluice cannot follow is `unknown`, which no rule takes for a type.

use super::model::{ColumnInfo, Schema};
use crate::sql::from_ast::data_type;
use crate::sql::names::{self, ident, object};
use crate::sql::types::parse_type;
use sqlparser::ast::{self, BinaryOperator, Expr, SelectItem, SetExpr, TableFactor, UnaryOperator, Value};

/// The type of a column Sluice cannot follow.
pub const UNKNOWN: &str = "unknown";

/// A quoted literal or NULL, whose type PostgreSQL takes from what it meets (a UNION's other
/// branch, the other operand) and which is `text` when nothing decides (at a query's output,
/// PostgreSQL 10+).
const LITERAL: &str = "unknown literal";

/// The query a statement defines a relation with.
pub fn defining_query(statement: &ast::Statement) -> Option<&ast::Query> {
    match statement {
        ast::Statement::CreateTable(t) => t.query.as_deref(),
        ast::Statement::CreateView(v) => Some(&v.query),
        ast::Statement::Query(q) => Some(q),
        _ => None,
    }
}

/// The relations a query can read by name besides tables: its `WITH` queries.
type Ctes = Vec<(String, Vec<ColumnInfo>)>;

/// What a SELECT reads, by the name or alias the query uses for each, with its columns.
type Sources = Vec<(String, Vec<ColumnInfo>)>;

fn unknown(name: String) -> ColumnInfo {
    ColumnInfo {
        name,
        data_type: UNKNOWN.into(),
        not_null: false,
        has_default: false,
        generated: false,
        collation: None,
    }
}

/// A column as a query yields it: its type and collation, no constraint or default.
fn yielded(c: &ColumnInfo) -> ColumnInfo {
    ColumnInfo { not_null: false, has_default: false, generated: false, ..c.clone() }
}

fn sources(select: &ast::Select, schema: &Schema, ctes: &Ctes) -> Sources {
    let mut out = Vec::new();
    for from in &select.from {
        source(&from.relation, schema, ctes, &mut out);
        for join in &from.joins {
            source(&join.relation, schema, ctes, &mut out);
        }
    }
    out
}

fn source(factor: &TableFactor, schema: &Schema, ctes: &Ctes, out: &mut Sources) {
    match factor {
        TableFactor::Table { name, alias, .. } => {
            let table = object(name);
            let used = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| names::split(&table).1.to_string());
            let columns = match ctes.iter().find(|(n, _)| *n == table) {
                Some((_, columns)) => columns.clone(),
                None => schema.table(&table).map(|t| t.columns.iter().map(yielded).collect()).unwrap_or_default(),
            };
            out.push((used, renamed(columns, alias.as_ref())));
        }
        TableFactor::Derived { subquery, alias, .. } => {
            let columns = query_output(subquery, schema, ctes);
            let used = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_default();
            out.push((used, renamed(columns, alias.as_ref())));
        }
        TableFactor::NestedJoin { table_with_joins, .. } => {
            source(&table_with_joins.relation, schema, ctes, out);
            for join in &table_with_joins.joins {
                source(&join.relation, schema, ctes, out);
            }
        }
        _ => {}
    }
}

/// `AS s (a, b)` renames the columns of a source in order.
fn renamed(mut columns: Vec<ColumnInfo>, alias: Option<&ast::TableAlias>) -> Vec<ColumnInfo> {
    for (column, name) in columns.iter_mut().zip(alias.map(|a| a.columns.as_slice()).unwrap_or_default()) {
        column.name = ident(&name.name);
    }
    columns
}

/// The column an expression copies, if it is a plain column reference.
fn copied_column<'s>(expr: &Expr, sources: &'s Sources) -> Option<&'s ColumnInfo> {
    let (qualifier, column) = match expr {
        Expr::Identifier(i) => (None, ident(i)),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            (Some(ident(&parts[parts.len() - 2])), ident(parts.last()?))
        }
        Expr::Nested(inner) => return copied_column(inner, sources),
        _ => return None,
    };
    sources
        .iter()
        .filter(|(used, _)| qualifier.as_ref().is_none_or(|q| q == used))
        .find_map(|(_, columns)| columns.iter().find(|c| c.name == column))
}

const INTEGERS: &[&str] = &["smallint", "integer", "bigint", "numeric"];

/// The type PostgreSQL gives two types meeting in a UNION, an arithmetic operator or
/// `coalesce`, when Sluice knows it: the same type, or the wider of the integer family.
fn common(a: &str, b: &str) -> Option<String> {
    if a == b || b == LITERAL {
        return Some(a.to_string());
    }
    if a == LITERAL {
        return Some(b.to_string());
    }
    let (ta, tb) = (parse_type(a), parse_type(b));
    if ta == tb {
        return Some(a.to_string());
    }
    let rank = |t: &str| INTEGERS.iter().position(|i| *i == t);
    match (rank(&ta.base), rank(&tb.base)) {
        (Some(x), Some(y)) if ta.modifiers.is_empty() && tb.modifiers.is_empty() => {
            Some(INTEGERS[x.max(y)].to_string())
        }
        _ => None,
    }
}

/// The first type of `types` Sluice knows, made common with the others that it knows.
fn first_common(types: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    let mut known = types.into_iter().flatten().filter(|t| t != UNKNOWN);
    let first = known.next()?;
    known.try_fold(first, |acc, t| common(&acc, &t))
}

fn function_type(function: &ast::Function, sources: &Sources) -> Option<String> {
    let name = object(&function.name);
    let args: Vec<&Expr> = match &function.args {
        ast::FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e))
                | ast::FunctionArg::Named { arg: ast::FunctionArgExpr::Expr(e), .. } => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let arg_type = |i: usize| args.get(i).and_then(|e| expression_type(e, sources));
    let fixed = |t: &str| Some(t.to_string());
    match name.as_str() {
        "max" | "min" | "any_value" | "first_value" | "last_value" | "lag" | "lead" | "nth_value" => arg_type(0),
        "coalesce" | "nullif" | "greatest" | "least" => first_common((0..args.len()).map(arg_type)),
        "count" | "row_number" | "rank" | "dense_rank" | "ntile" => fixed("bigint"),
        "sum" => match parse_type(&arg_type(0)?).base.as_str() {
            "smallint" | "integer" => fixed("bigint"),
            "bigint" | "numeric" => fixed("numeric"),
            "float4" => fixed("real"),
            "float8" => fixed("double precision"),
            "interval" => fixed("interval"),
            _ => None,
        },
        "avg" => match parse_type(&arg_type(0)?).base.as_str() {
            "smallint" | "integer" | "bigint" | "numeric" => fixed("numeric"),
            "float4" | "float8" => fixed("double precision"),
            "interval" => fixed("interval"),
            _ => None,
        },
        "bool_and" | "bool_or" | "every" => fixed("boolean"),
        "array_agg" => arg_type(0).map(|t| format!("{t}[]")),
        "string_agg" | "lower" | "upper" | "trim" | "btrim" | "ltrim" | "rtrim" | "concat" | "concat_ws" | "substr"
        | "substring" | "replace" | "left" | "right" | "md5" | "to_char" | "format" | "initcap" | "lpad" | "rpad"
        | "repeat" | "reverse" | "split_part" | "translate" => fixed("text"),
        "length" | "char_length" | "character_length" | "octet_length" | "strpos" | "position" => fixed("integer"),
        "now" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" => fixed("timestamptz"),
        "date_trunc" => arg_type(1),
        "gen_random_uuid" | "uuid_generate_v4" => fixed("uuid"),
        _ => None,
    }
}

/// The type of an expression a query yields, when Sluice can follow it.
fn expression_type(expr: &Expr, sources: &Sources) -> Option<String> {
    if let Some(column) = copied_column(expr, sources) {
        return Some(column.data_type.clone()).filter(|t| t != UNKNOWN);
    }
    match expr {
        Expr::Nested(inner) => expression_type(inner, sources),
        Expr::Cast { data_type: t, .. } => Some(data_type(t)),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) if n.contains(['.', 'e', 'E']) => Some("numeric".into()),
            Value::Number(n, _) => Some(if n.parse::<i32>().is_ok() { "integer" } else { "bigint" }.into()),
            Value::Boolean(_) => Some("boolean".into()),
            Value::SingleQuotedString(_) | Value::DollarQuotedString(_) | Value::Null => Some(LITERAL.into()),
            _ => None,
        },
        Expr::BinaryOp { op, left, right } => match op {
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::And
            | BinaryOperator::Or => Some("boolean".into()),
            BinaryOperator::StringConcat => Some("text".into()),
            BinaryOperator::Plus | BinaryOperator::Minus | BinaryOperator::Multiply => {
                common(&expression_type(left, sources)?, &expression_type(right, sources)?)
            }
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Not, .. }
        | Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsTrue(_)
        | Expr::IsFalse(_)
        | Expr::IsNotTrue(_)
        | Expr::IsNotFalse(_)
        | Expr::IsDistinctFrom(..)
        | Expr::IsNotDistinctFrom(..)
        | Expr::In { .. }
        | Expr::AnyOp { .. }
        | Expr::AllOp { .. }
        | Expr::SimilarTo { .. }
        | Expr::Between { .. }
        | Expr::Like { .. }
        | Expr::ILike { .. }
        | Expr::Exists { .. } => Some("boolean".into()),
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => expression_type(expr, sources),
        Expr::Case { conditions, else_result, .. } => first_common(
            conditions
                .iter()
                .map(|c| expression_type(&c.result, sources))
                .chain(else_result.iter().map(|e| expression_type(e, sources))),
        ),
        Expr::Function(f) => function_type(f, sources),
        Expr::Substring { .. } | Expr::Trim { .. } | Expr::Overlay { .. } => Some("text".into()),
        Expr::Position { .. } => Some("integer".into()),
        Expr::TypedString(t) => Some(data_type(&t.data_type)),
        Expr::Collate { expr, .. } => expression_type(expr, sources),
        _ => None,
    }
}

/// One output column of a SELECT item that is an expression.
fn expression_column(expr: &Expr, name: String, sources: &Sources) -> ColumnInfo {
    let mut column = copied_column(expr, sources).map(yielded).unwrap_or_else(|| unknown(String::new()));
    column.name = name;
    if let Some(t) = expression_type(expr, sources) {
        column.data_type = t;
    }
    column
}

fn select_output(select: &ast::Select, schema: &Schema, ctes: &Ctes) -> Vec<ColumnInfo> {
    let sources = sources(select, schema, ctes);
    let mut columns = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                let name = copied_column(expr, &sources)
                    .map(|c| c.name.clone())
                    .or_else(|| names::index_column_name(expr))
                    .unwrap_or_else(|| "?column?".into());
                columns.push(expression_column(expr, name, &sources));
            }
            SelectItem::ExprWithAlias { expr, alias } => columns.push(expression_column(expr, ident(alias), &sources)),
            SelectItem::Wildcard(_) => columns.extend(sources.iter().flat_map(|(_, c)| c.iter().cloned())),
            SelectItem::QualifiedWildcard(kind, _) => {
                let qualifier = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => names::last(n),
                    ast::SelectItemQualifiedWildcardKind::Expr(_) => continue,
                };
                if let Some((_, c)) = sources.iter().find(|(used, _)| *used == qualifier) {
                    columns.extend(c.iter().cloned());
                }
            }
            SelectItem::ExprWithAliases { aliases, .. } => columns.extend(aliases.iter().map(|a| unknown(ident(a)))),
        }
    }
    columns
}

fn body_output(body: &SetExpr, schema: &Schema, ctes: &Ctes) -> Vec<ColumnInfo> {
    match body {
        SetExpr::Select(s) => select_output(s, schema, ctes),
        SetExpr::Query(q) => query_output(q, schema, ctes),
        // The names come from the first branch; each type is the branches' common type.
        SetExpr::SetOperation { left, right, .. } => {
            let mut columns = body_output(left, schema, ctes);
            let others = body_output(right, schema, ctes);
            for (column, other) in columns.iter_mut().zip(&others) {
                column.data_type = first_common([Some(column.data_type.clone()), Some(other.data_type.clone())])
                    .unwrap_or_else(|| UNKNOWN.into());
            }
            columns
        }
        _ => Vec::new(),
    }
}

fn query_output(query: &ast::Query, schema: &Schema, outer: &Ctes) -> Vec<ColumnInfo> {
    let mut ctes = outer.clone();
    for cte in query.with.iter().flat_map(|w| &w.cte_tables) {
        let columns = renamed(query_output(&cte.query, schema, &ctes), Some(&cte.alias));
        ctes.push((ident(&cte.alias.name), columns));
    }
    let mut columns = body_output(&query.body, schema, &ctes);
    for column in columns.iter_mut().filter(|c| c.data_type == LITERAL) {
        column.data_type = "text".into();
    }
    columns
}

/// The output columns of the query `statement` defines a relation with; `names` (a view's
/// column list) rename them in order.
pub fn query_columns(statement: &ast::Statement, schema: &Schema, names: &[String]) -> Vec<ColumnInfo> {
    let Some(query) = defining_query(statement) else {
        return names.iter().cloned().map(unknown).collect();
    };
    let mut columns = query_output(query, schema, &Vec::new());
    if columns.is_empty() {
        return names.iter().cloned().map(unknown).collect();
    }
    for (column, name) in columns.iter_mut().zip(names) {
        column.name = name.clone();
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    fn derived(history: &str, query: &str) -> Vec<(String, String)> {
        let mut schema = Schema::default();
        schema.apply_all(&parse_file(history.into()).statements, "m.sql", Some(0));
        let file = parse_file(query.into());
        let columns = query_columns(file.statements[0].ast.as_deref().expect("a query keeps its tree"), &schema, &[]);
        columns.into_iter().map(|c| (c.name, c.data_type)).collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect()
    }

    #[test]
    fn names_and_types_come_from_the_query() {
        let columns = derived(
            "CREATE TABLE users (id bigint, email text, created_at timestamp);",
            "CREATE TABLE t AS SELECT u.id, email AS address, lower(email), created_at::date, 1, 'x' AS note, f(id) FROM users u;",
        );
        assert_eq!(
            columns,
            pairs(&[
                ("id", "bigint"),
                ("address", "text"),
                ("lower", "text"),
                ("created_at", "date"),
                ("?column?", "integer"),
                ("note", "text"),
                ("f", "unknown"),
            ])
        );
    }

    /// Issue 37: 33 of one real history's 569 columns were `unknown`, all made by queries like
    /// this one (Lemmy's `smoosh-tables-together`), whose types PostgreSQL 15 resolves as here
    /// (read back from `pg_attribute` after running it).
    #[test]
    fn types_follow_subqueries_unions_aggregates_and_comparisons() {
        let history =
            "CREATE TABLE comment_like (person_id int, comment_id int, score smallint, published timestamptz);
            CREATE TABLE comment_saved (person_id int, comment_id int, published timestamptz);
            CREATE TABLE version_downloads (version_id int, downloads int, date date);";
        let actions = "CREATE TABLE comment_actions AS
            SELECT max(liked) AS liked, max(saved) AS saved, person_id, comment_id, max(like_score) = 1 AS vote_is_upvote
            FROM (SELECT person_id, comment_id, score AS like_score, published AS liked, NULL::timestamptz AS saved FROM comment_like
                  UNION ALL
                  SELECT person_id, comment_id, NULL::int, NULL::timestamptz, published FROM comment_saved) AS a
            GROUP BY person_id, comment_id;";
        assert_eq!(
            derived(history, actions),
            pairs(&[
                ("liked", "timestamptz"),
                ("saved", "timestamptz"),
                ("person_id", "int"),
                ("comment_id", "int"),
                ("vote_is_upvote", "boolean"),
            ])
        );
        let sums = "CREATE MATERIALIZED VIEW recent AS WITH v AS (SELECT version_id, downloads FROM version_downloads)
            SELECT version_id, sum(downloads) AS downloads, count(*) AS days, coalesce(max(downloads), 0) AS most FROM v GROUP BY version_id;";
        assert_eq!(
            derived(history, sums),
            pairs(&[("version_id", "int"), ("downloads", "bigint"), ("days", "bigint"), ("most", "int")])
        );
        let joined =
            "CREATE TABLE j AS SELECT l.person_id, s.published, CASE WHEN l.score > 0 THEN 'up' ELSE 'down' END AS vote
            FROM comment_like l JOIN comment_saved s ON s.person_id = l.person_id;";
        assert_eq!(
            derived(history, joined),
            pairs(&[("person_id", "int"), ("published", "timestamptz"), ("vote", "text")])
        );
    }
}

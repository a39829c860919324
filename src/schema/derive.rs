//! The columns of a relation defined by a query (`CREATE TABLE … AS`, `SELECT … INTO`,
//! `CREATE MATERIALIZED VIEW`): their names as PostgreSQL gives them and, where the query
//! copies a known column or casts, their types.

use super::model::{ColumnInfo, Schema};
use crate::sql::from_ast::data_type;
use crate::sql::names::{self, ident, object};
use sqlparser::ast::{self, Expr, SelectItem, SetExpr, TableFactor};

/// The query a statement defines a relation with.
pub fn defining_query(statement: &ast::Statement) -> Option<&ast::Query> {
    match statement {
        ast::Statement::CreateTable(t) => t.query.as_deref(),
        ast::Statement::CreateView(v) => Some(&v.query),
        ast::Statement::Query(q) => Some(q),
        _ => None,
    }
}

fn first_select(body: &SetExpr) -> Option<&ast::Select> {
    match body {
        SetExpr::Select(s) => Some(s),
        SetExpr::Query(q) => first_select(&q.body),
        SetExpr::SetOperation { left, .. } => first_select(left),
        _ => None,
    }
}

/// The relations a SELECT reads, by the name or alias the query uses for each.
fn sources(select: &ast::Select) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut add = |factor: &TableFactor| {
        if let TableFactor::Table { name, alias, .. } = factor {
            let table = object(name);
            let used = alias.as_ref().map(|a| ident(&a.name)).unwrap_or_else(|| names::split(&table).1.to_string());
            out.push((used, table));
        }
    };
    for from in &select.from {
        add(&from.relation);
        for join in &from.joins {
            add(&join.relation);
        }
    }
    out
}

fn unknown(name: String) -> ColumnInfo {
    ColumnInfo {
        name,
        data_type: "unknown".into(),
        not_null: false,
        has_default: false,
        generated: false,
        collation: None,
    }
}

/// The column an expression copies, with its type, if it is a plain column reference.
fn copied_column(expr: &Expr, sources: &[(String, String)], schema: &Schema) -> Option<ColumnInfo> {
    let (qualifier, column) = match expr {
        Expr::Identifier(i) => (None, ident(i)),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            (Some(ident(&parts[parts.len() - 2])), ident(parts.last()?))
        }
        Expr::Nested(inner) => return copied_column(inner, sources, schema),
        _ => return None,
    };
    sources
        .iter()
        .filter(|(used, _)| qualifier.as_ref().is_none_or(|q| q == used))
        .find_map(|(_, table)| schema.table(table)?.column(&column))
        .map(|c| ColumnInfo { not_null: false, has_default: false, generated: false, ..c.clone() })
}

/// The output columns of the query `statement` defines a relation with; `names` (a view's
/// column list) rename them in order.
pub fn query_columns(statement: &ast::Statement, schema: &Schema, names: &[String]) -> Vec<ColumnInfo> {
    let Some(select) = defining_query(statement).and_then(|q| first_select(&q.body)) else {
        return names.iter().cloned().map(unknown).collect();
    };
    let sources = sources(select);
    let mut columns = Vec::new();
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) => columns.push(copied_column(expr, &sources, schema).unwrap_or_else(|| {
                let mut column = unknown(names::index_column_name(expr).unwrap_or_else(|| "?column?".into()));
                if let Expr::Cast { data_type: t, .. } = expr {
                    column.data_type = data_type(t);
                }
                column
            })),
            SelectItem::ExprWithAlias { expr, alias } => {
                let mut column = copied_column(expr, &sources, schema).unwrap_or_else(|| unknown(String::new()));
                if let Expr::Cast { data_type: t, .. } = expr {
                    column.data_type = data_type(t);
                }
                column.name = ident(alias);
                columns.push(column);
            }
            SelectItem::Wildcard(_) => {
                for (_, table) in &sources {
                    if let Some(t) = schema.table(table) {
                        columns.extend(t.columns.iter().map(|c| ColumnInfo {
                            not_null: false,
                            has_default: false,
                            generated: false,
                            ..c.clone()
                        }));
                    }
                }
            }
            SelectItem::QualifiedWildcard(kind, _) => {
                let qualifier = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => names::last(n),
                    ast::SelectItemQualifiedWildcardKind::Expr(_) => continue,
                };
                if let Some(t) = sources.iter().find(|(used, _)| *used == qualifier).and_then(|(_, t)| schema.table(t))
                {
                    columns.extend(t.columns.iter().cloned());
                }
            }
            SelectItem::ExprWithAliases { aliases, .. } => columns.extend(aliases.iter().map(|a| unknown(ident(a)))),
        }
    }
    for (column, name) in columns.iter_mut().zip(names) {
        column.name = name.clone();
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::Origin;
    use crate::sql::parse::parse_file;

    #[test]
    fn names_and_types_come_from_the_query() {
        let mut schema = Schema::default();
        let base = parse_file("CREATE TABLE users (id bigint, email text, created_at timestamp);".into());
        schema.apply_all(&base.statements, "m.sql", Some(0));
        let file = parse_file(
            "CREATE TABLE t AS SELECT u.id, email AS address, lower(email), created_at::date, 1 FROM users u;".into(),
        );
        let columns = query_columns(file.statements[0].ast.as_deref().unwrap(), &schema, &[]);
        let described: Vec<(String, String)> = columns.into_iter().map(|c| (c.name, c.data_type)).collect();
        assert_eq!(
            described,
            [
                ("id".to_string(), "bigint".to_string()),
                ("address".into(), "text".into()),
                ("lower".into(), "unknown".into()),
                ("created_at".into(), "date".into()),
                ("?column?".into(), "unknown".into()),
            ]
        );
        let _ = Origin::default();
    }
}

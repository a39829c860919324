//! Normalizing names and expressions so that `Users.Email`, `users.email` and
//! `"users".email` compare equal, as PostgreSQL folds them.

use sqlparser::ast::{visit_expressions_mut, CastKind, Expr, Ident, ObjectName, ObjectNamePart};
use std::ops::ControlFlow;

/// PostgreSQL folds unquoted identifiers to lower case.
pub fn ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// `public.Users` → `users`; `audit.Log` → `audit.log`.
pub fn object(name: &ObjectName) -> String {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => ident(i),
            ObjectNamePart::Function(f) => ident(&f.name),
        })
        .collect();
    qualified(&parts)
}

/// Joins name parts, dropping the default `public` schema (and a database qualifier).
pub fn qualified(parts: &[String]) -> String {
    let parts = if parts.len() > 2 { &parts[parts.len() - 2..] } else { parts };
    match parts {
        [schema, name] if schema == "public" => name.clone(),
        _ => parts.join("."),
    }
}

/// The last part of a name: a column reference `o.site_id` → `site_id`.
pub fn last(name: &ObjectName) -> String {
    name.0
        .last()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => ident(i),
            ObjectNamePart::Function(f) => ident(&f.name),
        })
        .unwrap_or_default()
}

/// An expression in a canonical text form: qualifiers dropped, identifiers and function
/// names folded, casts written `::`, redundant parentheses removed, keywords lower case.
/// Two expressions PostgreSQL would treat as the same index expression normalize equal.
pub fn expression(expr: &Expr) -> String {
    let mut expr = strip_nesting(expr).clone();
    let _ = visit_expressions_mut(&mut expr, |e| {
        match e {
            Expr::CompoundIdentifier(parts) => {
                if let Some(last) = parts.last().cloned() {
                    *e = Expr::Identifier(Ident::new(ident(&last)));
                }
            }
            Expr::Identifier(i) => *i = Ident::new(ident(i)),
            Expr::Function(f) => {
                let name = object(&f.name);
                f.name = ObjectName::from(vec![Ident::new(name)]);
            }
            Expr::Cast { kind, .. } if *kind == CastKind::Cast => *kind = CastKind::DoubleColon,
            Expr::Nested(inner) => {
                let inner = (**inner).clone();
                *e = inner;
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    lowercase_outside_quotes(&expr.to_string())
}

fn strip_nesting(mut expr: &Expr) -> &Expr {
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// Lower-cases keywords and type names, leaving string literals and quoted identifiers alone.
pub fn lowercase_outside_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => out.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Collapses whitespace and lower-cases outside quotes: the fallback normal form for
/// expression text the parser could not read.
pub fn text(sql: &str) -> String {
    let collapsed = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    lowercase_outside_quotes(&collapsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn norm(sql: &str) -> String {
        let expr = Parser::new(&PostgreSqlDialect {}).try_with_sql(sql).unwrap().parse_expr().unwrap();
        expression(&expr)
    }

    #[test]
    fn qualifiers_case_casts_and_parentheses_do_not_matter() {
        assert_eq!(norm("LOWER(u.Email)"), norm("lower(email)"));
        assert_eq!(norm("CAST(created_at AS DATE)"), norm("created_at::date"));
        assert_eq!(norm("((lower(email)))"), "lower(email)");
        assert_ne!(norm("lower(email)"), norm("upper(email)"));
        assert_eq!(norm("x AT TIME ZONE 'UTC'"), "x at time zone 'UTC'");
    }

    #[test]
    fn names_fold_like_postgres() {
        let name = ObjectName::from(vec![Ident::new("public"), Ident::with_quote('"', "Users")]);
        assert_eq!(object(&name), "Users");
        let name = ObjectName::from(vec![Ident::new("Audit"), Ident::new("Log")]);
        assert_eq!(object(&name), "audit.log");
    }
}

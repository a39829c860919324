//! Names as PostgreSQL makes them: identifiers folded and truncated like its scanner does,
//! and the names it generates for unnamed indexes, constraints and sequences
//! (`makeObjectName`, `ChooseIndexNameAddition`, `ChooseIndexColumnNames` and
//! `FigureIndexColname` in `src/backend/commands/indexcmds.c` and `parser/parse_target.c`).
//! Also expressions normalized so that `Users.Email`, `users.email` and `"users".email`
//! compare equal.

use sqlparser::ast::{visit_expressions_mut, CastKind, DataType, Expr, Ident, ObjectName, ObjectNamePart};
use std::ops::ControlFlow;

/// PostgreSQL's `NAMEDATALEN`: identifiers hold at most `NAMEDATALEN - 1` bytes.
pub const NAMEDATALEN: usize = 64;

/// The longest prefix of `name` of at most `limit` bytes that ends on a character boundary
/// (`pg_mbcliplen`).
pub fn clip(name: &str, limit: usize) -> &str {
    if name.len() <= limit {
        return name;
    }
    let mut end = limit;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Identifiers longer than 63 bytes are truncated, at a character boundary, as PostgreSQL's
/// scanner does (`truncate_identifier`), for quoted and unquoted identifiers alike.
pub fn truncate(name: &str) -> String {
    clip(name, NAMEDATALEN - 1).to_string()
}

/// PostgreSQL folds unquoted identifiers to lower case (ASCII letters only: `downcase_identifier`
/// leaves multi-byte characters alone) and truncates every identifier to 63 bytes.
pub fn ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        truncate(&ident.value)
    } else {
        truncate(&ident.value.to_ascii_lowercase())
    }
}

/// Whether PostgreSQL needs `name` quoted to read it back as itself (`quote_identifier`, keywords
/// aside): anything but lower-case letters, digits, `_` and `$`, or a leading digit or `$`.
pub fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let plain_start = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    !(plain_start && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$'))
}

/// A name as SQL writes it: each part quoted when it needs to be (`"isPaused"`,
/// `app."Account"`), so that messages name what the migration names.
pub fn shown(name: &str) -> String {
    let quote = |part: &str| {
        if needs_quotes(part) {
            format!("\"{}\"", part.replace('"', "\"\""))
        } else {
            part.to_string()
        }
    };
    match split(name) {
        (Some(schema), rel) => format!("{}.{}", quote(schema), quote(rel)),
        (None, rel) => quote(rel),
    }
}

/// A qualified name split into its schema (`None` for the default `public`) and its own name.
pub fn split(name: &str) -> (Option<&str>, &str) {
    match name.rsplit_once('.') {
        Some((schema, rel)) => (Some(schema), rel),
        None => (None, name),
    }
}

/// `rel` in the schema of `sibling` (indexes, sequences and constraints live in their table's schema).
pub fn beside(sibling: &str, rel: &str) -> String {
    match split(sibling).0 {
        Some(schema) => format!("{schema}.{rel}"),
        None => rel.to_string(),
    }
}

/// `makeObjectName`: `name1_name2_label`, shortening the longer of `name1` and `name2` (never
/// the label) until it fits in 63 bytes, then clipping both to character boundaries.
pub fn make_object_name(name1: &str, name2: Option<&str>, label: Option<&str>) -> String {
    let mut overhead = 0;
    let mut name1_len = name1.len();
    let mut name2_len = 0;
    if let Some(name2) = name2 {
        name2_len = name2.len();
        overhead += 1;
    }
    if let Some(label) = label {
        overhead += label.len() + 1;
    }
    let available = (NAMEDATALEN - 1).saturating_sub(overhead);
    while name1_len + name2_len > available {
        if name1_len > name2_len {
            name1_len -= 1;
        } else {
            name2_len -= 1;
        }
    }
    let mut out = clip(name1, name1_len).to_string();
    if let Some(name2) = name2 {
        out.push('_');
        out.push_str(clip(name2, name2_len));
    }
    if let Some(label) = label {
        out.push('_');
        out.push_str(label);
    }
    out
}

/// `ChooseIndexNameAddition` (and `ChooseForeignKeyConstraintNameAddition`): the column names
/// joined by `_`, stopping once 64 bytes are reached (`makeObjectName` shortens it further).
pub fn name_addition(columns: &[String]) -> String {
    let mut out = String::new();
    for column in columns {
        if !out.is_empty() {
            out.push('_');
        }
        out.push_str(clip(column, NAMEDATALEN - 1));
        if out.len() >= NAMEDATALEN {
            break;
        }
    }
    out
}

/// `ChooseIndexColumnNames`: a repeated name gets a number (`lower`, `lower1`), clipped so the
/// result still fits in 63 bytes.
pub fn index_column_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for original in names {
        let mut current = original.clone();
        let mut i = 1;
        while out.contains(&current) {
            let suffix = i.to_string();
            current = format!("{}{suffix}", clip(original, NAMEDATALEN - 1 - suffix.len()));
            i += 1;
        }
        out.push(current);
    }
    out
}

/// The name PostgreSQL gives an index column for an expression (`FigureIndexColname`): a
/// column's name, a function's name, a cast's type when nothing better is inside, `case`,
/// `array`, `row`… `None` where PostgreSQL has none, and the caller uses `expr`.
pub fn index_column_name(expr: &Expr) -> Option<String> {
    figure_colname(expr).map(|(name, _)| name)
}

/// `FigureColnameInternal`: the name and its strength (2 = a real name, 1 = a fallback).
fn figure_colname(expr: &Expr) -> Option<(String, u8)> {
    let strong = |s: &str| Some((s.to_string(), 2));
    match expr {
        Expr::Identifier(i) => Some((ident(i), 2)),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| (ident(p), 2)),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure_colname(inner),
        Expr::Function(f) => Some((last(&f.name), 2)),
        // PostgreSQL 14+ turns these SQL-standard forms into calls of these functions.
        Expr::AtTimeZone { .. } => strong("timezone"),
        Expr::Extract { .. } => strong("extract"),
        Expr::Substring { .. } => strong("substring"),
        Expr::Position { .. } => strong("position"),
        Expr::Overlay { .. } => strong("overlay"),
        Expr::Trim { trim_where, .. } => strong(match trim_where {
            Some(sqlparser::ast::TrimWhereField::Leading) => "ltrim",
            Some(sqlparser::ast::TrimWhereField::Trailing) => "rtrim",
            _ => "btrim",
        }),
        Expr::Ceil { .. } => strong("ceil"),
        Expr::Floor { .. } => strong("floor"),
        Expr::Cast { expr: inner, data_type, .. } => match figure_colname(inner) {
            Some((name, 2)) => Some((name, 2)),
            _ => Some((type_name(data_type), 1)),
        },
        Expr::Case { .. } => Some(("case".into(), 1)),
        Expr::Array(_) => strong("array"),
        Expr::Tuple(_) => strong("row"),
        Expr::Exists { .. } => strong("exists"),
        _ => None,
    }
}

/// The last part of a type's internal name, as a cast's fallback column name uses it.
fn type_name(data_type: &DataType) -> String {
    type_parts(&data_type.to_string()).0
}

/// A type as written (`character varying(20)`, `INT`, `timestamp(3) with time zone`) → its
/// internal name and its modifiers and array brackets as written: (`varchar`, `(20)`).
pub fn type_parts(written: &str) -> (String, String) {
    let written = written.trim().to_ascii_lowercase();
    let cut = written.find(['(', '[']).unwrap_or(written.len());
    let (base, rest) = written.split_at(cut);
    // `timestamp(3) with time zone`: the modifier sits inside the name.
    let (base, modifier) = match rest.find(')') {
        Some(close) if rest.starts_with('(') && rest[close + 1..].trim_start().starts_with("with") => {
            (format!("{} {}", base.trim(), rest[close + 1..].trim()), rest[..=close].to_string())
        }
        _ => (base.trim().to_string(), rest.trim().to_string()),
    };
    let internal = match base.as_str() {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double precision" | "float" | "float8" => "float8",
        "boolean" | "bool" => "bool",
        "character varying" | "varchar" => "varchar",
        "character" | "char" | "bpchar" => "bpchar",
        "decimal" | "numeric" => "numeric",
        "timestamp with time zone" | "timestamptz" => "timestamptz",
        "timestamp without time zone" | "timestamp" => "timestamp",
        "time with time zone" | "timetz" => "timetz",
        "time without time zone" | "time" => "time",
        other => other.rsplit('.').next().unwrap_or(other).trim_matches('"'),
    };
    (internal.to_string(), modifier)
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

/// An identifier folded as PostgreSQL folds it, quoted again when the folded name needs it, so
/// that the normalized text keeps `"isPaused"` apart from `ispaused`.
fn normalized_ident(i: &Ident) -> Ident {
    let folded = ident(i);
    if needs_quotes(&folded) {
        Ident::with_quote('"', folded)
    } else {
        Ident::new(folded)
    }
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
                    *e = Expr::Identifier(normalized_ident(&last));
                }
            }
            Expr::Identifier(i) => *i = normalized_ident(i),
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
mod quoting_tests {
    use super::*;

    #[test]
    fn names_show_as_sql_writes_them() {
        assert_eq!(shown("Account"), "\"Account\"");
        assert_eq!(shown("audit.Events"), "audit.\"Events\"");
        assert_eq!(shown("post_2024"), "post_2024");
        assert_eq!(shown("2fa"), "\"2fa\"");
    }
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

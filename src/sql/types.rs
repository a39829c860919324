//! Column type changes PostgreSQL makes without rewriting the table, by version: the ALTER
//! TABLE notes ("if the USING clause does not change the column contents and the old type is
//! either binary coercible to the new type…"), the release notes that introduced each case (9.1,
//! 9.2, 12). `tests/postgres_names.rs` checks each case against `relfilenode` on a real server.

/// A type in a canonical spelling: base name, modifiers, array or not.
#[derive(Debug, PartialEq)]
pub struct Type {
    pub base: String,
    pub modifiers: Vec<u32>,
    pub array: bool,
}

pub fn parse_type(text: &str) -> Type {
    let mut text = text.trim().to_lowercase();
    let array = text.ends_with(']');
    if let Some(bracket) = text.find('[') {
        text.truncate(bracket);
    }
    let mut modifiers = Vec::new();
    if let (Some(open), Some(close)) = (text.find('('), text.find(')')) {
        modifiers = text[open + 1..close].split(',').filter_map(|m| m.trim().parse().ok()).collect();
        text = format!("{}{}", &text[..open], &text[close + 1..]);
    }
    let base = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let base = match base.as_str() {
        "character varying" | "varchar" => "varchar",
        "character" | "char" | "bpchar" => "char",
        "decimal" | "numeric" => "numeric",
        "int" | "integer" | "int4" => "integer",
        "int8" | "bigint" => "bigint",
        "int2" | "smallint" => "smallint",
        "bit varying" | "varbit" => "varbit",
        "timestamp with time zone" | "timestamptz" => "timestamptz",
        "timestamp without time zone" | "timestamp" => "timestamp",
        "time with time zone" | "timetz" => "timetz",
        "time without time zone" | "time" => "time",
        "double precision" | "float8" => "float8",
        "real" | "float4" => "float4",
        "bool" | "boolean" => "boolean",
        other => other,
    }
    .to_string();
    if base == "numeric" && modifiers.len() == 1 {
        modifiers.push(0);
    }
    Type { base, modifiers, array }
}

/// What an `ALTER COLUMN … TYPE` costs beyond the catalog update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cost {
    /// Only the catalog changes.
    Nothing,
    /// No rewrite, but the column's indexes are rebuilt under ACCESS EXCLUSIVE.
    IndexRebuild,
    /// Every row is rewritten and every index of the table rebuilt.
    Rewrite,
}

/// A type change PostgreSQL makes without rewriting the table.
pub struct Coercion {
    pub what: &'static str,
    /// First PostgreSQL major version with it.
    pub since: u32,
    /// Only in a session whose time zone is UTC.
    pub needs_utc: bool,
    pub cost: Cost,
    applies: fn(&Type, &Type) -> bool,
}

/// `to`'s limit is at least `from`'s, or `to` has none: the widening that needs no rewrite.
fn wider(from: &Type, to: &Type) -> bool {
    match (from.modifiers.as_slice(), to.modifiers.as_slice()) {
        (_, []) => true,
        ([], _) => false,
        ([n], [m]) => m >= n,
        ([p, s], [q, t]) => q >= p && s == t,
        _ => false,
    }
}

fn both(from: &Type, to: &Type, base: &str) -> bool {
    from.base == base && to.base == base
}

pub static COERCIONS: &[Coercion] = &[
    Coercion {
        what: "varchar(n) to varchar(m) with m ≥ n, or to unbounded varchar",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| both(f, t, "varchar") && wider(f, t),
    },
    Coercion {
        what: "varchar to text, or text to unbounded varchar",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| {
            (f.base == "varchar" && t.base == "text")
                || (f.base == "text" && t.base == "varchar" && t.modifiers.is_empty())
        },
    },
    Coercion {
        what: "numeric(p, s) to numeric(q, s) with q ≥ p, or to unconstrained numeric",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| both(f, t, "numeric") && wider(f, t),
    },
    Coercion {
        what: "varbit(n) to varbit(m) with m ≥ n, or to unbounded varbit",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| both(f, t, "varbit") && wider(f, t),
    },
    Coercion {
        what: "bit(n) to unbounded varbit",
        since: 9,
        needs_utc: false,
        cost: Cost::IndexRebuild,
        applies: |f, t| f.base == "bit" && t.base == "varbit" && t.modifiers.is_empty(),
    },
    Coercion {
        what: "timestamp, timestamptz, time, timetz or interval to a higher or unbounded precision",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| {
            ["timestamp", "timestamptz", "time", "timetz", "interval"].iter().any(|b| both(f, t, b)) && wider(f, t)
        },
    },
    Coercion {
        what: "cidr to inet",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| f.base == "cidr" && t.base == "inet",
    },
    Coercion {
        what: "xml to text",
        since: 9,
        needs_utc: false,
        cost: Cost::Nothing,
        applies: |f, t| f.base == "xml" && t.base == "text",
    },
    Coercion {
        what: "timestamp to timestamptz or back, in a session whose time zone is UTC",
        since: 12,
        needs_utc: true,
        cost: Cost::IndexRebuild,
        applies: |f, t| {
            matches!((f.base.as_str(), t.base.as_str()), ("timestamp", "timestamptz") | ("timestamptz", "timestamp"))
                && wider(f, t)
        },
    },
];

/// What changing `from` to `to` costs on `postgres_version`, in a session whose time zone is
/// UTC or not, and the case of [`COERCIONS`] that applied.
pub fn change_cost(from: &str, to: &str, postgres_version: u32, utc: bool) -> (Cost, Option<&'static Coercion>) {
    let (from, to) = (parse_type(from), parse_type(to));
    if from == to {
        return (Cost::Nothing, None);
    }
    if from.array || to.array {
        return (Cost::Rewrite, None);
    }
    COERCIONS
        .iter()
        .find(|c| c.since <= postgres_version && (!c.needs_utc || utc) && (c.applies)(&from, &to))
        .map_or((Cost::Rewrite, None), |c| (c.cost, Some(c)))
}

/// `timestamp` ↔ `timestamptz`: free on PostgreSQL 12+ in a UTC session.
pub fn is_timestamp_zone_change(from: &str, to: &str) -> bool {
    matches!(
        (parse_type(from).base.as_str(), parse_type(to).base.as_str()),
        ("timestamp", "timestamptz") | ("timestamptz", "timestamp")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row verified on PostgreSQL 15 by comparing `relfilenode` before and after (and the
    /// index's, for the rebuild column).
    #[test]
    fn the_coercion_table_by_version() {
        let cases: &[(&str, &str, u32, bool, Cost)] = &[
            ("varchar(10)", "varchar(20)", 15, false, Cost::Nothing),
            ("varchar(20)", "varchar(10)", 15, false, Cost::Rewrite),
            ("character varying(10)", "text", 15, false, Cost::Nothing),
            ("text", "varchar(10)", 15, false, Cost::Rewrite),
            ("char(3)", "text", 15, false, Cost::Rewrite),
            ("char(3)", "char(5)", 15, false, Cost::Rewrite),
            ("numeric(10, 2)", "numeric(12, 2)", 15, false, Cost::Nothing),
            ("numeric(10,2)", "numeric(12,4)", 15, false, Cost::Rewrite),
            ("numeric", "numeric(10,2)", 15, false, Cost::Rewrite),
            ("varbit(5)", "varbit(10)", 15, false, Cost::Nothing),
            ("bit(5)", "varbit", 15, false, Cost::IndexRebuild),
            ("bit(5)", "varbit(10)", 15, false, Cost::Rewrite),
            ("cidr", "inet", 15, false, Cost::Nothing),
            ("inet", "cidr", 15, false, Cost::Rewrite),
            ("xml", "text", 15, false, Cost::Nothing),
            ("timestamp(3)", "timestamp(6)", 15, false, Cost::Nothing),
            ("timestamp(6)", "timestamp(3)", 15, false, Cost::Rewrite),
            ("timestamp(3) with time zone", "timestamptz", 15, false, Cost::Nothing),
            ("interval(3)", "interval", 15, false, Cost::Nothing),
            ("timestamp", "timestamp with time zone", 15, false, Cost::Rewrite),
            ("timestamp", "timestamptz", 15, true, Cost::IndexRebuild),
            ("timestamptz", "timestamp", 15, true, Cost::IndexRebuild),
            ("timestamp", "timestamptz", 11, true, Cost::Rewrite),
            ("int", "bigint", 15, false, Cost::Rewrite),
            ("varchar(10)[]", "varchar(20)[]", 15, false, Cost::Rewrite),
            ("varchar(10)[]", "text[]", 15, false, Cost::Rewrite),
            ("integer[]", "int[]", 15, false, Cost::Nothing),
            ("varchar(10)", "varchar(20)", 8, false, Cost::Rewrite),
        ];
        for (from, to, version, utc, cost) in cases {
            assert_eq!(change_cost(from, to, *version, *utc).0, *cost, "{from} → {to} on {version}, utc {utc}");
        }
    }
}

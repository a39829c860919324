use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};

pub struct ChangeColumnType;

pub static META: RuleMeta = RuleMeta {
    id: "change-column-type",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ALTER COLUMN … TYPE rewrites the table (and its indexes) under ACCESS EXCLUSIVE",
    what: "Flags `ALTER COLUMN … TYPE` on an existing table, except the changes PostgreSQL documents as \
binary-coercible, which only touch the catalog: `varchar(n)` to `varchar(m)` with m ≥ n, to unbounded \
`varchar` or to `text`; `text` to unbounded `varchar`; `char(n)`/`varchar(n)` to `text`; `numeric(p, s)` to \
`numeric(q, s)` with q ≥ p, or to unconstrained `numeric`; `varbit(n)` to a wider `varbit`; `cidr` to `inet`; the \
same type again. A `USING` clause always counts as a rewrite. When the history does not show the old type, the \
rule fires (it cannot prove the change safe). Severity follows the table's size.",
    why: "A rewrite copies every row and rebuilds every index of the table while holding ACCESS EXCLUSIVE: an \
outage as long as the copy. Application code reading the old type may break too.",
    fix: "Add a new column of the new type, dual-write from the application (or a trigger), backfill in batches, \
switch reads, then drop the old column in a later release. For a wider `varchar`, just raise the limit, or use \
`text` with a `CHECK (length(col) <= n) NOT VALID` constraint.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id int PRIMARY KEY, note varchar(100));
-- migration: 002_bigint_ids.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN id TYPE bigint;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id int PRIMARY KEY, note varchar(100));
-- migration: 002_longer_notes.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN note TYPE varchar(500);",
    equivalents: "squawk: changing-column-type; strong_migrations: change_column; eugene: E5",
};

/// A type in a canonical spelling: base name and its modifiers.
#[derive(Debug, PartialEq)]
struct Type {
    base: String,
    modifiers: Vec<u32>,
}

fn parse_type(text: &str) -> Type {
    let text = text.trim().to_lowercase();
    let (base, modifiers) = match text.split_once('(') {
        Some((base, rest)) => {
            let inner = rest.split(')').next().unwrap_or("");
            (base.trim().to_string(), inner.split(',').filter_map(|m| m.trim().parse().ok()).collect())
        }
        None => (text.clone(), Vec::new()),
    };
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
        "double precision" | "float8" => "float8",
        "real" | "float4" => "float4",
        "bool" | "boolean" => "boolean",
        other => other,
    }
    .to_string();
    let mut modifiers = modifiers;
    if base == "numeric" && modifiers.len() == 1 {
        modifiers.push(0);
    }
    Type { base, modifiers }
}

/// Whether changing `from` to `to` only updates the catalog (no rewrite, no index rebuild).
pub fn is_binary_coercible(from: &str, to: &str) -> bool {
    let (from, to) = (parse_type(from), parse_type(to));
    if from == to {
        return true;
    }
    let widened = |strict_scale: bool| match (from.modifiers.as_slice(), to.modifiers.as_slice()) {
        (_, []) => true,
        ([], _) => false,
        ([n], [m]) => m >= n,
        ([p, s], [q, t]) => q >= p && (!strict_scale || s == t),
        _ => false,
    };
    match (from.base.as_str(), to.base.as_str()) {
        ("varchar", "varchar") | ("varbit", "varbit") => widened(false),
        ("varchar" | "char", "text") | ("cidr", "inet") | ("xml", "text") => true,
        ("text", "varchar") => to.modifiers.is_empty(),
        ("numeric", "numeric") => widened(true),
        _ => false,
    }
}

impl Rule for ChangeColumnType {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        for action in actions {
            let AlterAction::SetType { column, data_type, using } = action else {
                continue;
            };
            let old = cx.schema.table(table).and_then(|t| t.column(column)).map(|c| c.data_type.clone());
            let reason = match (&old, using) {
                (_, Some(using)) => format!("the USING expression ({using}) is evaluated for every row"),
                (Some(old), None) if is_binary_coercible(old, data_type) => continue,
                (Some(old), None) => format!("{old} → {data_type} is not binary-coercible"),
                (None, None) => format!(
                    "the migration history does not show the column's old type, so {data_type} cannot be proven safe"
                ),
            };
            let message = format!(
                "changing the type of {table}.{column} rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE: {reason}"
            );
            out.extend(
                cx.lock_finding(&META, table, message)
                    .map(|f| f.fact("old type", old.unwrap_or_else(|| "unknown".into()))),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    fn count(sql: &str) -> usize {
        let table = "CREATE TABLE t (id int, v varchar(20), n numeric(10, 2), c char(3), s text, ip cidr);";
        of(&lint_files(&[("001.sql", table), ("002.sql", sql)], ""), META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn binary_coercible_changes_pass() {
        for sql in [
            "ALTER TABLE t ALTER COLUMN v TYPE varchar(40);",
            "ALTER TABLE t ALTER COLUMN v TYPE character varying(20);",
            "ALTER TABLE t ALTER COLUMN v TYPE varchar;",
            "ALTER TABLE t ALTER COLUMN v TYPE text;",
            "ALTER TABLE t ALTER COLUMN c TYPE text;",
            "ALTER TABLE t ALTER COLUMN s TYPE varchar;",
            "ALTER TABLE t ALTER COLUMN n TYPE numeric(12, 2);",
            "ALTER TABLE t ALTER COLUMN n TYPE numeric;",
            "ALTER TABLE t ALTER COLUMN ip TYPE inet;",
            "ALTER TABLE t ALTER COLUMN id TYPE integer;",
        ] {
            assert_eq!(count(sql), 0, "{sql}");
        }
    }

    #[test]
    fn rewrites_are_flagged() {
        for sql in [
            "ALTER TABLE t ALTER COLUMN id TYPE bigint;",
            "ALTER TABLE t ALTER COLUMN v TYPE varchar(10);",
            "ALTER TABLE t ALTER COLUMN s TYPE varchar(10);",
            "ALTER TABLE t ALTER COLUMN n TYPE numeric(12, 4);",
            "ALTER TABLE t ALTER COLUMN n TYPE numeric(8, 2);",
            "ALTER TABLE t ALTER COLUMN v TYPE text USING trim(v);",
            "ALTER TABLE t ALTER COLUMN missing TYPE text;",
        ] {
            assert_eq!(count(sql), 1, "{sql}");
        }
        assert_eq!(count("CREATE TABLE u (a int); ALTER TABLE u ALTER COLUMN a TYPE bigint;"), 0);
    }
}

use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::context::is_utc;
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::types::{change_cost, is_timestamp_zone_change, Cost};

pub struct ChangeColumnType;

pub static META: RuleMeta = RuleMeta {
    id: "change-column-type",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ALTER COLUMN … TYPE rewrites the table (and its indexes) under ACCESS EXCLUSIVE",
    what: "Flags `ALTER COLUMN … TYPE` on an existing table, except the changes PostgreSQL makes without a \
rewrite (ALTER TABLE notes: binary-coercible types, and typmod changes its support functions prove safe), by \
PostgreSQL version (`postgres_version`): `varchar(n)` to `varchar(m)` with m ≥ n or to unbounded `varchar`; \
`varchar` to `text` and `text` to unbounded `varchar`; `numeric(p, s)` to `numeric(q, s)` with q ≥ p or to \
unconstrained `numeric`; `varbit(n)` to a wider `varbit`; `timestamp`/`timestamptz`/`time`/`timetz`/`interval` \
to a higher or unbounded precision; `cidr` to `inet`; `xml` to `text`; the same type again; and from PostgreSQL \
12, `timestamp` ↔ `timestamptz` when the migration sets the session time zone to UTC (`SET [LOCAL] timezone = \
'UTC'`). `char(n)` to `text` and array element changes do rewrite. Two of these (`timestamp` ↔ `timestamptz` in \
UTC, `bit(n)` to `varbit`) still rebuild the column's indexes under ACCESS EXCLUSIVE, which is flagged when the \
column has one. A `USING` clause counts as a rewrite unless it is the column itself (`USING col` or \
`USING col::new_type`). When the history does not show the old type, the rule fires (it cannot prove the change \
safe). Severity follows the table's size.",
    why: "A rewrite copies every row and rebuilds every index of the table while holding ACCESS EXCLUSIVE: an \
outage as long as the copy. Application code reading the old type may break too.",
    fix: "Add a new column of the new type, dual-write from the application (or a trigger), backfill in batches, \
switch reads, then drop the old column in a later release. For a wider `varchar`, just raise the limit, or use \
`text` with a `CHECK (length(col) <= n) NOT VALID` constraint. To move `timestamp` to `timestamptz` on \
PostgreSQL 12+, run `SET timezone = 'UTC'` first (the stored values are then read as UTC). Sources: PostgreSQL \
docs, ALTER TABLE, Notes; release notes 9.1 (varchar to text), 9.2 (typmod widening), 12 (timestamp ↔ \
timestamptz in UTC).",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id int PRIMARY KEY, note varchar(100));
-- migration: 002_bigint_ids.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN id TYPE bigint;",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id int PRIMARY KEY, note varchar(100), placed_at timestamp);
-- migration: 002_longer_notes.sql
SET lock_timeout = '5s';
ALTER TABLE orders ALTER COLUMN note TYPE varchar(500);
-- migration: 003_placed_at_with_time_zone.sql
SET lock_timeout = '5s';
SET timezone = 'UTC';
ALTER TABLE orders ALTER COLUMN placed_at TYPE timestamptz;",
    equivalents: "squawk: changing-column-type; strong_migrations: change_column; eugene: E5",
};

/// Whether changing `from` to `to` only updates the catalog (no rewrite, no index rebuild) on
/// PostgreSQL 15 outside a UTC session.
pub fn is_binary_coercible(from: &str, to: &str) -> bool {
    change_cost(from, to, 15, false).0 == Cost::Nothing
}

impl Rule for ChangeColumnType {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        let timezone = cx.migration().and_then(|s| s.timezone());
        let utc = timezone.is_some_and(is_utc);
        for action in actions {
            let AlterAction::SetType { column, data_type, using } = action else {
                continue;
            };
            let old = cx.schema.table(table).and_then(|t| t.column(column)).map(|c| c.data_type.clone());
            let reason = match (&old, using) {
                (_, Some(using)) => format!(
                    "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE: the USING expression ({using}) is evaluated for every row"
                ),
                (Some(old), None) => match change_cost(old, data_type, cx.facts.postgres_version, utc) {
                    (Cost::Nothing, _) => continue,
                    (Cost::IndexRebuild, coercion) => {
                        let indexes: Vec<String> =
                            cx.schema.indexes_on(table).filter(|i| i.reads_column(column)).map(|i| i.name.clone()).collect();
                        if indexes.is_empty() {
                            continue;
                        }
                        format!(
                            "does not rewrite the table ({}), but rebuilds {} under ACCESS EXCLUSIVE",
                            coercion.map_or("", |c| c.what),
                            indexes.join(", ")
                        )
                    }
                    (Cost::Rewrite, _) => {
                        let zone_hint = is_timestamp_zone_change(old, data_type) && cx.facts.postgres_version >= 12;
                        let mut why = format!(
                            "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE: {old} → {data_type} is not binary-coercible"
                        );
                        if zone_hint {
                            why.push_str(&match timezone {
                                Some(zone) => format!(" in the session time zone {zone}; it is under SET timezone = 'UTC'"),
                                None => " unless the session time zone is UTC (SET timezone = 'UTC' before it)".to_string(),
                            });
                        }
                        why
                    }
                },
                (None, None) => format!(
                    "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE unless the change is binary-coercible, and the migration history does not show the column's old type, so {data_type} cannot be proven safe"
                ),
            };
            let message = format!("changing the type of {table}.{column} {reason}");
            out.extend(cx.lock_finding(&META, table, message).map(|f| {
                let f = f.fact("old type", old.clone().unwrap_or_else(|| "unknown".into()));
                match timezone {
                    Some(zone) => f.fact("session time zone", zone),
                    None => f,
                }
            }));
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
            "ALTER TABLE t ALTER COLUMN v TYPE text USING v;",
            "ALTER TABLE t ALTER COLUMN v TYPE varchar(30) USING v::varchar(30);",
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
            "ALTER TABLE t ALTER COLUMN c TYPE text;",
        ] {
            assert_eq!(count(sql), 1, "{sql}");
        }
        assert_eq!(count("CREATE TABLE u (a int); ALTER TABLE u ALTER COLUMN a TYPE bigint;"), 0);
    }

    #[test]
    fn a_utc_session_makes_timestamp_to_timestamptz_free_unless_indexed() {
        let run = |sql: &str| {
            let found = lint_files(
                &[
                    ("001.sql", "CREATE TABLE e (at timestamp, seen timestamp); CREATE INDEX e_seen ON e (seen);"),
                    ("002.sql", sql),
                ],
                "",
            );
            of(&found, META.id).iter().map(|f| f.message.clone()).collect::<Vec<_>>()
        };
        assert!(run("SET timezone = 'UTC'; ALTER TABLE e ALTER COLUMN at TYPE timestamptz USING at;").is_empty());
        assert!(run("BEGIN; SET LOCAL TIME ZONE 'Etc/UTC'; ALTER TABLE e ALTER COLUMN at TYPE timestamptz; COMMIT;")
            .is_empty());
        let outside = run("ALTER TABLE e ALTER COLUMN at TYPE timestamptz;");
        assert!(outside[0].contains("SET timezone = 'UTC' before it"), "{outside:?}");
        let elsewhere = run("SET timezone = 'Europe/London'; ALTER TABLE e ALTER COLUMN at TYPE timestamptz;");
        assert!(elsewhere[0].contains("in the session time zone Europe/London"), "{elsewhere:?}");
        let reset = run("SET timezone = 'UTC'; RESET timezone; ALTER TABLE e ALTER COLUMN at TYPE timestamptz;");
        assert_eq!(reset.len(), 1);
        let indexed = run("SET timezone = 'UTC'; ALTER TABLE e ALTER COLUMN seen TYPE timestamptz;");
        assert!(
            indexed[0].contains("does not rewrite the table") && indexed[0].contains("rebuilds e_seen"),
            "{indexed:?}"
        );
    }
}

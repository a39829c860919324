use super::claims::{self, Work};
use super::locks::Lock;
use super::{work, Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::context::is_utc;
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};
use crate::sql::names::shown;
use crate::sql::types::{is_timestamp_zone_change, Cost};

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
`USING col::new_type`), or the column cast through types each step of which is binary-coercible (`USING \
col::varchar::text`; through `text` to an enum is a conversion, and rewrites). Without a rewrite, the indexes over \
an expression of the column or with a WHERE reading it are still built anew under ACCESS EXCLUSIVE, whatever the \
change, and so are its plain indexes when the collation changes (`COLLATE \"C\"`): flagged as the rebuilds they \
are (each case read off `relfilenode` on PostgreSQL 15: `varchar(10)` → `text` rebuilds an index on \
`lower(name)`). The column's old type comes from the history, through `ALTER TYPE … RENAME` and the columns of \
`CREATE TABLE … AS` (their types as PostgreSQL resolves them); when the history does not show it, the rule fires \
(it cannot prove the change safe). Severity follows the table's size.",
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
            let AlterAction::SetType { column, data_type, using, through, collation } = action else {
                continue;
            };
            let change = work::type_change(
                cx.schema,
                table,
                column,
                data_type,
                using.as_deref(),
                through,
                collation.as_deref(),
                cx.facts.postgres_version,
                utc,
            );
            let mut claims = vec![cx.claim_lock(table, Lock::AccessExclusive)];
            let reason = match (&change.old, using) {
                _ if change.cost == Cost::Nothing => continue,
                _ if change.cost == Cost::IndexRebuild => {
                    claims.extend(change.rebuilt.iter().map(|i| cx.claim_work(table, Work::Rebuild).on_index(i.as_str())));
                    let why = match change.coercion {
                        Some(c) if c.cost == Cost::IndexRebuild => c.what,
                        _ if change.collation_changes => "the column's collation changes",
                        _ => "an index over an expression of the column, or with a WHERE reading it, is built anew even when the values are kept as they are",
                    };
                    format!("does not rewrite the table ({why}), but rebuilds {} under ACCESS EXCLUSIVE", change.rebuilt.join(", "))
                }
                (_, Some(using)) => {
                    claims.push(cx.claim_work(table, Work::Rewrite));
                    format!(
                        "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE: the USING expression ({using}) is evaluated for every row"
                    )
                }
                (Some(old), None) => {
                    claims.push(cx.claim_work(table, Work::Rewrite));
                    let zone_hint = is_timestamp_zone_change(old, data_type) && cx.facts.postgres_version >= 12;
                    let path: Vec<&str> =
                        std::iter::once(old.as_str()).chain(through.iter().map(String::as_str)).chain([data_type.as_str()]).collect();
                    let mut why = format!(
                        "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE: {} is not binary-coercible",
                        path.join(" → ")
                    );
                    if zone_hint {
                        why.push_str(&match timezone {
                            Some(zone) => format!(" in the session time zone {zone}; it is under SET timezone = 'UTC'"),
                            None => " unless the session time zone is UTC (SET timezone = 'UTC' before it)".to_string(),
                        });
                    }
                    why
                }
                (None, None) => format!(
                    "rewrites the table and rebuilds its indexes under ACCESS EXCLUSIVE unless the change is binary-coercible, and the migration history does not show the column's old type, so {data_type} cannot be proven safe"
                ),
            };
            let message = format!("changing the type of {}.{} {reason}", shown(table), shown(column));
            let old = change.old;
            out.extend(cx.lock_finding(&META, table, message).map(|f| {
                let f = f.fact("old type", old.unwrap_or_else(|| "unknown".into()));
                let f = match timezone {
                    Some(zone) => f.fact("session time zone", zone),
                    None => f,
                };
                claims::add(f, claims)
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

    fn messages(history: &str, sql: &str) -> Vec<String> {
        let found = lint_files(&[("001.sql", history), ("002.sql", sql)], "");
        of(&found, META.id).iter().map(|f| f.message.clone()).collect()
    }

    /// Issue 37: which indexes a type change with no rewrite still builds anew, read off
    /// `relfilenode` on PostgreSQL 15: those over an expression of the column or with a WHERE
    /// reading it (whatever the change, even to the same type), and, when the collation changes,
    /// its plain ones too.
    #[test]
    fn a_change_without_a_rewrite_still_rebuilds_expression_and_partial_indexes() {
        let history = "CREATE TABLE v (id int PRIMARY KEY, name varchar(10), tag text);
            CREATE INDEX v_name ON v (name);
            CREATE INDEX v_lower ON v (lower(name));
            CREATE INDEX v_part ON v (id) WHERE name <> '';";
        let widened = messages(history, "ALTER TABLE v ALTER COLUMN name TYPE text;");
        assert_eq!(widened.len(), 1);
        assert!(
            widened[0].contains("does not rewrite the table")
                && widened[0].ends_with("but rebuilds v_lower, v_part under ACCESS EXCLUSIVE"),
            "{widened:?}"
        );
        let collated = messages(history, "ALTER TABLE v ALTER COLUMN name TYPE varchar(20) COLLATE \"C\";");
        assert!(
            collated[0].contains("collation changes") && collated[0].contains("rebuilds v_lower, v_name, v_part"),
            "{collated:?}"
        );
        assert!(messages(history, "ALTER TABLE v ALTER COLUMN tag TYPE varchar;").is_empty(), "no index reads tag");
        let same = messages(history, "ALTER TABLE v ALTER COLUMN id TYPE int;");
        assert!(same[0].ends_with("rebuilds v_part under ACCESS EXCLUSIVE"), "{same:?}");
        // A column declared with its collation keeps it when the change names it again.
        let c = "CREATE TABLE w (name varchar(10) COLLATE \"C\"); CREATE INDEX w_name ON w (name);";
        assert!(messages(c, "ALTER TABLE w ALTER COLUMN name TYPE varchar(20) COLLATE \"C\";").is_empty());
        assert_eq!(
            messages(c, "ALTER TABLE w ALTER COLUMN name TYPE varchar(20);").len(),
            1,
            "back to the default collation"
        );
    }

    /// Issue 37: a USING clause that converts through another type is a conversion of its own,
    /// evaluated for every row (one real history renames an enum type and converts through text;
    /// PostgreSQL rewrote the table and its 12 indexes).
    #[test]
    fn a_conversion_through_another_type_rewrites() {
        let history = "CREATE TYPE mode AS ENUM ('a', 'b'); CREATE TABLE t (m mode, n int); CREATE INDEX t_m ON t (m);";
        let sql = "ALTER TYPE mode RENAME TO mode__;\nCREATE TYPE mode AS ENUM ('a', 'b', 'c');\nALTER TABLE t ALTER COLUMN m TYPE mode USING m::text::mode;";
        let found = messages(history, sql);
        assert!(found.len() == 1 && found[0].contains("rewrites the table and rebuilds its indexes"), "{found:?}");
        assert!(messages(history, "ALTER TABLE t ALTER COLUMN n TYPE int USING n::int;").is_empty());
        let free = "CREATE TABLE u (s varchar(10)); CREATE INDEX u_s ON u (s);";
        assert!(
            messages(free, "ALTER TABLE u ALTER COLUMN s TYPE text USING s::varchar::text;").is_empty(),
            "each step is free"
        );
        // The column follows its type's rename: the new type of the old name is another type.
        let renamed = "ALTER TYPE mode RENAME TO mode__;\nCREATE TYPE mode AS ENUM ('a', 'b', 'c');\nALTER TABLE t ALTER COLUMN m TYPE mode;";
        assert!(
            messages(history, renamed)[0].contains("mode__ → mode is not binary-coercible"),
            "{:?}",
            messages(history, renamed)
        );
        assert_eq!(messages(history, "ALTER TABLE t ALTER COLUMN n TYPE bigint USING n::int::bigint;").len(), 1);
    }

    /// Issue 37: a column a query made keeps the type PostgreSQL gives it, and a column of a type
    /// Sluice cannot follow is of unknown type, not of a type named "unknown".
    #[test]
    fn columns_made_by_queries_have_their_types() {
        let history = "CREATE TABLE likes (person_id int, score smallint, published timestamptz);
            CREATE TABLE a AS SELECT person_id, max(published) AS at, sum(score) AS total, f(score) AS mystery FROM likes GROUP BY person_id;";
        assert!(messages(history, "ALTER TABLE a ALTER COLUMN at TYPE timestamptz;").is_empty());
        assert!(messages(history, "ALTER TABLE a ALTER COLUMN total TYPE bigint;").is_empty());
        assert_eq!(messages(history, "ALTER TABLE a ALTER COLUMN total TYPE int;").len(), 1);
        let unknown = messages(history, "ALTER TABLE a ALTER COLUMN mystery TYPE text;");
        assert!(unknown[0].contains("the migration history does not show the column's old type"), "{unknown:?}");
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

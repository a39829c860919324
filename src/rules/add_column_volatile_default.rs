use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Column, Ddl};

pub struct AddColumnVolatileDefault;

pub static META: RuleMeta = RuleMeta {
    id: "add-column-volatile-default",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ADD COLUMN with a default that rewrites the whole table under ACCESS EXCLUSIVE",
    what: "Flags `ALTER TABLE … ADD COLUMN` on an existing table when the new column forces a table rewrite: a \
volatile default (`random()`, `clock_timestamp()`, `gen_random_uuid()`, `uuid_generate_v4()`, `nextval()`…), \
`GENERATED ALWAYS AS (…) STORED`, a `serial`/`bigserial` or identity column, or — before PostgreSQL 11 \
(`postgres_version` in `sluice.toml`) — any non-NULL default. From PostgreSQL 11 on, a constant or stable \
default (`0`, `'pending'`, `now()`) is stored in the catalog and not flagged.",
    why: "The rewrite copies every row while holding ACCESS EXCLUSIVE: no reads, no writes, for as long as the \
copy takes, and twice the table's disk space meanwhile.",
    fix: "Add the column without the default (or with a constant one), set the default for new rows with \
`ALTER COLUMN … SET DEFAULT`, then backfill existing rows in batches. For identity keys on a big table, add a \
nullable column, backfill, and build the constraint concurrently.",
    bad: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, payload jsonb);
-- migration: 002_event_uuid.sql
SET lock_timeout = '5s';
ALTER TABLE events ADD COLUMN public_id uuid DEFAULT gen_random_uuid();",
    good: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, payload jsonb);
-- migration: 002_event_uuid.sql
SET lock_timeout = '5s';
ALTER TABLE events ADD COLUMN public_id uuid;
ALTER TABLE events ALTER COLUMN public_id SET DEFAULT gen_random_uuid();
-- migration: 003_backfill_event_uuid.sql
SET statement_timeout = '60s';
UPDATE events SET public_id = gen_random_uuid() WHERE id BETWEEN 1 AND 10000 AND public_id IS NULL;",
    equivalents: "squawk: adding-field-with-default, adding-serial-primary-key-field; strong_migrations: add_column_default, add_column_generated_stored; eugene: E11",
};

/// Why adding `column` rewrites the table on this PostgreSQL version, if it does.
pub fn rewrite_reason(column: &Column, postgres_version: u32) -> Option<String> {
    if column.generated_stored {
        return Some("a GENERATED … STORED column is computed for every row".into());
    }
    if column.identity {
        return Some(format!(
            "a {} column fills every row from a sequence",
            if column.data_type.contains("serial") { &column.data_type } else { "identity" }
        ));
    }
    let default = column.default.as_ref().filter(|d| !d.expression.eq_ignore_ascii_case("null"))?;
    if default.volatile {
        return Some(format!("the volatile default {} is evaluated for every row", default.expression));
    }
    (postgres_version < 11)
        .then(|| format!("before PostgreSQL 11 any default ({}) is written into every row", default.expression))
}

impl Rule for AddColumnVolatileDefault {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Ddl::AlterTable { table, actions, .. } = &cx.statement.ddl else {
            return;
        };
        for action in actions {
            let AlterAction::AddColumn { column, .. } = action else {
                continue;
            };
            let Some(reason) = rewrite_reason(column, cx.facts.postgres_version) else {
                continue;
            };
            let message = format!(
                "adding column {} to existing table {table} rewrites the table under ACCESS EXCLUSIVE: {reason}",
                column.name
            );
            out.extend(
                cx.lock_finding(&META, table, message)
                    .map(|f| f.fact("postgres version", cx.facts.postgres_version.to_string())),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, of, Setup};

    fn count(sql: &str, version: u32) -> usize {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (id bigint);"), ("002.sql", sql)],
            &Setup { postgres_version: Some(version), ..Setup::default() },
        );
        of(&found, META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn volatile_generated_and_serial_defaults_rewrite() {
        for sql in [
            "ALTER TABLE t ADD COLUMN r float8 DEFAULT random();",
            "ALTER TABLE t ADD COLUMN c timestamptz NOT NULL DEFAULT clock_timestamp();",
            "ALTER TABLE t ADD COLUMN g bigint GENERATED ALWAYS AS (id * 2) STORED;",
            "ALTER TABLE t ADD COLUMN s bigserial;",
            "ALTER TABLE t ADD COLUMN i bigint GENERATED ALWAYS AS IDENTITY;",
        ] {
            assert_eq!(count(sql, 15), 1, "{sql}");
        }
    }

    #[test]
    fn constant_defaults_depend_on_the_postgres_version() {
        let sql = "ALTER TABLE t ADD COLUMN status text NOT NULL DEFAULT 'new';";
        assert_eq!(count(sql, 11), 0);
        assert_eq!(count(sql, 10), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN at timestamptz DEFAULT now();", 15), 0, "now() is stable");
        assert_eq!(count("ALTER TABLE t ADD COLUMN n text DEFAULT NULL;", 10), 0, "a NULL default never rewrites");
        assert_eq!(count("CREATE TABLE u (id bigint); ALTER TABLE u ADD COLUMN r float8 DEFAULT random();", 15), 0);
    }
}

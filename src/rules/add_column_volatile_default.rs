use super::claims::{self, Work};
use super::locks::Lock;
use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::Schema;
use crate::sql::catalog;
use crate::sql::ddl::{AlterAction, Column, Ddl, Default, Volatility};
use crate::sql::from_ast::is_builtin_volatile;
use crate::sql::names::shown;

pub struct AddColumnVolatileDefault;

pub static META: RuleMeta = RuleMeta {
    id: "add-column-volatile-default",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "ADD COLUMN with a default that rewrites the whole table under ACCESS EXCLUSIVE",
    what: "Flags `ALTER TABLE … ADD COLUMN` on an existing table when the new column forces a table rewrite: a \
volatile default, `GENERATED ALWAYS AS (…) STORED`, a `serial`/`bigserial` or identity column, or — before \
PostgreSQL 11 (`postgres_version` in `sluice.toml`) — any non-NULL default. A default is volatile when it calls \
a function PostgreSQL's catalogue marks VOLATILE (`random()`, `clock_timestamp()`, `gen_random_uuid()`, \
`nextval()`…; Sluice carries PostgreSQL 15's `pg_proc` volatilities), a function an extension the history \
creates installs as VOLATILE (`uuid_generate_v4()` of uuid-ossp; the volatilities of what pg_trgm, pgcrypto, \
ltree, uuid-ossp, citext, btree_gist, btree_gin, pg_stat_statements, hstore, fuzzystrmatch, unaccent, cube, \
earthdistance, intarray, tablefunc and PostGIS 3.3 install were read from `pg_proc` after `CREATE EXTENSION` on \
PostgreSQL 15, so `text2ltree('0')` is the IMMUTABLE function it is), or a function the migration history \
creates with `CREATE [OR REPLACE] FUNCTION` declaring `VOLATILE` or no volatility at all (PostgreSQL's default). \
A function neither built in, nor installed by an extension the history created, nor created by the history is \
assumed volatile, and the message says so. From PostgreSQL 11 on, a constant, IMMUTABLE or \
STABLE default (`0`, `'pending'`, `now()`, a user function declared `STABLE`) is stored in the catalog and not \
flagged.",
    why: "The rewrite copies every row while holding ACCESS EXCLUSIVE: no reads, no writes, for as long as the \
copy takes, and twice the table's disk space meanwhile.",
    fix: "Add the column without the default (or with a constant one), set the default for new rows with \
`ALTER COLUMN … SET DEFAULT`, then backfill existing rows in batches. For identity keys on a big table, add a \
nullable column, backfill, and build the constraint concurrently.",
    bad: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, payload jsonb);
CREATE FUNCTION random_shard() RETURNS smallint LANGUAGE sql AS $$ SELECT (random() * 16)::smallint $$;
-- migration: 002_event_uuid.sql
SET lock_timeout = '5s';
ALTER TABLE events ADD COLUMN public_id uuid DEFAULT gen_random_uuid();
ALTER TABLE events ADD COLUMN shard smallint NOT NULL DEFAULT random_shard();",
    good: "\
-- migration: 001_events.sql
CREATE TABLE events (id bigint PRIMARY KEY, payload jsonb);
CREATE FUNCTION default_region() RETURNS text STABLE LANGUAGE sql AS $$ SELECT 'eu' $$;
-- migration: 002_event_uuid.sql
SET lock_timeout = '5s';
ALTER TABLE events ADD COLUMN public_id uuid;
ALTER TABLE events ALTER COLUMN public_id SET DEFAULT gen_random_uuid();
ALTER TABLE events ADD COLUMN region text NOT NULL DEFAULT default_region();
-- migration: 003_backfill_event_uuid.sql
SET statement_timeout = '60s';
UPDATE events SET public_id = gen_random_uuid() WHERE id BETWEEN 1 AND 10000 AND public_id IS NULL;",
    equivalents: "squawk: adding-field-with-default, adding-serial-primary-key-field; strong_migrations: add_column_default, add_column_generated_stored; eugene: E11",
};

/// Why a default is volatile — the first function it calls that is, with where that verdict
/// comes from — or `None` when it is not.
pub fn volatile_call(default: &Default, schema: &Schema) -> Option<String> {
    default.functions.iter().find_map(|function| {
        let bare = function.strip_prefix("pg_catalog.").unwrap_or(function);
        match schema.function_volatility(function) {
            Some(Volatility::Volatile) => {
                let origin = &schema.functions[function].origin;
                return Some(format!(
                    "it calls {function}(), which {}:{} creates as VOLATILE (the default when none is declared)",
                    origin.file, origin.line
                ));
            }
            Some(_) => return None,
            None => {}
        }
        match schema.extension_function(function) {
            Some((extension, Volatility::Volatile)) => {
                return Some(format!("it calls {bare}(), which extension {extension} installs as VOLATILE"))
            }
            Some(_) => return None,
            None => {}
        }
        if is_builtin_volatile(function) {
            Some(format!("it calls {bare}(), which PostgreSQL marks VOLATILE"))
        } else if catalog::volatility(bare).is_some() || catalog::SQL_VALUE_FUNCTIONS.contains(&bare) {
            None
        } else {
            Some(format!(
                "it calls {function}(), which is neither built in nor created by the migration history, so Sluice assumes it is VOLATILE"
            ))
        }
    })
}

/// Why adding `column` rewrites the table on this PostgreSQL version, if it does, with the
/// volatility of the functions `schema` knows.
pub fn rewrite_reason_in(column: &Column, schema: &Schema, postgres_version: u32) -> Option<String> {
    if column.generated_stored {
        return Some("a GENERATED … STORED column is computed for every row".into());
    }
    if column.serial {
        return Some(format!(
            "a serial column ({} with a sequence default) fills every row from its sequence",
            column.data_type
        ));
    }
    if column.identity {
        return Some("an identity column fills every row from its sequence".into());
    }
    let default = column.default.as_ref().filter(|d| !d.expression.eq_ignore_ascii_case("null"))?;
    if let Some(why) = volatile_call(default, schema) {
        return Some(format!("the default {} is evaluated for every row: {why}", default.expression));
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
            let Some(reason) = rewrite_reason_in(column, cx.schema, cx.facts.postgres_version) else {
                continue;
            };
            let message = format!(
                "adding column {} to existing table {} rewrites the table under ACCESS EXCLUSIVE: {reason}",
                shown(&column.name),
                shown(table)
            );
            let claims = [cx.claim_lock(table, Lock::AccessExclusive), cx.claim_work(table, Work::Rewrite)];
            out.extend(
                cx.lock_finding(&META, table, message)
                    .map(|f| claims::add(f.fact("postgres version", cx.facts.postgres_version.to_string()), claims)),
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
        assert_eq!(count("ALTER TABLE t ADD COLUMN at timestamptz DEFAULT CURRENT_TIMESTAMP;", 15), 0);
    }

    /// Issue 37: `DEFAULT text2ltree('0')` was a false rewrite error; the volatility of what
    /// `CREATE EXTENSION` installs comes from PostgreSQL 15's `pg_proc` (`sql::catalog`).
    #[test]
    fn functions_of_the_extensions_the_history_created_have_their_real_volatility() {
        let messages = |history: &str, column: &str| {
            let found = lint_with(
                &[("001.sql", history), ("002.sql", &format!("ALTER TABLE t ADD COLUMN {column};"))],
                &Setup::default(),
            );
            of(&found, META.id).iter().map(|f| f.message.clone()).collect::<Vec<_>>()
        };
        let with = |extension: &str| format!("CREATE TABLE t (id bigint); CREATE EXTENSION IF NOT EXISTS {extension};");
        assert!(messages(&with("ltree"), "path ltree NOT NULL DEFAULT text2ltree('0')").is_empty());
        assert!(messages(&with("postgis"), "p geometry DEFAULT ST_MakePoint(0, 0)").is_empty());
        assert!(messages(&with("pg_trgm"), "s real DEFAULT similarity('a', 'b')").is_empty());
        let uuid = messages(&with("\"uuid-ossp\""), "u uuid DEFAULT uuid_generate_v4()");
        assert!(
            uuid[0].ends_with("it calls uuid_generate_v4(), which extension uuid-ossp installs as VOLATILE"),
            "{uuid:?}"
        );
        // Without the extension, the function is unknown: assumed volatile.
        let unknown = messages("CREATE TABLE t (id bigint);", "path ltree DEFAULT text2ltree('0')");
        assert!(unknown[0].contains("neither built in nor created by the migration history"), "{unknown:?}");
        let dropped =
            messages(&format!("{} DROP EXTENSION ltree;", with("ltree")), "path ltree DEFAULT text2ltree('0')");
        assert_eq!(dropped.len(), 1);
    }

    #[test]
    fn user_functions_are_volatile_unless_declared_otherwise() {
        let lint = |function: &str, column: &str| {
            let found = lint_with(
                &[
                    ("001.sql", "CREATE TABLE t (id bigint);"),
                    ("002.sql", function),
                    ("003.sql", &format!("ALTER TABLE t ADD COLUMN {column};")),
                ],
                &Setup::default(),
            );
            of(&found, META.id).iter().map(|f| f.message.clone()).collect::<Vec<_>>()
        };
        let volatile = lint(
            "CREATE OR REPLACE FUNCTION random_smallint() RETURNS smallint LANGUAGE sql AS $$ SELECT (random() * 100)::smallint $$;",
            "n smallint NOT NULL DEFAULT random_smallint()",
        );
        assert_eq!(volatile.len(), 1);
        assert!(volatile[0].contains("random_smallint(), which 002.sql:1 creates as VOLATILE"), "{}", volatile[0]);
        let stable = lint(
            "CREATE FUNCTION site_default() RETURNS int STABLE LANGUAGE sql AS $$ SELECT 1 $$;",
            "n int DEFAULT site_default()",
        );
        assert!(stable.is_empty(), "{stable:?}");
        let immutable =
            lint("CREATE FUNCTION two() RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT 2 $$;", "n int DEFAULT two()");
        assert!(immutable.is_empty());
        let unknown = lint("SELECT 1;", "n int DEFAULT from_an_extension()");
        assert!(unknown[0].contains("neither built in nor created by the migration history"), "{unknown:?}");
    }

    #[test]
    fn serial_is_reported_as_the_integer_type_it_is() {
        let found = lint_with(
            &[("001.sql", "CREATE TABLE t (id bigint);"), ("002.sql", "ALTER TABLE t ADD COLUMN n serial;")],
            &Setup::default(),
        );
        let f = of(&found, META.id);
        assert!(f[0].message.contains("a serial column (integer with a sequence default)"), "{}", f[0].message);
    }
}

use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::Ddl;
use crate::sql::names::shown;

pub struct UnbatchedBackfill;

pub static META: RuleMeta = RuleMeta {
    id: "unbatched-backfill",
    severity: Severity::Error,
    category: Category::MigrationSafety,
    summary: "UPDATE or DELETE of a whole existing table in one statement inside a migration",
    what: "Flags `UPDATE` and `DELETE` of a table that existed before this migration when there is no `WHERE`, \
when the `WHERE` is always true (`true`, `1 = 1`), or when it only selects rows by a column added earlier in the \
same migration without a default being NULL (every existing row). A column added with a default (or as an \
identity or generated column) is never NULL, so `WHERE col IS NULL` right after matches nothing and is not \
flagged. Severity follows the table's size: tables declared small in `policies/tables.toml` are not flagged.",
    why: "One statement rewrites every row in one transaction: row locks on the whole table block concurrent \
writes until it commits, the WAL spike lags replicas, and the dead tuples bloat the table. A failure after an \
hour rolls back the whole hour.",
    fix: "Backfill in batches of a few thousand rows by primary key range (`WHERE id BETWEEN … AND …`), each in \
its own transaction, from a script or a migration run repeatedly, with a `statement_timeout`.",
    bad: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
-- migration: 002_backfill_status.sql
SET statement_timeout = '60s';
UPDATE orders SET status = 'new';",
    good: "\
-- migration: 001_orders.sql
CREATE TABLE orders (id bigint PRIMARY KEY, status text);
-- migration: 002_backfill_status.sql
SET statement_timeout = '60s';
UPDATE orders SET status = 'new' WHERE id BETWEEN 1 AND 10000 AND status IS NULL;",
    equivalents: "squawk: none; strong_migrations: backfilling data (guide); eugene: none",
};

/// Why the predicate selects every row, if it does.
fn whole_table(cx: &Context, table: &str, text: &str) -> Option<String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace() && *c != '(' && *c != ')').collect();
    if compact == "true" || compact == "1=1" {
        return Some(format!("WHERE {text} is always true"));
    }
    let column = compact.strip_suffix("isnull")?.trim_matches('"');
    let state = cx.migration()?;
    // A column added with a default is never NULL: the WHERE matches no existing row.
    let added = (table.to_string(), column.to_string());
    (state.added_columns.contains(&added) && !state.filled_columns.contains(&added))
        .then(|| format!("{} was added earlier in this migration, so WHERE {text} matches every row", shown(column)))
}

/// Why this UPDATE or DELETE of `table` touches every row, if it does.
pub fn whole_table_reason(cx: &Context, table: &str) -> Option<String> {
    let has_where = match &cx.statement.ddl {
        Ddl::Update { has_where, .. } | Ddl::Delete { has_where, .. } => *has_where,
        _ => return None,
    };
    if !has_where {
        return Some("it has no WHERE clause".to_string());
    }
    let predicate = cx.statement.ast.as_deref().and_then(crate::sql::from_ast::dml_predicate)?;
    whole_table(cx, table, &predicate)
}

impl Rule for UnbatchedBackfill {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let (table, verb) = match &cx.statement.ddl {
            Ddl::Update { table, .. } => (table, "UPDATE"),
            Ddl::Delete { table, .. } => (table, "DELETE"),
            _ => return,
        };
        if table.is_empty() {
            return;
        }
        let Some(reason) = whole_table_reason(cx, table) else { return };
        let message =
            format!("{verb} touches every row of existing table {} in one transaction: {reason}", shown(table));
        out.extend(cx.lock_finding(&META, table, message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files, of};

    fn count(sql: &str) -> usize {
        of(&lint_files(&[("001.sql", "CREATE TABLE t (id bigint, a int);"), ("002.sql", sql)], ""), META.id).len()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    /// Issue 37: three real backfills of Prisma's quoted mixed-case columns were missed.
    #[test]
    fn quoted_mixed_case_columns_are_followed() {
        let found = lint_files(
            &[
                ("001.sql", "CREATE TABLE \"Account\" (id bigint);"),
                ("002.sql", "ALTER TABLE \"Account\" ADD COLUMN \"isPaused\" boolean;\nUPDATE \"Account\" SET \"isPaused\" = false WHERE \"isPaused\" IS NULL;"),
            ],
            "",
        );
        let found = of(&found, META.id);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.ends_with(
                "\"isPaused\" was added earlier in this migration, so WHERE \"isPaused\" is null matches every row"
            ),
            "{}",
            found[0].message
        );
        assert_eq!(
            count("ALTER TABLE t ADD COLUMN \"B\" int; UPDATE t SET a = 1 WHERE b IS NULL;"),
            0,
            "b is not \"B\""
        );
    }

    #[test]
    fn whole_table_predicates() {
        assert_eq!(count("DELETE FROM t;"), 1);
        assert_eq!(count("UPDATE t SET a = 1 WHERE true;"), 1);
        assert_eq!(count("UPDATE t SET a = 1 WHERE (1 = 1);"), 1);
        assert_eq!(count("ALTER TABLE t ADD COLUMN b int; UPDATE t SET b = a WHERE b IS NULL;"), 1);
        assert_eq!(count("UPDATE t SET a = 1 WHERE a IS NULL;"), 0, "an old column may be mostly filled");
        assert_eq!(
            count("ALTER TABLE t ADD COLUMN b int NOT NULL DEFAULT 0; UPDATE t SET b = a WHERE b IS NULL;"),
            0,
            "a column added with a default is never NULL: the UPDATE matches nothing"
        );
        assert_eq!(count("ALTER TABLE t ADD COLUMN b int DEFAULT 0; UPDATE t SET b = a WHERE (b IS NULL);"), 0);
        assert_eq!(count("ALTER TABLE t ADD COLUMN b int DEFAULT NULL; UPDATE t SET b = a WHERE b IS NULL;"), 1);
        assert_eq!(
            count("ALTER TABLE t ADD COLUMN b int; ALTER TABLE t ALTER COLUMN b SET DEFAULT 0; UPDATE t SET b = a WHERE b IS NULL;"),
            1,
            "a default set after the column was added does not fill the existing rows"
        );
        assert_eq!(
            count("ALTER TABLE t ADD COLUMN b int DEFAULT 0; ALTER TABLE t DROP COLUMN b; ALTER TABLE t ADD COLUMN b int; UPDATE t SET b = a WHERE b IS NULL;"),
            1,
            "the last ADD COLUMN is the one the rows have"
        );
        assert_eq!(count("UPDATE t SET a = 1 WHERE id BETWEEN 1 AND 1000;"), 0);
        assert_eq!(count("CREATE TABLE u (a int); INSERT INTO u VALUES (1); UPDATE u SET a = 2;"), 0);
    }
}

use super::context::UniqueAddition;
use super::{Context, MigrationState, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl};
use std::collections::BTreeSet;

pub struct UniqueConstraintOnExistingTable;

pub static META: RuleMeta = RuleMeta {
    id: "unique-constraint-on-existing-table",
    severity: Severity::Warning,
    category: Category::Incident,
    summary: "A unique constraint or index is added to an existing table that has no declared identity",
    what: "Flags a UNIQUE constraint, unique index or PRIMARY KEY added to a table an earlier migration created, \
when `policies/identity.toml` does not declare that table's identity. Nothing is reported when the new key \
refuses no write the table accepted before: the table was created in the same migration; its columns were all \
added in this migration; a unique index production has over some of its columns already enforces it (one an \
earlier migration created, even if this migration dropped it first: a primary key replacing a unique constraint); or it covers exactly the foreign-key columns of an association table (every \
other column generated or filled by a default), which is that table's natural identity.",
    why: "A new uniqueness rule on a live table decides which writes production will refuse from now on. If it \
encodes the wrong identity, valid writes fail, clients retry, and the connection pool drains (the bird-survey \
incident). Existing rows that violate it make the migration fail halfway.",
    fix: "Declare the table's identity in `policies/identity.toml` (then `domain-identity-unique` checks the key \
against it), have the uniqueness reviewed as a domain decision, and keep a fast rollback ready \
(`DROP INDEX CONCURRENTLY …` in the down migration).",
    bad: "\
-- migration: 001_sightings.sql
CREATE TABLE sightings (id bigint PRIMARY KEY, site_id bigint NOT NULL, species_code text NOT NULL);
-- migration: 002_unique_sighting.sql
SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY sightings_site_species ON sightings (site_id, species_code);",
    good: "\
-- migration: 001_sightings.sql
CREATE TABLE sightings (id bigint PRIMARY KEY, site_id bigint NOT NULL, species_code text NOT NULL,
  UNIQUE (site_id, species_code));",
    equivalents: "No equivalent in squawk, strong_migrations or eugene.",
};

/// Why `addition` refuses no write the table accepted before, if it does not.
fn refuses_nothing_new(cx: &Context, state: &MigrationState, addition: &UniqueAddition) -> Option<&'static str> {
    let columns = addition.columns();
    if columns.is_empty() || columns.len() != addition.keys.len() {
        return None;
    }
    if columns.iter().all(|c| added_in_this_migration(cx, state, &addition.table, c)) {
        return Some("its columns are new in this migration");
    }
    let table = cx.schema.table(&addition.table)?;
    let key: BTreeSet<&str> = columns.iter().copied().collect();
    // A unique index production has: one the schema has now, or one dropped earlier in this migration.
    let enforced = cx.schema.indexes_on(&addition.table).chain(state.dropped_indexes.values()).any(|index| {
        index.table == addition.table
            && index.unique
            && index.predicate.is_none()
            && index.keys.iter().all(|k| k.column().is_some_and(|c| key.contains(c)))
    });
    // A primary key also makes its columns NOT NULL: that refuses rows the unique index let in.
    let nulls_refused =
        addition.what == "PRIMARY KEY" && columns.iter().any(|c| table.column(c).is_none_or(|info| !info.not_null));
    if enforced && !nulls_refused {
        return Some("an existing unique index already enforces it");
    }
    let foreign_keys: BTreeSet<&str> = table
        .constraints
        .iter()
        .filter_map(|c| match &c.kind {
            ConstraintKind::ForeignKey { columns, .. } => Some(columns),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .collect();
    let association = key == foreign_keys
        && table.columns.iter().all(|c| key.contains(c.name.as_str()) || c.generated || c.has_default);
    association.then_some("it is the natural identity of an association table: exactly its foreign keys")
}

/// Whether `table.column` was added by this migration: earlier in the file or by this statement.
fn added_in_this_migration(cx: &Context, state: &MigrationState, table: &str, column: &str) -> bool {
    if state.added_columns.contains(&(table.to_string(), column.to_string())) {
        return true;
    }
    matches!(&cx.statement.ddl, Ddl::AlterTable { table: t, actions, .. } if t == table
        && actions.iter().any(|a| matches!(a, AlterAction::AddColumn { column: c, .. } if c.name == column)))
}

impl Rule for UniqueConstraintOnExistingTable {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        let Some(state) = cx.migration() else { return };
        // Promoting an existing unique index changes nothing: the index already enforced it.
        let promotes_index = matches!(&cx.statement.ddl, Ddl::AlterTable { actions, .. }
            if actions.iter().any(|a| matches!(a, AlterAction::AddConstraint(c) if matches!(c.kind, ConstraintKind::UsingIndex { .. }))));
        if promotes_index {
            return;
        }
        for addition in cx.unique_additions() {
            if addition.with_new_table
                || !state.is_existing(&addition.table, cx.schema)
                || cx.facts.policies.identity.get(&addition.table).is_some()
                || refuses_nothing_new(cx, state, addition).is_some()
            {
                continue;
            }
            let created = cx
                .schema
                .table(&addition.table)
                .map(|t| format!("{}:{}", t.origin.file, t.origin.line))
                .unwrap_or_default();
            out.push(
                cx.finding(
                    &META,
                    format!(
                        "{} added to existing table {} (created at {created}), which has no identity declared in policies/identity.toml: existing and future rows may be rejected",
                        cx.describe_addition(addition),
                        addition.table
                    ),
                )
                .fact("table created", created),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    fn flagged(files: &[(&str, &str)], identity: &str) -> usize {
        lint_files(files, identity).iter().filter(|f| f.rule == META.id).count()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "");
    }

    #[test]
    fn only_for_tables_from_earlier_migrations_without_identity() {
        let table = "CREATE TABLE t (a int, b int);";
        assert_eq!(flagged(&[("001.sql", table), ("002.sql", "ALTER TABLE t ADD UNIQUE (a);")], ""), 1);
        assert_eq!(flagged(&[("001.sql", &format!("{table} ALTER TABLE t ADD UNIQUE (a);"))], ""), 0);
        let identity = "[[table]]\nname = \"t\"\nidentity = [[\"a\"]]\n";
        assert_eq!(flagged(&[("001.sql", table), ("002.sql", "ALTER TABLE t ADD UNIQUE (a);")], identity), 0);
        assert_eq!(flagged(&[("001.sql", table), ("002.sql", "CREATE INDEX t_a ON t (a);")], ""), 0);
    }

    #[test]
    fn names_what_it_adds_as_postgresql_names_it() {
        let messages = |sql: &str| -> Vec<String> {
            lint_files(&[("001.sql", "CREATE TABLE accounts (id bigint, email text);"), ("002.sql", sql)], "")
                .into_iter()
                .filter(|f| f.rule == META.id)
                .map(|f| f.message)
                .collect()
        };
        assert!(messages("ALTER TABLE accounts ADD UNIQUE (email);")[0]
            .starts_with("UNIQUE constraint accounts_email_key (email) added"));
        assert!(messages("ALTER TABLE accounts ADD PRIMARY KEY (id);")[0]
            .starts_with("PRIMARY KEY accounts_pkey (id) added"));
        assert!(messages("CREATE UNIQUE INDEX ON accounts (lower(email));")[0]
            .starts_with("unique index accounts_lower_idx ((lower(email))) added"));
        assert!(messages("CREATE UNIQUE INDEX accounts_email ON accounts (email);")[0]
            .starts_with("unique index accounts_email (email) added"));
    }

    const LIKES: &str = "CREATE TABLE person (id bigint PRIMARY KEY);
CREATE TABLE post (id bigint PRIMARY KEY);
CREATE TABLE post_like (id serial, person_id bigint NOT NULL REFERENCES person, post_id bigint NOT NULL REFERENCES post,
  published timestamptz NOT NULL DEFAULT now());";

    #[test]
    fn the_foreign_keys_of_an_association_table_are_its_natural_identity() {
        let added = |sql: &str| flagged(&[("001.sql", LIKES), ("002.sql", sql)], "");
        assert_eq!(added("ALTER TABLE post_like ADD PRIMARY KEY (post_id, person_id);"), 0);
        assert_eq!(added("CREATE UNIQUE INDEX CONCURRENTLY post_like_key ON post_like (person_id, post_id);"), 0);
        assert_eq!(added("ALTER TABLE post_like ADD UNIQUE (person_id);"), 1, "one of the two is not an identity");
        assert_eq!(
            added("ALTER TABLE post_like ADD COLUMN score int NOT NULL; ALTER TABLE post_like ADD UNIQUE (person_id, post_id);"),
            1,
            "score is data the key leaves out: not a pure association"
        );
    }

    #[test]
    fn a_key_already_enforced_or_over_new_columns_refuses_nothing_new() {
        let base = "CREATE TABLE t (id serial, a int NOT NULL, b int NOT NULL, c int, UNIQUE (a, b));";
        let added = |sql: &str| flagged(&[("001.sql", base), ("002.sql", sql)], "");
        assert_eq!(added("ALTER TABLE t DROP COLUMN id, ADD PRIMARY KEY (a, b), DROP CONSTRAINT t_a_b_key;"), 0);
        assert_eq!(
            added("ALTER TABLE t DROP CONSTRAINT t_a_b_key;\nALTER TABLE t ADD PRIMARY KEY (a, b);"),
            0,
            "production has the unique constraint until this migration runs"
        );
        assert_eq!(added("CREATE UNIQUE INDEX t_ab ON t (a, b) WHERE c > 0;\nALTER TABLE t ADD UNIQUE (a, c);"), 1);
        assert_eq!(added("ALTER TABLE t ADD CONSTRAINT t_abc UNIQUE (a, b, c);"), 0, "wider than an enforced key");
        assert_eq!(added("ALTER TABLE t ADD PRIMARY KEY (a, b, c);"), 1, "c becomes NOT NULL");
        assert_eq!(added("ALTER TABLE t ADD UNIQUE (a, c);"), 1);
        assert_eq!(added("ALTER TABLE t ADD COLUMN d int UNIQUE;"), 0, "a column added by the same statement");
        assert_eq!(added("ALTER TABLE t ADD COLUMN d int; CREATE UNIQUE INDEX t_d ON t (d);"), 0);
        assert_eq!(added("ALTER TABLE t ADD COLUMN d int; CREATE UNIQUE INDEX t_cd ON t (c, d);"), 1);
        assert_eq!(
            added("CREATE UNIQUE INDEX t_c ON t (c);\nDROP INDEX t_c;\nALTER TABLE t ADD UNIQUE (c);"),
            2,
            "an index this migration created is not production's, even once dropped"
        );
    }
}

use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl};

pub struct UniqueConstraintOnExistingTable;

pub static META: RuleMeta = RuleMeta {
    id: "unique-constraint-on-existing-table",
    severity: Severity::Warning,
    category: Category::Incident,
    summary: "A unique constraint or index is added to an existing table that has no declared identity",
    what: "Flags a UNIQUE constraint, unique index or PRIMARY KEY added to a table an earlier migration created, \
when `policies/identity.toml` does not declare that table's identity. Nothing is reported for a table created \
in the same migration.",
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
                        "{} ({}) added to existing table {} (created at {created}), which has no identity declared in policies/identity.toml: existing and future rows may be rejected",
                        addition.what,
                        addition.describe_keys(),
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
}

//! `domain-review-required`: a change to what identifies a row of a declared table needs an
//! approval from that table's domain reviewers (`reviewers` in `policies/identity.toml`).
//!
//! This file finds the migration statements that touch a declared table's identity (b) and
//! carries the rule's documentation. Edits of the declaration itself (a) are found by
//! `sluice check` comparing the base and head `identity.toml` (`check::review`), which also
//! turns either kind into info when one of the reviewers approved (`--approved-by`).

use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::Category;
use crate::schema::Schema;
use crate::sql::ddl::{AlterAction, ConstraintKind, Ddl, Name, ObjectKind};
use std::collections::BTreeMap;

pub struct DomainReviewRequired;

pub static META: RuleMeta = RuleMeta {
    id: "domain-review-required",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "A change to a declared table's identity needs an approval from its domain reviewers",
    what: "In `sluice check`, for tables declared in `policies/identity.toml` that name `reviewers` (or fall \
under the file's top-level `reviewers`): flags a change that (a) edits the table's identity declaration, or \
(b) adds, drops or alters a UNIQUE constraint, unique index or PRIMARY KEY on the table, drops a column that \
a unique index contains, drops, renames or retypes one of its identity columns, or drops or renames the table. \
The keys a `CREATE TABLE` declares with the table are its first, not a change: `domain-identity-unique` judges \
them against the declaration. \
An approval from one of the reviewers (`sluice check --approved-by LOGIN`, filled in by the GitHub action from \
the pull request's reviews) turns the finding into info naming who approved. It cannot be silenced with \
`sluice:ignore`: the change under review would be silencing its own reviewer. `sluice lint` does not report it: \
it reviews a whole project, not a change.",
    why: "In the bird-survey incident the developer who added `UNIQUE (site_id, observed_window, species_code)` \
could also have rewritten `identity.toml` to declare that identity, and the gate would have agreed with them. \
The postmortem's action item was to require a survey-domain reviewer for schema changes affecting observation \
identity: the people who know that many participants report the same site, window and species. This is what \
GitHub's code owners do for files (https://docs.github.com/en/repositories/managing-your-repositorys-settings-and-features/customizing-your-repository/about-code-owners), \
applied to what a migration does to a table rather than to which file it edits. A unique constraint is a \
statement about the domain: PostgreSQL rejects every row that would duplicate its columns \
(https://www.postgresql.org/docs/current/ddl-constraints.html#DDL-CONSTRAINTS-UNIQUE-CONSTRAINTS).",
    fix: "Ask one of the table's reviewers (named in the finding) to review and approve the pull request; the \
GitHub action passes the approvals to `sluice check`. Locally, `sluice check --approved-by LOGIN` says who \
approved. To change who reviews, change `reviewers` in `policies/identity.toml` in a pull request of its own.",
    bad: "\
-- migration: 001_observations.sql
CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL,
  client_observation_id uuid NOT NULL, site_id bigint NOT NULL, species_code text NOT NULL);
-- migration: 002_unique_observation.sql
SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY observations_checklist_client_id ON observations (checklist_id, client_observation_id);",
    good: "\
-- migration: 001_observations.sql
CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL,
  client_observation_id uuid NOT NULL, site_id bigint NOT NULL, species_code text NOT NULL);
-- migration: 002_observer_note.sql
SET lock_timeout = '5s';
ALTER TABLE observations ADD COLUMN observer_note text;",
    equivalents: "No equivalent in squawk, strong_migrations or eugene. GitHub CODEOWNERS requires owners per file, \
not per table identity.",
};

impl Rule for DomainReviewRequired {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if !cx.facts.under_review || cx.migration().is_none() {
            return;
        }
        let identity = &cx.facts.policies.identity;
        let mut by_table: BTreeMap<Name, Vec<String>> = BTreeMap::new();
        for (table, what) in identity_touches(&cx.statement.ddl, cx.schema, cx) {
            if identity.get(&table).is_some() && !identity.reviewers_for(&table).is_empty() {
                by_table.entry(table).or_default().push(what);
            }
        }
        for (table, touches) in by_table {
            let reviewers = identity.reviewers_for(&table);
            out.push(
                cx.finding(
                    &META,
                    format!(
                        "{} on {table}, whose identity is declared in identity.toml: needs an approval from one of \
                         its domain reviewers ({})",
                        touches.join("; "),
                        reviewers.join(", ")
                    ),
                )
                .fact("table", table.as_str())
                .fact("reviewers", reviewers.join(", "))
                .evidence(evidence(&table, reviewers)),
            );
        }
    }
}

/// What a finding of this rule carries for `sluice check` to match approvals against.
pub fn evidence(table: &str, reviewers: &[String]) -> serde_json::Value {
    serde_json::json!({ "table": table, "reviewers": reviewers })
}

/// (table, what the statement does to its identity) for every identity-relevant part of `ddl`,
/// whether or not the table is declared (the caller filters).
fn identity_touches(ddl: &Ddl, schema: &Schema, cx: &Context) -> Vec<(Name, String)> {
    let identity = &cx.facts.policies.identity;
    let is_identity_column = |table: &str, column: &str| {
        identity.get(table).is_some_and(|e| e.identity.iter().flatten().any(|c| c == column))
    };
    // A table's own CREATE TABLE keys are its first, not a change to an identity in use:
    // `domain-identity-unique` judges them against the trusted declaration.
    let mut out: Vec<(Name, String)> = cx
        .unique_additions()
        .iter()
        .filter(|a| !a.with_new_table)
        .map(|a| (a.table.clone(), format!("adds {}", cx.describe_addition(a))))
        .collect();
    match ddl {
        Ddl::AlterTable { table, actions, .. } => {
            for action in actions {
                let touch = match action {
                    AlterAction::DropConstraint { name, .. } => drop_constraint(schema, table, name),
                    AlterAction::AlterConstraint { name } => alter_constraint(schema, table, name),
                    AlterAction::DropColumn { name, .. } if is_identity_column(table, name) => {
                        Some(format!("drops identity column {name}"))
                    }
                    AlterAction::DropColumn { name, .. } => unique_indexes_with(schema, table, name)
                        .map(|indexes| format!("drops column {name}, and with it unique index {indexes}")),
                    AlterAction::RenameColumn { from, to } if is_identity_column(table, from) => {
                        Some(format!("renames identity column {from} to {to}"))
                    }
                    AlterAction::SetType { column, data_type, .. } if is_identity_column(table, column) => {
                        Some(format!("changes the type of identity column {column} to {data_type}"))
                    }
                    AlterAction::RenameTable { to } => Some(format!("renames the table to {to}")),
                    _ => None,
                };
                out.extend(touch.map(|what| (table.clone(), what)));
            }
        }
        Ddl::Drop { kind: ObjectKind::Index, names, .. } => {
            for name in names {
                if let Some(index) = schema.indexes.get(name).filter(|i| i.unique) {
                    out.push((index.table.clone(), format!("drops unique index {}", index.describe())));
                }
            }
        }
        Ddl::Drop { kind: ObjectKind::Table, names, .. } => {
            out.extend(names.iter().map(|t| (t.clone(), "drops the table".to_string())));
        }
        Ddl::Rename { kind: ObjectKind::Table, from, to, .. } => {
            out.push((from.clone(), format!("renames the table to {to}")))
        }
        _ => {}
    }
    out
}

/// `DROP CONSTRAINT name`: a uniqueness, or a constraint the history does not show (which may
/// be one: fail closed).
fn drop_constraint(schema: &Schema, table: &str, name: &str) -> Option<String> {
    let Some(found) = schema.table(table).and_then(|t| t.constraints.iter().find(|c| c.name == name)) else {
        return Some(format!(
            "drops constraint {name}, which the migration history does not show (it may be a uniqueness)"
        ));
    };
    uniqueness(&found.kind).map(|what| format!("drops {what} {name}"))
}

/// `ALTER CONSTRAINT name …` (deferrability) on a uniqueness changes when it is enforced.
fn alter_constraint(schema: &Schema, table: &str, name: &str) -> Option<String> {
    let constraint = schema.table(table)?.constraints.iter().find(|c| c.name == name)?;
    uniqueness(&constraint.kind).map(|what| format!("alters {what} {name}"))
}

fn uniqueness(kind: &ConstraintKind) -> Option<&'static str> {
    match kind {
        ConstraintKind::PrimaryKey { .. } | ConstraintKind::UsingIndex { primary_key: true, .. } => Some("PRIMARY KEY"),
        ConstraintKind::Unique { .. } | ConstraintKind::UsingIndex { .. } => Some("UNIQUE constraint"),
        _ => None,
    }
}

/// The unique indexes on `table` that contain `column` (dropping the column drops them).
fn unique_indexes_with(schema: &Schema, table: &str, column: &str) -> Option<String> {
    let names: Vec<String> =
        schema.indexes_on(table).filter(|i| i.unique && i.has_key_column(column)).map(|i| i.describe()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_with, Setup};

    const IDENTITY: &str = r#"
reviewers = ["survey-org/data-stewards"]

[[table]]
name = "observations"
identity = [["checklist_id", "client_observation_id"]]
shared = ["site_id", "species_code"]
reviewers = ["@Survey-Org/Survey-Domain", "ana"]

[[table]]
name = "sites"
identity = [["code"]]
"#;

    const TABLES: &str = "CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
checklist_id bigint NOT NULL, client_observation_id uuid NOT NULL, site_id bigint NOT NULL, species_code text NOT NULL,
  CONSTRAINT observations_client UNIQUE (checklist_id, client_observation_id));
CREATE UNIQUE INDEX observations_site_species ON observations (site_id, species_code);
CREATE TABLE sites (id bigint PRIMARY KEY, code text NOT NULL UNIQUE, name text);
CREATE TABLE notes (id bigint PRIMARY KEY, body text);";

    fn flagged(migration: &str) -> Vec<Finding> {
        let setup = Setup { identity: IDENTITY, under_review: true, ..Setup::default() };
        lint_with(&[("001.sql", TABLES), ("002.sql", migration)], &setup)
            .into_iter()
            .filter(|f| f.rule == META.id && f.file == "002.sql")
            .collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, "reviewers = [\"survey-org/survey-domain\"]\n[[table]]\nname = \"observations\"\nidentity = [[\"checklist_id\", \"client_observation_id\"]]\n");
    }

    #[test]
    fn every_change_to_a_declared_identity_needs_its_reviewers() {
        for (sql, what) in [
            (
                "ALTER TABLE observations ADD CONSTRAINT o UNIQUE (site_id, species_code, checklist_id);",
                "adds UNIQUE constraint o",
            ),
            (
                "CREATE UNIQUE INDEX CONCURRENTLY o2 ON observations (checklist_id, client_observation_id);",
                "adds unique index o2",
            ),
            (
                "ALTER TABLE observations ADD UNIQUE (site_id, species_code);",
                "adds UNIQUE constraint observations_site_id_species_code_key (site_id, species_code)",
            ),
            (
                "ALTER TABLE observations DROP CONSTRAINT observations_client;",
                "drops UNIQUE constraint observations_client",
            ),
            ("ALTER TABLE observations DROP CONSTRAINT observations_pkey;", "drops PRIMARY KEY observations_pkey"),
            ("ALTER TABLE observations DROP CONSTRAINT mystery;", "which the migration history does not show"),
            ("DROP INDEX CONCURRENTLY observations_site_species;", "drops unique index observations_site_species"),
            (
                "ALTER TABLE observations DROP COLUMN client_observation_id;",
                "drops identity column client_observation_id",
            ),
            (
                "ALTER TABLE observations DROP COLUMN species_code;",
                "drops column species_code, and with it unique index observations_site_species",
            ),
            (
                "ALTER TABLE observations RENAME COLUMN checklist_id TO list_id;",
                "renames identity column checklist_id to list_id",
            ),
            (
                "ALTER TABLE observations ALTER COLUMN checklist_id TYPE text;",
                "changes the type of identity column checklist_id",
            ),
            (
                "ALTER TABLE observations ALTER CONSTRAINT observations_client DEFERRABLE;",
                "alters UNIQUE constraint observations_client",
            ),
            ("ALTER TABLE observations RENAME TO sightings;", "renames the table to sightings"),
            ("DROP TABLE observations;", "drops the table"),
        ] {
            let found = flagged(sql);
            assert_eq!(found.len(), 1, "{sql}: {found:#?}");
            let message = &found[0].message;
            assert!(message.contains(what), "{sql}: {message}");
            assert!(message.contains("survey-org/survey-domain, ana"), "{message}");
            assert_eq!(found[0].severity, Severity::Error);
            let evidence = found[0].evidence.as_ref().unwrap();
            assert_eq!(evidence["table"], "observations");
            assert_eq!(evidence["reviewers"], serde_json::json!(["survey-org/survey-domain", "ana"]));
        }
    }

    #[test]
    fn the_top_level_reviewers_cover_tables_that_name_none() {
        let found = flagged("ALTER TABLE sites DROP CONSTRAINT sites_code_key;");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("(survey-org/data-stewards)"), "{}", found[0].message);
    }

    #[test]
    fn other_changes_and_undeclared_tables_need_no_domain_review() {
        for sql in [
            "ALTER TABLE observations ADD COLUMN note text;",
            "CREATE INDEX CONCURRENTLY o3 ON observations (species_code);",
            "ALTER TABLE observations RENAME COLUMN site_id TO place_id;",
            "ALTER TABLE observations ALTER COLUMN species_code TYPE varchar(8);",
            "ALTER TABLE notes ADD CONSTRAINT n UNIQUE (body);",
            "DROP TABLE notes;",
        ] {
            assert!(flagged(sql).is_empty(), "{sql}: {:#?}", flagged(sql));
        }
    }

    #[test]
    fn sluice_lint_reviews_no_change_and_reports_nothing() {
        let setup = Setup { identity: IDENTITY, ..Setup::default() };
        let found = lint_with(&[("001.sql", TABLES), ("002.sql", "DROP TABLE observations;")], &setup);
        assert!(!found.iter().any(|f| f.rule == META.id), "{found:#?}");
    }

    #[test]
    fn without_reviewers_no_approval_is_required() {
        let setup = Setup {
            identity: "[[table]]\nname = \"observations\"\nidentity = [[\"checklist_id\"]]\n",
            under_review: true,
            ..Setup::default()
        };
        let found = lint_with(&[("001.sql", TABLES), ("002.sql", "DROP TABLE observations;")], &setup);
        assert!(!found.iter().any(|f| f.rule == META.id), "{found:#?}");
    }
}

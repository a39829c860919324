use super::{Context, Rule, RuleMeta};
use crate::finding::{Finding, Severity};
use crate::rules::context::UniqueAddition;
use crate::rules::Category;
use crate::sql::ddl::{AlterAction, Ddl};

pub struct DomainIdentityUnique;

pub static META: RuleMeta = RuleMeta {
    id: "domain-identity-unique",
    severity: Severity::Error,
    category: Category::Incident,
    summary: "A UNIQUE constraint, unique index or primary key contains none of the table's declared identity keys",
    what: "Compares every UNIQUE constraint, unique index (plain, CONCURRENTLY, NULLS NOT DISTINCT, partial, \
expression) and PRIMARY KEY a migration adds with `policies/identity.toml`, where the team declares what \
identifies a row and which values many rows legitimately share. A key that contains none of the table's \
identity keys asserts a uniqueness the domain does not have.",
    why: "Uniqueness on the wrong columns rejects valid writes. In the bird-survey incident a migration added \
`UNIQUE (site_id, observed_window, species_code)` to observations; many participants legitimately report the \
same site, window and species. Their submissions got 409s, clients retried, the connection pool drained, and \
38% of submissions failed for almost three hours. The real identity was the checklist plus a client-generated \
observation id.",
    fix: "Make the constraint contain one of the declared identity keys (in any order; extra columns are \
allowed). If the domain really changed, change the declaration in `policies/identity.toml` in a pull request of \
its own, approved by the table's domain reviewers (`domain-review-required`): `sluice check` judges with the base \
revision's declaration, so the new one applies to the migrations after it is merged.",
    bad: "\
-- migration: 001_observations.sql
CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL, client_observation_id uuid NOT NULL,
  site_id bigint NOT NULL, observed_window tstzrange NOT NULL, species_code text NOT NULL);
-- migration: 002_unique_observation.sql
CREATE UNIQUE INDEX CONCURRENTLY observations_site_window_species ON observations (site_id, observed_window, species_code);",
    good: "\
-- migration: 001_observations.sql
CREATE TABLE observations (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, checklist_id bigint NOT NULL, client_observation_id uuid NOT NULL,
  site_id bigint NOT NULL, observed_window tstzrange NOT NULL, species_code text NOT NULL);
-- migration: 002_unique_observation.sql
SET lock_timeout = '5s';
CREATE UNIQUE INDEX CONCURRENTLY observations_checklist_client_id ON observations (checklist_id, client_observation_id);",
    equivalents: "No equivalent in squawk, strong_migrations, eugene or Atlas: they cannot know the domain.",
};

impl Rule for DomainIdentityUnique {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context, out: &mut Vec<Finding>) {
        if cx.migration().is_none() {
            return;
        }
        for addition in cx.unique_additions() {
            let Some(policy) = cx.facts.policies.identity.get(&addition.table) else {
                continue;
            };
            let columns = addition.columns();
            let contains_identity = policy.identity.iter().any(|key| key.iter().all(|c| columns.contains(&c.as_str())));
            if contains_identity || addition.keys.is_empty() || is_surrogate(cx, addition, &policy.surrogate) {
                continue;
            }
            let keys = policy.identity.iter().map(|k| format!("({})", k.join(", "))).collect::<Vec<_>>().join(" or ");
            let shared: Vec<&str> = columns.iter().copied().filter(|c| policy.shared.iter().any(|s| s == c)).collect();
            let mut message = format!(
                "{} on {} contains none of its identity keys {}",
                cx.describe_addition(addition),
                addition.table,
                keys
            );
            if !shared.is_empty() {
                message.push_str(&format!("; {} are values many rows legitimately share", shared.join(", ")));
            }
            if !policy.reason.is_empty() {
                message.push_str(&format!(". {}", policy.reason.trim_end_matches('.')));
            }
            out.push(
                cx.finding(&META, message)
                    .help(format!(
                        "Include an identity key {keys} in the {}; if the domain changed, change policies/identity.toml first, in a pull request of its own approved by the table's domain reviewers.",
                        addition.what
                    ))
                    .fact("identity keys", keys.clone())
                    .fact("shared columns", policy.shared.join(", ")),
            );
        }
    }
}

/// A key made only of generated columns (an identity `id`) is unique by construction.
fn is_surrogate(cx: &Context, addition: &UniqueAddition, declared: &[String]) -> bool {
    let generated = |column: &str| {
        if declared.iter().any(|d| d == column) {
            return true;
        }
        let is_generated = |c: &crate::sql::ddl::Column| c.identity || c.default.as_ref().is_some_and(|d| d.volatile);
        let defined_here: Option<bool> = match &cx.statement.ddl {
            Ddl::CreateTable { columns, .. } => columns.iter().find(|c| c.name == column).map(is_generated),
            Ddl::AlterTable { actions, .. } => actions.iter().find_map(|a| match a {
                AlterAction::AddColumn { column: c, .. } if c.name == column => Some(is_generated(c)),
                _ => None,
            }),
            _ => None,
        };
        defined_here.unwrap_or_else(|| {
            cx.schema.table(&addition.table).and_then(|t| t.column(column)).is_some_and(|c| c.generated)
        })
    };
    addition.keys.len() == addition.columns().len() && addition.columns().iter().all(|c| generated(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{check_examples, lint_files};

    pub const IDENTITY: &str = r#"
[[table]]
name = "observations"
identity = [["checklist_id", "client_observation_id"]]
shared = ["site_id", "observed_window", "species_code"]
reason = "Many participants report the same site, window and species; a checklist's own observation id identifies a record."
"#;

    const TABLE: &str = "CREATE TABLE observations (id bigint, checklist_id bigint, client_observation_id uuid, site_id bigint, observed_window tstzrange, species_code text);";

    fn flagged(migration: &str) -> Vec<Finding> {
        lint_files(&[("001.sql", TABLE), ("002.sql", migration)], IDENTITY)
            .into_iter()
            .filter(|f| f.rule == META.id)
            .collect()
    }

    #[test]
    fn examples_lint_as_documented() {
        check_examples(&META, IDENTITY);
    }

    #[test]
    fn the_bird_survey_incident() {
        let found = flagged(
            "ALTER TABLE observations ADD CONSTRAINT obs_uniq UNIQUE (site_id, observed_window, species_code);",
        );
        assert_eq!(found.len(), 1);
        let message = &found[0].message;
        assert!(
            message.starts_with("UNIQUE constraint obs_uniq (site_id, observed_window, species_code) on observations"),
            "{message}"
        );
        assert!(message.contains("(checklist_id, client_observation_id)"), "{message}");
        assert!(
            message.contains("site_id, observed_window, species_code are values many rows legitimately share"),
            "{message}"
        );
        assert!(message.contains("Many participants report"), "{message}");
    }

    #[test]
    fn every_form_of_uniqueness_is_checked() {
        for sql in [
            "CREATE UNIQUE INDEX o1 ON observations (site_id, species_code);",
            "CREATE UNIQUE INDEX CONCURRENTLY o1 ON observations (site_id, species_code) WHERE site_id IS NOT NULL;",
            "CREATE UNIQUE INDEX o1 ON observations (site_id, lower(species_code)) NULLS NOT DISTINCT;",
            "ALTER TABLE observations ADD UNIQUE NULLS NOT DISTINCT (site_id, species_code);",
            "ALTER TABLE observations ADD PRIMARY KEY (site_id, observed_window);",
        ] {
            assert_eq!(flagged(sql).len(), 1, "{sql}");
        }
    }

    #[test]
    fn surrogate_keys_the_database_or_the_policy_generates_pass() {
        assert!(flagged("ALTER TABLE observations ADD COLUMN row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;")
            .is_empty());
        let unnamed = flagged("ALTER TABLE observations ADD PRIMARY KEY (id);");
        assert_eq!(unnamed.len(), 1);
        assert!(
            unnamed[0].message.starts_with("PRIMARY KEY observations_pkey (id) on observations"),
            "{}",
            unnamed[0].message
        );
        let declared = format!("{IDENTITY}surrogate = [\"id\"]\n");
        let found =
            lint_files(&[("001.sql", TABLE), ("002.sql", "ALTER TABLE observations ADD PRIMARY KEY (id);")], &declared);
        assert!(!found.iter().any(|f| f.rule == META.id), "{found:?}");
    }

    #[test]
    fn a_key_containing_the_identity_passes_in_any_order() {
        assert!(flagged("ALTER TABLE observations ADD UNIQUE (client_observation_id, checklist_id);").is_empty());
        assert!(flagged("CREATE UNIQUE INDEX o ON observations (checklist_id, species_code, client_observation_id);")
            .is_empty());
    }

    #[test]
    fn also_checks_a_new_table_and_ignores_undeclared_tables() {
        let found = lint_files(
            &[("001.sql", "CREATE TABLE observations (checklist_id bigint, client_observation_id uuid, site_id bigint, UNIQUE (site_id));")],
            IDENTITY,
        );
        assert!(found.iter().any(|f| f.rule == META.id));
        let found = lint_files(&[("001.sql", "CREATE TABLE sites (id bigint, code text UNIQUE);")], IDENTITY);
        assert!(!found.iter().any(|f| f.rule == META.id));
    }
}

//! What an edit of the policies would do: identity keys, shared and surrogate columns and
//! reviewers changed (`identity.toml`); table sizes and thresholds changed (`tables.toml` and
//! its statistics snapshot).

use super::item::{line_where, list, Effect, Item};
use crate::policy::identity::IdentityPolicy;
use crate::policy::tables::TablesPolicy;
use std::collections::{BTreeMap, BTreeSet};

fn keys(keys: &[Vec<String>]) -> String {
    keys.iter().map(|k| format!("({})", k.join(", "))).collect::<Vec<_>>().join(" or ")
}

/// Who may approve, before and after: more people (or nobody required any more) relaxes,
/// fewer tightens.
fn reviewers_item(whose: &str, old: &[String], new: &[String], line: Option<usize>) -> Option<Item> {
    if old == new {
        return None;
    }
    let added: Vec<String> = new.iter().filter(|r| !old.contains(r)).cloned().collect();
    let effect = if new.is_empty() || !added.is_empty() { Effect::Relaxes } else { Effect::Tightens };
    let what = if new.is_empty() {
        format!("require no domain review for {whose} (was {})", list(old))
    } else {
        format!("change who approves {whose} from {} to {}", list(old), list(new))
    };
    Some(Item::new(effect, what, line))
}

/// `identity.toml`: every table whose declaration differs, and the default reviewers.
/// `new_tables` are the tables the change creates: their entries were applied from the head.
pub fn identity(trusted: &IdentityPolicy, proposed: &IdentityPolicy, new_tables: &BTreeSet<String>) -> Vec<Item> {
    let mut out: Vec<Item> = reviewers_item(
        "tables without reviewers of their own",
        &trusted.default_reviewers,
        &proposed.default_reviewers,
        None,
    )
    .into_iter()
    .collect();
    let tables: BTreeSet<&String> = trusted.tables.keys().chain(proposed.tables.keys()).collect();
    for table in tables {
        match (trusted.get(table), proposed.get(table)) {
            (None, Some(new)) if new_tables.contains(table) => out.push(Item::new(
                Effect::Changes,
                format!(
                    "declare the identity of new table `{table}` as {} (applied in this review: the base has no such table)",
                    keys(&new.identity)
                ),
                Some(new.line),
            )),
            (None, Some(new)) => out.push(Item::new(
                Effect::Relaxes,
                format!(
                    "declare the identity of existing table `{table}` as {}: unique constraints containing it would pass",
                    keys(&new.identity)
                ),
                Some(new.line),
            )),
            (Some(old), None) => out.push(Item::new(
                Effect::Relaxes,
                format!(
                    "remove the identity declaration of `{table}` ({}): its unique constraints would no longer be checked \
                     against the domain",
                    keys(&old.identity)
                ),
                None,
            )),
            (Some(old), Some(new)) => {
                let line = Some(new.line);
                if old.identity != new.identity {
                    let widened = new.identity.iter().any(|k| !old.identity.contains(k));
                    out.push(Item::new(
                        if widened { Effect::Relaxes } else { Effect::Tightens },
                        format!("change the identity keys of `{table}` from {} to {}", keys(&old.identity), keys(&new.identity)),
                        line,
                    ));
                }
                let added: Vec<String> = new.surrogate.iter().filter(|c| !old.surrogate.contains(c)).cloned().collect();
                let removed: Vec<String> = old.surrogate.iter().filter(|c| !new.surrogate.contains(c)).cloned().collect();
                if !added.is_empty() {
                    out.push(Item::new(
                        Effect::Relaxes,
                        format!("count {} of `{table}` as surrogate (a key of them alone would pass)", added.join(", ")),
                        line,
                    ));
                }
                if !removed.is_empty() {
                    out.push(Item::new(
                        Effect::Tightens,
                        format!("stop counting {} of `{table}` as surrogate", removed.join(", ")),
                        line,
                    ));
                }
                if old.shared != new.shared {
                    out.push(Item::new(
                        Effect::Changes,
                        format!("change the shared columns of `{table}` from {} to {}", list(&old.shared), list(&new.shared)),
                        line,
                    ));
                }
                if old.reason != new.reason {
                    out.push(Item::new(Effect::Changes, format!("reword the reason of `{table}`"), line));
                }
                out.extend(reviewers_item(
                    &format!("`{table}`"),
                    trusted.reviewers_for(table),
                    proposed.reviewers_for(table),
                    line,
                ));
            }
            (None, None) => {}
        }
    }
    out
}

/// `tables.toml` and its snapshot: items by the file that states them (a row count comes from
/// `tables.toml` or from the statistics snapshot it names). `tables_file` is the head's
/// `tables.toml` (the trusted one when the head has none).
pub fn tables(
    trusted: &TablesPolicy,
    proposed: &TablesPolicy,
    tables_file: &str,
    tables_text: Option<&str>,
    new_tables: &BTreeSet<String>,
) -> BTreeMap<String, Vec<Item>> {
    let mut out: BTreeMap<String, Vec<Item>> = BTreeMap::new();
    let line_of = |key: &str| line_where(tables_text, |l| l.starts_with(key));
    for (key, old, new, bigger_relaxes) in [
        ("large_table_rows", trusted.large_table_rows, proposed.large_table_rows, true),
        ("small_table_rows", trusted.small_table_rows, proposed.small_table_rows, true),
    ] {
        if old != new {
            let effect = if (new > old) == bigger_relaxes { Effect::Relaxes } else { Effect::Tightens };
            let verb = if effect == Effect::Relaxes { "relax" } else { "tighten" };
            out.entry(tables_file.to_string()).or_default().push(Item::new(
                effect,
                format!("{verb} `{key}` from {old} to {new}"),
                line_of(key),
            ));
        }
    }
    let names: BTreeSet<&String> = trusted.rows.keys().chain(proposed.rows.keys()).collect();
    for table in names {
        let (old, new) = (trusted.rows(table), proposed.rows(table));
        let source = new.or(old).map(|r| r.source.clone()).unwrap_or_else(|| tables_file.to_string());
        let line = if source == tables_file { line_of(table) } else { None };
        let item = match (old, new) {
            (None, Some(new)) if new_tables.contains(table) => Item::new(
                Effect::Changes,
                format!(
                    "size new table `{table}` at {} rows (applied in this review: the base has no such table)",
                    new.rows
                ),
                line,
            ),
            (None, Some(new)) => Item::new(
                Effect::Relaxes,
                format!("size `{table}` at {} rows (unknown sizes count as large)", new.rows),
                line,
            ),
            (Some(old), None) => Item::new(
                Effect::Tightens,
                format!("forget the size of `{table}` ({} rows; unknown sizes count as large)", old.rows),
                None,
            ),
            (Some(old), Some(new)) if old.rows != new.rows => Item::new(
                if new.rows < old.rows { Effect::Relaxes } else { Effect::Tightens },
                format!("change the size of `{table}` from {} to {} rows", old.rows, new.rows),
                line,
            ),
            _ => continue,
        };
        out.entry(source).or_default().push(item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn identity_of(text: &str) -> IdentityPolicy {
        IdentityPolicy::parse(Path::new("policies/identity.toml"), text).unwrap()
    }

    const BASE: &str = "reviewers = [\"org/stewards\"]\n[[table]]\nname = \"observations\"\nidentity = [[\"checklist_id\", \"client_observation_id\"]]\nreviewers = [\"org/survey\"]\n";

    #[test]
    fn rewriting_an_identity_to_fit_a_constraint_is_a_relaxation() {
        let head = identity_of(
            "reviewers = [\"org/stewards\"]\n[[table]]\nname = \"observations\"\nidentity = [[\"site_id\", \"observed_window\", \"species_code\"]]\nreviewers = [\"org/survey\", \"mallory\"]\n",
        );
        let items = identity(&identity_of(BASE), &head, &BTreeSet::new());
        let texts: Vec<(&str, Effect, Option<usize>)> =
            items.iter().map(|i| (i.text.as_str(), i.effect, i.line)).collect();
        assert_eq!(
            texts,
            [
                (
                    "change the identity keys of `observations` from (checklist_id, client_observation_id) to (site_id, observed_window, species_code)",
                    Effect::Relaxes,
                    Some(2)
                ),
                ("change who approves `observations` from org/survey to org/survey, mallory", Effect::Relaxes, Some(2)),
            ]
        );
    }

    #[test]
    fn declarations_added_and_removed() {
        let head = identity_of("[[table]]\nname = \"sites\"\nidentity = [[\"code\"]]\n[[table]]\nname = \"counts\"\nidentity = [[\"id\"]]\n");
        let new_tables: BTreeSet<String> = ["counts".to_string()].into();
        let items = identity(&identity_of(BASE), &head, &new_tables);
        let texts: Vec<(&str, Effect)> = items.iter().map(|i| (i.text.as_str(), i.effect)).collect();
        assert_eq!(
            texts,
            [
                ("require no domain review for tables without reviewers of their own (was org/stewards)", Effect::Relaxes),
                ("declare the identity of new table `counts` as (id) (applied in this review: the base has no such table)", Effect::Changes),
                ("remove the identity declaration of `observations` ((checklist_id, client_observation_id)): its unique constraints would no longer be checked against the domain", Effect::Relaxes),
                ("declare the identity of existing table `sites` as (code): unique constraints containing it would pass", Effect::Relaxes),
            ]
        );
    }

    #[test]
    fn smaller_tables_and_higher_thresholds_relax() {
        let parse =
            |text: &str| TablesPolicy::parse(Path::new("policies/tables.toml"), text, &|_| unreachable!()).unwrap();
        let base = parse("[rows]\nobservations = 120_000_000\nsites = 10\n");
        let head = parse("large_table_rows = 500_000_000\n[rows]\nobservations = 500\nbirds = 9\n");
        let text = "large_table_rows = 500_000_000\n[rows]\nobservations = 500\nbirds = 9\n";
        let items = tables(&base, &head, "policies/tables.toml", Some(text), &BTreeSet::new());
        let texts: Vec<(&str, Effect, Option<usize>)> =
            items["policies/tables.toml"].iter().map(|i| (i.text.as_str(), i.effect, i.line)).collect();
        assert_eq!(
            texts,
            [
                ("relax `large_table_rows` from 100000 to 500000000", Effect::Relaxes, Some(1)),
                ("size `birds` at 9 rows (unknown sizes count as large)", Effect::Relaxes, Some(4)),
                ("change the size of `observations` from 120000000 to 500 rows", Effect::Relaxes, Some(3)),
                ("forget the size of `sites` (10 rows; unknown sizes count as large)", Effect::Tightens, None),
            ]
        );
    }
}

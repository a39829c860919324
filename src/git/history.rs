//! The findings only history can give: what a change did to migrations that already exist.
//!
//! Pure: takes the migrations of each side as `(version, path)` pairs (one entry per migration,
//! as the migration discovery lists them) and the changed files, returns findings.
//!
//! Versions compare as runners compare them: split on `.` and `_`, numeric parts by value
//! (`0010` = `10`, `1.10` > `1.9`), trailing zero parts ignored (`1.0` = `1`), other parts as
//! case-insensitive text.

use super::{Change, ChangeKind};
use crate::finding::Finding;
use crate::rules::{
    migration_deleted, migration_edited, migration_out_of_order, migration_renamed, migration_version_conflict,
    RuleMeta,
};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

/// A migration on one side: `(version, repository-relative path)`.
pub type MigrationEntry = (String, String);

fn finding(meta: &RuleMeta, file: &str, message: String) -> Finding {
    Finding::new(meta.id, meta.severity, file, message).help(meta.fix)
}

/// The history findings for `changes`, given the migrations on the base and head sides.
pub fn findings(base: &[MigrationEntry], head: &[MigrationEntry], changes: &[Change]) -> Vec<Finding> {
    let base_by_path: HashMap<&str, &str> = base.iter().map(|(v, p)| (p.as_str(), v.as_str())).collect();
    let head_by_path: HashMap<&str, &str> = head.iter().map(|(v, p)| (p.as_str(), v.as_str())).collect();
    let newest_base = base.iter().max_by(|a, b| compare_versions(&a.0, &b.0));
    let mut out = Vec::new();
    // Head migrations that are new to the runner: added, or renamed with a new version.
    let mut new_paths: Vec<&str> = Vec::new();

    for change in changes {
        let path = change.path.as_str();
        match &change.kind {
            ChangeKind::Modified => {
                if let Some(version) = base_by_path.get(path) {
                    out.push(
                        finding(
                            &migration_edited::META,
                            path,
                            format!(
                                "migration {version} exists on the base revision and was modified: databases that \
                                 already ran it will never run the edit"
                            ),
                        )
                        .fact("version", *version),
                    );
                }
            }
            ChangeKind::Deleted => {
                if let Some(version) = base_by_path.get(path) {
                    out.push(
                        finding(
                            &migration_deleted::META,
                            path,
                            format!(
                                "migration {version} exists on the base revision and was deleted: databases that ran \
                                 it keep its effects, new ones will not get them"
                            ),
                        )
                        .fact("version", *version),
                    );
                }
            }
            ChangeKind::Renamed { from } => match (base_by_path.get(from.as_str()), head_by_path.get(path)) {
                (Some(old_version), Some(new_version)) => {
                    let same = compare_versions(old_version, new_version) == Ordering::Equal;
                    let message = if same {
                        format!("migration {old_version} was renamed from {from}")
                    } else {
                        new_paths.push(path);
                        format!(
                            "migration {old_version} was renamed from {from} and now has version {new_version}: \
                             runners will see a new migration and a missing one"
                        )
                    };
                    out.push(
                        finding(&migration_renamed::META, path, message)
                            .fact("renamed from", from.as_str())
                            .fact("version", format!("{old_version} → {new_version}")),
                    );
                }
                (Some(old_version), None) => out.push(
                    finding(
                        &migration_deleted::META,
                        from,
                        format!(
                            "migration {old_version} was moved out of the migrations to {path}: for the runner it is \
                             deleted"
                        ),
                    )
                    .fact("version", *old_version)
                    .fact("moved to", path),
                ),
                (None, Some(_)) => new_paths.push(path),
                (None, None) => {}
            },
            ChangeKind::Added => {
                if head_by_path.contains_key(path) {
                    new_paths.push(path);
                }
            }
        }
    }

    if let Some((newest_version, newest_path)) = newest_base {
        for path in &new_paths {
            let version = head_by_path[path];
            if compare_versions(version, newest_version) == Ordering::Less {
                out.push(
                    finding(
                        &migration_out_of_order::META,
                        path,
                        format!(
                            "added migration {version} sorts before {newest_version} ({newest_path}), the newest \
                             migration on the base revision: production has already run past it"
                        ),
                    )
                    .fact("version", version)
                    .fact("newest on base", format!("{newest_version} ({newest_path})")),
                );
            }
        }
    }

    let mut by_version: BTreeMap<Vec<Part>, Vec<(&str, &str)>> = BTreeMap::new();
    for (version, path) in head {
        let group = by_version.entry(version_key(version)).or_default();
        // golang-migrate's `.up.sql`/`.down.sql` pair is one migration, whichever half is listed.
        if !group.iter().any(|(_, other)| same_migration(other, path)) {
            group.push((version.as_str(), path.as_str()));
        }
    }
    for group in by_version.values().filter(|g| g.len() > 1) {
        for (version, path) in group.iter().filter(|(_, p)| new_paths.contains(p)) {
            let others = group.iter().filter(|(_, p)| p != path).map(|(_, p)| *p).collect::<Vec<_>>().join(", ");
            out.push(
                finding(
                    &migration_version_conflict::META,
                    path,
                    format!("migration version {version} is also used by {others}"),
                )
                .fact("version", *version)
                .fact("shared with", others),
            );
        }
    }
    out
}

fn same_migration(a: &str, b: &str) -> bool {
    let stem = |p: &str| p.strip_suffix(".up.sql").or_else(|| p.strip_suffix(".down.sql")).map(str::to_string);
    matches!((stem(a), stem(b)), (Some(x), Some(y)) if x == y)
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    // Digits without leading zeros, ordered by length then text: numeric order without overflow.
    Number(usize, String),
    Text(String),
}

fn version_key(version: &str) -> Vec<Part> {
    let mut parts: Vec<Part> = version
        .split(['.', '_'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            if s.bytes().all(|b| b.is_ascii_digit()) {
                let digits = s.trim_start_matches('0');
                Part::Number(digits.len(), digits.to_string())
            } else {
                Part::Text(s.to_lowercase())
            }
        })
        .collect();
    while parts.len() > 1 && parts.last() == Some(&Part::Number(0, String::new())) {
        parts.pop();
    }
    parts
}

/// Orders migration versions as runners do (see the module docs).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    version_key(a).cmp(&version_key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;

    fn entries(list: &[(&str, &str)]) -> Vec<MigrationEntry> {
        list.iter().map(|(v, p)| (v.to_string(), p.to_string())).collect()
    }

    fn change(kind: ChangeKind, path: &str) -> Change {
        Change { kind, path: path.to_string() }
    }

    fn rules(findings: &[Finding]) -> Vec<(String, String)> {
        findings.iter().map(|f| (f.rule.clone(), f.file.clone())).collect()
    }

    fn base() -> Vec<MigrationEntry> {
        entries(&[("0001", "m/0001_init.sql"), ("0002", "m/0002_sites.sql"), ("0003", "m/0003_sightings.sql")])
    }

    #[test]
    fn versions_compare_numerically_by_part() {
        assert_eq!(compare_versions("0010", "10"), Ordering::Equal);
        assert_eq!(compare_versions("9", "10"), Ordering::Less);
        assert_eq!(compare_versions("1.10", "1.9"), Ordering::Greater);
        assert_eq!(compare_versions("1_1", "1.1"), Ordering::Equal);
        assert_eq!(compare_versions("2.0", "2"), Ordering::Equal);
        assert_eq!(compare_versions("20240101120000", "20231231235959"), Ordering::Greater);
        assert_eq!(compare_versions("000", "0"), Ordering::Equal);
    }

    #[test]
    fn an_added_migration_after_the_newest_is_fine() {
        let mut head = base();
        head.push(("0004".into(), "m/0004_idx.sql".into()));
        let found = findings(&base(), &head, &[change(ChangeKind::Added, "m/0004_idx.sql")]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn editing_deleting_and_renaming_old_migrations() {
        let head = entries(&[("0001", "m/0001_init.sql"), ("0003", "m/0003_sightings_v2.sql")]);
        let changes = [
            change(ChangeKind::Modified, "m/0001_init.sql"),
            change(ChangeKind::Deleted, "m/0002_sites.sql"),
            change(ChangeKind::Renamed { from: "m/0003_sightings.sql".into() }, "m/0003_sightings_v2.sql"),
            change(ChangeKind::Modified, "README.md"),
        ];
        let found = findings(&base(), &head, &changes);
        assert_eq!(
            rules(&found),
            vec![
                ("migration-edited".into(), "m/0001_init.sql".into()),
                ("migration-deleted".into(), "m/0002_sites.sql".into()),
                ("migration-renamed".into(), "m/0003_sightings_v2.sql".into()),
            ]
        );
        assert_eq!(found[0].severity, Severity::Error);
        assert_eq!(found[2].severity, Severity::Warning);
        assert!(found[2].message.contains("renamed from m/0003_sightings.sql"));
    }

    #[test]
    fn moving_a_migration_out_of_the_directory_deletes_it() {
        let head = entries(&[("0001", "m/0001_init.sql"), ("0002", "m/0002_sites.sql")]);
        let changes = [change(ChangeKind::Renamed { from: "m/0003_sightings.sql".into() }, "attic/0003.sql")];
        let found = findings(&base(), &head, &changes);
        assert_eq!(rules(&found), vec![("migration-deleted".into(), "m/0003_sightings.sql".into())]);
        assert!(found[0].message.contains("attic/0003.sql"));
    }

    #[test]
    fn an_added_migration_before_the_newest_on_base_is_out_of_order() {
        let base =
            entries(&[("20240101000000", "m/20240101000000_a.sql"), ("20240301000000", "m/20240301000000_c.sql")]);
        let mut head = base.clone();
        head.push(("20240201000000".into(), "m/20240201000000_b.sql".into()));
        let found = findings(&base, &head, &[change(ChangeKind::Added, "m/20240201000000_b.sql")]);
        assert_eq!(rules(&found), vec![("migration-out-of-order".into(), "m/20240201000000_b.sql".into())]);
        assert!(found[0].message.contains("20240301000000"));
    }

    #[test]
    fn a_rename_that_changes_the_version_is_judged_as_new() {
        let head =
            entries(&[("0001", "m/0001_init.sql"), ("0002", "m/0002_sites.sql"), ("0000", "m/0000_sightings.sql")]);
        let changes = [change(ChangeKind::Renamed { from: "m/0003_sightings.sql".into() }, "m/0000_sightings.sql")];
        let found = findings(&base(), &head, &changes);
        assert_eq!(
            rules(&found),
            vec![
                ("migration-renamed".into(), "m/0000_sightings.sql".into()),
                ("migration-out-of-order".into(), "m/0000_sightings.sql".into()),
            ]
        );
    }

    #[test]
    fn an_added_migration_reusing_a_version_conflicts() {
        let mut head = base();
        head.push(("3".into(), "m/3_other.sql".into()));
        head.push(("0004".into(), "m/0004_a.sql".into()));
        head.push(("0004".into(), "m/0004_b.sql".into()));
        let changes = [
            change(ChangeKind::Added, "m/0004_a.sql"),
            change(ChangeKind::Added, "m/0004_b.sql"),
            change(ChangeKind::Added, "m/3_other.sql"),
        ];
        let found = findings(&base(), &head, &changes);
        let mut got = rules(&found);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("migration-version-conflict".into(), "m/0004_a.sql".into()),
                ("migration-version-conflict".into(), "m/0004_b.sql".into()),
                ("migration-version-conflict".into(), "m/3_other.sql".into()),
            ]
        );
        let other = found.iter().find(|f| f.file == "m/3_other.sql").unwrap();
        assert!(other.message.contains("m/0003_sightings.sql"), "{}", other.message);
    }

    #[test]
    fn up_and_down_halves_are_one_migration() {
        let base = entries(&[("1", "m/1_init.up.sql"), ("1", "m/1_init.down.sql")]);
        let mut head = base.clone();
        head.push(("2".into(), "m/2_x.up.sql".into()));
        head.push(("2".into(), "m/2_x.down.sql".into()));
        let changes = [change(ChangeKind::Added, "m/2_x.down.sql"), change(ChangeKind::Added, "m/2_x.up.sql")];
        assert!(findings(&base, &head, &changes).is_empty());
    }

    #[test]
    fn pre_existing_conflicts_on_base_are_not_blamed_on_the_change() {
        let base = entries(&[("1", "m/1_a.sql"), ("1", "m/1_b.sql")]);
        let mut head = base.clone();
        head.push(("2".into(), "m/2.sql".into()));
        assert!(findings(&base, &head, &[change(ChangeKind::Added, "m/2.sql")]).is_empty());
    }
}

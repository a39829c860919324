//! The stages of `sluice check` that read both sides' migrations in the order their tool
//! applies them, find what the change did to the history, and which migrations it adds.

use super::revisions::Revisions;
use crate::config::{Loaded, RuleLevel};
use crate::error::Result;
use crate::finding::Finding;
use crate::git::tree::GitTree;
use crate::git::{self, history, ChangeKind};
use crate::lint;
use crate::rules::{migration_edited, migration_out_of_order};
use crate::schema::migrations::Migration;
use crate::schema::tools::{self, Detection, Tree};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One migration file of a side: the runner's view plus its repository-relative path.
struct SideMigration {
    migration: Migration,
    path: String,
}

/// Both sides' migrations directories, and their migrations in the order the tool runs them.
pub(super) struct Sides {
    pub base_tree: GitTree,
    pub head_tree: GitTree,
    /// The tool is the head side's, unless the change removes every migration.
    pub detection: Detection,
    base: Vec<SideMigration>,
    head: Vec<SideMigration>,
    /// The trusted `[rules]` levels, for the history findings.
    levels: BTreeMap<String, RuleLevel>,
}

impl Sides {
    pub fn order(revisions: &Revisions, loaded: &Loaded) -> Result<Sides> {
        let migrations_dir = loaded.migrations_dir();
        let base_tree = GitTree::open(&revisions.repo, revisions.base_side(), &migrations_dir, &loaded.root)?;
        let head_tree = GitTree::open(&revisions.repo, revisions.head, &migrations_dir, &loaded.root)?;
        let detection_tree: &dyn Tree = if head_tree.files().is_empty() { &base_tree } else { &head_tree };
        let detection = tools::resolve(loaded.config.migrations.layout, detection_tree)?;
        let list = |tree: &GitTree| -> Result<Vec<SideMigration>> {
            Ok(detection
                .tool
                .order(tree)?
                .migrations
                .into_iter()
                .map(|migration| SideMigration { path: tree.display(&migration.up), migration })
                .collect())
        };
        let base = list(&base_tree)?;
        let head = list(&head_tree)?;
        Ok(Sides { base_tree, head_tree, detection, base, head, levels: loaded.config.rules.clone() })
    }

    /// What the change did to migrations that already exist (`migration-edited`, `-deleted`,
    /// `-renamed`, `-out-of-order`, `-version-conflict`), with the trusted `[rules]` levels applied.
    pub fn history_findings(&self, revisions: &Revisions) -> Result<Vec<Finding>> {
        let (base, head) = (self.entries(&self.base), self.entries(&self.head));
        let mut findings = history::findings(&base, &head, &revisions.changes);
        findings.extend(self.renamed_and_edited(revisions, &base, &head)?);
        migration_out_of_order::weigh_for_runner(&mut findings, self.detection.layout());
        Ok(lint::apply_levels(findings, &self.levels))
    }

    /// The migrations new to the runner, by repository-relative path in the order they run: on
    /// head, not on base, and not an old migration moved under its old version; or a repeatable
    /// the change modified.
    pub fn added(&self, revisions: &Revisions) -> Vec<String> {
        let changes = &revisions.changes;
        let base_paths: BTreeSet<&str> = self.base.iter().map(|m| m.path.as_str()).collect();
        let kept_by_rename = renamed_same_version(changes, &self.entries(&self.base), &self.entries(&self.head));
        let modified: BTreeSet<&str> =
            changes.iter().filter(|c| c.kind == ChangeKind::Modified).map(|c| c.path.as_str()).collect();
        self.head
            .iter()
            .filter(|m| {
                let new = !base_paths.contains(m.path.as_str()) && !kept_by_rename.contains(m.path.as_str());
                new || (m.migration.repeatable && modified.contains(m.path.as_str()))
            })
            .map(|m| m.path.clone())
            .collect()
    }

    /// Flyway's repeatables are meant to change: they are not history, and a changed one runs again.
    fn entries(&self, list: &[SideMigration]) -> Vec<history::MigrationEntry> {
        list.iter().filter(|m| !m.migration.repeatable).map(|m| (m.migration.version.clone(), m.path.clone())).collect()
    }

    /// A migration renamed under its old version and edited in the same change: the runner will
    /// not run the edit any more than an edit in place.
    fn renamed_and_edited(
        &self,
        revisions: &Revisions,
        base: &[history::MigrationEntry],
        head: &[history::MigrationEntry],
    ) -> Result<Vec<Finding>> {
        let base_texts: HashMap<&str, &str> =
            self.base_tree.texts().iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        let changes = &revisions.changes;
        let mut out = Vec::new();
        for path in renamed_same_version(changes, base, head) {
            let Some(change) = changes.iter().find(|c| c.path == path) else {
                continue;
            };
            let ChangeKind::Renamed { from } = &change.kind else {
                continue;
            };
            let (Some(old), Some(new)) =
                (base_texts.get(from.as_str()), git::read_file(&revisions.repo, &revisions.head, path)?)
            else {
                continue;
            };
            if *old != new {
                let version = head.iter().find(|(_, p)| p == path).map(|(v, _)| v.as_str()).unwrap_or("");
                out.push(
                    Finding::new(
                        migration_edited::META.id,
                        migration_edited::META.severity,
                        path,
                        format!(
                            "migration {version} was renamed from {from} and modified: databases that already ran \
                             it will never run the edit"
                        ),
                    )
                    .help(migration_edited::META.fix)
                    .fact("version", version)
                    .fact("renamed from", from.as_str()),
                );
            }
        }
        Ok(out)
    }
}

/// Old migrations moved under the same version: the runner has run them, they are not new.
fn renamed_same_version<'a>(
    changes: &'a [git::Change],
    base: &[history::MigrationEntry],
    head: &[history::MigrationEntry],
) -> BTreeSet<&'a str> {
    changes
        .iter()
        .filter_map(|c| match &c.kind {
            ChangeKind::Renamed { from } => {
                let old = base.iter().find(|(_, p)| p == from)?;
                let new = head.iter().find(|(_, p)| *p == c.path)?;
                (history::compare_versions(&old.0, &new.0).is_eq()).then_some(c.path.as_str())
            }
            _ => None,
        })
        .collect()
}

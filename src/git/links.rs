//! The changes under a directory the gate reads, as its runner sees them when a symbolic link is
//! on the way. Git's diff compares trees entry by entry: a pull request that replaces
//! `db/migrations` with a link to `decoy/` shows as every migration deleted and a new blob at
//! `db/migrations`, while the runner, following the link, finds `db/migrations/0001_init.sql`
//! with the decoy's text. Where a gate directory is reached through a link on either side, its
//! changes are the two sides' files compared by content under the directory's own name.

use super::{blob_ids, crosses_link, Change, ChangeKind, Oid, Repo, Side};
use crate::error::Result;
use std::collections::BTreeMap;
use std::path::Path;

/// `changes`, with the changes under each of `dirs` (repository-relative) that a link leads to,
/// on the base or the head, replaced by the comparison of what each side holds there.
pub fn seen_through_links(
    repo: &Repo,
    base: Oid,
    head: &Side,
    mut changes: Vec<Change>,
    dirs: &[String],
) -> Result<Vec<Change>> {
    let base_side = Side::Rev(base);
    for dir in dirs.iter().filter(|d| !d.is_empty()) {
        if !crosses_link(repo, &base_side, dir)? && !crosses_link(repo, head, dir)? {
            continue;
        }
        let under = |path: &str| path.strip_prefix(dir.as_str()).is_some_and(|rest| rest.starts_with('/'));
        changes = changes
            .into_iter()
            .filter_map(|change| match change.kind {
                ChangeKind::Renamed { from } => match (under(&from), under(&change.path)) {
                    (false, false) => Some(Change { kind: ChangeKind::Renamed { from }, path: change.path }),
                    (true, true) => None,
                    (true, false) => Some(Change { kind: ChangeKind::Added, path: change.path }),
                    (false, true) => Some(Change { kind: ChangeKind::Deleted, path: from }),
                },
                _ if under(&change.path) => None,
                _ => Some(change),
            })
            .collect();
        let old: BTreeMap<String, Oid> = blob_ids(repo, &base_side, Path::new(dir))?.into_iter().collect();
        let new: BTreeMap<String, Oid> = blob_ids(repo, head, Path::new(dir))?.into_iter().collect();
        for (path, id) in &old {
            match new.get(path) {
                None => changes.push(Change { kind: ChangeKind::Deleted, path: path.clone() }),
                Some(other) if other != id => changes.push(Change { kind: ChangeKind::Modified, path: path.clone() }),
                Some(_) => {}
            }
        }
        for path in new.keys().filter(|p| !old.contains_key(*p)) {
            changes.push(Change { kind: ChangeKind::Added, path: path.clone() });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes.dedup();
    Ok(changes)
}

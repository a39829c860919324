//! Submodules (gitlinks) on one side: a directory that holds another repository's commit, not
//! files of this one. `sluice check` reads revisions through git, and a submodule's files are
//! in no revision of this repository: what it holds cannot be reviewed here.

use super::{relative_dir, Repo, Side};
use crate::error::{Error, Result};
use std::path::Path;

/// Git's file mode for a gitlink.
const GITLINK: u32 = 0o160000;

/// The submodules at or under `dir` on `side`, as sorted repository-relative paths. The working
/// tree's are the index's (what `git add` recorded).
pub fn under(repo: &Repo, side: &Side, dir: &Path) -> Result<Vec<String>> {
    let prefix = relative_dir(repo.root(), dir);
    let inside = |path: &str| prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"));
    let mut out = Vec::new();
    match side {
        Side::Rev(oid) => {
            let commit =
                repo.git().find_commit(*oid).map_err(|e| Error::Other(format!("git: {oid}: {}", e.message())))?;
            let tree = commit.tree().map_err(|e| Error::Other(format!("git: {oid}: {}", e.message())))?;
            let subtree = if prefix.is_empty() {
                tree
            } else {
                match tree.get_path(Path::new(&prefix)) {
                    Ok(entry) if entry.kind() == Some(git2::ObjectType::Commit) => return Ok(vec![prefix]),
                    Ok(entry) => match entry.to_object(repo.git()).ok().and_then(|o| o.into_tree().ok()) {
                        Some(tree) => tree,
                        None => return Ok(out),
                    },
                    Err(_) => return Ok(out),
                }
            };
            subtree
                .walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
                    if entry.kind() == Some(git2::ObjectType::Commit) {
                        let name = entry.name().unwrap_or("?");
                        let path = if prefix.is_empty() {
                            format!("{parent}{name}")
                        } else {
                            format!("{prefix}/{parent}{name}")
                        };
                        out.push(path);
                    }
                    git2::TreeWalkResult::Ok
                })
                .map_err(|e| Error::Other(format!("git: {prefix}: {}", e.message())))?;
        }
        Side::WorkTree => {
            let index = repo.git().index().map_err(|e| Error::Other(format!("git: the index: {}", e.message())))?;
            for entry in index.iter().filter(|e| e.mode == GITLINK) {
                let path = String::from_utf8_lossy(&entry.path).into_owned();
                if inside(&path) {
                    out.push(path);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

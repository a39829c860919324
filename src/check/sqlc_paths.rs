//! The query paths of sqlc's configurations, as the gate reads them: from the base revision.

use super::revisions::Revisions;
use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::git;
use crate::queries::sqlc;
use std::path::{Path, PathBuf};

/// sqlc's query paths, from the sqlc configurations the trusted configuration names (or the
/// one at the project's root), read from the base revision like the rest of the gate's
/// configuration, each with its configuration's path.
pub(super) fn query_paths(revisions: &Revisions, loaded: &Loaded) -> Result<Vec<(PathBuf, String)>> {
    let repo = &revisions.repo;
    let base = revisions.base_side();
    let named = loaded.sqlc_configs();
    let candidates =
        named.clone().unwrap_or_else(|| sqlc::CONFIG_FILES.iter().map(|name| loaded.root.join(name)).collect());
    let mut out = Vec::new();
    for config in candidates {
        let Some(relative) = repo.relative(&config) else { continue };
        let Some(text) = git::read_file(repo, &base, &relative)? else {
            if named.is_some() {
                return Err(Error::Usage(format!(
                    "[queries] sqlc {relative}: no such file on the base revision (the gate reads its configuration \
                     from the base)"
                )));
            }
            continue;
        };
        let parsed = sqlc::parse(Path::new(&relative), &text)?;
        out.extend(parsed.queries.into_iter().map(|path| (repo.root().join(path), relative.clone())));
        if named.is_none() {
            break;
        }
    }
    Ok(out)
}

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
    // A named configuration the base cannot give is an error naming it: never a source skipped.
    loaded.check_named_files_of("[queries] sqlc", &|config| {
        Ok(match repo.relative(config) {
            None => Some(
                "outside the repository; `sluice check` reads sqlc's configuration and its queries from the base \
                 revision, where a change cannot edit them (use `sluice lint` for files outside it)",
            ),
            Some(relative) => (git::read_file(repo, &base, &relative)?.is_none()).then_some(
                "no such file on the base revision (the gate reads its configuration from the base; a configuration \
                 this change adds is read once merged)",
            ),
        })
    })?;
    let mut out = Vec::new();
    for config in candidates {
        let Some(relative) = repo.relative(&config) else { continue };
        let Some(text) = git::read_file(repo, &base, &relative)? else {
            if named.is_some() {
                return Err(Error::Usage(format!("[queries] sqlc {relative}: no such file on the base revision")));
            }
            continue;
        };
        let parsed = sqlc::parse(Path::new(&relative), &text)?;
        for path in &parsed.queries {
            // A query path the head does not have would leave its queries unchecked (moved
            // elsewhere, say): the error names it, as sqlc's own would.
            let query_path = git::slash(path);
            if !git::is_dir(repo, &revisions.head, &query_path)?
                && git::read_file(repo, &revisions.head, &query_path)?.is_none()
            {
                return Err(Error::invalid(
                    Path::new(&relative),
                    None,
                    format!(
                        "query path {query_path} does not exist on the head revision; the gate reads sqlc's \
                         configuration from the base revision, so its queries would go unchecked"
                    ),
                ));
            }
        }
        out.extend(parsed.queries.into_iter().map(|path| (repo.root().join(path), relative.clone())));
        if named.is_none() {
            break;
        }
    }
    Ok(out)
}

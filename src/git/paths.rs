//! Repository-relative paths as git names them: `/` separators, no `./`, `""` for the root.

use std::path::{Component, Path};

/// `dir` as a repository-relative `/` path without `./` or a trailing slash ("" for the root).
/// An absolute directory outside the repository maps to a prefix no repository path has.
pub(crate) fn relative_dir(repo_root: &Path, dir: &Path) -> String {
    let relative = if dir.is_absolute() {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        match canonical(dir).strip_prefix(canonical(repo_root)) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => match dir.strip_prefix(repo_root) {
                Ok(rest) => rest.to_path_buf(),
                Err(_) => return "\0outside the repository".to_string(),
            },
        }
    } else {
        dir.to_path_buf()
    };
    relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `path` without the leading directory `prefix` (both repository-relative, with `/`).
pub(crate) fn strip_dir<'a>(path: &'a str, prefix: &str) -> &'a str {
    match prefix {
        "" => path,
        _ => path.strip_prefix(prefix).map(|r| r.trim_start_matches('/')).unwrap_or(path),
    }
}

/// `prefix/rest`, or `rest` when the prefix is the repository root.
pub(crate) fn join_dir(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_string()
    } else {
        format!("{prefix}/{rest}")
    }
}

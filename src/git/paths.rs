//! Repository-relative paths as git names them: `/` separators, no `./`, `""` for the root.

use std::path::{Component, Path, PathBuf};

/// `dir` as a repository-relative `/` path without `./` or a trailing slash ("" for the root).
/// An absolute directory outside the repository maps to a prefix no repository path has.
///
/// Lexical inside the repository: a symbolic link below the root is never followed on disk,
/// because the disk is the head's checkout and a base revision must be read as its own tree
/// has it (`super::resolve`). Only the part of `dir` that leads to the root may go through
/// links (a `--repo` given through a symlinked directory), matched by its shortest ancestor
/// that is the root.
pub(crate) fn relative_dir(repo_root: &Path, dir: &Path) -> String {
    let relative = if dir.is_absolute() {
        let dir = lexical(dir);
        match dir.strip_prefix(lexical(repo_root)) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => match below_root_through_links(repo_root, &dir) {
                Some(rest) => rest,
                None => return "\0outside the repository".to_string(),
            },
        }
    } else {
        dir.to_path_buf()
    };
    let mut parts: Vec<String> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir if parts.pop().is_none() => return "\0outside the repository".to_string(),
            _ => {}
        }
    }
    parts.join("/")
}

/// `path` with `.` and `..` taken away by their text (`/a/b/../c` is `/a/c`).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What follows the shortest ancestor of `dir` that is the repository root on disk.
fn below_root_through_links(repo_root: &Path, dir: &Path) -> Option<PathBuf> {
    let root = repo_root.canonicalize().ok()?;
    let ancestors: Vec<&Path> = dir.ancestors().collect();
    let at = ancestors.iter().rev().find(|a| a.canonicalize().is_ok_and(|c| c == root))?;
    dir.strip_prefix(at).ok().map(Path::to_path_buf)
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

#[cfg(test)]
mod tests {
    use super::relative_dir;
    use std::path::Path;

    #[test]
    fn parent_components_are_resolved_and_climbing_out_is_outside() {
        let root = Path::new("/nonexistent/repo");
        assert_eq!(relative_dir(root, Path::new("config/../db/query")), "db/query");
        assert_eq!(relative_dir(root, Path::new("/nonexistent/repo/./db/../queries/")), "queries");
        assert!(relative_dir(root, Path::new("/nonexistent/repo/../other/sqlc.yaml")).starts_with('\0'));
        assert!(relative_dir(root, Path::new("../sqlc.yaml")).starts_with('\0'));
        assert!(relative_dir(root, Path::new("/elsewhere/sqlc.yaml")).starts_with('\0'));
    }
}

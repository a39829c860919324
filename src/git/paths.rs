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
    // `..` is resolved by its text (the path may not exist): `db/../queries` is `queries`, and
    // one that climbs above the root is outside the repository.
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

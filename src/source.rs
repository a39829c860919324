//! How Sluice names the files it reads, in findings, notes and errors: with `/` separators, and
//! relative to the repository (or the working directory) when inside it.

use std::path::{Path, PathBuf};

/// The directory paths in findings are relative to: the root of the repository `cwd` is in,
/// else `cwd` itself.
pub fn display_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

/// `path` as findings show it: relative to `root` when under it, with `/`.
pub fn display_path(path: &Path, root: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = absolute.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf());
    shown.to_string_lossy().replace('\\', "/")
}

/// A path as git names it: `/` separators.
pub fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

//! The files a migration tool sees: the migrations directory and the project around it, read
//! from disk ([`DiskTree`]) or from a git revision (`git::GitTree`).

use crate::error::{read_text, Error, Result};
use std::path::{Component, Path, PathBuf};

/// Read access to a migrations directory and the project files around it (markers such as
/// `go.mod`, `flyway.conf`, `package.json`).
pub trait Tree: Sync {
    /// Every file under the migrations directory, relative to it, sorted.
    fn files(&self) -> &[PathBuf];
    /// A file under the migrations directory; `None` when it does not exist.
    fn read(&self, relative: &Path) -> Result<Option<String>>;
    /// [`read`](Self::read), for a look at a file that will be read again (detecting a tool by
    /// a marker in its files): a tree may keep the text for that read.
    fn peek(&self, relative: &Path) -> Result<Option<String>> {
        self.read(relative)
    }
    /// The migrations directory relative to the project root (`db/migrations`; empty when it is the root).
    fn dir(&self) -> &Path;
    /// The nearest file named `name` in the migrations directory or one of its parents up to the
    /// project root: the directory holding it (relative to the project root) and its text.
    fn nearby(&self, name: &str) -> Result<Option<(PathBuf, String)>>;
    /// How findings name a file under the migrations directory.
    fn display(&self, relative: &Path) -> String;

    /// Whether `relative` is one of [`files`](Self::files).
    fn has(&self, relative: &Path) -> bool {
        self.files().binary_search_by(|p| p.as_path().cmp(relative)).is_ok()
    }
}

/// `path` without `.` and with `..` applied; `None` when it climbs above its start.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The largest file [`DiskTree`] keeps once peeked at.
const KEPT_FILE_BYTES: usize = 256 * 1024;

/// A migrations directory on disk.
pub struct DiskTree {
    /// Absolute.
    absolute: PathBuf,
    /// `dir` relative to the project root.
    relative_dir: PathBuf,
    /// The directories searched for nearby files, nearest first.
    ancestors: Vec<PathBuf>,
    files: Vec<PathBuf>,
    /// The text of each of `files` once peeked at, when small, until it is read: detecting the
    /// tool reads the files its markers could be in, then loading reads them again. Large files
    /// are read again rather than held twice, and a text read is not kept.
    texts: Vec<std::sync::Mutex<Option<String>>>,
    /// The directory findings' paths are relative to.
    display_root: PathBuf,
}

impl DiskTree {
    /// Lists `dir` (recursively, following file symlinks; see [`list_files`]). `project_root` bounds
    /// the search for nearby files; `display_root` is what findings' paths are relative to.
    pub fn open(dir: &Path, project_root: &Path, display_root: &Path) -> Result<DiskTree> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        let project_root = std::path::absolute(project_root).unwrap_or_else(|_| project_root.to_path_buf());
        let files = list_files(&dir)?;
        let mut ancestors = Vec::new();
        let (relative_dir, bounded) = match dir.strip_prefix(&project_root) {
            Ok(relative) => (relative.to_path_buf(), true),
            Err(_) => (PathBuf::new(), false),
        };
        for ancestor in dir.ancestors() {
            ancestors.push(ancestor.to_path_buf());
            if !bounded || ancestor == project_root {
                break;
            }
        }
        let texts = files.iter().map(|_| std::sync::Mutex::new(None)).collect();
        Ok(DiskTree { absolute: dir, relative_dir, ancestors, files, texts, display_root: display_root.to_path_buf() })
    }
}

impl DiskTree {
    fn listed(&self, relative: &Path) -> Option<usize> {
        self.files.binary_search_by(|p| p.as_path().cmp(relative)).ok()
    }

    fn kept(&self, at: usize) -> std::sync::MutexGuard<'_, Option<String>> {
        // A panic while holding it leaves an Option: still usable.
        self.texts[at].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn read_from_disk(&self, relative: &Path, listed: Option<usize>) -> Result<Option<String>> {
        let path = self.absolute.join(relative);
        // A listed file was one when the directory was listed: no need to ask again.
        if listed.is_none() && !path.is_file() {
            return Ok(None);
        }
        // Errors are not kept: reading again says the same.
        read_text(&path).map(Some)
    }
}

impl Tree for DiskTree {
    fn files(&self) -> &[PathBuf] {
        &self.files
    }

    fn read(&self, relative: &Path) -> Result<Option<String>> {
        let listed = self.listed(relative);
        if let Some(text) = listed.and_then(|at| self.kept(at).take()) {
            return Ok(Some(text));
        }
        self.read_from_disk(relative, listed)
    }

    fn peek(&self, relative: &Path) -> Result<Option<String>> {
        let listed = self.listed(relative);
        if let Some(text) = listed.and_then(|at| self.kept(at).clone()) {
            return Ok(Some(text));
        }
        let text = self.read_from_disk(relative, listed)?;
        if let (Some(at), Some(text)) = (listed, text.as_ref().filter(|t| t.len() <= KEPT_FILE_BYTES)) {
            *self.kept(at) = Some(text.clone());
        }
        Ok(text)
    }

    fn dir(&self) -> &Path {
        &self.relative_dir
    }

    fn nearby(&self, name: &str) -> Result<Option<(PathBuf, String)>> {
        for (depth, ancestor) in self.ancestors.iter().enumerate() {
            let path = ancestor.join(name);
            if path.is_file() {
                let mut holder = self.relative_dir.clone();
                for _ in 0..depth {
                    holder.pop();
                }
                return Ok(Some((holder, read_text(&path)?)));
            }
        }
        Ok(None)
    }

    fn display(&self, relative: &Path) -> String {
        crate::lint::load::display_path(&self.absolute.join(relative), &self.display_root)
    }
}

/// The files under `dir`, relative to it, sorted, at any depth (tools such as Flyway, refinery
/// and Liquibase read subdirectories). Symlinked files are followed; a link that loops or points
/// at nothing is an error naming it, never a silently skipped migration.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: migrations directory not found; set [migrations] dir in sluice.toml or pass --migrations DIR",
            dir.display()
        )));
    }
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(dir).hidden(true).git_ignore(true).follow_links(true).build();
    for entry in walker {
        let entry = entry.map_err(|e| walk_error(dir, e))?;
        let is_file = match entry.file_type() {
            Some(t) if t.is_file() => true,
            // A link the walker could not resolve: say which, rather than skip a migration.
            Some(t) if t.is_symlink() => {
                return Err(Error::Usage(format!(
                    "{}: symbolic link to {} that does not exist; a migration behind it would be skipped",
                    entry.path().display(),
                    std::fs::read_link(entry.path()).map(|t| t.display().to_string()).unwrap_or_default()
                )))
            }
            _ => false,
        };
        if is_file {
            if let Ok(relative) = entry.path().strip_prefix(dir) {
                files.push(relative.to_path_buf());
            }
        }
    }
    files.sort();
    Ok(files)
}

fn walk_error(dir: &Path, error: ignore::Error) -> Error {
    let loop_in = |e: &ignore::Error| match e {
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } => match err.as_ref() {
            ignore::Error::Loop { child, .. } => Some(child.clone()),
            _ => None,
        },
        _ => None,
    };
    let path = match &error {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        _ => None,
    };
    let missing = error.io_error().is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    match (loop_in(&error), path) {
        (Some(child), _) => Error::Usage(format!(
            "{}: symbolic link loop under {}: a migration behind it cannot be read",
            child.display(),
            dir.display()
        )),
        (None, Some(path)) if missing => Error::Usage(format!(
            "{}: symbolic link to {}, which does not exist; a migration behind it would be skipped",
            path.display(),
            std::fs::read_link(&path).map(|t| t.display().to_string()).unwrap_or_else(|_| "nothing".into())
        )),
        _ => Error::Usage(format!("{}: cannot read the migrations directory: {error}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinked_files_are_followed_and_broken_links_and_loops_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::write(shared.join("base.sql"), "CREATE TABLE t (a int);").unwrap();
        let migrations = dir.path().join("migrations");
        std::fs::create_dir_all(&migrations).unwrap();
        std::os::unix::fs::symlink(shared.join("base.sql"), migrations.join("001_base.sql")).unwrap();
        assert_eq!(list_files(&migrations).unwrap(), [PathBuf::from("001_base.sql")]);

        std::os::unix::fs::symlink(dir.path().join("missing.sql"), migrations.join("002_gone.sql")).unwrap();
        let error = list_files(&migrations).unwrap_err().to_string();
        assert!(error.contains("002_gone.sql") && error.contains("does not exist"), "{error}");
        std::fs::remove_file(migrations.join("002_gone.sql")).unwrap();

        std::fs::create_dir_all(migrations.join("sub")).unwrap();
        std::os::unix::fs::symlink(&migrations, migrations.join("sub/again")).unwrap();
        let error = list_files(&migrations).unwrap_err().to_string();
        assert!(error.contains("loop"), "{error}");
    }

    #[test]
    fn a_text_peeked_at_is_kept_for_its_next_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("001.sql");
        std::fs::write(&file, "one").unwrap();
        let tree = DiskTree::open(dir.path(), dir.path(), dir.path()).unwrap();
        let relative = Path::new("001.sql");
        assert_eq!(tree.peek(relative).unwrap().as_deref(), Some("one"));
        std::fs::write(&file, "two").unwrap();
        assert_eq!(tree.peek(relative).unwrap().as_deref(), Some("one"), "kept");
        assert_eq!(tree.read(relative).unwrap().as_deref(), Some("one"), "handed over");
        assert_eq!(tree.read(relative).unwrap().as_deref(), Some("two"), "no longer kept");
        assert_eq!(tree.read(Path::new("002.sql")).unwrap(), None);
    }

    #[test]
    fn nearby_files_are_found_up_to_the_project_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let migrations = project.join("db/migrations");
        std::fs::create_dir_all(&migrations).unwrap();
        std::fs::write(dir.path().join("go.mod"), "outside").unwrap();
        std::fs::write(project.join("flyway.conf"), "flyway.mixed=true").unwrap();
        let tree = DiskTree::open(&migrations, &project, &project).unwrap();
        assert_eq!(tree.dir(), Path::new("db/migrations"));
        assert_eq!(tree.nearby("flyway.conf").unwrap(), Some((PathBuf::new(), "flyway.mixed=true".into())));
        assert_eq!(tree.nearby("go.mod").unwrap(), None, "above the project root");
        assert_eq!(normalize(Path::new("db/../db/./migrations")), Some(PathBuf::from("db/migrations")));
        assert_eq!(normalize(Path::new("../x")), None);
    }
}

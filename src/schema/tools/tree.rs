//! The files a migration tool sees: the migrations directory and the project around it, read
//! from disk ([`DiskTree`]) or from a git revision (`git::tree::GitTree`).

use crate::error::{read_text, Error, Result};
use std::collections::HashMap;
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

/// A relative path of plain components only: no `.`, `..`, root, doubled or trailing `/`.
fn is_plain(path: &[u8]) -> bool {
    !path.is_empty() && path.split(|&c| c == b'/').all(|part| !part.is_empty() && part != b"." && part != b"..")
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
    /// Where each of `files` is in it: the tools look files up a few times per migration, and a
    /// binary search comparing `Path`s component by component was 8% of a lint of crates.io.
    positions: HashMap<PathBuf, usize, foldhash::fast::RandomState>,
    /// The text of each of `files` read ahead while listing ([`open_to_load`](Self::open_to_load))
    /// or once peeked at, when small, until it is read: detecting the tool reads the files its
    /// markers could be in, then loading reads them again. Large files peeked at are read again
    /// rather than held twice, and a text read is not kept.
    texts: Vec<std::sync::Mutex<Option<String>>>,
    /// The directory findings' paths are relative to.
    display_root: PathBuf,
    /// How findings name the directory itself (see [`Tree::display`]), the start of every
    /// file's name.
    display_dir: String,
}

impl DiskTree {
    /// Lists `dir` (recursively, following file symlinks; see [`list_files`]). `project_root` bounds
    /// the search for nearby files; `display_root` is what findings' paths are relative to.
    pub fn open(dir: &Path, project_root: &Path, display_root: &Path) -> Result<DiskTree> {
        Self::open_with(dir, project_root, display_root, None)
    }

    /// [`open`](Self::open) a directory whose migrations are about to be loaded: its `.sql`
    /// files (every tool's migrations, and rarely much else) are read while it is listed, on
    /// the cores the single-threaded walk leaves idle, and kept until the tool reads them.
    pub fn open_to_load(dir: &Path, project_root: &Path, display_root: &Path) -> Result<DiskTree> {
        let is_sql = |path: &Path| path.extension().is_some_and(|e| e == "sql");
        Self::open_with(dir, project_root, display_root, Some(&is_sql))
    }

    fn open_with(
        dir: &Path,
        project_root: &Path,
        display_root: &Path,
        read_ahead: Option<&(dyn Fn(&Path) -> bool + Sync)>,
    ) -> Result<DiskTree> {
        let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        let project_root = std::path::absolute(project_root).unwrap_or_else(|_| project_root.to_path_buf());
        let Listing { files, texts: read_ahead } = walk(&dir, can_start_a_thread(), read_ahead)?;
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
        let positions: HashMap<PathBuf, usize, _> =
            files.iter().enumerate().map(|(at, file)| (file.clone(), at)).collect();
        let mut texts: Vec<_> = files.iter().map(|_| std::sync::Mutex::new(None)).collect();
        for (file, text) in read_ahead {
            if let Some(&at) = positions.get(&file) {
                texts[at] = std::sync::Mutex::new(Some(text));
            }
        }
        let mut display_dir = crate::source::display_path(&dir, display_root);
        while display_dir.len() > 1 && display_dir.ends_with('/') {
            display_dir.pop();
        }
        Ok(DiskTree {
            absolute: dir,
            relative_dir,
            ancestors,
            files,
            positions,
            texts,
            display_root: display_root.to_path_buf(),
            display_dir,
        })
    }
}

impl DiskTree {
    fn listed(&self, relative: &Path) -> Option<usize> {
        self.positions.get(relative).copied()
    }

    fn kept(&self, at: usize) -> std::sync::MutexGuard<'_, Option<String>> {
        lock(&self.texts[at])
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

    fn has(&self, relative: &Path) -> bool {
        self.listed(relative).is_some()
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
        use std::os::unix::ffi::OsStrExt;
        if !is_plain(relative.as_os_str().as_bytes()) {
            return crate::source::display_path(&self.absolute.join(relative), &self.display_root);
        }
        // A plain relative path names the file the way `display_path` would, without asking
        // the file system for each file of a history.
        let name = relative.to_string_lossy().replace('\\', "/");
        if self.display_dir.is_empty() {
            name
        } else {
            format!("{}/{name}", self.display_dir)
        }
    }
}

/// The files under `dir`, relative to it, sorted, at any depth (tools such as Flyway, refinery
/// and Liquibase read subdirectories). Symlinked files are followed; a link that loops or points
/// at nothing is an error naming it, never a silently skipped migration.
///
/// `ignore`'s parallel walker, on one thread: it learns which ignore files a directory holds
/// from the directory's own listing, where its sequential walker asks for `.git`, `.jj`,
/// `.ignore`, `.gitignore` and `.git/info/exclude` in every directory (five failed system
/// calls per migration of a diesel or sqlx history: 2.9 ms of Lemmy's 342 directories, 2.1 ms
/// this way). More threads cost more than they save on histories of this size. The parallel
/// walker panics when it cannot start its thread (a limit on threads or address space), so
/// where no thread can start, the sequential walker lists the same files.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    list_files_with(dir, can_start_a_thread())
}

/// [`list_files`] with the parallel walker or the sequential one.
fn list_files_with(dir: &Path, parallel: bool) -> Result<Vec<PathBuf>> {
    Ok(walk(dir, parallel, None)?.files)
}

/// What [`walk`] found: the files, sorted, and the texts of those it read on the way.
struct Listing {
    files: Vec<PathBuf>,
    texts: Vec<(PathBuf, String)>,
}

/// Lists `dir`; with `read_ahead`, also reads the files it selects, on rayon's workers, while
/// the walker goes on listing. A file that cannot be read is left out of the texts: the tool's
/// own read of it reports why. The sequential walker (where no thread can start) reads nothing.
fn walk(dir: &Path, parallel: bool, read_ahead: Option<&(dyn Fn(&Path) -> bool + Sync)>) -> Result<Listing> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: migrations directory not found; set [migrations] dir in sluice.toml or pass --migrations DIR",
            dir.display()
        )));
    }
    let files = std::sync::Mutex::new(Vec::new());
    let failures = std::sync::Mutex::new(Vec::new());
    let texts = std::sync::Mutex::new(Vec::new());
    let listed = |entry: std::result::Result<ignore::DirEntry, ignore::Error>| match entry
        .map_err(|e| walk_error(dir, e))
        .and_then(|entry| listed_file(dir, entry))
    {
        Ok(listed) => listed,
        Err(error) => {
            lock(&failures).push(error);
            None
        }
    };
    let mut walker = ignore::WalkBuilder::new(dir);
    walker.hidden(true).git_ignore(true).follow_links(true);
    if parallel {
        rayon::in_place_scope(|scope| {
            walker.threads(1).build_parallel().run(|| {
                Box::new(|entry| {
                    let Some(relative) = listed(entry) else { return ignore::WalkState::Continue };
                    if read_ahead.is_some_and(|wanted| wanted(&relative)) {
                        let (path, relative, texts) = (dir.join(&relative), relative.clone(), &texts);
                        scope.spawn(move |_| {
                            if let Ok(text) = read_text(&path) {
                                lock(texts).push((relative, text));
                            }
                        });
                    }
                    lock(&files).push(relative);
                    ignore::WalkState::Continue
                })
            });
        });
    } else {
        walker.build().filter_map(listed).for_each(|relative| lock(&files).push(relative));
    }
    // Of several broken entries, the same one every run, in whatever order the walker met them.
    let failures = unlocked(failures);
    if let Some(error) = failures.into_iter().min_by_key(|e| e.to_string()) {
        return Err(error);
    }
    let mut files = unlocked(files);
    sort_paths(&mut files);
    Ok(Listing { files, texts: unlocked(texts) })
}

/// Sorts `files` in `Path`'s order, component by component. Paths of plain components (all the
/// walker lists, in practice) are compared as bytes with `/` below every other byte, which is
/// the same order: comparing `Path`s parses their components on every comparison, 1.6% of a
/// whole lint of Lemmy, before anything else can start.
fn sort_paths(files: &mut [PathBuf]) {
    use std::os::unix::ffi::OsStrExt;
    fn bytes(path: &Path) -> &[u8] {
        path.as_os_str().as_bytes()
    }
    if !files.iter().all(|f| is_plain(bytes(f))) {
        return files.sort();
    }
    let low_separator = |b: u8| if b == b'/' { 0 } else { b };
    files.sort_unstable_by(|a, b| {
        let (a, b) = (bytes(a), bytes(b));
        match a.iter().zip(b).position(|(x, y)| x != y) {
            Some(at) => low_separator(a[at]).cmp(&low_separator(b[at])),
            None => a.len().cmp(&b.len()),
        }
    });
}

/// A lock whose holder panicked still guards a usable value (a list, an `Option`).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// [`lock`]'s value, once no one else holds the mutex.
fn unlocked<T>(mutex: std::sync::Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether this process can start a thread with the default stack, as the parallel walker does.
pub fn can_start_a_thread() -> bool {
    std::thread::Builder::new().spawn(|| {}).is_ok_and(|thread| thread.join().is_ok())
}

/// `path`, which the walker built by joining names onto `dir`, relative to `dir`: the bytes
/// after it, which `strip_prefix` finds comparing component by component (a quarter of listing
/// a history), or `strip_prefix`'s answer when they do not start with it.
fn relative_to(dir: &Path, path: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let dir = dir.as_os_str().as_bytes();
    let rest = path.as_os_str().as_bytes().strip_prefix(dir);
    let rest = rest.and_then(|rest| if dir.ends_with(b"/") { Some(rest) } else { rest.strip_prefix(b"/") });
    match rest {
        Some(rest) if is_plain(rest) => Some(PathBuf::from(std::ffi::OsStr::from_bytes(rest))),
        _ => path.strip_prefix(std::ffi::OsStr::from_bytes(dir)).ok().map(Path::to_path_buf),
    }
}

/// A walked entry as a listed file relative to `dir`: `None` for a directory.
fn listed_file(dir: &Path, entry: ignore::DirEntry) -> Result<Option<PathBuf>> {
    match entry.file_type() {
        Some(t) if t.is_file() => Ok(relative_to(dir, entry.path())),
        // A link the walker could not resolve: say which, rather than skip a migration.
        Some(t) if t.is_symlink() => Err(Error::Usage(format!(
            "{}: symbolic link to {} that does not exist; a migration behind it would be skipped",
            entry.path().display(),
            std::fs::read_link(entry.path()).map(|t| t.display().to_string()).unwrap_or_default()
        ))),
        _ => Ok(None),
    }
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
        // Both walkers: the sequential one lists where no thread can start.
        let walkers = [true, false];
        for parallel in walkers {
            assert_eq!(list_files_with(&migrations, parallel).unwrap(), [PathBuf::from("001_base.sql")]);
        }

        std::os::unix::fs::symlink(dir.path().join("missing.sql"), migrations.join("002_gone.sql")).unwrap();
        for parallel in walkers {
            let error = list_files_with(&migrations, parallel).unwrap_err().to_string();
            assert!(error.contains("002_gone.sql") && error.contains("does not exist"), "{error}");
        }
        std::fs::remove_file(migrations.join("002_gone.sql")).unwrap();

        std::fs::create_dir_all(migrations.join("sub")).unwrap();
        std::os::unix::fs::symlink(&migrations, migrations.join("sub/again")).unwrap();
        for parallel in walkers {
            let error = list_files_with(&migrations, parallel).unwrap_err().to_string();
            assert!(error.contains("loop"), "{error}");
        }
    }

    /// The byte comparison sorts as `Path` does where a separator and a character below `/` meet
    /// (`a/b` before `a-b` and `a.b`, `a` before `a/b`), and non-plain paths fall back to `Path`.
    #[test]
    fn paths_sort_as_path_sorts_them() {
        let names = ["a.b", "a/c", "ab/c", "a", "a b/x", "a/b/c", "a-b", "a/b", "a0", "é/x", "e/x", "a/b.sql", "a/b/"];
        for plain in [true, false] {
            let mut files: Vec<PathBuf> =
                names.iter().filter(|n| !plain || !n.ends_with('/')).map(PathBuf::from).collect();
            let mut expected = files.clone();
            expected.sort();
            sort_paths(&mut files);
            assert_eq!(files, expected, "plain: {plain}");
        }
    }

    /// A history comes back complete and sorted, without hidden or git-ignored files, and of two
    /// broken links the same one is reported every time.
    #[test]
    fn a_listing_is_complete_sorted_and_its_error_deterministic() {
        let dir = tempfile::tempdir().unwrap();
        let migrations = dir.path().join("migrations");
        let mut expected = Vec::new();
        for n in (0..300).rev() {
            let migration = migrations.join(format!("2024-01-01-{n:06}_step"));
            std::fs::create_dir_all(&migration).unwrap();
            for file in ["up.sql", "down.sql"] {
                std::fs::write(migration.join(file), "SELECT 1;").unwrap();
                expected.push(PathBuf::from(format!("2024-01-01-{n:06}_step/{file}")));
            }
        }
        expected.sort();
        std::fs::write(migrations.join(".hidden.sql"), "SELECT 1;").unwrap();
        std::fs::create_dir_all(migrations.join(".git")).unwrap();
        std::fs::write(migrations.join(".gitignore"), "*.bak\n").unwrap();
        std::fs::write(migrations.join("2024-01-01-000007_step/up.sql.bak"), "SELECT 1;").unwrap();
        // The sequential walker (where no thread can start) lists exactly what the parallel one does.
        for parallel in [true, false] {
            assert_eq!(list_files_with(&migrations, parallel).unwrap(), expected, "parallel: {parallel}");
        }

        for broken in ["2024-01-01-000250_step/z.sql", "2024-01-01-000003_step/a.sql"] {
            std::os::unix::fs::symlink(dir.path().join("missing.sql"), migrations.join(broken)).unwrap();
        }
        for parallel in [true, true, true, false, false] {
            let error = list_files_with(&migrations, parallel).unwrap_err().to_string();
            assert!(error.contains("000003_step/a.sql") && error.contains("does not exist"), "{error}");
        }
    }

    /// A listed file is found as `Path` equality finds it (`.` and doubled `/` make no
    /// difference), and an unlisted one is not.
    #[test]
    fn listed_files_are_found_however_they_are_spelled() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("001_a")).unwrap();
        std::fs::write(dir.path().join("001_a/up.sql"), "SELECT 1;").unwrap();
        let tree = DiskTree::open(dir.path(), dir.path(), dir.path()).unwrap();
        for spelled in ["001_a/up.sql", "001_a/./up.sql", "./001_a/up.sql", "001_a//up.sql"] {
            let expected = tree.files().binary_search_by(|p| p.as_path().cmp(Path::new(spelled))).is_ok();
            assert_eq!(tree.has(Path::new(spelled)), expected, "{spelled}");
        }
        assert!(tree.has(Path::new("001_a/up.sql")));
        assert!(!tree.has(Path::new("001_a/down.sql")));
        assert_eq!(tree.read(Path::new("001_a/./up.sql")).unwrap().as_deref(), Some("SELECT 1;"));
    }

    /// Files are named as `display_path` names them, wherever the directory is and however it
    /// was spelled.
    #[test]
    fn display_names_files_as_display_path_does() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("db/migrations/001_a")).unwrap();
        let relative = [Path::new("001_a/up.sql"), Path::new("001_a/../001_a/./up.sql"), Path::new("x\\y.sql")];
        let dirs = [
            root.path().join("db/migrations"),
            root.path().join("db/migrations/"),
            root.path().join("db/./migrations"),
            root.path().to_path_buf(),
            outside.path().to_path_buf(),
        ];
        for dir in &dirs {
            let tree = DiskTree::open(dir, root.path(), root.path()).unwrap();
            for file in relative {
                let expected = crate::source::display_path(&tree.absolute.join(file), root.path());
                assert_eq!(tree.display(file), expected, "{dir:?} {file:?}");
            }
        }
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

    /// A tree opened to load has its `.sql` files' texts from the listing, each handed over
    /// once; other files, and a file that could not be read ahead, are read when asked, with
    /// the same error the tool's read always gave.
    #[test]
    fn a_tree_opened_to_load_reads_its_sql_files_while_listing_them() {
        let dir = tempfile::tempdir().unwrap();
        let migrations: Vec<String> = (0..40).map(|n| format!("{n:03}_step/up.sql")).collect();
        for (n, file) in migrations.iter().enumerate() {
            std::fs::create_dir_all(dir.path().join(file).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(file), format!("SELECT {n};")).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "before").unwrap();
        std::fs::write(dir.path().join("broken.sql"), b"SELECT '\xff';").unwrap();
        let tree = DiskTree::open_to_load(dir.path(), dir.path(), dir.path()).unwrap();
        let plain = DiskTree::open(dir.path(), dir.path(), dir.path()).unwrap();
        for file in &migrations {
            std::fs::write(dir.path().join(file), "changed after the listing").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "after").unwrap();
        for (n, file) in migrations.iter().enumerate() {
            let file = Path::new(file);
            assert_eq!(tree.read(file).unwrap(), Some(format!("SELECT {n};")), "read ahead: {file:?}");
            assert_eq!(tree.read(file).unwrap().as_deref(), Some("changed after the listing"), "handed over once");
            assert_eq!(plain.read(file).unwrap().as_deref(), Some("changed after the listing"), "not read ahead");
        }
        assert_eq!(tree.read(Path::new("notes.txt")).unwrap().as_deref(), Some("after"), "only .sql files");
        let error = tree.read(Path::new("broken.sql")).unwrap_err().to_string();
        assert!(error.contains("broken.sql") && error.contains("not valid UTF-8"), "{error}");
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

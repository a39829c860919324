//! Which files below the code directories hold code of a language Sluice reads SQL from:
//! hidden and git-ignored files left out, except sqlx's `.sqlx` offline data.
//!
//! A warm run does not list the tree again. Like git's untracked cache, the scan cache keeps
//! each directory's listing with its metadata, and the metadata of the ignore files the walk
//! reads in it: adding, removing or renaming an entry changes a directory's modification time,
//! and a changed ignore file shows in its own. So a directory whose metadata and ignore files
//! are what they were (and old enough to tell, as for files: the racy-clean rule) is served
//! from its listing, one `stat` instead of a `getdents` and a pattern match per entry; any
//! other is walked afresh, with everything below it. The ignore files outside the code
//! directories that the walk reads (in their parent directories, the user's global excludes
//! file) are checked on every run; when one changed, the whole tree is walked afresh.

use super::code;
use super::scan_cache::{Dir, Entries, Stat, Table};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Directories no application keeps its own code in.
const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "vendor", "dist", "build", "__pycache__"];

/// The ignore files `ignore`'s walker reads in a directory (its `.git` tells where the repository's
/// exclude file is).
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];

/// What a listing found, and how.
#[derive(Debug)]
pub struct Listed<'a> {
    /// The code files, sorted.
    pub files: Vec<PathBuf>,
    /// The directories served from the cache's listing.
    reused: Vec<(&'a Vec<u8>, &'a Dir)>,
    /// The directories walked afresh.
    walked: Vec<(Vec<u8>, Dir)>,
    /// The ignore files outside the code directories, as [`Entries::outside`] keeps them.
    pub outside: Vec<(Vec<u8>, Option<Stat>)>,
}

impl Listed<'_> {
    /// Whether the cache should keep this listing in place of `known`'s.
    pub fn changed(&self, known: &Entries) -> bool {
        !self.walked.is_empty() || self.outside != known.outside || self.reused.len() != known.dirs.len()
    }

    /// How many directories were walked afresh.
    pub fn walked(&self) -> usize {
        self.walked.len()
    }

    /// Every directory's listing, as [`Entries::dirs`] keeps them.
    pub fn dirs(&self) -> Table<Dir> {
        let reused = self.reused.iter().map(|(path, dir)| ((*path).clone(), (*dir).clone()));
        reused.chain(self.walked.iter().cloned()).collect()
    }
}

/// The code files below `dirs`, each directory served from `known`'s listing when it has not
/// changed.
pub fn list<'a>(dirs: &[PathBuf], known: &'a Entries) -> Result<Listed<'a>> {
    let outside = outside_ignore_files(dirs);
    let trusted = outside == known.outside;
    let mut listed = Listed { files: Vec::new(), reused: Vec::new(), walked: Vec::new(), outside };
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        if trusted {
            visit(dir, known, &mut listed)?;
        } else {
            walk(dir, &mut listed)?;
        }
    }
    listed.files.sort();
    listed.files.dedup();
    Ok(listed)
}

/// Lists `dir` from `known` if it has not changed, else walks it afresh.
fn visit<'a>(dir: &Path, known: &'a Entries, listed: &mut Listed<'a>) -> Result<()> {
    // Gone since its parent was listed (a race with a writer): nothing to list, and the
    // listing no longer has it, so the cache is written again.
    let Ok(metadata) = std::fs::metadata(dir) else { return Ok(()) };
    let Some((key, cached)) = known.unchanged_dir(dir, &Stat::of(&metadata)) else { return walk(dir, listed) };
    let ignore_files_unchanged = cached.ignore_files.iter().all(|(path, was)| {
        known.unchanged_ignore_file(was.as_ref(), stat_of(Path::new(OsStr::from_bytes(path))).as_ref())
    });
    if !ignore_files_unchanged {
        return walk(dir, listed);
    }
    listed.reused.push((key, cached));
    // Files and subdirectories in name order, each subdirectory's files at its place: the
    // listing comes out sorted, as paths sort, and sorting it costs one pass.
    let (mut files, mut subdirs) = (cached.files.iter().peekable(), cached.subdirs.iter().peekable());
    loop {
        match (files.peek(), subdirs.peek()) {
            (Some(file), Some(subdir)) if file < subdir => {
                listed.files.push(dir.join(OsStr::from_bytes(file)));
                files.next();
            }
            (_, Some(subdir)) => {
                visit(&dir.join(OsStr::from_bytes(subdir)), known, listed)?;
                subdirs.next();
            }
            (Some(file), None) => {
                listed.files.push(dir.join(OsStr::from_bytes(file)));
                files.next();
            }
            (None, None) => return Ok(()),
        }
    }
}

/// Walks `dir` with `ignore`'s walker (`.gitignore` honoured, in `dir`'s parents too), keeping
/// every directory's listing.
///
/// `ignore`'s parallel walker, on one thread, as [`crate::schema::tools::tree::list_files`]
/// explains: it learns which ignore files a directory holds from the directory's listing, where
/// the sequential walker asks for five of them in every directory (ThingsBoard's 1,900
/// directories: 8,000 failed system calls a run). Where no thread can start, the sequential one.
fn walk(dir: &Path, listed: &mut Listed<'_>) -> Result<()> {
    let mut walker = ignore::WalkBuilder::new(dir);
    walker.hidden(false).git_ignore(true).require_git(false).filter_entry(|e| {
        let name = e.file_name().to_string_lossy();
        e.depth() == 0 || !((name.starts_with('.') && name != ".sqlx") || SKIPPED_DIRS.contains(&name.as_ref()))
    });
    // (path, is a directory) of every entry the walk yields.
    let found = std::sync::Mutex::new(Vec::new());
    let failure = std::sync::Mutex::new(None);
    let visit = |entry: std::result::Result<ignore::DirEntry, ignore::Error>| match entry {
        Ok(entry) => {
            let kind = entry.file_type();
            if kind.is_some_and(|t| t.is_dir()) {
                lock(&found).push((entry.into_path(), true));
            } else if kind.is_some_and(|t| t.is_file()) && code::language_of(entry.path()).is_some() {
                lock(&found).push((entry.into_path(), false));
            }
        }
        Err(e) => {
            lock(&failure).get_or_insert_with(|| format!("{}: {e}", dir.display()));
        }
    };
    if crate::schema::tools::tree::can_start_a_thread() {
        walker.threads(1).build_parallel().run(|| {
            Box::new(|entry| {
                visit(entry);
                ignore::WalkState::Continue
            })
        });
    } else {
        walker.build().for_each(visit);
    }
    if let Some(failure) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(Error::Other(failure));
    }
    let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    // A directory whose metadata cannot be read is not kept: the next run walks it again.
    let mut dirs: HashMap<&Path, Dir> = found
        .iter()
        .filter(|(_, is_dir)| *is_dir)
        .filter_map(|(path, _)| {
            let stat = Stat::of(&std::fs::metadata(path).ok()?);
            let ignore_files = ignore_files_in(path, false);
            Some((path.as_path(), Dir { stat, ignore_files, subdirs: Vec::new(), files: Vec::new() }))
        })
        .collect();
    for (path, is_dir) in &found {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { continue };
        if !is_dir {
            listed.files.push(path.clone());
        }
        if path.as_path() == dir {
            continue;
        }
        if let Some(parent) = dirs.get_mut(parent) {
            let names = if *is_dir { &mut parent.subdirs } else { &mut parent.files };
            names.push(name.as_bytes().to_vec());
        }
    }
    listed.walked.extend(dirs.into_iter().map(|(path, mut dir)| {
        dir.files.sort();
        dir.subdirs.sort();
        (path.as_os_str().as_bytes().to_vec(), dir)
    }));
    Ok(())
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stat_of(path: &Path) -> Option<Stat> {
    std::fs::symlink_metadata(path).ok().map(|m| Stat::of(&m))
}

/// The ignore files the walk reads in `dir`, with their metadata: those present (creating one
/// changes the directory's modification time), or all of them with `with_absent` (for a
/// directory whose listing is not kept), and the exclude file of the repository whose `.git`
/// is here, present or not (`.git/info/` is not listed).
fn ignore_files_in(dir: &Path, with_absent: bool) -> Vec<(Vec<u8>, Option<Stat>)> {
    let mut found = Vec::new();
    let mut keep = |path: &Path, stat: Option<Stat>| {
        if stat.is_some() || with_absent {
            found.push((path.as_os_str().as_bytes().to_vec(), stat));
        }
    };
    for name in IGNORE_FILES {
        let path = dir.join(name);
        keep(&path, stat_of(&path));
    }
    let git = dir.join(".git");
    match std::fs::symlink_metadata(&git) {
        Ok(metadata) => {
            keep(&git, Some(Stat::of(&metadata)));
            let exclude = common_git_dir(dir, &git, &metadata).join("info").join("exclude");
            found.push((exclude.as_os_str().as_bytes().to_vec(), stat_of(&exclude)));
        }
        Err(_) => keep(&git, None),
    }
    found
}

/// The directory holding a repository's shared files (`info/exclude`): `.git` itself, or for a
/// linked worktree or a submodule, where its `.git` file points (`gitdir:`), then that
/// directory's `commondir`, as `ignore` resolves it.
fn common_git_dir(dir: &Path, git: &Path, metadata: &std::fs::Metadata) -> PathBuf {
    if metadata.is_dir() {
        return git.to_path_buf();
    }
    let Some(git_dir) = std::fs::read_to_string(git)
        .ok()
        .and_then(|text| text.trim().strip_prefix("gitdir:").map(|p| dir.join(p.trim())))
    else {
        return git.to_path_buf();
    };
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => git_dir.join(common.trim()),
        Err(_) => git_dir,
    }
}

/// The ignore files the walk of `dirs` reads outside them: in every parent directory (`ignore`
/// reads those of the canonical path's parents), and the user's global excludes file.
fn outside_ignore_files(dirs: &[PathBuf]) -> Vec<(Vec<u8>, Option<Stat>)> {
    let mut outside = Vec::new();
    for dir in dirs {
        let Ok(canonical) = dir.canonicalize() else { continue };
        for parent in canonical.ancestors().skip(1) {
            outside.extend(ignore_files_in(parent, true));
        }
    }
    if let Some(global) = ignore::gitignore::gitconfig_excludes_path() {
        let stat = stat_of(&global);
        outside.push((global.as_os_str().as_bytes().to_vec(), stat));
    }
    outside
}

#[cfg(test)]
mod tests {
    use super::super::scan_cache::Stamp;
    use super::*;
    use std::time::Duration;

    /// A code directory built on disk, below a parent directory that may hold ignore files.
    struct Tree {
        root: tempfile::TempDir,
    }

    impl Tree {
        fn new(files: &[&str]) -> Tree {
            let tree = Tree { root: tempfile::tempdir().unwrap() };
            std::fs::create_dir(tree.code()).unwrap();
            for file in files {
                tree.write(file, "package app\n");
            }
            tree
        }

        fn code(&self) -> PathBuf {
            self.root.path().join("code")
        }

        fn path(&self, relative: &str) -> PathBuf {
            self.code().join(relative)
        }

        fn write(&self, relative: &str, text: &str) {
            let path = self.path(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        /// The files `known` lists, relative to the code directory, how many directories were
        /// walked afresh, and the entries a run keeps, observed long after every change so far
        /// (so that metadata is trusted; each test waits out the timestamp tick before a change).
        fn list(&self, known: &Entries) -> (Vec<String>, usize, Entries) {
            let listed = list(&[self.code()], known).unwrap();
            let files = listed
                .files
                .iter()
                .map(|f| f.strip_prefix(self.code()).unwrap().to_string_lossy().into_owned())
                .collect();
            let kept = Entries {
                observed: Stamp::of_now_plus(Duration::from_secs(3600)),
                dirs: listed.dirs(),
                outside: listed.outside.clone(),
                ..Entries::default()
            };
            std::thread::sleep(Duration::from_millis(30));
            (files, listed.walked(), kept)
        }

        /// Lists once, and checks that a second run serves every directory from the listing.
        fn listed(&self) -> (Vec<String>, Entries) {
            let (files, _, kept) = self.list(&Entries::default());
            let (again, walked, kept) = self.list(&kept);
            assert_eq!((&again, walked), (&files, 0), "unchanged: every directory served from its listing");
            (files, kept)
        }
    }

    fn names(files: &[&str]) -> Vec<String> {
        files.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn an_unchanged_directory_is_served_from_its_listing() {
        let tree = Tree::new(&["a.go", "pkg/b.go", "pkg/deep/c.go"]);
        let (files, mut kept) = tree.listed();
        assert_eq!(files, names(&["a.go", "pkg/b.go", "pkg/deep/c.go"]));
        // The listing is what is served: one the disk does not have shows.
        let pkg = tree.path("pkg");
        kept.dirs.get_mut(pkg.as_os_str().as_bytes()).unwrap().files.clear();
        assert_eq!(tree.list(&kept).0, names(&["a.go", "pkg/deep/c.go"]));
    }

    #[test]
    fn a_new_deleted_or_renamed_file_is_seen_and_only_its_directory_walked() {
        let tree = Tree::new(&["a.go", "pkg/b.go", "pkg/deep/c.go", "other/d.go"]);
        let (_, kept) = tree.listed();
        tree.write("pkg/deep/new.go", "package deep\n");
        let (files, walked, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go", "other/d.go", "pkg/b.go", "pkg/deep/c.go", "pkg/deep/new.go"]));
        assert_eq!(walked, 1, "pkg/deep only");
        std::fs::remove_file(tree.path("pkg/b.go")).unwrap();
        let (files, walked, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go", "other/d.go", "pkg/deep/c.go", "pkg/deep/new.go"]));
        assert_eq!(walked, 2, "pkg and below");
        std::fs::rename(tree.path("pkg/deep/new.go"), tree.path("pkg/deep/renamed.go")).unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go", "other/d.go", "pkg/deep/c.go", "pkg/deep/renamed.go"]));
        // Moved to another directory.
        std::fs::rename(tree.path("pkg/deep/c.go"), tree.path("other/c.go")).unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go", "other/c.go", "other/d.go", "pkg/deep/renamed.go"]));
        // A file that is not code: listed nowhere, but the directory changed.
        tree.write("other/README.md", "# other\n");
        assert_eq!(tree.list(&kept).0, files);
    }

    #[test]
    fn a_renamed_or_replaced_directory_is_seen() {
        let tree = Tree::new(&["pkg/b.go", "pkg/deep/c.go"]);
        let (_, kept) = tree.listed();
        std::fs::rename(tree.path("pkg"), tree.path("lib")).unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["lib/b.go", "lib/deep/c.go"]));
        // Replaced by another directory of the same name (renamed over it, as a checkout does).
        tree.write("new/deep/x.go", "package deep\n");
        std::fs::remove_dir_all(tree.path("lib/deep")).unwrap();
        std::fs::rename(tree.path("new/deep"), tree.path("lib/deep")).unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["lib/b.go", "lib/deep/x.go"]));
        // Emptied by a move of its files elsewhere, then a new subdirectory.
        std::fs::rename(tree.path("lib/deep/x.go"), tree.path("lib/x.go")).unwrap();
        tree.write("lib/deep/more/y.go", "package more\n");
        assert_eq!(tree.list(&kept).0, names(&["lib/b.go", "lib/deep/more/y.go", "lib/x.go"]));
    }

    #[test]
    fn a_changed_ignore_file_is_seen() {
        let tree = Tree::new(&["a.go", "pkg/b.go", "pkg/gen.go", "pkg/deep/c.go"]);
        tree.write("pkg/.gitignore", "# nothing yet\n");
        let (files, kept) = tree.listed();
        assert_eq!(files, names(&["a.go", "pkg/b.go", "pkg/deep/c.go", "pkg/gen.go"]));
        // Edited in place: the directory's metadata does not change, the file's does.
        tree.write("pkg/.gitignore", "gen.go\ndeep/\n");
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go", "pkg/b.go"]));
        // Created.
        tree.write(".ignore", "a.go\n");
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["pkg/b.go"]));
        // Deleted.
        std::fs::remove_file(tree.path("pkg/.gitignore")).unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["pkg/b.go", "pkg/deep/c.go", "pkg/gen.go"]));
        // In the code directory's parent, which the walk reads too.
        std::fs::write(tree.root.path().join(".gitignore"), "b.go\n").unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["pkg/deep/c.go", "pkg/gen.go"]));
        std::fs::write(tree.root.path().join(".gitignore"), "c.go\n").unwrap();
        let (files, _, _) = tree.list(&kept);
        assert_eq!(files, names(&["pkg/b.go", "pkg/gen.go"]));
    }

    #[test]
    fn a_repository_exclude_file_is_seen() {
        let tree = Tree::new(&["a.go", "pkg/b.go"]);
        std::fs::create_dir_all(tree.root.path().join(".git/info")).unwrap();
        let (_, kept) = tree.listed();
        std::fs::write(tree.root.path().join(".git/info/exclude"), "b.go\n").unwrap();
        let (files, _, kept) = tree.list(&kept);
        assert_eq!(files, names(&["a.go"]));
        std::fs::write(tree.root.path().join(".git/info/exclude"), "a.go\n").unwrap();
        assert_eq!(tree.list(&kept).0, names(&["pkg/b.go"]));
    }

    #[test]
    fn a_racily_clean_directory_is_walked_again() {
        let tree = Tree::new(&["a.go", "pkg/b.go"]);
        let (_, _, mut kept) = tree.list(&Entries::default());
        // Observed in the same tick as the directories were last written: their metadata
        // cannot tell a write after the listing.
        kept.observed = Stamp::of_now_plus(Duration::ZERO);
        let (files, walked, _) = tree.list(&kept);
        assert_eq!((files, walked), (names(&["a.go", "pkg/b.go"]), 2));
    }
}

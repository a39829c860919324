//! Git facts for `sluice check`, read through libgit2: no checkout, no `git` process.
//!
//! The flow: [`open`] the repository, [`resolve_base`] and [`resolve_head`] the two sides,
//! [`changes`] between them, [`classify`](Classifier::classify) each changed path, then read
//! either side with [`read_file`] / [`list_files`]. [`history`] turns the migration lists of
//! both sides into the history-only findings (`migration-edited`, …).

pub mod classify;
pub mod history;
pub mod links;
mod paths;
mod resolve;
pub mod submodules;
pub mod tree;

pub(crate) use crate::source::slash;
pub use git2::Oid;
pub(crate) use paths::{join_dir, relative_dir, strip_dir};

use crate::error::{check_size, text_from_bytes, Error, Result};
use rayon::prelude::*;
use resolve::{resolve, Found, SYMLINK};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The branches tried, in order, for the default base.
pub const DEFAULT_BASES: &[&str] = &["origin/main", "main", "master"];

/// An opened repository with a working tree.
pub struct Repo {
    git: git2::Repository,
    root: PathBuf,
    /// Migration texts read by [`read_files`], by blob: the two sides of a comparison share most
    /// of their history, and each blob is read and inflated once rather than once per side.
    blob_texts: RefCell<HashMap<git2::Oid, String>>,
}

impl Repo {
    /// The working tree's root: every path Sluice reports is relative to it.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The libgit2 handle, for what this module does not wrap.
    pub fn git(&self) -> &git2::Repository {
        &self.git
    }

    /// A second handle on the same repository (libgit2 handles are not shared between threads).
    pub fn reopen(&self) -> Result<Repo> {
        let git = git2::Repository::open(self.git.path()).map_err(git_error("cannot reopen the repository"))?;
        Ok(Repo { git, root: self.root.clone(), blob_texts: RefCell::default() })
    }

    /// `path` relative to the root, with `/`; `None` when it is outside the repository.
    pub fn relative(&self, path: &Path) -> Option<String> {
        Some(relative_dir(&self.root, path)).filter(|d| !d.starts_with('\0'))
    }
}

/// One side of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A commit's tree.
    Rev(Oid),
    /// The files on disk: committed, staged, unstaged and untracked (not ignored) changes.
    WorkTree,
}

/// The head side of `sluice check`.
pub type Head = Side;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// Moved from `from` (git's similarity detection), possibly with edits.
    Renamed {
        from: String,
    },
}

/// A changed file between base and head. `path` is the head path (the base path for `Deleted`),
/// relative to the repository root with `/` separators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub path: String,
}

/// Opens the repository containing `dir` (searching upwards, like `git`).
pub fn open(dir: &Path) -> Result<Repo> {
    // As git itself reads objects: their hashes are verified when they enter the repository
    // (fetch, index-pack, fsck), not on every read. Hashing every blob again with SHA-1's
    // collision detection was 4% of a warm `check`.
    git2::opts::strict_hash_verification(false);
    let git = git2::Repository::discover(dir).map_err(|e| {
        Error::Usage(format!("{}: not inside a git repository ({}); pass --repo DIR", dir.display(), e.message()))
    })?;
    let root = git
        .workdir()
        .ok_or_else(|| {
            Error::Usage(format!("{}: a bare repository has no working tree to review; use a clone", dir.display()))
        })?
        .to_path_buf();
    Ok(Repo { git, root, blob_texts: RefCell::default() })
}

/// Whether `sluice check` runs in CI (the `CI` variable every major CI service sets).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The head side: `rev` when given, else HEAD in CI and the working tree elsewhere, so a
/// developer reviews uncommitted work before committing it.
pub fn resolve_head(repo: &Repo, rev: Option<&str>, ci: bool) -> Result<Head> {
    match rev {
        Some(rev) => Ok(Side::Rev(commit_of(repo, rev)?)),
        None if ci => Ok(Side::Rev(head_commit(repo)?)),
        None => Ok(Side::WorkTree),
    }
}

/// The base commit: the merge base of the head commit (HEAD for the working tree) with `base`,
/// or with the first of `origin/main`, `main`, `master` that exists. Using the merge base, not
/// the branch tip, keeps what landed on main since the branch point out of the review: those
/// would otherwise show up as this change deleting or reverting them.
pub fn resolve_base(repo: &Repo, base: Option<&str>, head: &Head) -> Result<Oid> {
    let head_oid = match head {
        Side::Rev(oid) => *oid,
        Side::WorkTree => head_commit(repo)?,
    };
    let (name, base_oid) = match base {
        Some(rev) => (rev.to_string(), commit_of(repo, rev)?),
        None => {
            let found = DEFAULT_BASES.iter().find_map(|name| {
                let object = repo.git.revparse_single(name).ok()?;
                Some((name.to_string(), object.peel_to_commit().ok()?.id()))
            });
            found.ok_or_else(|| {
                Error::Usage(format!(
                    "no base revision to compare with: tried {} in {}; pass --base REV (in CI, fetch the target \
                     branch first, e.g. `git fetch origin main`)",
                    DEFAULT_BASES.join(", "),
                    repo.root.display()
                ))
            })?
        }
    };
    repo.git.merge_base(head_oid, base_oid).map_err(|e| {
        Error::Other(format!(
            "no common ancestor of {name} ({}) and the head ({head_oid}): {}; in a shallow CI clone fetch more \
             history (actions/checkout with fetch-depth: 0)",
            short(base_oid),
            e.message()
        ))
    })
}

fn short(oid: Oid) -> String {
    oid.to_string()[..10].to_string()
}

fn head_commit(repo: &Repo) -> Result<Oid> {
    let head = repo.git.head().map_err(|e| {
        Error::Other(format!(
            "{}: HEAD does not name a commit ({}); commit something first",
            repo.root.display(),
            e.message()
        ))
    })?;
    head.peel_to_commit().map(|c| c.id()).map_err(|e| Error::Other(format!("HEAD is not a commit: {}", e.message())))
}

fn commit_of(repo: &Repo, rev: &str) -> Result<Oid> {
    let object = repo
        .git
        .revparse_single(rev)
        .map_err(|e| Error::Usage(format!("unknown revision `{rev}` in {}: {}", repo.root.display(), e.message())))?;
    object
        .peel_to_commit()
        .map(|c| c.id())
        .map_err(|_| Error::Usage(format!("revision `{rev}` does not name a commit")))
}

fn tree_of(repo: &Repo, oid: Oid) -> Result<git2::Tree<'_>> {
    repo.git
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(|e| Error::Other(format!("cannot read commit {oid}: {}", e.message())))
}

fn git_error(what: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::Other(format!("git: {what}: {}", e.message()))
}

fn utf8_path(path: Option<&Path>) -> Result<String> {
    let path = path.ok_or_else(|| Error::Other("git: a change without a path".into()))?;
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::Other(format!("{}: file name is not valid UTF-8; rename it", path.display())))
}

/// Every changed file between `base` and `head`, sorted by path, renames detected.
pub fn changes(repo: &Repo, base: Oid, head: &Head) -> Result<Vec<Change>> {
    let base_tree = tree_of(repo, base)?;
    let mut options = git2::DiffOptions::new();
    options.ignore_submodules(true).include_typechange(true);
    let mut diff = match head {
        Side::Rev(oid) => {
            let head_tree = tree_of(repo, *oid)?;
            repo.git.diff_tree_to_tree(Some(&base_tree), Some(&head_tree), Some(&mut options))
        }
        Side::WorkTree => {
            options.include_untracked(true).recurse_untracked_dirs(true).show_untracked_content(true);
            repo.git.diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut options))
        }
    }
    .map_err(git_error("cannot diff the two revisions"))?;
    let mut find = git2::DiffFindOptions::new();
    // Untracked files count so that a file moved on disk but not yet `git add`ed is a rename.
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find)).map_err(git_error("rename detection failed"))?;

    let mut out = Vec::new();
    for delta in diff.deltas() {
        use git2::Delta;
        let new_path = || utf8_path(delta.new_file().path());
        let old_path = || utf8_path(delta.old_file().path());
        let change = match delta.status() {
            Delta::Added | Delta::Untracked | Delta::Copied => Change { kind: ChangeKind::Added, path: new_path()? },
            Delta::Modified | Delta::Typechange | Delta::Conflicted => {
                // A mode-only change (chmod) leaves the content, and so the migration, as it was.
                let (old, new) = (delta.old_file().id(), delta.new_file().id());
                if old == new && !old.is_zero() {
                    continue;
                }
                Change { kind: ChangeKind::Modified, path: new_path()? }
            }
            Delta::Deleted => Change { kind: ChangeKind::Deleted, path: old_path()? },
            Delta::Renamed => Change { kind: ChangeKind::Renamed { from: old_path()? }, path: new_path()? },
            Delta::Unmodified | Delta::Ignored | Delta::Unreadable => continue,
        };
        out.push(change);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// A file's text on one side, `None` when it does not exist there. Invalid UTF-8 is an error
/// naming the file and line.
pub fn read_file(repo: &Repo, side: &Side, path: &str) -> Result<Option<String>> {
    match side {
        Side::Rev(oid) => {
            let tree = tree_of(repo, *oid)?;
            match blob_at(repo, &tree, path, *oid)? {
                Some(id) => {
                    let blob = repo.git.find_blob(id).map_err(git_error(path))?;
                    check_size(Path::new(path), blob.size() as u64)?;
                    text_from_bytes(Path::new(path), blob.content().to_vec()).map(Some)
                }
                None => Ok(None),
            }
        }
        Side::WorkTree => {
            let full = repo.root.join(path);
            let meta = match std::fs::metadata(&full) {
                Ok(meta) => meta,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io(path, e)),
            };
            if meta.is_dir() {
                return Ok(None);
            }
            // Reading a FIFO waits for a writer forever (issue 16): only regular files are read.
            if !meta.is_file() {
                return Err(Error::invalid(
                    path,
                    None,
                    "not a regular file (a FIFO, socket or device); give a regular file",
                ));
            }
            check_size(Path::new(path), meta.len())?;
            match std::fs::read(&full) {
                Ok(bytes) => text_from_bytes(Path::new(path), bytes).map(Some),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::io(path, e)),
            }
        }
    }
}

/// Whether `path` (relative to the repository root, `/`-separated) is a directory on one side
/// (through symbolic links, inside the revision's tree).
pub fn is_dir(repo: &Repo, side: &Side, path: &str) -> Result<bool> {
    match side {
        Side::Rev(oid) => {
            let tree = tree_of(repo, *oid)?;
            Ok(matches!(resolve(&repo.git, &tree, path, *oid)?.found, Found::Tree(_)))
        }
        Side::WorkTree => Ok(repo.root.join(path).is_dir()),
    }
}

/// The target of the symbolic link at `path` on one side, when the entry at that very path (its
/// directories taken as they are) is one: what a change turns into a link.
pub fn symlink_target(repo: &Repo, side: &Side, path: &str) -> Result<Option<String>> {
    match side {
        Side::Rev(oid) => {
            let entry = match tree_of(repo, *oid)?.get_path(Path::new(path)) {
                Ok(entry) => entry,
                Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
                Err(e) => return Err(Error::Other(format!("git: {path} at {}: {}", short(*oid), e.message()))),
            };
            if entry.filemode() != SYMLINK {
                return Ok(None);
            }
            let blob = repo.git.find_blob(entry.id()).map_err(git_error(path))?;
            Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
        }
        Side::WorkTree => {
            let full = repo.root.join(path);
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = std::fs::read_link(&full).map_err(|e| Error::io(path, e))?;
                    Ok(Some(slash(&target)))
                }
                _ => Ok(None),
            }
        }
    }
}

/// Whether reading `path` on one side goes through a symbolic link (the path itself or one of
/// its directories).
pub fn crosses_link(repo: &Repo, side: &Side, path: &str) -> Result<bool> {
    match side {
        Side::Rev(oid) => {
            let tree = tree_of(repo, *oid)?;
            Ok(resolve(&repo.git, &tree, path, *oid)?.through_link)
        }
        Side::WorkTree => {
            let mut at = repo.root.clone();
            for part in path.split('/').filter(|p| !p.is_empty()) {
                at.push(part);
                if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Ok(true);
                }
            }
            Ok(false)
        }
    }
}

/// The tree `prefix` names in commit `oid` (through links inside it), `None` when it names no directory.
fn subtree_at<'r>(repo: &'r Repo, oid: Oid, prefix: &str) -> Result<Option<git2::Tree<'r>>> {
    let root_tree = tree_of(repo, oid)?;
    Ok(match resolve(&repo.git, &root_tree, prefix, oid)?.found {
        Found::Tree(tree) => Some(tree),
        Found::Missing | Found::Blob(_) => None,
    })
}

/// Every file under `dir` (relative to the repository root) on one side, as sorted
/// repository-relative `/` paths. The working tree leaves out what `.gitignore` ignores.
/// A missing directory is an empty list.
pub fn list_files(repo: &Repo, side: &Side, dir: &Path) -> Result<Vec<String>> {
    let prefix = relative_dir(&repo.root, dir);
    let mut out = Vec::new();
    match side {
        Side::Rev(oid) => {
            let Some(subtree) = subtree_at(repo, *oid, &prefix)? else {
                return Ok(out);
            };
            let mut bad_name = None;
            subtree
                .walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
                    if entry.kind() == Some(git2::ObjectType::Blob) {
                        match entry.name() {
                            Ok(name) => out.push(join(&prefix, &format!("{parent}{name}"))),
                            Err(_) => bad_name = Some(format!("{prefix}/{parent}")),
                        }
                    }
                    git2::TreeWalkResult::Ok
                })
                .map_err(git_error(&prefix))?;
            if let Some(dir) = bad_name {
                return Err(Error::Other(format!("{dir}: holds a file whose name is not valid UTF-8; rename it")));
            }
        }
        Side::WorkTree => {
            let start = repo.root.join(&prefix);
            if !start.is_dir() {
                return Ok(out);
            }
            let walker = ignore::WalkBuilder::new(&start)
                .hidden(false)
                .require_git(false)
                .parents(true)
                .follow_links(true)
                .build();
            for entry in walker {
                let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", start.display())))?;
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let relative = entry.path().strip_prefix(&repo.root).unwrap_or(entry.path());
                let relative = relative.to_str().ok_or_else(|| {
                    Error::Other(format!("{}: file name is not valid UTF-8; rename it", entry.path().display()))
                })?;
                if relative.split('/').any(|part| part == ".git") {
                    continue;
                }
                out.push(relative.replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// [`list_files`], with each file's blob id on a revision: `None` for a symbolic link (read
/// through [`read_file`], which follows it) and for every file of the working tree.
pub fn list_blobs(repo: &Repo, side: &Side, dir: &Path) -> Result<Vec<(String, Option<Oid>)>> {
    let Side::Rev(oid) = side else {
        return Ok(list_files(repo, side, dir)?.into_iter().map(|path| (path, None)).collect());
    };
    let prefix = relative_dir(&repo.root, dir);
    let mut out = Vec::new();
    let Some(subtree) = subtree_at(repo, *oid, &prefix)? else {
        return Ok(out);
    };
    let mut bad_name = None;
    subtree
        .walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                match entry.name() {
                    Ok(name) => out.push((
                        join(&prefix, &format!("{parent}{name}")),
                        (entry.filemode() != SYMLINK).then(|| entry.id()),
                    )),
                    Err(_) => bad_name = Some(format!("{prefix}/{parent}")),
                }
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(git_error(&prefix))?;
    if let Some(dir) = bad_name {
        return Err(Error::Other(format!("{dir}: holds a file whose name is not valid UTF-8; rename it")));
    }
    out.sort();
    Ok(out)
}

/// The texts of `blobs` (path, id), in their order. Opening and inflating a loose object is
/// most of a warm `check`: with enough of them, each thread reads its share through its own
/// handle (libgit2 handles are not shared between threads).
pub fn read_blobs(repo: &Repo, blobs: &[(String, git2::Oid)]) -> Result<Vec<String>> {
    const BLOBS_PER_THREAD: usize = 64;
    let threads = rayon::current_num_threads().min(blobs.len() / BLOBS_PER_THREAD);
    if threads < 2 {
        return read_blobs_with(repo, blobs);
    }
    let handles = (0..threads).map(|_| repo.reopen()).collect::<Result<Vec<Repo>>>()?;
    let parts: Vec<Result<Vec<String>>> = handles
        .into_par_iter()
        .zip(blobs.par_chunks(blobs.len().div_ceil(threads)))
        .map(|(handle, part)| read_blobs_with(&handle, part))
        .collect();
    let mut texts = Vec::with_capacity(blobs.len());
    for part in parts {
        texts.extend(part?);
    }
    Ok(texts)
}

fn read_blobs_with(repo: &Repo, blobs: &[(String, git2::Oid)]) -> Result<Vec<String>> {
    let odb = repo.git.odb().map_err(git_error("cannot open the object database"))?;
    blobs
        .iter()
        .map(|(path, id)| {
            // The size first: a blob too large to read is refused before it is inflated.
            let (size, _) = odb.read_header(*id).map_err(git_error(path))?;
            check_size(Path::new(path), size as u64)?;
            let object = odb.read(*id).map_err(git_error(path))?;
            text_from_bytes(Path::new(path), object.data().to_vec())
        })
        .collect()
}

/// Every file under `dir` on one side with its text, sorted by path: one tree walk for a whole
/// migration history instead of a lookup per file. Invalid UTF-8 is an error naming the file.
pub fn read_files(repo: &Repo, side: &Side, dir: &Path) -> Result<Vec<(String, String)>> {
    match side {
        Side::WorkTree => list_files(repo, side, dir)?
            .into_iter()
            .map(|path| {
                let text = read_file(repo, side, &path)?.unwrap_or_default();
                Ok((path, text))
            })
            .collect(),
        Side::Rev(oid) => {
            let resolved = resolved_blobs(repo, *oid, &relative_dir(&repo.root, dir))?;
            let mut known = repo.blob_texts.borrow_mut();
            // In the walk's order, so that of several unreadable blobs the same one is named.
            let mut seen = std::collections::HashSet::new();
            let unread: Vec<(String, git2::Oid)> =
                resolved.iter().filter(|(_, id)| !known.contains_key(id) && seen.insert(*id)).cloned().collect();
            for ((_, id), text) in unread.iter().zip(read_blobs(repo, &unread)?) {
                known.insert(*id, text);
            }
            let mut out = resolved
                .into_iter()
                .map(|(path, id)| match known.get(&id) {
                    Some(text) => Ok((path, text.clone())),
                    None => Err(Error::Other(format!("git: {path}: blob {id} was not read"))),
                })
                .collect::<Result<Vec<_>>>()?;
            out.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        }
    }
}

/// Every blob under `prefix` in commit `oid`, as (path under `prefix`, blob) in the walk's order,
/// a symbolic link replaced by what it points at inside the same tree: a file's blob, or a
/// directory's files under the link's name (as a runner reading the checkout finds them).
fn resolved_blobs(repo: &Repo, oid: Oid, prefix: &str) -> Result<Vec<(String, Oid)>> {
    let Some(tree) = subtree_at(repo, oid, prefix)? else {
        return Ok(Vec::new());
    };
    let root_tree = tree_of(repo, oid)?;
    let mut resolved = Vec::new();
    blobs_of(repo, &root_tree, oid, &tree, prefix, &mut vec![tree.id()], &mut resolved)?;
    Ok(resolved)
}

/// The blobs of `tree` (named under `prefix`) into `out`; `through` holds the trees being walked,
/// outermost first: a link back to one of them is a loop, an error as on disk.
fn blobs_of(
    repo: &Repo,
    root_tree: &git2::Tree,
    oid: Oid,
    tree: &git2::Tree,
    prefix: &str,
    through: &mut Vec<Oid>,
    out: &mut Vec<(String, Oid)>,
) -> Result<()> {
    let mut blobs = Vec::new();
    let mut bad_name = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            match entry.name() {
                Ok(name) => {
                    blobs.push((join(prefix, &format!("{parent}{name}")), entry.id(), entry.filemode() == SYMLINK))
                }
                Err(_) => bad_name = Some(format!("{prefix}/{parent}")),
            }
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(git_error(prefix))?;
    if let Some(dir) = bad_name {
        return Err(Error::Other(format!("{dir}: holds a file whose name is not valid UTF-8; rename it")));
    }
    for (path, id, link) in blobs {
        if !link {
            out.push((path, id));
            continue;
        }
        // A symbolic link is a blob holding its target: replay what it points at.
        match resolve(&repo.git, root_tree, &path, oid)?.found {
            Found::Blob(id) => out.push((path, id)),
            Found::Missing => unreachable_link(&path, oid)?,
            Found::Tree(linked) if through.contains(&linked.id()) || through.len() > 8 => {
                return Err(Error::Usage(format!(
                    "{path}: symbolic link to a directory it is inside of, at {}: its files would be read without \
                     end",
                    short(oid)
                )))
            }
            Found::Tree(linked) => {
                through.push(linked.id());
                blobs_of(repo, root_tree, oid, &linked, &path, through, out)?;
                through.pop();
            }
        }
    }
    Ok(())
}

fn unreachable_link(path: &str, oid: Oid) -> Result<()> {
    Err(Error::Usage(format!(
        "{path}: symbolic link to nothing at {}; a migration behind it would be skipped",
        short(oid)
    )))
}

/// Every file under `dir` on one side with its blob id (computed from the file for the working
/// tree), sorted by path: what [`links`] compares when a directory is reached through a link.
pub fn blob_ids(repo: &Repo, side: &Side, dir: &Path) -> Result<Vec<(String, Oid)>> {
    let mut out = match side {
        Side::Rev(oid) => resolved_blobs(repo, *oid, &relative_dir(&repo.root, dir))?,
        Side::WorkTree => list_files(repo, side, dir)?
            .into_iter()
            .map(|path| {
                let id = Oid::hash_file(git2::ObjectType::Blob, repo.root.join(&path)).map_err(git_error(&path))?;
                Ok((path, id))
            })
            .collect::<Result<Vec<_>>>()?,
    };
    out.sort();
    Ok(out)
}

/// The blob `path` names in `tree`, following symbolic links inside the tree (as a checkout
/// would): a link to nothing, out of the repository, or in a loop is an error naming it.
fn blob_at(repo: &Repo, tree: &git2::Tree, path: &str, oid: Oid) -> Result<Option<Oid>> {
    Ok(match resolve(&repo.git, tree, path, oid)?.found {
        Found::Blob(id) => Some(id),
        Found::Missing | Found::Tree(_) => None,
    })
}

fn join(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_string()
    } else {
        format!("{prefix}/{rest}")
    }
}

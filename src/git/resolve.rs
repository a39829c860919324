//! A path looked up inside one revision's tree as a checkout of that revision would find it:
//! component by component, a symbolic link (a blob of mode 120000 holding its target) followed
//! inside the same tree. Never through the file system: the disk holds the head's checkout, and
//! a pull request that turns a directory into a link must not change what the base is read as.

use crate::error::{Error, Result};
use git2::{ObjectType, Oid, Repository, Tree};

/// Git's file mode for a symbolic link.
pub(super) const SYMLINK: i32 = 0o120000;

/// Links followed for one path before it counts as a loop (Linux's own limit is 40).
const MAX_HOPS: usize = 40;

/// What a path names in a tree.
pub(super) enum Found<'r> {
    Missing,
    Blob(Oid),
    Tree(Tree<'r>),
}

/// A resolved path: what it names, and whether a symbolic link was followed to get there.
pub(super) struct Resolved<'r> {
    pub found: Found<'r>,
    pub through_link: bool,
}

/// `path` (repository-relative, `/`-separated) in `root`, the tree of commit `at`. A link to
/// nothing, out of the repository (absolute, or `..` above the root), through a submodule or in
/// a loop is an error naming the link: what it points at cannot be read, and the gate fails
/// closed.
pub(super) fn resolve<'r>(git: &'r Repository, root: &Tree<'r>, path: &str, at: Oid) -> Result<Resolved<'r>> {
    let mut parts = split(path).ok_or_else(|| outside(path, path, at))?;
    // Components of `parts` that came from the last link's target: a miss among them is a broken link.
    let mut from_link: Option<(String, String, usize)> = None;
    for _ in 0..=MAX_HOPS {
        let mut tree = root.clone();
        let mut restart = None;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            match step(git, &tree, part, at, path)? {
                Step::Missing => {
                    if let Some((link, target, len)) = &from_link {
                        if i < *len {
                            return Err(Error::Usage(format!(
                                "{link}: symbolic link to {target}, which does not exist at {}; what the gate would \
                                 read behind it cannot be read",
                                short(at)
                            )));
                        }
                    }
                    return Ok(Resolved { found: Found::Missing, through_link: from_link.is_some() });
                }
                Step::Tree(next) => tree = next,
                Step::Link(target) => {
                    let link = parts[..=i].join("/");
                    let mut next = if target.starts_with('/') {
                        None
                    } else {
                        split(&format!("{}/{target}", parts[..i].join("/")))
                    }
                    .ok_or_else(|| outside(&link, &target, at))?;
                    let len = next.len();
                    next.extend(parts[i + 1..].iter().cloned());
                    from_link = Some((link, target, len));
                    restart = Some(next);
                    break;
                }
                Step::Blob(id) if last => {
                    return Ok(Resolved { found: Found::Blob(id), through_link: from_link.is_some() });
                }
                // A file where the path needs a directory: nothing is there, as for a checkout.
                Step::Blob(_) => return Ok(Resolved { found: Found::Missing, through_link: from_link.is_some() }),
                Step::Submodule => {
                    return Err(Error::Usage(format!(
                        "{}: a submodule at {}; its files are not in this repository and cannot be reviewed",
                        parts[..=i].join("/"),
                        short(at)
                    )))
                }
            }
        }
        match restart {
            Some(next) => parts = next,
            None => return Ok(Resolved { found: Found::Tree(tree), through_link: from_link.is_some() }),
        }
    }
    Err(Error::Usage(format!("{path}: symbolic links in a loop at {} (more than {MAX_HOPS} followed)", short(at))))
}

/// One entry of a tree, looked at.
enum Step<'r> {
    Missing,
    Tree(Tree<'r>),
    Link(String),
    Blob(Oid),
    Submodule,
}

fn step<'r>(git: &'r Repository, tree: &Tree<'r>, name: &str, at: Oid, path: &str) -> Result<Step<'r>> {
    let Some(entry) = tree.get_name(name) else {
        return Ok(Step::Missing);
    };
    Ok(match entry.kind() {
        Some(ObjectType::Tree) => {
            Step::Tree(entry.to_object(git).and_then(|o| o.peel_to_tree()).map_err(git_error(path, at))?)
        }
        Some(ObjectType::Blob) if entry.filemode() == SYMLINK => {
            let blob = git.find_blob(entry.id()).map_err(git_error(path, at))?;
            Step::Link(String::from_utf8_lossy(blob.content()).into_owned())
        }
        Some(ObjectType::Blob) => Step::Blob(entry.id()),
        _ => Step::Submodule,
    })
}

/// The path's components with `.` and `..` applied; `None` when `..` climbs above the root.
fn split(path: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            part => out.push(part.to_string()),
        }
    }
    Some(out)
}

fn outside(link: &str, target: &str, at: Oid) -> Error {
    Error::Usage(format!(
        "{link}: symbolic link to {target} at {}, outside the repository; the gate reads only what the revision holds",
        short(at)
    ))
}

fn short(oid: Oid) -> String {
    oid.to_string()[..10].to_string()
}

fn git_error(path: &str, at: Oid) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::Other(format!("git: {path} at {}: {}", short(at), e.message()))
}

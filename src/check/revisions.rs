//! The first stage of `sluice check`: the repository, the two revisions compared and what
//! changed between them.

use super::options::Options;
use crate::error::Result;
use crate::git::{self, Change, Oid, Repo, Side};

/// The repository, its base and head sides, and the changes between them.
pub(super) struct Revisions {
    pub repo: Repo,
    pub base: Oid,
    pub head: Side,
    pub changes: Vec<Change>,
    /// How the report names the two sides: "abc1234567 (merge base with main) and the working tree".
    pub between: String,
}

impl Revisions {
    /// Opens the repository around `--repo` and resolves `--head`, then `--base` (their merge base).
    pub fn resolve(options: &Options) -> Result<Revisions> {
        let repo = git::open(&options.dir)?;
        let head = git::resolve_head(&repo, options.head.as_deref(), options.ci)?;
        let base = git::resolve_base(&repo, options.base.as_deref(), &head)?;
        let changes = git::changes(&repo, base, &head)?;
        let between = format!("{} and {}", describe_base(&repo, base, options), describe_head(&head, options));
        Ok(Revisions { repo, base, head, changes, between })
    }

    pub fn base_side(&self) -> Side {
        Side::Rev(self.base)
    }
}

fn describe_base(repo: &Repo, base: Oid, options: &Options) -> String {
    let name = options.base.clone().or_else(|| {
        git::DEFAULT_BASES.iter().find(|name| repo.git().revparse_single(name).is_ok()).map(|name| name.to_string())
    });
    match name {
        Some(name) => format!("{} (merge base with {name})", short(base)),
        None => short(base),
    }
}

fn describe_head(head: &Side, options: &Options) -> String {
    match (head, &options.head) {
        (Side::WorkTree, _) => "the working tree".into(),
        (Side::Rev(oid), Some(name)) => format!("{} ({name})", short(*oid)),
        (Side::Rev(oid), None) => format!("{} (HEAD)", short(*oid)),
    }
}

fn short(oid: Oid) -> String {
    oid.to_string()[..10].to_string()
}

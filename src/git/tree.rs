//! A migrations directory read from one side of a git comparison, for the migration-tool layer
//! (`schema::tools::Tree`): the same tools replay a revision exactly as they replay the disk.

use super::{join_dir, read_file, read_files, relative_dir, slash, strip_dir, Repo, Side};
use crate::error::Result;
use crate::schema::tools::Tree;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub struct GitTree {
    /// Its own handle, behind a lock: libgit2 handles cannot be shared between threads.
    repo: Mutex<Repo>,
    side: Side,
    /// The migrations directory relative to the repository root (`db/migrations`).
    prefix: String,
    /// The migrations directory relative to the project root (the directory of sluice.toml).
    relative_dir: PathBuf,
    /// Repository-relative directories searched for nearby files, nearest first.
    ancestors: Vec<String>,
    files: Vec<PathBuf>,
    /// Texts read in one tree walk (the base side of `check`), by repository-relative path.
    texts: HashMap<String, String>,
}

impl GitTree {
    /// The migrations directory `dir` on `side`. A revision's files are all read in one tree walk
    /// up front: looking each up on its own parses the directory's tree object again every time,
    /// which made a 2,000-migration history take seconds instead of milliseconds (the migration
    /// tools read every file, to detect the tool and to order and script the migrations). The
    /// working tree is read from disk on demand.
    pub fn open(repo: &Repo, side: Side, dir: &Path, project_root: &Path) -> Result<GitTree> {
        let prefix = relative_dir(repo.root(), dir);
        let root_prefix = repo.relative(project_root).unwrap_or_default();
        let (paths, texts): (Vec<String>, HashMap<String, String>) = match side {
            Side::Rev(_) => {
                let files = read_files(repo, &side, dir)?;
                (files.iter().map(|(p, _)| p.clone()).collect(), files.into_iter().collect())
            }
            Side::WorkTree => (super::list_files(repo, &side, dir)?, HashMap::new()),
        };
        let mut files: Vec<PathBuf> = paths.iter().map(|p| PathBuf::from(strip_dir(p, &prefix))).collect();
        files.sort();
        let mut ancestors = Vec::new();
        let mut current = Some(PathBuf::from(&prefix));
        while let Some(dir) = current {
            let shown = slash(&dir);
            ancestors.push(shown.clone());
            if shown == root_prefix || shown.is_empty() || !shown.starts_with(&root_prefix) {
                break;
            }
            current = dir.parent().map(Path::to_path_buf);
        }
        let relative_dir = PathBuf::from(strip_dir(&prefix, &root_prefix));
        Ok(GitTree { repo: Mutex::new(repo.reopen()?), side, prefix, relative_dir, ancestors, files, texts })
    }

    /// The texts read up front, by repository-relative path (empty for the working tree).
    pub fn texts(&self) -> &HashMap<String, String> {
        &self.texts
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Repo> {
        self.repo.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn path(&self, relative: &Path) -> String {
        join_dir(&self.prefix, &slash(relative))
    }
}

impl Tree for GitTree {
    fn files(&self) -> &[PathBuf] {
        &self.files
    }

    fn read(&self, relative: &Path) -> Result<Option<String>> {
        let path = self.path(relative);
        match self.texts.get(&path) {
            Some(text) => Ok(Some(text.clone())),
            None if self.texts.is_empty() || !self.has(relative) => read_file(&self.lock(), &self.side, &path),
            None => Ok(None),
        }
    }

    fn dir(&self) -> &Path {
        &self.relative_dir
    }

    fn nearby(&self, name: &str) -> Result<Option<(PathBuf, String)>> {
        for (depth, dir) in self.ancestors.iter().enumerate() {
            if let Some(text) = read_file(&self.lock(), &self.side, &join_dir(dir, name))? {
                let mut holder = self.relative_dir.clone();
                for _ in 0..depth {
                    holder.pop();
                }
                return Ok(Some((holder, text)));
            }
        }
        Ok(None)
    }

    fn display(&self, relative: &Path) -> String {
        self.path(relative)
    }
}

//! Application code as a query source (`[queries] code`): the files below the code
//! directories that [`code::language_of`] reads, each handed to [`code::extract`], and what it
//! found made [`Query`] values; what it could not read exactly becomes one note per file,
//! with the line numbers.

use super::code::{self, Extraction};
use super::{Place, Query, Source};
use crate::cache::{self, BlobStore, Key};
use crate::error::{read_text, Error, Result};
use rayon::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// (file, note): SQL at database calls that could not be read exactly, or query text that is
/// not SQL, one note per file.
pub type FileNote = (String, String);

/// One host file's queries and its note.
pub type FileScan = (Vec<Query>, Option<FileNote>);

/// What the code of a project yielded.
#[derive(Debug, Default)]
pub struct Scanned {
    pub queries: Vec<Query>,
    pub notes: Vec<FileNote>,
    /// Files read (of a language Sluice reads SQL from).
    pub files: usize,
}

/// Directories no application keeps its own code in.
const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "vendor", "dist", "build", "__pycache__"];

/// The files below `dirs` that hold code of a language Sluice reads SQL from: hidden and
/// git-ignored files left out, except sqlx's `.sqlx` offline data.
pub fn list(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let walker = ignore::WalkBuilder::new(dir)
            .hidden(false)
            .git_ignore(true)
            .require_git(false)
            .filter_entry(|e| {
                let name = e.file_name().to_string_lossy();
                e.depth() == 0 || !((name.starts_with('.') && name != ".sqlx") || SKIPPED_DIRS.contains(&name.as_ref()))
            })
            .build();
        for entry in walker {
            let entry = entry.map_err(|e| Error::Other(format!("{}: {e}", dir.display())))?;
            if entry.file_type().is_some_and(|t| t.is_file()) && code::language_of(entry.path()).is_some() {
                files.push(entry.into_path());
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// Reads and scans the code below `dirs` on disk, in parallel; `display` names a file as
/// findings show it.
pub fn on_disk(dirs: &[PathBuf], display: &(dyn Fn(&Path) -> String + Sync)) -> Result<Scanned> {
    on_disk_cached(dirs, display, &ScanCache::disabled())
}

/// [`on_disk`], skipping the files `cache` knows hold no SQL at a database call (most of an
/// application's code): a warm run parses only the files that hold queries, and those that
/// changed.
pub fn on_disk_cached(
    dirs: &[PathBuf],
    display: &(dyn Fn(&Path) -> String + Sync),
    cache: &ScanCache,
) -> Result<Scanned> {
    let files = list(dirs)?;
    let known = cache.load(dirs);
    let each: Vec<(FileScan, Option<Key>)> = files
        .par_iter()
        .map(|path| {
            let shown = display(path);
            let text = read_text(path)?;
            let key = cache::digest(&[shown.as_bytes(), text.as_bytes()]);
            if known.contains(&key) {
                return Ok(((Vec::new(), None), Some(key)));
            }
            let (queries, note) = scan(shown, path, text.into())?;
            let empty = queries.is_empty() && note.is_none();
            Ok(((queries, note), empty.then_some(key)))
        })
        .collect::<Result<_>>()?;
    let mut scanned = Scanned { files: files.len(), ..Scanned::default() };
    let mut empty = HashSet::new();
    for ((queries, note), nothing) in each {
        scanned.queries.extend(queries);
        scanned.notes.extend(note);
        empty.extend(nothing);
    }
    if empty != known {
        cache.save(dirs, &empty);
    }
    Ok(scanned)
}

/// The code files known to hold no query, by a digest of their path and text, per set of code
/// directories and build (`crate::cache::build_id`: another build may read more).
#[derive(Debug, Clone, Default)]
pub struct ScanCache {
    store: Option<BlobStore>,
}

const MAGIC: &[u8] = b"sluice code scan\n";
/// Bump when what an extraction finds changes meaning within one build's lifetime.
const FORMAT: &[u8] = b"1";

impl ScanCache {
    pub fn disabled() -> ScanCache {
        ScanCache::default()
    }

    /// Under the user's cache directory, in `queries/`.
    pub fn in_cache_dir(cache_dir: Option<&Path>) -> ScanCache {
        ScanCache { store: Some(BlobStore::new(cache::dir_under(cache_dir, "queries"), MAGIC, 16)) }
    }

    fn key(dirs: &[PathBuf]) -> Key {
        let dirs: Vec<String> =
            dirs.iter().map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()).display().to_string()).collect();
        cache::digest(&[cache::build_id(), FORMAT, dirs.join("\0").as_bytes()])
    }

    fn load(&self, dirs: &[PathBuf]) -> HashSet<Key> {
        self.store.as_ref().and_then(|store| store.load::<HashSet<Key>>(&Self::key(dirs))).unwrap_or_default()
    }

    fn save(&self, dirs: &[PathBuf], empty: &HashSet<Key>) {
        if let Some(store) = &self.store {
            store.save(&Self::key(dirs), empty);
        }
    }
}

/// The queries of one host file (`display` names it, `path` gives its language), and its note.
pub fn scan(display: String, path: &Path, text: Arc<str>) -> Result<FileScan> {
    let extraction = code::extract(path, &text).map_err(|e| match e {
        Error::Invalid { line, message, .. } => Error::invalid(&display, line, message),
        other => other,
    })?;
    let note = note(&display, &extraction).map(|note| (display.clone(), note));
    let queries = extraction
        .queries
        .into_iter()
        .map(|q| Query {
            file: display.clone(),
            sql: q.sql.into(),
            source: Source::Code(q.source),
            place: Place::Embedded { map: q.map, host: Arc::clone(&text) },
        })
        .collect();
    Ok((queries, note))
}

/// "src/db.go: 2 SQL strings at database calls are built at run time and were not checked:
/// line 12 (pgx Query: identifier interpolated with fmt.Sprintf), line 40 (…)."
fn note(display: &str, extraction: &Extraction) -> Option<String> {
    let mut parts = Vec::new();
    if !extraction.unreadable.is_empty() {
        let lines: Vec<String> =
            extraction.unreadable.iter().map(|u| format!("line {} ({}: {})", u.at.line, u.source, u.reason)).collect();
        parts.push(format!(
            "{} SQL string(s) at database calls are built at run time and were not checked: {}",
            extraction.unreadable.len(),
            lines.join(", ")
        ));
    }
    if !extraction.skipped.is_empty() {
        let lines: Vec<String> =
            extraction.skipped.iter().map(|s| format!("line {} ({})", s.at.line, s.reason)).collect();
        parts.push(format!(
            "{} query text(s) that are not SQL were skipped: {}",
            extraction.skipped.len(),
            lines.join(", ")
        ));
    }
    (!parts.is_empty()).then(|| format!("{display}: {}.", parts.join("; ")))
}

//! Validated calendars, cached: a run whose calendar (and every `.ics` file it imports) is
//! byte-for-byte what an earlier run read takes that run's validated [`Calendar`] instead of
//! parsing and validating a large file again.
//!
//! The key hashes Sluice's version, [`FORMAT`], the calendar's path as given (events and findings
//! name it) and its bytes. Which files it imports is only known after parsing, so the entry stores
//! each imported file's path and SHA-256; a hit re-reads and re-hashes them, and any difference
//! (edited, removed, unreadable) is a miss. A miss parses as if there were no cache, so a cached
//! run prints exactly what an uncached one prints, errors included (errors are never stored).
//!
//! Entries live in a [`BlobStore`] (`<cache dir>/freeze`), safe to delete at any time; a cache
//! that cannot be written only makes runs slower.

use super::calendar::{self, Calendar};
use super::input::read_regular_text;
use crate::cache::{self, BlobStore, Key};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// Bump when what a stored calendar means changes in a way its derived serialization would not
/// notice (how a field is computed at load time).
pub const FORMAT: u32 = 1;

const MAGIC: &[u8] = b"sluice freeze calendar\n";

/// How many calendars are kept (the most recently used): a repository has one or two.
const KEEP: usize = 8;

/// Reads an imported file (`None`: no such file): from disk, or from a git revision for
/// `sluice check`.
pub type ReadImport<'r> = &'r dyn Fn(&Path) -> Result<Option<String>>;

/// Where validated calendars are cached, or nowhere (`--no-cache`, and the library's default).
#[derive(Debug, Clone, Default)]
pub struct CalendarCache {
    store: Option<BlobStore>,
}

/// An imported file as the calendar that is cached read it.
#[derive(Serialize, Deserialize)]
struct Import {
    file: PathBuf,
    sha256: Key,
}

#[derive(Serialize)]
struct EntryRef<'a> {
    imports: &'a [Import],
    calendar: &'a Calendar,
}

#[derive(Deserialize)]
struct Entry {
    imports: Vec<Import>,
    calendar: Calendar,
}

impl CalendarCache {
    /// Calendars under `dir` (created when first written).
    pub fn in_dir(dir: impl Into<PathBuf>) -> CalendarCache {
        CalendarCache { store: Some(BlobStore::new(dir, MAGIC, KEEP)) }
    }

    /// Under the user's cache directory (`--cache-dir`, else `$SLUICE_CACHE_DIR`,
    /// `$XDG_CACHE_HOME/sluice`, `~/.cache/sluice`; `/var/tmp/sluice` as root), in `freeze/`.
    pub fn in_cache_dir(cache_dir: Option<&Path>) -> CalendarCache {
        CalendarCache::in_dir(cache::dir_under(cache_dir, "freeze"))
    }

    /// No cache: every run parses and validates the calendar.
    pub fn disabled() -> CalendarCache {
        CalendarCache::default()
    }

    /// Loads and validates the calendar file at `path` ([`calendar::load`]), from the cache when
    /// it and its imports are unchanged.
    pub fn load(&self, path: &Path) -> Result<Calendar> {
        let text = read_regular_text(path)?;
        self.parse_with(path, &text, &calendar::read_import)
    }

    /// [`calendar::parse_with`], from the cache when `text` and the files it imports (read
    /// through `read`) are unchanged.
    pub fn parse_with(&self, path: &Path, text: &str, read: ReadImport<'_>) -> Result<Calendar> {
        let sha256 = Sha256::digest(text.as_bytes());
        let digest = hex::encode(sha256);
        let Some(store) = &self.store else {
            return calendar::parse_with_digest(path, text, digest, read);
        };
        let key = cache::digest(&[
            env!("CARGO_PKG_VERSION").as_bytes(),
            &FORMAT.to_le_bytes(),
            path.as_os_str().as_encoded_bytes(),
            &sha256,
        ]);
        if let Some(entry) = store.load::<Entry>(&key) {
            if entry.imports.iter().all(|import| unchanged(import, read)) {
                return Ok(entry.calendar);
            }
        }
        let imports = RefCell::new(Vec::new());
        let recording = |file: &Path| -> Result<Option<String>> {
            let text = read(file)?;
            if let Some(text) = &text {
                imports.borrow_mut().push(Import { file: file.to_path_buf(), sha256: sha256_of(text) });
            }
            Ok(text)
        };
        let calendar = calendar::parse_with_digest(path, text, digest, &recording)?;
        // Replaces an entry whose imports changed since: the key names the calendar's text only.
        store.save(&key, &EntryRef { imports: &imports.into_inner(), calendar: &calendar });
        Ok(calendar)
    }
}

fn sha256_of(text: &str) -> Key {
    Key::from(Sha256::digest(text.as_bytes()))
}

/// Whether `import` still reads as it did.
fn unchanged(import: &Import, read: ReadImport<'_>) -> bool {
    matches!(read(&import.file), Ok(Some(text)) if sha256_of(&text) == import.sha256)
}

//! Validated calendars, cached: a run whose calendar (and every `.ics` file it imports) is
//! byte-for-byte what an earlier run read takes that run's validated [`Calendar`] instead of
//! parsing and validating a large file again.
//!
//! The key hashes the build of Sluice (its version and executable), [`FORMAT`], the calendar's
//! path as given (events and findings name it) and its bytes. Which files it imports is only known
//! after parsing, so the entry stores each imported file's path and SHA-256; a hit re-reads and
//! re-hashes them, and any difference (edited, removed, unreadable) is a miss. A miss parses as
//! if there were no cache, so a cached run prints exactly what an uncached one prints, errors
//! included (errors are never stored).
//!
//! Entries live in a [`BlobStore`] (`<cache dir>/freeze`), safe to delete at any time; a cache
//! that cannot be written only makes runs slower.

use super::calendar::{self, Anchor, Calendar};
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
        let key = key(cache::build_id(), FORMAT, path, &sha256);
        if let Some(calendar) = cached(store, &key, read) {
            return Ok(calendar);
        }
        let (calendar, imports) = parse_recording_imports(path, text, digest, read)?;
        // Replaces an entry whose imports changed since: the key names the calendar's text only.
        store.save(&key, &EntryRef { imports: &imports, calendar: &calendar });
        Ok(calendar)
    }
}

/// The calendar stored under `key`, if every file it imported still reads as it did.
fn cached(store: &BlobStore, key: &Key, read: ReadImport<'_>) -> Option<Calendar> {
    let entry = store.load::<Entry>(key)?;
    let current = entry.imports.iter().all(|import| unchanged(import, read));
    (current && consistent(&entry.calendar)).then_some(entry.calendar)
}

/// Whether a stored calendar's event indexes point into its events: a damaged file that still
/// decodes is a miss, never a panic later.
fn consistent(calendar: &Calendar) -> bool {
    let events = calendar.events.len();
    calendar.windows.iter().all(|w| match &w.anchor {
        Anchor::Events(a) => a.once.iter().all(|o| o.2 < events) && a.recurring.iter().all(|&i| i < events),
        Anchor::Own { .. } => true,
    })
}

/// Parses and validates the calendar, noting each file it imports and its SHA-256 as read.
fn parse_recording_imports(
    path: &Path,
    text: &str,
    digest: String,
    read: ReadImport<'_>,
) -> Result<(Calendar, Vec<Import>)> {
    let imports = RefCell::new(Vec::new());
    let recording = |file: &Path| -> Result<Option<String>> {
        let text = read(file)?;
        if let Some(text) = &text {
            imports.borrow_mut().push(Import { file: file.to_path_buf(), sha256: sha256_of(text) });
        }
        Ok(text)
    };
    let calendar = calendar::parse_with_digest(path, text, digest, &recording)?;
    Ok((calendar, imports.into_inner()))
}

/// The key of a calendar: what reads it (the build of Sluice, [`cache::build_id`], and the
/// cache's format), its path as given (events and findings name it), and its bytes' SHA-256.
fn key(build: &[u8], format: u32, path: &Path, sha256: &[u8]) -> Key {
    cache::digest(&[build, &format.to_le_bytes(), path.as_os_str().as_encoded_bytes(), sha256])
}

fn sha256_of(text: &str) -> Key {
    Key::from(Sha256::digest(text.as_bytes()))
}

/// Whether `import` still reads as it did.
fn unchanged(import: &Import, read: ReadImport<'_>) -> bool {
    matches!(read(&import.file), Ok(Some(text)) if sha256_of(&text) == import.sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const CALENDAR: &str = r#"
timezone = "Europe/London"

[[event]]
id = "count"
timezone = "America/New_York"
rrule = "FREQ=MONTHLY;BYDAY=-1FR;UNTIL=20271231T000000Z"
start_time = "06:00"
duration = "PT12H"
exdate = ["2026-05-29T06:00"]

[[window]]
id = "count-freeze"
kind = "deny"
event = "count"
lead = "P1D"
services = ["survey-*"]
reason = "Counting."

[[calendar]]
file = "team.ics"
"#;

    const ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\nBEGIN:VEVENT\r\nUID:offsite\r\nDTSTART;TZID=Eastern Standard Time:20260604T120000\r\nDURATION:PT3H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    /// Imports read from a map, as `sluice check` reads them from a revision.
    fn files(ics: &str) -> HashMap<PathBuf, String> {
        HashMap::from([(PathBuf::from("policies/team.ics"), ics.to_string())])
    }

    fn parse(cache: &CalendarCache, text: &str, files: &HashMap<PathBuf, String>) -> Result<Calendar> {
        cache.parse_with(Path::new("policies/freeze.toml"), text, &|f: &Path| Ok(files.get(f).cloned()))
    }

    fn key_of(text: &str) -> Key {
        key(cache::build_id(), FORMAT, Path::new("policies/freeze.toml"), &Sha256::digest(text.as_bytes()))
    }

    #[test]
    fn a_cached_calendar_is_the_calendar_parsing_gives() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CalendarCache::in_dir(dir.path());
        let uncached = parse(&CalendarCache::disabled(), CALENDAR, &files(ICS)).unwrap();
        let stored = parse(&cache, CALENDAR, &files(ICS)).unwrap();
        let read = parse(&CalendarCache::in_dir(dir.path()), CALENDAR, &files(ICS)).unwrap();
        assert_eq!(format!("{stored:?}"), format!("{uncached:?}"));
        assert_eq!(format!("{read:?}"), format!("{uncached:?}"));
        assert_eq!(read.digest, hex::encode(Sha256::digest(CALENDAR.as_bytes())));
        assert!(read.windows[0].services.matches(Some("survey-api")));
        assert!(!read.windows[0].services.matches(Some("planner")));
    }

    #[test]
    fn a_hit_is_served_from_the_store_and_a_changed_import_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CalendarCache::in_dir(dir.path());
        let mut calendar = parse(&cache, CALENDAR, &files(ICS)).unwrap();
        // Replace the stored calendar by a marked one under the same key and imports: a run with
        // the same text and imports must return the marked one, not parse again.
        let store = cache.store.as_ref().unwrap();
        let entry: Entry = store.load(&key_of(CALENDAR)).unwrap();
        assert_eq!(entry.imports.len(), 1);
        assert_eq!(entry.imports[0].file, Path::new("policies/team.ics"));
        calendar.windows[0].reason = "from the cache".into();
        store.save(&key_of(CALENDAR), &EntryRef { imports: &entry.imports, calendar: &calendar });
        assert_eq!(parse(&cache, CALENDAR, &files(ICS)).unwrap().windows[0].reason, "from the cache");
        // The imported file changed: parsed again (and the entry replaced).
        let moved = ICS.replace("20260604T120000", "20260605T120000");
        assert_eq!(parse(&cache, CALENDAR, &files(&moved)).unwrap().windows[0].reason, "Counting.");
        let entry: Entry = store.load(&key_of(CALENDAR)).unwrap();
        assert_eq!(entry.imports[0].sha256, sha256_of(&moved));
        // Gone: the error a parse gives, not the cached calendar.
        let gone = parse(&cache, CALENDAR, &HashMap::new()).unwrap_err().to_string();
        assert!(gone.contains("[[calendar]] `team.ics`: no such file"), "{gone}");
    }

    #[test]
    fn another_version_format_path_or_text_is_another_key() {
        let sha = Sha256::digest(CALENDAR.as_bytes());
        let here = key(b"1.0.0", 1, Path::new("a/freeze.toml"), &sha);
        assert_ne!(here, key(b"1.0.1", 1, Path::new("a/freeze.toml"), &sha));
        assert_ne!(here, key(b"1.0.0", 2, Path::new("a/freeze.toml"), &sha));
        assert_ne!(here, key(b"1.0.0", 1, Path::new("b/freeze.toml"), &sha));
        assert_ne!(here, key(b"1.0.0", 1, Path::new("a/freeze.toml"), &Sha256::digest(b"other")));
        assert!(cache::build_id().starts_with(env!("CARGO_PKG_VERSION").as_bytes()));
        assert!(cache::build_id().len() > env!("CARGO_PKG_VERSION").len(), "the executable is part of it");
        // An entry another version wrote is never found under this version's key.
        let dir = tempfile::tempdir().unwrap();
        let cache = CalendarCache::in_dir(dir.path());
        let path = Path::new("policies/freeze.toml");
        let mut calendar = parse(&CalendarCache::disabled(), CALENDAR, &files(ICS)).unwrap();
        calendar.windows[0].reason = "another version".into();
        let old = key(b"0.0.0-old", FORMAT, path, &Sha256::digest(CALENDAR.as_bytes()));
        cache.store.as_ref().unwrap().save(&old, &EntryRef { imports: &[], calendar: &calendar });
        assert_eq!(parse(&cache, CALENDAR, &files(ICS)).unwrap().windows[0].reason, "Counting.");
    }

    #[test]
    fn a_stored_calendar_whose_indexes_point_nowhere_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CalendarCache::in_dir(dir.path());
        let mut calendar = parse(&cache, CALENDAR, &files(ICS)).unwrap();
        let Anchor::Events(anchored) = &mut calendar.windows[0].anchor else { panic!("anchored") };
        anchored.recurring = vec![calendar.events.len() + 5];
        calendar.windows[0].reason = "damaged".into();
        let store = cache.store.as_ref().unwrap();
        let imports = [Import { file: PathBuf::from("policies/team.ics"), sha256: sha256_of(ICS) }];
        store.save(&key_of(CALENDAR), &EntryRef { imports: &imports, calendar: &calendar });
        assert_eq!(parse(&cache, CALENDAR, &files(ICS)).unwrap().windows[0].reason, "Counting.");
    }

    #[test]
    fn errors_are_never_stored() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CalendarCache::in_dir(dir.path());
        let bad = CALENDAR.replace("kind = \"deny\"", "kind = \"block\"");
        assert!(parse(&cache, &bad, &files(ICS)).is_err());
        assert!(parse(&cache, &bad, &files(ICS)).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).map_or(0, |d| d.count()), 0);
    }
}

//! The code scan's cache: per code file, what the file system said of it when it was last read
//! (size, modification and change times, inode and device), a digest of its text, and what its
//! extraction found (its queries and its note). A file whose metadata has not changed since is
//! neither read nor parsed, as git decides a work tree file is unchanged from its index entry;
//! a file that holds queries is still read (a finding quotes its text), and its digest decides
//! whether the stored queries are its own.
//!
//! Metadata alone cannot tell a file written again within one timestamp tick of the moment it
//! was read (git's "racily clean" entries: <https://git-scm.com/docs/racy-git>). Like git, the
//! cache keeps the time its entries were observed, and an entry whose file's timestamps are not
//! clearly older than that is checked by content, never trusted on its metadata; once a later
//! run has seen the file old enough, it is trusted again.
//!
//! One cache file per set of code directories and build ([`crate::cache::build_id`]); a file
//! that does not decode (torn, another version's layout) is a miss, never an error.

use super::code::GoPackageSide;
use super::code::{EmbeddedQuery, Evidence, ProjectCalls};
use crate::cache::{self, BlobStore, Key};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The cache's tables: keyed by paths thousands of bytes long in all, hashed by foldhash, not
/// SipHash (nothing here is chosen by an adversary who could flood one bucket: the keys are the
/// paths of the user's own tree).
pub type Table<V> = HashMap<Vec<u8>, V, foldhash::fast::RandomState>;

/// What one code file's extraction keeps: its queries and its note (the note names the file as
/// findings show it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extracted {
    pub queries: Vec<EmbeddedQuery>,
    pub note: Option<String>,
    /// Its queries and the SQL it could not read: what is counted when its code turns out to be
    /// another database's.
    pub statements: usize,
    /// Its signs of the database its SQL is for (a Go file is judged with its package's, so
    /// they are kept for files whose text is not read again).
    pub databases: Vec<Evidence>,
    /// Why it is migration code, when its text shows it (a goose Go migration).
    pub migration: Option<String>,
    /// A Go file's SQL constants and the names it passes (joined with its package's each run).
    pub go_package: Option<GoPackageSide>,
}

impl Extracted {
    /// No query and no note: what most of an application's code files hold.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty() && self.note.is_none()
    }

    /// Nothing at all that the scan makes anything of, in this file or for its package: no
    /// query, no note, no statement, no sign of a database and no Go package side. What the scan
    /// makes of the other files does not depend on such a file, nor does its own result on its
    /// name or place (set aside or not, it yields nothing).
    pub fn is_inert(&self) -> bool {
        self.is_empty() && self.statements == 0 && self.databases.is_empty() && self.go_package.is_none()
    }
}

/// A time as the file system records it: seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Stamp {
    pub secs: i64,
    pub nanos: i64,
}

impl Stamp {
    fn of(time: SystemTime) -> Stamp {
        match time.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(since) => Stamp { secs: since.as_secs() as i64, nanos: i64::from(since.subsec_nanos()) },
            Err(before) => {
                let before = before.duration();
                match before.subsec_nanos() {
                    0 => Stamp { secs: -(before.as_secs() as i64), nanos: 0 },
                    nanos => Stamp { secs: -(before.as_secs() as i64) - 1, nanos: 1_000_000_000 - i64::from(nanos) },
                }
            }
        }
    }

    #[cfg(test)]
    pub(super) fn of_now_plus(by: Duration) -> Stamp {
        Stamp::of(SystemTime::now() + by)
    }

    fn minus(self, by: Duration) -> Stamp {
        Stamp { secs: self.secs - by.as_secs() as i64, nanos: self.nanos }
    }
}

/// What `stat(2)` says of a file, as far as telling a change goes (git's "cached stat
/// information"). The change time moves on every write and on every `touch -d` that sets the
/// modification time back; the inode tells a file renamed over another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    pub size: u64,
    pub modified: Stamp,
    pub changed: Stamp,
    pub inode: u64,
    pub device: u64,
}

impl Stat {
    pub fn of(metadata: &std::fs::Metadata) -> Stat {
        Stat {
            size: metadata.len(),
            modified: Stamp { secs: metadata.mtime(), nanos: metadata.mtime_nsec() },
            changed: Stamp { secs: metadata.ctime(), nanos: metadata.ctime_nsec() },
            inode: metadata.ino(),
            device: metadata.dev(),
        }
    }

    fn latest(&self) -> Stamp {
        self.modified.max(self.changed)
    }
}

/// One code file as last read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The file as findings name it (the extraction's queries and note are named so).
    pub display: String,
    pub stat: Stat,
    /// [`text_digest`] of the text the extraction read.
    pub digest: Key,
    pub extracted: Extracted,
}

/// How long before a run's start a file's timestamps must be for its metadata to be trusted:
/// wider than the coarsest timestamps in common use (FAT's two seconds; ext4 and tmpfs stamp
/// files from the kernel's coarse clock, a tick behind the clock a run reads).
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// One directory as the walk last listed it (git's untracked cache): while its metadata and
/// that of the ignore files it holds are what they were, it holds the same entries, since
/// adding, removing or renaming an entry changes a directory's modification time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dir {
    pub stat: Stat,
    /// The ignore files the walk reads here (`.gitignore`, `.ignore`, `.git` and its exclude
    /// file), by path, and what `stat` said of them (`None`: absent).
    pub ignore_files: Vec<(Vec<u8>, Option<Stat>)>,
    /// The subdirectories the walk entered, by name, sorted.
    pub subdirs: Vec<Vec<u8>>,
    /// The code files it holds, by name, sorted.
    pub files: Vec<Vec<u8>>,
}

/// The entries of one set of code directories, and when they were observed: every entry's file
/// was `stat`ed after `observed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entries {
    pub observed: Stamp,
    /// By the file's path as the scan lists it (its bytes: a path need not be UTF-8).
    pub files: Table<Entry>,
    /// The directories below the code directories, by path.
    pub dirs: Table<Dir>,
    /// The ignore files outside the code directories that the walk reads (in their parent
    /// directories, the user's global excludes file), by path, and what `stat` said of them.
    pub outside: Vec<(Vec<u8>, Option<Stat>)>,
}

/// What the cache knows of a file.
#[derive(Debug, PartialEq, Eq)]
pub enum Known<'a> {
    /// Its metadata is what it was, and old enough to tell: the entry is the file's.
    Unchanged(&'a Entry),
    /// Its metadata changed or cannot tell (racily clean): the entry is the file's only if its
    /// text has the digest.
    Suspect(&'a Entry),
    Unknown,
}

impl Entries {
    /// Entries to be observed from now on.
    pub fn starting_now() -> Entries {
        Entries { observed: Stamp::of(SystemTime::now()), ..Entries::default() }
    }

    /// The directory's listing, when its metadata is what it was and old enough to tell.
    pub fn unchanged_dir(&self, path: &Path, stat: &Stat) -> Option<(&Vec<u8>, &Dir)> {
        let (key, dir) = self.dirs.get_key_value(path.as_os_str().as_bytes())?;
        (dir.stat == *stat && !self.racy(stat)).then_some((key, dir))
    }

    /// Whether an ignore file's metadata (`None`: absent) is what it was and old enough to tell.
    pub fn unchanged_ignore_file(&self, was: Option<&Stat>, is: Option<&Stat>) -> bool {
        was == is && is.is_none_or(|stat| !self.racy(stat))
    }

    /// The entry of a file whose metadata is what it was (and old enough to tell) and whose
    /// extraction [is inert](Extracted::is_inert): the file needs neither reading nor naming.
    pub fn unchanged_inert(&self, path: &Path, stat: Option<&Stat>) -> Option<&Entry> {
        let entry = self.files.get(path.as_os_str().as_bytes())?;
        let stat = stat?;
        (entry.extracted.is_inert() && *stat == entry.stat && !self.racy(stat)).then_some(entry)
    }

    pub fn lookup(&self, path: &Path, display: &str, stat: Option<&Stat>) -> Known<'_> {
        let Some(entry) = self.files.get(path.as_os_str().as_bytes()).filter(|e| e.display == display) else {
            return Known::Unknown;
        };
        match stat {
            Some(stat) if *stat == entry.stat && !self.racy(stat) => Known::Unchanged(entry),
            _ => Known::Suspect(entry),
        }
    }

    /// Whether a file with these timestamps may have been written again after it was read
    /// without its timestamps showing it: they are not clearly older than the observation
    /// (or lie in the future).
    fn racy(&self, stat: &Stat) -> bool {
        stat.latest() >= self.observed.minus(RACY_WINDOW)
    }

    pub fn insert(&mut self, path: &Path, entry: Entry) {
        self.files.insert(path.as_os_str().as_bytes().to_vec(), entry);
    }
}

/// The digest a code file's entry keeps of its text.
pub fn text_digest(text: &str) -> Key {
    cache::digest(&[text.as_bytes()])
}

/// Where the entries of each set of code directories are kept, per build.
#[derive(Debug, Clone, Default)]
pub struct ScanCache {
    store: Option<BlobStore>,
}

const MAGIC: &[u8] = b"sluice code scan\n";
/// The layout of [`Entries`], and what an extraction finds within one build's lifetime; bump
/// when either changes.
const FORMAT: &[u8] = b"4";

impl ScanCache {
    pub fn disabled() -> ScanCache {
        ScanCache::default()
    }

    /// Under the user's cache directory, in `queries/`.
    pub fn in_cache_dir(cache_dir: Option<&Path>) -> ScanCache {
        ScanCache { store: Some(BlobStore::new(cache::dir_under(cache_dir, "queries"), MAGIC, 16)) }
    }

    pub fn is_enabled(&self) -> bool {
        self.store.is_some()
    }

    /// One cache per build, set of directories and `[queries] calls` (which decide what a file
    /// yields).
    fn key(dirs: &[PathBuf], calls: &ProjectCalls) -> Key {
        let absolute: Vec<PathBuf> =
            dirs.iter().map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone())).collect();
        let mut parts: Vec<&[u8]> = vec![cache::build_id(), FORMAT];
        parts.extend(absolute.iter().map(|d| d.as_os_str().as_bytes()));
        if !calls.names().is_empty() {
            parts.push(b"\0calls");
            parts.extend(calls.names().iter().map(|c| c.as_bytes()));
        }
        cache::digest(&parts)
    }

    /// The entries kept for `dirs`; none when there are none or they do not read back.
    pub fn load(&self, dirs: &[PathBuf], calls: &ProjectCalls) -> Entries {
        self.store.as_ref().and_then(|store| store.load::<Entries>(&Self::key(dirs, calls))).unwrap_or_default()
    }

    pub fn save(&self, dirs: &[PathBuf], calls: &ProjectCalls, entries: &Entries) {
        if let Some(store) = &self.store {
            store.save(&Self::key(dirs, calls), entries);
        }
    }

    #[cfg(test)]
    pub(super) fn file(&self, dirs: &[PathBuf], calls: &ProjectCalls) -> Option<PathBuf> {
        self.store.as_ref().map(|store| store.path(&Self::key(dirs, calls)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(modified: Stamp) -> Stat {
        Stat { size: 10, modified, changed: modified, inode: 7, device: 1 }
    }

    fn entries_with(observed: Stamp, stat: Stat) -> Entries {
        let mut entries = Entries { observed, ..Entries::default() };
        let entry = Entry { display: "a.go".into(), stat, digest: text_digest("x"), extracted: Extracted::default() };
        entries.insert(Path::new("/app/a.go"), entry);
        entries
    }

    #[test]
    fn metadata_is_trusted_only_when_it_is_the_same_and_older_than_the_observation() {
        let observed = Stamp { secs: 1_000, nanos: 500 };
        let old = stat(Stamp { secs: 990, nanos: 0 });
        let entries = entries_with(observed, old);
        let path = Path::new("/app/a.go");
        assert!(matches!(entries.lookup(path, "a.go", Some(&old)), Known::Unchanged(_)));
        assert!(matches!(entries.lookup(path, "b.go", Some(&old)), Known::Unknown), "another display name");
        assert!(matches!(entries.lookup(Path::new("/app/b.go"), "a.go", Some(&old)), Known::Unknown));
        assert!(matches!(entries.lookup(path, "a.go", None), Known::Suspect(_)), "no metadata");
        for changed in [
            Stat { size: 11, ..old },
            Stat { modified: Stamp { secs: 991, nanos: 0 }, ..old },
            Stat { changed: Stamp { secs: 990, nanos: 1 }, ..old },
            Stat { inode: 8, ..old },
            Stat { device: 2, ..old },
        ] {
            assert!(matches!(entries.lookup(path, "a.go", Some(&changed)), Known::Suspect(_)), "{changed:?}");
        }
    }

    #[test]
    fn a_racily_clean_entry_is_checked_by_content() {
        let observed = Stamp { secs: 1_000, nanos: 500 };
        let path = Path::new("/app/a.go");
        // Written in the same tick as the observation, within the window before it, after it.
        for modified in
            [observed, Stamp { secs: 999, nanos: 0 }, Stamp { secs: 998, nanos: 500 }, Stamp { secs: 2_000, nanos: 0 }]
        {
            let entries = entries_with(observed, stat(modified));
            assert!(matches!(entries.lookup(path, "a.go", Some(&stat(modified))), Known::Suspect(_)), "{modified:?}");
        }
        // Just older than the window.
        let old = Stamp { secs: 998, nanos: 499 };
        let entries = entries_with(observed, stat(old));
        assert!(matches!(entries.lookup(path, "a.go", Some(&stat(old))), Known::Unchanged(_)));
        // A change time inside the window (chmod, a write with the modification time set back).
        let recent_change = Stat { changed: observed, ..stat(old) };
        let entries = entries_with(observed, recent_change);
        assert!(matches!(entries.lookup(path, "a.go", Some(&recent_change)), Known::Suspect(_)));
    }

    #[test]
    fn stamps_order_as_times_do() {
        let at = |secs| Stamp::of(SystemTime::UNIX_EPOCH + Duration::from_millis(secs));
        assert!(at(1_500) < at(1_501));
        assert_eq!(at(1_500), Stamp { secs: 1, nanos: 500_000_000 });
        let before = Stamp::of(SystemTime::UNIX_EPOCH - Duration::from_millis(1_500));
        assert_eq!(before, Stamp { secs: -2, nanos: 500_000_000 });
        assert_eq!(Stamp::of(SystemTime::UNIX_EPOCH - Duration::from_secs(1)), Stamp { secs: -1, nanos: 0 });
        assert!(before < at(0));
    }
}

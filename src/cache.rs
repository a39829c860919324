//! A small on-disk store of serialized values under SHA-256 keys, shared by the schema snapshots
//! ([`crate::schema::cache`]) and the validated freeze calendars ([`crate::freeze::cache`]).
//!
//! Each value lives in its own file, `<hex key>.bin`: a magic line naming what it holds, the key
//! again, then the value in postcard. Files are written to a temporary file and renamed into
//! place, so a reader never sees a torn file however many runs write at once; a file that cannot
//! be read back (torn by a crash, another version's layout, another store's magic) is a miss and
//! is removed, to be written afresh. Only the most recently used files are kept. The store only
//! saves time: a failure to read or write is never an error, and the directory is safe to delete.

use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Identifies a stored value: a SHA-256 over everything it was built from.
pub type Key = [u8; 32];

/// A SHA-256 over length-prefixed parts, so that no two different lists of parts hash alike.
pub fn digest(parts: &[&[u8]]) -> Key {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    Key::from(hasher.finalize())
}

/// Identifies the running build: Sluice's version, and the size and modification time of the
/// executable. Two builds of one version (a developer's, a CI job's between releases) can read a
/// file differently; keyed by this, each build reads only what it wrote itself. Falls back to the
/// version alone when the executable cannot be found.
pub fn build_id() -> &'static [u8] {
    static ID: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let mut id = env!("CARGO_PKG_VERSION").as_bytes().to_vec();
        let executable = std::env::current_exe().and_then(std::fs::metadata);
        if let Ok(metadata) = executable {
            let modified = metadata.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
            id.extend_from_slice(&metadata.len().to_le_bytes());
            id.extend_from_slice(&modified.unwrap_or_default().as_nanos().to_le_bytes());
        }
        id
    });
    &ID
}

/// `$SLUICE_CACHE_DIR`, else `$XDG_CACHE_HOME/sluice`, else `~/.cache/sluice`. As root the server
/// runs as an unprivileged user who cannot enter `/root`, so root's default is `/var/tmp/sluice`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SLUICE_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if nix::unistd::Uid::effective().is_root() {
        return PathBuf::from("/var/tmp/sluice");
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("sluice");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("sluice"),
        None => std::env::temp_dir().join("sluice-cache"),
    }
}

/// `name` under the user's cache directory: `cache_dir` (`--cache-dir`) when given, else
/// `$SLUICE_CACHE_DIR`, `$XDG_CACHE_HOME/sluice`, `~/.cache/sluice` (`/var/tmp/sluice` as root),
/// beside `sluice plan`'s fixtures.
pub fn dir_under(cache_dir: Option<&Path>, name: &str) -> PathBuf {
    let base = cache_dir.map(Path::to_path_buf).unwrap_or_else(default_dir);
    base.join(name)
}

/// Values of one kind (told apart by `magic`) in one directory, the `keep` most recently used.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
    magic: &'static [u8],
    keep: usize,
}

/// Temporary files older than this were left by a run that crashed; younger ones may be being
/// written.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

impl BlobStore {
    /// A store in `dir` (created when first written) whose files start with `magic`.
    pub fn new(dir: impl Into<PathBuf>, magic: &'static [u8], keep: usize) -> BlobStore {
        BlobStore { dir: dir.into(), magic, keep }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{}.bin", hex::encode(key)))
    }

    /// The keys stored (hex), from one directory listing: cheaper than a lookup per candidate
    /// when the caller has many.
    pub fn stored(&self) -> HashSet<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return HashSet::new() };
        entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|name| name.strip_suffix(".bin").map(str::to_string))
            .collect()
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.path(key).exists()
    }

    /// The value stored under `key`, if there is one that reads back whole. Marks it most recently
    /// used; removes a file that cannot be read back so that it is written afresh.
    ///
    /// Only a file this user wrote is read: a cache under a shared directory (`/var/tmp/sluice`)
    /// could otherwise be seeded by another user with a calendar that opens a freeze.
    pub fn load<T: DeserializeOwned>(&self, key: &Key) -> Option<T> {
        let path = self.path(key);
        let mut file = std::fs::File::open(&path).ok()?;
        let metadata = file.metadata().ok()?;
        if !written_by(&metadata, nix::unistd::geteuid().as_raw()) {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
        let value = self.decode(&bytes, key);
        match &value {
            // Marked used unless it was lately: a warm run that reads the same files again and
            // again writes nothing (eviction only needs the order of files used minutes apart).
            Some(_) if !used_lately(&metadata) => {
                let _ =
                    std::fs::File::options().append(true).open(&path).and_then(|f| f.set_modified(SystemTime::now()));
            }
            Some(_) => {}
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
        value
    }

    /// Stores `value` under `key`, replacing what was there (atomically: a reader sees the old
    /// file or the new one); true when written. Failing to write is not an error: the store only
    /// saves time.
    pub fn save<T: Serialize + ?Sized>(&self, key: &Key, value: &T) -> bool {
        let path = self.path(key);
        let Some(bytes) = self.encode(key, value) else { return false };
        let written = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
            std::io::Write::write_all(&mut file, &bytes)?;
            file.persist(&path).map_err(|e| e.error)?;
            Ok(())
        })();
        if written.is_ok() {
            self.evict();
        }
        written.is_ok()
    }

    /// `magic`, the key, then the value in postcard; `None` for a value postcard cannot write
    /// (a path that is not UTF-8).
    fn encode<T: Serialize + ?Sized>(&self, key: &Key, value: &T) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(1 << 16);
        out.extend_from_slice(self.magic);
        out.extend_from_slice(key);
        postcard::to_extend(value, out).ok()
    }

    fn decode<T: DeserializeOwned>(&self, bytes: &[u8], key: &Key) -> Option<T> {
        let rest = bytes.strip_prefix(self.magic)?;
        let (stored, body) = rest.split_at_checked(key.len())?;
        if stored != key {
            return None;
        }
        // The whole body: a value of another layout that happens to decode leaves bytes over.
        match postcard::take_from_bytes(body) {
            Ok((value, [])) => Some(value),
            _ => None,
        }
    }

    /// Keeps the `keep` most recently used files; also clears temporary files a crashed run left.
    fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                Some((e.metadata().ok()?.modified().ok()?, e.path()))
            })
            .collect();
        let stale = SystemTime::now() - STALE_TEMPORARY;
        files.retain(|(modified, path)| {
            let temporary = path.extension().is_none_or(|e| e != "bin");
            if temporary && *modified < stale {
                let _ = std::fs::remove_file(path);
            }
            !temporary
        });
        files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
        for (_, path) in files.into_iter().skip(self.keep) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// How recently a file must have been used for a read not to mark it used again.
const USED_LATELY: Duration = Duration::from_secs(600);

/// Whether the file was written or marked used within [`USED_LATELY`].
fn used_lately(metadata: &std::fs::Metadata) -> bool {
    metadata.modified().is_ok_and(|m| m.elapsed().is_ok_and(|age| age < USED_LATELY))
}

/// Whether a file is this user's: `euid` owns it.
fn written_by(metadata: &std::fs::Metadata, euid: u32) -> bool {
    std::os::unix::fs::MetadataExt::uid(metadata) == euid
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: &[u8] = b"sluice test blob\n";

    fn store(dir: &Path) -> BlobStore {
        BlobStore::new(dir, MAGIC, 4)
    }

    #[test]
    fn a_saved_value_loads_back_under_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (digest(&[b"a"]), digest(&[b"b"]));
        assert!(store(dir.path()).save(&a, &vec!["x".to_string(), "y".to_string()]));
        assert_eq!(store(dir.path()).load::<Vec<String>>(&a), Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(store(dir.path()).load::<Vec<String>>(&b), None);
        assert!(store(dir.path()).stored().contains(&hex::encode(a)));
    }

    #[test]
    fn digests_of_different_part_lists_differ() {
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
        assert_ne!(digest(&[b"ab"]), digest(&[b"ab", b""]));
    }

    #[test]
    fn a_torn_file_is_a_miss_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"k"]);
        let store = store(dir.path());
        assert!(store.save(&key, &(0..1000u32).collect::<Vec<_>>()));
        let bytes = std::fs::read(store.path(&key)).unwrap();
        std::fs::write(store.path(&key), &bytes[..bytes.len() / 2]).unwrap();
        assert_eq!(store.load::<Vec<u32>>(&key), None);
        assert!(!store.path(&key).exists(), "an unreadable file is removed so that it is written afresh");
        assert!(store.save(&key, &vec![1u32]));
        assert_eq!(store.load::<Vec<u32>>(&key), Some(vec![1]));
    }

    #[test]
    fn another_store_or_another_key_in_the_header_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"k"]);
        assert!(BlobStore::new(dir.path(), b"sluice other blob\n", 4).save(&key, &7u32));
        assert_eq!(store(dir.path()).load::<u32>(&key), None, "another magic");
        // A file copied under another key's name (its header names the key it was written for).
        let other = digest(&[b"other"]);
        assert!(store(dir.path()).save(&other, &7u32));
        std::fs::copy(store(dir.path()).path(&other), store(dir.path()).path(&key)).unwrap();
        assert_eq!(store(dir.path()).load::<u32>(&key), None, "another key");
        assert_eq!(store(dir.path()).load::<u32>(&other), Some(7));
    }

    #[test]
    fn a_value_of_another_layout_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"k"]);
        assert!(store(dir.path()).save(&key, &("text".to_string(), 1u8)));
        // Too short for it, or decodes with bytes left over.
        assert_eq!(store(dir.path()).load::<(String, String)>(&key), None);
        assert!(store(dir.path()).save(&key, &("text".to_string(), 1u8)));
        assert_eq!(store(dir.path()).load::<(u64, u64)>(&key), None);
    }

    #[test]
    fn a_read_marks_a_file_used_unless_it_was_lately() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"k"]);
        let store = store(dir.path());
        assert!(store.save(&key, &1u32));
        let path = store.path(&key);
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert_eq!(store.load::<u32>(&key), Some(1));
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), written, "just written: not touched");
        let long_ago = SystemTime::now() - 2 * USED_LATELY;
        std::fs::File::options().append(true).open(&path).unwrap().set_modified(long_ago).unwrap();
        assert_eq!(store.load::<u32>(&key), Some(1));
        assert!(std::fs::metadata(&path).unwrap().modified().unwrap() > long_ago, "marked used");
    }

    #[test]
    fn only_the_most_recently_used_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        for i in 0..7u32 {
            assert!(store.save(&digest(&[&i.to_le_bytes()]), &i));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn concurrent_writers_of_one_key_never_tear_it() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"shared"]);
        let value: Vec<u64> = (0..200_000).collect();
        for _ in 0..5 {
            let _ = std::fs::remove_file(store(dir.path()).path(&key));
            std::thread::scope(|s| {
                let writers: Vec<_> = (0..2).map(|_| s.spawn(|| store(dir.path()).save(&key, &value))).collect();
                // A reader racing the writers sees nothing or the whole value, never a torn one
                // (a torn one would also be removed, which the final load would notice).
                let reader = s.spawn(|| {
                    for _ in 0..50 {
                        let read = store(dir.path()).load::<Vec<u64>>(&key);
                        assert!(read.is_none() || read.as_ref() == Some(&value));
                    }
                });
                for w in writers {
                    assert!(w.join().unwrap());
                }
                reader.join().unwrap();
            });
            assert_eq!(store(dir.path()).load::<Vec<u64>>(&key).as_ref(), Some(&value));
            let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
            assert_eq!(leftovers, 1, "no temporary file is left behind");
        }
    }

    #[test]
    fn only_files_of_this_user_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let key = digest(&[b"k"]);
        assert!(store(dir.path()).save(&key, &1u32));
        let metadata = std::fs::metadata(store(dir.path()).path(&key)).unwrap();
        let owner = std::os::unix::fs::MetadataExt::uid(&metadata);
        assert!(written_by(&metadata, owner));
        assert!(!written_by(&metadata, owner.wrapping_add(1)));
        assert_eq!(owner, nix::unistd::geteuid().as_raw(), "saved as this user");
        assert_eq!(store(dir.path()).load::<u32>(&key), Some(1));
        // Another user's file under the same name (root can make one; CI runs as root).
        if nix::unistd::geteuid().is_root() {
            let nobody = nix::unistd::Uid::from_raw(65534);
            nix::unistd::chown(&store(dir.path()).path(&key), Some(nobody), None).unwrap();
            assert_eq!(store(dir.path()).load::<u32>(&key), None);
        }
    }

    #[test]
    fn an_unwritable_directory_is_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "not a directory").unwrap();
        let store = BlobStore::new(file.join("sub"), MAGIC, 4);
        assert!(!store.save(&digest(&[b"k"]), &1u32));
        assert_eq!(store.load::<u32>(&digest(&[b"k"])), None);
    }
}

//! Snapshots of the replayed schema, so that linting the newest migration or checking a pull
//! request replays only what is new instead of the whole history.
//!
//! A snapshot is the [`Schema`] after the first `k` migrations, stored under a key that hashes
//! everything that state depends on: Sluice's build ([`crate::cache::build_id`]) and [`FORMAT`],
//! what the replay depends on besides the migrations (the tool, its options, the schema dump),
//! and for each of the `k` migrations its path and the exact text the tool sends. Changing,
//! adding, removing or reordering any of them changes the key of every later prefix, so a
//! snapshot is only ever used for the history that built it; and a cached run gives the verdict
//! an uncached one gives.
//!
//! The cache is safe to delete at any time. Snapshots are kept in a [`BlobStore`]: written to a
//! temporary file and renamed into place, so two runs at once never read a torn snapshot; one
//! that cannot be read (torn by a crash, another version's) is a miss.

use super::Schema;
use crate::cache::BlobStore;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Bump when the meaning of a snapshot changes in a way its derived serialization would not
/// notice (a field's meaning, or how the replay builds the schema). 2: the model's names as
/// PostgreSQL makes them, search_path, DO blocks, ALTER TABLE drops first (issue 9). 3: statements
/// split by PostgreSQL's lexical rules, too-deep statements refused, byte-order marks dropped
/// (issue 16). 4: constraint names seen, for choosing new ones without a scan (issue 13).
/// 6: whether an index is a B-tree.
pub const FORMAT: u32 = 7;

/// How many snapshots are kept (the most recently used): one project needs one or two at a time.
const KEEP: usize = 16;

/// Identifies a schema state: a SHA-256 over everything that built it.
pub use crate::cache::Key;

/// The key of the schema after every prefix of a history: `keys[k]` for the first `k` migrations.
#[derive(Debug, Clone)]
pub struct Chain {
    keys: Vec<Key>,
}

impl Chain {
    /// `root` is what the replay depends on besides the migrations; `migrations` holds one
    /// digest per migration, in replay order (see [`digest`]).
    pub fn new(root: &[&[u8]], migrations: &[Key]) -> Chain {
        let mut hasher = Sha256::new();
        hasher.update(crate::cache::build_id());
        hasher.update(FORMAT.to_le_bytes());
        for part in root {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let mut keys = Vec::with_capacity(migrations.len() + 1);
        keys.push(Key::from(hasher.finalize()));
        for migration in migrations {
            let previous = keys.last().expect("the root key");
            keys.push(Key::from(Sha256::new().chain_update(previous).chain_update(migration).finalize()));
        }
        Chain { keys }
    }

    /// The key of the schema after the first `count` migrations.
    pub fn key(&self, count: usize) -> &Key {
        &self.keys[count]
    }

    /// How many migrations the chain covers.
    pub fn len(&self) -> usize {
        self.keys.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The digest of one migration's part in the chain: length-prefixed parts, so that no two
/// different lists of parts hash alike.
pub use crate::cache::digest;

/// Where snapshots live, or nowhere (`--no-cache`, and tests unless they ask). With
/// [`remembering_last`](Self::remembering_last), clones share the in-memory copy of the last
/// snapshot used, so `sluice check`, which replays the same base history for several purposes,
/// reads it from disk once.
#[derive(Debug, Clone, Default)]
pub struct SchemaCache {
    store: Option<BlobStore>,
    /// Kept only when asked ([`SchemaCache::remembering_last`]): a copy of a large schema costs
    /// as much as reading it, and a single `lint` never reads it twice.
    last: Option<Arc<Mutex<Last>>>,
    /// The snapshot read ahead, and the hint that named it ([`SchemaCache::prefetching_for`]).
    read_ahead: Option<Arc<Mutex<ReadAhead>>>,
}

/// Which snapshot the last run with the same identity used, and that snapshot read ahead.
#[derive(Debug)]
struct ReadAhead {
    /// The hint's own key in the store: a digest of the build and the identity.
    hint: Key,
    /// The snapshot the hint names, as last read or written.
    last: Option<Key>,
    /// The snapshot the hint named when the run started, being read.
    reading: Option<(Key, std::thread::JoinHandle<Option<Schema>>)>,
}

/// The last snapshot used and its key.
type Last = Option<(Key, Schema)>;

/// What the cache did for one replay, for `--explain` and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Use {
    /// Migrations whose schema came from a snapshot.
    pub resumed_at: usize,
    /// A snapshot was written after the first `n` migrations.
    pub stored_at: Option<usize>,
}

const MAGIC: &[u8] = b"sluice schema snapshot\n";

impl SchemaCache {
    /// Snapshots under `dir` (created when first written).
    pub fn in_dir(dir: impl Into<PathBuf>) -> SchemaCache {
        SchemaCache { store: Some(BlobStore::new(dir, MAGIC, KEEP)), ..SchemaCache::default() }
    }

    /// Keeps the last snapshot used in memory, shared by the clones of this cache, for a caller
    /// that replays the same history several times (`sluice check`).
    pub fn remembering_last(self) -> SchemaCache {
        SchemaCache { last: Some(Arc::default()), ..self }
    }

    /// Starts reading, on another thread, the snapshot the last run with the same `identity` (the
    /// project and the run's arguments) resumed from or stored, and records from now on which one
    /// this run uses. `sluice lint NEWEST.sql` run again resumes from that snapshot, but its key is
    /// known only once every earlier migration has been read and hashed, which takes about as long
    /// as reading the snapshot (tens of milliseconds for thousands of migrations): side by side
    /// they cost the longer of the two. [`resume`](Self::resume) takes it only if it is the
    /// snapshot it would have read anyway, so the schema and the verdict are the same as without
    /// it, and lets it go otherwise. The hint is a value in the store (a snapshot's key, under a
    /// key over the build and `identity`), evicted with the snapshots.
    pub fn prefetching_for(self, identity: &[&[u8]]) -> SchemaCache {
        let Some(store) = self.store.clone() else { return self };
        let mut parts = vec![b"last snapshot used by".as_slice(), crate::cache::build_id()];
        parts.extend_from_slice(identity);
        let hint = digest(&parts);
        let last = store.load::<Key>(&hint);
        let reading = last.and_then(|key| {
            let thread = std::thread::Builder::new().name("sluice-prefetch".into());
            Some((key, thread.spawn(move || store.load::<Schema>(&key)).ok()?))
        });
        SchemaCache { read_ahead: Some(Arc::new(Mutex::new(ReadAhead { hint, last, reading }))), ..self }
    }

    /// The snapshot read ahead, if it is `key`'s, once it has been read.
    fn prefetched(&self, key: &Key) -> Option<Schema> {
        let mut read_ahead = self.read_ahead.as_ref()?.lock().ok()?;
        let (_, schema) = read_ahead.reading.take_if(|(read, _)| read == key)?;
        schema.join().ok().flatten()
    }

    /// Records that this run used the snapshot `key`, for the next one to read ahead.
    fn used(&self, key: &Key) {
        let (Some(store), Some(Ok(mut read_ahead))) = (&self.store, self.read_ahead.as_ref().map(|p| p.lock())) else {
            return;
        };
        if read_ahead.last != Some(*key) && store.save(&read_ahead.hint, key) {
            read_ahead.last = Some(*key);
        }
    }

    /// Under the user's cache directory (`--cache-dir`, `$SLUICE_CACHE_DIR`, `$XDG_CACHE_HOME/sluice`,
    /// `~/.cache/sluice`; `/var/tmp/sluice` as root), beside `sluice plan`'s fixtures.
    pub fn in_cache_dir(cache_dir: Option<&Path>) -> SchemaCache {
        SchemaCache::in_dir(crate::cache::dir_under(cache_dir, "schema"))
    }

    /// No cache: every run replays the whole history.
    pub fn disabled() -> SchemaCache {
        SchemaCache::default()
    }

    pub fn is_enabled(&self) -> bool {
        self.store.is_some()
    }

    /// The longest prefix of at most `upto` migrations (and at least one) whose schema is cached,
    /// with that schema.
    pub fn resume(&self, chain: &Chain, upto: usize) -> Option<(usize, Schema)> {
        let resumed = self.longest_stored_prefix(chain, upto);
        self.forget_read_ahead();
        resumed
    }

    /// Lets go of the snapshot read ahead that was not taken, if any: it is not needed, and its
    /// memory is freed once its thread is done rather than held for the rest of the run.
    pub fn forget_read_ahead(&self) {
        if let Some(Ok(mut read_ahead)) = self.read_ahead.as_ref().map(|read_ahead| read_ahead.lock()) {
            read_ahead.reading = None;
        }
    }

    fn longest_stored_prefix(&self, chain: &Chain, upto: usize) -> Option<(usize, Schema)> {
        let store = self.store.as_ref()?;
        let upto = upto.min(chain.len());
        if let Some(last) = &self.last {
            if let Some((key, schema)) = last.lock().ok()?.as_ref() {
                if let Some(count) = (1..=upto).rev().find(|&k| chain.key(k) == key) {
                    return Some((count, schema.clone()));
                }
            }
        }
        // One directory listing instead of a lookup per prefix: the cache holds a few files.
        let stored = store.stored();
        for count in (1..=upto).rev() {
            let key = chain.key(count);
            if !stored.contains(&hex::encode(key)) {
                continue;
            }
            if let Some(schema) = self.prefetched(key).or_else(|| store.load::<Schema>(key)) {
                self.remember(key, &schema);
                self.used(key);
                return Some((count, schema));
            }
        }
        None
    }

    fn remember(&self, key: &Key, schema: &Schema) {
        if let Some(Ok(mut last)) = self.last.as_ref().map(|last| last.lock()) {
            *last = Some((*key, schema.clone()));
        }
    }

    /// Stores the schema after the first `count` migrations. Failing to write is not an error:
    /// the cache only saves time.
    pub fn store(&self, chain: &Chain, count: usize, schema: &Schema) -> bool {
        let Some(store) = self.store.as_ref() else { return false };
        let key = chain.key(count);
        self.remember(key, schema);
        // A key names one schema: a snapshot already there is that schema.
        let stored = store.contains(key) || store.save(key, schema);
        if stored {
            self.used(key);
        }
        stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse_file;

    fn schema(sql: &str) -> Schema {
        let mut schema = Schema::default();
        schema.apply_all(&parse_file(sql.into()).statements, "m.sql", Some(0));
        schema
    }

    fn chain(texts: &[&str]) -> Chain {
        let digests: Vec<Key> = texts.iter().map(|t| digest(&[t.as_bytes()])).collect();
        Chain::new(&[b"flat"], &digests)
    }

    #[test]
    fn a_prefix_key_depends_on_every_migration_before_it_and_nothing_after() {
        let a = chain(&["CREATE TABLE a (x int);", "CREATE TABLE b (y int);", "CREATE TABLE c (z int);"]);
        let b = chain(&["CREATE TABLE a (x int);", "CREATE TABLE b (y bigint);", "CREATE TABLE c (z int);"]);
        assert_eq!(a.key(1), b.key(1));
        assert_ne!(a.key(2), b.key(2));
        assert_ne!(a.key(3), b.key(3), "a change early invalidates every later prefix");
        let other_root = Chain::new(&[b"goose"], &[digest(&[b"CREATE TABLE a (x int);"])]);
        assert_ne!(a.key(1), other_root.key(1));
    }

    #[test]
    fn a_stored_schema_reads_back_equal_and_resumes_the_longest_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SchemaCache::in_dir(dir.path());
        let texts = ["CREATE TABLE a (x int PRIMARY KEY);", "CREATE INDEX a_x ON a (x);", "SELECT 1;"];
        let chain = chain(&texts);
        let after_two = schema(&texts[..2].join("\n"));
        assert!(cache.store(&chain, 1, &schema(texts[0])));
        assert!(cache.store(&chain, 2, &after_two));
        // A fresh cache object, as in the next run: it reads the file.
        let fresh = SchemaCache::in_dir(dir.path());
        let (count, read) = fresh.resume(&chain, 3).expect("a snapshot");
        assert_eq!((count, &read), (2, &after_two));
        assert_eq!(fresh.resume(&chain, 1).map(|(c, _)| c), Some(1));
        assert!(SchemaCache::disabled().resume(&chain, 3).is_none());
    }

    #[test]
    fn the_snapshot_a_project_used_last_is_read_ahead_and_taken_only_where_resume_would_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let texts = ["CREATE TABLE a (x int);", "CREATE TABLE b (y int);", "CREATE TABLE c (z int);"];
        let chain = chain(&texts);
        let after_one = schema(texts[0]);
        let after_two = schema(&texts[..2].join("\n"));
        let project = |name: &str| SchemaCache::in_dir(dir.path()).prefetching_for(&[name.as_bytes()]);
        let read_ahead = |cache: &SchemaCache| {
            let read_ahead = cache.read_ahead.as_ref().unwrap().lock().unwrap();
            let (key, reading) = read_ahead.reading.as_ref()?;
            while !reading.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Some(*key)
        };

        // A first run reads nothing ahead; the snapshot it stores is the one the next run reads.
        let first = project("p");
        assert_eq!(read_ahead(&first), None);
        assert!(first.store(&chain, 1, &after_one));
        assert!(SchemaCache::in_dir(dir.path()).store(&chain, 2, &after_two), "another project's");
        let second = project("p");
        assert_eq!(read_ahead(&second), Some(*chain.key(1)));
        assert_eq!(read_ahead(&project("q")), None, "another project has its own hint");

        // Resuming at most one migration takes it from the thread that read it: the file,
        // spoiled since, is not read again.
        let path = second.store.as_ref().unwrap().path(chain.key(1));
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
        assert_eq!(second.resume(&chain, 1), Some((1, after_one)));
        std::fs::write(&path, &whole).unwrap();

        // Resuming at most three reads the longer prefix from disk, as without the read-ahead,
        // which is let go; the next run reads that prefix ahead.
        let third = project("p");
        assert_eq!(read_ahead(&third), Some(*chain.key(1)));
        assert_eq!(third.resume(&chain, 3), Some((2, after_two.clone())));
        assert_eq!(read_ahead(&third), None);
        assert_eq!(third.resume(&chain, 3), Some((2, after_two)));
        assert_eq!(read_ahead(&project("p")), Some(*chain.key(2)));
        assert!(SchemaCache::disabled().prefetching_for(&[b"p"]).read_ahead.is_none());
    }

    #[test]
    fn a_torn_or_foreign_file_is_a_miss_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SchemaCache::in_dir(dir.path());
        let chain = chain(&["CREATE TABLE a (x int);"]);
        assert!(cache.store(&chain, 1, &schema("CREATE TABLE a (x int);")));
        let path = cache.store.as_ref().unwrap().path(chain.key(1));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(SchemaCache::in_dir(dir.path()).resume(&chain, 1).is_none());
        assert!(!path.exists());
    }

    #[test]
    fn only_the_most_recently_used_snapshots_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SchemaCache::in_dir(dir.path());
        let texts: Vec<String> = (0..KEEP + 3).map(|i| format!("CREATE TABLE t{i} (x int);")).collect();
        let chain = chain(&texts.iter().map(String::as_str).collect::<Vec<_>>());
        for count in 1..=texts.len() {
            assert!(cache.store(&chain, count, &Schema::default()));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), KEEP);
    }
}

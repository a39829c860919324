//! The findings of each application query, kept between runs of `sluice lint`: a warm run takes
//! an unchanged query's findings from here, and neither parses nor checks it (on ente, 715
//! queries in Go code, that was most of what scanning the code added to a lint).
//!
//! A query's findings are kept under a key that hashes everything the rules read of it:
//! - the context: the schema the whole history builds (its snapshot key, `schema::cache::Chain`:
//!   the build, the schema dump, the PostgreSQL version and every migration as its tool sends
//!   it), the policies, and whether a change is under review;
//! - the query: its file, its SQL, what wrote it, and where it stands — for SQL in code the map
//!   back to its host file and a digest of that file's text, whose lines are the findings'
//!   excerpts;
//! - when its rules read the other queries (a `DROP INDEX` in a query file looks for the queries
//!   that need the index; see `rules::Queries`), a digest of every query, kept in the entry and
//!   compared, since it is only known once the rules have run.
//!
//! Workload entries (`[queries] workload`) are not kept: what they say depends on when the
//! snapshots were read. One cache file per project and build (`crate::cache::build_id`), in
//! the cache directory's `query-findings/`; it is written only when a query was checked afresh,
//! and then holds the entries this run used, so a fully warm run writes nothing. A file that
//! does not decode is a miss, never an error.

mod kept;

use crate::cache::{self, BlobStore, Key};
use crate::finding::Finding;
use crate::queries::{ParsedQuery, Place, Source};
use kept::Kept;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8] = b"sluice query findings\n";
/// Bump when what a kept finding means changes in a way the build id would not tell.
const FORMAT: &[u8] = b"1";
/// Projects kept (the most recently used).
const KEEP: usize = 16;

/// Where the findings of one project's queries are kept, or nowhere (`--no-cache`, and every
/// caller but `sluice lint`).
#[derive(Debug, Clone, Default)]
pub struct QueryCache {
    store: Option<(BlobStore, Key)>,
}

/// What the cache file holds: each query's entry by its key.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    entries: HashMap<Key, Entry>,
}

/// One query's findings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The digest of every query, when its rules read them.
    others: Option<Key>,
    findings: Vec<Kept>,
}

impl QueryCache {
    pub fn disabled() -> QueryCache {
        QueryCache::default()
    }

    /// Under `cache_dir` (or the user's cache directory), for the project `identity` names.
    pub fn in_cache_dir(cache_dir: Option<&Path>, identity: &[&[u8]]) -> QueryCache {
        let store = BlobStore::new(cache::dir_under(cache_dir, "query-findings"), MAGIC, KEEP);
        let mut parts: Vec<&[u8]> = vec![cache::build_id(), FORMAT];
        parts.extend(identity);
        QueryCache { store: Some((store, cache::digest(&parts))) }
    }

    pub fn is_enabled(&self) -> bool {
        self.store.is_some()
    }

    /// The cache for one run over `queries`, whose findings depend on `context` besides the
    /// queries themselves; `None` when disabled.
    pub fn open(&self, context: &[&[u8]], queries: &[ParsedQuery]) -> Option<Run<'_>> {
        let (store, file) = self.store.as_ref()?;
        let stored = store.load::<Stored>(file).unwrap_or_default();
        let context = cache::digest(context);
        let identities = identities(queries);
        let all = cache::digest(&identities.iter().map(|i| i.as_slice()).collect::<Vec<_>>());
        let keys = queries
            .iter()
            .zip(&identities)
            .map(|(query, identity)| {
                // What a workload entry says depends on when its snapshots were read.
                let kept = !matches!(query.query.source, Source::Workload(_));
                kept.then(|| cache::digest(&[&context, identity]))
            })
            .collect();
        Some(Run { store, file, stored, keys, all })
    }
}

/// One run's use of the cache.
pub struct Run<'c> {
    store: &'c BlobStore,
    file: &'c Key,
    stored: Stored,
    /// Per query (as `open` was given them): its key, `None` when it is not kept.
    keys: Vec<Option<Key>>,
    /// The digest of every query.
    all: Key,
}

/// What became of one query's entry in a run.
pub enum Outcome {
    /// Its findings came from its entry.
    Found(Key),
    /// It was checked, and its findings make this entry.
    Checked(Key, Entry),
    /// It is not kept.
    Not,
}

impl Run<'_> {
    /// The findings kept for query `index`, if its entry is there and holds for this run.
    pub fn found(&self, index: usize) -> Option<(Key, Vec<Finding>)> {
        let key = self.keys[index]?;
        let entry = self.stored.entries.get(&key)?;
        if entry.others.is_some_and(|others| others != self.all) {
            return None;
        }
        let findings = entry.findings.iter().map(Kept::finding).collect::<Option<Vec<_>>>()?;
        Some((key, findings))
    }

    /// What to keep of query `index` checked afresh: `findings`, and whether its rules read the
    /// other queries.
    pub fn checked(&self, index: usize, findings: &[Finding], read_others: bool) -> Outcome {
        let Some(key) = self.keys[index] else { return Outcome::Not };
        match findings.iter().map(Kept::of).collect::<Option<Vec<_>>>() {
            Some(findings) => Outcome::Checked(key, Entry { others: read_others.then_some(self.all), findings }),
            None => Outcome::Not,
        }
    }

    /// Writes the entries this run used, when it checked a query afresh (or dropped a stale
    /// entry it found): a run served whole from the cache writes nothing.
    pub fn finish(mut self, outcomes: Vec<Outcome>) {
        let mut kept = Stored::default();
        let mut fresh = false;
        for outcome in outcomes {
            match outcome {
                Outcome::Found(key) => {
                    if let Some(entry) = self.stored.entries.remove(&key) {
                        kept.entries.insert(key, entry);
                    }
                }
                Outcome::Checked(key, entry) => {
                    fresh = true;
                    kept.entries.insert(key, entry);
                }
                Outcome::Not => {}
            }
        }
        if fresh {
            self.store.save(self.file, &kept);
        }
    }
}

/// Per query, a digest of what its findings depend on besides the context: its file, SQL, source
/// and place (for SQL in code, the map back to the host file and the host file's text).
fn identities(queries: &[ParsedQuery]) -> Vec<Key> {
    let mut hosts: HashMap<usize, (&Arc<str>, Option<Key>)> = HashMap::new();
    for query in queries {
        if let Place::Embedded { host, digest, .. } = &query.query.place {
            hosts.entry(Arc::as_ptr(host) as *const u8 as usize).or_insert((host, *digest));
        }
    }
    // Hosts hold many queries each: hashed once per file, not once per query, and not at all
    // when the code scan knew the digest (the same one: `text_digest`).
    let hosts: HashMap<usize, Key> = hosts
        .into_par_iter()
        .map(|(at, (host, digest))| (at, digest.unwrap_or_else(|| cache::digest(&[host.as_bytes()]))))
        .collect();
    queries
        .par_iter()
        .map(|parsed| {
            let query = &parsed.query;
            let source = format!("{:?}", query.source);
            let place: Vec<u8> = match &query.place {
                Place::WholeFile => b"whole file".to_vec(),
                Place::Record { line } => [b"record ".as_slice(), &line.to_le_bytes()].concat(),
                Place::Embedded { map, host, .. } => {
                    let mut bytes = hosts[&(Arc::as_ptr(host) as *const u8 as usize)].to_vec();
                    bytes.extend(format!("{map:?}").into_bytes());
                    bytes
                }
            };
            cache::digest(&[query.file.as_bytes(), query.sql.as_bytes(), source.as_bytes(), &place])
        })
        .collect()
}

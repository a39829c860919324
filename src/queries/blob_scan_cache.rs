//! `check`'s cache of what code files hold, by git blob: a blob's text never changes, so what
//! the extraction finds in it under one path (the path gives its language, and the note names
//! it) does not either, within one build. A run serves every code file the change leaves alone
//! from here without reading it; it reads only those whose entry holds queries or a note (a
//! finding quotes the text, and the affected-query rule looks for table names in it).
//!
//! One cache file per repository and build ([`crate::cache::build_id`]), holding the entries of
//! the last head checked (so it stays the size of one tree); a file that does not decode is a
//! miss, never an error.

use super::code::ProjectCalls;
use super::scan_cache::Extracted;
use crate::cache::{self, BlobStore, Key};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Each blob's extraction, by blob id and path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobEntries {
    /// By [`BlobEntries::key`].
    files: HashMap<Vec<u8>, Extracted>,
}

impl BlobEntries {
    /// The blob id's bytes, then the path's.
    fn key(path: &str, blob: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(blob.len() + path.len());
        key.extend_from_slice(blob);
        key.extend_from_slice(path.as_bytes());
        key
    }

    pub fn get(&self, path: &str, blob: &[u8]) -> Option<&Extracted> {
        self.files.get(&Self::key(path, blob))
    }

    pub fn insert(&mut self, path: &str, blob: &[u8], extracted: Extracted) {
        self.files.insert(Self::key(path, blob), extracted);
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Where the entries of each repository are kept, per build.
#[derive(Debug, Clone, Default)]
pub struct BlobScanCache {
    store: Option<BlobStore>,
}

const MAGIC: &[u8] = b"sluice code blobs\n";
/// The layout of [`BlobEntries`], and what an extraction finds within one build's lifetime; bump
/// when either changes.
const FORMAT: &[u8] = b"2";

impl BlobScanCache {
    pub fn disabled() -> BlobScanCache {
        BlobScanCache::default()
    }

    /// Under the user's cache directory, in `code-blobs/`.
    pub fn in_cache_dir(cache_dir: Option<&Path>) -> BlobScanCache {
        BlobScanCache { store: Some(BlobStore::new(cache::dir_under(cache_dir, "code-blobs"), MAGIC, 8)) }
    }

    pub fn is_enabled(&self) -> bool {
        self.store.is_some()
    }

    /// Per repository and set of the project's own SQL functions (`[queries] calls`), which
    /// decide what an extraction reads.
    fn key(repository: &Path, calls: &ProjectCalls) -> Key {
        let mut parts: Vec<&[u8]> = vec![cache::build_id(), FORMAT, repository.as_os_str().as_bytes()];
        if !calls.names().is_empty() {
            parts.push(b"\0calls");
            parts.extend(calls.names().iter().map(|c| c.as_bytes()));
        }
        cache::digest(&parts)
    }

    /// The entries kept for the repository at `repository`; none when there are none or they do
    /// not read back.
    pub fn load(&self, repository: &Path, calls: &ProjectCalls) -> BlobEntries {
        self.store.as_ref().and_then(|store| store.load(&Self::key(repository, calls))).unwrap_or_default()
    }

    pub fn save(&self, repository: &Path, calls: &ProjectCalls, entries: &BlobEntries) {
        if let Some(store) = &self.store {
            store.save(&Self::key(repository, calls), entries);
        }
    }
}

//! Policies: what the team declares about its domain and its data, under `policies/`.

pub mod csv_export;
pub mod identity;
pub mod index_usage;
pub mod names;
pub mod tables;

use crate::error::{read_text, Error, Result};
use std::path::Path;

/// Every policy the linter reads. Missing files mean "nothing declared".
#[derive(Debug, Clone, Default)]
pub struct Policies {
    pub identity: identity::IdentityPolicy,
    pub tables: tables::TablesPolicy,
    /// Production's index usage (`[policies] index_usage`), when named.
    pub index_usage: Option<index_usage::IndexUsage>,
}

impl Policies {
    /// Loads the policies from disk.
    pub fn load(dir: &Path) -> Result<Policies> {
        Self::load_with(dir, &|path| if path.exists() { read_text(path).map(Some) } else { Ok(None) })
    }

    /// Loads the policies through `read`, which returns a file's text or `None` when it does
    /// not exist: `sluice check` reads them from a git revision. `dir` is the path messages name.
    pub fn load_with(dir: &Path, read: &dyn Fn(&Path) -> Result<Option<String>>) -> Result<Policies> {
        let path = dir.join(identity::FILE);
        let identity = match read(&path)? {
            Some(text) => identity::IdentityPolicy::parse(&path, &text)?,
            None => identity::IdentityPolicy::default(),
        };
        let path = dir.join(tables::FILE);
        let tables = match read(&path)? {
            Some(text) => tables::TablesPolicy::parse(&path, &text, &|stats| {
                read(stats)?.ok_or_else(|| {
                    Error::invalid(stats, None, "statistics snapshot not found; export it with `sluice stats query`")
                })
            })?,
            None => tables::TablesPolicy::default(),
        };
        Ok(Policies { identity, tables, index_usage: None })
    }
}

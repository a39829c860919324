//! Policies: what the team declares about its domain and its data, under `policies/`.

pub mod identity;

use crate::error::Result;
use std::path::Path;

/// Every policy the linter reads. Missing files mean "nothing declared".
#[derive(Debug, Clone, Default)]
pub struct Policies {
    pub identity: identity::IdentityPolicy,
}

impl Policies {
    pub fn load(dir: &Path) -> Result<Policies> {
        Ok(Policies { identity: identity::IdentityPolicy::load(&dir.join(identity::FILE))? })
    }

    /// Loads the policies through `read`, which returns a file's text or `None` when it does
    /// not exist: `sluice check` reads them from a git revision. `dir` is the path messages name.
    pub fn load_with(dir: &Path, read: &dyn Fn(&Path) -> Result<Option<String>>) -> Result<Policies> {
        let path = dir.join(identity::FILE);
        let identity = match read(&path)? {
            Some(text) => identity::IdentityPolicy::parse(&path, &text)?,
            None => identity::IdentityPolicy::default(),
        };
        Ok(Policies { identity })
    }
}

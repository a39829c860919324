//! Policies: what the team declares about its domain and its data, under `policies/`.

pub mod identity;
pub mod tables;

use crate::error::Result;
use std::path::Path;

/// Every policy the linter reads. Missing files mean "nothing declared".
#[derive(Debug, Clone, Default)]
pub struct Policies {
    pub identity: identity::IdentityPolicy,
    pub tables: tables::TablesPolicy,
}

impl Policies {
    pub fn load(dir: &Path) -> Result<Policies> {
        Ok(Policies {
            identity: identity::IdentityPolicy::load(&dir.join(identity::FILE))?,
            tables: tables::TablesPolicy::load(&dir.join(tables::FILE))?,
        })
    }
}

//! The rules: one file each, listed in [`REGISTRY`]. `sluice rules`, the README table and
//! SARIF rule metadata are all generated from the registry.

pub mod change_freeze;
pub mod meta;

pub use meta::{Category, RuleMeta};

/// A rule. SQL rules implement the check hooks; rules whose findings come from
/// elsewhere (git history, plans, the freeze calendar) carry only their metadata.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;
}

/// Every rule Sluice knows, in the order `sluice rules` lists them.
pub static REGISTRY: &[&dyn Rule] = &[&change_freeze::ChangeFreeze];

pub fn all() -> impl Iterator<Item = &'static RuleMeta> {
    REGISTRY.iter().map(|r| r.meta())
}

pub fn find(id: &str) -> Option<&'static RuleMeta> {
    all().find(|m| m.id == id)
}

//! The rules: one file each, listed in [`REGISTRY`]. `sluice rules`, the README table and
//! SARIF rule metadata are all generated from the registry.

pub mod meta;
pub mod migration_deleted;
pub mod migration_edited;
pub mod migration_out_of_order;
pub mod migration_renamed;
pub mod migration_version_conflict;

pub use meta::{Category, RuleMeta};

/// A rule. SQL rules implement the check hooks; rules whose findings come from
/// elsewhere (git history, plans, the freeze calendar) carry only their metadata.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;
}

/// Every rule Sluice knows, in the order `sluice rules` lists them.
pub static REGISTRY: &[&dyn Rule] = &[
    &migration_edited::MigrationEdited,
    &migration_deleted::MigrationDeleted,
    &migration_renamed::MigrationRenamed,
    &migration_out_of_order::MigrationOutOfOrder,
    &migration_version_conflict::MigrationVersionConflict,
];

pub fn all() -> impl Iterator<Item = &'static RuleMeta> {
    REGISTRY.iter().map(|r| r.meta())
}

pub fn find(id: &str) -> Option<&'static RuleMeta> {
    all().find(|m| m.id == id)
}

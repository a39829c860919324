//! `migration-deleted`: a migration that exists on the base revision was deleted.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "migration-deleted",
    severity: Severity::Error,
    category: Category::History,
    summary: "A migration that exists on the base revision was deleted",
    what: "Flags a migration file present on the base revision that is gone in the pull request.",
    why: "Deleting an applied migration does not undo it: production keeps whatever it created, while fresh \
          environments built from the history no longer get it. The two drift apart, and migration runners \
          that verify their history (Flyway's validate, golang-migrate's dirty check) refuse to run.",
    fix: "Restore the file. To undo what it did, add a new migration that reverses it (for example a \
          `DROP INDEX CONCURRENTLY`).",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct MigrationDeleted;

impl Rule for MigrationDeleted {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

#[cfg(test)]
mod tests {
    use super::META;

    #[test]
    fn registered_with_history_docs() {
        let meta = crate::rules::find(META.id).expect("listed in REGISTRY");
        assert!(std::ptr::eq(meta, &META));
        assert_eq!(meta.category, crate::rules::Category::History);
        assert!(!meta.what.is_empty() && !meta.why.is_empty() && !meta.fix.is_empty());
    }
}

//! `migration-edited`: a migration that already exists on the base revision was modified.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "migration-edited",
    severity: Severity::Error,
    category: Category::History,
    summary: "A migration that exists on the base revision was modified",
    what: "Flags a migration file that is present on the base revision (usually `main`) and whose content \
           changed in the pull request.",
    why: "A migration on the base revision has already run in production (or will, from the base). Migration \
          runners record a migration as applied by its version, so the edit never runs where it matters: \
          production keeps the old schema while fresh environments and tests get the new one. The drift stays \
          hidden until a query or a later migration depends on the difference.",
    fix: "Revert the edit to the old migration and put the change in a new migration with a later version.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct MigrationEdited;

impl Rule for MigrationEdited {
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

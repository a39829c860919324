//! `migration-version-conflict`: two migrations share a version.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "migration-version-conflict",
    severity: Severity::Error,
    category: Category::History,
    summary: "Two migrations share a version",
    what: "Flags migrations on the head revision whose versions are equal, usually two branches that picked \
           the same number or timestamp.",
    why: "Runners record applied migrations by version: the second migration with a version already applied \
          is silently skipped in production, or the runner stops with an error mid-deploy. Which of the two \
          runs first in a fresh environment depends on file-name sorting.",
    fix: "Give the migration added by this change a new, later version.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct MigrationVersionConflict;

impl Rule for MigrationVersionConflict {
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

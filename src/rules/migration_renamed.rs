//! `migration-renamed`: a migration that exists on the base revision was renamed or moved.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "migration-renamed",
    severity: Severity::Warning,
    category: Category::History,
    summary: "A migration that exists on the base revision was renamed",
    what: "Flags a migration file present on the base revision that the pull request renamed or moved \
           (git rename detection), with or without changes to its content.",
    why: "Migration runners identify applied migrations by file name or version. A renamed migration can \
          look new and run a second time, or look missing and make the runner refuse to start. When the \
          version in the name is unchanged and the runner keys on the version alone, the rename is harmless, \
          hence a warning.",
    fix: "Keep the original file name. If the rename is intended (a layout change), make sure the runner's \
          history table is updated in the same deploy.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct MigrationRenamed;

impl Rule for MigrationRenamed {
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

//! `migration-out-of-order`: an added migration sorts before the newest migration on the base revision.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "migration-out-of-order",
    severity: Severity::Error,
    category: Category::History,
    summary: "An added migration's version sorts before the newest migration on the base revision",
    what: "Flags a migration added by the pull request whose version sorts before the newest migration \
           already on the base revision, typically a branch created before someone else's migration was \
           merged.",
    why: "Production has already applied the newer base migrations. Most runners either refuse to apply an \
          older version (Flyway without `outOfOrder`, golang-migrate) or apply it after the newer ones, so \
          production runs the migrations in a different order than every fresh environment and than the \
          order the schema was reviewed in.",
    fix: "Rename the migration to a version after the newest migration on the base revision (rebase the \
          branch and regenerate the timestamp).",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct MigrationOutOfOrder;

impl Rule for MigrationOutOfOrder {
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

//! `migration-out-of-order`: an added migration sorts before the newest migration on the base revision.

use crate::finding::{Finding, Severity};
use crate::rules::{Category, Rule, RuleMeta};
use crate::runner::Layout;

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
          order the schema was reviewed in. With diesel, dbmate (without `--strict`) and Prisma (`prisma migrate \
          deploy` \"applies all pending migrations\", per its documentation) it is a warning: they apply every \
          pending migration whatever its version, so the migration runs — after the newer ones.",
    fix: "Rename the migration to a version after the newest migration on the base revision (rebase the \
          branch and regenerate the timestamp).",
    bad: "",
    good: "",
    equivalents: "",
};

/// Whether the runner of `layout` applies every pending migration whatever its version, so an
/// out-of-order migration still runs, after the newer ones: diesel's `run_pending_migrations`
/// runs each migration missing from `__diesel_schema_migrations`, in version order; `dbmate up`
/// applies every pending migration unless run with `--strict`; `prisma migrate deploy` applies
/// every migration missing from `_prisma_migrations`, whatever its name.
fn runner_applies_older_versions(layout: Layout) -> bool {
    matches!(layout, Layout::Diesel | Layout::Dbmate | Layout::Prisma)
}

/// Out-of-order findings are errors where the runner refuses or skips an older version; a warning
/// where it applies it anyway (only the order differs from development).
pub fn weigh_for_runner(findings: &mut [Finding], layout: Layout) {
    if !runner_applies_older_versions(layout) {
        return;
    }
    for finding in findings.iter_mut().filter(|f| f.rule == META.id) {
        finding.severity = Severity::Warning;
        finding.message.push_str(
            "; the runner applies it anyway, after the newer ones: check that it does not depend on their order",
        );
    }
}

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
    fn a_warning_where_the_runner_applies_older_versions_anyway() {
        use super::*;
        let out_of_order = || vec![Finding::new(META.id, META.severity, "m/2024-01-01_x/up.sql", "sorts before")];
        let mut diesel = out_of_order();
        weigh_for_runner(&mut diesel, Layout::Diesel);
        assert_eq!(diesel[0].severity, Severity::Warning);
        assert!(diesel[0].message.contains("the runner applies it anyway"), "{}", diesel[0].message);
        // Issue 37: `prisma migrate deploy` applies every pending migration too.
        let mut prisma = out_of_order();
        weigh_for_runner(&mut prisma, Layout::Prisma);
        assert_eq!(prisma[0].severity, Severity::Warning);
        for layout in [Layout::Flat, Layout::Flyway, Layout::GolangMigrate, Layout::Goose, Layout::Refinery] {
            let mut others = out_of_order();
            weigh_for_runner(&mut others, layout);
            assert_eq!(others[0].severity, Severity::Error, "{layout:?}");
        }
    }

    #[test]
    fn registered_with_history_docs() {
        let meta = crate::rules::find(META.id).expect("listed in REGISTRY");
        assert!(std::ptr::eq(meta, &META));
        assert_eq!(meta.category, crate::rules::Category::History);
        assert!(!meta.what.is_empty() && !meta.why.is_empty() && !meta.fix.is_empty());
    }
}

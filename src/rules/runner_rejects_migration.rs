//! `runner-rejects-migration`: the migration tool itself would refuse or mis-run this file.
//! Its findings come from the migration-tool layer (`schema::tools`), which replays each tool's
//! own parsing: the rule carries the metadata.

use crate::finding::Severity;
use crate::rules::{Category, Rule, RuleMeta};

pub static META: RuleMeta = RuleMeta {
    id: "runner-rejects-migration",
    severity: Severity::Error,
    category: Category::Meta,
    summary: "The migration tool would refuse this file, cut a statement in the wrong place, or skip it",
    what: "Replays the migration tool's own reading of each file and reports what it would refuse or break: \
a goose file without `-- +goose Up`, a statement goose cuts at a line ending in `;` inside a function body, \
a dbmate file without a `-- migrate:down` section or with statements before `-- migrate:up`, a Flyway script \
mixing `CREATE INDEX CONCURRENTLY` with transactional statements (Flyway refuses it unless `mixed = true`), a \
Liquibase changeset without `author:id`, an Atlas `txmode` it does not accept. Files the tool would skip or \
could not be checked (a Drizzle file missing from `meta/_journal.json`, a file missing from `atlas.sum`, a goose \
Go migration, a Liquibase XML changeset) are reported as warnings.",
    why: "The deploy fails on the tool's own error, or runs something other than what the file says (a function \
body cut in two), or silently leaves out a migration reviewers saw: in each case the reviewed SQL is not what \
production gets.",
    fix: "Follow the message: add the missing section or annotation, wrap a function in `-- +goose StatementBegin` / \
`-- +goose StatementEnd`, give `CREATE INDEX CONCURRENTLY` a script of its own, list the file in the journal or \
`atlas.sum` (`atlas migrate hash`).",
    bad: "",
    good: "",
    equivalents: "None of squawk, strong_migrations or eugene read the migration tool's own file format; Atlas lint \
checks its own directory's integrity.",
};

pub struct RunnerRejectsMigration;

impl Rule for RunnerRejectsMigration {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

#[cfg(test)]
mod tests {
    use super::META;

    #[test]
    fn registered_with_docs() {
        let meta = crate::rules::find(META.id).expect("listed in REGISTRY");
        assert!(std::ptr::eq(meta, &META));
        assert!(!meta.what.is_empty() && !meta.why.is_empty() && !meta.fix.is_empty());
    }
}

//! The rules: one file each, listed in [`REGISTRY`]. `sluice rules`, the README table and
//! SARIF rule metadata are all generated from the registry.

pub mod change_freeze;
pub mod claims;
pub mod context;
pub mod domain_review_required;
pub mod gate_config_changed;
pub(crate) mod grouping;
pub mod index_inefficient;
mod lock_timeout_scopes;
pub(crate) mod locks;
pub mod meta;
pub mod migration_deleted;
pub mod migration_edited;
pub mod migration_out_of_order;
pub mod migration_renamed;
pub mod migration_version_conflict;
pub mod plan_cost_increase;
pub mod plan_expensive;
pub mod plan_regression;
pub mod plan_unavailable;
pub mod pool_capacity;
mod rule;
pub mod runner_rejects_migration;
pub(crate) mod work;

mod domain_identity_unique;
mod drop_index_in_use;
mod function_on_indexed_column;
pub mod history_not_understood;
mod invalid_suppression;
mod unique_constraint_on_existing_table;
mod unparsed_statement;
pub mod unread_text;

// Migration safety (issue 3) and type advice.
mod add_check_validated;
mod add_column_not_null_without_default;
mod add_column_volatile_default;
mod add_foreign_key_validated;
mod add_primary_key_blocking;
mod add_unique_constraint_blocking;
mod change_column_type;
mod concurrently_in_transaction;
pub(crate) mod constraint_without_rollback;
mod create_index_non_concurrently;
mod drop_column;
mod drop_index_non_concurrently;
mod drop_table;
mod lock_held_across_statements;
mod missing_lock_timeout;
mod missing_statement_timeout;
mod prefer_bigint_primary_key;
mod prefer_jsonb;
mod prefer_text_over_varchar;
mod prefer_timestamptz;
mod reindex_non_concurrently;
mod rename_column;
mod rename_table;
mod set_not_null;
mod unbatched_backfill;

#[cfg(test)]
pub(crate) mod testing;

pub use context::{
    Context, DeclaredColumn, Facts, HeldLock, MigrationState, Queries, Role, Rollback, RunnerTransaction, SourceFile,
    TableSize,
};
pub use meta::{Category, RuleMeta};
pub use rule::Rule;

/// Every rule Sluice knows, in the order `sluice rules` lists them.
pub static REGISTRY: &[&dyn Rule] = &[
    &function_on_indexed_column::FunctionOnIndexedColumn,
    &domain_identity_unique::DomainIdentityUnique,
    &domain_review_required::DomainReviewRequired,
    &unique_constraint_on_existing_table::UniqueConstraintOnExistingTable,
    &drop_index_in_use::DropIndexInUse,
    &create_index_non_concurrently::CreateIndexNonConcurrently,
    &drop_index_non_concurrently::DropIndexNonConcurrently,
    &concurrently_in_transaction::ConcurrentlyInTransaction,
    &reindex_non_concurrently::ReindexNonConcurrently,
    &add_column_volatile_default::AddColumnVolatileDefault,
    &add_column_not_null_without_default::AddColumnNotNullWithoutDefault,
    &set_not_null::SetNotNull,
    &add_foreign_key_validated::AddForeignKeyValidated,
    &add_check_validated::AddCheckValidated,
    &add_unique_constraint_blocking::AddUniqueConstraintBlocking,
    &add_primary_key_blocking::AddPrimaryKeyBlocking,
    &change_column_type::ChangeColumnType,
    &rename_column::RenameColumn,
    &rename_table::RenameTable,
    &drop_column::DropColumn,
    &drop_table::DropTable,
    &missing_lock_timeout::MissingLockTimeout,
    &missing_statement_timeout::MissingStatementTimeout,
    &lock_held_across_statements::LockHeldAcrossStatements,
    &unbatched_backfill::UnbatchedBackfill,
    &constraint_without_rollback::ConstraintWithoutRollback,
    &runner_rejects_migration::RunnerRejectsMigration,
    &prefer_jsonb::PreferJsonb,
    &prefer_timestamptz::PreferTimestamptz,
    &prefer_bigint_primary_key::PreferBigintPrimaryKey,
    &prefer_text_over_varchar::PreferTextOverVarchar,
    &unparsed_statement::UnparsedStatement,
    &unread_text::UnreadText,
    &history_not_understood::HistoryNotUnderstood,
    &invalid_suppression::InvalidSuppression,
    &migration_edited::MigrationEdited,
    &migration_deleted::MigrationDeleted,
    &migration_renamed::MigrationRenamed,
    &migration_out_of_order::MigrationOutOfOrder,
    &migration_version_conflict::MigrationVersionConflict,
    &plan_regression::PlanRegression,
    &plan_cost_increase::PlanCostIncrease,
    &plan_expensive::PlanExpensive,
    &index_inefficient::IndexInefficient,
    &pool_capacity::PoolCapacity,
    &plan_unavailable::PlanUnavailable,
    &change_freeze::ChangeFreeze,
    &gate_config_changed::GateConfigChanged,
];

pub fn all() -> impl Iterator<Item = &'static RuleMeta> {
    REGISTRY.iter().map(|r| r.meta())
}

pub fn find(id: &str) -> Option<&'static RuleMeta> {
    all().find(|m| m.id == id)
}

/// The rule table of the README, generated so it never drifts from the registry.
pub fn markdown_table() -> String {
    let mut out =
        String::from("| rule | default | category | what it catches | other tools |\n|---|---|---|---|---|\n");
    for meta in all() {
        let equivalents = if meta.equivalents.is_empty() { "—" } else { meta.equivalents };
        out.push_str(&format!(
            "| [`{id}`](docs/rules.md#{id}) | {} | {} | {} | {} |\n",
            meta.severity,
            meta.category.as_str(),
            meta.summary.replace('|', "\\|"),
            equivalents.replace('|', "\\|"),
            id = meta.id,
        ));
    }
    out
}

/// `docs/rules.md`: every rule's documentation, generated from the registry.
pub fn docs_markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from the rule registry by `sluice rules --docs`; do not edit by hand. -->\n# Sluice rules\n\n",
    );
    for meta in all() {
        out.push_str(
            &meta
                .markdown()
                .replacen("# ", "## ", 1)
                .replace("\n## What", "\n### What")
                .replace("\n## Why", "\n### Why")
                .replace("\n## How", "\n### How")
                .replace("\n## Example", "\n### Example")
                .replace("\n## Other", "\n### Other"),
        );
        out.push('\n');
    }
    out
}

pub use drop_index_in_use::META as DROP_INDEX_IN_USE;
pub use invalid_suppression::META as INVALID_SUPPRESSION;
pub use unparsed_statement::META as UNPARSED_STATEMENT;
pub use unread_text::META as UNREAD_TEXT;

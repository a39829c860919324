//! The rules: one file each, listed in [`REGISTRY`]. `sluice rules`, the README table and
//! SARIF rule metadata are all generated from the registry.

pub mod index_inefficient;
pub mod meta;
pub mod plan_cost_increase;
pub mod plan_regression;
pub mod plan_unavailable;
pub mod pool_capacity;

pub use meta::{Category, RuleMeta};

/// A rule. SQL rules implement the check hooks; rules whose findings come from
/// elsewhere (git history, plans, the freeze calendar) carry only their metadata.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;
}

/// Every rule Sluice knows, in the order `sluice rules` lists them.
pub static REGISTRY: &[&dyn Rule] = &[
    &plan_regression::PlanRegression,
    &plan_cost_increase::PlanCostIncrease,
    &index_inefficient::IndexInefficient,
    &pool_capacity::PoolCapacity,
    &plan_unavailable::PlanUnavailable,
];

pub fn all() -> impl Iterator<Item = &'static RuleMeta> {
    REGISTRY.iter().map(|r| r.meta())
}

pub fn find(id: &str) -> Option<&'static RuleMeta> {
    all().find(|m| m.id == id)
}

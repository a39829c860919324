//! `plan-cost-increase`: a query's plan changed or got costlier, less than a regression.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "plan-cost-increase",
    severity: Severity::Warning,
    category: Category::Plan,
    summary: "A query's plan changes shape at a higher cost, or its estimated cost more than doubles",
    what: "From `sluice plan`: the estimated total cost grows more than `cost_ratio_warning` times (default 2), \
or more than `cost_ratio_error` times while the head plan stays below `[plan] cost_floor` (default 1,000: a \
fraction of a millisecond, no regression); a join method or the way a relation is scanned changes, or an \
index the base plan used no longer exists, and the head plan costs more than 1.1 times the base's (an index \
swapped for another at the same cost is no warning); a sort or hash spills to disk on head under \
`--analyze`. A new query with no base plan is judged on its own (`plan-expensive`).",
    why: "Plan changes that are not yet regressions are where the next one comes from: a join that becomes a \
nested loop at production scale, a sort that no longer fits in work_mem.",
    fix: "Read the tree diff in the finding; if the new plan is intended, accept the warning, else add the \
index or rewrite the query.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct PlanCostIncrease;

impl Rule for PlanCostIncrease {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

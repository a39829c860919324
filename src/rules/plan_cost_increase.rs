//! `plan-cost-increase`: a query's plan changed or got costlier, less than a regression.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "plan-cost-increase",
    severity: Severity::Warning,
    category: Category::Plan,
    summary: "A query's plan changes shape or its estimated cost more than doubles",
    what: "From `sluice plan`: the estimated total cost grows more than `cost_ratio_warning` times (default 2); \
a join method or the way a relation is scanned changes; a sort or hash spills to disk on head under \
`--analyze`; an index the base plan used no longer exists but the head plan is neither a Seq Scan of a \
large relation nor more than `cost_ratio_error` times costlier (e.g. a two-column index replaced by its \
first column alone). A new query (no base plan) that reads a relation of at least `seq_scan_rows` rows by Seq Scan \
is reported here too.",
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

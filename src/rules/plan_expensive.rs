//! `plan-expensive`: a query with no base plan (new on head) whose plan is expensive on its own.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "plan-expensive",
    severity: Severity::Error,
    category: Category::Plan,
    summary: "A new query's plan is expensive on its own: a Seq Scan of a large table, or a cost above `cost_limit`",
    what: "From `sluice plan`: a query that has no base plan to compare with (a new query file or statement, \
or one that did not plan on base) is judged on its head plan alone. An error when it reads a relation of at \
least `seq_scan_rows` rows (default 100,000) by Seq Scan, or when its estimated total cost is above \
`[plan] cost_limit` (default 100,000).",
    why: "A new query arrives with no history to regress from, and the ones that take production down are \
the full scans nobody saw at the 1,000 rows of a development database. A changed query is compared with \
its base text instead (`plan-regression`).",
    fix: "Add the index the query needs in the same change, or bound what it reads (a predicate or an order \
an index serves); for a report that must scan, raise `[plan] cost_limit` or `seq_scan_rows`.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct PlanExpensive;

impl Rule for PlanExpensive {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

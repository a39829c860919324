//! `plan-regression`: a query's plan got much worse between base and head (from `sluice plan`).

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "plan-regression",
    severity: Severity::Error,
    category: Category::Plan,
    summary: "A query's plan regresses at production scale: an index path becomes a Seq Scan of a large table, or cost up more than 10×",
    what: "Compares the EXPLAIN plan of every query on the base and head schemas, on a fixture filled to \
production scale. An error only when the head plan is worse in the way that causes outages: a relation read \
through an index (Index, Index Only or Bitmap scan) on base that head reads by Seq Scan and that holds at \
least `seq_scan_rows` rows (default 100,000), or an estimated total cost that grows more than \
`cost_ratio_error` times (default 10) to at least `cost_floor` (default 1,000; a cheaper head plan is a \
fraction of a millisecond whatever the ratio, and a warning at most). A query whose text changed is planned \
in its base text on base and its head text on head. An index the base plan used that no longer exists, while the head \
plan is served by another index within that cost ratio, is `plan-cost-increase` (a warning) instead. Each \
query gets one finding, the most severe; what else changed is listed in it.",
    why: "Static rules catch the patterns we know; the planner catches the rest. In the reporting incident a \
migration dropped an index a reporting query needed, and the query went from milliseconds to a full scan \
of the table. In the transit incident a query passed every test on 12% of production's rows, then took \
11 s instead of 42 ms at the morning peak. Both plans were visible in an EXPLAIN at production scale.",
    fix: "Keep (or recreate) the index the query uses, or change the query so the head schema serves it. \
The finding shows both plans as a tree diff with the changed nodes marked.",
    bad: "-- queries/daily_revenue.sql\nSELECT sum(total) FROM orders WHERE created_at >= $1 AND created_at < $2;\n\
-- head migration\nDROP INDEX orders_created_at_idx;",
    good: "-- head migration: replace the index before dropping the old one\n\
CREATE INDEX CONCURRENTLY orders_created_at_status_idx ON orders (created_at, status);\n\
DROP INDEX CONCURRENTLY orders_created_at_idx;",
    equivalents: "",
};

pub struct PlanRegression;

impl Rule for PlanRegression {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

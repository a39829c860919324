//! `index-inefficient`: an index scan whose filter throws away most of what it fetched.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "index-inefficient",
    severity: Severity::Warning,
    category: Category::Plan,
    summary: "An index scan's filter removes more than 90% of the rows the index fetched",
    what: "From `sluice plan --analyze`: an Index, Index Only or Bitmap Heap scan on head whose `Rows Removed by \
Filter` exceed 90% of the rows it read (and at least 1,000). The index serves only a prefix of the predicate; \
the rest is checked row by row.",
    why: "The transit incident: `convert_timezone(...)` wrapped the third column of the index on \
(route_id, service_date, departure_time), so the index found every stop time of the route and day and the \
filter discarded almost all of them: 11 s instead of 42 ms at the morning peak.",
    fix: "Compare the indexed column itself (convert the parameter instead of the column), or index the \
expression the query uses.",
    bad: "SELECT * FROM stop_times\nWHERE route_id = $1 AND service_date = $2\n  AND convert_timezone('America/Toronto', departure_time) BETWEEN $3 AND $4;",
    good: "SELECT * FROM stop_times\nWHERE route_id = $1 AND service_date = $2\n  AND departure_time BETWEEN $3 AND $4;",
    equivalents: "",
};

pub struct IndexInefficient;

impl Rule for IndexInefficient {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

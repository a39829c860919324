//! `plan-unavailable`: a query could not be planned or measured; the gate reports what it cannot check.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "plan-unavailable",
    severity: Severity::Error,
    category: Category::Plan,
    summary: "A query could not be planned or ran past the statement timeout",
    what: "From `sluice plan`: PostgreSQL rejected the query on head (whether or not it planned on base: a \
migration that drops a column a query reads breaks the query), or EXPLAIN ANALYZE did not finish within the \
statement timeout.",
    why: "The gate fails closed: a query it cannot plan is a query it cannot vouch for, and one that hangs at \
production scale will hang in production.",
    fix: "Fix the query (the message is PostgreSQL's), or make it fast enough to finish within the timeout.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct PlanUnavailable;

impl Rule for PlanUnavailable {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

//! `pool-capacity`: at peak, the head's latencies would hold more connections than the pool has.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "pool-capacity",
    severity: Severity::Error,
    category: Category::Plan,
    summary: "At peak rate, the head's query latencies would keep more than 80% of the connection pool busy",
    what: "From `sluice plan --analyze` with a workload file (`policies/workload.toml`: pool size per instance, \
instances, each query file's peak rate). By Little's law the connections busy at peak are the sum over \
queries of median latency × peak rate. Above `max_utilisation` (default 80%) of the pool, error, with the \
base figure beside it. With two snapshots of production's `pg_stat_statements` (`[queries] workload`), \
`lint` and `check` weigh production's own measured load — Σ calls/s × mean time between the snapshots — \
against the same pool, naming the snapshot pair; `mean_exec_time` leaves out network and client time, so \
that figure is a lower bound (docs/workload.md).",
    why: "A slower query does not only make its own users wait: it holds a connection for longer, and at the \
morning peak the transit service's pool of 40 connections per instance ran out, taking every other \
endpoint down with it.",
    fix: "Make the query fast again (see the plan findings on the same query), or size the pool for the \
measured latency before deploying.",
    bad: "",
    good: "",
    equivalents: "",
};

pub struct PoolCapacity;

impl Rule for PoolCapacity {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

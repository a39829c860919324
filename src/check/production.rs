//! The stage of `sluice check` that reads production's workload (`[queries] workload`) from
//! the trusted side, like every gate input: its entries join the queries the review knows (so
//! `drop-index-in-use` names them, and an added migration that touches their tables re-checks
//! them), and with two snapshots `pool-capacity` weighs production's measured load against the
//! trusted pool.

use super::gate::Gate;
use super::sources::ChangeSources;
use crate::error::Result;
use crate::finding::Finding;
use crate::lint;
use crate::queries::ParsedQuery;

/// What production's evidence added to the review.
#[derive(Default)]
pub(super) struct Production {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// Reads the trusted workload into `sources`.
pub(super) fn read(gate: &Gate, sources: &mut ChangeSources) -> Result<Production> {
    let Some((workload, files)) = gate.workload()? else { return Ok(Production::default()) };
    let mut production = Production { findings: Vec::new(), notes: workload.report_notes(&files) };
    if workload.busy.is_some() {
        if let Some(pool) = gate.pool()? {
            let found = crate::plan::capacity::measured_load(&pool, &workload).into_iter().collect();
            production.findings = lint::apply_levels(found, &gate.loaded().config.rules);
        }
    }
    sources.sources.queries.extend(workload.queries().into_iter().map(ParsedQuery::parse));
    sources.sources.workload = Some(workload);
    Ok(production)
}

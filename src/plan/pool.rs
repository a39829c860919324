//! `pool-capacity` from the plans and measurements of both sides: each rate's query gets a
//! latency (the median measured under `--analyze`, else production's mean time scaled by the
//! head's cost over the base's), and the pool is checked by Little's law ([`super::capacity`]).

use super::capacity::{self, Latency, Load, QueryRate, RateTarget, Workload};
use super::diff;
use super::explain::{finding_at, Query, Side};
use crate::error::{Error, Result};
use crate::finding::{Finding, Severity};
use crate::rules::pool_capacity;
use serde_json::json;
use std::path::Path;

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}

/// The statements a rate is for: a file's (relative to the project root, or to the rate file's
/// directory), or the statement with its text.
fn targets(rate: &QueryRate, root: &Path, queries: &[Query]) -> Result<Vec<usize>> {
    let found: Vec<usize> = match &rate.target {
        RateTarget::File(file) => {
            let beside = rate.path.parent().map(|d| relative(root, &d.join(file))).unwrap_or_default();
            let beside = beside.strip_prefix("./").unwrap_or(&beside).to_string();
            (0..queries.len()).filter(|&i| &queries[i].file == file || queries[i].file == beside).collect()
        }
        RateTarget::Statement(text) => (0..queries.len())
            .filter(|&i| queries[i].text.split_whitespace().eq(text.split_whitespace()))
            .take(1)
            .collect(),
    };
    if found.is_empty() {
        if let RateTarget::File(file) = &rate.target {
            return Err(Error::invalid(
                &rate.path,
                Some(rate.line),
                format!("file = \"{file}\" is not among the planned query files"),
            ));
        }
    }
    Ok(found)
}

/// The latency of one rate's statements on both sides, or why there is none.
fn latency(indices: &[usize], rate: &QueryRate, base: &Side, head: &Side) -> Option<(Option<f64>, f64, Latency)> {
    let measured = |side: &Side| -> Option<f64> {
        indices.iter().map(|&i| side.measured[i].as_ref().and_then(|r| r.as_ref().ok()).map(|m| m.median_ms)).sum()
    };
    if indices.iter().any(|&i| head.measured[i].is_some()) {
        // A query with no measurement on head was already reported; count it as the timeout.
        return Some((measured(base), measured(head).unwrap_or(f64::INFINITY), Latency::Measured));
    }
    let mean = rate.mean_ms?;
    let cost = |side: &Side| -> Option<f64> {
        indices.iter().map(|&i| side.plans[i].as_ref().and_then(|r| r.as_ref().ok()).map(diff::total_cost)).sum()
    };
    let (base_cost, head_cost) = (cost(base)?, cost(head)?);
    (base_cost > 0.0).then(|| (Some(mean), mean * head_cost / base_cost, Latency::FromCost))
}

/// The `pool-capacity` finding (when the pool would be over its limit) and notes on the rates
/// that could not be given a latency.
pub(super) fn check(
    workload: &Workload,
    root: &Path,
    queries: &[Query],
    base: &Side,
    head: &Side,
) -> Result<(Vec<Finding>, Vec<String>)> {
    let mut loads = Vec::new();
    let mut first = Vec::new();
    let mut unknown = Vec::new();
    for rate in &workload.rates {
        let indices = targets(rate, root, queries)?;
        let Some(&at) = indices.first() else { continue };
        let name = match &rate.target {
            RateTarget::File(_) => queries[at].file.clone(),
            RateTarget::Statement(_) => format!("{}:{}", queries[at].file, queries[at].line),
        };
        match latency(&indices, rate, base, head) {
            Some((base_ms, head_ms, latency)) => {
                first.push(at);
                loads.push(Load { name, calls_per_second: rate.calls_per_second, base_ms, head_ms, latency });
            }
            None => unknown.push(name),
        }
    }
    let mut notes = Vec::new();
    if !unknown.is_empty() {
        notes.push(format!(
            "pool-capacity: no latency for {} (run with --analyze, or give production's mean_ms)",
            unknown.join(", ")
        ));
    }
    let c = capacity::capacity(workload, loads);
    if !c.over() {
        return Ok((Vec::new(), notes));
    }
    let Some(worst) =
        (0..c.loads.len()).max_by(|&a, &b| c.loads[a].head_connections().total_cmp(&c.loads[b].head_connections()))
    else {
        return Ok((Vec::new(), notes));
    };
    let (query, load) = (&queries[first[worst]], &c.loads[worst]);
    let count = |x: f64| if x.is_finite() { diff::format_count(x.ceil()) } else { "unbounded".into() };
    let base_text = load.base_connections().map(|b| format!(" (on base: {})", count(b))).unwrap_or_default();
    let message = format!(
        "at {} req/s this query would hold {} connections{base_text}; the pool has {} ({} × {}), and all queries together would hold {} at peak{}",
        load.calls_per_second,
        count(load.head_connections()),
        c.pool_total,
        workload.pool_size,
        workload.instances,
        count(c.head_busy),
        c.base_busy.map(|b| format!(" (base: {})", count(b))).unwrap_or_default()
    );
    let detail: Vec<String> = c
        .loads
        .iter()
        .map(|l| {
            format!(
                "{}: {} req/s × {:.2} ms{} = {:.1} connections (base {})",
                l.name,
                l.calls_per_second,
                l.head_ms,
                match l.latency {
                    Latency::Measured => "",
                    Latency::FromCost => " (production's mean × the cost ratio)",
                },
                l.head_connections(),
                l.base_connections().map(|b| format!("{b:.1}")).unwrap_or_else(|| "n/a".into())
            )
        })
        .collect();
    let f = finding_at(pool_capacity::META.id, Severity::Error, query, message)
        .help(format!(
            "busy connections = latency × arrival rate (Little's law), summed over {}; the limit is {:.0}% of the pool\n{}",
            workload.path.display(),
            workload.max_utilisation * 100.0,
            detail.join("\n")
        ))
        .fact("pool", c.pool_total.to_string())
        .fact("busy at peak (head)", format!("{:.1}", c.head_busy))
        .evidence(json!({
            "pool_total": c.pool_total,
            "limit": c.limit,
            "head_busy": c.head_busy,
            "base_busy": c.base_busy,
            "queries": c.loads.iter().map(|l| json!({
                "file": l.name,
                "peak_rps": l.calls_per_second,
                "base_ms": l.base_ms,
                "head_ms": l.head_ms,
                "latency": match l.latency { Latency::Measured => "measured", Latency::FromCost => "mean × cost ratio" },
            })).collect::<Vec<_>>(),
        }));
    Ok((vec![f], notes))
}

//! `pool-capacity` from the plans and measurements of both sides: each rate's query gets a
//! latency (the median measured under `--analyze`, else production's mean time scaled by the
//! head's cost over the base's), and the pool is checked by Little's law ([`super::capacity`]).

use super::capacity::{self, Latency, Load, QueryRate, RateTarget, Workload};
use super::diff;
use super::explain::{finding_at, Query, Side};
use crate::error::{Error, Result};
use crate::finding::{Finding, Severity};
use crate::queries::workload::Workload as ProductionWorkload;
use crate::rules::pool_capacity;
use crate::sql::fingerprint::fingerprint;
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

/// Where a load's finding points: the planned statement, or the workload entry (a production
/// query no planned statement matches).
enum Place {
    Planned(usize),
    Entry { file: String, line: usize },
}

/// The loads, where each one's finding would point, and the connections held by statements no
/// load stands for.
struct Loads {
    loads: Vec<Load>,
    places: Vec<Place>,
    other_busy: f64,
}

/// The loads of `workload.toml`'s `[[queries]]` rates; the rates that got no latency are told in
/// `notes`.
fn declared_loads(
    workload: &Workload,
    root: &Path,
    queries: &[Query],
    base: &Side,
    head: &Side,
    notes: &mut Vec<String>,
) -> Result<Loads> {
    let mut out = Loads { loads: Vec::new(), places: Vec::new(), other_busy: 0.0 };
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
                out.places.push(Place::Planned(at));
                out.loads.push(Load { name, calls_per_second: rate.calls_per_second, base_ms, head_ms, latency });
            }
            None => unknown.push(name),
        }
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "pool-capacity: no latency for {} (run with --analyze, or give production's mean_ms)",
            unknown.join(", ")
        ));
    }
    Ok(out)
}

/// The loads of production's measured workload (two snapshots of `[queries] workload`), as
/// `lint` and `check` weigh it: every entry's calls per second and mean time, an entry a planned
/// statement matches (by fingerprint) given that statement's head latency — measured, or the
/// mean times the head's cost over the base's —, and the time of the statements the workload
/// does not check (`BEGIN`, `SET`…) held on both sides.
fn measured_loads(production: &ProductionWorkload, queries: &[Query], base: &Side, head: &Side) -> Loads {
    let fingerprints: Vec<String> = queries.iter().map(|q| fingerprint(&q.text)).collect();
    let mut out = Loads { loads: Vec::new(), places: Vec::new(), other_busy: 0.0 };
    let mut entries_busy = 0.0;
    for entry in &production.entries {
        let Some(per_second) = entry.origin.per_second else { continue };
        let mean = entry.origin.mean_ms;
        entries_busy += per_second * mean / 1000.0;
        let planned = fingerprints.iter().position(|f| *f == entry.fingerprint);
        let rate = QueryRate {
            target: RateTarget::Statement(entry.sql.clone()),
            calls_per_second: per_second,
            mean_ms: Some(mean),
            path: entry.origin.file.clone().into(),
            line: entry.origin.line,
        };
        let (name, place, latency) = match planned {
            Some(at) => (
                format!("{}:{} ({})", queries[at].file, queries[at].line, entry.origin.describe()),
                Place::Planned(at),
                latency(&[at], &rate, base, head),
            ),
            None => (
                entry.origin.describe(),
                Place::Entry { file: entry.origin.file.clone(), line: entry.origin.line },
                None,
            ),
        };
        // A statement the change leaves alone, or one whose plans have no cost to compare, runs
        // as production measured it.
        let (base_ms, head_ms, latency) = latency.unwrap_or((Some(mean), mean, Latency::Production));
        out.places.push(place);
        out.loads.push(Load { name, calls_per_second: per_second, base_ms, head_ms, latency });
    }
    out.other_busy = (production.busy.unwrap_or(0.0) - entries_busy).max(0.0);
    out
}

/// The `pool-capacity` finding (when the pool would be over its limit) and notes on the rates
/// that could not be given a latency. The rates are `workload.toml`'s `[[queries]]`, or, when it
/// gives none, production's measured ones (`production`, with two snapshots).
pub(super) fn check(
    workload: &Workload,
    root: &Path,
    queries: &[Query],
    base: &Side,
    head: &Side,
    production: Option<&ProductionWorkload>,
) -> Result<(Vec<Finding>, Vec<String>)> {
    let mut notes = Vec::new();
    let measured = production.filter(|p| p.busy.is_some()).and_then(|p| Some((p, p.interval.as_ref()?)));
    let loads = match measured {
        Some((production, interval)) if workload.rates.is_empty() => {
            notes.push(format!(
                "pool-capacity: rates and mean times from production's workload ({}); mean_exec_time is time in \
                 the server only (no network or client time), so the load is a lower bound",
                interval.describe()
            ));
            notes.extend(production.notes.iter().cloned());
            measured_loads(production, queries, base, head)
        }
        Some((_, interval)) => {
            notes.push(format!(
                "pool-capacity: the rates of {} used; production's measured rates ({}) are used when it gives no \
                 [[queries]]",
                workload.path.display(),
                interval.describe()
            ));
            declared_loads(workload, root, queries, base, head, &mut notes)?
        }
        None => declared_loads(workload, root, queries, base, head, &mut notes)?,
    };
    let Loads { loads, places, other_busy } = loads;
    let c = capacity::capacity(workload, loads).with_other_busy(other_busy);
    if !c.over() {
        return Ok((Vec::new(), notes));
    }
    let Some(worst) =
        (0..c.loads.len()).max_by(|&a, &b| c.loads[a].head_connections().total_cmp(&c.loads[b].head_connections()))
    else {
        return Ok((Vec::new(), notes));
    };
    let load = &c.loads[worst];
    let count = |x: f64| if x.is_finite() { diff::format_count(x.ceil()) } else { "unbounded".into() };
    let base_text = load.base_connections().map(|b| format!(" (on base: {})", count(b))).unwrap_or_default();
    let rate = match measured {
        Some(_) if workload.rates.is_empty() => {
            format!("{} calls/s (production's, measured)", crate::queries::workload::quantity(load.calls_per_second))
        }
        _ => format!("{} req/s", load.calls_per_second),
    };
    let message = format!(
        "at {rate} this query would hold {} connections{base_text}; the pool has {} ({} × {}), and all queries together would hold {} at peak{}",
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
                    Latency::Production => " (production's mean: not planned, unchanged)",
                },
                l.head_connections(),
                l.base_connections().map(|b| format!("{b:.1}")).unwrap_or_else(|| "n/a".into())
            )
        })
        .collect();
    let mut detail = detail;
    if c.other_busy > 0.0 {
        detail.push(format!(
            "statements production's workload does not check (transaction control, SET…): {:.1} connections",
            c.other_busy
        ));
    }
    let finding = match &places[worst] {
        Place::Planned(at) => finding_at(pool_capacity::META.id, Severity::Error, &queries[*at], message),
        Place::Entry { file, line } => {
            Finding::new(pool_capacity::META.id, Severity::Error, file.clone(), message).at(*line, 1, *line, 1)
        }
    };
    let summed_over = match measured {
        Some((_, interval)) if workload.rates.is_empty() => {
            format!("production's workload ({}; a lower bound: time in the server only)", interval.describe())
        }
        _ => workload.path.display().to_string(),
    };
    let f = finding
        .help(format!(
            "busy connections = latency × arrival rate (Little's law), summed over {summed_over}; the limit is {:.0}% \
             of the pool in {}\n{}",
            workload.max_utilisation * 100.0,
            workload.path.display(),
            detail.join("\n")
        ))
        .fact("pool", c.pool_total.to_string())
        .fact("busy at peak (head)", format!("{:.1}", c.head_busy))
        .evidence(json!({
            "pool_total": c.pool_total,
            "limit": c.limit,
            "head_busy": c.head_busy,
            "base_busy": c.base_busy,
            "other_busy": c.other_busy,
            "queries": c.loads.iter().map(|l| json!({
                "file": l.name,
                "peak_rps": l.calls_per_second,
                "base_ms": l.base_ms,
                "head_ms": l.head_ms,
                "latency": l.latency.describe(),
            })).collect::<Vec<_>>(),
        }));
    Ok((vec![f], notes))
}

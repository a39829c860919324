//! The connection-pool capacity check. By Little's law, the connections busy at peak are the
//! sum over queries of (latency × arrival rate). A query that got 250× slower at 300 req/s
//! needs 250× the connections: the transit incident exhausted a pool of 40 per instance this way.
//!
//! The pool comes from `workload.toml`; the rates from its `[[queries]]` or from any other
//! source of [`QueryRate`]s (a production workload export gives each statement's calls per
//! second and mean time), added with [`Workload::add_rates`].

use crate::error::{line_of_key, line_of_offset, parse_toml, read_text, Error, Result};
use crate::finding::{Finding, Severity};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    pool: RawPool,
    #[serde(default)]
    queries: Vec<Spanned<RawQuery>>,
    /// Fraction of the pool that may be busy at peak before it is an error (default 0.8).
    max_utilisation: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    /// Connections per application instance.
    size: u32,
    #[serde(default = "one")]
    instances: u32,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    file: String,
    /// Requests per second at peak, over all instances.
    peak_rps: f64,
    /// Production's mean execution time, when known.
    #[serde(default)]
    mean_ms: Option<f64>,
}

/// Which planned statements a rate is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateTarget {
    /// Every statement of a query source (relative to the project root, with `/`; or to the
    /// rate file's directory), run one after another per request.
    File(String),
    /// The statement with this text (whitespace aside), wherever it was found.
    Statement(String),
}

/// How often one query runs at peak, and how long it takes in production when that is known.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRate {
    pub target: RateTarget,
    /// Over all instances.
    pub calls_per_second: f64,
    /// Production's mean execution time (a lower bound of what a connection is held: no network
    /// or client time). With it, the head's latency is estimated from the cost ratio of the
    /// plans when the queries are not run (`--analyze`).
    pub mean_ms: Option<f64>,
    /// The file the rate was read from and its line, for errors.
    pub path: PathBuf,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub path: PathBuf,
    pub pool_size: u32,
    pub instances: u32,
    pub max_utilisation: f64,
    pub rates: Vec<QueryRate>,
}

impl Workload {
    pub fn load(path: &Path) -> Result<Workload> {
        let text = read_text(path)?;
        parse(path, &text)
    }

    /// Rates from another source; a statement already given a rate keeps the first.
    pub fn add_rates(&mut self, rates: impl IntoIterator<Item = QueryRate>) {
        for rate in rates {
            if !self.rates.iter().any(|r| r.target == rate.target) {
                self.rates.push(rate);
            }
        }
    }

    /// Connections across all instances.
    pub fn pool_total(&self) -> u64 {
        u64::from(self.pool_size) * u64::from(self.instances)
    }

    pub fn limit(&self) -> f64 {
        self.pool_total() as f64 * self.max_utilisation
    }
}

pub fn parse(path: &Path, text: &str) -> Result<Workload> {
    let raw: RawWorkload = parse_toml(path, text)?;
    for (key, value) in [("size", raw.pool.size), ("instances", raw.pool.instances)] {
        if value == 0 {
            return Err(Error::invalid(path, line_of_key(text, key), format!("[pool] {key} must be at least 1")));
        }
    }
    let max_utilisation = raw.max_utilisation.unwrap_or(0.8);
    if !(max_utilisation > 0.0 && max_utilisation <= 1.0) {
        return Err(Error::invalid(
            path,
            line_of_key(text, "max_utilisation"),
            format!("max_utilisation = {max_utilisation} is not in (0, 1]"),
        ));
    }
    let mut rates = Vec::new();
    for q in raw.queries {
        let line = line_of_offset(text, q.span().start);
        let q = q.into_inner();
        if !(q.peak_rps.is_finite() && q.peak_rps >= 0.0) {
            return Err(Error::invalid(path, Some(line), format!("peak_rps = {} is not a rate", q.peak_rps)));
        }
        if let Some(ms) = q.mean_ms.filter(|ms| !(ms.is_finite() && *ms >= 0.0)) {
            return Err(Error::invalid(path, Some(line), format!("mean_ms = {ms} is not a duration")));
        }
        rates.push(QueryRate {
            target: RateTarget::File(q.file.replace('\\', "/")),
            calls_per_second: q.peak_rps,
            mean_ms: q.mean_ms,
            path: path.to_path_buf(),
            line,
        });
    }
    Ok(Workload {
        path: path.to_path_buf(),
        pool_size: raw.pool.size,
        instances: raw.pool.instances,
        max_utilisation,
        rates,
    })
}

/// How a latency was had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// The median of EXPLAIN ANALYZE runs on the fixture.
    Measured,
    /// Production's mean time, times the head's cost over the base's.
    FromCost,
    /// Production's mean time as it is: a workload entry no planned query matches, which the
    /// change leaves as it runs.
    Production,
}

impl Latency {
    pub fn describe(self) -> &'static str {
        match self {
            Latency::Measured => "measured",
            Latency::FromCost => "mean × cost ratio",
            Latency::Production => "production's mean",
        }
    }
}

/// One query's share of the pool at peak.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The query file or statement, as findings name it.
    pub name: String,
    pub calls_per_second: f64,
    /// Latency of the query (a file's statements, one after another), in ms.
    pub base_ms: Option<f64>,
    pub head_ms: f64,
    pub latency: Latency,
}

impl Load {
    /// Little's law: L = λ W.
    pub fn head_connections(&self) -> f64 {
        self.calls_per_second * self.head_ms / 1000.0
    }

    pub fn base_connections(&self) -> Option<f64> {
        self.base_ms.map(|ms| self.calls_per_second * ms / 1000.0)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    pub head_busy: f64,
    pub base_busy: Option<f64>,
    pub pool_total: u64,
    pub limit: f64,
    pub loads: Vec<Load>,
    /// Connections held by statements no load stands for (production's utility and
    /// transaction-control statements), the same on both sides; in `head_busy` and `base_busy`.
    pub other_busy: f64,
}

impl Capacity {
    pub fn over(&self) -> bool {
        self.head_busy > self.limit
    }
}

pub fn capacity(workload: &Workload, loads: Vec<Load>) -> Capacity {
    let head_busy = loads.iter().map(Load::head_connections).sum();
    let base_busy = loads.iter().map(Load::base_connections).sum::<Option<f64>>();
    Capacity {
        head_busy,
        base_busy,
        pool_total: workload.pool_total(),
        limit: workload.limit(),
        loads,
        other_busy: 0.0,
    }
}

impl Capacity {
    /// The capacity with `busy` more connections held on both sides by statements no load
    /// stands for.
    pub fn with_other_busy(mut self, busy: f64) -> Capacity {
        self.head_busy += busy;
        self.base_busy = self.base_busy.map(|b| b + busy);
        self.other_busy += busy;
        self
    }
}

/// `pool-capacity` on production's own figures (two workload snapshots, `[queries] workload`):
/// the connections busy on average between them, Σ calls/s × mean time over every statement,
/// against the pool. `None` when the pool carries it, or the workload has no rates.
pub fn measured_load(pool: &Workload, workload: &crate::queries::workload::Workload) -> Option<Finding> {
    use crate::queries::workload::quantity;
    let (busy, interval) = (workload.busy?, workload.interval.as_ref()?);
    if busy <= pool.limit() {
        return None;
    }
    let held = |e: &crate::queries::workload::Entry| e.origin.per_second.unwrap_or(0.0) * e.origin.mean_ms / 1000.0;
    let mut busiest: Vec<&crate::queries::workload::Entry> = workload.entries.iter().collect();
    busiest.sort_by(|a, b| held(b).total_cmp(&held(a)));
    let top = busiest.first()?;
    let message = format!(
        "production's measured load keeps {} connections busy on average ({}), more than {:.0}% of the pool's {} \
         ({} × {}); the busiest is the {}, holding {}",
        quantity(busy),
        interval.describe(),
        pool.max_utilisation * 100.0,
        pool.pool_total(),
        pool.pool_size,
        pool.instances,
        top.origin.describe(),
        quantity(held(top)),
    );
    let detail: Vec<String> = busiest
        .iter()
        .take(10)
        .map(|e| {
            format!(
                "{}:{}: {} calls/s × {} ms = {} connections",
                e.origin.file,
                e.origin.line,
                quantity(e.origin.per_second.unwrap_or(0.0)),
                quantity(e.origin.mean_ms),
                quantity(held(e))
            )
        })
        .collect();
    Some(
        Finding::new(crate::rules::pool_capacity::META.id, Severity::Error, top.origin.file.clone(), message)
            .at(top.origin.line, 1, top.origin.line, 1)
            .help(format!(
                "busy connections = arrival rate × time in the server (Little's law), summed over every statement of \
                 the workload between {}; pg_stat_statements' mean_exec_time is execution inside the server only: \
                 network, client and idle-in-transaction time hold connections too, so the real load is higher (this \
                 is a lower bound). The limit is {:.0}% of the pool in {}. Make the busiest queries faster, or size \
                 the pool for the load.\n{}",
                interval.describe(),
                pool.max_utilisation * 100.0,
                pool.path.display(),
                detail.join("\n")
            ))
            .fact("snapshots", interval.describe())
            .fact("pool", pool.pool_total().to_string())
            .fact("busy (measured, a lower bound)", quantity(busy)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "[pool]\nsize = 40\ninstances = 12\n\n[[queries]]\nfile = \"queries/departures.sql\"\npeak_rps = 300\n";

    #[test]
    fn parses_pool_and_queries() {
        let w = parse(Path::new("workload.toml"), TEXT).expect("valid");
        assert_eq!(w.pool_total(), 480);
        assert_eq!(w.limit(), 384.0);
        assert_eq!(
            w.rates,
            vec![QueryRate {
                target: RateTarget::File("queries/departures.sql".into()),
                calls_per_second: 300.0,
                mean_ms: None,
                path: "workload.toml".into(),
                line: 5
            }]
        );
    }

    #[test]
    fn unknown_keys_name_file_and_line() {
        let e = parse(Path::new("workload.toml"), "[pool]\nsize = 40\nmax = 3\n").expect_err("unknown key").to_string();
        assert!(e.starts_with("workload.toml:3:") && e.contains("max"), "{e}");
        let e = parse(Path::new("workload.toml"), "[pool]\nsize = 40\n[[queries]]\nfile = \"q.sql\"\npeak_rps = -1\n")
            .expect_err("negative rate")
            .to_string();
        assert!(e.starts_with("workload.toml:3:"), "{e}");
        let e = parse(Path::new("workload.toml"), "[pool]\nsize = 40\ninstances = 0\n").expect_err("no instances");
        assert_eq!(e.to_string(), "workload.toml:3: [pool] instances must be at least 1");
        let e = parse(Path::new("workload.toml"), "max_utilisation = 1.5\n[pool]\nsize = 4\n").expect_err("over 1");
        assert_eq!(e.to_string(), "workload.toml:1: max_utilisation = 1.5 is not in (0, 1]");
        let e =
            parse(Path::new("w.toml"), "[pool]\nsize = 4\n[[queries]]\nfile = \"q.sql\"\npeak_rps = 1\nmean_ms = -2\n")
                .expect_err("negative time");
        assert_eq!(e.to_string(), "w.toml:3: mean_ms = -2 is not a duration");
    }

    #[test]
    fn littles_law_the_transit_incident() {
        let w = parse(Path::new("workload.toml"), TEXT).expect("valid");
        // 42 ms at 300 req/s holds 12.6 connections; 11 s holds 3,300.
        let c = capacity(
            &w,
            vec![Load {
                name: "queries/departures.sql".into(),
                calls_per_second: 300.0,
                base_ms: Some(42.0),
                head_ms: 11_000.0,
                latency: Latency::Measured,
            }],
        );
        assert!((c.head_busy - 3300.0).abs() < 1e-9);
        assert!((c.base_busy.expect("base") - 12.6).abs() < 1e-9);
        assert!(c.over());
        let ok = capacity(
            &w,
            vec![Load {
                name: "q".into(),
                calls_per_second: 300.0,
                base_ms: None,
                head_ms: 1_280.0,
                latency: Latency::Measured,
            }],
        );
        assert!((ok.head_busy - 384.0).abs() < 1e-9);
        assert!(!ok.over(), "exactly 80% is still within the limit");
        assert_eq!(ok.base_busy, None);
    }

    #[test]
    fn sums_over_queries() {
        let w = parse(Path::new("w.toml"), "[pool]\nsize = 10\n").expect("valid");
        let c = capacity(
            &w,
            vec![
                Load {
                    name: "a".into(),
                    calls_per_second: 100.0,
                    base_ms: Some(10.0),
                    head_ms: 50.0,
                    latency: Latency::Measured,
                },
                Load {
                    name: "b".into(),
                    calls_per_second: 50.0,
                    base_ms: Some(20.0),
                    head_ms: 80.0,
                    latency: Latency::FromCost,
                },
            ],
        );
        assert!((c.head_busy - 9.0).abs() < 1e-9);
        assert!((c.base_busy.expect("base") - 2.0).abs() < 1e-9);
        assert!(c.over(), "9 of 10 is above 80%");
    }

    #[test]
    fn production_load_over_the_pool_is_an_error_that_says_it_is_a_lower_bound() {
        use crate::queries::workload::{Reading, Snapshot, Workload as Measured};
        let header =
            "queryid,calls,total_exec_time,mean_exec_time,rows,captured_at,stats_reset,dealloc,database,query\n";
        let snapshot = |file: &str, at: &str, calls: u64, total: f64| {
            let text = format!(
                "{header}5,{calls},{total},1,1,{at},2026-12-01 00:00:00+00,0,app,select * from t where a = $1\n\
                 6,{calls},{},0.01,0,{at},2026-12-01 00:00:00+00,0,app,commit\n",
                calls as f64 * 0.01
            );
            Snapshot::parse(Path::new(file), file.into(), &text).unwrap()
        };
        // 40,000 calls in 20 s at 5 ms each: 2,000 calls/s holding 10 connections.
        let measured = Measured::from_snapshots(
            vec![
                snapshot("a.csv", "2026-12-03 10:00:00+00", 10_000, 50_000.0),
                snapshot("b.csv", "2026-12-03 10:00:20+00", 50_000, 250_000.0),
            ],
            &Reading::now(30),
        )
        .unwrap();
        let small = parse(Path::new("policies/workload.toml"), "[pool]\nsize = 6\ninstances = 2\n").unwrap();
        let f = measured_load(&small, &measured).expect("10 connections on a pool of 12 is over 80%");
        assert_eq!(f.rule, "pool-capacity");
        assert_eq!((f.file.as_str(), f.line), ("b.csv", 2));
        assert!(
            f.message.starts_with(
                "production's measured load keeps 10 connections busy on average (a.csv → b.csv (20 s apart)), more \
                 than 80% of the pool's 12 (6 × 2); the busiest is the workload entry at b.csv:2 (queryid 5, 2 k \
                 calls/s, 5 ms)"
            ),
            "{}",
            f.message
        );
        assert!(f.help.contains("a lower bound"), "{}", f.help);
        let large = parse(Path::new("policies/workload.toml"), "[pool]\nsize = 20\n").unwrap();
        assert!(measured_load(&large, &measured).is_none(), "10 of 20 is within 80%");
    }

    #[test]
    fn rates_from_another_source_join_the_file_s_and_the_first_rate_of_a_statement_stands() {
        let mut w = parse(Path::new("workload.toml"), TEXT).expect("valid");
        let statement = |rps: f64| QueryRate {
            target: RateTarget::Statement("SELECT 1".into()),
            calls_per_second: rps,
            mean_ms: Some(0.02),
            path: "workload.csv".into(),
            line: 3,
        };
        w.add_rates([statement(2_600.0), statement(10.0)]);
        assert_eq!(w.rates.len(), 2);
        assert_eq!(w.rates[1], statement(2_600.0));
    }
}

//! The connection-pool capacity check. By Little's law, the connections busy at peak are the
//! sum over queries of (latency × arrival rate). A query that got 250× slower at 300 req/s
//! needs 250× the connections: the transit incident exhausted a pool of 40 per instance this way.
//!
//! The pool comes from `workload.toml`; the rates from its `[[queries]]` or from any other
//! source of [`QueryRate`]s (a production workload export gives each statement's calls per
//! second and mean time), added with [`Workload::add_rates`].

use crate::error::{line_of_key, line_of_offset, parse_toml, read_text, Error, Result};
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
    #[serde(default)]
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
}

impl Capacity {
    pub fn over(&self) -> bool {
        self.head_busy > self.limit
    }
}

pub fn capacity(workload: &Workload, loads: Vec<Load>) -> Capacity {
    let head_busy = loads.iter().map(Load::head_connections).sum();
    let base_busy = loads.iter().map(Load::base_connections).sum::<Option<f64>>();
    Capacity { head_busy, base_busy, pool_total: workload.pool_total(), limit: workload.limit(), loads }
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

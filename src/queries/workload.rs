//! The production workload as a query source (`[queries] workload`): one or two exports of
//! `pg_stat_statements` (the CSV `psql --csv` prints for [`EXPORT_QUERY`], `sluice stats
//! workload`). Static reading finds the queries an application writes; this finds the ones it
//! runs — an ORM's `where("upper(name) = upper(?)")` arrives as `upper($1)` — with how often and
//! how long each takes.
//!
//! What an export holds, and what this does with it:
//! - Entries are keyed by their [fingerprint](crate::sql::fingerprint): the same query recorded
//!   with other comments, spacing, or IN lists of other lengths is one entry; their counters add
//!   up, and the row with the most calls names the entry (its CSV line and `queryid`).
//! - `PREPARE p(bigint) AS …` is recorded as the PREPARE text: the statement inside is what is
//!   checked, each `$n` cast to the type the PREPARE declares. A parameter in a typed literal's
//!   place (`INTERVAL $1`, where a constant was) is cast to that type. Other parameters are left
//!   to PostgreSQL, which takes the type of the column they are compared with.
//! - Utility and transaction-control statements (`BEGIN`, `COMMIT`, `SET`, DDL) and the
//!   extension's own queries are not checked, but counted; their time still occupies
//!   connections, so they count in the pool's load.
//! - Counters are cumulative since the statistics were last reset: a rate needs two snapshots.
//!   With two, each entry's calls per second is the difference over the time between them (the
//!   exports' own `captured_at`, or an interval given), and its mean time the mean over that
//!   interval. A pair from different servers or with a reset between them is refused.

use crate::error::{Error, Result};
use crate::policy::csv_export::{Export, Record};
use crate::sql::fingerprint::fingerprint;
use chrono::{DateTime, FixedOffset};
pub use origin::{quantity, Origin};
use recorded::{prepare, Prepared};
use std::collections::BTreeMap;
use std::path::Path;

/// The query whose `psql --csv` output is a workload snapshot.
pub const EXPORT_QUERY: &str = "\
-- Sluice workload snapshot: the statements this database runs, from pg_stat_statements.
-- Needs the extension loaded and created (PostgreSQL 14 or later):
--   shared_preload_libraries = 'pg_stat_statements' (a restart), then
--   CREATE EXTENSION pg_stat_statements;  (in this database)
-- and a role that may read every user's statements: pg_read_all_stats (or pg_monitor).
-- Read-only. Run it against production:
--   sluice stats workload | psql \"$DATABASE_URL\" --csv > policies/workload.csv
-- and again a while later for rates (policies/workload-2.csv); then in sluice.toml:
--   [queries]
--   workload = [\"policies/workload.csv\", \"policies/workload-2.csv\"]
SELECT s.queryid,
       s.calls,
       s.total_exec_time,
       s.mean_exec_time,
       s.rows,
       now() AS captured_at,
       i.stats_reset,
       i.dealloc,
       current_database() AS database,
       s.query
FROM pg_stat_statements s
CROSS JOIN pg_stat_statements_info i
WHERE s.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
  AND s.toplevel
ORDER BY s.calls DESC;
";

pub mod origin;
mod recorded;

const COMMAND: &str = "sluice stats workload";
const REQUIRED: &[&str] = &["queryid", "calls", "total_exec_time", "mean_exec_time", "rows", "query"];

/// One export of `pg_stat_statements`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// How findings name it (repository-relative, `/`).
    pub file: String,
    pub captured_at: Option<DateTime<FixedOffset>>,
    /// `pg_stat_statements_info.stats_reset`: when its counters started.
    pub stats_reset: Option<DateTime<FixedOffset>>,
    /// Entries evicted at `pg_stat_statements.max` since the reset.
    pub dealloc: Option<u64>,
    pub database: Option<String>,
    pub rows: Vec<Row>,
}

/// One row of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The CSV line the record starts on.
    pub line: usize,
    pub queryid: i64,
    pub calls: u64,
    pub total_exec_time: f64,
    pub mean_exec_time: f64,
    pub rows: u64,
    pub query: String,
}

impl Snapshot {
    /// Reads one export; `path` is what errors name, `file` what findings name.
    pub fn parse(path: &Path, file: String, text: &str) -> Result<Snapshot> {
        let export = Export::parse(path, text, REQUIRED, COMMAND)?;
        let mut rows = Vec::new();
        let mut first: Option<Record> = None;
        for record in export.records() {
            let row = Row {
                line: record.line,
                queryid: record.integer("queryid")?,
                calls: record.count("calls")?,
                total_exec_time: record.float("total_exec_time")?,
                mean_exec_time: record.float("mean_exec_time")?,
                rows: record.count("rows")?,
                query: record.text("query").to_string(),
            };
            first.get_or_insert(record);
            rows.push(row);
        }
        let (captured_at, stats_reset, dealloc, database) = match first {
            None => (None, None, None, None),
            Some(r) => (
                r.timestamp("captured_at")?,
                r.timestamp("stats_reset")?,
                if export.has("dealloc") { Some(r.count("dealloc")?) } else { None },
                Some(r.text("database").to_string()).filter(|d| !d.is_empty()),
            ),
        };
        Ok(Snapshot { file, captured_at, stats_reset, dealloc, database, rows })
    }

    /// The line of the first record: where a property of the whole export is written.
    fn first_line(&self) -> usize {
        self.rows.first().map_or(1, |r| r.line)
    }
}

/// A statement the workload runs, to be checked as any other query.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub fingerprint: String,
    /// What the rules read: the recorded text, the statement inside a PREPARE, parameters cast
    /// where the text says their type.
    pub sql: String,
    pub origin: Origin,
}

/// The pair of snapshots rates come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub first: String,
    pub second: String,
    pub seconds: f64,
    /// Whether `seconds` is the difference of the exports' `captured_at` (else it was given).
    pub measured: bool,
}

impl Interval {
    pub fn describe(&self) -> String {
        let how = if self.measured { "apart" } else { "apart, as given" };
        format!("{} → {} ({} s {how})", self.first, self.second, quantity(self.seconds))
    }
}

/// What the workload source yields.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// Busiest first.
    pub entries: Vec<Entry>,
    /// Statements not checked, by what they are (`BEGIN`, `SET`, `pg_stat_statements`) → entries.
    pub skipped: BTreeMap<String, usize>,
    /// With two snapshots.
    pub interval: Option<Interval>,
    /// Connections busy on average between the two snapshots: Σ calls/s × mean time over every
    /// statement (the skipped ones too: a COMMIT holds its connection as long as it runs).
    pub busy: Option<f64>,
    /// When the newest snapshot was taken.
    pub captured_at: Option<DateTime<FixedOffset>>,
    /// What a reader must know: entries whose rate is unknown, a snapshot past its age.
    pub notes: Vec<String>,
}

/// How the workload is read: the time between the snapshots when they carry no `captured_at`,
/// and when a snapshot is too old to trust.
#[derive(Debug, Clone)]
pub struct Reading {
    pub interval: Option<std::time::Duration>,
    pub now: DateTime<FixedOffset>,
    pub max_age_days: u32,
}

impl Reading {
    /// Now, with no interval given and the age limit `max_age_days`.
    pub fn now(max_age_days: u32) -> Reading {
        Reading { interval: None, now: chrono::Utc::now().fixed_offset(), max_age_days }
    }

    /// The same, with the time between the snapshots given (`--workload-interval`).
    pub fn with_interval(self, interval: Option<std::time::Duration>) -> Reading {
        Reading { interval, ..self }
    }
}

/// `--workload-interval`: `90s`, `5m`, `1h`, or seconds alone.
pub fn parse_interval(text: &str) -> std::result::Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let seconds = match unit.trim() {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * seconds)
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a time between snapshots; write e.g. 90s, 5m or 1h"))
}

/// Reads the snapshots `files` names (each a path to read and the name findings use) through
/// `read` (the disk, or a git revision for `sluice check`).
pub fn load(
    files: &[(std::path::PathBuf, String)],
    read: &dyn Fn(&Path) -> Result<String>,
    reading: &Reading,
) -> Result<Workload> {
    let snapshots = files
        .iter()
        .map(|(path, shown)| Snapshot::parse(Path::new(shown), shown.clone(), &read(path)?))
        .collect::<Result<Vec<_>>>()?;
    Workload::from_snapshots(snapshots, reading)
}

/// Counters of one fingerprint, summed over the rows that share it.
#[derive(Debug, Clone)]
struct Totals {
    calls: u64,
    total_ms: f64,
    /// The row with the most calls: it names the entry.
    busiest: Row,
    prepared: Prepared,
}

fn totals(snapshot: &Snapshot) -> BTreeMap<String, Totals> {
    let mut out: BTreeMap<String, Totals> = BTreeMap::new();
    for row in &snapshot.rows {
        let prepared = prepare(&row.query);
        let key = fingerprint(&prepared.sql);
        match out.get_mut(&key) {
            Some(t) => {
                t.calls += row.calls;
                t.total_ms += row.total_exec_time;
                if row.calls > t.busiest.calls {
                    t.busiest = row.clone();
                    t.prepared = prepared;
                }
            }
            None => {
                out.insert(
                    key,
                    Totals { calls: row.calls, total_ms: row.total_exec_time, busiest: row.clone(), prepared },
                );
            }
        }
    }
    out
}

impl Workload {
    /// The workload of one or two snapshots.
    pub fn from_snapshots(mut snapshots: Vec<Snapshot>, reading: &Reading) -> Result<Workload> {
        let mut workload = Workload::default();
        for s in &snapshots {
            if let Some(at) = s.captured_at {
                let days = (reading.now - at).num_days();
                if days > i64::from(reading.max_age_days) {
                    workload.notes.push(format!(
                        "workload snapshot {} was taken {days} days ago (on {}), more than {} days: production may \
                         run other queries now; export it again with `{COMMAND}`",
                        s.file,
                        at.format("%Y-%m-%d"),
                        reading.max_age_days
                    ));
                }
            }
        }
        match snapshots.len() {
            0 => return Ok(workload),
            1 => {
                let snapshot = snapshots.pop().expect("one");
                workload.captured_at = snapshot.captured_at;
                for (key, t) in totals(&snapshot) {
                    let mean_ms = if t.calls > 0 { t.total_ms / t.calls as f64 } else { t.busiest.mean_exec_time };
                    let calls = t.calls;
                    workload.add(key, t, &snapshot.file, calls, mean_ms, None);
                }
            }
            2 => {
                let (first, second) = ordered(snapshots)?;
                let seconds = match (first.captured_at, second.captured_at, reading.interval) {
                    (_, _, Some(given)) => given.as_secs_f64(),
                    (Some(a), Some(b), None) => (b - a).num_milliseconds() as f64 / 1000.0,
                    _ => return Err(Error::invalid(
                        Path::new(&second.file),
                        Some(1),
                        "the snapshots have no captured_at column, so the time between them is unknown; export them \
                             with `sluice stats workload` or give it with --workload-interval",
                    )),
                };
                if seconds <= 0.0 {
                    return Err(Error::invalid(
                        Path::new(&second.file),
                        Some(second.first_line()),
                        format!("taken at the same time as {}: a rate needs two snapshots some time apart", first.file),
                    ));
                }
                let before = totals(&first);
                let mut busy_ms = 0.0;
                let mut evicted = 0usize;
                for (key, t) in totals(&second) {
                    let (calls, total_ms) = match before.get(&key) {
                        None => (t.calls, t.total_ms),
                        Some(b) if b.calls <= t.calls => (t.calls - b.calls, (t.total_ms - b.total_ms).max(0.0)),
                        Some(_) => {
                            // Fewer calls than before without a reset: evicted at
                            // pg_stat_statements.max and recorded again since.
                            evicted += 1;
                            let (calls, mean) = (t.calls, t.total_ms / t.calls.max(1) as f64);
                            workload.add(key, t, &second.file, calls, mean, None);
                            continue;
                        }
                    };
                    busy_ms += total_ms;
                    let mean_ms = if calls > 0 { total_ms / calls as f64 } else { t.busiest.mean_exec_time };
                    workload.add(key, t, &second.file, calls, mean_ms, Some(calls as f64 / seconds));
                }
                if evicted > 0 {
                    workload.notes.push(format!(
                        "{evicted} workload entr{} of {} had fewer calls than in {}: evicted at pg_stat_statements.max \
                         and recorded again in between, so {} rate is unknown and the pool's load is counted without \
                         {}; raise pg_stat_statements.max",
                        if evicted == 1 { "y" } else { "ies" },
                        second.file,
                        first.file,
                        if evicted == 1 { "its" } else { "their" },
                        if evicted == 1 { "it" } else { "them" },
                    ));
                }
                workload.busy = Some(busy_ms / 1000.0 / seconds);
                workload.captured_at = second.captured_at;
                workload.interval = Some(Interval {
                    first: first.file.clone(),
                    second: second.file.clone(),
                    seconds,
                    measured: reading.interval.is_none(),
                });
            }
            n => {
                return Err(Error::Other(format!(
                    "[queries] workload names {n} snapshots: give one, or two taken some time apart for rates"
                )))
            }
        }
        workload.entries.sort_by(|a, b| {
            b.origin.weight().total_cmp(&a.origin.weight()).then_with(|| a.origin.line.cmp(&b.origin.line))
        });
        Ok(workload)
    }

    /// The entries as queries for the rules, busiest first.
    pub fn queries(&self) -> Vec<super::Query> {
        self.entries
            .iter()
            .map(|e| super::Query {
                file: e.origin.file.clone(),
                sql: e.sql.as_str().into(),
                source: super::Source::Workload(Box::new(e.origin.clone())),
                place: super::Place::Record { line: e.origin.line },
            })
            .collect()
    }

    fn add(&mut self, key: String, t: Totals, file: &str, calls: u64, mean_ms: f64, per_second: Option<f64>) {
        if let Some(what) = t.prepared.skipped {
            *self.skipped.entry(what).or_default() += 1;
            return;
        }
        let origin = Origin {
            file: file.to_string(),
            line: t.busiest.line,
            queryid: t.busiest.queryid,
            calls,
            mean_ms,
            per_second,
        };
        self.entries.push(Entry { fingerprint: key, sql: t.prepared.sql, origin });
    }

    /// What the run read, for the report's notes: `Workload: 12 entries from policies/w.csv
    /// (rates from a.csv → b.csv (20 s apart)); 4 not checked (…)`, then the source's notes.
    pub fn report_notes(&self, files: &[String]) -> Vec<String> {
        let mut first = format!("Workload: {} entries from {}", self.entries.len(), files.join(", "));
        match &self.interval {
            Some(interval) => first.push_str(&format!(" (rates from {})", interval.describe())),
            None => first.push_str(" (one snapshot: calls since the statistics reset, no rates)"),
        }
        if let Some(skipped) = self.describe_skipped() {
            first.push_str(&format!("; {skipped}"));
        }
        first.push('.');
        std::iter::once(first).chain(self.notes.iter().cloned()).collect()
    }

    /// `skipped 14 entries: BEGIN ×4, COMMIT ×4, SET ×6`, or nothing.
    pub fn describe_skipped(&self) -> Option<String> {
        if self.skipped.is_empty() {
            return None;
        }
        let total: usize = self.skipped.values().sum();
        let parts: Vec<String> = self.skipped.iter().map(|(what, n)| format!("{what} ×{n}")).collect();
        Some(format!("{total} not checked (utility and transaction control): {}", parts.join(", ")))
    }
}

/// The two snapshots, older first, after checking they are one series: one database, one
/// reset of the statistics.
fn ordered(mut snapshots: Vec<Snapshot>) -> Result<(Snapshot, Snapshot)> {
    let second = snapshots.pop().expect("two");
    let first = snapshots.pop().expect("two");
    let (first, second) = match (first.captured_at, second.captured_at) {
        (Some(a), Some(b)) if b < a => (second, first),
        _ => (first, second),
    };
    let refuse = |problem: String| Err(Error::invalid(Path::new(&second.file), Some(second.first_line()), problem));
    if first.database != second.database {
        return refuse(format!(
            "exported from database {} but {} from {}: the snapshots of one workload come from one database",
            second.database.as_deref().unwrap_or("(not named)"),
            first.file,
            first.database.as_deref().unwrap_or("(not named)")
        ));
    }
    if first.stats_reset != second.stats_reset {
        let at = |t: Option<DateTime<FixedOffset>>| t.map_or("(not exported)".to_string(), |t| t.to_rfc3339());
        return refuse(format!(
            "stats_reset {} differs from {} in {}: the statistics were reset between the snapshots, or they come \
             from different servers; take both from one server with no reset between them",
            at(second.stats_reset),
            at(first.stats_reset),
            first.file
        ));
    }
    Ok((first, second))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading() -> Reading {
        Reading { interval: None, now: DateTime::parse_from_rfc3339("2026-12-03T18:00:00Z").unwrap(), max_age_days: 30 }
    }

    const HEADER: &str =
        "queryid,calls,total_exec_time,mean_exec_time,rows,captured_at,stats_reset,dealloc,database,query\n";

    fn snapshot(file: &str, at: &str, rows: &[&str]) -> Snapshot {
        let text = format!("{HEADER}{}\n", rows.iter().map(|r| r.replace("AT", at)).collect::<Vec<_>>().join("\n"));
        Snapshot::parse(Path::new(file), file.to_string(), &text).unwrap_or_else(|e| panic!("{e}"))
    }

    const RESET: &str = "2026-12-01 00:00:00+00";

    #[test]
    fn entries_are_keyed_by_fingerprint_and_counted_together() {
        let s = snapshot(
            "w.csv",
            "2026-12-03 17:00:00+00",
            &[
                "1,300,600,2,300,AT,2026-12-01 00:00:00+00,0,app,\"select * from t where id in ($1,$2)\"",
                "2,100,100,1,100,AT,2026-12-01 00:00:00+00,0,app,\"/* x */ select * from t where id in ($1,$2,$3)\"",
                "3,50,1,0.02,0,AT,2026-12-01 00:00:00+00,0,app,begin",
                "4,50,1,0.02,0,AT,2026-12-01 00:00:00+00,0,app,commit",
            ],
        );
        let w = Workload::from_snapshots(vec![s], &reading()).unwrap();
        assert_eq!(w.entries.len(), 1);
        let e = &w.entries[0];
        assert_eq!((e.origin.line, e.origin.queryid, e.origin.calls, e.origin.mean_ms), (2, 1, 400, 1.75));
        assert_eq!(e.origin.per_second, None);
        assert_eq!(e.origin.describe(), "workload entry at w.csv:2 (queryid 1, 400 calls, 1.75 ms)");
        assert_eq!(
            w.describe_skipped().unwrap(),
            "2 not checked (utility and transaction control): BEGIN ×1, COMMIT ×1"
        );
        assert_eq!(w.busy, None, "one snapshot gives no rate");
    }

    #[test]
    fn two_snapshots_give_rates_and_the_mean_between_them() {
        let row = |calls: u64, total: f64| {
            format!("7,{calls},{total},{},1,AT,{RESET},0,app,select * from t where a = $1", total / calls as f64)
        };
        let a = snapshot(
            "a.csv",
            "2026-12-03 17:00:00+00",
            &[&row(1000, 1000.0), "8,10,5,0.5,0,AT,2026-12-01 00:00:00+00,0,app,commit"],
        );
        let b = snapshot(
            "b.csv",
            "2026-12-03 17:00:20+00",
            &[&row(3000, 9000.0), "8,30,15,0.5,0,AT,2026-12-01 00:00:00+00,0,app,commit"],
        );
        // Given newer first: ordered by captured_at.
        let w = Workload::from_snapshots(vec![b, a], &reading()).unwrap();
        let e = &w.entries[0];
        assert_eq!(e.origin.per_second, Some(100.0));
        assert_eq!(e.origin.mean_ms, 4.0, "8000 ms over 2000 calls");
        assert_eq!(e.origin.describe(), "workload entry at b.csv:2 (queryid 7, 100 calls/s, 4 ms)");
        // 8000 ms + 10 ms of COMMIT over 20 s.
        assert!((w.busy.unwrap() - 0.4005).abs() < 1e-9);
        assert_eq!(w.interval.as_ref().unwrap().describe(), "a.csv → b.csv (20 s apart)");
    }

    #[test]
    fn a_pair_with_a_reset_between_or_from_another_database_is_refused() {
        let a = snapshot("a.csv", "2026-12-03 17:00:00+00", &["1,1,1,1,1,AT,2026-12-01 00:00:00+00,0,app,select 1"]);
        let b = snapshot("b.csv", "2026-12-03 17:01:00+00", &["1,1,1,1,1,AT,2026-12-03 17:00:30+00,0,app,select 1"]);
        let e = Workload::from_snapshots(vec![a.clone(), b], &reading()).unwrap_err().to_string();
        assert!(e.starts_with("b.csv:2: stats_reset 2026-12-03T17:00:30+00:00 differs from 2026-12-01T00:00:00+00:00 in a.csv: the statistics were reset"), "{e}");
        let c = snapshot("c.csv", "2026-12-03 17:01:00+00", &["1,1,1,1,1,AT,2026-12-01 00:00:00+00,0,other,select 1"]);
        let e = Workload::from_snapshots(vec![a.clone(), c], &reading()).unwrap_err().to_string();
        assert!(e.starts_with("c.csv:2: exported from database other but a.csv from app"), "{e}");
        let same = snapshot("d.csv", "2026-12-03 17:00:00+00", &["1,1,1,1,1,AT,2026-12-01 00:00:00+00,0,app,select 1"]);
        let e = Workload::from_snapshots(vec![a, same], &reading()).unwrap_err().to_string();
        assert!(e.contains("taken at the same time as a.csv"), "{e}");
    }

    #[test]
    fn bad_counters_name_the_line() {
        let text = format!("{HEADER}1,12,1,1,1,,,,app,select 1\n2,many,1,1,1,,,,app,\"select\n2\"\n");
        let e = Snapshot::parse(Path::new("w.csv"), "w.csv".into(), &text).unwrap_err().to_string();
        assert_eq!(e, "w.csv:3: calls `many` is not a count (a whole number, not negative)");
        let e = Snapshot::parse(Path::new("w.csv"), "w.csv".into(), "queryid,calls,query\n1,2,select 1\n").unwrap_err();
        assert!(
            e.to_string().starts_with("w.csv:1: the header lacks the columns total_exec_time, mean_exec_time, rows"),
            "{e}"
        );
    }

    #[test]
    fn an_old_snapshot_is_a_note() {
        let s = snapshot("w.csv", "2026-10-01 00:00:00+00", &["1,1,1,1,1,AT,2026-09-01 00:00:00+00,0,app,select 1"]);
        let w = Workload::from_snapshots(vec![s], &reading()).unwrap();
        assert_eq!(w.notes.len(), 1);
        assert!(
            w.notes[0].starts_with("workload snapshot w.csv was taken 63 days ago (on 2026-10-01), more than 30 days"),
            "{}",
            w.notes[0]
        );
    }

    #[test]
    fn an_interval_given_replaces_missing_timestamps() {
        assert_eq!(parse_interval("90s").unwrap().as_secs(), 90);
        assert_eq!(parse_interval("5m").unwrap().as_secs(), 300);
        assert_eq!(parse_interval("20").unwrap().as_secs(), 20);
        assert!(parse_interval("soon").is_err() && parse_interval("0s").is_err());
        let no_time = "queryid,calls,total_exec_time,mean_exec_time,rows,query\n";
        let a =
            Snapshot::parse(Path::new("a.csv"), "a.csv".into(), &format!("{no_time}1,100,100,1,1,select 1\n")).unwrap();
        let b =
            Snapshot::parse(Path::new("b.csv"), "b.csv".into(), &format!("{no_time}1,300,300,1,1,select 1\n")).unwrap();
        let e = Workload::from_snapshots(vec![a.clone(), b.clone()], &reading()).unwrap_err().to_string();
        assert!(e.starts_with("b.csv:1: the snapshots have no captured_at column"), "{e}");
        let given = reading().with_interval(Some(std::time::Duration::from_secs(20)));
        let w = Workload::from_snapshots(vec![a, b], &given).unwrap();
        assert_eq!(w.entries[0].origin.per_second, Some(10.0));
        assert_eq!(w.interval.unwrap().describe(), "a.csv → b.csv (20 s apart, as given)");
    }

    #[test]
    fn quantities_read_at_a_glance() {
        let shown: Vec<String> =
            [2600.0, 26_000.0, 310.0, 12.5, 0.02, 0.0, 1.0, 4_200_000.0].iter().map(|v| quantity(*v)).collect();
        assert_eq!(shown, ["2.6 k", "26 k", "310", "12.5", "0.02", "0", "1", "4.2 M"]);
    }
}

//! `sluice plan`: asks PostgreSQL itself. Builds a production-scale fixture from the base
//! migrations and a scale spec, applies the head's migrations to a copy, plans every query on
//! both sides and reports plans that got worse, plus the connection-pool load they imply.
//!
//! The rest of Sluice is synchronous; this module runs its own current-thread tokio runtime.

pub mod capacity;
mod cleanup;
pub mod diff;
pub mod explain;
pub mod fill;
pub mod fixture;
mod install;
pub mod pairing;
mod pool;
pub mod postmaster;
pub mod scale;
pub mod server;
pub mod snapshot;
pub mod sources;
pub mod target;
pub mod tls;

use crate::error::{Error, Result};
use crate::finding::{Finding, Report, Severity};
use crate::rules::{index_inefficient, plan_cost_increase, plan_expensive, plan_regression, plan_unavailable};
use capacity::Workload;
use diff::{HeadFacts, Thresholds};
use explain::{finding_at, Measured, Query, Side};
pub use fixture::MigrationSql;
pub use scale::ScaleSpec;
use serde_json::{json, Value};
pub use server::ServerOptions;
pub use sources::QuerySource;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// Everything one comparison needs; `sluice plan` and `sluice check` both build one.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Query files are reported relative to this directory.
    pub root: PathBuf,
    /// Base migrations, in the order they run.
    pub base: Vec<MigrationSql>,
    /// Head migrations, in the order they run (usually the base's plus new ones).
    pub head: Vec<MigrationSql>,
    /// Queries to plan: the head's text on head, the base's on base ([`pairing`]).
    pub queries: Vec<QuerySource>,
    pub spec: ScaleSpec,
    /// Production's statistics: the tables and columns the spec does not name follow them.
    pub stats: Option<snapshot::Snapshot>,
    pub mode: fixture::Mode,
    pub thresholds: Thresholds,
    /// Also run the queries (EXPLAIN ANALYZE) with sample parameters.
    pub analyze: bool,
    /// Runs per query and side under `analyze`; the median is reported.
    pub repeat: usize,
    /// Pool size and peak rates, for `pool-capacity` (needs `analyze`).
    pub workload: Option<Workload>,
    /// Production's workload (`[queries] workload`): with two snapshots, the rates and mean
    /// times `pool-capacity` weighs when `workload` gives no `[[queries]]`, as lint and check do.
    pub production: Option<crate::queries::workload::Workload>,
    pub server: ServerOptions,
    /// Keep the databases this run created (and, with `--database-url`, the fixture template).
    pub keep: bool,
    /// Limit for each planning/analysing statement; a query that takes longer becomes a finding.
    pub statement_timeout: Duration,
    /// Limit for each statement of the fixture build.
    pub build_timeout: Duration,
}

impl PlanOptions {
    pub fn new(
        root: PathBuf,
        base: Vec<MigrationSql>,
        head: Vec<MigrationSql>,
        queries: Vec<QuerySource>,
        spec: ScaleSpec,
    ) -> Self {
        PlanOptions {
            root,
            base,
            head,
            queries,
            spec,
            stats: None,
            mode: fixture::Mode::Generated,
            thresholds: Thresholds::default(),
            analyze: false,
            repeat: 5,
            workload: None,
            production: None,
            server: ServerOptions::default(),
            keep: false,
            statement_timeout: Duration::from_secs(30),
            build_timeout: Duration::from_secs(1800),
        }
    }

    /// What the fixture is built from; `--analyze` runs queries, so it needs generated rows.
    pub fn inputs(&self) -> fixture::Inputs<'_> {
        let mode = if self.analyze { fixture::Mode::Generated } else { self.mode };
        fixture::Inputs { spec: &self.spec, snapshot: self.stats.as_ref(), mode }
    }

    /// Applies `[plan]` from sluice.toml.
    pub fn with_config(mut self, config: &crate::config::PlanConfig) -> Self {
        if let Some(n) = config.seq_scan_rows {
            self.thresholds.seq_scan_rows = n;
        }
        if let Some(r) = config.cost_ratio_error {
            self.thresholds.cost_ratio_error = r;
        }
        if let Some(r) = config.cost_ratio_warning {
            self.thresholds.cost_ratio_warning = r;
        }
        if let Some(c) = config.cost_floor {
            self.thresholds.cost_floor = c;
        }
        if let Some(c) = config.cost_limit {
            self.thresholds.cost_limit = c;
        }
        self
    }
}

/// Builds the fixture, plans every query on base and head, and reports what got worse.
pub fn compare(options: &PlanOptions) -> Result<Report> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let started = Instant::now();
        let started_server = server::Server::start(&options.server).await;
        if started_server.is_err() {
            cleanup::yield_to_signal_handler();
        }
        let mut server = started_server?;
        let cleaned = std::mem::take(&mut server.notes);
        let result = run(&mut server, options).await;
        let location = server.location.clone();
        let kept = server.shutdown(options.keep).await;
        cleanup::yield_to_signal_handler();
        let mut report = result?;
        let kept = kept?;
        report.notes.extend(cleaned);
        if !kept.is_empty() {
            report.notes.push(format!("kept databases on {location}: {}", kept.join(", ")));
        }
        report.notes.push(format!("took {:.1} s", started.elapsed().as_secs_f64()));
        report.sort();
        Ok(report)
    })
}

/// Plans each query given (`None`: nothing to plan on this side) on the database `client` is on.
async fn plan_side(client: &Client, queries: &[Option<&Query>], options: &PlanOptions, version: u32) -> Result<Side> {
    explain::prepare_session(client, options.statement_timeout).await?;
    let mut side = Side { plans: Vec::new(), measured: Vec::new() };
    for query in queries {
        let Some(query) = query else {
            side.plans.push(None);
            side.measured.push(None);
            continue;
        };
        let plan = explain::generic_plan(client, query, version, options.statement_timeout).await;
        let measured = if options.analyze && plan.is_ok() {
            let params = explain::sample_params(client, query, &options.spec).await;
            Some(explain::analyze(client, query, &params, options.repeat, options.statement_timeout).await)
        } else {
            None
        };
        side.plans.push(Some(plan));
        side.measured.push(measured);
    }
    Ok(side)
}

async fn head_facts(client: &Client, base: Option<&Value>, head: &Value) -> HeadFacts {
    let mut facts = HeadFacts::default();
    let mut relations = diff::relations(head);
    if let Some(base) = base {
        relations.extend(diff::relations(base));
        for index in diff::used_indexes(base) {
            let exists = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&server::quote_ident(&index)])
                .await
                .map(|r| r.get::<_, bool>(0))
                .unwrap_or(true);
            if !exists {
                facts.missing_indexes.insert(index);
            }
        }
    }
    for relation in relations {
        let rows = client
            .query_one(
                "SELECT greatest(c.reltuples, 0)::float8 FROM pg_class c WHERE c.oid = to_regclass($1)",
                &[&server::quote_ident(&relation)],
            )
            .await
            .map(|r| r.get::<_, f64>(0))
            .unwrap_or(0.0);
        facts.relation_rows.insert(relation, rows);
    }
    facts
}

/// The comparison's stages: the base fixture, the queries, their plans on base, the head's
/// database and their plans there, one finding per query that got worse, the pool's load.
async fn run(server: &mut server::Server, options: &PlanOptions) -> Result<Report> {
    let mut report = Report::default();
    let cache = (server.is_ephemeral() && !options.server.no_cache) || options.keep;
    let base_template = base_fixture(server, options, cache, &mut report.notes).await?;
    let queries = Queries::parse(options)?;
    let base = {
        let client = server.connect(&base_template).await?;
        report.notes.extend(fill::not_all_visible(&client).await?.into_iter().map(|n| format!("base fixture: {n}")));
        plan_side(&client, &queries.on_base(), options, server.version_num).await?
    };
    let head_db = head_database(server, options, &base_template, cache, &mut report.notes).await?;
    let client = server.connect(&head_db).await?;
    if head_db != base_template {
        report.notes.extend(fill::not_all_visible(&client).await?.into_iter().map(|n| format!("head fixture: {n}")));
    }
    let on_head: Vec<Option<&Query>> = queries.list.iter().map(Some).collect();
    let head = plan_side(&client, &on_head, options, server.version_num).await?;
    report.findings.extend(
        compare_sides(&client, &queries.list, &base, &head, server.version_num, options, &mut report.notes).await,
    );
    report.findings.extend(pool_findings(options, &queries.list, &base, &head, &mut report.notes)?);
    Ok(report)
}

/// The fixture the base migrations build at the scale spec's size (reused from the cache when
/// it has it); its template database's name.
async fn base_fixture(
    server: &mut server::Server,
    options: &PlanOptions,
    cache: bool,
    notes: &mut Vec<String>,
) -> Result<String> {
    let template = fixture::template(server, &options.base, options.inputs(), cache, options.build_timeout).await?;
    notes.push(if template.cached {
        format!("fixture: reused cached {} on {}", template.name, server.location)
    } else {
        format!("fixture: built {} in {:.1} s on {}", template.name, template.build_seconds, server.location)
    });
    Ok(template.name)
}

/// The statements of every query source, each with what the base side runs in its place.
struct Queries {
    list: Vec<Query>,
}

impl Queries {
    fn parse(options: &PlanOptions) -> Result<Queries> {
        let mut list = Vec::new();
        for source in &options.queries {
            list.extend(pairing::queries_of(source)?);
        }
        Ok(Queries { list })
    }

    /// What to plan on the base fixture for each statement: itself, its base text, or nothing.
    fn on_base(&self) -> Vec<Option<&Query>> {
        self.list
            .iter()
            .map(|q| match &q.on_base {
                pairing::OnBase::Same => Some(q),
                pairing::OnBase::Changed(base) => Some(&**base),
                pairing::OnBase::New => None,
            })
            .collect()
    }
}

/// One finding per query whose plan got worse on head (or that does not plan there).
async fn compare_sides(
    client: &Client,
    queries: &[Query],
    base: &Side,
    head: &Side,
    version: u32,
    options: &PlanOptions,
    notes: &mut Vec<String>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut planned = 0;
    for (i, query) in queries.iter().enumerate() {
        let base_plan = base.plans[i].clone();
        let Some(head_plan) = head.plans[i].clone() else {
            continue;
        };
        planned += 1;
        findings.extend(
            findings_for(client, query, base_plan, head_plan, &base.measured[i], &head.measured[i], options).await,
        );
    }
    let changed = queries.iter().filter(|q| matches!(q.on_base, pairing::OnBase::Changed(_))).count();
    let new = queries.iter().filter(|q| matches!(q.on_base, pairing::OnBase::New)).count();
    notes.push(format!(
        "{planned} queries planned on base and head{} ({} generic plans{})",
        match (changed, new) {
            (0, 0) => String::new(),
            _ => format!(" ({changed} changed: the base text planned on base; {new} new: planned on head only)"),
        },
        if version >= 160000 { "EXPLAIN (GENERIC_PLAN)" } else { "PREPARE + force_generic_plan" },
        if options.analyze { format!(", EXPLAIN ANALYZE median of {}", options.repeat) } else { String::new() }
    ));
    findings
}

/// `pool-capacity` when a workload is given ([`pool`]).
fn pool_findings(
    options: &PlanOptions,
    queries: &[Query],
    base: &Side,
    head: &Side,
    notes: &mut Vec<String>,
) -> Result<Vec<Finding>> {
    let Some(workload) = &options.workload else {
        return Ok(Vec::new());
    };
    let (findings, more) = pool::check(workload, &options.root, queries, base, head, options.production.as_ref())?;
    notes.extend(more);
    Ok(findings)
}

/// The database to plan the head on: the base fixture itself when the head adds no migration, a
/// copy of it with the new migrations applied when the head only adds migrations, else a
/// fixture built from the head's own history.
async fn head_database(
    server: &mut server::Server,
    options: &PlanOptions,
    base_template: &str,
    cache: bool,
    notes: &mut Vec<String>,
) -> Result<String> {
    let same = |a: &MigrationSql, b: &MigrationSql| a.name == b.name && a.sql == b.sql;
    let is_prefix =
        options.head.len() >= options.base.len() && options.base.iter().zip(&options.head).all(|(b, h)| same(b, h));
    if !is_prefix {
        let t = fixture::template(server, &options.head, options.inputs(), cache, options.build_timeout).await?;
        notes.push("head: its migrations differ from the base's before the new ones; built its own fixture".into());
        return Ok(t.name);
    }
    let new = &options.head[options.base.len()..];
    if new.is_empty() {
        notes.push("head: no new migration; planned on the base fixture".into());
        return Ok(base_template.to_string());
    }
    let name = format!("sluice_head_{}_{}", std::process::id(), chrono::Utc::now().timestamp_millis());
    server.create_database(&name, Some(base_template)).await?;
    let client = server.connect(&name).await?;
    client
        .batch_execute(&format!("SET statement_timeout = {}", options.build_timeout.as_millis()))
        .await
        .map_err(|e| Error::Other(server::pg_message(&e)))?;
    fixture::apply_migrations(&client, new).await?;
    match (options.inputs().mode, &options.stats, server.data_dir()) {
        (fixture::Mode::Statistics, Some(snapshot), Some(data)) => install::figures(&client, &data, snapshot).await?,
        _ => fixture::vacuum_tables(&client, &fixture::touched_tables(new)).await?,
    }
    notes.push(format!("head: {} new migration(s) applied to a copy of the base fixture", new.len()));
    Ok(name)
}

fn evidence(base: Option<&Value>, head: &Value, base_m: Option<&Measured>, head_m: Option<&Measured>) -> Value {
    json!({
        "base_plan": base,
        "head_plan": head,
        "base_cost": base.map(diff::total_cost),
        "head_cost": diff::total_cost(head),
        "base_analyze": base_m.map(|m| json!({"plan": m.plan, "median_ms": m.median_ms, "runs_ms": m.runs_ms, "params": m.params})),
        "head_analyze": head_m.map(|m| json!({"plan": m.plan, "median_ms": m.median_ms, "runs_ms": m.runs_ms, "params": m.params})),
    })
}

/// What one query's comparison found, most severe group first; the query gets one finding.
struct Candidate {
    rule: &'static str,
    severity: Severity,
    sentences: Vec<String>,
    fix: &'static str,
}

/// The most severe candidate with something to say, and every other sentence, to mention.
fn most_severe(candidates: Vec<Candidate>) -> Option<(Candidate, Vec<String>)> {
    let mut candidates: Vec<Candidate> = candidates.into_iter().filter(|c| !c.sentences.is_empty()).collect();
    // Stable: among equal severities, the order given (regression before unavailable) decides.
    candidates.sort_by_key(|c| std::cmp::Reverse(c.severity));
    let mut iter = candidates.into_iter();
    let chosen = iter.next()?;
    let also = iter.flat_map(|c| c.sentences.into_iter().map(move |s| format!("{s} ({})", c.rule))).collect();
    Some((chosen, also))
}

async fn findings_for(
    client: &Client,
    query: &Query,
    base_plan: Option<std::result::Result<Value, String>>,
    head_plan: std::result::Result<Value, String>,
    base_m: &Option<std::result::Result<Measured, String>>,
    head_m: &Option<std::result::Result<Measured, String>>,
    options: &PlanOptions,
) -> Option<Finding> {
    let head_plan = match head_plan {
        Ok(p) => p,
        Err(reason) => {
            let message = match &base_plan {
                Some(Ok(_)) => format!("the query planned on base but does not plan on head: {reason}"),
                _ => format!("the query cannot be planned: {reason}"),
            };
            return Some(finding_at(plan_unavailable::META.id, Severity::Error, query, message).help(
                "fix the query or the migration so PostgreSQL can plan it; the gate cannot judge what it cannot plan",
            ));
        }
    };
    let base_ok = match &base_plan {
        Some(Ok(p)) => Some(p),
        _ => None,
    };
    let (bm, hm) = (base_m.as_ref().and_then(|r| r.as_ref().ok()), head_m.as_ref().and_then(|r| r.as_ref().ok()));
    let facts = head_facts(client, base_ok, &head_plan).await;
    // Under --analyze, the measured plans carry the actual rows that show inefficient indexes.
    let analyzed_head = hm.map(|m| &m.plan);
    let analyzed_base = bm.map(|m| &m.plan);
    let mut verdict = match base_ok {
        Some(base) => diff::compare(base, &head_plan, &facts, &options.thresholds),
        None => diff::absolute(&head_plan, &facts, &options.thresholds),
    };
    if let (Some(b), Some(h)) = (analyzed_base, analyzed_head) {
        let measured = diff::compare(b, h, &facts, &options.thresholds);
        for spill in measured.cost_increases.into_iter().filter(|s| s.contains("spills to disk")) {
            verdict.cost_increases.push(spill);
        }
    }
    verdict.inefficient = analyzed_head.map(diff::inefficient_scans).unwrap_or_default();
    let analyze_failure = match head_m {
        Some(Err(reason)) => vec![format!("EXPLAIN ANALYZE failed on head: {reason}")],
        _ => Vec::new(),
    };
    let (chosen, also) = most_severe(vec![
        Candidate {
            rule: plan_regression::META.id,
            severity: Severity::Error,
            sentences: verdict.regressions,
            fix: "restore the index the query needs, or change the query so the head schema serves it",
        },
        Candidate {
            rule: plan_expensive::META.id,
            severity: Severity::Error,
            sentences: verdict.expensive,
            fix: "add the index the query needs in the same change, or bound what it reads",
        },
        Candidate {
            rule: plan_unavailable::META.id,
            severity: Severity::Error,
            sentences: analyze_failure,
            fix: "a query that times out at production scale would time out in production; see the statement timeout",
        },
        Candidate {
            rule: plan_cost_increase::META.id,
            severity: Severity::Warning,
            sentences: verdict.cost_increases,
            fix: "check that the new plan is intended",
        },
        Candidate {
            rule: index_inefficient::META.id,
            severity: Severity::Warning,
            sentences: verdict.inefficient,
            fix:
                "make the predicate match the index columns (no function on an indexed column), or index the expression",
        },
    ])?;
    let tree = match base_ok {
        Some(base) => diff::render_diff(base, &head_plan),
        None => format!("head plan (no base plan: {}):\n{}", new_reason(&base_plan), diff::render_tree(&head_plan)),
    };
    let timing = match (bm, hm) {
        (Some(b), Some(h)) => format!(" (median {:.2} ms on base, {:.2} ms on head)", b.median_ms, h.median_ms),
        (None, Some(h)) => format!(" (median {:.2} ms on head)", h.median_ms),
        _ => String::new(),
    };
    let also_text = if also.is_empty() { String::new() } else { format!("\nalso on this query: {}", also.join("; ")) };
    let changed = match &query.on_base {
        pairing::OnBase::Changed(base) => format!(
            "\nthe query changed: its base text (line {} on base) was planned on base, its head text on head",
            base.line
        ),
        _ => String::new(),
    };
    let mut f = finding_at(chosen.rule, chosen.severity, query, format!("{}{timing}", chosen.sentences.join("; ")))
        .help(format!("{}{also_text}{changed}\n{tree}", chosen.fix))
        .evidence(evidence(base_ok, &head_plan, bm, hm))
        .fact("base cost", format!("{:.2}", verdict.base_cost))
        .fact("head cost", format!("{:.2}", verdict.head_cost));
    for (relation, rows) in &facts.relation_rows {
        f = f.fact(format!("rows in {relation}"), diff::format_count(*rows));
    }
    for sentence in also {
        f = f.fact("also", sentence);
    }
    if let pairing::OnBase::Changed(base) = &query.on_base {
        f = f.fact("base text", base.text.clone());
    }
    Some(f)
}

fn new_reason(base: &Option<std::result::Result<Value, String>>) -> String {
    match base {
        None => "new query".into(),
        Some(Err(e)) => format!("it does not plan on base: {e}"),
        Some(Ok(_)) => String::new(),
    }
}

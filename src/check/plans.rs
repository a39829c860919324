//! The plan-comparison part of `sluice check`: when `[plan] scale` names a scale spec, build
//! the fixture from the base side's migrations, apply the head side's, and report the queries
//! whose plans got worse. Fails closed: when `[plan] required = true` and no PostgreSQL can be
//! had, that is an error, not a pass.

use super::gate::Gate;
use super::options::PlanRun;
use super::revisions::Revisions;
use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::lint;
use crate::plan::{self, server, sources, PlanOptions};
use std::collections::BTreeSet;

/// The plan comparison's findings (with the trusted `[rules]` levels applied) and notes.
pub(super) struct PlanReview {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// Compares the plans when `[plan] scale` asks for it; `changed` says whether any migration or
/// query file changed. `existing` lists the base schema's tables, for the trusted scale spec's
/// entries for new tables (asked only when the comparison runs).
pub(super) fn compare(
    revisions: &Revisions,
    gate: &Gate,
    run: &PlanRun,
    changed: bool,
    existing: &dyn Fn() -> Result<BTreeSet<String>>,
) -> Result<PlanReview> {
    let (findings, notes) = compare_plans(revisions, gate, run, changed, existing)?;
    Ok(PlanReview { findings: lint::apply_levels(findings, &gate.loaded().config.rules), notes })
}

fn compare_plans(
    revisions: &Revisions,
    gate: &Gate,
    run: &PlanRun,
    changed: bool,
    existing: &dyn Fn() -> Result<BTreeSet<String>>,
) -> Result<(Vec<Finding>, Vec<String>)> {
    let loaded = gate.loaded();
    let config = &loaded.config.plan;
    if config.scale.is_none() {
        return Ok((Vec::new(), Vec::new()));
    }
    let required = config.required.unwrap_or(false);
    if run.skip {
        return Ok((
            Vec::new(),
            vec![format!(
                "Plans not compared: --no-plan{}; run `sluice plan` to compare them.",
                if required { " (even though [plan] required = true)" } else { "" }
            )],
        ));
    }
    if !changed {
        return Ok((Vec::new(), vec!["Plans not compared: no migration or query file changed.".into()]));
    }
    let database_url = run.database_url.clone().filter(|u| !u.is_empty());
    let mut notes: Vec<String> =
        (database_url.is_none() && run.ignored_database_url).then(ignored_database_url_note).into_iter().collect();
    if database_url.is_none() {
        if let Err(e) = server::find_bindir() {
            let config_file =
                loaded.file.as_deref().map(|f| f.display().to_string()).unwrap_or_else(|| "sluice.toml".into());
            if required {
                return Err(Error::Other(format!(
                    "plans must be compared ([plan] required = true in {config_file}) but no PostgreSQL is available: {e}"
                )));
            }
            notes.push(format!(
                "Plans not compared: [plan] scale is set but no PostgreSQL is available ({e}). Set [plan] required \
                 = true to make this an error."
            ));
            return Ok((Vec::new(), notes));
        }
    }

    let Some(spec) = gate.scale_spec(existing)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let repo = &revisions.repo;
    let sides = sources::from_git(repo, &revisions.base_side(), &revisions.head, loaded, &loaded.query_dirs())?;
    if sides.queries.is_empty() {
        return Ok((Vec::new(), vec!["Plans not compared: there are no query files to plan.".into()]));
    }
    let mut options =
        PlanOptions::new(repo.root().to_path_buf(), sides.base, sides.head, sides.queries, spec).with_config(config);
    options.server.database_url = database_url;
    options.server.cache_dir = run.cache_dir.clone();
    if config.stats.is_some() || config.fixture.is_some() {
        // The snapshot is gate data: it must be read from the base revision like the scale spec,
        // which the gate does not do yet. Said, not silently dropped.
        notes.push(
            "Plan comparison: [plan] stats and fixture are not read by `sluice check` yet: the fixture follows the \
             scale spec alone; `sluice plan --stats` uses the snapshot"
                .into(),
        );
    }
    let report = plan::compare(&options)?;
    notes.extend(report.notes.into_iter().map(|n| format!("Plan comparison: {n}")));
    Ok((report.findings, notes))
}

/// Said when `DATABASE_URL` is set but not used: it names the application's own database (set
/// for its tests in CI), which Sluice must never mistake for a server it may work on.
pub fn ignored_database_url_note() -> String {
    "DATABASE_URL is set but was ignored: Sluice connects only to a server named by --database-url or \
     SLUICE_DATABASE_URL (where it creates and drops only its own sluice_* databases), else it starts its own."
        .to_string()
}

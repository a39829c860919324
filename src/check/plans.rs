//! The plan-comparison part of `sluice check`: when `[plan] scale` names a scale spec, build
//! the fixture from the base side's migrations, apply the head side's, and report the queries
//! whose plans got worse. Fails closed: when `[plan] required = true` and no PostgreSQL can be
//! had, that is an error, not a pass.

use super::PlanRun;
use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::finding::Finding;
use crate::git::{self, Oid, Repo, Side};
use crate::plan::{self, scale, server, sources, PlanOptions};
use std::path::Path;

/// Plan findings and notes; `changed` says whether any migration or query file changed.
pub(super) fn compare(
    repo: &Repo,
    loaded: &Loaded,
    base: Oid,
    head: &Side,
    run: &PlanRun,
    changed: bool,
) -> Result<(Vec<Finding>, Vec<String>)> {
    let config = &loaded.config.plan;
    let Some(scale_path) = &config.scale else {
        return Ok((Vec::new(), Vec::new()));
    };
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
    if database_url.is_none() {
        if let Err(e) = server::find_bindir() {
            let config_file =
                loaded.file.as_deref().map(|f| f.display().to_string()).unwrap_or_else(|| "sluice.toml".into());
            if required {
                return Err(Error::Other(format!(
                    "plans must be compared ([plan] required = true in {config_file}) but no PostgreSQL is available: {e}"
                )));
            }
            return Ok((
                Vec::new(),
                vec![format!(
                    "Plans not compared: [plan] scale is set but no PostgreSQL is available ({e}). Set [plan] \
                     required = true to make this an error."
                )],
            ));
        }
    }

    let spec = load_spec(repo, head, &loaded.resolve(scale_path))?;
    let base_side = Side::Rev(base);
    let sides = sources::from_git(repo, &base_side, head, loaded, &loaded.query_dirs())?;
    if sides.queries.is_empty() {
        return Ok((Vec::new(), vec!["Plans not compared: there are no query files to plan.".into()]));
    }
    let mut options =
        PlanOptions::new(repo.root().to_path_buf(), sides.base, sides.head, sides.queries, spec).with_config(config);
    options.base_queries = Some(sides.base_queries);
    options.server.database_url = database_url;
    options.server.cache_dir = run.cache_dir.clone();
    let report = plan::compare(&options)?;
    let notes = report.notes.into_iter().map(|n| format!("Plan comparison: {n}")).collect();
    Ok((report.findings, notes))
}

/// The scale spec from the head side when it is in the repository (it goes with the head's
/// configuration), else from disk.
fn load_spec(repo: &Repo, head: &Side, path: &Path) -> Result<scale::ScaleSpec> {
    let relative = git::relative_dir(repo.root(), path);
    if relative.starts_with('\0') {
        return scale::ScaleSpec::load(path);
    }
    let text = match git::read_file(repo, head, &relative)? {
        Some(text) => text,
        None => {
            return Err(Error::Usage(format!(
                "{relative}: the scale spec named by [plan] scale does not exist on the head side"
            )))
        }
    };
    scale::parse(Path::new(&relative), &text)
}

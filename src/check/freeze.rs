//! The change-freeze part of `sluice check`: may this change be deployed to `--env` as
//! `--service` at `--at` (default now)? Fails closed: a deploy named against a calendar that
//! is not there is an error, and a calendar that is there but was not consulted is a note.

use super::Deploy;
use crate::config::Loaded;
use crate::error::{Error, Result};
use crate::finding::{Finding, Severity};
use crate::freeze::{self, time::utc_string, FreezeOptions};
use crate::git::{Change, ChangeKind};
use chrono::Utc;
use std::path::Path;

/// The `change-freeze` findings and the notes saying what was (not) checked. File paths in
/// findings are made relative to `repo_root` when they are inside it.
pub(super) fn check(
    loaded: &Loaded,
    deploy: &Deploy,
    repo_root: &Path,
    changes: &[Change],
) -> Result<(Vec<Finding>, Vec<String>)> {
    let options = FreezeOptions::resolve(
        loaded,
        deploy.calendar.as_deref(),
        deploy.overrides.as_deref(),
        deploy.audit_log.as_deref(),
    );
    let shown = display(&options.calendar, repo_root);
    let (env, service) =
        match (&deploy.env, &deploy.service) {
            (Some(env), Some(service)) => (env, service),
            (None, None) if deploy.at.is_none() => {
                let note = options.calendar.is_file().then(|| {
                    format!(
                    "Change freeze not checked: {shown} exists, but no deployment was named; pass --env ENV --service \
                     NAME (the GitHub action's `env` and `service` inputs) to check the deploy against it."
                )
                });
                return Ok((Vec::new(), note.into_iter().collect()));
            }
            _ => return Err(Error::Usage(
                "--env and --service go together (and --at needs both): the freeze calendar decides per environment \
                 and service"
                    .into(),
            )),
        };
    if !options.calendar.is_file() {
        return Err(Error::Usage(format!(
            "{}: no change-freeze calendar there, so deploying {service} to {env} cannot be checked; create it \
             (`sluice freeze lint` validates it), set [freeze] calendar in sluice.toml, or pass --calendar FILE",
            options.calendar.display()
        )));
    }
    let at = deploy.at.map(|t| t.with_timezone(&Utc)).unwrap_or_else(Utc::now);
    let mut findings = freeze::deploy_findings_with(&options, env, service, at)?;
    for finding in &mut findings {
        finding.file = display(Path::new(&finding.file), repo_root);
    }
    let frozen = findings.iter().any(|f| f.severity == Severity::Error);
    let mut notes = vec![format!(
        "Change freeze: deploying {service} to {env} at {} checked against {shown}: {}.",
        utc_string(at),
        if frozen { "frozen" } else { "open" }
    )];
    // The calendar is read from disk, so a change that edits it is checked against its own edit.
    if changes.iter().any(|c| c.path == shown || matches!(&c.kind, ChangeKind::Renamed { from } if *from == shown)) {
        notes.push(format!(
            "{shown} changed in this change and the freeze was checked against the edited calendar: have the \
             calendar's owners review the edit."
        ));
    }
    Ok((findings, notes))
}

/// `path` relative to the repository root when inside it, with `/`.
fn display(path: &Path, repo_root: &Path) -> String {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let relative = path
        .strip_prefix(repo_root)
        .ok()
        .map(Path::to_path_buf)
        .or_else(|| canonical(path).strip_prefix(canonical(repo_root)).ok().map(Path::to_path_buf));
    relative.as_deref().unwrap_or(path).to_string_lossy().replace('\\', "/")
}

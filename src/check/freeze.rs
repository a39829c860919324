//! The change-freeze part of `sluice check`: may this change be deployed to `--env` as
//! `--service` at `--at` (default now)? The calendar, the `.ics` files it imports and the
//! overrides are the base revision's ([`Gate`]): an override the change adds for itself lifts
//! nothing. Fails closed: a deploy named against a calendar that is not there is an error, and
//! a calendar that is there but was not consulted is a note.

use super::gate::Gate;
use super::options::Deploy;
use crate::error::{Error, Result};
use crate::finding::{Finding, Severity};
use crate::freeze::{self, overrides::Overrides, time::utc_string};
use crate::lint;
use chrono::Utc;

/// What the change-freeze calendar says about the deployment.
pub(super) struct FreezeVerdict {
    /// `change-freeze` findings, with the trusted `[rules]` levels applied.
    pub findings: Vec<Finding>,
    /// What was (not) checked.
    pub notes: Vec<String>,
}

/// The freeze verdict on the deployment `deploy` names, by the trusted calendar and overrides.
pub(super) fn check(gate: &Gate, deploy: &Deploy) -> Result<FreezeVerdict> {
    let (findings, notes) = decide(gate, deploy)?;
    Ok(FreezeVerdict { findings: lint::apply_levels(findings, &gate.loaded().config.rules), notes })
}

fn decide(gate: &Gate, deploy: &Deploy) -> Result<(Vec<Finding>, Vec<String>)> {
    let options = gate.freeze_options(&gate.trusted, deploy);
    if deploy.env.is_some() {
        options.check_audit_log(&[gate.trusted.loaded.policies_dir(), gate.proposed.loaded.policies_dir()])?;
    }
    let shown = gate.shown(&options.calendar);
    let (env, service) =
        match (&deploy.env, &deploy.service) {
            (Some(env), Some(service)) => (env, service),
            (None, None) if deploy.at.is_none() => {
                let exists = gate.read(&gate.trusted_side, &options.calendar)?.is_some()
                    || gate.read(&gate.head, &options.calendar)?.is_some();
                let note = exists.then(|| {
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
    let mut notes = Vec::new();
    let (calendar, side) = match gate.load_calendar(&options, &gate.trusted_side)? {
        Some(calendar) => (calendar, gate.trusted_side),
        // A calendar the change adds can only restrict deploys: apply its windows.
        None => match gate.load_calendar(&options, &gate.head)? {
            Some(calendar) => {
                notes.push(format!(
                    "{shown} is new in this change: its windows were applied (a calendar can only restrict deploys)."
                ));
                (calendar, gate.head)
            }
            None => {
                return Err(Error::Usage(format!(
                    "{}: no change-freeze calendar there, so deploying {service} to {env} cannot be checked; create \
                     it (`sluice freeze lint` validates it), set [freeze] calendar in sluice.toml, or pass --calendar \
                     FILE",
                    options.calendar.display()
                )))
            }
        },
    };
    // Overrides in the repository are the base revision's (one the change adds lifts nothing);
    // a file outside the repository is not part of the change.
    let overrides = match &options.overrides {
        Some(path) if side == gate.head && !gate.trust_head && !gate.is_outside(path) => Overrides::default(),
        _ => gate.load_overrides(&options, &side, &calendar)?,
    };
    let at = deploy.at.map(|t| t.with_timezone(&Utc)).unwrap_or_else(Utc::now);
    let findings = freeze::decide_deploy(&calendar, &overrides, &options.audit_log, env, service, at)?;
    let frozen = findings.iter().any(|f| f.severity == Severity::Error);
    notes.insert(
        0,
        format!(
            "Change freeze: deploying {service} to {env} at {} checked against {shown} (as on the {}): {}.",
            utc_string(at),
            gate.describe_side(&side),
            if frozen { "frozen" } else { "open" }
        ),
    );
    Ok((findings, notes))
}

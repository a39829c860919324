//! `change-freeze`: a deploy inside a change-freeze window. Findings are produced by
//! [`crate::freeze::deploy_findings`] (`sluice check --env E --service S`); this file carries the
//! rule's identity and documentation.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "change-freeze",
    severity: Severity::Error,
    category: Category::Freeze,
    summary: "Deploy falls inside a change-freeze window (or outside every allow window)",
    what: "Checks the deploy's service, environment and time against the change-freeze calendar \
(`policies/freeze.toml`): deny windows (one-off, recurring by RRULE, or anchored to a named event \
with a lead and lag time) and allow windows. Reports the window, the event, the reason, when the \
freeze ends and the next open time. Invalid or expired emergency overrides are reported as \
warnings; a valid override in force lifts only the windows it names and is written to the audit log.",
    why: "A release that went out the day before the annual Spring Bird Count, with no event-specific \
freeze, broke submissions during the count; a deploy at the weekday commuter peak took the trip \
planner down for 46,000 riders. A freeze that is written down but not enforced by the gate does \
not stop the next one.",
    fix: "Deploy after the next open time (`sluice freeze next-open --service S --env E`). For an \
emergency, add an override to `policies/overrides.toml` with a reason, a ticket, an approver other \
than the requester and an expiry of at most `max_override_hours` (default 4) after `not_before`.",
    bad: "",
    good: "",
    equivalents:
        "GitLab deploy freezes (cron start/end), Argo CD sync windows, Harness and Octopus deployment freezes.",
};

pub struct ChangeFreeze;

impl Rule for ChangeFreeze {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

//! The stage of `sluice check` that reviews what the change does to the gate itself:
//! `gate-config-changed` per edited gate file and `domain-review-required` per edited identity
//! declaration, with the trusted `[rules]` levels applied, and the notes that go with them.

use super::gate::{self, ConfigFile, Gate, GatePolicies};
use super::options::Options;
use super::review;
use crate::error::Result;
use crate::finding::Finding;
use crate::git::Change;
use crate::lint;
use crate::policy::identity;
use crate::rules::gate_config_changed;

/// The gate's findings and notes.
pub(super) struct GateReview {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

pub(super) fn review(
    gate: &Gate,
    changes: &[Change],
    policies: &GatePolicies,
    options: &Options,
) -> Result<GateReview> {
    let mut findings = gate::changes::findings(gate, changes, policies, &options.deploy)?;
    // Findings about a declaration point at the head's identity.toml, or the base's when the head has none.
    let identity_of = |config: &ConfigFile| config.loaded.policies_dir().join(identity::FILE);
    let proposed = identity_of(&gate.proposed);
    let identity_file = match gate.read(&gate.head, &proposed)? {
        Some(_) => gate.shown(&proposed),
        None => gate.shown(&identity_of(&gate.trusted)),
    };
    let (declarations, mut notes) = review::declaration_findings(policies, &identity_file);
    findings.extend(declarations);
    if gate.trust_head || findings.iter().any(|f| f.rule == gate_config_changed::META.id) {
        notes.insert(0, format!("{}.", gate::describe_trust(gate.trust_head)));
    }
    for table in &policies.new_tables {
        notes.push(format!(
            "The policies for `{table}` came from the head: the base revision has no such table, so they cannot relax \
             anything."
        ));
    }
    Ok(GateReview { findings: lint::apply_levels(findings, &gate.loaded().config.rules), notes })
}

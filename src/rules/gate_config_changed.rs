//! `gate-config-changed`: the change edits the gate's own configuration. Findings are produced
//! by `sluice check` (`check::gate`), which reads the configuration from the base revision and
//! describes what the head's version would do once merged; this file carries the rule's
//! identity and documentation.

use super::{Category, Rule, RuleMeta};
use crate::finding::Severity;

pub static META: RuleMeta = RuleMeta {
    id: "gate-config-changed",
    severity: Severity::Warning,
    category: Category::History,
    summary: "The change edits the gate's own configuration, which takes effect only once merged",
    what: "In `sluice check`, the gate's configuration (`sluice.toml`, everything under the policies directory, \
the scale spec named by `[plan] scale`, the freeze calendar, the `.ics` files it imports and `overrides.toml`) \
is read from the base revision, not from the change under review. One finding per such file the change edits \
says what the edit would do once merged: rules relaxed or tightened with their old and new levels, directories \
moved, thresholds changed, identity keys and reviewers changed, freeze windows, events or overrides added or \
removed. Policy entries for tables the change creates are the exception: they come from the head, since the \
base has nothing to relax for them. Each revision is read as its own git tree holds it, a symbolic link followed \
inside that tree, never through the checkout on disk: a link the change puts at a file or directory the gate \
reads (or at a directory above one) redirects nothing in this review, and is reported as an error.",
    why: "A gate the change under review can switch off is not a gate: a pull request that adds `CREATE INDEX` \
without CONCURRENTLY and sets `\"create-index-non-concurrently\" = \"off\"` in the same change would pass, and \
one that adds its own entry to `overrides.toml` would lift an active freeze for itself. Branch protection and \
code owners solve this by taking the rules from the protected branch \
(https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/managing-protected-branches/about-protected-branches); \
so does Sluice.",
    fix: "Nothing to fix if the edit is intended: have the gate's owners review it (a CODEOWNERS entry for \
`sluice.toml` and the policies directory makes GitHub require them). It takes effect for the pull requests \
after it is merged. To try a configuration locally, `sluice check --trust-head-config` reads the head's.",
    bad: "",
    good: "",
    equivalents: "GitHub branch protection and CODEOWNERS (rules come from the base branch).",
};

pub struct GateConfigChanged;

impl Rule for GateConfigChanged {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }
}

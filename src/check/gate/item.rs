//! What an edit of a gate file would do, item by item, and the `gate-config-changed` finding
//! that says it.

use crate::finding::{Finding, Severity};
use crate::rules::gate_config_changed::META;

/// Which way an item moves the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// Fewer or weaker findings, or more ways around them.
    Relaxes,
    /// More or stronger findings.
    Tightens,
    /// Neither clearly: a location, a version, a description.
    Changes,
}

impl Effect {
    fn as_str(self) -> &'static str {
        match self {
            Effect::Relaxes => "relaxes",
            Effect::Tightens => "tightens",
            Effect::Changes => "changes",
        }
    }
}

/// One thing an edit would do, e.g. "relax `create-index-non-concurrently` from error to off".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub effect: Effect,
    pub text: String,
    /// Where the head's file says it, when it does.
    pub line: Option<usize>,
}

impl Item {
    pub fn new(effect: Effect, text: impl Into<String>, line: Option<usize>) -> Item {
        Item { effect, text: text.into(), line }
    }
}

/// How a gate file changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum How {
    Added,
    Modified,
    Deleted,
    Moved { from: String },
}

/// A symbolic link the change puts where the gate reads.
#[derive(Clone, Debug)]
pub struct Link {
    /// "`policies` is now a symbolic link to `decoy`: it redirects …".
    pub text: String,
    /// Whether it stands for a gate input or a directory above one: an error.
    pub redirects: bool,
}

/// An edited gate file and what the edit would do.
#[derive(Clone, Debug)]
pub struct FileChange {
    /// The head's path (the base's for a deleted file).
    pub path: String,
    pub how: How,
    pub items: Vec<Item>,
    pub link: Option<Link>,
}

/// "the base revision's configuration" or the `--trust-head-config` wording, for notes.
pub fn describe_trust(trust_head: bool) -> &'static str {
    if trust_head {
        "--trust-head-config: this review applied the head's sluice.toml, policies, scale spec, freeze calendar and \
         overrides, as a pull request would once merged; in CI the gate reads them from the base revision"
    } else {
        "The gate's configuration (sluice.toml, policies, scale spec, freeze calendar and overrides) was read from \
         the base revision; edits to it in this change take effect once merged"
    }
}

impl FileChange {
    /// The finding: relaxations first, each item a fact, all of them in the evidence.
    pub fn finding(mut self, trust_head: bool) -> Finding {
        self.items.sort_by_key(|i| i.effect);
        let what = match &self.how {
            How::Added => "added".to_string(),
            How::Modified => "changed".to_string(),
            How::Deleted => "deleted".to_string(),
            How::Moved { from } => format!("moved from {from}"),
        };
        let used = if trust_head {
            "this review applied the head's version (--trust-head-config)"
        } else {
            match self.how {
                How::Added => "this review did not apply it (it is not on the base revision)",
                _ => "this review applied the base revision's version",
            }
        };
        let effects = if self.items.is_empty() && self.link.is_some() {
            "once merged the gate would read what it points at (its effects are told on the files it replaces or \
             points at)"
                .to_string()
        } else if self.items.is_empty() {
            "it changes nothing the gate reads (comments, formatting or order)".to_string()
        } else {
            let list = self.items.iter().map(|i| i.text.as_str()).collect::<Vec<_>>().join("; ");
            if trust_head {
                format!("it does: {list}")
            } else {
                format!("once merged it would {list}")
            }
        };
        let line = self.items.iter().find_map(|i| i.line).unwrap_or(1);
        let relaxes = self.items.iter().filter(|i| i.effect == Effect::Relaxes).count();
        let (severity, message) = match &self.link {
            None => (META.severity, format!("gate configuration {what} in this change; {used}; {effects}")),
            Some(link) => (
                if link.redirects { Severity::Error } else { META.severity },
                format!(
                    "gate configuration {what} in this change: {}; {}; {effects}",
                    link.text,
                    if trust_head {
                        used
                    } else {
                        "this review read the base revision's files as its own tree holds them, not through the link"
                    }
                ),
            ),
        };
        let mut finding =
            Finding::new(META.id, severity, self.path.clone(), message).at(line, 1, line, 1).help(META.fix);
        if relaxes > 0 {
            finding = finding.fact("relaxations", relaxes.to_string());
        }
        for item in &self.items {
            finding = finding.fact(item.effect.as_str(), item.text.clone());
        }
        let items: Vec<serde_json::Value> = self
            .items
            .iter()
            .map(|i| serde_json::json!({ "effect": i.effect.as_str(), "text": i.text, "line": i.line }))
            .collect();
        if let Some(link) = &self.link {
            finding = finding.fact("symbolic link", link.text.clone());
        }
        finding.evidence(serde_json::json!({
            "applied": if trust_head { "head" } else { "base" },
            "change": what,
            "items": items,
            "symlink": self.link.as_ref().map(|l| serde_json::json!({ "text": l.text, "redirects": l.redirects })),
        }))
    }
}

/// The 1-based line of the first line of `text` that `matches`, if any.
pub fn line_where(text: Option<&str>, matches: impl Fn(&str) -> bool) -> Option<usize> {
    text?.lines().position(|l| matches(l.trim())).map(|i| i + 1)
}

/// Lists as `a, b` or `nothing`.
pub fn list(values: &[String]) -> String {
    if values.is_empty() {
        "nothing".into()
    } else {
        values.join(", ")
    }
}

//! What every rule carries besides its check: id, default severity and documentation.

use crate::finding::Severity;

/// Where a rule's findings come from; groups the rule table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// Rules born of an outage (issue 2).
    Incident,
    /// Locking and rewrite safety of migrations.
    MigrationSafety,
    /// Only meaningful with git history (`sluice check`).
    History,
    /// Findings from EXPLAIN plans (`sluice plan`).
    Plan,
    /// The change-freeze calendar.
    Freeze,
    /// Type and naming advice.
    Style,
    /// About Sluice's own input (unparsed statements, bad suppressions).
    Meta,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Incident => "incident",
            Category::MigrationSafety => "migration-safety",
            Category::History => "history",
            Category::Plan => "plan",
            Category::Freeze => "freeze",
            Category::Style => "style",
            Category::Meta => "meta",
        }
    }
}

/// A rule's identity and documentation, in clippy's shape:
/// what it does, why it is bad, and the example with its fix.
#[derive(Debug)]
pub struct RuleMeta {
    /// Kebab-case, stable: users put it in `sluice.toml` and in `sluice:ignore` comments.
    pub id: &'static str,
    pub severity: Severity,
    pub category: Category,
    /// One line, for tables and SARIF `shortDescription`.
    pub summary: &'static str,
    /// What it catches.
    pub what: &'static str,
    /// Why it is dangerous, naming the kind of outage it prevents.
    pub why: &'static str,
    /// How to fix it, in words.
    pub fix: &'static str,
    /// SQL the rule flags (empty for rules that do not look at SQL).
    pub bad: &'static str,
    /// The recommended fix: must lint clean.
    pub good: &'static str,
    /// The corresponding checks of other tools (squawk, strong_migrations, eugene), or "".
    pub equivalents: &'static str,
}

impl RuleMeta {
    /// The rule's documentation as Markdown, for `sluice rules ID`, docs and SARIF `help`.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# {}\n\nDefault severity: {}. Category: {}.\n\n{}\n\n## What it does\n\n{}\n\n## Why is this bad\n\n{}\n\n## How to fix\n\n{}\n",
            self.id,
            self.severity,
            self.category.as_str(),
            self.summary,
            self.what.trim(),
            self.why.trim(),
            self.fix.trim()
        );
        if !self.bad.trim().is_empty() {
            out.push_str(&format!("\n## Example\n\n```sql\n{}\n```\n", self.bad.trim()));
        }
        if !self.good.trim().is_empty() {
            out.push_str(&format!("\nUse instead:\n\n```sql\n{}\n```\n", self.good.trim()));
        }
        if !self.equivalents.is_empty() {
            out.push_str(&format!("\n## Other tools\n\n{}\n", self.equivalents));
        }
        out
    }
}

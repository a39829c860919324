//! The one currency of Sluice: every capability produces [`Finding`]s and every
//! output format is a renderer over a list of them.

pub mod fingerprint;

use rayon::slice::ParallelSliceMut;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fact a finding relied on ("index" = "stop_times_route_idx", "table rows" = "unknown").
/// Shown by `--explain` so every verdict can be checked by a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fact {
    pub name: String,
    pub value: String,
}

/// The source text a finding points into: the whole statement (or the lines around the
/// location), starting at `first_line` and `first_column`, for excerpts with a caret. A range
/// of the file's text, which every finding on the file shares: a finding costs no copy of
/// its statement, however long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    pub first_line: usize,
    /// 1-based, in characters: 1 unless the line is too long to show whole.
    pub first_column: usize,
    source: Arc<str>,
    range: Range<usize>,
}

impl Snippet {
    /// `range` of `source`, which starts at `first_line`, `first_column`.
    pub fn shared(first_line: usize, first_column: usize, source: &Arc<str>, range: Range<usize>) -> Snippet {
        Snippet { first_line, first_column, source: Arc::clone(source), range }
    }

    pub fn text(&self) -> &str {
        &self.source[self.range.clone()]
    }
}

/// Fields in alphabetical order: the JSON report's keys have always come out sorted, and the
/// derived serialization keeps that order without building a JSON tree per finding.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// 1-based, in characters.
    pub column: usize,
    pub end_column: usize,
    pub end_line: usize,
    /// Structured evidence for machine consumers (two plans, a freeze window…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<Fact>,
    /// Path relative to the repository root (or the working directory outside one), with `/`.
    pub file: String,
    /// Usually a rule's fix text, shared rather than copied into every finding.
    pub help: Cow<'static, str>,
    /// 1-based.
    pub line: usize,
    pub message: String,
    /// Kebab-case rule id, as listed by `sluice rules`.
    pub rule: String,
    pub severity: Severity,
    #[serde(skip)]
    pub snippet: Option<Snippet>,
    /// The `sluice:ignore` directive that silenced it, for a finding reported as suppressed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression: Option<Box<Suppression>>,
    /// What the rule that made it needs to settle it once the whole history is replayed (its
    /// own type, which only it reads: see `rules::Rule::finish_history`); `None` once settled.
    #[serde(skip)]
    pub settle: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// A `-- sluice:ignore rule -- reason` directive that silenced a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Suppression {
    /// The directive's comment as written: how `sluice check` tells one the change adds.
    pub directive: String,
    /// Whether it is `sluice:ignore-file` (the whole file) rather than the next statement.
    pub file_level: bool,
    pub reason: String,
}

impl Finding {
    /// "suppressed by this change: rule, line N, reason": how every report says what a
    /// `sluice:ignore` the change adds waved through.
    pub fn suppressed_text(&self) -> Option<String> {
        let s = self.suppression.as_ref()?;
        Some(format!("suppressed by this change: {}, line {}, reason: {}", self.rule, self.line, s.reason))
    }
}

/// An empty finding (allocates nothing): what is left where a finding was moved out.
impl Default for Finding {
    fn default() -> Self {
        Finding::new("", Severity::Info, "", "")
    }
}

/// A count as findings write it: `5120` → `5,120`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Finding {
    pub fn new(rule: &str, severity: Severity, file: impl Into<String>, message: impl Into<String>) -> Self {
        Finding {
            rule: rule.to_string(),
            severity,
            file: file.into(),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
            message: message.into(),
            help: Cow::Borrowed(""),
            facts: Vec::new(),
            snippet: None,
            evidence: None,
            suppression: None,
            settle: None,
        }
    }

    pub fn at(mut self, line: usize, column: usize, end_line: usize, end_column: usize) -> Self {
        self.line = line.max(1);
        self.column = column.max(1);
        self.end_line = end_line.max(self.line);
        self.end_column = end_column.max(1);
        self
    }

    pub fn help(mut self, help: impl Into<Cow<'static, str>>) -> Self {
        self.help = help.into();
        self
    }

    pub fn fact(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.facts.push(Fact { name: name.into(), value: value.into() });
        self
    }

    /// An excerpt of its own (a comment, a query outside any file): `text` starts at `first_line`.
    pub fn snippet(mut self, first_line: usize, text: impl Into<String>) -> Self {
        let text: Arc<str> = text.into().into();
        self.snippet = Some(Snippet::shared(first_line, 1, &text, 0..text.len()));
        self
    }

    pub fn excerpt(mut self, snippet: Snippet) -> Self {
        self.snippet = Some(snippet);
        self
    }

    pub fn evidence(mut self, value: serde_json::Value) -> Self {
        self.evidence = Some(value);
        self
    }
}

/// Everything a command found, plus what it looked at, handed to a renderer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Lines for the reader that are not findings ("3 migrations, 2 query files checked").
    pub notes: Vec<String>,
    /// Findings a `sluice:ignore` silenced that the change under review adds (`sluice check`):
    /// they count for nothing, and every format shows them, so a reviewer sees what was waved
    /// through.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suppressed: Vec<Finding>,
}

impl Report {
    /// Sorted by file, then position, then rule: stable output whatever order files were checked in.
    pub fn sort(&mut self) {
        // Stable, and on every core: a history's report has tens of thousands of findings.
        let order = |a: &Finding, b: &Finding| {
            (&a.file, a.line, a.column, &a.rule, &a.message).cmp(&(&b.file, b.line, b.column, &b.rule, &b.message))
        };
        self.findings.par_sort_by(order);
        self.suppressed.sort_by(order);
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }

    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

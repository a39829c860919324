//! Adopting Sluice on a long history, the way teams adopt ruff or eugene: `--write-baseline FILE`
//! records today's findings, `--baseline FILE` leaves the recorded ones out (one note says how
//! many; `--show-baselined` lists them, as info) and keeps the severity of new ones, so that a
//! reviewer of a long history sees the one new error. A finding is recognised by its rule, its file and the fingerprint of its
//! statement ([`crate::finding::fingerprint`]), never its line, so edits that shift lines keep it
//! recognised.

use crate::error::{line_of_offset, read_text, Error, Result};
use crate::finding::fingerprint::fingerprints;
use crate::finding::{Report, Severity};
use serde::{Deserialize, Serialize};
use std::path::Path;

const VERSION: u32 = 1;

/// The file `--write-baseline` writes and `--baseline` reads.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    version: u32,
    findings: Vec<Entry>,
}

/// One recorded finding. `line` and `message` are for the people reading the file; matching
/// uses the rule, the file and the fingerprint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct Entry {
    rule: String,
    file: String,
    fingerprint: String,
    #[serde(default)]
    line: usize,
    #[serde(default)]
    message: String,
}

/// The recorded findings of a baseline file.
#[derive(Debug)]
pub struct Baseline {
    path: String,
    entries: Vec<Entry>,
}

fn entries_of(report: &Report) -> Vec<Entry> {
    report
        .findings
        .iter()
        .zip(fingerprints(&report.findings))
        .map(|(f, fingerprint)| Entry {
            rule: f.rule.clone(),
            file: f.file.clone(),
            fingerprint,
            line: f.line,
            message: f.message.clone(),
        })
        .collect()
}

/// Writes every finding of `report` to `path`.
pub fn write(path: &Path, report: &Report) -> Result<usize> {
    let file = BaselineFile { version: VERSION, findings: entries_of(report) };
    let mut text =
        serde_json::to_string_pretty(&file).map_err(|e| Error::Other(format!("cannot write a baseline: {e}")))?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    Ok(file.findings.len())
}

impl Baseline {
    /// Reads a baseline file; a malformed one is an error naming the file and the line.
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = read_text(path)?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Baseline> {
        let file: BaselineFile = serde_json::from_str(text).map_err(|e| {
            let line = if e.line() == 0 { None } else { Some(e.line()) };
            Error::invalid(
                path,
                line,
                format!("not a Sluice baseline: {e}; write one with `sluice lint --write-baseline FILE`"),
            )
        })?;
        let line_of = |needle: &str| text.find(needle).map(|at| line_of_offset(text, at));
        if file.version != VERSION {
            return Err(Error::invalid(
                path,
                line_of("\"version\""),
                format!("baseline version {} is not supported (this Sluice writes version {VERSION})", file.version),
            ));
        }
        if let Some(unknown) = file.findings.iter().find(|e| crate::rules::find(&e.rule).is_none()) {
            return Err(Error::invalid(
                path,
                line_of(&format!("\"{}\"", unknown.rule)),
                format!("unknown rule `{}`; `sluice rules` lists the rule ids", unknown.rule),
            ));
        }
        Ok(Baseline { path: path.display().to_string(), entries: file.findings })
    }

    /// Leaves the findings recorded in the baseline out of the report, or with `show` reports
    /// them as info (noting where they were recorded); new ones stay as they are. Adds a note
    /// saying how many matched and how many are gone.
    pub fn apply(&self, report: &mut Report, show: bool) {
        let mut unmatched: Vec<&Entry> = self.entries.iter().collect();
        let mut matched = 0;
        let prints = fingerprints(&report.findings);
        let mut recorded = vec![false; report.findings.len()];
        for ((finding, print), recorded) in report.findings.iter_mut().zip(prints).zip(recorded.iter_mut()) {
            let found = unmatched
                .iter()
                .position(|e| e.fingerprint == print && e.rule == finding.rule && e.file == finding.file);
            if let Some(at) = found {
                unmatched.swap_remove(at);
                matched += 1;
                // Text Sluice could not read stays an error: a baseline records it, never hides it.
                if finding.rule == crate::rules::UNREAD_TEXT.id {
                    continue;
                }
                *recorded = true;
                if finding.severity > Severity::Info {
                    finding.facts.push(crate::finding::Fact {
                        name: "baseline".into(),
                        value: format!("recorded in {} as {}; reported as info", self.path, finding.severity),
                    });
                    finding.severity = Severity::Info;
                }
            }
        }
        let mut note = if show {
            format!("{matched} finding(s) recorded in the baseline {} are reported as info", self.path)
        } else {
            let mut at = 0;
            report.findings.retain(|_| {
                at += 1;
                !recorded[at - 1]
            });
            format!(
                "{matched} finding(s) recorded in the baseline {} are not shown (--show-baselined lists them, as info)",
                self.path
            )
        };
        if !unmatched.is_empty() {
            note.push_str(&format!(
                "; {} recorded finding(s) no longer occur (fixed, or their statement changed): rewrite the baseline \
                 with --write-baseline to drop them",
                unmatched.len()
            ));
        }
        report.notes.push(format!("{note}."));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Finding;

    fn finding(rule: &str, line: usize, sql: &str) -> Finding {
        Finding::new(rule, Severity::Error, "migrations/0002.sql", format!("{rule} here"))
            .at(line, 1, line, 10)
            .snippet(line, sql)
    }

    fn report(findings: Vec<Finding>) -> Report {
        Report { findings, notes: Vec::new(), ..Default::default() }
    }

    #[test]
    fn recorded_findings_become_info_after_lines_shift_and_new_ones_keep_their_severity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sluice-baseline.json");
        let before = report(vec![
            finding("create-index-non-concurrently", 3, "CREATE INDEX a_x ON a (x);"),
            finding("drop-column", 5, "ALTER TABLE a DROP COLUMN y;"),
        ]);
        assert_eq!(write(&path, &before).unwrap(), 2);

        let mut after = report(vec![
            finding("create-index-non-concurrently", 13, "CREATE INDEX a_x\n  ON a (x);"),
            finding("create-index-non-concurrently", 20, "CREATE INDEX b_x ON b (x);"),
        ]);
        let shifted = after.clone();
        Baseline::load(&path).unwrap().apply(&mut after, true);
        let severities: Vec<Severity> = after.findings.iter().map(|f| f.severity).collect();
        assert_eq!(severities, [Severity::Info, Severity::Error]);
        assert_eq!(after.findings[0].facts[0].name, "baseline");
        assert!(after.notes[0].starts_with("1 finding(s) recorded in the baseline"), "{:?}", after.notes);
        assert!(after.notes[0].contains("1 recorded finding(s) no longer occur"), "{:?}", after.notes);
        // Issue 37: by default the recorded ones are one line, and the new error is what shows.
        let mut hidden = shifted;
        Baseline::load(&path).unwrap().apply(&mut hidden, false);
        assert_eq!(hidden.findings.len(), 1);
        assert_eq!((hidden.findings[0].line, hidden.findings[0].severity), (20, Severity::Error));
        assert!(hidden.notes[0].contains("are not shown (--show-baselined lists them, as info)"), "{:?}", hidden.notes);
    }

    #[test]
    fn a_baseline_never_hides_unread_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sluice-baseline.json");
        let unread = || report(vec![finding("unread-text", 2, "SELECT 'never closed;")]);
        write(&path, &unread()).unwrap();
        let mut after = unread();
        Baseline::load(&path).unwrap().apply(&mut after, false);
        assert_eq!(after.findings[0].severity, Severity::Error);
    }

    #[test]
    fn malformed_baselines_are_errors_naming_file_and_line() {
        let path = Path::new("sluice-baseline.json");
        let error = |text: &str| Baseline::parse(path, text).unwrap_err().to_string();
        assert!(error("{\n  \"version\": 1,\n  \"findings\": [\n    {\"rule\": 3}\n  ]\n}")
            .starts_with("sluice-baseline.json:4: not a Sluice baseline"));
        assert!(error("not json").starts_with("sluice-baseline.json:1: not a Sluice baseline"));
        assert_eq!(
            error("{\n  \"version\": 7,\n  \"findings\": []\n}"),
            "sluice-baseline.json:2: baseline version 7 is not supported (this Sluice writes version 1)"
        );
        let unknown = "{\"version\": 1, \"findings\": [\n{\"rule\": \"no-such-rule\", \"file\": \"m.sql\", \"fingerprint\": \"x\"}]}";
        assert_eq!(
            error(unknown),
            "sluice-baseline.json:2: unknown rule `no-such-rule`; `sluice rules` lists the rule ids"
        );
        let missing = Baseline::load(Path::new("/nonexistent/sluice-baseline.json")).unwrap_err().to_string();
        assert!(missing.starts_with("/nonexistent/sluice-baseline.json: cannot read"), "{missing}");
    }
}

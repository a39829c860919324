//! What a finding says PostgreSQL does, as data: each lock, scan, rewrite and index build its
//! message names, on a table, at a statement. Findings carry them in their evidence
//! (`"claims": [...]`), so that a machine can hold them against PostgreSQL itself:
//! `bench/pg_oracle.sh` replays a history on a real server and compares every claim with
//! `pg_locks`, `relfilenode` and the scan counters after each statement.

use crate::finding::Finding;
use crate::sql::ddl::{Lock, Name};
use crate::sql::plpgsql::Branch;
use serde::Serialize;

/// The slow part of what a statement does to a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Work {
    /// Reads every row (a validation, `SET NOT NULL`), writing nothing.
    Scan,
    /// Writes the table anew (a new relfilenode), and with it every index.
    Rewrite,
    /// Builds an index that did not exist.
    Build,
    /// Rebuilds an existing index (a new relfilenode for the index).
    Rebuild,
}

/// One thing a finding says PostgreSQL does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// Where the statement that does it starts.
    pub line: usize,
    pub column: usize,
    /// The table (or view) it is done to, as Sluice names relations.
    pub table: Name,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "lock_name")]
    pub lock: Option<Lock>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<Work>,
    /// The index built or rebuilt, when the claim names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<Name>,
}

fn lock_name<S: serde::Serializer>(lock: &Option<Lock>, serializer: S) -> Result<S::Ok, S::Error> {
    match lock {
        Some(lock) => serializer.serialize_str(lock.as_str()),
        None => serializer.serialize_none(),
    }
}

impl Claim {
    pub fn lock(line: usize, column: usize, table: impl Into<Name>, lock: Lock) -> Claim {
        Claim { line, column, table: table.into(), lock: Some(lock), work: None, index: None }
    }

    pub fn work(line: usize, column: usize, table: impl Into<Name>, work: Work) -> Claim {
        Claim { line, column, table: table.into(), lock: None, work: Some(work), index: None }
    }

    pub fn on_index(mut self, index: impl Into<Name>) -> Claim {
        self.index = Some(index.into());
        self
    }
}

const KEY: &str = "claims";

/// `finding` with `claims` added to its evidence.
pub fn add(finding: Finding, claims: impl IntoIterator<Item = Claim>) -> Finding {
    let added: Vec<serde_json::Value> =
        claims.into_iter().map(|c| serde_json::to_value(c).expect("a claim serializes")).collect();
    add_values(finding, added)
}

/// Moves the claims of `others` (findings folded into `head`) to `head`, in order.
pub fn gather(head: &mut Finding, others: &[Finding]) {
    let moved: Vec<serde_json::Value> =
        others.iter().filter_map(|f| f.evidence.as_ref()?.get(KEY)?.as_array()).flatten().cloned().collect();
    let taken = std::mem::take(head);
    *head = add_values(taken, moved);
}

fn add_values(mut finding: Finding, mut values: Vec<serde_json::Value>) -> Finding {
    if values.is_empty() {
        return finding;
    }
    let evidence = finding.evidence.get_or_insert_with(|| serde_json::json!({}));
    if let Some(map) = evidence.as_object_mut() {
        match map.get_mut(KEY).and_then(|v| v.as_array_mut()) {
            Some(existing) => existing.append(&mut values),
            None => {
                map.insert(KEY.into(), serde_json::Value::Array(values));
            }
        }
    }
    finding
}

/// Marks the claims about the statement at `start` (line, column) with the branch of the DO block
/// it runs in, unless it always runs: what it claims happens only when the branch is taken.
pub fn mark_branch(finding: &mut Finding, start: (usize, usize), branch: Branch) {
    let label = match branch {
        Branch::Always => return,
        Branch::Conditional => "conditional",
        Branch::Loop => "loop",
        Branch::OnError => "on error",
    };
    let Some(claims) = finding.evidence.as_mut().and_then(|e| e.get_mut(KEY)).and_then(|v| v.as_array_mut()) else {
        return;
    };
    for claim in claims.iter_mut() {
        let at = (claim["line"].as_u64().unwrap_or(0) as usize, claim["column"].as_u64().unwrap_or(0) as usize);
        if at == start {
            claim["branch"] = serde_json::Value::from(label);
        }
    }
}

/// The claims a finding carries, read back (for tests and the oracle).
pub fn of(finding: &Finding) -> Vec<&serde_json::Value> {
    finding.evidence.as_ref().and_then(|e| e.get(KEY)).and_then(|v| v.as_array()).into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Severity;

    #[test]
    fn claims_are_evidence_and_folding_moves_them_to_the_head() {
        let f = |line| {
            add(
                Finding::new("r", Severity::Error, "m.sql", ""),
                [Claim::lock(line, 1, "t", Lock::AccessExclusive), Claim::work(line, 1, "t", Work::Scan)],
            )
        };
        let mut head = f(2);
        gather(&mut head, &[f(5)]);
        let claims: Vec<String> = of(&head).iter().map(|c| c.to_string()).collect();
        assert_eq!(
            claims,
            [
                r#"{"column":1,"line":2,"lock":"ACCESS EXCLUSIVE","table":"t"}"#,
                r#"{"column":1,"line":2,"table":"t","work":"scan"}"#,
                r#"{"column":1,"line":5,"lock":"ACCESS EXCLUSIVE","table":"t"}"#,
                r#"{"column":1,"line":5,"table":"t","work":"scan"}"#,
            ]
        );
    }
}

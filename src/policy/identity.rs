//! `policies/identity.toml`: what identifies a row in the domain, and which values many rows
//! legitimately share. A uniqueness constraint must contain one of the identity keys.

use crate::error::{line_of_offset, parse_toml, Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub const FILE: &str = "identity.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    table: Vec<toml::Spanned<Entry>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    /// One or more keys; each is a set of columns that identifies a row.
    pub identity: Vec<Vec<String>>,
    #[serde(default)]
    pub shared: Vec<String>,
    #[serde(default)]
    pub reason: String,
    /// Key columns the application generates (an app-side UUID `id`): unique by construction,
    /// so a constraint on them alone asserts nothing about the domain. Columns the database
    /// generates (identity, serial, `DEFAULT gen_random_uuid()`) need no listing.
    #[serde(default)]
    pub surrogate: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct IdentityPolicy {
    /// By normalized table name.
    pub tables: BTreeMap<String, Entry>,
    /// The file it came from, relative path for messages.
    pub source: Option<String>,
    /// Tables listed with `identity = []` (the skeleton `sluice init` writes): not declared yet,
    /// so checked as if absent, and named in a note until someone fills them in.
    pub pending: Vec<String>,
}

impl IdentityPolicy {
    pub fn parse(path: &Path, text: &str) -> Result<IdentityPolicy> {
        let file: File = parse_toml(path, text)?;
        let mut tables = BTreeMap::new();
        let mut pending = Vec::new();
        for spanned in file.table {
            let line = Some(line_of_offset(text, spanned.span().start));
            let mut entry = spanned.into_inner();
            let invalid = |message: String| Error::invalid(path, line, message);
            entry.name = normalize(&entry.name);
            if entry.name.is_empty() {
                return Err(invalid("[[table]] needs a `name`".into()));
            }
            if entry.identity.iter().any(|k| k.is_empty()) {
                return Err(invalid(format!(
                    "table `{}`: an identity key must list at least one column, e.g. identity = [[\"id\"]]",
                    entry.name
                )));
            }
            if tables.contains_key(&entry.name) || pending.contains(&entry.name) {
                return Err(invalid(format!("table `{}` is declared twice", entry.name)));
            }
            if entry.identity.is_empty() {
                pending.push(entry.name);
                continue;
            }
            entry.identity = entry.identity.iter().map(|k| k.iter().map(|c| normalize(c)).collect()).collect();
            entry.shared = entry.shared.iter().map(|c| normalize(c)).collect();
            entry.surrogate = entry.surrogate.iter().map(|c| normalize(c)).collect();
            tables.insert(entry.name.clone(), entry);
        }
        Ok(IdentityPolicy { tables, source: Some(path.display().to_string()), pending })
    }

    /// A note naming the tables whose identity is still to be declared (the first few), if any;
    /// `shown_as` is the policy file as the report shows paths.
    pub fn pending_note(&self, shown_as: &str) -> Option<String> {
        const NAMED: usize = 8;
        if self.pending.is_empty() {
            return None;
        }
        let mut named = self.pending.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
        if self.pending.len() > NAMED {
            named.push_str(&format!(" and {} more", self.pending.len() - NAMED));
        }
        Some(format!(
            "{shown_as}: {} table(s) still have `identity = []` ({named}): domain-identity-unique cannot check them until their identity is declared.",
            self.pending.len()
        ))
    }

    pub fn get(&self, table: &str) -> Option<&Entry> {
        self.tables.get(table)
    }
}

/// Names in policies fold like unquoted SQL identifiers; `public.` is implied.
fn normalize(name: &str) -> String {
    let name = name.trim().to_lowercase();
    name.strip_prefix("public.").map(str::to_string).unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_shape() {
        let policy = IdentityPolicy::parse(
            Path::new("identity.toml"),
            r#"
[[table]]
name = "observations"
identity = [["checklist_id", "client_observation_id"]]
shared = ["site_id", "observed_window", "species_code"]
reason = "Many participants report the same site."
"#,
        )
        .unwrap();
        assert_eq!(policy.get("observations").unwrap().identity[0], ["checklist_id", "client_observation_id"]);
    }

    #[test]
    fn an_empty_identity_is_pending_not_declared() {
        let policy =
            IdentityPolicy::parse(Path::new("p/identity.toml"), "[[table]]\nname = \"Public.X\"\nidentity = []\n")
                .unwrap();
        assert!(policy.get("x").is_none());
        assert_eq!(policy.pending, ["x"]);
        let note = policy.pending_note("p/identity.toml").unwrap();
        assert!(note.starts_with("p/identity.toml: 1 table(s) still have `identity = []` (x):"), "{note}");
        let many: String = (0..10).map(|i| format!("[[table]]\nname = \"t{i}\"\nidentity = []\n")).collect();
        let note = IdentityPolicy::parse(Path::new("i.toml"), &many).unwrap().pending_note("i.toml").unwrap();
        assert!(note.contains("(t0, t1, t2, t3, t4, t5, t6, t7 and 2 more)"), "{note}");

        let twice = "[[table]]\nname = \"x\"\nidentity = []\n[[table]]\nname = \"x\"\nidentity = [[\"id\"]]\n";
        let err = IdentityPolicy::parse(Path::new("identity.toml"), twice).unwrap_err();
        assert_eq!(err.to_string(), "identity.toml:4: table `x` is declared twice");
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let err = IdentityPolicy::parse(Path::new("p/identity.toml"), "[[table]]\nname = \"x\"\nidentity = [[]]\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "p/identity.toml:1: table `x`: an identity key must list at least one column, e.g. identity = [[\"id\"]]"
        );
        let err = IdentityPolicy::parse(Path::new("identity.toml"), "[[table]]\nname = \"x\"\nidentty = [[\"a\"]]\n")
            .unwrap_err();
        assert!(err.to_string().contains("identity.toml:3: unknown field `identty`"), "{err}");
    }
}

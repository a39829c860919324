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
}

impl IdentityPolicy {
    pub fn parse(path: &Path, text: &str) -> Result<IdentityPolicy> {
        let file: File = parse_toml(path, text)?;
        let mut tables = BTreeMap::new();
        for spanned in file.table {
            let line = Some(line_of_offset(text, spanned.span().start));
            let mut entry = spanned.into_inner();
            let invalid = |message: String| Error::invalid(path, line, message);
            entry.name = normalize(&entry.name);
            if entry.name.is_empty() {
                return Err(invalid("[[table]] needs a `name`".into()));
            }
            if entry.identity.is_empty() || entry.identity.iter().any(|k| k.is_empty()) {
                return Err(invalid(format!(
                    "table `{}`: `identity` must list at least one non-empty key, e.g. identity = [[\"id\"]]",
                    entry.name
                )));
            }
            entry.identity = entry.identity.iter().map(|k| k.iter().map(|c| normalize(c)).collect()).collect();
            entry.shared = entry.shared.iter().map(|c| normalize(c)).collect();
            entry.surrogate = entry.surrogate.iter().map(|c| normalize(c)).collect();
            if tables.contains_key(&entry.name) {
                return Err(invalid(format!("table `{}` is declared twice", entry.name)));
            }
            tables.insert(entry.name.clone(), entry);
        }
        Ok(IdentityPolicy { tables, source: Some(path.display().to_string()) })
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
    fn errors_name_the_file_and_line() {
        let err = IdentityPolicy::parse(Path::new("p/identity.toml"), "[[table]]\nname = \"x\"\nidentity = []\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "p/identity.toml:1: table `x`: `identity` must list at least one non-empty key, e.g. identity = [[\"id\"]]"
        );
        let err = IdentityPolicy::parse(Path::new("identity.toml"), "[[table]]\nname = \"x\"\nidentty = [[\"a\"]]\n")
            .unwrap_err();
        assert!(err.to_string().contains("identity.toml:3: unknown field `identty`"), "{err}");
    }
}

//! `policies/identity.toml`: what identifies a row in the domain, which values many rows
//! legitimately share, and who may approve a change to either. A uniqueness constraint must
//! contain one of the identity keys.

use crate::error::{line_of_offset, parse_toml, Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub const FILE: &str = "identity.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Domain reviewers of every table that names none of its own.
    reviewers: Option<toml::Spanned<Vec<String>>>,
    #[serde(default)]
    table: Vec<toml::Spanned<Entry>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    /// Who may approve a change to this table's identity: GitHub logins or `org/team` entries.
    /// Empty: the file's top-level `reviewers`.
    #[serde(default)]
    pub reviewers: Vec<String>,
    /// Where the entry starts in its file.
    #[serde(skip)]
    pub line: usize,
}

#[derive(Debug, Clone, Default)]
pub struct IdentityPolicy {
    /// By normalized table name.
    pub tables: BTreeMap<String, Entry>,
    /// The top-level `reviewers`: who approves identity changes of tables that name none.
    pub default_reviewers: Vec<String>,
    /// The file it came from, relative path for messages.
    pub source: Option<String>,
    /// Tables listed with `identity = []` (the skeleton `sluice init` writes): not declared yet,
    /// so checked as if absent, and named in a note until someone fills them in.
    pub pending: Vec<String>,
    /// The line of each of `pending`, in order.
    pub pending_lines: Vec<usize>,
}

impl IdentityPolicy {
    pub fn parse(path: &Path, text: &str) -> Result<IdentityPolicy> {
        let file: File = parse_toml(path, text)?;
        let default_reviewers = match &file.reviewers {
            Some(spanned) => reviewers(spanned.get_ref(), path, line_of_offset(text, spanned.span().start))?,
            None => Vec::new(),
        };
        let mut tables = BTreeMap::new();
        let mut pending = Vec::new();
        let mut pending_lines = Vec::new();
        for spanned in file.table {
            let at = line_of_offset(text, spanned.span().start);
            let line = Some(at);
            let mut entry = spanned.into_inner();
            entry.line = at;
            let invalid = |message: String| Error::invalid(path, line, message);
            if entry.name.trim().is_empty() {
                return Err(invalid("[[table]] needs a `name`".into()));
            }
            entry.name = resolve(&entry.name, "a table", path, at)?;
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
                pending_lines.push(at);
                continue;
            }
            let columns = |list: &[String]| -> Result<Vec<String>> {
                list.iter().map(|c| resolve(c, "a column", path, at)).collect()
            };
            entry.identity = entry.identity.iter().map(|k| columns(k)).collect::<Result<_>>()?;
            entry.shared = columns(&entry.shared)?;
            entry.surrogate = columns(&entry.surrogate)?;
            entry.reviewers = reviewers(&entry.reviewers, path, entry.line)?;
            tables.insert(entry.name.clone(), entry);
        }
        Ok(IdentityPolicy {
            tables,
            default_reviewers,
            source: Some(path.display().to_string()),
            pending,
            pending_lines,
        })
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

    /// The tables still to be declared, with their line.
    pub fn pending_entries(&self) -> impl Iterator<Item = (&str, usize)> {
        self.pending.iter().map(String::as_str).zip(self.pending_lines.iter().copied())
    }

    pub fn get(&self, table: &str) -> Option<&Entry> {
        self.tables.get(table)
    }

    /// Who approves a change to `table`'s identity: its own `reviewers`, else the top-level
    /// ones. Empty when neither names anyone (the team has not asked for domain review).
    pub fn reviewers_for(&self, table: &str) -> &[String] {
        match self.get(table) {
            Some(entry) if !entry.reviewers.is_empty() => &entry.reviewers,
            _ => &self.default_reviewers,
        }
    }
}

/// Validates reviewer entries: a GitHub login (`alice`) or a team (`org/team`); a leading `@`,
/// as CODEOWNERS writes them, is dropped. Logins compare case-insensitively, so they are
/// lowercased.
fn reviewers(entries: &[String], path: &Path, line: usize) -> Result<Vec<String>> {
    let login = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let team = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    entries
        .iter()
        .map(|raw| {
            let entry = raw.trim().trim_start_matches('@').to_lowercase();
            let valid = match entry.split_once('/') {
                Some((org, slug)) => login(org) && team(slug),
                None => login(&entry),
            };
            if valid {
                Ok(entry)
            } else {
                Err(Error::invalid(
                    path,
                    Some(line),
                    format!("reviewer `{raw}` is neither a GitHub login (`alice`) nor a team (`org/team`)"),
                ))
            }
        })
        .collect()
}

/// Names in policies are written as SQL writes identifiers and resolve as PostgreSQL resolves
/// them: unquoted ones fold to lower case, quoted ones (`'"Account"'`) are kept; `public.` is
/// implied.
fn resolve(name: &str, what: &str, path: &Path, line: usize) -> Result<String> {
    super::names::resolve(name).ok_or_else(|| {
        Error::invalid(
            path,
            Some(line),
            format!("`{name}` is not {what} name; write it as SQL does (`orders`, `audit.events`, `\"Account\"`)"),
        )
    })
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
    fn reviewers_are_per_table_or_top_level_and_must_be_logins_or_teams() {
        let policy = IdentityPolicy::parse(
            Path::new("identity.toml"),
            "reviewers = [\"@Survey-Org/Data-Stewards\"]\n[[table]]\nname = \"observations\"\nidentity = [[\"id\"]]\nreviewers = [\"Ana\", \"survey-org/survey_domain\"]\n[[table]]\nname = \"sites\"\nidentity = [[\"code\"]]\n",
        )
        .unwrap();
        assert_eq!(policy.reviewers_for("observations"), ["ana", "survey-org/survey_domain"]);
        assert_eq!(policy.reviewers_for("sites"), ["survey-org/data-stewards"]);
        assert_eq!(policy.reviewers_for("undeclared"), ["survey-org/data-stewards"]);
        assert_eq!(policy.get("sites").unwrap().line, 6);
        let err = IdentityPolicy::parse(
            Path::new("p/identity.toml"),
            "[[table]]\nname = \"x\"\nidentity = [[\"id\"]]\nreviewers = [\"ana smith\"]\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "p/identity.toml:1: reviewer `ana smith` is neither a GitHub login (`alice`) nor a team (`org/team`)"
        );
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

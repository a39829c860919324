//! `sluice lint --since VERSION` (or `[migrations] since = "VERSION"`): adopting Sluice on a long
//! history by linting only from one migration on. Every migration before VERSION is still
//! replayed — the schema must be whole — but its findings are not reported.

use super::MigrationSource;
use crate::error::{line_of_offset, Error, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Where the version came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag,
    /// `[migrations] since` in this configuration file.
    Config(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    pub version: String,
    pub origin: Origin,
}

/// Versions are equal when written the same or when their numbers are (`42` and `0042`).
fn same_version(a: &str, b: &str) -> bool {
    let numbers = |v: &str| -> Vec<u128> {
        v.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).filter_map(|p| p.parse().ok()).collect()
    };
    a == b || (!numbers(a).is_empty() && numbers(a) == numbers(b) && a.chars().any(|c| c.is_ascii_digit()))
}

/// The display paths of the migrations that run before `since`: replayed, not reported. An error
/// when no migration has that version (a typo must not silently lint nothing or everything).
pub fn replayed_only(migrations: &[MigrationSource], since: &Since) -> Result<BTreeSet<String>> {
    let Some(start) = migrations.iter().position(|m| same_version(&m.migration.version, &since.version)) else {
        return Err(no_such_version(migrations, since));
    };
    Ok(migrations[..start].iter().map(|m| m.display.clone()).collect())
}

fn no_such_version(migrations: &[MigrationSource], since: &Since) -> Error {
    let known = match (migrations.first(), migrations.last()) {
        (Some(first), Some(last)) => {
            format!("versions run from {} to {}", first.migration.version, last.migration.version)
        }
        _ => "there are no migrations".to_string(),
    };
    match &since.origin {
        Origin::Flag => Error::Usage(format!(
            "--since {}: no migration has version {}; {known} (a version as the layout defines it: a flat file's \
             leading digits, a folder's timestamp, Flyway's V…)",
            since.version, since.version
        )),
        Origin::Config(path) => {
            let line = std::fs::read_to_string(path).ok().and_then(|text| {
                let at = text.lines().position(|l| l.trim_start().starts_with("since"))?;
                Some(line_of_offset(&text, text.lines().take(at).map(|l| l.len() + 1).sum()))
            });
            Error::invalid(
                path,
                line,
                format!("[migrations] since = \"{}\" matches no migration; {known}", since.version),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::migrations::Migration;

    fn migrations(versions: &[&str]) -> Vec<MigrationSource> {
        versions
            .iter()
            .map(|v| {
                let migration = Migration {
                    version: v.to_string(),
                    name: "m".into(),
                    up: PathBuf::from(format!("{v}_m.sql")),
                    down: None,
                    repeatable: false,
                };
                MigrationSource::whole_text(migration, format!("migrations/{v}_m.sql"), "", false)
            })
            .collect()
    }

    #[test]
    fn everything_before_the_version_is_replayed_only() {
        let list = migrations(&["0001", "0002", "0042", "0043"]);
        let since = |v: &str| Since { version: v.into(), origin: Origin::Flag };
        let skipped = replayed_only(&list, &since("0042")).unwrap();
        assert_eq!(skipped, ["migrations/0001_m.sql", "migrations/0002_m.sql"].map(String::from).into());
        assert_eq!(replayed_only(&list, &since("42")).unwrap(), skipped, "the number, however it is padded");
        assert!(replayed_only(&list, &since("0001")).unwrap().is_empty());
    }

    #[test]
    fn a_version_no_migration_has_is_an_error() {
        let list = migrations(&["0001", "0002"]);
        let flag = replayed_only(&list, &Since { version: "0003".into(), origin: Origin::Flag }).unwrap_err();
        assert!(
            flag.to_string().starts_with("--since 0003: no migration has version 0003; versions run from 0001 to 0002"),
            "{flag}"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("sluice.toml");
        std::fs::write(&config, "[migrations]\ndir = \"db\"\nsince = \"9\"\n").unwrap();
        let error = replayed_only(&list, &Since { version: "9".into(), origin: Origin::Config(config.clone()) })
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "{}:3: [migrations] since = \"9\" matches no migration; versions run from 0001 to 0002",
                config.display()
            )
        );
        assert!(!same_version("abc", "abd") && same_version("abc", "abc"));
    }
}

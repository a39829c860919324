//! Prisma Migrate: `prisma/migrations/<timestamp>_<name>/migration.sql` beside
//! `migration_lock.toml`, applied in folder-name order, no down files.
//!
//! How a script reaches PostgreSQL depends on the version. Up to 7.3 the schema engine sends the
//! whole file as one `simple_query` (`sql-schema-connector/src/flavour/postgres/connector/native`,
//! `apply_migration_script`) and opens no transaction: a file holding several statements is one
//! implicit transaction, which is why Prisma users hit "CREATE INDEX CONCURRENTLY cannot run inside
//! a transaction block" unless the index is alone in its migration (prisma/prisma#14456). Since
//! 7.4 (prisma-engines#5767, February 2026) the engine splits the script with its SQL parser and
//! runs each statement on its own, falling back to one string when the parser cannot read a
//! statement (prisma-engines#5847: `DROP INDEX CONCURRENTLY`). Sluice reads the version from the
//! `prisma` dependency in `package.json` (its lowest allowed version); without one it assumes
//! the older behaviour, which flags more.

use super::*;

pub struct Prisma;

/// The lowest version a `package.json` range allows: `^7.4.0` → (7, 4).
fn lowest_version(range: &str) -> Option<(u64, u64)> {
    let start = range.find(|c: char| c.is_ascii_digit())?;
    let mut parts = range[start..].split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// The `prisma` (CLI) dependency's range in `package.json`.
fn prisma_range(package_json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(package_json).ok()?;
    ["dependencies", "devDependencies"]
        .iter()
        .find_map(|section| value.get(section)?.get("prisma")?.as_str().map(str::to_string))
}

impl Tool for Prisma {
    fn layout(&self) -> Layout {
        Layout::Prisma
    }

    fn name(&self) -> &'static str {
        "prisma"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        if tree.has(Path::new("migration_lock.toml")) {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} is Prisma Migrate's lock file", tree.display(Path::new("migration_lock.toml"))),
            }));
        }
        let scripts =
            tree.files().iter().filter(|p| p.components().count() == 2 && file_name(p) == "migration.sql").count();
        Ok((scripts > 0).then(|| Evidence {
            strength: Strength::Names,
            reason: format!("{scripts} `<timestamp>_<name>/migration.sql` folder(s)"),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut migrations: Vec<Migration> = tree
            .files()
            .iter()
            .filter(|p| p.components().count() == 2 && file_name(p) == "migration.sql")
            .map(|p| {
                let folder = p.parent().map(file_name).unwrap_or_default();
                let (version, name) = folder.split_once('_').unwrap_or((folder, folder));
                Migration { version: version.into(), name: name.into(), up: p.clone(), ..Migration::default() }
            })
            .collect();
        migrations.sort_by(|a, b| a.up.cmp(&b.up));
        let mut settings = Settings::default();
        if let Some((dir, text)) = tree.nearby("package.json")? {
            if let Some(range) = prisma_range(&text) {
                let shown = crate::source::slash(&dir.join("package.json"));
                if lowest_version(&range).is_some_and(|v| v >= (7, 4)) {
                    settings.prisma_splits = Some(range.clone());
                }
                settings.sources.push(format!("{shown}: prisma {range}"));
            }
        }
        Ok(Ordered { migrations, settings, ..Ordered::default() })
    }

    fn script(
        &self,
        _m: &Migration,
        text: &str,
        _t: &dyn Tree,
        options: &Options,
        settings: &Settings,
    ) -> Result<Script> {
        let sending = match &settings.prisma_splits {
            Some(version) => Sending::EachStatementIfParsed {
                what: format!("a migration.sql Prisma {version} could not split and sends"),
            },
            None => Sending::OneString { what: "a migration.sql Prisma (before 7.4) sends".into() },
        };
        Ok(Script::whole(text, sending, file_wrap(options, false, "")))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<timestamp>_<name>/migration.sql`, `migration_lock.toml`",
            order: "folder name",
            transactions: "no transaction opened; before 7.4 the file is sent as one query string (several statements = one implicit transaction); from 7.4 each statement on its own unless Prisma's parser fails on one (then one string again). Version read from `package.json`",
            source: "prisma-engines `apply_migration_script`; prisma/prisma#14456; prisma-engines#5767, #5847",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    const TWO: &str =
        "SET lock_timeout = '2s';\nCREATE INDEX CONCURRENTLY \"User_email_idx\" ON \"User\" (\"email\");\n";

    #[test]
    fn folder_order_and_one_string_before_7_4() {
        let tree = MemTree::new(&[
            ("20240102000000_b/migration.sql", TWO),
            ("20240101000000_a/migration.sql", "CREATE TABLE \"User\" (email text);"),
            ("migration_lock.toml", "provider = \"postgresql\""),
        ]);
        assert_eq!(versions(&Prisma, &tree), ["20240101000000", "20240102000000"]);
        assert!(runs(&Prisma, &tree, "20240102000000_b/migration.sql").iter().all(|(_, t)| *t));
        assert_eq!(Prisma.evidence(&tree).unwrap().unwrap().strength, Strength::Marker);
    }

    #[test]
    fn from_7_4_each_statement_runs_alone_unless_one_cannot_be_parsed() {
        let tree = MemTree::new(&[
            ("20240102000000_b/migration.sql", TWO),
            (
                "20240103000000_c/migration.sql",
                "SET lock_timeout = '2s';\nDROP INDEX CONCURRENTLY \"User_email_idx\";\n",
            ),
        ])
        .with_nearby("package.json", "", r#"{"devDependencies": {"prisma": "^7.4.1"}}"#);
        assert!(runs(&Prisma, &tree, "20240102000000_b/migration.sql").iter().all(|(_, t)| !*t));
        assert!(
            runs(&Prisma, &tree, "20240103000000_c/migration.sql").iter().all(|(_, t)| *t),
            "the parser fails on DROP INDEX CONCURRENTLY"
        );
        assert_eq!(lowest_version("~6.19.0"), Some((6, 19)));
    }
}

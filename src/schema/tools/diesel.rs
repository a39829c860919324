//! diesel: `migrations/<version>_<name>/up.sql` (+ `down.sql`, optional `metadata.toml`).
//!
//! - Version: the folder name up to the first `_`, dashes removed; versions are ordered as
//!   strings (`migrations_internals::version_from_string`; `MigrationVersion` compares its text),
//!   so `2017-09-23-182408_b` (version `20170923182408`) runs after `20170804200817_a`.
//! - Each `up.sql` runs in a transaction unless `metadata.toml` says `run_in_transaction = false`
//!   (diesel_migrations `file_based_migrations.rs`); the file is sent whole with
//!   `batch_execute`, so without the transaction several statements still share PostgreSQL's
//!   implicit one (diesel's docs warn: "cannot run inside a transaction block … your migration
//!   likely contains multiple instructions").

use super::*;

pub struct Diesel;

/// `2017-09-23-182408_add_x` → `20170923182408`.
fn version(folder: &str) -> String {
    folder.split('_').next().unwrap_or(folder).replace('-', "")
}

impl Tool for Diesel {
    fn layout(&self) -> Layout {
        Layout::Diesel
    }

    fn name(&self) -> &'static str {
        "diesel"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let ups = tree.files().iter().filter(|p| p.components().count() == 2 && file_name(p) == "up.sql").count();
        if ups == 0 {
            return Ok(None);
        }
        if tree.nearby("diesel.toml")?.is_some() {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: "diesel.toml beside the `<version>_name/up.sql` folders".into(),
            }));
        }
        if let Some(manifest) = manifest_naming(tree, &["Cargo.toml"], "diesel")? {
            return Ok(Some(Evidence {
                strength: Strength::Manifest,
                reason: format!("{manifest} depends on diesel"),
            }));
        }
        Ok(Some(Evidence { strength: Strength::Names, reason: format!("{ups} `<version>_name/up.sql` folder(s)") }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut migrations: Vec<Migration> = tree
            .files()
            .iter()
            .filter(|p| p.components().count() == 2 && file_name(p) == "up.sql")
            .map(|up| {
                let folder = up.parent().map(file_name).unwrap_or_default();
                let name = folder.split_once('_').map(|(_, n)| n).unwrap_or(folder);
                let down = up.with_file_name("down.sql");
                Migration {
                    version: version(folder),
                    name: name.into(),
                    up: up.clone(),
                    down: tree.has(&down).then_some(down),
                    ..Migration::default()
                }
            })
            .collect();
        migrations.sort_by(|a, b| a.version.cmp(&b.version).then_with(|| a.up.cmp(&b.up)));
        Ok(Ordered { migrations, ..Ordered::default() })
    }

    fn script(&self, m: &Migration, text: &str, tree: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let metadata = tree.read(&m.up.with_file_name("metadata.toml"))?;
        // diesel reads it with `unwrap_or_default`: an unreadable file means the default (a transaction).
        let opted_out = metadata
            .and_then(|m| m.parse::<toml::Table>().ok())
            .and_then(|t| t.get("run_in_transaction").and_then(toml::Value::as_bool))
            == Some(false);
        let wrap = if opted_out {
            None
        } else {
            file_wrap(
                options,
                true,
                "diesel runs each up.sql in a transaction (no `run_in_transaction = false` in metadata.toml)",
            )
        };
        Ok(Script::whole(text, Sending::OneString { what: "an up.sql diesel sends".into() }, wrap))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<version>_<name>/up.sql`, `down.sql`, `metadata.toml`",
            order: "version = folder name up to the first `_`, dashes removed, compared as text",
            transactions: "each file in a transaction; `run_in_transaction = false` in `metadata.toml` opts out, and then a multi-statement file is still one implicit transaction (sent whole with `batch_execute`)",
            source: "diesel_migrations `file_based_migrations.rs` and `migrations_internals::version_from_string`",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    /// Issue 9, item 1: diesel compares `2017-09-23-182408` as `20170923182408`, after `20170804200817`.
    #[test]
    fn mixed_version_styles_order_as_diesel_orders_them() {
        let tree = MemTree::new(&[
            ("20170804200817_a/up.sql", "CREATE TABLE emails (id bigint PRIMARY KEY, created_at timestamp NOT NULL);"),
            ("2017-09-23-182408_b/up.sql", "ALTER TABLE emails ALTER COLUMN created_at TYPE timestamptz;"),
            ("2017-09-23-182408_b/down.sql", "ALTER TABLE emails ALTER COLUMN created_at TYPE timestamp;"),
            ("00000000000000_diesel_initial_setup/up.sql", "SELECT 1;"),
        ]);
        assert_eq!(
            ups(&Diesel, &tree),
            ["00000000000000_diesel_initial_setup/up.sql", "20170804200817_a/up.sql", "2017-09-23-182408_b/up.sql"]
        );
        assert_eq!(versions(&Diesel, &tree)[2], "20170923182408");
        let ordered = Diesel.order(&tree).unwrap();
        assert_eq!(ordered.migrations[2].down, Some(PathBuf::from("2017-09-23-182408_b/down.sql")));
    }

    #[test]
    fn metadata_opts_out_of_the_transaction_but_not_out_of_the_implicit_one() {
        let sql = "SET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY i ON t (a);";
        let tree = MemTree::new(&[("2024-01-01-000000_i/up.sql", sql)]);
        assert!(runs(&Diesel, &tree, "2024-01-01-000000_i/up.sql").iter().all(|(_, t)| *t));
        let script = script_of(&Diesel, &tree, "2024-01-01-000000_i/up.sql");
        assert!(script.pieces[0].transaction.is_some());
        let tree = MemTree::new(&[
            ("2024-01-01-000000_i/up.sql", sql),
            ("2024-01-01-000000_i/metadata.toml", "run_in_transaction = false\n"),
        ]);
        let script = script_of(&Diesel, &tree, "2024-01-01-000000_i/up.sql");
        assert!(script.pieces[0].transaction.is_none());
        assert!(
            runs(&Diesel, &tree, "2024-01-01-000000_i/up.sql").iter().all(|(_, t)| *t),
            "two statements, one string"
        );
        let tree = MemTree::new(&[
            ("2024-01-01-000000_i/up.sql", "CREATE INDEX CONCURRENTLY i ON t (a);"),
            ("2024-01-01-000000_i/metadata.toml", "run_in_transaction = false\n"),
        ]);
        assert_eq!(
            runs(&Diesel, &tree, "2024-01-01-000000_i/up.sql"),
            [("CREATE INDEX CONCURRENTLY i ON t (a)".into(), false)]
        );
    }
}

//! golang-migrate: `<version>_<title>.up.sql` / `.down.sql`, versions unsigned integers in
//! numeric order (`source/parse.go`). The PostgreSQL driver sends the whole file as one query
//! string (`database/postgres/postgres.go`, `Run` → `ExecContext(query)` with lib/pq's simple
//! protocol) and opens no transaction: a file holding several statements is one implicit
//! transaction, a file holding one is not in any. (`x-multi-statement=true` in the database URL
//! makes the driver split on `;` and send statements one by one; Sluice replays the default.)

use super::*;

pub struct GolangMigrate;

/// `12_add_users.up.sql` → (`12`, `add_users`).
fn parse(name: &str) -> Option<(&str, &str)> {
    let stem = name.strip_suffix(".up.sql")?;
    let (version, title) = stem.split_once('_')?;
    (!version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())).then_some((version, title))
}

impl Tool for GolangMigrate {
    fn layout(&self) -> Layout {
        Layout::GolangMigrate
    }

    fn name(&self) -> &'static str {
        "golang-migrate"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let ups = top_level(tree).filter(|p| parse(file_name(p)).is_some()).count();
        if ups == 0 {
            return Ok(None);
        }
        if let Some(manifest) = manifest_naming(tree, &["go.mod"], "github.com/golang-migrate/migrate")? {
            return Ok(Some(Evidence {
                strength: Strength::Manifest,
                reason: format!("{manifest} requires golang-migrate"),
            }));
        }
        Ok(Some(Evidence { strength: Strength::Names, reason: format!("{ups} `<version>_<title>.up.sql` file(s)") }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut migrations: Vec<Migration> = top_level(tree)
            .filter_map(|p| {
                let (version, title) = parse(file_name(p))?;
                let down = PathBuf::from(format!("{version}_{title}.down.sql"));
                Some(Migration {
                    version: version.into(),
                    name: title.into(),
                    up: p.clone(),
                    down: tree.has(&down).then_some(down),
                    ..Migration::default()
                })
            })
            .collect();
        migrations.sort_by(|a, b| compare_numbers(&a.version, &b.version).then_with(|| a.up.cmp(&b.up)));
        Ok(Ordered { migrations, ..Ordered::default() })
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        Ok(Script::whole(
            text,
            Sending::OneString { what: "a file golang-migrate sends".into() },
            file_wrap(options, false, ""),
        ))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<version>_<title>.up.sql` / `.down.sql`",
            order: "version (unsigned integer) numerically",
            transactions: "none opened, but the file is sent as one query string: several statements are one implicit transaction (CREATE INDEX CONCURRENTLY fails, locks last to the end of the file), one statement autocommits",
            source: "golang-migrate `source/parse.go`, `database/postgres/postgres.go` (`Run`)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn numeric_order_and_down_files() {
        let tree = MemTree::new(&[("10_b.up.sql", ""), ("9_a.up.sql", ""), ("9_a.down.sql", "")]);
        assert_eq!(versions(&GolangMigrate, &tree), ["9", "10"]);
        assert_eq!(GolangMigrate.order(&tree).unwrap().migrations[0].down, Some(PathBuf::from("9_a.down.sql")));
    }

    /// Issue 9, item 2: a multi-statement file is one implicit transaction; a single statement is in none.
    #[test]
    fn a_multi_statement_file_is_one_implicit_transaction() {
        let tree = MemTree::new(&[
            ("1_idx.up.sql", "SET lock_timeout = '2s';\nCREATE INDEX CONCURRENTLY i ON t (a);\n"),
            ("2_idx.up.sql", "CREATE INDEX CONCURRENTLY j ON t (b);\n"),
        ]);
        assert_eq!(runs(&GolangMigrate, &tree, "1_idx.up.sql").iter().filter(|(_, t)| *t).count(), 2);
        assert_eq!(
            runs(&GolangMigrate, &tree, "2_idx.up.sql"),
            [("CREATE INDEX CONCURRENTLY j ON t (b)".into(), false)]
        );
    }
}

//! golang-migrate: `<version>_<title>.up.<ext>` / `.down.<ext>`, versions unsigned integers in
//! numeric order. Its file source takes any extension: `source/parse.go` matches file names with
//! `^([0-9]+)_(.*)\.(down|up)\.(.*)$` (the title greedy, so the last `.up.` / `.down.` decides),
//! `source/iofs/iofs.go` (`PartialDriver.Init`) lists the directory's own files, skips what does
//! not match and refuses two files of one version and direction (`ErrDuplicateMigration`), and
//! the driver runs the file's text whatever it is called: `1_x.up.SQL`, `.up.psql` and `.up.txt`
//! are migrations. The PostgreSQL driver sends the whole file as one query string
//! (`database/postgres/postgres.go`, `Run` → `ExecContext(query)` with lib/pq's simple protocol)
//! and opens no transaction: a file holding several statements is one implicit transaction, a
//! file holding one is not in any. (`x-multi-statement=true` in the database URL makes the driver
//! split on `;` and send statements one by one; Sluice replays the default.)

use super::*;

pub struct GolangMigrate;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Up,
    Down,
}

/// A file name as golang-migrate's `source.Parse` reads it: `12_add_users.up.sql` → (`12`,
/// `add_users`, up). The version must fit an unsigned 64-bit integer (`strconv.ParseUint`).
fn parse(name: &str) -> Option<(&str, &str, Direction)> {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    let rest = name[digits..].strip_prefix('_')?;
    let version = &name[..digits];
    version.parse::<u64>().ok()?;
    // The title is greedy: the last `.up.` or `.down.` is the direction.
    let up = rest.rfind(".up.").map(|at| (at, Direction::Up));
    let down = rest.rfind(".down.").map(|at| (at, Direction::Down));
    let (at, direction) = up.into_iter().chain(down).max_by_key(|(at, _)| *at)?;
    Some((version, &rest[..at], direction))
}

/// The version's value: `0010` and `10` are one version to golang-migrate.
fn value(version: &str) -> u64 {
    version.parse().unwrap_or(u64::MAX)
}

impl Tool for GolangMigrate {
    fn layout(&self) -> Layout {
        Layout::GolangMigrate
    }

    fn name(&self) -> &'static str {
        "golang-migrate"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let ups = top_level(tree).filter(|p| parse(file_name(p)).is_some_and(|(_, _, d)| d == Direction::Up)).count();
        if ups == 0 {
            return Ok(None);
        }
        if let Some(manifest) = manifest_naming(tree, &["go.mod"], "github.com/golang-migrate/migrate")? {
            return Ok(Some(Evidence {
                strength: Strength::Manifest,
                reason: format!("{manifest} requires golang-migrate"),
            }));
        }
        Ok(Some(Evidence { strength: Strength::Names, reason: format!("{ups} `<version>_<title>.up.<ext>` file(s)") }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut ups = Vec::new();
        let mut downs: Vec<(u64, &PathBuf)> = Vec::new();
        for path in top_level(tree) {
            match parse(file_name(path)) {
                Some((version, title, Direction::Up)) => ups.push((version, title, path)),
                Some((version, _, Direction::Down)) => downs.push((value(version), path)),
                None => {}
            }
        }
        let mut migrations: Vec<Migration> = ups
            .into_iter()
            .map(|(version, title, path)| Migration {
                version: version.into(),
                name: title.into(),
                up: path.clone(),
                down: downs.iter().find(|(v, _)| *v == value(version)).map(|(_, p)| (*p).clone()),
                ..Migration::default()
            })
            .collect();
        migrations.sort_by(|a, b| compare_numbers(&a.version, &b.version).then_with(|| a.up.cmp(&b.up)));
        let mut notices = Vec::new();
        for pair in migrations.windows(2) {
            if value(&pair[0].version) == value(&pair[1].version) {
                notices.push(ignored(
                    &pair[1].up,
                    format!(
                        "golang-migrate refuses to run any migration: {} and {} are both the up migration of \
                         version {} (ErrDuplicateMigration)",
                        tree.display(&pair[0].up),
                        tree.display(&pair[1].up),
                        value(&pair[1].version)
                    ),
                ));
            }
        }
        Ok(Ordered { migrations, notices, ..Ordered::default() })
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
            files: "`<version>_<title>.up.<ext>` / `.down.<ext>`, any extension (`.sql`, `.SQL`, `.psql`, `.txt`)",
            order: "version (unsigned integer) numerically",
            transactions: "none opened, but the file is sent as one query string: several statements are one implicit transaction (CREATE INDEX CONCURRENTLY fails, locks last to the end of the file), one statement autocommits",
            source: "golang-migrate `source/parse.go` (`Regex`), `source/iofs/iofs.go` (`Init`), `database/postgres/postgres.go` (`Run`)",
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

    /// Issue 38, item 4: golang-migrate runs whatever its file name pattern matches.
    #[test]
    fn any_extension_is_a_migration_and_the_last_direction_counts() {
        let tree = MemTree::new(&[
            ("1_a.up.SQL", ""),
            ("2_b.up.psql", ""),
            ("3_c.up.txt", ""),
            ("3_c.down.txt", ""),
            ("4_d.down.x.up.sql", ""),
            ("5_e.up.x.down.sql", ""),
            ("6_f.sql", ""),
            ("g_7.up.sql", ""),
            ("99999999999999999999_too_big.up.sql", ""),
        ]);
        assert_eq!(versions(&GolangMigrate, &tree), ["1", "2", "3", "4"]);
        let ordered = GolangMigrate.order(&tree).unwrap();
        assert_eq!(ordered.migrations[2].down, Some(PathBuf::from("3_c.down.txt")));
        assert_eq!(ordered.migrations[3].name, "d.down.x");
        assert!(ordered.notices.is_empty());
    }

    #[test]
    fn two_up_files_of_one_version_are_refused() {
        let tree = MemTree::new(&[("0010_a.up.sql", ""), ("10_a.up.txt", "")]);
        let ordered = GolangMigrate.order(&tree).unwrap();
        assert_eq!(ordered.notices.len(), 1);
        assert!(ordered.notices[0].1.contains("ErrDuplicateMigration"), "{:?}", ordered.notices);
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

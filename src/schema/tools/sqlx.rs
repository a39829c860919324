//! sqlx (`sqlx migrate run`, `sqlx::migrate!`): `<version>_<description>.sql`, or reversible
//! `.up.sql` / `.down.sql`; the version, everything before the first `_`, is a signed 64-bit
//! integer, ordered numerically (`sqlx-core/src/migrate/source.rs`). Each migration runs in a
//! transaction unless the file starts with `-- no-transaction`; the file is sent whole
//! (`conn.execute(sql)`, the simple protocol), so without the transaction several statements are
//! still one implicit transaction (`sqlx-postgres/src/migrate.rs`).

use super::*;

pub struct Sqlx;

/// (version, description, reversible up, down) for a sqlx file name.
fn parse(name: &str) -> Option<(i64, &str, bool, bool)> {
    let (version, rest) = name.split_once('_')?;
    let rest = rest.strip_suffix(".sql")?;
    let version: i64 = version.parse().ok()?;
    Some(match rest.strip_suffix(".up") {
        Some(description) => (version, description, true, false),
        None => match rest.strip_suffix(".down") {
            Some(description) => (version, description, false, true),
            None => (version, rest, false, false),
        },
    })
}

impl Tool for Sqlx {
    fn layout(&self) -> Layout {
        Layout::Sqlx
    }

    fn name(&self) -> &'static str {
        "sqlx"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let fitting: Vec<&PathBuf> = top_level(tree).filter(|p| parse(file_name(p)).is_some()).collect();
        if fitting.is_empty() {
            return Ok(None);
        }
        if let Some(path) = first_marked(tree, &fitting, |text| text.starts_with("-- no-transaction"))? {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} starts with sqlx's `-- no-transaction`", tree.display(path)),
            }));
        }
        if let Some(manifest) = manifest_naming(tree, &["Cargo.toml"], "sqlx")? {
            return Ok(Some(Evidence { strength: Strength::Manifest, reason: format!("{manifest} depends on sqlx") }));
        }
        // Plain `<version>_name.sql` files fit every tool: only reversible pairs point at sqlx.
        let reversible = fitting.iter().filter(|p| file_name(p).ends_with(".up.sql")).count();
        Ok((reversible > 0).then(|| Evidence {
            strength: Strength::Names,
            reason: format!("{reversible} `<version>_<description>.up.sql` file(s)"),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut ordered = Ordered::default();
        let mut keyed: Vec<(i64, Migration)> = Vec::new();
        for path in top_level(tree).filter(|p| is_sql(p)) {
            let name = file_name(path);
            match parse(name) {
                Some((version, description, up, down)) if !down => {
                    let down = up.then(|| PathBuf::from(name.replace(".up.sql", ".down.sql"))).filter(|d| tree.has(d));
                    keyed.push((
                        version,
                        Migration {
                            version: version.to_string(),
                            name: description.into(),
                            up: path.clone(),
                            down,
                            ..Migration::default()
                        },
                    ));
                }
                Some(_) => {}
                None if name.contains('_') => ordered.notices.push(ignored(
                    path,
                    "sqlx refuses the directory: the part before the first `_` is not an integer version",
                )),
                None => {}
            }
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.up.cmp(&b.1.up)));
        ordered.migrations = keyed.into_iter().map(|(_, m)| m).collect();
        Ok(ordered)
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let wrap = if text.starts_with("-- no-transaction") {
            None
        } else {
            file_wrap(
                options,
                true,
                "sqlx runs each migration in a transaction (the file does not start with `-- no-transaction`)",
            )
        };
        Ok(Script::whole(text, Sending::OneString { what: "a file sqlx sends".into() }, wrap))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`<version>_<description>.sql`, or `.up.sql` / `.down.sql`",
            order: "version (signed 64-bit integer) numerically",
            transactions: "each file in a transaction unless it starts with `-- no-transaction`; the file is sent whole, so a multi-statement file is then still one implicit transaction",
            source: "sqlx `sqlx-core/src/migrate/source.rs`, `sqlx-postgres/src/migrate.rs`",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn signed_versions_in_numeric_order_with_reversible_pairs() {
        let tree = MemTree::new(&[
            ("20_b.sql", ""),
            ("3_a.up.sql", ""),
            ("3_a.down.sql", ""),
            ("-1_zero.sql", ""),
            ("schema_dump.sql", ""),
        ]);
        let ordered = Sqlx.order(&tree).unwrap();
        assert_eq!(ordered.migrations.iter().map(|m| m.version.as_str()).collect::<Vec<_>>(), ["-1", "3", "20"]);
        assert_eq!(ordered.migrations[1].down, Some(PathBuf::from("3_a.down.sql")));
        assert_eq!(ordered.notices.len(), 1, "schema_dump.sql: sqlx refuses a non-integer version");
    }

    #[test]
    fn no_transaction_on_the_first_line_opts_out() {
        let tree = MemTree::new(&[
            ("1_a.sql", "-- no-transaction\nCREATE INDEX CONCURRENTLY i ON t (a);"),
            ("2_b.sql", "CREATE TABLE t (a int);"),
        ]);
        assert_eq!(runs(&Sqlx, &tree, "1_a.sql"), [("CREATE INDEX CONCURRENTLY i ON t (a)".into(), false)]);
        assert_eq!(runs(&Sqlx, &tree, "2_b.sql"), [("CREATE TABLE t (a int)".into(), true)]);
        assert_eq!(Sqlx.evidence(&tree).unwrap().unwrap().strength, Strength::Marker);
    }
}

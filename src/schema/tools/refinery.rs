//! refinery: `V<n>__<name>.sql` and `U<n>__<name>.sql` (U is "unversioned": a migration that may
//! be applied out of order, not an undo), found recursively, all ordered by their integer version
//! (`refinery_core/src/util.rs`, `runner.rs`). Each migration runs in its own transaction
//! (`Transaction::execute`: `batch_execute` inside `transaction()`), or all of them in one with
//! `Runner::set_grouped(true)`; refinery has no per-file opt-out, so a concurrent index can never
//! be built by it. Rust migrations (`.rs`) are not replayed.

use super::*;

pub struct Refinery;

/// refinery's `^([U|V])(\d+(?:\.\d+)?)__(\w+)`: (version, name), the version an integer.
fn parse(name: &str) -> Option<std::result::Result<(i64, &str), String>> {
    let (stem, extension) = name.rsplit_once('.')?;
    if !matches!(extension, "sql" | "rs") || !stem.starts_with(['V', 'U']) {
        return None;
    }
    let (version, title) = stem[1..].split_once("__")?;
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_digit() || c == '.') || !word(title) {
        return None;
    }
    Some(
        version
            .parse::<i64>()
            .map(|v| (v, title))
            .map_err(|_| format!("refinery rejects version `{version}`: versions are integers")),
    )
}

impl Tool for Refinery {
    fn layout(&self) -> Layout {
        Layout::Refinery
    }

    fn name(&self) -> &'static str {
        "refinery"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let scripts: Vec<&PathBuf> =
            tree.files().iter().filter(|p| matches!(parse(file_name(p)), Some(Ok(_)))).collect();
        if scripts.is_empty() {
            return Ok(None);
        }
        if let Some(rust) = scripts.iter().find(|p| p.extension().is_some_and(|e| e == "rs")) {
            return Ok(Some(Evidence {
                strength: Strength::Marker,
                reason: format!("{} is a refinery Rust migration", tree.display(rust)),
            }));
        }
        if let Some(manifest) = manifest_naming(tree, &["Cargo.toml"], "refinery")? {
            return Ok(Some(Evidence {
                strength: Strength::Manifest,
                reason: format!("{manifest} depends on refinery"),
            }));
        }
        Ok(Some(Evidence {
            strength: Strength::Names,
            reason: format!("{} `V<n>__<name>.sql` file(s)", scripts.len()),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let mut ordered = Ordered::default();
        let mut keyed = Vec::new();
        for path in tree.files() {
            match parse(file_name(path)) {
                Some(Ok((version, title))) if is_sql(path) => {
                    keyed.push((version, Migration { version: version.to_string(), name: title.into(), up: path.clone(), ..Migration::default() }))
                }
                Some(Ok(_)) => ordered.notices.push(ignored(path, "refinery runs this Rust migration; Sluice replays SQL only, so what it does to the schema was not checked")),
                Some(Err(why)) => ordered.notices.push(ignored(path, why)),
                None => {}
            }
        }
        keyed.sort_by_key(|k| k.0);
        ordered.migrations = keyed.into_iter().map(|(_, m)| m).collect();
        Ok(ordered)
    }

    fn script(&self, _m: &Migration, text: &str, _t: &dyn Tree, options: &Options, _s: &Settings) -> Result<Script> {
        let wrap =
            file_wrap(options, true, "refinery runs each migration in a transaction (it has no per-file opt-out)");
        Ok(Script::whole(text, Sending::OneString { what: "a file refinery sends".into() }, wrap))
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`V<n>__<name>.sql`, `U<n>__<name>.sql` (unversioned, not undo), in subdirectories too",
            order: "version (integer) numerically, V and U together",
            transactions: "each file in a transaction (`set_grouped(true)`: all in one); no per-file opt-out",
            source: "refinery `refinery_core/src/util.rs`, `runner.rs`, `drivers/postgres.rs`; README (grouped)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn unversioned_files_are_migrations_in_version_order() {
        let tree = MemTree::new(&[
            ("V1__a.sql", ""),
            ("U3__c.sql", ""),
            ("nested/V2__b.sql", ""),
            ("V1.5__x.sql", ""),
            ("V4__code.rs", ""),
        ]);
        let ordered = Refinery.order(&tree).unwrap();
        assert_eq!(ordered.migrations.iter().map(|m| m.version.as_str()).collect::<Vec<_>>(), ["1", "2", "3"]);
        assert_eq!(ordered.notices.len(), 2, "the dotted version and the Rust migration are reported");
        let tree = MemTree::new(&[("V1__i.sql", "CREATE INDEX CONCURRENTLY i ON t (a);")]);
        assert!(runs(&Refinery, &tree, "V1__i.sql")[0].1, "always in a transaction");
    }
}

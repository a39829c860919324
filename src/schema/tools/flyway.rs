//! Flyway: versioned `V<version>__<description>.sql`, undo `U<version>__…` (its down file),
//! baseline `B<version>__…` and repeatable `R__<description>.sql`, found recursively under the
//! locations of `flyway.conf` (`flyway.locations=filesystem:…`) or `flyway.toml` (`[flyway]
//! locations = […]`), else the migrations directory. Versions are compared part by part (`.` or
//! `_`), numerically; repeatables run after every versioned migration, in description order.
//!
//! A baseline migration stands for the database after every versioned migration up to its
//! version (Flyway docs, "Baseline migrations"): a new database starts from the latest one, and
//! the versioned migrations at or below it are ignored. Sluice replays the history that way —
//! the latest baseline, then the versioned migrations above it — and names each script it
//! leaves out (an older baseline, a versioned script the baseline stands for).
//!
//! Each script runs in a transaction, except that Flyway's PostgreSQL parser marks statements
//! that cannot (`PostgreSQLParser.detectCanExecuteInTransaction`: CREATE/DROP INDEX CONCURRENTLY,
//! CREATE/DROP DATABASE/TABLESPACE/SUBSCRIPTION, ALTER SYSTEM, REINDEX SCHEMA/DATABASE/SYSTEM,
//! VACUUM, DISCARD ALL, ALTER TYPE … ADD VALUE before PostgreSQL 12): a script holding one runs
//! without a transaction, and a script mixing both kinds is refused unless `mixed = true`
//! (`ParserSqlScript.parse`). `<script>.conf` with `executeInTransaction=false|true` decides
//! instead. Statements are sent one by one.

use super::*;
use crate::sql::split::split;
use sqlparser::tokenizer::Token;

pub struct Flyway;

/// `V1_2__add_users.sql` → (`V`, `1.2`, `add_users`); `R__views.sql` → (`R`, ``, `views`).
fn parse(name: &str) -> Option<(char, String, &str)> {
    let stem = name.strip_suffix(".sql")?;
    let prefix = stem.chars().next()?;
    let rest = &stem[1..];
    let (version, description) = rest.split_once("__")?;
    match prefix {
        'R' if version.is_empty() => Some(('R', String::new(), description)),
        'V' | 'U' | 'B'
            if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '_') =>
        {
            Some((prefix, version.replace('_', "."), description))
        }
        _ => None,
    }
}

/// Compares Flyway versions part by part, numerically; missing parts count as 0 (`1` = `1.0`).
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| v.split('.').map(|p| p.to_string()).collect::<Vec<_>>();
    let (a, b) = (parts(a), parts(b));
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).map(String::as_str).unwrap_or("0");
        let y = b.get(i).map(String::as_str).unwrap_or("0");
        match compare_numbers(x, y) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

/// Flyway's configuration as far as Sluice needs it.
#[derive(Default)]
struct Config {
    /// Directories (relative to the migrations directory) to search; empty: the whole directory.
    locations: Vec<PathBuf>,
    mixed: bool,
    source: Option<String>,
}

fn config(tree: &dyn Tree) -> Result<Config> {
    let mut config = Config::default();
    let mut raw_locations: Vec<(String, usize)> = Vec::new();
    let (holder, file, text) = if let Some((holder, text)) = tree.nearby("flyway.conf")? {
        (holder, "flyway.conf", text)
    } else if let Some((holder, text)) = tree.nearby("flyway.toml")? {
        (holder, "flyway.toml", text)
    } else {
        return Ok(config);
    };
    let shown = crate::source::slash(&holder.join(file));
    if file == "flyway.conf" {
        for (number, line) in text.lines().enumerate() {
            let Some((key, value)) = line.split_once('=') else { continue };
            match key.trim() {
                "flyway.locations" => {
                    raw_locations.extend(value.split(',').map(|v| (v.trim().to_string(), number + 1)))
                }
                "flyway.mixed" => config.mixed = value.trim().eq_ignore_ascii_case("true"),
                _ => {}
            }
        }
    } else {
        let table: toml::Table = crate::error::parse_toml(Path::new(&shown), &text)?;
        let flyway = table.get("flyway").and_then(toml::Value::as_table);
        if let Some(locations) = flyway.and_then(|f| f.get("locations")).and_then(toml::Value::as_array) {
            let line = text.lines().position(|l| l.trim_start().starts_with("locations")).map(|i| i + 1).unwrap_or(1);
            raw_locations.extend(locations.iter().filter_map(|v| v.as_str()).map(|v| (v.to_string(), line)));
        }
        config.mixed = flyway.and_then(|f| f.get("mixed")).and_then(toml::Value::as_bool).unwrap_or(false);
    }
    for (location, line) in raw_locations {
        let path = match location.split_once(':') {
            Some(("filesystem", path)) => holder.join(path),
            // classpath:db/migration is Maven's src/main/resources/db/migration.
            Some(("classpath", path)) => holder.join("src/main/resources").join(path),
            None => holder.join("src/main/resources").join(&location),
            Some(_) => continue,
        };
        let relative = tree::normalize(&path).and_then(|p| p.strip_prefix(tree.dir()).ok().map(Path::to_path_buf));
        match relative {
            Some(relative) => config.locations.push(relative),
            None => {
                return Err(Error::invalid(
                    Path::new(&shown),
                    Some(line),
                    format!(
                        "location `{location}` is outside the migrations directory {}; set [migrations] dir in \
                         sluice.toml to a directory that holds every Flyway location",
                        tree.display(Path::new(""))
                    ),
                ))
            }
        }
    }
    config.source = Some(shown);
    Ok(config)
}

fn in_locations(path: &Path, locations: &[PathBuf]) -> bool {
    locations.is_empty() || locations.iter().any(|l| path.starts_with(l))
}

/// Whether Flyway's PostgreSQL parser says a statement cannot run in a transaction.
fn non_transactional(words: &[String], postgres_version: u32) -> bool {
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    match (w(0), w(1), w(2)) {
        ("CREATE" | "DROP", "DATABASE" | "TABLESPACE" | "SUBSCRIPTION", _) => true,
        ("ALTER", "SYSTEM", _) => true,
        ("CREATE" | "DROP", "INDEX", "CONCURRENTLY") => true,
        ("CREATE", "UNIQUE", "INDEX") => w(3) == "CONCURRENTLY",
        ("REINDEX", "VERBOSE", what) => matches!(what, "SCHEMA" | "DATABASE" | "SYSTEM"),
        ("REINDEX", what, _) => matches!(what, "SCHEMA" | "DATABASE" | "SYSTEM"),
        ("VACUUM", _, _) => true,
        ("DISCARD", "ALL", _) => true,
        ("ALTER", "TYPE", _) => postgres_version < 12 && words.windows(2).any(|p| p[0] == "ADD" && p[1] == "VALUE"),
        _ => false,
    }
}

/// `executeInTransaction` from the script's `.conf` file, when set.
fn script_config(tree: &dyn Tree, up: &Path) -> Result<Option<bool>> {
    let conf = PathBuf::from(format!("{}.conf", up.display()));
    let Some(text) = tree.read(&conf)? else { return Ok(None) };
    Ok(text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "executeInTransaction").then(|| value.trim().eq_ignore_ascii_case("true"))
    }))
}

impl Tool for Flyway {
    fn layout(&self) -> Layout {
        Layout::Flyway
    }

    fn name(&self) -> &'static str {
        "flyway"
    }

    fn evidence(&self, tree: &dyn Tree) -> Result<Option<Evidence>> {
        let scripts: Vec<(&PathBuf, (char, String, &str))> =
            tree.files().iter().filter_map(|p| Some((p, parse(file_name(p))?))).collect();
        for name in ["flyway.conf", "flyway.toml"] {
            if let Some((dir, _)) = tree.nearby(name)? {
                return Ok(Some(Evidence {
                    strength: Strength::Marker,
                    reason: format!("{} configures Flyway", crate::source::slash(&dir.join(name))),
                }));
            }
        }
        if scripts.is_empty() {
            return Ok(None);
        }
        let marker = scripts.iter().find_map(|(path, (prefix, version, _))| {
            let shown = tree.display(path);
            match prefix {
                'R' => Some(format!("{shown} is a Flyway repeatable migration")),
                'B' => Some(format!("{shown} is a Flyway baseline migration")),
                'V' if version.contains('.') => {
                    Some(format!("{shown} has a dotted version, which only Flyway accepts"))
                }
                'U' if scripts.iter().any(|(_, (p, v, _))| *p == 'V' && compare_versions(v, version).is_eq()) => {
                    Some(format!("{shown} undoes a versioned migration, as Flyway's undo files do"))
                }
                _ => tree
                    .has(Path::new(&format!("{}.conf", path.display())))
                    .then(|| format!("{shown}.conf configures a Flyway script")),
            }
        });
        if let Some(reason) = marker {
            return Ok(Some(Evidence { strength: Strength::Marker, reason }));
        }
        if let Some(manifest) = manifest_naming(tree, &["pom.xml", "build.gradle", "build.gradle.kts"], "flyway")? {
            return Ok(Some(Evidence { strength: Strength::Manifest, reason: format!("{manifest} uses Flyway") }));
        }
        Ok(Some(Evidence {
            strength: Strength::Names,
            reason: format!("{} `V<version>__<description>.sql` file(s)", scripts.len()),
        }))
    }

    fn order(&self, tree: &dyn Tree) -> Result<Ordered> {
        let config = config(tree)?;
        let mut versioned = Vec::new();
        let mut repeatable = Vec::new();
        let mut notices = Vec::new();
        let scripts: Vec<(&PathBuf, (char, String, &str))> = tree
            .files()
            .iter()
            .filter(|p| in_locations(p, &config.locations))
            .filter_map(|p| Some((p, parse(file_name(p))?)))
            .collect();
        for (path, (prefix, version, description)) in &scripts {
            let migration = Migration {
                version: version.clone(),
                name: description.to_string(),
                up: (*path).clone(),
                ..Migration::default()
            };
            match prefix {
                'V' => {
                    let undo = scripts
                        .iter()
                        .find(|(_, (p, v, _))| *p == 'U' && compare_versions(v, version).is_eq())
                        .map(|(p, _)| (*p).clone());
                    versioned.push(Migration { down: undo, ..migration });
                }
                'R' => {
                    repeatable.push(Migration { version: format!("R__{description}"), repeatable: true, ..migration })
                }
                _ => {}
            }
        }
        versioned.sort_by(|a, b| compare_versions(&a.version, &b.version).then_with(|| a.up.cmp(&b.up)));
        let baseline = scripts
            .iter()
            .filter(|(_, (prefix, _, _))| *prefix == 'B')
            .max_by(|(_, (_, a, _)), (_, (_, b, _))| compare_versions(a, b));
        if let Some((path, (_, version, description))) = baseline {
            let shown = file_name(path);
            for (other, (prefix, other_version, _)) in &scripts {
                let below = compare_versions(other_version, version).is_le();
                if *prefix == 'B' && other != path {
                    notices.push(ignored(other, format!("Flyway applies only the latest baseline migration, {shown}, to a new database; this one is never run, and Sluice replays {shown} instead")));
                } else if *prefix == 'V' && below {
                    notices.push(ignored(other, format!("baseline migration {shown} stands for every versioned migration up to version {version}: a new database starts from it and ignores this one (Flyway docs, baseline migrations); Sluice replays {shown} in its place")));
                }
            }
            versioned.retain(|m| compare_versions(&m.version, version).is_gt());
            let start = Migration {
                version: version.clone(),
                name: description.to_string(),
                up: (*path).clone(),
                ..Migration::default()
            };
            versioned.insert(0, start);
        }
        repeatable.sort_by(|a, b| a.name.cmp(&b.name));
        versioned.extend(repeatable);
        let settings = Settings {
            flyway_mixed: config.mixed,
            sources: config.source.into_iter().collect(),
            ..Settings::default()
        };
        Ok(Ordered { migrations: versioned, notices, settings })
    }

    fn script(
        &self,
        m: &Migration,
        text: &str,
        tree: &dyn Tree,
        options: &Options,
        settings: &Settings,
    ) -> Result<Script> {
        let split = split(text);
        let mut script = Script::default();
        let (mut transactional, mut non_transactional_found) = (false, false);
        let configured = script_config(tree, &m.up)?;
        for statement in &split.statements {
            let words: Vec<String> = statement
                .tokens
                .iter()
                .take(12)
                .filter_map(|t| match &t.token {
                    Token::Word(w) => Some(w.value.to_uppercase()),
                    _ => None,
                })
                .collect();
            if non_transactional(&words, options.postgres_version) {
                non_transactional_found = true;
            } else {
                transactional = true;
            }
            if transactional && non_transactional_found && !settings.flyway_mixed && configured.is_none() {
                script.problems.push(Problem {
                    line: statement.span.line,
                    message: "Flyway refuses this script: it mixes statements that must run outside a transaction \
                              (CREATE INDEX CONCURRENTLY, …) with others. Give the non-transactional statement a \
                              script of its own, or set `mixed = true`"
                        .into(),
                });
                break;
            }
        }
        let in_transaction = match configured {
            Some(value) => value,
            None => !non_transactional_found,
        };
        let fact = match configured {
            Some(_) => format!("{}.conf sets executeInTransaction=true", file_name(&m.up)),
            None => "Flyway runs each script in a transaction (it holds no statement Flyway runs outside one)".into(),
        };
        let wrap = match configured {
            Some(true) => Some(Wrap::file(fact)),
            Some(false) => None,
            None => file_wrap(options, in_transaction, &fact),
        };
        script.pieces.push(Piece { range: 0..text.len(), sending: Sending::EachStatement, transaction: wrap });
        Ok(script)
    }

    fn rules(&self) -> ToolRules {
        ToolRules {
            files: "`V<version>__<desc>.sql`, undo `U<version>__<desc>.sql`, baseline `B<version>__<desc>.sql`, repeatable `R__<desc>.sql`, under `flyway.conf` / `flyway.toml` `locations`",
            order: "the latest baseline, then the versions above it part by part, numerically (the scripts a baseline stands for are named, not replayed); repeatables after all versioned ones, by description",
            transactions: "each script in a transaction, statements sent one by one; a script holding a statement PostgreSQL runs only outside a transaction (CREATE INDEX CONCURRENTLY, VACUUM, …) runs without one, and mixing both kinds is refused unless `mixed = true`; `<script>.conf` `executeInTransaction` decides instead",
            source: "Flyway `PostgreSQLParser.detectCanExecuteInTransaction`, `ParserSqlScript`; Flyway docs (migrations, baseline migrations, config files)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn versions_then_repeatables_and_undo_files_as_down() {
        let tree = MemTree::new(&[
            ("V1_10__c.sql", ""),
            ("V1.2__b.sql", ""),
            ("sub/V1__a.sql", ""),
            ("R__views.sql", ""),
            ("R__functions.sql", ""),
            ("U1.2__b.sql", ""),
        ]);
        assert_eq!(versions(&Flyway, &tree), ["1", "1.2", "1.10", "R__functions", "R__views"]);
        let ordered = Flyway.order(&tree).unwrap();
        assert_eq!(ordered.migrations[1].down, Some(PathBuf::from("U1.2__b.sql")));
        assert!(ordered.migrations[3].repeatable);
        assert_eq!(Flyway.evidence(&tree).unwrap().unwrap().strength, Strength::Marker);
    }

    /// Issue 37: one real project's baseline created six tables its later scripts alter; skipped,
    /// they were "unknown".
    #[test]
    fn the_latest_baseline_stands_for_the_versions_up_to_it() {
        let tree = MemTree::new(&[
            ("B3__baseline.sql", ""),
            ("B2__old_baseline.sql", ""),
            ("V1__a.sql", ""),
            ("V3__c.sql", ""),
            ("V4__d.sql", ""),
            ("R__views.sql", ""),
        ]);
        assert_eq!(versions(&Flyway, &tree), ["3", "4", "R__views"]);
        let ordered = Flyway.order(&tree).unwrap();
        assert_eq!(ordered.migrations[0].up, PathBuf::from("B3__baseline.sql"));
        let mut noticed: Vec<String> = ordered.notices.iter().map(|(p, _)| p.display().to_string()).collect();
        noticed.sort();
        assert_eq!(noticed, ["B2__old_baseline.sql", "V1__a.sql", "V3__c.sql"], "each script left out is named");
        assert!(ordered
            .notices
            .iter()
            .any(|(_, why)| why.contains("stands for every versioned migration up to version 3")));
        let only = MemTree::new(&[("B1__init.sql", "")]);
        assert_eq!(Flyway.evidence(&only).unwrap().unwrap().strength, Strength::Marker);
    }

    #[test]
    fn a_concurrent_index_alone_runs_outside_a_transaction_and_mixing_is_refused() {
        let tree = MemTree::new(&[
            ("V1__idx.sql", "CREATE INDEX CONCURRENTLY i ON t (a);"),
            ("V2__mixed.sql", "SET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY j ON t (b);"),
            ("V3__plain.sql", "CREATE TABLE u (a int);"),
        ]);
        assert_eq!(runs(&Flyway, &tree, "V1__idx.sql"), [("CREATE INDEX CONCURRENTLY i ON t (a)".into(), false)]);
        assert_eq!(runs(&Flyway, &tree, "V3__plain.sql"), [("CREATE TABLE u (a int)".into(), true)]);
        let mixed = script_of(&Flyway, &tree, "V2__mixed.sql");
        assert_eq!(mixed.problems.len(), 1);
        assert_eq!(mixed.problems[0].line, 2);
        let allowed = MemTree {
            ..MemTree::new(&[("V2__mixed.sql", "SET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY j ON t (b);")])
        }
        .with_nearby("flyway.conf", "", "flyway.mixed=true\n");
        assert!(script_of(&Flyway, &allowed, "V2__mixed.sql").problems.is_empty());
        assert!(
            runs(&Flyway, &allowed, "V2__mixed.sql").iter().all(|(_, t)| !*t),
            "mixed scripts run without a transaction"
        );
    }

    #[test]
    fn script_conf_decides_the_transaction() {
        let tree = MemTree::new(&[
            ("V1__idx.sql", "SET lock_timeout = '1s';\nCREATE INDEX CONCURRENTLY i ON t (a);"),
            ("V1__idx.sql.conf", "executeInTransaction=true\n"),
        ]);
        let script = script_of(&Flyway, &tree, "V1__idx.sql");
        assert!(script.problems.is_empty());
        assert!(runs(&Flyway, &tree, "V1__idx.sql").iter().all(|(_, t)| *t));
    }

    #[test]
    fn locations_from_flyway_conf_and_toml() {
        let tree = MemTree::new(&[("sql/V1__a.sql", ""), ("other/V2__b.sql", ""), ("sql/R__v.sql", "")]).with_nearby(
            "flyway.conf",
            "",
            "flyway.locations=filesystem:sql\n",
        );
        assert_eq!(ups(&Flyway, &tree), ["sql/V1__a.sql", "sql/R__v.sql"]);
        let tree = MemTree::new(&[("sql/V1__a.sql", ""), ("other/V2__b.sql", "")]).with_nearby(
            "flyway.toml",
            "",
            "[flyway]\nlocations = [\"filesystem:other\"]\n",
        );
        assert_eq!(ups(&Flyway, &tree), ["other/V2__b.sql"]);
        let outside = MemTree::new(&[("V1__a.sql", "")]).with_nearby(
            "flyway.conf",
            "",
            "flyway.locations=filesystem:../elsewhere\n",
        );
        let error = Flyway.order(&outside).unwrap_err().to_string();
        assert!(error.contains("flyway.conf:1") && error.contains("outside the migrations directory"), "{error}");
    }
}
